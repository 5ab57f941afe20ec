"""Transformer Engine's delayed scaling under FSDP2 as Composer's Trainer runs it (--fp8 delayed
--framework fsdp2 --fp8-autocast forward-and-loss; costmodel/layout/fp8_options.py FP8_AUTOCASTS):
one fp8_autocast around the model's forward and one around the loss, no fp8_group, so Transformer
Engine all-reduces the forward amaxes over every rank at both exits and the backward amaxes once, a
micro-batch; the blocks' te.Linear layers cast their norm's output as any input and their weights at
every micro-batch. Exact bytes and counts for GPT-2 small (12 layers, 4 te.Linear GEMMs a layer) over
8 ranks, and the one-line refusals that remain."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.collectives import collective_seconds
from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_shapes import Gemm
from costmodel.layout import Layout
from costmodel.layout.fp8_casts import cast_bytes
from costmodel.layout.kernel_step import fp8_casts
from costmodel.layout.rank import ParallelEstimate
from costmodel.presets import load_preset

BASE = ["simulate", "--train", "--model", "gpt2", "--hardware", "h100-sxm", "--seq-len", "1024", "--batch", "4",
        "--microbatches", "2", "--json"]
GPT2 = BASE + ["--dp", "8", "--fp8", "delayed"]
FSDP2 = ["--framework", "fsdp2", "--zero", "3", "--fp8-autocast", "forward-and-loss"]
# per micro-batch: 12 layers x 4 GEMMs = 48; forward 48 x 3 fp32 amaxes = 576 bytes, backward 48 x 2 = 384
FORWARD, BACKWARD = 576, 384


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def estimate(**layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset("gpt2"), Workload(seq_len=1024, batch=4),
                            Layout(dp=8, microbatches=2, fp8="delayed", **layout))


def test_composer_all_reduces_the_forward_amaxes_twice_a_micro_batch():
    """Composer: 576, 576 and 384 bytes a micro-batch (3,072 a step of 2); Megatron-Core at PP 1 one
    chunk, 576 and 384."""
    composer = estimate(framework="fsdp2", zero=3, fp8_autocast="forward-and-loss")
    megatron = estimate(framework="megatron", zero=1)
    assert composer.amax_reductions(composer.stages[0]) == [FORWARD, FORWARD, BACKWARD]
    assert megatron.amax_reductions(megatron.stages[0]) == [FORWARD, BACKWARD]
    assert 2 * sum(composer.amax_reductions(composer.stages[0])) == 3072


def test_the_amax_all_reduces_are_charged_over_every_rank(capsys):
    """Exposed amax seconds: 2 micro-batches x three latency-bound fp32 all-reduces over the 8 ranks."""
    code, out, _ = run(GPT2 + FSDP2, capsys)
    assert code == 0
    result = json.loads(out)
    hardware = load_hardware("h100-sxm")
    each = [collective_seconds(hardware, "all_reduce", b, 8, 8, dtype="fp32") for b in (FORWARD, FORWARD, BACKWARD)]
    assert result["step"]["exposed_communication_seconds"]["amax"] == pytest.approx(2 * sum(each), rel=1e-12)
    assert result["parallel"]["layout"]["fp8_autocast"] == "forward-and-loss"


def test_te_linear_casts_its_normed_input_and_its_weight_every_micro_batch():
    """One normed GEMM (37 x 23 x 19: input 37 x 19, weight 23 x 19, gradient 37 x 23), 2 micro-batches,
    Hopper. Megatron-Core's fused norm: its output transposed (2 bytes an element), the weight cast and
    transposed (4) once a step; Composer's te.Linear: the input cast and transposed (4), the weight (4)
    every micro-batch and again in a recomputed forward. Backward: the gradient (4) either way."""
    hardware = load_hardware("h100-sxm")
    gemm = [Gemm(37, 23, 19, normed_input=True)]
    fused = fp8_casts(estimate(framework="megatron", zero=1), hardware)
    apart = fp8_casts(estimate(framework="fsdp2", zero=3, fp8_autocast="forward-and-loss"), hardware)
    assert (fused[0].fused_norm, fused[0].weight_once_per_step) == (True, True)
    assert (apart[0].fused_norm, apart[0].weight_once_per_step) == (False, False)

    def casts(rule: tuple, rerun: bool = False) -> tuple[float, float]:
        recipe, needs_tn, microbatches, tp, sp, fp8_params = rule
        return cast_bytes(gemm, recipe, needs_tn=needs_tn, microbatches=microbatches, tp=tp, sequence_parallel=sp,
                          rerun=rerun, fp8_params=fp8_params)

    assert casts(fused) == (2 * 37 * 19 + 4 * 23 * 19 / 2, 4 * 37 * 23) == (2280.0, 3404)
    assert casts(apart) == (4 * 37 * 19 + 4 * 23 * 19, 4 * 37 * 23) == (4560, 3404)
    assert casts(fused, rerun=True) == (2 * 37 * 19, 0) and casts(apart, rerun=True) == (4560, 0)


@pytest.mark.parametrize("args, message", [
    (GPT2 + ["--framework", "fsdp2", "--zero", "3"], "layout: --fp8 delayed under fsdp2 runs under the training script's "
     "fp8_autocast; state where with --fp8-autocast (forward-and-loss or te-transformer-layer); accelerate's (one autocast over the "
     "forward, the head in FP8 too) is not modelled."),
    (GPT2 + ["--framework", "deepspeed", "--zero", "3"], "layout: --fp8 delayed is modelled under Megatron-Core (an "
     "fp8_autocast a model chunk) and under --framework fsdp2 with --fp8-autocast; under deepspeed it is not "
     "modelled; use --fp8 tensorwise or rowwise, or --framework megatron."),  # session 41: current is TE's too
    (GPT2 + ["--framework", "megatron", "--zero", "1", "--fp8-autocast", "forward-and-loss"], "layout: --fp8-autocast is "
     "where the training script opens Transformer Engine's fp8_autocast for delayed scaling (--fp8 delayed) outside "
     "Megatron-Core, which opens one a model chunk itself; here --framework megatron with --fp8 delayed."),
    (BASE + ["--dp", "8", "--fp8", "current"] + FSDP2, "layout: --fp8-autocast is where the training script opens Transformer Engine's "
     "fp8_autocast for delayed scaling (--fp8 delayed) outside Megatron-Core, which opens one a model chunk itself; "
     "here --framework fsdp2 with --fp8 current."),
    (BASE + ["--dp", "4", "--pp", "2", "--fp8", "delayed"] + FSDP2, "layout: --fp8-autocast is one autocast over the whole model's forward; it "
     "is modelled at --pp 1 (here 2)."),
])
def test_what_is_not_modelled_is_one_line(capsys, args, message):
    code, out, err = run(args, capsys)
    assert (code, out, err.strip()) == (2, "", f"error: {message}")
