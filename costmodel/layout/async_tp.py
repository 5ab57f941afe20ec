"""Async TP (torchtitan's enable_async_tensor_parallel): torch's micro-pipelined all-gather-matmul and
matmul-reduce-scatter over SymmetricMemory, as the share of the tensor-parallel collectives hidden
behind compute (Overlap.tp) that the code fuses: `simulate --async-tp`, a published row's "async_tp".

torchtitan 3faaa1a0d torchtitan/parallelisms/parallelize_llama.py: "Async TP requires
--training.compile" (lines 50-54); apply_tp sets torch._inductor.config._micro_pipeline_tp and
enable_symm_mem_for_group on the TP group (lines 185-189); compile wraps each TransformerBlock (lines
66-72), so inductor's micro-pipeline pass (torch/_inductor/fx_passes/micro_pipeline_tp.py) sees the
blocks' sequence-parallel all-gathers feeding a matmul (the normed input of wq/wk/wv and of w1/w3)
and the matmuls feeding a reduce-scatter (wo, w2), forward, backward and recomputed forward; the
embedding's reduce-scatter and the head's all-gather (with their backward's), outside the compiled
blocks, and the loss's all-reduces stay as they were. torch/distributed/_symmetric_memory/__init__.py
(_pipelined_multi_all_gather_and_consume, _pipelined_produce_and_all2all): each fused op splits its
tensor into tp chunks; the rank's own chunk is consumed first (all-gather: after an exposed copy of
the shard into its p2p buffer and a barrier, "giving up the chance to overlap mv and b with the
first shard_consumer"), then tp - 1 p2p copies alternate over two streams, each beside the other
stream's matmul of the previous chunk; matmul-reduce-scatter produces a chunk, copies it, and ends
with the rank's own chunk and a sum of the partials. So each fused collective's copies run beside
matmuls, the first chunk's compute and the last chunk's reduction apart: the fused share is hidden
(up to the compute beside it, layout/time.py), the rest exposed. Which collectives the pass fuses
(micro_pipeline_tp.py, pytorch/pytorch as stored): fuse_all_gather_matmul takes the matmuls that read
the gathered tensor as their left operand (_find_consumer_matmuls: the forward's Q/K/V and w1/w3, the
backward's dgrad of wo and w2 on the gathered output gradient); fuse_matmul_reduce_scatter needs the
reduce-scatter's input to come straight from one matmul (_find_producer_matmul: aten.mm or _scaled_mm,
with its reshapes; else "no producer matmul found for reduce scatter, skipping"): the forward's wo and
w2 outputs fuse, but the backward's reduce-scatter of a sublayer's input gradient, the sum of its
column-parallel matmuls' dgrads (wq + wk + wv, w1 + w3: torchtitan's PrepareModuleInput gathers the
sublayer's input once), is an add and stays a plain collective, one a sublayer a micro-batch.
Not modelled: the exposed shard copy, barriers and partial sum of each fused op (memory-bound, of
one chunk), a chunk's copy outlasting its matmul (the step's compute caps the hidden time, not each
matmul's), and the copies' own cost to the compute beside them beyond Overlap.slowdown's convention.

Under a recipe that casts after the gather (GATHER_THEN_CAST_RECIPES) no all-gather is fused: the
pass's consumers of a gathered tensor are the matmuls that take it as their left operand, and the
scaled matmul's operand scales must not descend from it ("The matmuls are only fusible if non-A args
don't depend on the all-gather result node"); torchao's rowwise casts the gathered bf16 tensor (a
row amax, a scale, the cast), so the gather's users are the cast's ops and the scaled matmul's A is
the FP8 copy with a scale computed from the gathered tensor.
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError

#: FP8 recipes (layout/fp8.py RECIPES) under which torchtitan gathers the sequence-parallel activations in
#: bf16 and casts them after the gather, so torch's micro-pipeline pass fuses none of the tensor-parallel
#: all-gathers (only the matmul-reduce-scatters: the forward's and the recomputed forward's row-parallel
#: outputs, which come straight from torch._scaled_mm). torchtitan 820504e (the async-TP benchmark's)
#: torchtitan/models/llama3/parallelize_llama.py lines 56-65: "For now, float8 all-gather with TP is only
#: supported for tensorwise float8 scaling recipes. For rowwise recipes, we use regular TP and all-gather
#: happens in high precision" (ColwiseParallel, not Float8ColwiseParallel, whose FP8 gather feeds
#: torch._scaled_mm directly). torch/_inductor/fx_passes/micro_pipeline_tp.py (pytorch/pytorch
#: 5f65158a as stored; the same rule in the 2024 file, 00122fb1): fuse_all_gather_matmul takes
#: _find_consumer_matmuls(ag_res_node), the aten.mm / aten._scaled_mm users of the gathered tensor (or
#: of its reshape), and drops every matmul whose non-A arguments (the scales among them) descend from
#: it. torchao 6243040 float8_linear.py matmul_with_hp_or_float8_args.forward casts the input with
#: hp_tensor_to_float8_dynamic along dim -1 (its amax, scale and cast read the gathered tensor), and
#: backward casts the gathered output gradient along each dim before dgrad and wgrad. The maintainers' trace
#: says the same: pytorch/pytorch issue 149990 (2025-03-25, open), "[Async TP] all-gather-matmuls not fusing
#: properly when rowwise scales are used": "the matmul-reduce-scatters were being fused properly ... however,
#: the all-gather-matmul patterns were NOT being fused" (the reduce-scatter side: pull request 149247).
GATHER_THEN_CAST_RECIPES = ("rowwise",)


def check(layout: Any, compiled: bool) -> None:
    """Async TP as torchtitan runs it: FSDP2's framework, TP with sequence parallelism, compiled."""
    if layout.framework != "fsdp2" or layout.tp <= 1 or not layout.sp or not compiled:
        raise ConfigError("--async-tp is torchtitan's enable_async_tensor_parallel: --framework fsdp2, --tp > 1 with "
                          "sequence parallelism, and --compile ('Async TP requires --training.compile'); here "
                          f"--framework {layout.framework}, --tp {layout.tp}, sp {bool(layout.sp)}, "
                          f"{'compiled' if compiled else 'not compiled'}.")


