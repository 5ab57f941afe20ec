"""validate/moe_grouped_bound.py: how much of each MoE training row's gap its routed experts' grouped
GEMMs could explain (session 34). The rows' figures are the kernel model's with session 34's per-expert FP8
casts (layout/grouped_quantize.py; before them, at 5c964183: Qwen3 23.80 s and 0.31, Super 0.13, Nano 0.23):
a change to the experts' GEMM time or to the step moves them."""

from __future__ import annotations

from pathlib import Path

import pytest

from validate.moe_grouped_bound import Bound, bounds, needed_share
from tests.cli_run import run_script

ROOT = Path(__file__).resolve().parents[1]


def test_the_needed_share():
    """2.42 s of grouped GEMMs and a 5.46 s gap: they would have to take 7.88 s, 0.307 of their rate."""
    assert needed_share(2.42, 5.46) == pytest.approx(2.42 / 7.88)
    assert Bound("a", 10.0, 12.0, 4096, 8, 2.0).needed == 0.5
    assert Bound("a", 12.0, 10.0, 4096, 8, 2.0).needed is None  # the model slower than published


@pytest.fixture(scope="module")
def by_id() -> dict[str, Bound]:
    return {b.run_id: b for b in bounds()}


def test_the_rows_an_expert_and_the_needed_shares(by_id):
    """Qwen3-30B-A3B on 16 H100 in FP8 (EP 16, MBS 1, 4,096-token sequences): 4,096 slots a rank
    x 8 rows, 8 of 128 experts a rank, 2.42 s of FP8 grouped GEMMs a 23.37 s step against the
    published 29.26 s: they would have to run at 0.29 of the model's rate (25.09 s and 0.37 before session
    41 timed HybridEP across nodes at its README's measured rates, layout/hybridep_rates.py), where Transformer
    Engine's multi-stream BF16 kernel on H100 reads 0.86 at 4,096 rows (PR #2045). Nemotron 3 Super
    on 64 GB200 in MXFP8: 11,264 rows x 8 experts, 0.69 s against a 4.36 s gap: 0.14. Nemotron 3
    Nano on 8 B200 (one NVLink domain, as on GB200): 6,144 x 16, 0.26 (0.24 before HybridEP's measured B200 rate)."""
    qwen = by_id["megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100"]
    assert (qwen.rows, qwen.experts) == (4096, 8)
    # 23.37 before session 43's one QKV GEMM for Megatron-Core's linear_qkv (facts.json fused_qkv; merged in session 44)
    assert (round(qwen.model_step, 2), round(qwen.published_step, 2)) == (23.31, 29.26)
    assert round(qwen.expert_seconds, 2) == 2.42
    assert round(qwen.needed, 2) == 0.29
    super_gb200 = by_id["megatron-bridge-moe 26.04.01 nemotron-3-super mxfp8 64xgb200"]
    assert (super_gb200.rows, super_gb200.experts, round(super_gb200.needed, 2)) == (11264, 8, 0.14)
    nano = by_id["megatron-bridge-moe 26.04.01 nemotron-3-nano mxfp8 8xb200"]
    assert (nano.rows, nano.experts, round(nano.needed, 2)) == (6144, 16, 0.26)


def test_few_rows_run_small_experts(by_id):
    """The rows an expert of every row the script covers: 17 of 165 under 2,048 (the smallest
    point of the Hopper BF16 share; session 36's ms-swift Qwen3-30B ZeRO-3 at 512 and Qwen1.5-MoE
    DeepSpeed rows at 547 among them), none under 512."""
    rows = sorted(b.rows for b in by_id.values())
    # session 41: 165 (DGX Cloud's Grok-1 and Maverick rows, wt41_unseent2 and wt41_etp; none under 2,048)
    # session 46: 174 (the Megatron-Core MoE report's nine, wt46_unseent; none under 2,048)
    assert (len(rows), rows[0], sum(r < 2048 for r in rows)) == (174, 512, 17)


def test_the_script_and_its_bad_option(monkeypatch, capsys):
    script = ROOT / "validate" / "moe_grouped_bound.py"
    code, out, _ = run_script(script, [], monkeypatch, capsys)
    row = "| megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100 | 1.26 | 23.31 | 29.26 | 4,096 x 8 | 2.42 | 0.29 |"
    assert code == 0 and row in out
    code, out, err = run_script(script, ["--nope"], monkeypatch, capsys)
    assert code == 2 and err.startswith("error: ") and out == ""
