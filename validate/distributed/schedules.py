"""Pipeline schedules as torch.distributed.pipelining builds them: the zero-bubble and DualPipeV
schedules' per-rank action lists, read from torch's own schedule classes (torch 2.13).

A schedule class computes every rank's ordered actions (pipeline_order) when it is built, from
its stages' indices and the group's size alone: F (forward), B (full backward), I (backward for the
input), W (backward for the weights), and DualPipeV's OVERLAP_F_B (a forward and a full backward
run together). Building it needs no process group, so stand-in stages (index, count, rank) are
enough. torch runs exactly these lists; the tests compare them with costmodel/layout/spec.py.

From the lists, per rank:
  in_flight  the most (stage, micro-batch) chunks whose forward has run and whose weight
             gradient (W, or a full B) has not: their activations are held. Returned per stage
             of the rank at the first moment of that peak.
  sends      the chunks whose output crosses to another rank: a forward on a stage whose next
             stage is on another rank, a backward (B or I) on a stage whose previous stage is
             (the V-shaped schedules keep the turn between stage p - 1 and p on one rank).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributed.pipelining import schedules as S

#: schedule name -> (torch class, the stages of rank r out of p)
SCHEDULES = {
    "zb-h1": (S.ScheduleInterleavedZeroBubble, lambda r, p: [r]),
    "zbv": (S.ScheduleZBVZeroBubble, lambda r, p: [r, 2 * p - 1 - r]),
    "dualpipev": (S.ScheduleDualPipeV, lambda r, p: [r, 2 * p - 1 - r]),
}


@dataclass
class _Stage:
    """What a schedule class reads of a stage when it builds its order."""

    stage_index: int
    num_stages: int
    group_size: int
    group_rank: int

    def __post_init__(self) -> None:
        self.is_first = self.stage_index == 0
        self.is_last = self.stage_index == self.num_stages - 1
        self.submod = torch.nn.Identity()


def pipeline_order(schedule: str, p: int, m: int) -> dict[int, list]:
    """torch's action list of every rank (None: an idle step)."""
    cls, stages_of = SCHEDULES[schedule]
    stages = stages_of(0, p)
    count = len(stages) * p
    built = cls([_Stage(s, count, p, 0) for s in stages], m, loss_fn=lambda output, target: output.sum())
    return built.pipeline_order


def _computations(action) -> list[tuple[str, int, int]]:
    """(kind F/B/I/W, stage, micro-batch) of one action, an overlapped pair as two."""
    if action is None:
        return []
    kind = action.computation_type.name if hasattr(action.computation_type, "name") else str(action.computation_type)
    if action.sub_actions:
        return [c for sub in action.sub_actions for c in _computations(sub)]
    short = {"FORWARD": "F", "FULL_BACKWARD": "B", "BACKWARD_INPUT": "I", "BACKWARD_WEIGHT": "W"}
    if kind not in short:
        return []  # communication or reduce-grad bookkeeping
    return [(short[kind], action.stage_index, action.microbatch_index)]


def measure_schedule(schedule: str, p: int, m: int) -> dict[int, dict]:
    """Per rank: {"stages": [...], "in_flight": per stage at the peak, "sends": chunks sent,
    "forwards": F count, "backwards": B + I count}."""
    stages_of = SCHEDULES[schedule][1]
    owner = {s: r for r in range(p) for s in stages_of(r, p)}
    count = len(owner)
    out = {}
    for rank, actions in pipeline_order(schedule, p, m).items():
        stages = stages_of(rank, p)
        held = {s: set() for s in stages}
        peak, at_peak, sends = -1, None, 0
        for action in actions:
            for kind, stage, micro in _computations(action):
                if kind == "F":
                    held[stage].add(micro)
                    sends += int(stage + 1 < count and owner[stage + 1] != rank)
                else:
                    if kind in ("B", "W"):
                        held[stage].discard(micro)
                    if kind in ("B", "I"):
                        sends += int(stage > 0 and owner[stage - 1] != rank)
                total = sum(len(v) for v in held.values())
                if total > peak:
                    peak, at_peak = total, [len(held[s]) for s in stages]
        out[rank] = {"stages": stages, "in_flight": at_peak, "sends": sends}
    return out


def simulate_step(schedule: str, p: int, m: int) -> dict[str, float]:
    """torch's action lists run with unit times (F = I = W = 1 a chunk, a full B = 2, an
    overlapped F&B = 3, sends free): each rank runs its list in order, an action starting once
    the rank is free and its input has arrived (a forward after the previous stage's forward of
    that micro-batch, a backward after the next stage's backward and its own forward, W after I).
    Returns the step's length and the bubble: the length less a rank's work, in units of
    T = F + I + W of the rank's whole share of a micro-batch (V schedules: two chunks of T/2)."""
    stages_of = SCHEDULES[schedule][1]
    count = len(stages_of(0, p)) * p
    orders = pipeline_order(schedule, p, m)
    done: dict[tuple[str, int, int], float] = {}
    position = {rank: 0 for rank in orders}
    clock = {rank: 0.0 for rank in orders}
    cost = {"F": 1.0, "I": 1.0, "W": 1.0, "B": 2.0}

    def ready(kind: str, stage: int, micro: int) -> float | None:
        needs = []
        if kind == "F" and stage > 0:
            needs.append(("F", stage - 1, micro))
        if kind in ("B", "I"):
            needs.append(("F", stage, micro))
            if stage < count - 1:
                needs.append(("G", stage + 1, micro))  # the next stage's input gradient
        if kind == "W":
            needs.append(("G", stage, micro))
        times = [done.get(need) for need in needs]
        return None if any(t is None for t in times) else max(times, default=0.0)

    progressed = True
    while progressed:
        progressed = False
        for rank, actions in orders.items():
            while position[rank] < len(actions):
                computations = _computations(actions[position[rank]])
                if not computations:
                    position[rank] += 1
                    continue
                starts = [ready(*c) for c in computations]
                if any(s is None for s in starts):
                    break
                start = max([clock[rank], *starts])
                end = start + sum(cost[kind] for kind, _, _ in computations) / (count // p)
                for kind, stage, micro in computations:
                    done[(kind, stage, micro)] = end
                    if kind in ("B", "I"):
                        done[("G", stage, micro)] = end
                clock[rank] = end
                position[rank] += 1
                progressed = True
    if any(position[r] < len(a) for r, a in orders.items()):
        raise RuntimeError(f"{schedule}: the action lists deadlock under the unit-time model.")
    length = max(clock.values())
    work = m * 3.0  # every rank: m micro-batches of F + I + W over its share of the layers
    return {"length": length / 3.0, "bubble": (length - work) / 3.0}
