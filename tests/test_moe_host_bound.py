"""validate/moe_host_bound.py: the host time per MoE layer pass that would close a Megatron-Bridge MoE
row's gap (session 22; validate/FINDINGS.md "why Megatron MoE training rows are too fast")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports.published_runs import other_runs_data, train_tokens
from validate.moe_host_bound import LAUNCH_S, SOURCE, host_need, main, moe_rows

MBS1_B200 = "megatron-bridge-moe 26.02 qwen3-30b-a3b mxfp8 8xb200"
GRAPHED_GB200 = "megatron-bridge-moe 26.08 qwen3-30b-a3b mxfp8 8xgb200"


def _need(run_id: str):
    (run,) = moe_rows([run_id])
    return host_need(run, other_runs_data()["sources"][SOURCE])


def test_passes_are_the_moe_layers_on_a_stage_times_the_micro_batches():
    # Qwen3 30B-A3B: 48 layers, every one MoE (config.json decoder_sparse_step 1); the page's 26.02
    # B200 row: GBS 512, MBS 1, 8 GPUs, EP 8, no PP -> 512 / (8 x 1) = 64 micro-batches a GPU.
    need = _need(MBS1_B200)
    assert need.microbatches == 64
    assert need.passes == 48 * 64
    # the published step: 512 x 4,096 tokens over 8 GPUs at the page's 9,691 tokens/s a GPU
    assert need.published_s == 512 * 4096 / 8 / 9691


def test_the_ratio_is_the_published_commands_kernel_ratio():
    data = other_runs_data()
    for run_id in (MBS1_B200, GRAPHED_GB200):
        (run,) = moe_rows([run_id])
        ours = train_tokens(run, data["sources"][SOURCE], "kernels")
        assert _need(run_id).ratio == pytest.approx(ours / run["published_tokens_per_s_per_gpu"], rel=1e-12)


def test_missing_time_and_launches_follow_from_the_steps():
    need = _need(MBS1_B200)
    assert need.missing_per_pass_s == pytest.approx((need.published_s - need.ours_s) / 3072, rel=1e-12)
    assert need.launches == pytest.approx(need.missing_per_pass_s / 3.8e-6, rel=1e-12)
    assert LAUNCH_S == 3.8e-6  # Mirage (arXiv:2512.22219) section 6.6, B200 eager launch


def test_an_unknown_row_is_one_error_line_and_status_2(capsys):
    assert main(["--row", "megatron-bridge-moe 26.02 no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no Megatron-Bridge MoE row is named") and err.count("\n") == 1
    assert main(["--bogus"]) == 2


def test_the_script_prints_a_row():
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "validate/moe_host_bound.py", "--row", MBS1_B200], cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, check=True)
    line = result.stdout.splitlines()[1]
    # 10.790 s of kernels before session 43's one QKV GEMM for Megatron's linear_qkv (wt43_review)
    assert line.startswith(MBS1_B200 + " | 2.51 | 27.050 | 10.772 | 3072 | 8.81 |")  # 10.781 before wt45_megatron's MXFP8 operand bytes (1 + 1/32 B)
    # 2.83x and 9.555 s before session 27's in-node all-to-all ceiling (B200 NVLink 5: 640 GB/s, nccl_facts.json);
    # 2.76x and 9.806 s before session 31's loss traffic (blocks/head.py fused_loss_bytes); 2.75x and 9.842 s before
    # session 33's embedding dense gradient (costmodel/embedding_grad.py); 2.74x and 9.868 s before session 34's
    # per-expert MXFP8 casts of Transformer Engine's GroupedLinear (layout/grouped_quantize.py)
