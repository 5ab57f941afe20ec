"""Transformer Engine's delayed scaling as AMD's pytorch-training-benchmark runs it under FSDP
(--fp8 delayed --framework fsdp2 --fp8-autocast te-transformer-layer; costmodel/layout/fp8_options.py
FP8_AUTOCASTS): one fp8_autocast over the forward and the loss, so one forward and one backward amax
all-reduce a micro-batch; TE's TransformerLayer, whose LayerNormLinear and LayerNormMLP write the norms'
outputs and the SwiGLU's output in FP8 (no cast kernel, a transpose), the layers' weights cast once a step
(is_first_microbatch); the head a te.LayerNormLinear in FP8, its weight cast every micro-batch (the script
passes it no is_first_microbatch). Each element priced by the rules that exist (layout/fp8.py _TE_DELAYED,
the FP8 GEMM rate): exact bytes for tiny, odd GEMMs, the head's shape and rate, the refusals."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_shapes import Gemm
from costmodel.layout import Layout
from costmodel.layout.fp8_casts import cast_bytes
from costmodel.layout.kernel_step import KernelStepTime, fp8_casts, leaf_casts
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.roofline_parts import runs_fp8
from costmodel.presets import load_preset

TE = "te-transformer-layer"
# An FFN leaf's two GEMMs (37 tokens, d 19, d_ff 23): up reads the norm's output, down the activation's.
UP, DOWN = Gemm(37, 23, 19, normed_input=True), Gemm(37, 19, 23, activated_input=True)
HEAD = Gemm(37, 29, 19, normed_input=True)  # vocabulary 29, the final norm's output in


def estimate(model: str = "gpt2", **layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset(model), Workload(seq_len=1024, batch=4),
                            Layout(dp=8, microbatches=2, fp8="delayed", **layout))


def bytes_of(rule: tuple, gemms: list[Gemm]) -> tuple[float, float]:
    recipe, needs_tn, microbatches, tp, sp, fp8_params = rule
    return cast_bytes(gemms, recipe, needs_tn=needs_tn, microbatches=microbatches, tp=tp, sequence_parallel=sp,
                      fp8_params=fp8_params)


def test_one_autocast_reduces_the_amaxes_once_each_way_the_head_among_them():
    """GPT-2 small: 12 layers x 4 GEMMs and the head's 1 = 49 GEMMs; forward 49 x 3 fp32 amaxes = 588 bytes,
    backward 49 x 2 = 392, once each a micro-batch (Composer: 48 GEMMs, the forward twice)."""
    te = estimate(framework="fsdp2", zero=3, fp8_autocast=TE)
    composer = estimate(framework="fsdp2", zero=3, fp8_autocast="forward-and-loss")
    assert te.amax_reductions(te.stages[0]) == [588, 392]
    assert composer.amax_reductions(composer.stages[0]) == [576, 576, 384]


def test_the_ffn_casts_nothing_its_norm_and_activation_write():
    """Hopper (column-major copies made), 2 micro-batches. TE's LayerNormMLP: both inputs written in FP8 by
    their kernels, each transposed (2 bytes an element: 37 x 19 + 37 x 23 = 1,554 elements, 3,108 bytes), the
    weights (23 x 19 twice, 874 elements) cast and transposed (4) once a step (1,748 a micro-batch). Megatron-Core
    (TELayerNormColumnParallelLinear, then TERowParallelLinear after the separate activation): the down
    projection's input cast and transposed (4 x 851 = 3,404). Composer's te.Linear: both inputs cast (6,216),
    the weights every micro-batch (3,496). Backward, the output gradients cast and transposed (4 x 1,554)."""
    hardware = load_hardware("h100-sxm")
    te = fp8_casts(estimate(framework="fsdp2", zero=3, fp8_autocast=TE), hardware)
    megatron = fp8_casts(estimate(framework="megatron", zero=1), hardware)
    composer = fp8_casts(estimate(framework="fsdp2", zero=3, fp8_autocast="forward-and-loss"), hardware)
    assert (te[0].fused_norm, te[0].fused_activation, te[0].weight_once_per_step) == (True, True, True)
    assert bytes_of(te, [UP, DOWN]) == (2 * 1554 + 4 * 874 / 2, 4 * 1554) == (4856.0, 6216)
    assert bytes_of(megatron, [UP, DOWN]) == (2 * 703 + 4 * 851 + 4 * 874 / 2, 6216) == (6558.0, 6216)
    assert bytes_of(composer, [UP, DOWN]) == (4 * 1554 + 4 * 874, 6216) == (9712, 6216)


def test_the_head_casts_its_weight_every_micro_batch():
    """The head leaf's own rule (leaf_casts): its norm fused (703 x 2 bytes), its 29 x 19 weight cast and
    transposed every micro-batch (551 x 4, not halved), its 37 x 29 gradient (1,073 x 4); the layers' leaves
    keep the once-a-step rule; without the scope (Composer) every leaf has one rule."""
    hardware = load_hardware("h100-sxm")
    layout = estimate(framework="fsdp2", zero=3, fp8_autocast=TE)
    rule = fp8_casts(layout, hardware)
    layer, head = leaf_casts(rule, [{}, {"head": True}], layout.layout)
    assert layer is rule and head[0].weight_once_per_step is False and head[1:] == rule[1:]
    assert bytes_of(head, [HEAD]) == (2 * 703 + 4 * 551, 4 * 1073) == (3610, 4292)
    composer = estimate(framework="fsdp2", zero=3, fp8_autocast="forward-and-loss")
    other = fp8_casts(composer, hardware)
    assert leaf_casts(other, [{}, {"head": True}], composer.layout) == (other, other)


def test_the_head_runs_its_own_shape_at_the_fp8_rate_under_this_scope_only():
    """Llama 3.2 1B (vocabulary 128,256, d 2,048): the head leaf's one GEMM is (4 x 1,024 tokens, 128,256, 2,048),
    its input marked as the final norm's; it runs on the FP8 timer under te-transformer-layer and on the
    dtype's under Composer's scope (the head in bf16) and Megatron-Core's."""
    hardware = load_hardware("mi300x")
    for scope, fp8 in ((TE, True), ("forward-and-loss", False)):
        est = estimate("llama3.2-1b", framework="fsdp2", zero=3, fp8_autocast=scope)
        work = est.structure["work"]
        heads = [w for w in work if w.get("head")]
        assert len(heads) == 1 and [runs_fp8(w, est) for w in heads] == [fp8]
        assert all(runs_fp8(w, est) for w in work if w.get("fp8"))
    step = KernelStepTime(est, hardware)
    entries = [kernels for (key, _, _, kernels), w in zip(step.kernel_entries, work) if w.get("head")]
    gemms = [k for k in entries[0] if isinstance(k, Gemm)]
    assert [(g.m, g.n, g.k, g.normed_input) for g in gemms] == [(4 * 1024, 128256, 2048, True)]
    ffn = [kernels for (key, _, _, kernels), w in zip(step.kernel_entries, work) if "mlp" in w["path"]][0]
    assert [g.activated_input for g in ffn if isinstance(g, Gemm)] == [False, False, True]


