"""benchmarks/published_torchao_vllm.py: torchao's README figures typed as the page prints them, the runs'
shapes and vLLM's budgets as their sources state them, and the figure computed as the README's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import published_torchao_vllm as tv  # noqa: E402


def test_figures_are_the_readme_tables():
    # pytorch/ao torchao/quantization/README.md at aa25287, "NVIDIA H100" and "NVIDIA B200" tables
    h100, b200 = tv.TORCHAO_VLLM
    assert h100["rows"] == [("bfloat16", 30946.5, 6612), ("float8_rowwise", 45312.5, 8025.95),
                            ("int8_rowwise_weight_only", 28231.9, 4309.8)]
    assert b200["rows"] == [("bfloat16", 59099.9, 14380), ("nvfp4", 102786, 15218.9),
                            ("float8_rowwise", 69313.7, 15984)]
    # the README's speedup columns (prefill_speedup, decode_speedup) are the typed figures' ratios to bfloat16's
    speedups = {(table["gpu"], recipe): (round(prefill / table["rows"][0][1], 3),
                                         round(decode / table["rows"][0][2], 3))
                for table in (h100, b200) for recipe, prefill, decode in table["rows"][1:]}
    assert speedups == {("NVIDIA H100", "float8_rowwise"): (1.464, 1.214),
                        ("NVIDIA H100", "int8_rowwise_weight_only"): (0.912, 0.652),
                        ("NVIDIA B200", "nvfp4"): (1.739, 1.058), ("NVIDIA B200", "float8_rowwise"): (1.173, 1.112)}


def test_runs_and_budgets_as_stated():
    # measure_accuracy_and_performance.sh's PREFILL_ARGS and DECODE_ARGS; vLLM's LLM-class defaults on >= 70 GiB
    assert tv.TORCHAO_VLLM_RUNS == {"prefill": (32, 4096, 32), "decode": (128, 32, 2048)}
    assert tv.TORCHAO_VLLM_BUDGETS == {"max_num_seqs": 1024, "max_batched_tokens": 16384}
    options = tv.torchao_vllm_options("float8_rowwise")
    assert (options["scheduler"], options["weight_dtype"], options["fp8_gemm"]) == ("vllm", "fp8", "w8a8")
    assert tv.TORCHAO_VLLM_RECIPES["nvfp4"] is None
    hardware = tv.torchao_vllm_hardware(tv.TORCHAO_VLLM[0])
    assert (hardware.bandwidth_bytes_per_s, hardware.memory_bytes, hardware.power_limit_watts) == (
        2.4e12, 103079215104, 500)


def test_figure_is_total_tokens_over_the_span(monkeypatch):
    import costmodel.serving.api as api

    seen = {}
    real = api.run_replicas

    def run(requests, replica, step, replicas, *args, **kwargs):
        seen["shapes"] = {(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in requests}
        seen["count"] = len(requests)
        rows, a, b = real(requests, replica, step, replicas, *args, **kwargs)
        seen["span"] = max(r["finish_s"] for r in rows)
        return rows, a, b

    monkeypatch.setattr(api, "run_replicas", run)
    ours = tv.torchao_vllm_tokens_per_s(tv.TORCHAO_VLLM[1], "bfloat16", "decode", prompts=4)
    assert seen["shapes"] == {(0.0, 32, 2048)} and seen["count"] == 4
    assert ours == pytest.approx(4 * 2080 / seen["span"])


# docs/serving.md's table (`python benchmarks/serve_published.py torchao-vllm`; docs/checked.md cites its
# ratios), ours in total tokens/s rounded to a token: a change to the serving step that moves any of them must say
# so there.
# H100 float8_rowwise prefill 40322 before wt39_machete (the W8A8 GEMM at 1-16 rows at vLLM's cutlass_scaled_mm's
# measured rate, kernel_facts.json w8a8_small_rows: the run's last steps of few rows)
OURS = {("NVIDIA H100", "bfloat16"): (31282, 6579), ("NVIDIA H100", "float8_rowwise"): (40292, 7952),
        ("NVIDIA H100", "int8_rowwise_weight_only"): (32162, 8033), ("NVIDIA B200", "bfloat16"): (70618, 20294),
        ("NVIDIA B200", "float8_rowwise"): (93732, 24321)}  # B200 prefill: FlashAttention-2's Blackwell figures (session 27)
# With vLLM V1's sampler since session 34 (before: 31307, 6704; 40362, 8136; 32187, 8220; 70667, 20688; 93819, 24888).


@pytest.mark.parametrize("gpu, recipe", sorted(OURS))
def test_ours_are_the_documented_figures(gpu, recipe):
    table = next(t for t in tv.TORCHAO_VLLM if t["gpu"] == gpu)
    assert tuple(round(tv.torchao_vllm_tokens_per_s(table, recipe, run)) for run in ("prefill", "decode")) == (
        OURS[gpu, recipe])
