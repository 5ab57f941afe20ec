"""Whose ZeRO-1 optimizer a --zero 1 layout runs (Layout.zero_optimizer): "flat", Megatron-Core's
distributed optimizer and DeepSpeed's (the gradient reduce-scattered into each rank's shard of a flat
buffer, the updated shards all-gathered in one call), "internlm" (below) or "nanotron", nanotron's
ZeroDistributedOptimizer as the Ultra-Scale Playbook's benchmark ran it (huggingface/nanotron at
c252843039cc, src/nanotron):

- the gradient all-reduced whole: trainer.py lines 510-518 call sync_gradients_across_dp(...,
  reduce_scatter=False) ("TODO @thomasw21: This is too memory hungry, instead we run all_reduce"), which
  runs dist.all_reduce(self._contiguous_fp32_grad_buffer) (optim/gradient_accumulator.py line 155): twice
  the reduce-scatter's bytes on the wire (a ring all-reduce is a reduce-scatter and an all-gather).
  Memory is unchanged: the rank keeps its whole fp32 gradient either way (megatron's 6 + 12 / dp).
- every parameter sharded over every DP rank (optim/zero.py _partition_parameters, lines 171-193: each
  tensor split into dp slices), so after the step _all_gather_params (lines 217-249) hands
  distributed.all_gather_coalesced dp x n slices (n: the rank's parameter tensors), which flattens them
  into dp buffers, runs one all_gather, and copies each gathered slice back into its parameter in a
  Python loop (distributed.py lines 208-214, update_output: original_buffer.copy_(gathered_buffer) for
  each of dp x n slices). Each copy_ is a Python-issued op, so the loop takes dp x n x the host's time
  per op (Hardware.eager_op_s: the file's, else the project's measured H200 host's, kernel_facts.json
  "eager_host_op_default"). The host enqueues the all_gather and starts the loop at once (a synchronous
  NCCL call blocks the stream, not the host), and nanotron's trainer synchronises every step
  (trainer.py lines 597-598: dist.barrier(); torch.cuda.synchronize() before it logs the step), so the
  step grows by the loop less the gather it runs beside: gather_copy_seconds. Left out, so a lower
  bound: the dp x n slices zero.py builds before the gather (views: host time only, while the GPU may
  still run the gradient all-reduce) and the loop's C++ narrow and view ops.

"internlm", InternLM's HybridZeroOptimizer (InternLM/InternLM at c18bec93, the 7B throughput table's code;
zero1=-1: its ZeRO group is all of dp):
- the gradient all-reduced whole, bucket by bucket in the backward's hooks: every hook passes
  reduce_rank=None (internlm/solver/optimizer/hybrid_zero_optim.py lines 306-327), and reduce_tensor runs
  dist.all_reduce when dst_rank is None (optim/utils.py lines 87-92), in the model's dtype; a bucket is
  reduced once it would pass reduce_bucket_size elements (hybrid_zero_optim.py line 335; configs/7B_sft.py
  line 67: 512 x 1024 x 1024), so ceil(params / 512 Mi) calls.
- whole tensors assigned to ranks, largest first, each to the rank holding the fewest elements
  (_partition_param_list, lines 272-297; train.py line 229: one parameter group), so min(dp, tensors)
  ranks hold any; after the step each of them broadcasts its flat bf16 parameters to the group
  (broadcast_params, lines 629-652, one dist.broadcast a rank, 'TODO: support broadcast overlap'): one
  call a holding rank, each paying the ring's latency. Timed as that many all-gather calls of the whole
  parameter payload (collective_seconds has no broadcast: a ring broadcast puts each rank's received
  bytes on the wire once, an all-gather (dp - 1) / dp of them, the same at large dp; NCCL's
  src/graph/tuning.cc counts a ring broadcast's network steps as nNodes, an all-gather's nNodes - 1,
  so this is one step a call short).
InternLM's 7B tensors (internlm_tensors): nine a layer (modeling_internlm.py PackedFlashBaseLayer1D:
norm1, norm2; multi_head_attention.py MHA: Wqkv and out_proj, each with its bias; linear.py FeedForward:
w1, w2, w3 with bias=False), the embedding, the final norm and the head (bias=False).
"""

