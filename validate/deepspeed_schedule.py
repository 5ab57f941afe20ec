"""DeepSpeed's 1F1B pipeline schedule (TrainSchedule, deepspeed/runtime/pipe/schedule.py at v0.6.5),
replayed with blocking sends: does the schedule that MT-NLG and BLOOM ran have a larger bubble
than the (p - 1) micro-batches the layout model gives 1F1B (issue 18, validate/FINDINGS.md
"Issue 18: DeepSpeed's pipeline engine")?

TrainSchedule gives each stage 2 (m + p - 1) steps. Even stages run forwards on even steps and
backwards on odd ones, odd stages the other way round, and each step opens with its exchange
(a forward step: RecvActivation, SendGrad of the previous backward; a backward step:
SendActivation of the previous forward, RecvGrad). `instructions` is that stream, kept to its
sends, receives and passes. `replay` runs every stage's stream in order. A pass takes its
time. A send and its matching receive meet as a rendezvous: both wait for the later of the two,
then both take `send` seconds, as NCCL's blocking point-to-point does.

    PYTHONPATH=. python validate/deepspeed_schedule.py   # MT-NLG's and BLOOM's shapes, f = 1, b = 3

No torch, no GPU: a replay of the schedule's order, not a measurement.
"""

from __future__ import annotations

#: a stage's instruction -> (the neighbour it meets, that neighbour's matching instruction)
PARTNERS = {"send_activation": (1, "recv_activation"), "recv_activation": (-1, "send_activation"),
            "send_grad": (-1, "recv_grad"), "recv_grad": (1, "send_grad")}


def _micro_batch(step: int, stage: int, stages: int) -> tuple[int, bool]:
    """TrainSchedule._step_to_micro_batch: (micro-batch, is_forward) of a stage's step."""
    even_step, even_stage = step % 2 == 0, stage % 2 == 0
    if even_step and even_stage:
        return step // 2 - stage // 2, True
    if not even_step and not even_stage:
        return (step - 1) // 2 - stage // 2, True
    if even_step:  # an odd stage's backward
        return step // 2 - stages + (stage + 1) // 2, False
    return (step - 1) // 2 - stages + 1 + stage // 2, False


def instructions(stage: int, stages: int, microbatches: int) -> list[tuple[str, int]]:
    """One stage's TrainSchedule.steps(), its exchanges and passes in order, each with its micro-batch."""
    valid = range(microbatches).__contains__
    out: list[tuple[str, int]] = []
    previous = -1
    for step in range(2 * (microbatches + stages - 1)):
        micro_batch, forward = _micro_batch(step, stage, stages)
        if forward and stage > 0:
            out += [("recv_activation", micro_batch)] if valid(micro_batch) else []
            out += [("send_grad", previous)] if valid(previous) else []
        elif not forward and stage < stages - 1:
            out += [("send_activation", previous)] if valid(previous) else []
            out += [("recv_grad", micro_batch)] if valid(micro_batch) else []
        if valid(micro_batch):
            out.append(("forward" if forward else "backward", micro_batch))
        previous = micro_batch
    return out


def replay(stages: int, microbatches: int, forward: float, backward: float, send: float) -> float:
    """Seconds until the last stage ends its last instruction (the step's pipeline, before its
    gradient reduction): every stage's stream in order, the passes taking `forward` and
    `backward`, each send meeting its receive and both then taking `send`."""
    streams = [instructions(s, stages, microbatches) for s in range(stages)]
    position, clock = [0] * stages, [0.0] * stages
    moved = True
    while moved:
        moved = False
        for s in range(stages):
            while position[s] < len(streams[s]):
                kind, micro_batch = streams[s][position[s]]
                if kind in ("forward", "backward"):
                    clock[s] += forward if kind == "forward" else backward
                else:
                    offset, matching = PARTNERS[kind]
                    other = s + offset
                    if streams[other][position[other]:position[other] + 1] != [(matching, micro_batch)]:
                        break  # the neighbour is not there yet
                    clock[s] = clock[other] = max(clock[s], clock[other]) + send
                    position[other] += 1
                position[s] += 1
                moved = True
    if position != [len(stream) for stream in streams]:
        raise RuntimeError("the streams deadlock: a send with no matching receive")
    return max(clock)


def main() -> None:
    for name, stages, microbatches in (("MT-NLG 2,240", 35, 240), ("MT-NLG 3,360", 35, 160), ("BLOOM", 12, 128)):
        ideal = (microbatches + stages - 1) * 4.0  # 1F1B: (m + p - 1)(f + b) with f = 1, b = 3
        for send in (0.0, 0.05):
            seconds = replay(stages, microbatches, 1.0, 3.0, send)
            print(f"{name}: p {stages}, m {microbatches}, sends {send}: {seconds:.2f} "
                  f"(1F1B with the sends exposed twice a micro-batch: {ideal + 2 * send * (microbatches + stages - 1):.2f})")


if __name__ == "__main__":
    main()
