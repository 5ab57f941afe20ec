"""benchmarks/published_trtllm_bench.py: trtllm-bench's throughput tables as the page types them, its
settings heuristic worked by hand, and our rows run with each table's setup (requests, lengths, tp, FP8,
0.95 of memory), not typed in. Split from tests/test_serve_published.py (session 39), which was at 588 of
its 600 lines."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench():
    """benchmarks/published_trtllm_bench.py: trtllm-bench's settings heuristic, rows and runners."""
    import benchmarks.published_trtllm_bench as module
    return module


def test_trtllm_bench_tables_are_the_pages(bench):
    """NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md at commit 00f37686, "Throughput
    Measurements", typed here from the page: the "Llama 3.1 8B" table's H100 TP1 (FP8) and H200 TP1
    (FP8) columns, the "Llama 3.3 70B" table's H100 TP2 (FP8) and H200 TP1 (FP8) columns and the
    "Llama 3.1 405B" table's H200 TP8 (FP8) and H100 TP8 (FP8) columns, in the page's row order, and
    its $num_requests table."""
    lengths = [(128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (1000, 2000), (2048, 128),
               (2048, 2048), (5000, 500), (20000, 2000)]
    page = {("llama3.1-8b", "h100-sxm", 1): [28312, 22714, 14325, 17660, 15220, 13899, 3450, 9305, 3459, 1351],
            ("llama3.1-8b", "h200", 1): [27911, 26221, 18027, 20770, 17744, 16828, 3538, 12194, 3902, 1804],
            ("llama3.1-70b", "h100-sxm", 2): [6378, 6651, 4199, 5222, 4205, 4146, 762, 3082, 898, 437],
            ("llama3.1-70b", "h200", 1): [3803, 4336, 2872, 3666, 2909, 2994, 442, 2003, 566, 283],
            ("llama3.1-405b", "h200", 8): [3814, 5348, 4741, 4724, 3330, 3722, 456, 2948, 650, 505],
            ("llama3.1-405b", "h100-sxm", 8): [3627, 4340, 3116, 3994, 2919, 2895, 453, 2296, 610, 345]}
    assert {(t["model"], t["hardware"], t["tp"]): [r[2] for r in t["rows"]] for t in bench.TRTLLM_BENCH} == page
    assert all([r[:2] for r in t["rows"]] == lengths for t in bench.TRTLLM_BENCH)
    assert bench.TRTLLM_BENCH_REQUESTS == {
        (128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
        (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}
    assert bench.TRTLLM_BENCH_KV_FRACTION == 0.95  # the page: "--kv_cache_free_gpu_mem_fraction 0.95"


@pytest.mark.parametrize("model, hardware, tp, prompt, output, settings", [
    # 8B: a token's FP8 KV is 2 x 32 x 8 x 128 = 65,536 bytes; (80 - 8,030,261,248 / 2^30) x 0.95 = 68.895 GiB
    # holds 4,409 requests of 256 tokens -> min(., 4096) -> 256 x 16 = 4,096; tokens 4,096 x 2 = 8,192
    ("llama3.1-8b", "h100-sxm", 1, 128, 128, (4096, 8192)),
    # 518.7 requests of 2,176 -> 128 x ceil(4.05) = 640; tokens 551 -> the floor of 2,048 (128 + 640 below it)
    ("llama3.1-8b", "h100-sxm", 1, 128, 2048, (640, 2048)),
    # 51.3 requests of 22,000 -> the floor of 64; chunked prefill off: 20,000 + 64 tokens
    ("llama3.1-8b", "h100-sxm", 1, 20000, 2000, (64, 20064)),
    # 70B tp 2: 163,840 bytes a token (8 KV heads >= tp); (160 - 65.708) x 0.95 = 89.577 GiB -> 2,293.2 requests
    # of 256 -> 256 x 9 = 2,304; tokens 4,586 -> 512 x 9 = 4,608
    ("llama3.1-70b", "h100-sxm", 2, 128, 128, (2304, 4608)),
    # 70B on one H200: (141 - 65.708) x 0.95 = 71.527 GiB -> 1,831.1 -> 2,048; tokens 3,662 -> 256 x 15 = 3,840
    ("llama3.1-70b", "h200", 1, 128, 128, (2048, 3840)),
    # 405B tp 8: 2 x 126 x 8 x 128 = 258,048 bytes a token; (640 - 377.98) x 0.95 = 248.92 GiB -> 476.0 requests of
    # 2,176 -> 128 x 4 = 512; tokens 505.7 -> 2,048
    ("llama3.1-405b", "h100-sxm", 8, 128, 2048, (512, 2048)),
])
def test_trtllm_bench_settings_are_its_heuristic(bench, model, hardware, tp, prompt, output, settings):
    """tensorrt_llm/bench/build/tuning.py calc_engine_setting + finetune_setting, then get_settings'
    max(max_num_tokens, max ISL + max_batch_size) with chunked prefill off, worked by hand above."""
    import costmodel
    from costmodel.hardware import load_hardware

    assert bench.trtllm_bench_settings(costmodel.load_model(model), load_hardware(hardware), tp, prompt,
                                        output) == settings


def test_trtllm_bench_rows_pass_the_pages_setup(bench, monkeypatch):
    """Each row: the row's requests of fixed lengths all at 0, the trtllm scheduler (whole prompts,
    the full length reserved: GUARANTEED_NO_EVICT without chunked context) with trtllm-bench's
    settings, the table's tp, FP8 weights and KV cache, 0.95 of memory; output tokens over the span."""
    seen = {}

    def span(model, hardware, requests, replicas=1, **options):
        seen.update(model=model, hardware=hardware, requests=requests, replicas=replicas, **options)
        return 100.0

    monkeypatch.setattr(bench, "span_at_once", span)
    table = bench.TRTLLM_BENCH[2]
    assert bench.trtllm_bench_throughput(table, 128, 128) == 30000 * 128 / 100.0
    requests = seen.pop("requests")
    assert len(requests) == 30000 and {(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in requests} == {
        (0.0, 128, 128)}
    assert seen == {"model": "llama3.1-70b", "hardware": "h100-sxm", "replicas": 1, "scheduler": "trtllm", "tp": 2,
                    "max_num_seqs": 2304, "max_batched_tokens": 4608, "dtype": "bf16", "weight_dtype": "fp8",
                    "kv_dtype": "fp8", "gpu_memory_utilization": 0.95}
