"""benchmarks/published_trtllm_v020.py: TensorRT-LLM 0.20's trtllm-bench rows of Llama 3.3 70B FP8 (H200 TP4, H100 TP4,
H100 TP1) as typed, the engine settings they run under, and the first figures ours computed (session 40, wt40_unseens,
right after commit 975b568a typed the rows): kept whatever their error (H100 TP1 at 5000 / 500 0.73x:
validate/FINDINGS.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.serving_first import assert_docs_row, assert_figures_now, first_summary  # noqa: E402
from benchmarks import published_trtllm_v020 as script  # noqa: E402

# (row, metric, published, ours) as `python benchmarks/serve_published.py trtllm-v020` first fed them
FIRST = [
    ('llama3.1-70b H200 TP4 (FP8) 128/128', 'out tok/s', 10407.42, 11270.5823),
    ('llama3.1-70b H200 TP4 (FP8) 128/2048', 'out tok/s', 13508.59, 13617.8842),
    ('llama3.1-70b H200 TP4 (FP8) 128/4096', 'out tok/s', 11458.56, 10855.9062),
    ('llama3.1-70b H200 TP4 (FP8) 500/2000', 'out tok/s', 12200.18, 11263.0762),
    ('llama3.1-70b H200 TP4 (FP8) 1000/1000', 'out tok/s', 8685.44, 8433.948),
    ('llama3.1-70b H200 TP4 (FP8) 1000/2000', 'out tok/s', 9031.21, 9369.882),
    ('llama3.1-70b H200 TP4 (FP8) 1024/2048', 'out tok/s', 8946.71, 9298.5677),
    ('llama3.1-70b H200 TP4 (FP8) 2048/128', 'out tok/s', 1264.76, 1341.9405),
    ('llama3.1-70b H200 TP4 (FP8) 5000/500', 'out tok/s', 1698.22, 1785.1329),
    ('llama3.1-70b H200 TP4 (FP8) 20000/2000', 'out tok/s', 1161.29, 1060.6808),
    ('llama3.1-70b H100 TP4 (FP8) 128/2048', 'out tok/s', 11464.94, 11020.7965),
    ('llama3.1-70b H100 TP4 (FP8) 128/4096', 'out tok/s', 8206.39, 8166.1276),
    ('llama3.1-70b H100 TP4 (FP8) 500/2000', 'out tok/s', 9903.53, 9568.5754),
    ('llama3.1-70b H100 TP4 (FP8) 1000/1000', 'out tok/s', 7435.65, 6952.3829),
    ('llama3.1-70b H100 TP4 (FP8) 1000/2000', 'out tok/s', 7611.12, 7787.8233),
    ('llama3.1-70b H100 TP4 (FP8) 1024/2048', 'out tok/s', 7575.24, 7358.5957),
    ('llama3.1-70b H100 TP4 (FP8) 2048/128', 'out tok/s', 1213.33, 1203.8787),
    ('llama3.1-70b H100 TP4 (FP8) 5000/500', 'out tok/s', 1552.68, 1512.2106),
    ('llama3.1-70b H100 TP4 (FP8) 20000/2000', 'out tok/s', 903.66, 835.7496),
    ('llama3.1-70b H100 TP1 (FP8) 128/128', 'out tok/s', 3128.33, 2949.9309),
    ('llama3.1-70b H100 TP1 (FP8) 128/2048', 'out tok/s', 756.42, 677.9476),
    ('llama3.1-70b H100 TP1 (FP8) 1000/1000', 'out tok/s', 742.14, 677.3274),
    ('llama3.1-70b H100 TP1 (FP8) 1000/2000', 'out tok/s', 533.74, 428.3581),
    ('llama3.1-70b H100 TP1 (FP8) 1024/2048', 'out tok/s', 530.16, 428.412),
    ('llama3.1-70b H100 TP1 (FP8) 5000/500', 'out tok/s', 204.94, 150.5175),
]


def test_the_rows_are_the_pages():
    """The v0.20 page's Llama 3.3 70B FP8 columns: H200 TP4 (ten shapes), H100 TP4 (nine: no 128 / 128), H100 TP1
    (six); every shape's request count the page's $num_requests, 1024 / 2048 (not listed) 1,500."""
    assert [(t["hardware"], t["tp"], len(t["rows"])) for t in script.TRTLLM_V020] == [
        ("h200", 4, 10), ("h100-sxm", 4, 9), ("h100-sxm", 1, 6)]
    assert [p for _, _, p in script.TRTLLM_V020[2]["rows"]] == [3128.33, 756.42, 742.14, 533.74, 530.16, 204.94]
    assert script.TRTLLM_V020[0]["rows"][-1] == (20000, 2000, 1161.29)
    assert script.TRTLLM_V020[1]["rows"][0] == (128, 2048, 11464.94)
    assert script.TRTLLM_V020_REQUESTS[(1024, 2048)] == 1500
    assert script.TRTLLM_V020_REQUESTS[(128, 128)] == 30000 and script.TRTLLM_V020_REQUESTS[(20000, 2000)] == 1000


def test_the_engine_settings_by_trtllm_bench_heuristic():
    """trtllm-bench's heuristic (published_trtllm_bench.trtllm_bench_settings) with FP8 values at 0.95: 70 GB of
    FP8 weights leave the H100 TP1 engine max_batch_size 384 at 128 / 128 and the floor, 64, at 1000 / 2000; the
    H200 TP4 one 4,096 / 8,192 at 128 / 128 and 160 sequences, max_num_tokens 20,160 at 20000 / 2000."""
    from benchmarks.published_trtllm_bench import trtllm_bench_options

    tp1, h200 = script.TRTLLM_V020[2], script.TRTLLM_V020[0]
    settings = [(o["max_num_seqs"], o["max_batched_tokens"]) for o in (
        trtllm_bench_options(tp1, 128, 128), trtllm_bench_options(tp1, 1000, 2000),
        trtllm_bench_options(h200, 128, 128), trtllm_bench_options(h200, 20000, 2000))]
    assert settings == [(384, 2048), (64, 2048), (4096, 8192), (160, 20160)]
    options = trtllm_bench_options(tp1, 128, 128)
    assert (options["scheduler"], options["weight_dtype"], options["kv_dtype"], options["gpu_memory_utilization"]) == \
        ("trtllm", "fp8", "fp8", 0.95)


def test_the_first_summary():
    """25 comparisons, median 5.3%, 24 within 0.75-1.33x, 0.73-1.08: the TP4 columns 0.91-1.08, H100 TP1 0.73-0.94
    (every row under, the further the longer the context: 0.73 at 5000 / 500)."""
    fed, summary = first_summary("trtllm-v020", FIRST)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (25, 24)
    assert summary["median_error"] == pytest.approx(0.053, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.73, 1.08)
    assert all(0.91 < c.ratio < 1.09 for c in fed if "TP4" in c.row)
    assert all(0.73 < c.ratio < 0.95 for c in fed if "TP1" in c.row)


def test_docs_record_the_first_summary():
    assert_docs_row("trtllm-v020", first_summary("trtllm-v020", FIRST)[1])


@pytest.mark.slow
def test_the_figures_now_are_the_first():
    """The table run as the command runs it (~2 min): every figure as first computed, to 0.05%."""
    assert_figures_now("trtllm-v020", FIRST, abs_tol=1e-4)
