"""benchmarks/published_trtllm_v090.py: TensorRT-LLM 0.9.0's static-batch H100 FP8 rows (Llama 2 7B and 70B) as
typed, the engine they run under, and the first figures ours computed (session 40, wt40_unseens, right after commit
992f2302 typed the rows): kept whatever their error (validate/FINDINGS.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.serving_first import assert_docs_row, assert_figures_now, first_summary  # noqa: E402
from benchmarks import published_trtllm_v090 as script  # noqa: E402

# (row, metric, published, ours) as `python benchmarks/serve_published.py trtllm-v090` first fed them
FIRST = [
    ("llama2-7b tp 1 batch 896 128/128", "out tok/s per GPU", 19854.0, 19981.0358),
    ("llama2-7b tp 1 batch 120 128/2048", "out tok/s per GPU", 6944.0, 6060.7438),
    ("llama2-7b tp 1 batch 84 2048/128", "out tok/s per GPU", 2163.0, 1924.0702),
    ("llama2-7b tp 1 batch 56 2048/2048", "out tok/s per GPU", 2826.0, 2382.7748),
    ("llama2-70b tp 2 batch 1024 128/128", "out tok/s per GPU", 3214.0, 3097.8792),
    ("llama2-70b tp 4 batch 512 128/2048", "out tok/s per GPU", 2725.0, 2530.1517),
    ("llama2-70b tp 2 batch 96 2048/128", "out tok/s per GPU", 346.0, 329.0214),
    ("llama2-70b tp 2 batch 64 2048/2048", "out tok/s per GPU", 1011.0, 894.2367),
    ("llama2-7b tp 1 128", "first token ms, batch 1", 6.3, 6.2438),
    ("llama2-7b tp 1 2048", "first token ms, batch 1", 30.8, 34.8581),
    ("llama2-70b tp 4 128", "first token ms, batch 1", 19.6, 23.5152),
    ("llama2-70b tp 8 2048", "first token ms, batch 1", 85.1, 89.4193),
]

# The figures 4a24be82 (wt41_trtar, session 41: TensorRT-LLM's own all-reduce, nccl_facts.json trtllm_custom_all_reduce)
# moved, a model change: 0.9.0's trtllm-build ran TensorRT-LLM's custom all-reduce by default
# (collectives.engine_all_reduce "trtllm-custom"): the 70B first token at tp 4 and 128 tokens, its 161 calls of 2 MiB at
# 20.2 us instead of NCCL's curve, and the two tp 2 decodes at batch 64 and 96 (calls of 1-1.5 MiB, under the 16 MB
# workspace). Run at 4a24be82^ and 4a24be82 (session 44, wt44_servingdocs): FIRST's figures, then these; nothing since
# has moved the table.
TRTLLM_AR = {("llama2-70b tp 2 batch 96 2048/128", "out tok/s per GPU"): 335.8763,
             ("llama2-70b tp 2 batch 64 2048/2048", "out tok/s per GPU"): 974.1697,
             ("llama2-70b tp 4 128", "first token ms, batch 1"): 18.9475}
NOW = [(row, metric, published, TRTLLM_AR.get((row, metric), ours)) for row, metric, published, ours in FIRST]


def test_the_rows_are_the_pages():
    """H100 FP8 'Peak Throughput': LLaMA 7B 896 / 120 / 84 / 56 at tp 1, LLaMA 70B 1024 tp 2, 512 tp 4, 96 and 64
    tp 2; 'Low Latency': 6.3, 30.8 ms (7B, tp 1), 19.6 (70B tp 4, 128), 85.1 (70B tp 8, 2048)."""
    assert [(m, tp, b, i, o, p) for _, m, tp, b, i, o, p in script.THROUGHPUT] == [
        ("llama2-7b", 1, 896, 128, 128, 19854), ("llama2-7b", 1, 120, 128, 2048, 6944),
        ("llama2-7b", 1, 84, 2048, 128, 2163), ("llama2-7b", 1, 56, 2048, 2048, 2826),
        ("llama2-70b", 2, 1024, 128, 128, 3214), ("llama2-70b", 4, 512, 128, 2048, 2725),
        ("llama2-70b", 2, 96, 2048, 128, 346), ("llama2-70b", 2, 64, 2048, 2048, 1011)]
    assert [(m, tp, i, p) for _, m, tp, i, p in script.FIRST_TOKEN] == [
        ("llama2-7b", 1, 128, 6.3), ("llama2-7b", 1, 2048, 30.8), ("llama2-70b", 4, 128, 19.6),
        ("llama2-70b", 8, 2048, 85.1)]


def test_the_engine_is_the_static_schedule_with_fp8():
    """A static batch: every request's first token at the same step and its last at the same step; FP8 weights and
    cache with fp16 activations; one load of each KV head's cache a decode step (XQA)."""
    assert script.FORMATS == {"dtype": "fp16", "weight_dtype": "fp8", "kv_dtype": "fp8"}
    assert script.DECODE_KERNEL is None
    timeline = script.v090_run("llama2-7b", 1, 4, 64, 3)
    assert len({s.token_times[0] for s in timeline.sequences}) == 1
    assert len({s.token_times[-1] for s in timeline.sequences}) == 1
    assert all(len(s.token_times) == 3 for s in timeline.sequences)


def test_the_first_summary():
    """12 comparisons, median 9.1%, 12 within 0.75-1.33x, 0.84-1.20: the throughputs 0.84-1.01 (all under but
    7B at 128 / 128), the first-token latencies 0.99-1.20 (ours slower, but for 7B at 128 tokens)."""
    fed, summary = first_summary("trtllm-v090", FIRST)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (12, 12)
    assert summary["median_error"] == pytest.approx(0.0910, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.84, 1.2)
    assert all(0.84 < c.ratio < 1.01 for c in fed if c.metric == "out tok/s per GPU")
    assert all(0.99 < c.ratio < 1.2 for c in fed if c.metric.startswith("first token"))


def test_the_summary_now():
    """12 comparisons, median 4.4%, 12 within 0.75-1.33x, 0.84-1.13 (4a24be82): the 70B first token at tp 4 1.20 ->
    0.97, the tp 2 decodes at batch 96 and 64 0.95 -> 0.97 and 0.88 -> 0.96; the highest now 7B's 2,048-token first
    token (1.13)."""
    fed, summary = first_summary("trtllm-v090", NOW)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (12, 12)
    assert summary["median_error"] == pytest.approx(0.0436, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.84, 1.13)
    assert [round(c.ratio, 2) for c in fed if (c.row, c.metric) in TRTLLM_AR] == [0.97, 0.96, 0.97]


def test_docs_record_the_summary_now():
    """docs/serving.md's trtllm-v090 row: the table as it runs now (NOW; FIRST's summary in test_the_first_summary)."""
    assert_docs_row("trtllm-v090", first_summary("trtllm-v090", NOW)[1])


@pytest.mark.slow
def test_the_figures_now_are_the_first():
    """The table run as the command runs it (~15 s): every figure as NOW pins it (FIRST's, but TRTLLM_AR's), to 0.05%."""
    assert_figures_now("trtllm-v090", NOW, abs_tol=1e-4)
