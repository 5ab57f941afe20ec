"""benchmarks/published_sglang_v030.py: SGLang v0.3.0's own rows of sgl-project/sglang's benchmark_vllm_060 README
as typed, the setup they run under, and the first figures ours computed (session 38, wt38_unseens, right after
commit 9d2ca179 typed the rows): kept whatever their error, so a change that moves them shows here and by how much."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.serving_first import assert_docs_row, assert_figures_now, first_summary  # noqa: E402
from benchmarks import published_sglang_v030 as script  # noqa: E402

# (row, metric, published, ours) as `python benchmarks/serve_published.py sglang-v030` first fed them to
# reports/serving_published.py (ours to 3 decimals)
FIRST = [
    ("llama3.1-8b offline", "request throughput (req/s)", 22.03, 22.549),
    ("llama3.1-8b offline", "output token throughput (tok/s)", 4281.51, 4530.549),
    ("llama3.1-8b 4 req/s", "median E2E latency (ms)", 1564.17, 1685.143),
    ("llama3.1-8b 4 req/s", "median TTFT (ms)", 31.98, 23.362),
    ("llama3.1-8b 4 req/s", "median TPOT (ms)", 13.17, 11.928),
    ("llama3.1-8b 8 req/s", "median E2E latency (ms)", 2175.02, 1936.893),
    ("llama3.1-8b 8 req/s", "median TTFT (ms)", 35.68, 24.35),
    ("llama3.1-8b 8 req/s", "median TPOT (ms)", 17.85, 13.739),
    ("llama3.1-70b offline", "request throughput (req/s)", 19.84, 20.206),
    ("llama3.1-70b offline", "output token throughput (tok/s)", 3856.01, 4059.679),
    ("llama3.1-70b 4 req/s", "median E2E latency (ms)", 3005.24, 3192.556),
    ("llama3.1-70b 4 req/s", "median TTFT (ms)", 53.94, 43.277),
    ("llama3.1-70b 4 req/s", "median TPOT (ms)", 25.03, 22.904),
    ("llama3.1-70b 8 req/s", "median E2E latency (ms)", 4064.98, 3948.194),
    ("llama3.1-70b 8 req/s", "median TTFT (ms)", 58.11, 45.494),
    ("llama3.1-70b 8 req/s", "median TPOT (ms)", 33.07, 28.511),
]


# The table under serve's SGLang engine (session 42, wt42_sglang: `--scheduler sglang --engine-release v0.3.0`, its
# admission, retraction, running cap and pool; and vLLM's custom all-reduce, which session 40 gave SGLang's rows), as
# `python benchmarks/serve_published.py sglang-v030` fed them (ours to 3 decimals). The online rows are the FIRST
# figures (the 8B's) or session 40's moved ones (the 70B's): at 4 and 8 req/s memory never binds, and SGLang's step
# is vllm-v0's (a prefill batch alone). The offline rows moved: SGLang's pool holds 17-31% more tokens (no activation
# peak; its fraction of the memory free before the weights) and admits by its own rule.
SGLANG_ENGINE = [
    ('llama3.1-8b offline', 'request throughput (req/s)', 22.03, 27.381),
    ('llama3.1-8b offline', 'output token throughput (tok/s)', 4281.51, 5501.42),
    ('llama3.1-8b 4 req/s', 'median E2E latency (ms)', 1564.17, 1685.143),
    ('llama3.1-8b 4 req/s', 'median TTFT (ms)', 31.98, 23.362),
    ('llama3.1-8b 4 req/s', 'median TPOT (ms)', 13.17, 11.928),
    ('llama3.1-8b 8 req/s', 'median E2E latency (ms)', 2175.02, 1936.893),
    ('llama3.1-8b 8 req/s', 'median TTFT (ms)', 35.68, 24.35),
    ('llama3.1-8b 8 req/s', 'median TPOT (ms)', 17.85, 13.739),
    ('llama3.1-70b offline', 'request throughput (req/s)', 19.84, 24.755),
    ('llama3.1-70b offline', 'output token throughput (tok/s)', 3856.01, 4973.796),
    ('llama3.1-70b 4 req/s', 'median E2E latency (ms)', 3005.24, 2632.784),
    ('llama3.1-70b 4 req/s', 'median TTFT (ms)', 53.94, 37.253),
    ('llama3.1-70b 4 req/s', 'median TPOT (ms)', 25.03, 18.741),
    ('llama3.1-70b 8 req/s', 'median E2E latency (ms)', 4064.98, 3269.765),
    ('llama3.1-70b 8 req/s', 'median TTFT (ms)', 58.11, 39.892),
    ('llama3.1-70b 8 req/s', 'median TPOT (ms)', 33.07, 23.458),
]


def test_the_rows_are_the_readmes_sglang_rows():
    """sgl-project/sglang benchmark/benchmark_vllm_060/README.md (commit 120affb), the "Engine: SGLang" lines typed
    from the page: offline 22.03 req/s and 4,281.51 tok/s (8B), 19.84 and 3,856.01 (70B); online (RPS, prompts,
    median E2E, TTFT, TPOT, ITL ms)."""
    small, large = script.SGLANG_V030
    assert (small["model"], small["hardware"], small["tp"], small["gpus"]) == ("llama3.1-8b", "a100-80gb", 1,
                                                                               "1 x A100 80G")
    assert (large["model"], large["hardware"], large["tp"], large["gpus"]) == ("llama3.1-70b", "h100-sxm", 4,
                                                                               "4 x H100 80G")
    assert small["offline"] == {"requests": 5000, "requests_per_s": 22.03, "output_tokens_per_s": 4281.51}
    assert large["offline"] == {"requests": 5000, "requests_per_s": 19.84, "output_tokens_per_s": 3856.01}
    assert small["online"] == [(4, 1200, 1564.17, 31.98, 13.17, 11.93), (8, 2400, 2175.02, 35.68, 17.85, 14.41)]
    assert large["online"] == [(4, 1200, 3005.24, 53.94, 25.03, 21.67), (8, 2400, 4064.98, 58.11, 33.07, 24.45)]
    # "mem_frac is 0.88 at TP 1 and 0.85 at TP 4": the offline 70B server sets --mem-frac 0.88, the online one not
    assert (small["memory"], large["memory"]) == ({"offline": 0.88, "online": 0.88}, {"offline": 0.88, "online": 0.85})
    assert [(row, metric, published) for row, metric, published, _ in FIRST] == [
        (f"{t['model']} {load}", metric, value) for t in script.SGLANG_V030
        for load, metric, value in [("offline", "request throughput (req/s)", t["offline"]["requests_per_s"]),
                                    ("offline", "output token throughput (tok/s)", t["offline"]["output_tokens_per_s"])]
        + [(f"{rate} req/s", m, v) for rate, _, e2e, ttft, tpot, _ in t["online"]
           for m, v in (("median E2E latency (ms)", e2e), ("median TTFT (ms)", ttft), ("median TPOT (ms)", tpot))]]


def test_the_options_are_the_assumed_setup():
    """Since session 42 serve's sglang scheduler at v0.3.0 (its admission, retraction, running cap and pool, one token a
    block), the 8,192-token chunk as the budget, the row's memory fraction, bf16, no sampler, no radix cache; no host
    time and one step a decision (build_replica's defaults). The FIRST figures' options, kept: SGLANG_V030_ASSUMED's
    vllm-v0 stand-in with 2,047 running requests."""
    large = script.SGLANG_V030[1]
    assert script.sglang_v030_options(large, "online") == {
        "scheduler": "sglang", "engine_release": "v0.3.0", "block_size": 1, "tp": 4, "max_batched_tokens": 8192,
        "dtype": "bf16", "sampling": None, "gpu_memory_utilization": 0.85, "prefix_caching": False}
    assert script.sglang_v030_first_options(large, "online") == {
        "scheduler": "vllm-v0", "tp": 4, "max_num_seqs": 2047, "max_batched_tokens": 8192, "dtype": "bf16",
        "sampling": None, "gpu_memory_utilization": 0.85, "prefix_caching": False}
    assert script.sglang_v030_options(large, "offline")["gpu_memory_utilization"] == 0.88
    assert "host_time" not in script.sglang_v030_options(large, "offline")
    assert "num_scheduler_steps" not in script.sglang_v030_options(large, "offline")


def test_the_running_cap_follows_sglangs_pool_rule():
    """max_running_requests = min(max_total_num_tokens // 2, req_to_token_pool.size - 1), the pool
    min(max(int(tokens / context_len * 512), 2048), 5120): with our KV pools (fewer than 131,072 x 4 tokens) the
    pool is 2,048 requests and the cap 2,047, for every server of the table."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    for table in script.SGLANG_V030:
        for kind in ("offline", "online"):
            replica, _, _ = build_replica(costmodel.load_model(table["model"]), load_hardware(table["hardware"]),
                                          **script.sglang_v030_options(table, kind))
            _, blocks, block_size, seqs, tokens = replica
            pool_tokens = blocks * block_size
            pool_requests = min(max(int(pool_tokens / script.SGLANG_V030_CONTEXT * 512), 2048), 5120)
            assert pool_tokens < script.SGLANG_V030_CONTEXT * 4
            assert min(pool_tokens // 2, pool_requests - 1) == seqs == script.SGLANG_V030_MAX_RUNNING
            assert tokens == script.SGLANG_V030_CHUNK


def test_the_first_summary():
    """16 comparisons, median |ours / published - 1| 9.0%, 14 within 0.75-1.33x, 0.68-1.08; every TTFT and TPOT
    under (ours faster: TTFT 0.68-0.80, TPOT 0.77-0.92), every offline throughput over (1.02-1.06)."""
    fed, summary = first_summary("sglang-v030", FIRST)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (16, 14)
    assert summary["median_error"] == pytest.approx(0.090, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.68, 1.08)
    assert all(0.67 < c.ratio < 0.81 for c in fed if "TTFT" in c.metric)
    assert all(0.76 < c.ratio < 0.93 for c in fed if "TPOT" in c.metric)
    assert all(1.01 < c.ratio < 1.07 for c in fed if "offline" in c.row)


def test_the_engines_summary():
    """16 comparisons, median |ours / published - 1| 25.0%, 10 within 0.75-1.33x, 0.68-1.29: the offline throughputs
    1.24-1.29 (FIRST 1.02-1.06), the online rows as before."""
    fed, summary = first_summary("sglang-v030", SGLANG_ENGINE)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (16, 10)
    assert summary["median_error"] == pytest.approx(0.2495, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.68, 1.29)
    assert all(1.23 < c.ratio < 1.30 for c in fed if "offline" in c.row)
    first = {(row, metric): ours for row, metric, _, ours in FIRST}
    assert all(ours == first[row, metric] for row, metric, _, ours in SGLANG_ENGINE if row.startswith("llama3.1-8b ")
               and "offline" not in row)


def test_docs_record_the_engines_summary():
    """docs/serving.md's sglang-v030 row: the table under serve's SGLang engine (SGLANG_ENGINE)."""
    assert_docs_row("sglang-v030", first_summary("sglang-v030", SGLANG_ENGINE)[1])


@pytest.mark.slow
def test_the_figures_now_are_the_engines():
    """The table run as the command runs it (~1 min): every figure as SGLANG_ENGINE pins it, to 0.05%."""
    assert_figures_now("sglang-v030", SGLANG_ENGINE, abs_tol=1e-3)


def test_the_runs_take_the_tables_options_and_context(monkeypatch):
    """serve_published.sglang_vllm_run with this table's options: the replica's running cap and budget are
    SGLang's (2,047, 8,192), the longest request Llama 3.1's context, Poisson arrivals as the sglang-vllm rows'."""
    import costmodel.serving.api as api
    import benchmarks.serve_published as serve_published

    seen = []

    def run_replicas(requests, replica, step, replicas, max_model_len, record=True, **_):
        seen.append((replica, max_model_len))
        return [{"finish_s": 2.0, "output_tokens": r.output_tokens, "e2e_s": 1.0, "ttft_s": 0.1, "tpot_s": 0.01}
                for r in requests], None, None

    monkeypatch.setattr(api, "run_replicas", run_replicas)
    table = script.SGLANG_V030[0]
    pairs = [(10 + i, 5 + i % 3) for i in range(30)]
    ours = serve_published.sglang_vllm_online(table, 4, 20, pairs, options=script.sglang_v030_options(table, "online"),
                                              max_model_len=script.SGLANG_V030_CONTEXT)
    (_, _, _, seqs, tokens), max_model_len = seen[-1]
    assert (seqs, tokens, max_model_len) == (2047, 8192, 131072)
    assert ours == {"e2e_ms": 1000.0, "ttft_ms": 100.0, "tpot_ms": 10.0}
