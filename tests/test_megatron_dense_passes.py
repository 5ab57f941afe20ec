"""Megatron's own dense attention path moves three passes beside its GEMMs (facts.json megatron_dense_passes,
wt44_review, session 44): NVIDIA/Megatron-LM at cbad126 adds query_key_value's bias after the GEMM (F.linear
on a 3-D input under torch 1.8: matmul, then add_; backward: the bias's gradient, a sum over the tokens), splits
the fused output with torch.split (backward: torch.cat of the three gradients) and copies the context
[b, heads, s, d] to [s, b, h] with permute(2, 0, 1, 3).contiguous() (backward: a view). Every figure here is
written out from those code lines, not read from the tool."""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel.hardware import load_hardware
from costmodel.kernel_shapes import Pointwise
from costmodel.kernel_time import kernels_seconds
from costmodel.layout import ParallelEstimate
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels

TOKENS, HIDDEN = 16 * 2048, 2304  # Narayanan et al.'s 1.7B: micro-batch 16 x 2,048, h 2,304, tp 1


def _narayanan_1_7b():
    from reports.published_runs import narayanan_runs

    _, cfg, workload, layout, overlap = narayanan_runs()[0]
    return ParallelEstimate(cfg, workload, layout), overlap


def _pointwise(estimate, step, suffix):
    timer = step.timer
    for (_, rerun, _, kernels), work in zip(rank_kernels(estimate, timer.fused_attention, timer.compiled,
                                                         fused_qkv=step.fused_qkv), estimate.structure["work"]):
        if work["path"].endswith(suffix):
            return [k for k in kernels if isinstance(k, Pointwise)], [k for k in rerun if isinstance(k, Pointwise)]
    raise AssertionError(suffix)


def test_narayanans_qkv_bias_and_split_passes():
    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap)
    kernels, rerun = _pointwise(estimate, step, "self_attention.qkv")
    outputs = TOKENS * 3 * HIDDEN  # the fused 3h output, fp16
    # forward: the bias's add_ reads and writes it (4 bytes an element); backward: the bias's gradient reads the
    # gradient (2) and the split's cat reads and writes it (4); the recomputed forward adds the bias again
    assert [(k.bytes, k.backward_bytes) for k in kernels] == [(4 * outputs, 6 * outputs)] \
        == [(905_969_664, 1_358_954_496)]
    assert [k.bytes for k in rerun] == [4 * outputs]
    seconds = kernels_seconds(kernels, step.timer, training=True) + kernels_seconds(rerun, step.timer)
    assert seconds == pytest.approx(14 * outputs / (2039e9 * 0.8), rel=1e-12)  # the A100 80GB's 2,039 GB/s x 0.8


def test_narayanans_context_copy():
    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap)
    kernels, rerun = _pointwise(estimate, step, "self_attention.weighted_sum")
    # permute(2, 0, 1, 3).contiguous(): reads and writes the heads' output once; its backward is a view
    assert [(k.bytes, k.backward_bytes) for k in kernels] == [(4 * TOKENS * HIDDEN, 0.0)] == [(301_989_888, 0.0)]
    assert [k.bytes for k in rerun] == [4 * TOKENS * HIDDEN]


def test_narayanans_step_with_the_three_passes():
    # 24 layers, one micro-batch: (14 x 3h + 8 x h) x tokens x 2,039 GB/s x 0.8 more than before this round
    # (3.1126 s), the GEMMs, softmax and every other term as they were; session 45's copy-stream rate for the
    # write-dominated score GEMMs (tests/test_time_core_review.py) takes 0.0115 s off the base: 3.1011 s
    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap).step()
    added = 24 * (14 * 3 + 8) * TOKENS * HIDDEN / (2039e9 * 0.8)
    assert added == pytest.approx(0.055540, abs=1e-6)
    # 3.1126086702496476 + added before session 45; 3.1011571602504833 + added before wt46_mgsoftmax, whose causal
    # softmax loads to the diagonal (-0.0946 s) and whose recomputed forward pays its 288 launches (+0.00288 s)
    assert step["seconds"] == pytest.approx(3.0094339032813804 + added, rel=1e-6)


def _row_loads(n: int, vector: int) -> int:
    """One (batch, head)'s scores scaled_upper_triang_masked_softmax loads, row by row as its code does
    (NVIDIA/Megatron-LM 00129014 megatron/fused_kernels/scaled_upper_triang_masked_softmax.h: local_seq =
    blockIdx.x + 1; a vector of `vector` elements is loaded when its first index is below local_seq)."""
    return sum(sum(vector for first in range(0, n, vector) if first < row + 1) for row in range(n))


