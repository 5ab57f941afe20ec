"""Megatron-LM's interleaved 1F1B schedule as its code of Korthikanti et al.'s time runs it, replayed
event by event, to check the closed forms the step model uses for a pipelined Megatron step (issue 18,
session 35, wt35_pipe: is the pipelined step of Korthikanti Table 5 short for its schedule?).

The programs are forward_backward_pipelining_with_interleaving at NVIDIA/Megatron-LM 02bb1f5c
(megatron/schedules.py, the sequence-parallel branch; its schedule is unchanged up to the branch's
merge into main, 9aad9203aa, 2022-05-20), and at v = 1 forward_backward_pipelining_without_interleaving
there (rank_program_1f1b: p - r - 1 warm-up forwards, each recv_forward / send_forward its own call,
then send_forward_recv_backward and send_backward_recv_forward around each steady pair). Interleaved:
- warm-up: (p - r - 1) * 2 + (v - 1) * p chunk forwards on pipeline rank r (all m v when m = p), each
  followed by send_forward_recv_forward (the last by send_forward_backward_recv_forward_backward);
- steady state: one chunk forward, one chunk backward, then one send_forward_backward_recv_forward_backward;
- cool-down: each chunk backward followed by send_backward_recv_backward;
- every exchange is p2p_communication._communicate: torch.distributed.batch_isend_irecv, a wait on
  every request, then torch.cuda.synchronize() ("To protect against race condition"): it blocks
  until each of its sends and receives has met the peer's matching call (the i-th send on a link
  meets the i-th receive on it: NCCL's per-peer order), then takes `exchange_s` to move the tensors.
Chunk c of rank r is virtual stage c p + r; the last rank's last chunk carries the LM head and the
loss (head_s), rank 0's first the embedding (embedding_s); the next rank of p - 1 is 0 (the ring).
"""

from __future__ import annotations

from dataclasses import dataclass

Op = tuple  # ("C", "F" | "B", chunk) or ("X", ((link, "send" | "recv"), ...))


def chunk_of(k: int, p: int, v: int, forward: bool) -> int:
    """get_model_chunk_id: chunk of the k-th chunk-micro-batch (groups of p, backward reversed)."""
    chunk = (k % (p * v)) // p
    return chunk if forward else v - chunk - 1


def rank_program(r: int, p: int, v: int, m: int) -> list[Op]:
    """Pipeline rank r's sequence of chunk passes and exchanges, in the order its code issues them."""
    n, ops = m * v, []

    def exchange(send_next: bool, send_prev: bool, recv_prev: bool, recv_next: bool) -> None:
        # links: ("f", q) carries activations into rank q, ("b", q) gradients out of rank q + 1 into q
        ends = [((("b", (r - 1) % p), "send")) for _ in range(send_prev)] + \
               [(("f", r), "recv") for _ in range(recv_prev)] + \
               [(("f", (r + 1) % p), "send") for _ in range(send_next)] + \
               [(("b", r), "recv") for _ in range(recv_next)]
        ops.append(("X", tuple(ends)))

    def first(chunk: int) -> bool:
        return r == 0 and chunk == 0

    def last(chunk: int) -> bool:
        return r == p - 1 and chunk == v - 1

    all_warmup = m == p
    warmup = n if all_warmup else min((p - r - 1) * 2 + (v - 1) * p, n)
    remaining = n - warmup
    if r != 0:  # recv_forward before the warm-up (virtual rank 0)
        exchange(False, False, True, False)
    for k in range(warmup):
        chunk = chunk_of(k, p, v, True)
        ops.append(("C", "F", chunk))
        recv_prev = not (r == 0 and chunk_of(k + 1, p, v, True) == 0) and k != n - 1
        if k == warmup - 1 and not all_warmup:
            exchange(not last(chunk), False, recv_prev, r != p - 1)
        else:
            exchange(not last(chunk), False, recv_prev, False)
    for k in range(remaining):
        forward, backward = chunk_of(k + warmup, p, v, True), chunk_of(k, p, v, False)
        ops += [("C", "F", forward), ("C", "B", backward)]
        recv_prev = not (r == 0 and chunk_of(k + warmup - (p - 1), p, v, True) == v - 1) and k != remaining - 1
        recv_next = not (r == p - 1 and chunk_of(k - (p - 1), p, v, False) == 0)
        exchange(not last(forward), not first(backward), recv_prev, recv_next)
    if all_warmup:
        exchange(False, False, False, r != p - 1)  # recv_backward
    for k in range(remaining, n):
        chunk = chunk_of(k, p, v, False)
        ops.append(("C", "B", chunk))
        recv_next = not (r == p - 1 and chunk_of(k + 1, p, v, False) == v - 1) and k != n - 1
        exchange(False, not first(chunk), False, recv_next)
    return ops


