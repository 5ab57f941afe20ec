"""DeepSpeed ZeRO-3's collectives at the edges of a micro-batch: what no compute of the rank hides
(--framework deepspeed --zero 3, the plain loop: pp 1).

Read from microsoft/DeepSpeed v0.11.1 (e9503fe40ee127e74c8b0ea962aac4f0ae957624), the version the
FlagPerf rows name:
- partitioned_param_coordinator.py fetch_sub_module (lines 256-385), run from each submodule's
  pre-forward and pre-backward hook: it all-gathers the submodule's own parameters not yet in
  flight (line 284), makes the compute stream wait for them (lines 291-312), then prefetches from
  the recorded trace, popping parameters while fewer than min(stage3_max_live_parameters - those
  available, stage3_prefetch_bucket_size) elements are queued (lines 347-380): at least one
  parameter, already available (persistent) ones skipped. The host throttles itself only on the
  all-gathers (more than __max_ongoing_fetch_events = 2 pending: it synchronizes on the oldest,
  lines 298-301 and 125), not on the compute, so in the forward the gathers run back to back ahead
  of the compute, whatever the bucket (a bucket below one parameter limits how many are issued at
  one hook, not how far ahead of the compute they run). In the backward the host throttles itself
  on the gradient reduce-scatters (stage3.py lines 1145-1148: more than max_param_reduce_events = 2
  pending, line 306), which wait for the gradients: the gathers then run a few parameters ahead of
  the compute. Either way the step's gathers and reduce-scatters run under its compute as the
  layout model's aggregate overlap has them (dp_time.py data_parallel_split), but for the edges.
- The edges. The forward's first fetch, the token embedding (the first submodule with parameters;
  with learned positions, their embedding next), has nothing before it on the compute stream: its
  all-gather is exposed. It is released after its forward (__params_to_release, lines 472-500)
  where its next use, in the backward's end, is more than stage3_max_reuse_distance elements of the
  trace away (config.py line 215, default 1e9; the trace between is every other parameter twice),
  so every micro-batch gathers it again; else only the step's first. The backward's last gradient
  is the embedding's: stage3.py reduce_independent_p_g_buckets_and_remove_grads (lines 1098-1111)
  reduces a bucket when the next gradient arrives, and independent_gradient_partition_epilogue
  (lines 1027-1034, after every backward) reduces the last bucket and synchronizes the host on the
  reduce stream: the embedding's reduce-scatter runs after the compute, exposed, each micro-batch.
Not counted: the parameters next to those edges (the first layer's first projection, prefetched
under the embedding's lookup, and its gradient's reduce-scatter, issued when the embedding's
gradient arrives), which are partly exposed too: the edge is a lower bound. The config's bucket
sizes are not read: no figure here depends on them.
"""

from __future__ import annotations

from typing import Any

#: stage3_max_reuse_distance's default (deepspeed/runtime/zero/config.py line 215 at v0.11.1, pp_int(1e9)),
#: the value the FlagPerf ds_config.json files state too
MAX_REUSE_DISTANCE = 10**9


def applies(estimate: Any) -> bool:
    """DeepSpeed's ZeRO-3 over more than one rank, the plain loop (its pipeline engine has no ZeRO-3)."""
    layout = estimate.layout
    return layout.framework == "deepspeed" and layout.zero == 3 and layout.shard_ranks > 1 and layout.pp == 1


def edge_seconds(step_time: Any, stage: Any) -> float:
    """Seconds of one micro-batch's ZeRO-3 collectives that no compute hides: the embedding's
    all-gather before the forward (each micro-batch where it is released, else the step's first
    shared over the micro-batches) and its gradient's reduce-scatter after the backward."""
    estimate = step_time.estimate
    communication = estimate.communication(stage).get("dp", {})
    embedding = estimate.part("embedding", "params")
    params = estimate.on_stage(stage, "params")
    if not applies(estimate) or not embedding or "reduce_scatter" not in communication:
        return 0.0
    m = estimate.layout.microbatches
    released = 2 * (params - embedding) > MAX_REUSE_DISTANCE  # the trace between its two uses
    gathers = 1.0 if released else 1 / m
    gathered = estimate.workload.bytes_per_element * embedding
    scattered = communication["reduce_scatter"] / m * embedding / params
    return gathers * step_time.collective("dp", "all_gather", gathered) \
        + step_time.collective("dp", "reduce_scatter", scattered)