def fused_share(estimate: Any) -> float:
    """The share of a micro-batch's tensor-parallel bytes the micro-pipeline pass fuses, the least over
    the stages (Overlap.tp is one share for every stage): all but each sublayer's backward reduce-scatter
    of its input gradient (a sum of dgrads, not one matmul's output), the embedding's reduce-scatter and
    its backward all-gather (the first stage), the head's all-gather and its backward reduce-scatter
    and the loss's collectives (the last stage); the once-a-step norm gradients are not counted (Overlap.tp
    hides that share of them too, layout/time.py: a small overstatement). Under a recipe that casts after
    the gather (GATHER_THEN_CAST_RECIPES) every all-gather is outside too."""
    x, logits = estimate.numbers["boundary"], estimate.numbers["logits"]
    gathers_fused = getattr(estimate.layout, "fp8", None) not in GATHER_THEN_CAST_RECIPES
    shares = []
    for stage in estimate.stages:
        events = estimate.tensor_parallel_collectives(stage) + estimate.recomputed_collectives(stage)
        total = sum(calls * payload for kind, calls, payload in events if kind != "optimizer_all_reduce")
        head = stage.last and estimate.cfg.head == "lm"
        summed = x * estimate.layer_count(stage, "sublayers")  # the backward's reduce-scatters of summed dgrads
        scatters = summed + x * (int(stage.first) + int(head))  # and the embedding's, the head's gradient's
        gathers = x * (int(stage.first) + int(head)) + sum(  # the embedding's gradient's, the head's input's
            calls * payload for kind, calls, payload in events if head and kind == "all_gather" and payload == logits)
        if not gathers_fused:
            gathers = sum(calls * payload for kind, calls, payload in events if kind == "all_gather")
        outside = scatters + gathers + sum(calls * payload for kind, calls, payload in events
                                           if kind == "loss_all_reduce")
        shares.append((total - outside) / total if total else 0.0)
    return min(shares)
