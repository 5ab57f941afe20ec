"""FSDP2 under torch.distributed.pipelining (torch 2.13): how often a step gathers a pipeline
rank's parameters and reduce-scatters its gradients, as torch's pipeline runtime issues them
(torchtitan's and NeMo AutoModel's FSDP2 + PP).

What the code does (.venv torch/distributed/pipelining):
- stage.py backward_maybe_with_nosync: every micro-batch's backward of an FSDPModule runs with
  set_is_last_backward(False), set_reshard_after_backward(False) and
  set_requires_gradient_sync(False): no reduce-scatter, the parameters stay unsharded, the
  unsharded gradients accumulate.
- stage.py perform_reduce_grad (schedules.py: Schedule1F1B / ScheduleGPipe after the last
  micro-batch; the runtime schedules' REDUCE_GRAD action, _add_reduce_grad, after a stage's
  last backward): every FSDP parameter group's post_backward once, one reduce-scatter (and
  HSDP's all-reduce) a unit a step; then _root_post_backward_final_callback, which makes the
  compute stream wait for them.
- Parameters: fully_shard's reshard_after_forward False (torchtitan's parallelize with pp
  enabled: `reshard_after_forward = False` for every block and `not pp_enabled` for the root;
  AutoModel's configs of the pipelined MoE rows: --zero 2 here) keeps a stage's parameters
  unsharded once gathered. A single-stage schedule (gpipe, 1f1b) gathers each unit once a step
  (the first forward's pre-forward unshard; later ones find it unsharded). The runtime schedules
  (interleaved: ScheduleInterleaved1F1B) add UNSHARD / RESHARD actions (_add_unshard_reshard,
  max_active_stages 3): before each compute action the next 3 distinct local stages are kept
  unsharded, the others resharded, so a rank with more than 3 local stages gathers a stage again
  each time it comes back into that window (`unshards`).
Under reshard_after_forward True (--zero 3) each forward reshards and the next gathers again, so
the per-micro-batch gathers stay as layout/communication.py charges them; only the reduce-
scatters move to once a step. Other schedules (zb-h1, zbv, dualpipev) are left per micro-batch.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

WINDOW = 3  # _add_unshard_reshard's max_active_stages
PIPELINED = ("gpipe", "1f1b", "interleaved")  # the schedules whose torch code is read here


def pipelined(layout: Any, framework: Any) -> bool:
    """Whether the step runs FSDP2 (per-tensor sharding) under torch's pipeline schedules."""
    return framework.sharding == "per_tensor" and layout.pp > 1 and layout.schedule in PIPELINED


def interleaved_order(pp: int, local: int, microbatches: int, rank: int) -> list[int]:
    """The local stages (0 .. local - 1) of pipeline rank `rank`'s compute actions, forwards and
    backwards, in the order torch 2.13's ScheduleInterleaved1F1B runs them
    (_calculate_single_rank_operations with _get_warmup_ops(multiply_factor=2) and
    _get_1f1b_rank_ops; the idle slots dropped)."""
    rounds = max(1, microbatches // pp)
    per_round = microbatches // rounds
    warmup = min((local - 1) * per_round + 2 * (pp - 1 - rank), microbatches * local)
    steady = local * microbatches - warmup
    order: list[int] = []
    for op in range(warmup + steady + warmup):
        if op < warmup + steady:
            order.append((op // per_round) % local)
        if op >= warmup:
            order.append(local - 1 - ((op - warmup) // per_round) % local)
    return order


def unshards(order: list[int], local: int, window: int = WINDOW) -> list[int]:
    """How many times each local stage is gathered (UNSHARD) over `order`, as
    _add_unshard_reshard lowers it: before each action, the next `window` distinct stages
    (from this action on) are fetched where not active and the other active ones resharded."""
    # a run of one stage's actions looks ahead to the same stages at each of its actions, so only a
    # run's first action changes what is active: walk the runs (plan times thousands of layouts)
    runs = [stage for i, stage in enumerate(order) if i == 0 or order[i - 1] != stage]
    counts, active = [0] * local, set()
    for i in range(len(runs)):
        upcoming: list[int] = []
        for stage in runs[i:]:
            if stage not in upcoming:
                upcoming.append(stage)
                if len(upcoming) == window:
                    break
        active &= set(upcoming)
        for stage in upcoming:
            if stage not in active:
                active.add(stage)
                counts[stage] += 1
    return counts


def gathers(layout: Any, rank: int) -> int:
    """Times a step gathers pipeline rank `rank`'s local stages, summed over them (a stage's
    parameters not resharded after forward): once each under a single-stage schedule, the
    UNSHARD count of the interleaved runtime otherwise."""
    local = layout.virtual_stages if layout.schedule == "interleaved" else 1
    return 1 if local == 1 else interleaved_gathers(layout.pp, local, layout.microbatches, rank)


@lru_cache(maxsize=4096)
def interleaved_gathers(pp: int, local: int, microbatches: int, rank: int) -> int:
    """The UNSHARD count of an interleaved rank (gathers), by its integers: plan's layouts share them."""
    return sum(unshards(interleaved_order(pp, local, microbatches, rank), local))


def step_reduce(step_time: Any, stage: Any, groups: list[tuple[str, str, int]]) -> tuple[float, list[tuple[str, str, int]]]:
    """Seconds of the step's once-a-step reductions under torch's pipelining (0 elsewhere), all
    exposed (perform_reduce_grad's _root_post_backward_final_callback makes the compute stream
    wait for them), one call a unit (ParallelEstimate.data_parallel_calls); and the collectives
    left to the per-micro-batch overlap model (the gathers: spread over the micro-batches)."""
    estimate = step_time.estimate
    if not pipelined(estimate.layout, estimate.framework):
        return 0.0, groups
    reduced = sum(step_time.collective(group, kind, value, estimate.data_parallel_calls(stage, group, kind))
                  for group, kind, value in groups if kind != "all_gather")
    return reduced, [(group, kind, value) for group, kind, value in groups if kind == "all_gather"]
