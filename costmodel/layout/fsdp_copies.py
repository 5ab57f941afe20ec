"""FSDP2's copies on the compute stream: the memory-bound kernels fully_shard runs beside each
unit's all-gather and reduce-scatter, every micro-batch (--framework fsdp2).

Read from torch 2.13, torch/distributed/fsdp/_fully_shard/ (measured on gloo:
validate/distributed/fsdp_copies.py):
- copy-out: FSDPParamGroup.wait_for_unshard (_fsdp_param_group.py) calls
  foreach_all_gather_copy_out on the current stream, after it waits for the all-gather: one
  fsdp.split_with_sizes_copy of the all-gather output into each parameter's padded unsharded
  tensor, so each gather reads and writes its whole output (the all-gather payload) once more;
- reduce-scatter copy-in: foreach_reduce (_fsdp_collectives.py) runs foreach_reduce_scatter_copy_in
  (fsdp.chunk_cat) before `with device_handle.stream(reduce_scatter_stream)`, on the current
  stream: it reads the unit's unsharded gradients (the rank's parameters whose gradients are
  reduce-scattered, in the parameters' compute dtype) and writes the reduce-scatter input, padded, in reduce_dtype (the payload; the
  fp32 upcast of bf16 gradients is this write);
- not on the compute stream: the all-gather copy-in (fsdp.all_gather_copy_in, on the all-gather
  copy-in stream, of the rank's shard only), the gradient divisions (none for fp32 or bf16
  reductions: _get_gradient_divide_factors returns ReduceOp.AVG and no factors; fp16's pre- and
  post-divide run on the reduce-scatter stream) and the sharded gradient's accumulation (on the
  reduce-scatter stream, of the shard).
The two copies run between the unit's kernels on the compute stream, so each micro-batch pays
them in full, at the memory-bound rate. The plain loop's only (pp 1): under a pipeline schedule
torch.distributed.pipelining drives the units (torch 2.13 pipelining/stage.py: every micro-batch's
backward with set_reshard_after_backward(False) and set_requires_gradient_sync(False), then one
perform_reduce_grad a step), so its copies are not the micro-batches' (that schedule's gathers and
once-a-step reduce-scatters: layout/fsdp_pipeline.py; its copies are not charged). Flat sharding
(DeepSpeed's ZeRO-3, Megatron-FSDP) copies otherwise: not this rule.
"""

from __future__ import annotations

from typing import Any

GROUPS = ("dp", "edp")  # the shard groups whose collectives FSDP2's units issue (not HSDP's replicas)


def copy_bytes(estimate: Any, stage: Any) -> dict[str, int]:
    """Bytes one micro-batch's FSDP2 copies read and write on the compute stream of a rank of
    `stage` (empty where the layout runs no FSDP2 units over a shard group of more than one rank)."""
    layout = estimate.layout
    if estimate.framework.sharding != "per_tensor" or not layout.reduces_gradients or layout.shard_ranks == 1 \
            or layout.pp > 1:
        return {}
    m = layout.microbatches
    communication = estimate.communication(stage)
    gathered = sum(communication.get(group, {}).get("all_gather", 0) for group in GROUPS) // m
    scattered = sum(communication.get(group, {}).get("reduce_scatter", 0) for group in GROUPS) // m
    # the gradients reduce-scattered: the routed experts' only where their own group (edp) shards them
    params = estimate.on_stage(stage, "params")
    if layout.ep > 1 and not communication.get("edp", {}).get("reduce_scatter"):
        params -= estimate.on_stage(stage, "expert_params")
    gradients = estimate.workload.bytes_per_element * params
    return {"copy_out_read": gathered, "copy_out_written": gathered,
            "chunk_cat_read": gradients, "chunk_cat_written": scattered}


def copy_seconds(estimate: Any, stage: Any, bytes_per_s: float) -> float:
    """Seconds of one micro-batch's FSDP2 copies (copy_bytes) at the memory-bound rate."""
    return sum(copy_bytes(estimate, stage).values()) / bytes_per_s


def edge_seconds(step_time: Any, stage: Any) -> float:
    """Seconds of one micro-batch's FSDP2 collectives that no compute of the rank hides: the units
    at the micro-batch's edges, the root (embeddings, final norm, head: the stage's parameters
    outside its layers) and the first layer, whose all-gathers open the forward and whose
    reduce-scatters close the backward (0 where the layout runs no FSDP2 units over the "dp" group).

    From torch 2.13, torch/distributed/fsdp/_fully_shard/: the root's pre-forward unshards it and
    waits (FSDPParamGroup.pre_forward: unshard, wait_for_unshard) before the embedding, and the
    first layer's all-gather is issued from its own pre-forward, after the embedding (a lookup);
    the root's reduce-scatter is issued from _root_post_backward_final_callback (its forward inputs,
    token ids, need no gradient, so its post-backward runs after the whole backward), which then
    makes the compute stream wait for the retained reduce-scatters (is_last_backward, the default),
    and the first layer's reduce-scatter follows the layer's backward with only the embedding's
    gradient after it. One process group runs them in order (ProcessGroupNCCL: one stream a
    device), so each micro-batch's reduce-scatters and the next one's first all-gathers run back
    to back with the compute stream waiting. The last layer's all-gather in the backward is not
    among them: the root's pre-backward prefetches it (_backward_prefetch) under the head's
    backward. The plain loop's only (pp 1), as copy_bytes. DeepSpeed's ZeRO-3 has its own edges
    (layout/deepspeed_zero3.py: the embedding's all-gather and reduce-scatter)."""
    estimate = step_time.estimate
    from . import deepspeed_zero3

    if deepspeed_zero3.applies(estimate):
        return deepspeed_zero3.edge_seconds(step_time, stage)
    layout = estimate.layout
    communication = estimate.communication(stage).get("dp", {})
    if estimate.framework.sharding != "per_tensor" or "reduce_scatter" not in communication or layout.pp > 1:
        return 0.0
    runs = estimate.layer_runs(stage)
    layers = sum(runs.values())
    stage_padded, layer_padded = estimate.on_stage(stage, "padded"), estimate.layer_sum(stage, "padded")
    root = stage_padded - layer_padded
    edge = root + (layer_padded / layers if layers else 0)  # padded elements a rank holds of the two units
    calls = int(root > 0) + int(layers > 0)
    gathered = estimate.workload.bytes_per_element * layout.shard_ranks * edge
    scattered = communication["reduce_scatter"] / layout.microbatches * edge / stage_padded
    return step_time.collective("dp", "all_gather", gathered, calls) \
        + step_time.collective("dp", "reduce_scatter", scattered, calls)
