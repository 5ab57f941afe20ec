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
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError


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
    hides that share of them too, layout/time.py: a small overstatement)."""
    x, logits = estimate.numbers["boundary"], estimate.numbers["logits"]
    shares = []
    for stage in estimate.stages:
        events = estimate.tensor_parallel_collectives(stage) + estimate.recomputed_collectives(stage)
        total = sum(calls * payload for kind, calls, payload in events if kind != "optimizer_all_reduce")
        head = stage.last and estimate.cfg.head == "lm"
        summed = x * estimate.layer_count(stage, "sublayers")  # the backward's reduce-scatters of summed dgrads
        outside = summed + 2 * x * (int(stage.first) + int(head)) + sum(
            calls * payload for kind, calls, payload in events
            if kind == "loss_all_reduce" or (head and kind == "all_gather" and payload == logits))
        shares.append((total - outside) / total if total else 0.0)
    return min(shares)
