"""DeepSpeed's fp16 gradient accumulation at ZeRO stages 0 and 1 (wt32_oldmeg, session 32): the engine leaves
each micro-batch's gradient to autograd's AccumulateGrad (grad += new, in place, in fp16), ZeRO-1 reducing only
at the accumulation boundary (deepspeed/runtime/zero/stage2.py line 1236 at v0.5.8); ZeRO-2 and 3 move each
micro-batch's gradient into their partitions instead (not this pass)."""

from dataclasses import replace

import pytest

from costmodel.layout.frameworks import FRAMEWORKS
from costmodel.layout.kernel_step import KernelStepTime
from reports.published_runs import other_runs_data, train_setup

NEOX = "gpt-neox-20b 20b 96xa100-40gb"


def _neox():
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == NEOX)
    return train_setup(run, data["sources"]["gpt-neox-20b"])


def test_deepspeed_accumulates_fp16_gradients_in_place_at_zero_0_and_1():
    framework = FRAMEWORKS["deepspeed"]
    assert framework.fp16_gradient_accumulation == "in_place" and framework.fp16_accumulation_stages == (0, 1)
    assert FRAMEWORKS["megatron"].fp16_accumulation_stages is None  # Megatron-LM's at every stage, as before


def test_gpt_neox_20b_pays_31_in_place_adds_a_step():
    """TP 2 PP 4 DP 12, 32 micro-batches of 4, fp16, ZeRO-1: the last stage's rank holds 2,646,998,016
    parameters (11 layers and the untied head's V/tp rows); 31 adds of 6 bytes each (read 2 + 2, write 2) at
    the A100 40GB's 1,244 GB/s (0.8 of 1,555): 0.39577 s of a 43.85 s published step."""
    estimate, hardware, options = _neox()
    time = KernelStepTime(estimate, hardware, **options)
    last = estimate.stages[-1]
    assert estimate.layout.microbatches == 32 and time.rank_params(last) == 2_646_998_016
    assert time.bytes_per_s == pytest.approx(0.8 * 1555e9)
    assert time.gradient_accumulation(last) == pytest.approx(31 * 6 * 2_646_998_016 / 1.244e12, rel=1e-12)
    assert time.step()["gradient_accumulation_seconds"] == pytest.approx(0.39577, abs=1e-5)


def test_zero_2_leaves_the_pass_out():
    """Unpipelined (DeepSpeed's pipeline engine refuses ZeRO-2): the same model at TP 2 DP 12, 32 micro-batches,
    pays the adds at ZeRO-1 and not at ZeRO-2."""
    from costmodel.layout import ParallelEstimate

    estimate, hardware, options = _neox()
    seconds = {}
    for zero in (1, 2):
        flat = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, pp=1, zero=zero))
        seconds[zero] = KernelStepTime(flat, hardware, **options).gradient_accumulation(flat.stages[0])
    assert seconds[1] > 1.0 and seconds[2] == 0.0