def rank_program_1f1b(r: int, p: int, m: int) -> list[Op]:
    """forward_backward_pipelining_without_interleaving on rank r: each p2p call its own exchange
    (none on the first stage's receives from before it or the last stage's sends after it)."""
    ops: list[Op] = []
    has_prev, has_next = r > 0, r < p - 1

    def exchange(*ends: tuple) -> None:
        if ends:
            ops.append(("X", ends))

    recv_forward = ((("f", r), "recv"),) if has_prev else ()
    send_forward = ((("f", r + 1), "send"),) if has_next else ()
    recv_backward = ((("b", r), "recv"),) if has_next else ()
    send_backward = ((("b", r - 1), "send"),) if has_prev else ()
    warmup = min(p - r - 1, m)
    for _ in range(warmup):
        exchange(*recv_forward)
        ops.append(("C", "F", 0))
        exchange(*send_forward)
    if m > warmup:
        exchange(*recv_forward)
    for i in range(m - warmup):
        ops.append(("C", "F", 0))
        exchange(*send_forward, *recv_backward)
        ops.append(("C", "B", 0))
        exchange(*send_backward, *(() if i == m - warmup - 1 else recv_forward))
    for _ in range(warmup):
        exchange(*recv_backward)
        ops.append(("C", "B", 0))
        exchange(*send_backward)
    return ops


@dataclass(frozen=True)
class ChunkTimes:
    """Seconds of one chunk's forward and backward on a rank (the same on every rank), the LM head
    and loss on the last rank's last chunk, the embedding on rank 0's first, and one exchange."""

    forward_s: float
    backward_s: float
    head_s: tuple[float, float] = (0.0, 0.0)
    embedding_s: tuple[float, float] = (0.0, 0.0)
    exchange_s: float = 0.0

    def seconds(self, op: Op, r: int, p: int, v: int) -> float:
        _, kind, chunk = op
        backward = kind == "B"
        seconds = self.backward_s if backward else self.forward_s
        if r == p - 1 and chunk == v - 1:
            seconds += self.head_s[backward]
        if r == 0 and chunk == 0:
            seconds += self.embedding_s[backward]
        return seconds


def step_seconds(p: int, v: int, m: int, times: ChunkTimes) -> float:
    """The iteration's forward-backward seconds (v = 1: the non-interleaved schedule): the last rank
    to finish its program, each exchange ending when every peer it meets has posted, then exchange_s later."""
    programs = [rank_program(r, p, v, m) if v > 1 else rank_program_1f1b(r, p, m) for r in range(p)]
    posted: dict[tuple, tuple[int, int]] = {}  # (link, direction, n) -> (rank, op index)
    for r, ops in enumerate(programs):
        counts: dict[tuple, int] = {}
        for i, op in enumerate(ops):
            for link, direction in (op[1] if op[0] == "X" else ()):
                n = counts.get((link, direction), 0)
                counts[(link, direction)] = n + 1
                posted[(link, direction, n)] = (r, i)
    peers: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for (link, direction, n), (r, i) in posted.items():
        other = "recv" if direction == "send" else "send"
        if (link, other, n) not in posted:
            raise ValueError(f"unmatched {direction} on link {link} (#{n}): the programs are wrong")
        peers.setdefault((r, i), []).append(posted[(link, other, n)])
    done = [[None] * len(ops) for ops in programs]
    progress = [0] * p
    while any(progress[r] < len(programs[r]) for r in range(p)):
        moved = False
        for r in range(p):
            while progress[r] < len(programs[r]):
                i = progress[r]
                start = done[r][i - 1] if i else 0.0
                op = programs[r][i]
                if op[0] == "C":
                    done[r][i] = start + times.seconds(op, r, p, v)
                else:
                    ready = [done[q][j - 1] if j else 0.0 for q, j in peers.get((r, i), [])]
                    if any(value is None for value in ready):
                        break  # a peer has not reached the matching call yet
                    done[r][i] = max([start, *ready]) + (times.exchange_s if op[1] else 0.0)
                progress[r] += 1
                moved = True
        if not moved:
            raise ValueError("the programs deadlock")
    return max(done[r][-1] for r in range(p) if done[r])
