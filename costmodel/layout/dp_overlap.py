"""When Megatron-Core's interleaved schedule runs each model chunk's data-parallel collectives,
and how much of each runs past the compute it can hide behind (exposed seconds, chunk by chunk).

Read from Megatron-LM at d98e8a64d (megatron/core/pipeline_parallel/schedules.py,
forward_backward_pipelining_with_interleaving; megatron/core/distributed/
distributed_data_parallel.py; megatron/training/training.py lines 4340-4362):
- The schedule table takes the micro-batches in groups of g = microbatch_group_size_per_vp_stage
  (default: the pipeline size p, model_parallel_config.py), each group through chunk 0, 1, ...,
  v - 1 forward; backward visits the chunks in reverse. In the last group (g micro-batches when
  p divides m, which Layout requires) the backward runs chunk v - 1's g micro-batches, then
  chunk v - 2's, ..., chunk 0's last: after chunk k's last backward, k g chunk-backwards remain
  on the rank.
- Gradients (overlap_grad_reduce, the distributed optimizer's reduce-scatter or DDP's all-reduce):
  every micro-batch but a chunk's last runs under no_sync. With config.grad_sync_func
  (align_grad_reduce, Megatron-LM's default: training.py sets it to each chunk's
  start_grad_sync), rank r launches chunk k's reduce-scatter, all its buckets at once, after the
  backward r steps later than the chunk's last (backward_step_helper_postprocess:
  virtual_microbatch_id - pipeline_parallel_rank), and whatever is left after the cool-down
  ('Launch any remaining grad reductions'). Without it (NeMo 2.2's extract_ddp_funcs leaves it
  None: its DistributedDataParallelConfig has no align_grad_reduce) the chunk's last backward
  runs with grad sync enabled (backward_step_helper_preprocess), so a bucket starts as its
  gradients are ready. Only chunk 0 on pipeline rank 0 has more than one bucket (training.py
  disables bucketing for chunks after the first and on ranks > 0; NeMo 2.2's megatron_parallel.py
  for chunks after the first; DDP itself on ranks > 0): it starts under its own last backward,
  every other chunk's one bucket at the end of it.
- Parameters (overlap_param_gather with align_param_gather, Megatron-LM's default and NeMo 2's
  on interleaved layouts): the schedule dispatches chunks 0 and 1's all-gathers before the first
  forward, all of a chunk's buckets at once, and chunk j >= 2's before forward step
  (j - 1) g - r (forward_step_helper_preprocess: virtual_microbatch_id + pipeline_parallel_rank
  the first micro-batch of chunk j - 1); chunk j's first forward is step j g, whose forward
  pre-hooks wait for the gather. The first layers' bucket is dispatched last (bucket groups run
  from the output back), so a chunk's forward waits for its whole gather.
- The collectives of one rank run one after the other (one data-parallel communicator).
What each hides behind is the rank's own compute only (chunk-forwards, chunk-backwards); the
waits of the warm-up and the cool-down for other ranks, where more could hide, are not counted.
"""

from __future__ import annotations

from typing import Sequence


def gradient_exposure(reduce_s: Sequence[float], backward_s: float, group: int, rank: int,
                      aligned: bool) -> tuple[float, ...]:
    """Seconds of each chunk's gradient collective (chunk 0 first) that run after the rank's last
    backward ends. reduce_s: each chunk's collective seconds; backward_s: the seconds of one
    chunk-backward a collective can hide under; group: the micro-batches a chunk runs in a row
    (the last group's, g = p); rank: the pipeline rank; aligned: Megatron-LM's
    align_grad_reduce (launched r backwards after the chunk's last) or not (launched at the end
    of the chunk's last backward; rank 0's chunk 0, bucketed, at its start)."""
    chunks = len(reduce_s)
    end = float("-inf")
    exposed = [0.0] * chunks
    for chunk in reversed(range(chunks)):  # backward finishes chunk v - 1 first, chunk 0 last
        # chunk-backwards left when it starts
        behind = max(0, chunk * group - rank) if aligned else chunk * group + int(chunk == 0 and rank == 0)
        start = max(-behind * backward_s, end)
        end = start + reduce_s[chunk]
        exposed[chunk] = max(0.0, end - max(0.0, start))
    return tuple(exposed)


def gather_exposure(gather_s: Sequence[float], forward_s: float, group: int, rank: int) -> tuple[float, ...]:
    """Seconds each chunk's first forward waits for its parameter all-gather (chunk 0 first).
    gather_s: each chunk's all-gather seconds; forward_s: the seconds of one chunk-forward a
    gather can hide under; group and rank as in gradient_exposure."""
    waited, end, stalls = 0.0, 0.0, []
    for chunk, seconds in enumerate(gather_s):
        # dispatched before the first forward (chunks 0 and 1) or before forward step (j - 1) g - r,
        # which lies after chunk j - 2's first forward (g > r), so after the waits through chunk j - 2
        launched = 0.0 if chunk < 2 else ((chunk - 1) * group - rank) * forward_s + waited - stalls[-1]
        end = max(launched, end) + seconds
        needed = chunk * group * forward_s + waited
        stall = max(0.0, end - needed)
        stalls.append(stall)
        waited += stall
    return tuple(stalls)
