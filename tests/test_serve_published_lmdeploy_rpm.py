"""benchmarks/published_lmdeploy_rpm.py: LMDeploy v0.1.0a1's request throughput table on A100 as typed, the lengths
and setup its rows run under, and the first figures ours computed (session 38, wt38_unseens, right after commit
d8e0b190 typed the rows): kept whatever their error (the FTL rows 4-10x: see validate/FINDINGS.md, wt38_unseens)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.serving_first import assert_docs_row, assert_figures_now, first_summary  # noqa: E402
from benchmarks import published_lmdeploy_rpm as script  # noqa: E402

# (row, metric, published, ours) as `python benchmarks/serve_published.py lmdeploy-rpm` first fed them
FIRST = [
    ("llama2-7b batch 64", "requests per second (PRS)", 10.275, 10.7734),
    ("llama2-7b batch 64", "FTL ave (s)", 0.092, 0.8618),
    ("llama2-7b batch 128", "requests per second (PRS)", 12.611, 13.5962),
    ("llama2-7b batch 128", "FTL ave (s)", 0.205, 1.3312),
    ("llama2-13b batch 64", "requests per second (PRS)", 6.337, 6.9091),
    ("llama2-13b batch 64", "FTL ave (s)", 0.159, 1.6096),
    ("llama2-13b batch 128", "requests per second (PRS)", 7.588, 9.1499),
    ("llama2-13b batch 128", "FTL ave (s)", 0.412, 2.4196),
    ("llama2-70b batch 64", "requests per second (PRS)", 4.285, 4.7805),
    ("llama2-70b batch 64", "FTL ave (s)", 0.301, 2.5469),
    ("llama2-70b batch 128", "requests per second (PRS)", 5.833, 7.5937),
    ("llama2-70b batch 128", "FTL ave (s)", 0.633, 3.8208),
    ("llama2-70b batch 256", "requests per second (PRS)", 6.568, 9.7726),
    ("llama2-70b batch 256", "FTL ave (s)", 1.49, 6.3681),
]


def test_the_rows_are_the_pages():
    """InternLM/lmdeploy docs/en/benchmark/a100_fp16.md (commit 3e391df), 'Request Throughput Benchmark', typed from
    the page: llama2-7b batch 64 PRS 10.275, PRM 616.477, FTL 0.092 / 0.036 / 1.145 s, 2562.435 and 5283.547 tok/s;
    PRM is 60 x PRS on every row, to PRS's rounding (the page's own check)."""
    rows = script.LMDEPLOY_RPM
    assert len(rows) == 7 and rows[0] == ("llama2-7b", 64, 1, 10.275, 616.477, 0.092, 0.036, 1.145, 2562.435, 5283.547)
    assert rows[-1] == ("llama2-70b", 256, 4, 6.568, 394.108, 1.49, 0.171, 19.52, 1533.592, 3162.15)
    assert all(abs(60 * rps - rpm) <= 0.03 for _, _, _, rps, rpm, *_ in rows)  # PRS to 3 decimals: 60 x 0.0005
    assert [(m, b) for m, b, *_ in rows] == [(r.split(" batch ")[0], int(r.split(" batch ")[1]))
                                             for r, metric, _, _ in FIRST if metric.startswith("requests")]


def test_the_lengths_are_each_rows_means():
    """(total - out) / PRS prompt and out / PRS generated tokens a request, rounded: 7B at 64 clients
    (5283.547 - 2562.435) / 10.275 = 264.8 -> 265 and 2562.435 / 10.275 = 249.4 -> 249."""
    assert [script.lmdeploy_rpm_lengths(row) for row in script.LMDEPLOY_RPM] == [
        (265, 249), (270, 255), (247, 233), (247, 233), (248, 233), (248, 233), (248, 233)]


def test_a_row_runs_the_lmdeploy_tables_engine(monkeypatch):
    """The closed loop: the row's batch as clients, 3,000 requests at the row's lengths, on a100-80gb with
    lmdeploy_options (vllm-v0, max_batch_size, 16,384 tokens, 128-token blocks, the script's blocks, fp16, eager)."""
    import pandas as pd

    import costmodel.serving.api as api

    seen = {}

    class Run:
        requests = pd.DataFrame({"arrival_s": [0.0, 0.0, 1.0], "ttft_s": [0.2, 0.4, 9.0], "finish_s": [1.0, 2.0, 4.0]})

    def serve(model, hardware, **options):
        seen.update(model=model, hardware=hardware, **options)
        return Run()

    monkeypatch.setattr(api, "serve", serve)
    ours = script.lmdeploy_rpm_run(script.LMDEPLOY_RPM[-1])
    assert ours == {"rps": 3 / 4.0, "ftl_ave_s": pytest.approx(0.3)}  # the requests sent at 0 alone
    assert seen == {"model": "llama2-70b", "hardware": "a100-80gb", "requests": 3000, "concurrency": 256,
                    "prompt": "248", "output": "233", "seed": 0, "scheduler": "vllm-v0", "tp": 4, "max_num_seqs": 256,
                    "max_batched_tokens": 16384, "block_size": 128, "num_blocks": 4000, "dtype": "fp16",
                    "cuda_graphs": "off", "sampling": None,
                    "all_reduce": "nccl"}  # TurboMind's, not vLLM's custom all-reduce (wt40_customar)


def test_a_row_runs_at_its_own_tp(monkeypatch):
    """Review (wt38_review): the tp column was typed and never read (serve took the static table's tp for the model):
    a row's tp is the page's fact and what serve runs; the seven rows' equal their scripts' (1, 1, 4)."""
    import pandas as pd

    import costmodel.serving.api as api
    from benchmarks.published_lmdeploy import LMDEPLOY

    seen = {}

    class Run:
        requests = pd.DataFrame({"arrival_s": [0.0], "ttft_s": [0.1], "finish_s": [1.0]})

    def serve(model, hardware, **options):
        seen.update(options)
        return Run()

    monkeypatch.setattr(api, "serve", serve)
    script.lmdeploy_rpm_run(("llama2-7b", 64, 2) + script.LMDEPLOY_RPM[0][3:])
    assert seen["tp"] == 2
    tps = {t["model"]: t["tp"] for t in LMDEPLOY}
    assert all(row[2] == tps[row[0]] for row in script.LMDEPLOY_RPM)


def test_the_first_summary():
    """14 comparisons, median 188.1%, 6 within 0.75-1.33x, 1.05-10.12: every PRS over (1.05-1.49, growing with the
    clients), every FTL(ave) 4.3-10.1x the page's."""
    fed, summary = first_summary("lmdeploy-rpm", FIRST)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (14, 6)
    assert summary["median_error"] == pytest.approx(1.881, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (1.05, 10.12)
    assert all(1.04 < c.ratio < 1.50 for c in fed if c.metric.startswith("requests"))
    assert all(4.2 < c.ratio < 10.2 for c in fed if c.metric.startswith("FTL"))


def test_docs_record_the_first_summary():
    assert_docs_row("lmdeploy-rpm", first_summary("lmdeploy-rpm", FIRST)[1])


@pytest.mark.slow
def test_the_figures_now_are_the_first():
    """The table run as the command runs it (~30 s): every figure as first computed, to 0.05%."""
    assert_figures_now("lmdeploy-rpm", FIRST, abs_tol=1e-4)