from __future__ import annotations

import math
from typing import Any

from ..config import ConfigError, show
from ..spec import ZERO_OPTIMIZERS


def check(layout: Any) -> None:
    """One of ZERO_OPTIMIZERS; nanotron's and InternLM's only where the optimizer state is sharded (--zero 1)."""
    if layout.zero_optimizer not in ZERO_OPTIMIZERS:
        raise ConfigError(f"layout: zero_optimizer must be {ZERO_OPTIMIZERS.listed()}, "
                          f"got {show(layout.zero_optimizer)}.")
    if layout.zero_optimizer != "flat" and layout.zero != 1:
        raise ConfigError(f"layout: --zero-optimizer {layout.zero_optimizer} names a ZeRO-1 optimizer; "
                          f"it needs --zero 1 (here {layout.zero}).")


def all_reduces(layout: Any) -> bool:
    """Whether the layout's data-parallel gradients are all-reduced whole (nanotron's and InternLM's ZeRO-1)."""
    return layout.zero == 1 and layout.zero_optimizer in ("nanotron", "internlm")


#: InternLM's reduce_bucket_size in elements (configs/7B_sft.py line 67 at c18bec93).
INTERNLM_BUCKET_ELEMENTS = 512 * 1024 * 1024


def internlm_tensors(estimate: Any, stage: Any) -> int:
    """The parameter tensors of a rank of InternLM's model (module docstring): nine a layer, the
    embedding on the first stage, the final norm and the head on the last."""
    return 9 * sum(stage.layers) + int(stage.first) + 2 * int(stage.last)


def flat_calls(estimate: Any, stage: Any, group: str, kind: str) -> int:
    """Calls of a flat-sharded layout's data-parallel `kind` a step: 1 (Megatron-Core's and DeepSpeed's
    buckets not counted, a stated simplification), but under InternLM's ZeRO-1 its gradient buckets
    (all_reduce) and its holding ranks' broadcasts (all_gather) over the dp group."""
    if estimate.layout.zero_optimizer != "internlm" or group != "dp" or estimate.layout.zero != 1:
        return 1
    if kind == "all_gather":
        return min(estimate.layout.dp, internlm_tensors(estimate, stage))
    params = estimate.on_stage(stage, "params") + estimate.tied_copy(stage)
    return max(1, math.ceil(params / INTERNLM_BUCKET_ELEMENTS))


def nanotron_tensors(estimate: Any, stage: Any) -> int:
    """The parameter tensors a rank of nanotron's Llama holds (models/llama.py at c2528430): six a
    decoder layer (input_layernorm, qkv_proj, o_proj, post_attention_layernorm, gate_up_proj,
    down_proj: Q, K, V and gate/up fused, bias=False), the token embedding on the first stage, the
    final norm and the head on the last (the head is the embedding itself when tied on one stage)."""
    head = stage.last and not (estimate.cfg.tie_embeddings and stage.first)
    return 6 * sum(stage.layers) + int(stage.first) + int(stage.last) + int(head)


def gather_copy_seconds(step_time: Any, stage: Any) -> float:
    """Seconds nanotron's parameter gather adds to a step of this rank beyond the all_gather itself:
    its Python loop of dp x n copy_ ops at the host's time per op, less the all_gather's own seconds,
    which the loop runs beside (module docstring); 0 for the other optimizers, at dp 1 (zero.py returns
    before gathering) or where the hardware states no host time per op."""
    estimate = step_time.estimate
    layout, op = estimate.layout, step_time.hardware.eager_op_s
    if layout.zero != 1 or layout.zero_optimizer != "nanotron" or layout.dp == 1 or op is None:
        return 0.0
    loop = layout.dp * nanotron_tensors(estimate, stage) * op
    gathered = step_time.collective("dp", "all_gather", estimate.communication(stage)["dp"]["all_gather"])
    return max(0.0, loop - gathered)
