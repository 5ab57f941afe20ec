"""Layout.optimizer_step "megatron-lm": Megatron-LM's train_step passes over the rank's gradient buffer
(zero_grad_buffer's zero_, the NaN check's norm, the scale by 1 / dp) and the clipping's norm of the
updated fp32 gradients, beside the fused Adam pass (costmodel/layout/megatron_step.py)."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.layout import Layout
from costmodel.layout.megatron_step import NORM_BYTES, buffer_bytes
from reports.published_runs import other_runs_data
from tests.optimizer_step_runs import row_steps, simulate_optimizer_seconds

ROW = "megatron-core-r0.8.0 gpt-7.1b 96xh100"


def test_bytes_a_parameter():
    """fp32 buffer at dp > 1: zero 4 + norm 4 + scale (read 4, write 4) = 16; at dp 1 the scale factor is 1.0
    and r0.8.0 skips it (8); fp16 with dynamic loss scaling turns the NaN check off (bf16 buffer: 2 + 4 = 6);
    the clipping's l2 norm reads each updated fp32 gradient once (4)."""
    assert buffer_bytes(4, 48) == 16
    assert buffer_bytes(4, 1) == 8
    assert buffer_bytes(2, 8, nan_check=False) == 6
    assert NORM_BYTES == 4


def test_refused_off_megatron_ddp():
    with pytest.raises(ConfigError, match="needs --framework megatron with --zero 0 or 1"):
        Layout(dp=8, framework="fsdp2", zero=3, optimizer_step="megatron-lm")
    with pytest.raises(ConfigError, match="needs --framework megatron with --zero 0 or 1"):
        Layout(dp=8, framework="megatron", zero=3, optimizer_step="megatron-lm")
    Layout(dp=8, framework="megatron", zero=1, optimizer_step="megatron-lm")


def test_the_sources_that_run_megatron_lms_step():
    """The Megatron-Core r0.8.0 README table and FlagPerf's Llama 3 scripts (core_v0.6.0) run pretrain_gpt at
    Megatron-LM's defaults; NeMo 24.07 (Apex's DistributedFusedAdam) and nanotron do not run this code."""
    sources = other_runs_data()["sources"]
    for name in ("megatron-core-r0.8.0", "flagperf-llama3", "flagperf-llama3-a800"):
        assert sources[name]["optimizer_step"] == "megatron-lm"
    for name in ("nemo-24.07", "nanotron-playbook", "megatron-bridge"):
        assert "optimizer_step" not in sources[name]


def test_gpt_7b_row_step():
    """TP 2 x DP 48: the rank holds 3,574,722,560 parameters, its fp32 buffer moves 16 bytes each (57.20 GB)
    and its 74,473,387 updated gradients 4 more for the norm (0.30 GB): 57,493,454,508 bytes at the h100-sxm
    file's memory-bound rate (0.8 x 3.35 TB/s) = 21.452 ms beside the fused pass's 0.889 ms; the step
    0.7360 -> 0.7574 s (0.7399 -> 0.7613 before session 43's one QKV GEMM; 0.7348 -> 0.7562 before the embedding's dense gradient, costmodel/embedding_grad.py:
    5.108 ms, tests/test_embedding_grad.py)."""
    steps = row_steps(ROW, "megatron-core-r0.8.0", ("fused", "megatron-lm"))
    assert steps["fused"]["optimizer_seconds"] == pytest.approx(0.00088923, rel=1e-4)
    extra = steps["megatron-lm"]["optimizer_seconds"] - steps["fused"]["optimizer_seconds"]
    assert extra == pytest.approx((3_574_722_560 * 16 + 74_473_387 * 4) / 2.68e12, rel=1e-9)
    # 0.73989 and 0.76134 before session 43's one QKV GEMM for Megatron's linear_qkv (wt43_review)
    assert steps["fused"]["seconds"] == pytest.approx(0.73597, abs=1e-5)
    assert steps["megatron-lm"]["seconds"] == pytest.approx(0.75742, abs=1e-5)


def test_simulate_takes_megatron_lm(capsys):
    """--optimizer-step megatron-lm on the command line: llama3-8b at TP 1 DP 8, ZeRO-1, its 8,030,261,248 parameters
    a rank (fp32 buffer, 16 bytes each) and 1,003,782,656 updated (4): the optimizer's seconds grow by those bytes at
    0.8 x 3.35 TB/s; off Megatron exit 2 with one line."""
    import cli

    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "8192", "--batch", "1",
            "--attention", "flash", "--framework", "megatron", "--zero", "1", "--dp", "8", "--json"]
    seconds = simulate_optimizer_seconds(capsys, base, [[], ["--optimizer-step", "megatron-lm"]])
    assert seconds[1] - seconds[0] == pytest.approx((8_030_261_248 * 16 + 1_003_782_656 * 4) / 2.68e12, rel=1e-9)
    assert cli.main(["simulate", "--model", "llama3-8b", "--train", "--framework", "fsdp2", "--zero", "3", "--dp", "8",
                     "--optimizer-step", "megatron-lm"]) == 2
    err = capsys.readouterr().err
    assert "needs --framework megatron with --zero 0 or 1" in err and err.count("\n") == 1


def test_fp16_clip_norm_counted_once(capsys):
    """Under fp16 Megatron's fp16 optimizer passes (step_bytes.megatron_fp16_step_bytes) already read each updated
    fp32 gradient for clip_grad_norm's l2 norm: megatron-lm adds only the fp16 buffer's zero (2) and the scale by
    1 / dp (read 2, write 2), the NaN check off under dynamic loss scaling: 8,030,261,248 x 6 bytes, no norm."""
    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "8192", "--batch", "1",
            "--attention", "flash", "--framework", "megatron", "--zero", "1", "--dp", "8", "--dtype", "fp16", "--json"]
    seconds = simulate_optimizer_seconds(capsys, base, [[], ["--optimizer-step", "megatron-lm"]])
    assert seconds[1] - seconds[0] == pytest.approx(8_030_261_248 * 6 / 2.68e12, rel=1e-9)