def test_megatrons_fused_softmax_bytes_as_its_kernels_load():
    # wt46_mgsoftmax: the causal kernel loads up to the diagonal and stores the whole row; the padding-mask kernel
    # loads the uint8 mask beside every score; each backward as its forward's row bound says. fp16, an odd batch.
    from costmodel import symbols as S
    from costmodel.blocks import Softmax
    from costmodel.blocks.base import Profile

    b, h, n, e = 2, 3, 12, 2
    subs = {S.b: b, S.n: n, S.h: h, S.h_kv: h, S.d_h: 8, S.e: e}
    profile = Profile(impl="megatron", attention="eager", dropout=True, family="gpt", kernel_device="cuda")
    pairs = b * h * n * n
    loads = b * h * _row_loads(n, 4)
    assert (pairs, loads) == (864, 576)  # rows load 4, 4, 4, 4, 8, ..., 12 of their 12 scores
    dropout = (2 * e + 1) * pairs  # fused_dropout: the probabilities read, the output and a bool mask written
    bytes_of = {}
    for name, block in (("causal", Softmax(S.n, S.n, profile=profile, causal=True)),
                        ("padding", Softmax(S.n, S.n, profile=profile)),
                        ("cross", Softmax(S.n, S.n, profile=profile, cross=True, causal=True))):
        cost = block.cost()
        bytes_of[name] = tuple(int(sp.sympify(q).xreplace(subs)) for q in (cost.bytes_other, cost.backward_bytes_other))
    # causal: the loads, the whole row stored; backward the output and the gradient to the diagonal, the row stored
    assert bytes_of["causal"] == (e * (loads + pairs) + dropout, e * (2 * loads + pairs) + dropout) == (7_200, 8_352)
    # padding (and cross attention's): every score and its mask byte read, the row written; backward 3 e
    assert bytes_of["padding"] == bytes_of["cross"] == ((2 * e + 1) * pairs + dropout, 3 * e * pairs + dropout) \
        == (8_640, 9_504)
    # cbad126's scalar loads (one element a load): (n + 1) / 2n of the scores, the rule's 4-vector (n + 4) / 2n
    assert _row_loads(2048, 1) * 2 == 2048 * 2049 and _row_loads(2048, 4) * 2 == 2048 * 2052


def test_narayanans_softmax_leaf_and_recomputed_launches():
    # the 1.7B (micro-batch 16, 24 heads, 2,048 tokens): 3.0 B a score forward and 4.0 backward for the softmax
    # (was 4 and 6 before wt46_mgsoftmax), torch's fused_dropout's 5 each way beside it
    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap)
    kernels, rerun = _pointwise(estimate, step, "self_attention.softmax")
    pairs = 16 * 24 * 2048 * 2048
    loads = 16 * 24 * _row_loads(2048, 4)
    assert [(k.bytes, k.backward_bytes) for k in kernels] == [(2 * (loads + pairs) + 5 * pairs,
                                                               2 * (2 * loads + pairs) + 5 * pairs)] \
        == [(12_888_047_616, 14_501_806_080)]
    assert [k.bytes for k in rerun] == [kernels[0].bytes]
    # full recomputation: each of a layer's 12 launching leaves pays its launch a fourth time (Megatron's
    # CheckpointFunction.backward reruns the layer's forward); the embedding's 3, the final norm and the head's 2 not
    stage = estimate.stages[0]
    assert step.part_reruns == {"embedding": 0, "layer.decoder": 12, "tail": 0, "head": 0}
    kernels_s = sum(count * step.part_seconds.get(key, (0.0, 0))[0] for key, count in step.part_runs(stage).items())
    launches = 3 * (3 + 24 * 12 + 1 + 2) + 24 * 12  # 882 before wt46_mgsoftmax
    assert step.compute(stage) - kernels_s == pytest.approx(launches * 1e-5, rel=1e-9) == 0.0117  # 10 us a block


def test_not_charged_beside_flash_or_outside_megatron():
    # a Megatron flash row (Transformer Engine's linears fuse the bias; its attention takes no such copy) and
    # transformers' eager GPT-2 training step keep no such pass
    from costmodel.config import Workload
    from costmodel.layout import Layout
    from reports.published_runs import gpt

    layout = Layout(tp=1, pp=1, dp=1, microbatches=1, framework="megatron")
    cfg = gpt("gpt-1.7b", 24, 2304, 24)
    flash = ParallelEstimate(cfg, Workload(seq_len=2048, batch=4, dtype="bf16", impl="megatron",
                                           attention="flash"), layout)
    step = KernelStepTime(flash, load_hardware("a100-80gb"))
    assert _pointwise(flash, step, "self_attention.qkv") == ([], [])
    assert _pointwise(flash, step, "self_attention.weighted_sum") == ([], [])
    hf = ParallelEstimate(cfg, Workload(seq_len=2048, batch=4, dtype="bf16", impl="hf", attention="eager"), layout)
    step = KernelStepTime(hf, load_hardware("a100-80gb"))
    assert _pointwise(hf, step, "self_attention.weighted_sum") == ([], [])
