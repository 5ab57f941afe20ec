"""Megatron's own dense attention path moves three passes beside its GEMMs (facts.json megatron_dense_passes,
wt44_review, session 44): NVIDIA/Megatron-LM at cbad126 adds query_key_value's bias after the GEMM (F.linear
on a 3-D input under torch 1.8: matmul, then add_; backward: the bias's gradient, a sum over the tokens), splits
the fused output with torch.split (backward: torch.cat of the three gradients) and copies the context
[b, heads, s, d] to [s, b, h] with permute(2, 0, 1, 3).contiguous() (backward: a view). Every figure here is
written out from those code lines, not read from the tool."""

from __future__ import annotations

import pytest

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
    # 3.1126086702496476 + added before session 45
    assert step["seconds"] == pytest.approx(3.1011571602504833 + added, rel=1e-6)


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
