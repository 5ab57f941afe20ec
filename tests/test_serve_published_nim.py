"""benchmarks/published_nim.py: NVIDIA NIM's tables as the page types them, and our rows run with each
table's setup (concurrency, lengths, tp, FP8), not typed in. Split from tests/test_serve_published.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def script():
    from benchmarks import published_nim

    return published_nim


def test_nim_tables_are_the_pages(script):
    """NVIDIA NIM's benchmarking guide 1.0.0, Performance (docs.nvidia.com/nim/benchmarking/llm/1.0.0/
    performance.md), Llama-3.3-70b-instruct, Version 1.8.0: "2 x H100 80G", "fp8 TP2", then
    "5000 Input Tokens / 500 Output Tokens" (all eight rows) and "500 Input Tokens / 2000 Output
    Tokens" (its first row), typed here from the page, not from script.NIM."""
    first, second = script.NIM
    for table in (first, second):
        assert (table["model"], table["hardware"], table["tp"], table["precision"], table["version"]) == \
            ("llama3-70b", "h100-sxm", 2, "fp8", "1.8.0")
        assert table["gpus"] == "2 x H100 80G" and table["published_model"] == "Llama-3.3-70B-Instruct"
    assert (first["prompt"], first["output"], second["prompt"], second["output"]) == (5000, 500, 500, 2000)
    assert [row[0] for row in first["rows"]] == [1, 5, 25, 50, 100, 150, 200, 250]
    assert first["rows"] == [(1, 406.77, 18.58, 51.67), (5, 546.7, 21.83, 218.48), (25, 688.69, 38.75, 623.4),
                             (50, 834.51, 59.73, 814.37), (100, 7996.25, 92.91, 917.26),
                             (150, 34794.22, 92.86, 920.9), (200, 61680.22, 93.06, 920.54),
                             (250, 88605.32, 93.2, 920.12)]
    assert second["rows"] == [(1, 47.77, 18.91, 52.85)]
    # the throughput column is output tokens/s: at one client, 500 tokens over TTFT + 499 ITLs
    concurrency, ttft, itl, tokens = first["rows"][0]
    assert 500 / (ttft / 1e3 + 499 * itl / 1e3) == pytest.approx(tokens, rel=2e-3)


def test_nim_rows_pass_the_tables_setup(script, served):
    """Each row runs `serve` with the table's concurrency and fixed lengths, vLLM's scheduler,
    tp 2 on h100-sxm, FP8 weights and KV cache; the figures are the run's mean TTFT and TPOT and
    its output tokens per second."""
    seen, real_serve = served, served["_real"]
    table = script.NIM[0]
    ours = script.nim_row(table, 3, requests=6)
    assert {k: seen[k] for k in ("model", "hardware", "concurrency", "requests", "prompt", "output", "scheduler",
                                 "tp", "dtype", "weight_dtype", "kv_dtype")} == {
        "model": "llama3-70b", "hardware": "h100-sxm", "concurrency": 3, "requests": 6, "prompt": "5000",
        "output": "500", "scheduler": "vllm", "tp": 2, "dtype": "bf16", "weight_dtype": "fp8", "kv_dtype": "fp8"}
    assert "rate" not in seen and script.NIM_REQUESTS_PER_CLIENT == 10
    direct = real_serve("llama3-70b", "h100-sxm", concurrency=3, requests=6, prompt="5000", output="500", seed=0,
                        scheduler="vllm", tp=2, dtype="bf16", weight_dtype="fp8", kv_dtype="fp8",
                        sampling=None,  # NIM's engine unnamed: no sampler priced,
                        all_reduce="nccl").summary()  # nor vLLM's custom all-reduce (wt40_customar)
    assert seen["all_reduce"] == "nccl"
    assert direct["setup"]["load"] == "concurrency"
    assert ours == {"ttft_ms": 1e3 * direct["ttft"]["mean"], "itl_ms": 1e3 * direct["tpot"]["mean"],
                    "tokens_per_s": direct["throughput"]["output_tokens_per_s"]}