def test_the_head_leaf_is_timed_as_an_fp8_gemm_and_its_casts():
    """Llama 3.2 1B on MI300X: the head leaf's seconds are its GEMM on the FP8 timer plus its casts (its own
    rule: the weight every micro-batch) and other kernels on the dtype's; under Composer's scope the whole leaf
    on the dtype's timer, no cast."""
    from costmodel.kernel_time import kernels_seconds
    from costmodel.layout.kernel_step import cast_kernel

    for scope in (TE, "forward-and-loss"):
        est = estimate("llama3.2-1b", framework="fsdp2", zero=3, fp8_autocast=scope)
        step = KernelStepTime(est, load_hardware("mi300x"))
        step.part_seconds
        index = next(i for i, w in enumerate(est.structure["work"]) if w.get("head"))
        kernels = step.kernel_entries[index][3]
        gemms = [k for k in kernels if isinstance(k, Gemm)]
        others = [k for k in kernels if not isinstance(k, Gemm)]
        if scope == TE:
            head = leaf_casts(step.casts, est.structure["work"], est.layout)[index]
            expected = kernels_seconds(gemms, step.fp8_timer, True) + kernels_seconds(
                others + cast_kernel(gemms, head, False), step.timer, True)
            fp8 = expected
        else:
            expected = kernels_seconds(kernels, step.timer, True)
            assert expected > 1.5 * fp8  # the bf16 GEMM against the FP8 one and its casts
        assert step.leaf_seconds[index] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("args, message", [
    (["--tp", "2", "--dp", "4"], f"layout: --fp8-autocast {TE} is Transformer Engine's TransformerLayer built with "
     "no tensor-parallel group; it is modelled at --tp 1 (here 2)."),
    (["--dp", "8"], None),
])
def test_tensor_parallelism_is_refused_in_one_line(capsys, args, message):
    """--tp 2 under the scope: one line, exit 2; the same run at --tp 1 runs and names the scope."""
    base = ["simulate", "--train", "--model", "llama3.2-1b", "--hardware", "mi300x", "--seq-len", "1024",
            "--batch", "4", "--microbatches", "2", "--fp8", "delayed", "--framework", "fsdp2", "--zero", "3",
            "--fp8-autocast", TE]
    code = cli.main(base + args)
    captured = capsys.readouterr()
    if message is None:
        assert code == 0 and f"fp8_autocast {TE}" in captured.out
    else:
        assert (code, captured.out, captured.err.strip()) == (2, "", f"error: {message}")
