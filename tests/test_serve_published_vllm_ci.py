"""benchmarks/published_vllm_ci.py: vLLM's CI throughput tests (builds 9515 on H200, 9523 on A100) as typed, the
engine each test runs under, and the first figures ours computed (session 39, wt39_unseens, right after commit
ea5242d4 typed the rows): kept whatever their error (Mixtral on the H200 1.62x: validate/FINDINGS.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.serving_first import assert_docs_row, assert_figures_now, first_summary  # noqa: E402
from benchmarks import published_vllm_ci as script  # noqa: E402

# (row, metric, published, ours) as `python benchmarks/serve_published.py vllm-ci` first fed them
FIRST = [
    ("9515 H200 throughput_llama70B_tp4", "req/s", 9.83905, 9.9776),
    ("9515 H200 throughput_llama8B_tp1", "req/s", 22.5674, 19.5102),
    ("9515 H200 throughput_mixtral8x7B_tp2", "req/s", 8.06251, 13.0229),
    ("9523 A100-SXM4-80GB throughput_llama70B_tp4", "req/s", 4.78859, 4.9787),
    ("9523 A100-SXM4-80GB throughput_llama8B_tp1", "req/s", 11.0567, 11.4078),
    ("9523 A100-SXM4-80GB throughput_mixtral8x7B_tp2", "req/s", 5.2096, 6.3292),
]

# The figures b3a02852 (wt40_customar, session 40: vLLM's custom all-reduce, nccl_facts.json custom_all_reduce) moved,
# a model change: the tp-2 and tp-4 rows' vLLM engines all-reduce with vLLM's custom kernel (NVLink, calls up to 8 MiB;
# collectives.custom_all_reduce), not NCCL's. Run at b3a02852^ and b3a02852 (session 44, wt44_servingdocs): FIRST's
# figures, then these; nothing since has moved the table.
CUSTOM_AR = {"9515 H200 throughput_llama70B_tp4": 11.4561, "9515 H200 throughput_mixtral8x7B_tp2": 13.5768,
             "9523 A100-SXM4-80GB throughput_llama70B_tp4": 5.9896, "9523 A100-SXM4-80GB throughput_mixtral8x7B_tp2": 6.6356}
NOW = [(row, metric, published, CUSTOM_AR.get(row, ours)) for row, metric, published, ours in FIRST]


def test_the_rows_are_the_pages():
    """Build 9515 (H200): throughput_llama70B_tp4 9.83905, llama8B_tp1 22.5674, mixtral8x7B_tp2 8.06251 req/s;
    build 9523 (A100-SXM4-80GB): 4.78859, 11.0567, 5.2096; each test's tp is its name's."""
    assert [(b, test, tp, rps) for b, _, _, test, _, tp, rps in script.VLLM_CI] == [
        (9515, "throughput_llama70B_tp4", 4, 9.83905), (9515, "throughput_llama8B_tp1", 1, 22.5674),
        (9515, "throughput_mixtral8x7B_tp2", 2, 8.06251), (9523, "throughput_llama70B_tp4", 4, 4.78859),
        (9523, "throughput_llama8B_tp1", 1, 11.0567), (9523, "throughput_mixtral8x7B_tp2", 2, 5.2096)]
    assert all(test.endswith(f"_tp{tp}") for _, _, _, test, _, tp, _ in script.VLLM_CI)


def test_the_engine_by_context():
    """V0's rule: chunked prefill on past a 32,768 context (Llama 3.1 8B's 131,072: vllm at 512 tokens, eager,
    V0's sampler), off at 8,192 (Llama 3 70B) and 32,768 (Mixtral: not past it), the budget max(context, 2048);
    vLLM 0.6.3's host time (vllm-v0.6.0) and benchmark_throughput's random sampling on every test."""
    small, large, moe = (script.vllm_ci_options(m, tp) for m, tp in (("llama3.1-8b", 1), ("llama3-70b", 4),
                                                                     ("mixtral-8x7b", 2)))
    assert (small["scheduler"], small["max_batched_tokens"], small["cuda_graphs"], small["sampler"]) == \
        ("vllm", 512, "off", "vllm-v0")
    assert (large["scheduler"], large["max_batched_tokens"]) == ("vllm-v0", 8192)
    assert (moe["scheduler"], moe["max_batched_tokens"]) == ("vllm-v0", 32768)
    assert {o["host_time"] for o in (small, large, moe)} == {"vllm-v0.6.0"}
    assert {o["sampling"] for o in (small, large, moe)} == {"random"}


def test_the_first_summary():
    """6 comparisons, median 8.8%, 5 within 0.75-1.33x, 0.86-1.62: the Llama rows 0.86-1.04, Mixtral over on both
    GPUs (A100 1.21, H200 1.62)."""
    fed, summary = first_summary("vllm-ci", FIRST)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (6, 5)
    assert summary["median_error"] == pytest.approx(0.0876, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.86, 1.62)
    assert all(0.86 < c.ratio < 1.05 for c in fed if "llama" in c.row)
    assert all(1.2 < c.ratio < 1.62 for c in fed if "mixtral" in c.row)


def test_the_summary_now():
    """6 comparisons, median 20.8%, 5 within 0.75-1.33x, 0.86-1.68 (b3a02852): the tp-4 Llama rows 1.01 -> 1.16 (H200)
    and 1.04 -> 1.25 (A100), Mixtral 1.62 -> 1.68 and 1.21 -> 1.27; the tp-1 rows as first computed."""
    fed, summary = first_summary("vllm-ci", NOW)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (6, 5)
    assert summary["median_error"] == pytest.approx(0.2076, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.86, 1.68)
    assert [round(c.ratio, 2) for c in fed if c.row in CUSTOM_AR] == [1.16, 1.68, 1.25, 1.27]


def test_docs_record_the_summary_now():
    """docs/serving.md's vllm-ci row: the table as it runs now (NOW; FIRST's summary in test_the_first_summary)."""
    assert_docs_row("vllm-ci", first_summary("vllm-ci", NOW)[1])


@pytest.mark.slow
def test_the_figures_now_are_the_first():
    """The table run as the command runs it (~10 s): every figure as NOW pins it (FIRST's, but CUSTOM_AR's), to 0.05%."""
    assert_figures_now("vllm-ci", NOW, abs_tol=1e-4)
