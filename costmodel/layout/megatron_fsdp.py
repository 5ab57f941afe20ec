"""Megatron-FSDP: `--framework megatron --zero 3` (Megatron-Core's use_megatron_fsdp with
data_parallel_sharding_strategy "optim_grads_params"), as NVIDIA/Megatron-LM 2a75ac12c runs it (the
submodule of NVIDIA-NeMo/Megatron-Bridge 067f987df), megatron/core/distributed/fsdp/:

- What it shards. Every FSDP unit (mcore_fsdp_adapter.py lines 169-175: TransformerLayer,
  MoETransformerLayer, MambaLayer; the rest, embedding, final norm and head, in buckets of about
  40M elements, BucketingPolicy.suggested_bucket_size) is one flat bucket per (dtype, expert or not)
  (param_and_grad_buffer.py _get_parameter_groups), its size padded to a multiple of the
  sharding ranks times its chunk_size_factor (build_data_parallel_buffer_index, _pad_if_needed),
  each rank holding size / ranks elements (_get_dp_buffer_shard_bucket_index): the bf16 weights,
  the main gradients (megatron_fsdp_main_grads_dtype) and the fp32 main weights and Adam moments
  (docs/mfsdp_design.md, "Sharding Strategies": ZeRO-3 / optim_grads_params, parameters,
  gradients and optimizer state sharded). The experts shard over the expert-data-parallel group.
- Its collectives. Each unit's weights are all-gathered before its forward (prefetched,
  PrefetchOrder.FORWARD_PASS_ORDER), released after it (optim_grads_params reshards after
  forward: _post_forward) and gathered again before its backward; its gradients are
  reduce-scattered after its backward in every micro-batch (megatron_fsdp.py lines 755-773:
  grad_reduce_every_bprop for optim_grads_params), in megatron_fsdp_grad_comm_dtype
  (Layout.grad_reduce_dtype), and accumulated into the rank's shard. Both overlap compute: it sets
  overlap_param_gather and overlap_grad_reduce itself (megatron_fsdp.py lines 328-333).
- Hybrid sharding (Layout.dp_shard < dp; Megatron-Bridge's num_distributed_optimizer_instances =
  dp / dp_shard with outer_dp_sharding_strategy "optim", HFSDP: docs/mfsdp_design.md's table,
  "sharded (N x M), fully sharded across flattened DP"). The weights and gradients are sharded over
  the inner group (dp_shard x cp, within an NVLink domain in Megatron-Bridge's recipes), the fp32
  main weights and Adam moments over all of dp x cp (param_and_grad_buffer.py lines 2352-2440, the
  HFSDP helper buffers). Once a step, after the last micro-batch's backward, the inner gradient shard
  is reduce-scattered over the outer group (the replicas: _bucket_group_gradient_reduce,
  outer_fsdp_group_grad_reduce only on is_last_microbatch), and before the first forward the
  updated shards are all-gathered back over it (AllGatherPipeline, outer_fsdp_group_param_gather).
  Under expert parallelism the experts' inner group is the expert-data-parallel group divided by the
  replicas (mcore_fsdp_adapter.py lines 354-372: get_expert_data_parallel_group(
  partial_expert_data_parallel=True)).
- The optimizer reads the main-gradient shard as it is: no fp32 copy of the gradient at the step
  (distrib_optimizer.py _copy_model_grads_to_main_grads returns at once under use_megatron_fsdp).

Not modelled: the chunk_size_factor's padding of each bucket (bucket_elements below computes it
from the tensors' shapes; the tree does not carry shapes per unit, so a rank's state is
ceil(P / ranks) as for any flat sharding, less than ranks x chunk elements a bucket short), the
all-gather prefetch depth (suggested_AG_prefetch_size, at least 500M elements: the buffers hold the
computing and one prefetched layer, as DeepSpeed's ZeRO-3 here), MXFP8 parameter all-gathers
(fp8_param_gather, which Megatron-Bridge's Nemotron 3 Ultra recipe does not set), HSDP with
outer_dp_sharding_strategy "no_shard" (the optimizer state sharded only over the inner group, the
gradients all-reduced over the outer one) and the optim and optim_grads strategies (ZeRO-1 and -2:
--zero 1 is Megatron-Core's distributed optimizer instead).
"""

from __future__ import annotations

import math
from typing import Sequence

SOURCE = ("NVIDIA/Megatron-LM 2a75ac12c megatron/core/distributed/fsdp/src/megatron_fsdp/"
          "param_and_grad_buffer.py _get_parameter_groups (step 3) and build_data_parallel_buffer_index")


def chunk_size_factor(shapes: Sequence[tuple[int, ...]]) -> int:
    """One bucket's chunk_size_factor: _get_parameter_groups, step 3, with the tensors sorted by
    the size of one dim-0 row (shape[1:].numel()), largest first; the factor starts at the first's and
    takes the lcm with each row size that neither equals it nor divides it with the tensor a
    multiple of it, nor belongs to a tensor smaller than it (every tensor stays in the one bucket:
    remaining_params is never filled)."""
    rows = sorted(shapes, key=lambda s: math.prod(s[1:]), reverse=True)
    factor = math.prod(rows[0][1:])
    for shape in rows:
        row, numel = math.prod(shape[1:]), math.prod(shape)
        if row == factor or (factor % row == 0 and numel % factor == 0) or numel < factor:
            continue
        factor = math.lcm(factor, row)
    return factor


def bucket_elements(shapes: Sequence[tuple[int, ...]], ranks: int) -> int:
    """Elements of one bucket's flat buffer, padded as build_data_parallel_buffer_index pads it:
    the tensors in order, each that is not a whole number of chunks rounded up to the next chunk
    (the first later one whose remainder fits the gap shares its last chunk; tensors smaller than a
    chunk fill the gaps they fit, the rest go last), the total padded to a multiple of ranks x chunk. Each of the ranks holds
    a 1/ranks of it (_get_dp_buffer_shard_bucket_index)."""
    chunk = chunk_size_factor(shapes)
    # The bucket's tensors in step 3's order (by row size, largest first; a stable sort). Its
    # "sorted(fragment_items, ...)" discards its result: the fragments stay in that order.
    numels = [math.prod(s) for s in sorted(shapes, key=lambda s: math.prod(s[1:]), reverse=True)]
    fragments = [n for n in numels if n < chunk]
    regular = [n for n in numels if n >= chunk]
    index = 0
    while regular:
        numel = regular.pop(0)
        if numel % chunk == 0:
            index += numel
            continue
        index += (numel // chunk + 1) * chunk
        remain = numel % chunk
        space = chunk - remain
        partner = next((i for i, other in enumerate(regular)
                        if other % chunk and remain + other % chunk <= chunk), None)
        if partner is not None:
            other = regular.pop(partner)
            space -= other % chunk
            index += other // chunk * chunk
        for fragment in list(fragments):
            if fragment <= space:
                space -= fragment
                fragments.remove(fragment)
    index += sum(fragments)
    multiple = ranks * chunk
    return math.ceil(index / multiple) * multiple


def shard_elements(shapes: Sequence[tuple[int, ...]], ranks: int) -> int:
    """Elements of one bucket each of the ranks holds: bucket_elements / ranks."""
    return bucket_elements(shapes, ranks) // ranks
