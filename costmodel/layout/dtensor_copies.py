"""DTensor's copies around each sequence-parallel collective (--framework fsdp2 with tp > 1): the
memory-bound kernel torch's functional collectives run beside every all-gather and reduce-scatter
whose tensor is not sharded on its first dimension.

Read from pytorch/pytorch torch/distributed/_functional_collectives.py, the code DTensor's Shard
placements call (Shard._to_replicate_tensor gathers with gather_dim = the shard's dim, Partial to
Shard reduce-scatters with scatter_dim = it):
- all_gather_tensor: NCCL gathers the ranks' shards one after another along dim 0; `if gather_dim
  != 0: res = torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim)` (at 000f488b) rewrites
  the whole gathered tensor (the payload) in the layout of dim gather_dim. The current code calls
  torch/_utils.py _maybe_view_chunk_cat instead, which returns a view where 'res.shape[0] ==
  group_size' and every dim before gather_dim is 1: a sequence gather (gather_dim 1) of a
  micro-batch of one sequence copies nothing; of more, and the logits' gather on the last dim, copy;
- reduce_scatter_tensor: `if scatter_dim != 0: tensor_list = torch.chunk(self, group_size,
  dim=scatter_dim); self = torch.cat(tensor_list)` (at 000f488b and now): the whole input (the
  payload) is rewritten before the reduce-scatter reads it, whatever the micro-batch.
Sequence parallelism shards [batch, sequence, hidden] activations on dim 1 (torchtitan's and
KempnerForge's SequenceParallel norms, Shard(1) between the row- and column-parallel layers), and
the vocabulary-parallel head gathers its logits on the last dim: each such collective that copies
reads and writes its payload once (2 x payload bytes), on the compute stream (the cat runs where its
result is needed). KempnerForge's published profile
(benchmarks/profiling/13b_24gpu_profiling.md at a7f83461, eager, TP 4) counts one
CatArrayBatchedCopy kernel a TP reduce-scatter (6,420 and 6,420) and more aten::cat calls (19,340) than
its TP all-gathers and reduce-scatters together (16,099). Charged at the memory-bound rate in eager
and compiled code alike (Inductor lowers the cat to a copy kernel between the collective and a
matmul, which it cannot fuse into either; a stated assumption); the profile's eager copy ran slower
(0.171 ms for 167.8 MB moved, about 1 TB/s), so this is the least it costs. Megatron's sequence
parallelism gathers and scatters on dim 0 ([sequence, batch, hidden]): no copy, not this rule.
"""

from __future__ import annotations

from typing import Any


def applies(estimate: Any) -> bool:
    """Whether the layout's tensor-parallel collectives are DTensor's on sequence-sharded tensors:
    PyTorch's FSDP2 framework (DTensor tensor parallelism) with sequence parallelism, training."""
    layout = estimate.layout
    return layout.framework == "fsdp2" and layout.tp > 1 and layout.sp and estimate.phase == "train"


def copy_bytes(estimate: Any, stage: Any, fused: dict[str, int] | None = None) -> int:
    """Bytes one micro-batch's DTensor collective copies read and write on a rank of `stage`: twice
    the payload of every tensor-parallel all-gather and reduce-scatter it runs, the recomputed
    forward's included (0 where the rule does not apply), less the calls Async TP fuses (`fused`, by
    kind, each of the blocks' activation: layout/async_tp.py fused_calls), whose chunk-and-cat
    torch's micro-pipeline pass takes into the fused op (torch/_inductor/fx_passes/micro_pipeline_tp.py:
    its non-zero-dim all-gather and reduce-scatter patterns match the split + cat, and erase them)."""
    if not applies(estimate):
        return 0
    events = estimate.tensor_parallel_collectives(stage) + estimate.recomputed_collectives(stage)
    logits = estimate.numbers["logits"]
    one_sequence = estimate.workload.batch == 1  # a sequence gather of one sequence is a view

    def copies(kind: str, payload: int) -> bool:
        return kind == "reduce_scatter" or (kind == "all_gather" and (not one_sequence or payload == logits))

    x = estimate.numbers["boundary"]
    taken = sum(calls * x for kind, calls in (fused or {}).items() if copies(kind, x))
    return 2 * (sum(calls * payload for kind, calls, payload in events if copies(kind, payload)) - taken)


def copy_seconds(estimate: Any, stage: Any, bytes_per_s: float, fused: dict[str, int] | None = None) -> float:
    """Seconds of one micro-batch's DTensor collective copies (copy_bytes) at the memory-bound rate."""
    return copy_bytes(estimate, stage, fused) / bytes_per_s
