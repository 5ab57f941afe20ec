"""Which chunk passes Megatron-Core's combined 1F1B pairs (--overlap-moe-expert-parallel-comm,
Megatron-Bridge's moe_a2a_overlap), read from its code (Megatron-LM at d98e8a64d).

The schedule hides one micro-batch's expert all-to-all behind another's compute only where a
forward and a backward run as one step, layer by layer (models/common/model_chunk_schedule_plan.py
TransformerLayerSchedulePlan.run: "comm_stream: combine_bwd | dispatch_fwd->dispatch_bwd |
combine_fwd" beside "comp_stream: pre_dispatch_fwd | mlp_bwd->mlp_bwd_dw->mlp_fwd |
pre_dispatch_bwd"). A forward or a backward that runs alone runs its all-to-all exposed:
- no pipeline (pipeline_parallel/combined_1f1b.py combined_1f1b_schedule_for_no_pipelining): the
  first micro-batch's forward "is executed alone, no a2a overlapping", then m - 1 paired steps,
  then the last micro-batch's backward alone;
- interleaved pipeline (pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving):
  rank r runs W warm-up chunk forwards alone, total - W paired steps (forward k + W beside
  backward k), and W cool-down chunk backwards alone, with total = m v chunk passes each way and
  (get_pp_rank_microbatches) W = min(total, 2 (p - r - 1) + (v - 1) g + 1): the usual warm-up
  and "one extra micro-batch forward step before the 1f1b stages ... to ensure the forward and
  backward computations are independent in all 1f1b steps"; g is
  microbatch_group_size_per_vp_stage, p by default (model_parallel_config.py). Forward k runs
  chunk c of get_schedule_table's entry k, backward k chunk v - 1 - c.
Rank 0 has the longest warm-up, so the most exposed all-to-all; the pipeline's last rank the least.
"""

from __future__ import annotations

import math
from typing import Sequence


def schedule_table(microbatches: int, chunks: int, group: int) -> list[tuple[int, int]]:
    """(micro-batch, model chunk) of each virtual micro-batch in order: groups of `group`
    micro-batches, each group run through every chunk before the next (schedules.py
    get_schedule_table)."""
    table = []
    for first in range(0, microbatches, group):
        last = microbatches if first + group >= microbatches else first + group
        table.extend((microbatch, chunk) for chunk in range(chunks) for microbatch in range(first, last))
    return table


def warmup_forwards(pp: int, chunks: int, microbatches: int, rank: int, group: int | None = None) -> int:
    """Chunk forwards rank `rank` runs before its first paired step under the combined 1F1B:
    1 without a pipeline (the first micro-batch's forward), else Megatron-Core's interleaved
    warm-up and the one extra forward, at most every chunk pass (get_pp_rank_microbatches)."""
    total = microbatches * chunks
    if pp == 1:
        return min(1, total)
    group = pp if group is None else group
    return min(total, 2 * (pp - rank - 1) + (chunks - 1) * group + 1)


def alone_passes(pp: int, chunks: int, microbatches: int, rank: int,
                 group: int | None = None) -> tuple[tuple[int, int], ...]:
    """Per model chunk of the rank: (forwards, backwards) that run alone, their all-to-all exposed:
    the warm-up forwards and as many cool-down backwards."""
    warmup = warmup_forwards(pp, chunks, microbatches, rank, group)
    if pp == 1:
        return ((warmup, warmup),)
    table = schedule_table(microbatches, chunks, pp if group is None else group)
    forwards = [0] * chunks
    backwards = [0] * chunks
    for _, chunk in table[:warmup]:
        forwards[chunk] += 1
    for _, chunk in table[len(table) - warmup:]:
        backwards[chunks - 1 - chunk] += 1
    return tuple(zip(forwards, backwards))


def paired_share(alone: Sequence[tuple[int, int]], weights: Sequence[float], microbatches: int) -> float:
    """The share of a step's forward and backward work, each chunk's pass weighted by
    `weights[chunk]`, that runs in paired steps: 1 - sum (F_c + B_c) w_c / (2 m sum w_c)."""
    total = 2 * microbatches * sum(weights)
    if not total:
        return 0.0
    return 1 - sum((forwards + backwards) * weight for (forwards, backwards), weight in zip(alone, weights)) / total


# The paired layer of TransformerLayerSchedulePlan.run (models/common/model_chunk_schedule_plan.py
# at d98e8a64d): each stream runs its phases in this order, each phase after the phase it waits on.
# Forward f runs pre_dispatch -> dispatch -> mlp -> combine, layer after layer; backward b runs
# combine -> mlp (dgrad) -> dispatch -> pre_dispatch, layer after layer; mlp_bwd_dw (the experts'
# weight gradients) follows mlp_bwd on the compute stream and nothing waits on it.
COMPUTE_PHASES = ("pre_dispatch_fwd", "mlp_bwd", "mlp_bwd_dw", "mlp_fwd", "pre_dispatch_bwd")
COMM_PHASES = ("combine_bwd", "dispatch_fwd", "dispatch_bwd", "combine_fwd")
WAITS_ON = {"mlp_bwd": ("combine_bwd", 0), "mlp_fwd": ("dispatch_fwd", 0), "pre_dispatch_bwd": ("dispatch_bwd", 0),
            "pre_dispatch_fwd": ("combine_fwd", -1), "combine_bwd": ("pre_dispatch_bwd", -1),
            "dispatch_fwd": ("pre_dispatch_fwd", 0), "dispatch_bwd": ("mlp_bwd", 0), "combine_fwd": ("mlp_fwd", 0)}


def paired_layers_seconds(layers: int, phases: dict[str, float], rate: float) -> tuple[float, float]:
    """Seconds of `layers` paired layers (one micro-batch's forward beside another's backward) on
    the two streams: each stream runs its phases in order (COMPUTE_PHASES, COMM_PHASES), a phase
    starts when its stream is free and the phase it waits on (WAITS_ON: the same layer's, or the
    layer before's) has ended. `phases` gives each phase's seconds alone; a compute phase runs at
    `rate` of its speed while a communication phase runs beside it (the dispatcher's kernels hold
    SMs), at full speed otherwise. Returns the layers' seconds and the seconds of them in which
    both streams run (the compute that ran beside an exchange)."""
    if layers <= 0:
        return 0.0, 0.0
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}")
    queues = {"comp": [(layer, name) for layer in range(layers) for name in COMPUTE_PHASES],
              "comm": [(layer, name) for layer in range(layers) for name in COMM_PHASES]}
    done: dict[tuple[int, str], float] = {}
    running: dict[str, list] = {}  # stream -> [op, seconds of work left at full speed]
    now = beside = 0.0
    while queues["comp"] or queues["comm"] or running:
        for stream in ("comp", "comm"):
            if stream in running or not queues[stream]:
                continue
            layer, name = queues[stream][0]
            wait, back = WAITS_ON.get(name, (name, -layers))  # mlp_bwd_dw: its stream's order only
            if layer + back < 0 or done.get((layer + back, wait), math.inf) <= now:
                queues[stream].pop(0)
                running[stream] = [(layer, name), phases[name]]
        if not running:
            raise AssertionError("the paired layer's phases wait on each other")
        speed = {"comp": rate if "comm" in running else 1.0, "comm": 1.0}
        step = min(left / speed[stream] for stream, (_, left) in running.items())
        now += step
        beside += step if len(running) == 2 else 0.0
        for stream in list(running):
            running[stream][1] -= step * speed[stream]
            if running[stream][1] <= 1e-15 * max(1.0, now):
                done[running.pop(stream)[0]] = now
    return now, beside
