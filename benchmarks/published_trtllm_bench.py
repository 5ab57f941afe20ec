"""TensorRT-LLM's trtllm-bench throughput runs beside ours: its engine settings heuristic
(trtllm_bench_settings), the v1.0 performance overview's rows (TRTLLM_BENCH, below) and release 0.17's
(benchmarks/published_trtllm_v017.py), every request at once, output tokens over the span. Printed by
`python benchmarks/serve_published.py trtllm-bench` and `trtllm-v017` (and with every table).

TensorRT-LLM's performance overview (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md at commit
00f37686, the v1.0 page: trtllm-bench throughput on the PyTorch backend, every request at once, "Total Output
Throughput (tokens/sec)"): the FP8 columns of Llama 3.1 8B (H100 TP1, H200 TP1), Llama 3.3 70B (H100 TP2, H200
TP1) and Llama 3.1 405B (H200 TP8, H100 TP8), ten fixed lengths each, the page's $num_requests. Ours: `--scheduler trtllm` (Orca's schedule as
GUARANTEED_NO_EVICT with chunked context off; decode-only steps from CUDA graphs at the page's capture sizes) with
trtllm-bench's own engine settings (tensorrt_llm/bench/build/tuning.py, reimplemented in trtllm_bench_settings),
FP8 weights and KV cache, 0.95 of memory (the page's --kv_cache_free_gpu_mem_fraction).
"""

from __future__ import annotations

from costmodel.serving.workload import Request
from benchmarks.published_mlperf import span_at_once
from benchmarks.published_trtllm_v017 import TRTLLM_V017, TRTLLM_V017_REQUESTS, TRTLLM_V017_SOURCE
from reports.serving_published import record


TRTLLM_BENCH_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (commit 00f37686), 'Throughput "
                       "Measurements': trtllm-bench throughput, PyTorch backend, 'Total Output Throughput (tokens/sec)'")
# The page's $num_requests per (input, output) length (every request at those lengths: --input-stdev=0 --output-stdev=0).
TRTLLM_BENCH_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (500, 2000): 3000, (1000, 1000): 3000,
                         (1000, 2000): 1500, (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500,
                         (20000, 2000): 1000}
# The page's "In many cases, we also use a higher KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95"
# (the command's default is 0.90): ours takes 0.95 for the heuristic's fraction and for the replica's memory.
TRTLLM_BENCH_KV_FRACTION = 0.95
# One table per (model, GPU column) of the page: the FP8 columns of the three dense Llama models with a preset.
# ModelOpt's FP8 checkpoints (nvidia/Llama-3.1-8B-Instruct-FP8, -3.3-70B-, -3.1-405B-Instruct-FP8): FP8 weights and
# activations in the projections and an FP8 KV cache. Rows: (input, output, published total output tokens/s).
TRTLLM_BENCH = [
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B", "hardware": "h100-sxm", "gpu": "H100 TP1 (FP8)", "tp": 1,
     "rows": [(128, 128, 28312), (128, 2048, 22714), (128, 4096, 14325), (500, 2000, 17660), (1000, 1000, 15220),
              (1000, 2000, 13899), (2048, 128, 3450), (2048, 2048, 9305), (5000, 500, 3459), (20000, 2000, 1351)]},
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B", "hardware": "h200", "gpu": "H200 TP1 (FP8)", "tp": 1,
     "rows": [(128, 128, 27911), (128, 2048, 26221), (128, 4096, 18027), (500, 2000, 20770), (1000, 1000, 17744),
              (1000, 2000, 16828), (2048, 128, 3538), (2048, 2048, 12194), (5000, 500, 3902), (20000, 2000, 1804)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h100-sxm", "gpu": "H100 TP2 (FP8)",
     "tp": 2,
     "rows": [(128, 128, 6378), (128, 2048, 6651), (128, 4096, 4199), (500, 2000, 5222), (1000, 1000, 4205),
              (1000, 2000, 4146), (2048, 128, 762), (2048, 2048, 3082), (5000, 500, 898), (20000, 2000, 437)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h200", "gpu": "H200 TP1 (FP8)", "tp": 1,
     "rows": [(128, 128, 3803), (128, 2048, 4336), (128, 4096, 2872), (500, 2000, 3666), (1000, 1000, 2909),
              (1000, 2000, 2994), (2048, 128, 442), (2048, 2048, 2003), (5000, 500, 566), (20000, 2000, 283)]},
    {"model": "llama3.1-405b", "published_model": "Llama 3.1 405B", "hardware": "h200", "gpu": "H200 TP8 (FP8)",
     "tp": 8,
     "rows": [(128, 128, 3814), (128, 2048, 5348), (128, 4096, 4741), (500, 2000, 4724), (1000, 1000, 3330),
              (1000, 2000, 3722), (2048, 128, 456), (2048, 2048, 2948), (5000, 500, 650), (20000, 2000, 505)]},
    {"model": "llama3.1-405b", "published_model": "Llama 3.1 405B", "hardware": "h100-sxm", "gpu": "H100 TP8 (FP8)",
     "tp": 8,
     "rows": [(128, 128, 3627), (128, 2048, 4340), (128, 4096, 3116), (500, 2000, 3994), (1000, 1000, 2919),
              (1000, 2000, 2895), (2048, 128, 453), (2048, 2048, 2296), (5000, 500, 610), (20000, 2000, 345)]},
]


def trtllm_bench_settings(cfg, hardware, tp: int, prompt: int, output: int,
                          fraction: float = TRTLLM_BENCH_KV_FRACTION, value_bytes: int = 1) -> tuple[int, int]:
    """trtllm-bench's engine settings when none are given: (max_batch_size, max_num_tokens).
    tensorrt_llm/bench/build/tuning.py calc_engine_setting and finetune_setting (a weight and a KV value
    of value_bytes each: FP8 1, unquantized FP16 2, its BYTES_PER_ELEM; the GPU's whole memory, pynvml's total, here the hardware file's;
    parameters: the checkpoint's count, here our tree's), then
    tensorrt_llm/bench/benchmark/utils/general.py get_settings: chunked prefill is off by default,
    so max_num_tokens is raised to the longest prompt plus max_batch_size."""
    import math

    from costmodel.api import estimate

    gib = 2**30
    kv_bytes_per_token = 2 * cfg.n_decoder_layers * max(tp, cfg.n_kv_heads) * cfg.d_head * value_bytes / gib
    available = hardware.memory_bytes / gib * tp - estimate(cfg).params()["total"] * value_bytes / gib
    requests = available * fraction / (kv_bytes_per_token * (prompt + output))
    raw_bs = min(requests, 4096)
    raw_tokens = min(raw_bs * (1 + prompt / output), 32768)
    if raw_bs < 256:
        batch = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        batch = 128 * math.ceil(raw_bs / 128)
    else:
        batch = 256 * math.ceil(raw_bs / 256)
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        tokens = 1024 * math.ceil(raw_tokens / 1024)
    return batch, max(tokens, prompt + batch)


def trtllm_bench_options(table: dict, prompt: int, output: int) -> dict:
    """Our replica for a trtllm-bench row: the trtllm scheduler (in-flight batching, whole prompts
    within max_num_tokens, a request's full length reserved when it joins: TensorRT-LLM's default
    GUARANTEED_NO_EVICT capacity scheduler, chunked context off; generation-only steps from CUDA
    graphs padded to the captured batch sizes), trtllm-bench's settings, FP8
    weights (W8A8) and KV cache, bf16 activations, 0.95 of memory."""
    import costmodel
    from costmodel.hardware import load_hardware

    batch, tokens = trtllm_bench_settings(costmodel.load_model(table["model"]), load_hardware(table["hardware"]),
                                          table["tp"], prompt, output)
    return {"scheduler": "trtllm", "tp": table["tp"], "max_num_seqs": batch, "max_batched_tokens": tokens,
            "dtype": "bf16", "weight_dtype": "fp8", "kv_dtype": "fp8",
            "gpu_memory_utilization": TRTLLM_BENCH_KV_FRACTION}


def output_rate_at_once(table: dict, prompt: int, output: int, requests: int, options: dict) -> float:
    """Output tokens per second of `requests` requests of one shape all arriving at 0 on the table's model and
    hardware (trtllm-bench's figure): output tokens over the span to the last one."""
    span = span_at_once(table["model"], table["hardware"], [Request(i, 0.0, prompt, output) for i in range(requests)],
                        **options)
    return requests * output / span


def trtllm_bench_throughput(table: dict, prompt: int, output: int, requests: int | None = None) -> float:
    """Our total output tokens per second: the row's requests all at 0, output tokens over the span."""
    return output_rate_at_once(table, prompt, output, requests or TRTLLM_BENCH_REQUESTS[(prompt, output)],
                               trtllm_bench_options(table, prompt, output))


def print_bench_rows(source: str, tables: list, requests: dict, options_of, metric: str, published_format: str = ",") -> None:
    """A trtllm-bench page's rows as one Markdown table, each fed to reports/serving_published.py under `source`:
    every (model, GPU column) table's rows at the page's request count, with options_of(table, prompt, output)'s
    replica (trtllm_bench_options or trtllm_v017_options), all requests at 0."""
    print(f"| model (ours) | GPU | in / out | requests | max_batch_size / max_num_tokens | published {metric} "
          "| ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for table in tables:
        for prompt, output, published in table["rows"]:
            options, count = options_of(table, prompt, output), requests[(prompt, output)]
            ours = output_rate_at_once(table, prompt, output, count, options)
            record(source, f"{table['model']} {table['gpu']} {prompt}/{output}", metric, published, ours)
            print(f"| {table['published_model']} ({table['model']}) | {table['gpu']} | {prompt} / {output} "
                  f"| {count:,} | {options['max_num_seqs']:,} / {options['max_batched_tokens']:,} "
                  f"| {published:{published_format}} | {ours:,.0f} | {ours / published:.2f} |")


def print_trtllm_bench() -> None:
    print(f"\nTensorRT-LLM trtllm-bench, all requests at once. Source: {TRTLLM_BENCH_SOURCE}\n")
    print_bench_rows("trtllm-bench", TRTLLM_BENCH, TRTLLM_BENCH_REQUESTS, trtllm_bench_options, "out tok/s")


def trtllm_v017_options(table: dict, prompt: int, output: int) -> dict:
    """Our replica for a v0.17 row (benchmarks/published_trtllm_v017.py): trtllm_bench_options' schedule with
    the table's value bytes: FP16 (2) as fp16 weights and cache, FP8 (1) as W8A8 weights and an FP8 cache, the
    activations in fp16 either way (the page's example engine: "Dtype: float16", "Quantization: FP8")."""
    import costmodel
    from costmodel.hardware import load_hardware

    batch, tokens = trtllm_bench_settings(costmodel.load_model(table["model"]), load_hardware(table["hardware"]),
                                          table["tp"], prompt, output, value_bytes=table["bytes"])
    formats = {"dtype": "fp16"} if table["bytes"] == 2 else {"dtype": "fp16", "weight_dtype": "fp8", "kv_dtype": "fp8"}
    return {"scheduler": "trtllm", "tp": table["tp"], "max_num_seqs": batch, "max_batched_tokens": tokens,
            "gpu_memory_utilization": TRTLLM_BENCH_KV_FRACTION, **formats}


def trtllm_v017_throughput(table: dict, prompt: int, output: int, requests: int | None = None) -> float:
    """Our output tokens per second for a v0.17 row: the page's requests (or `requests`) all at 0, output
    tokens over the span."""
    return output_rate_at_once(table, prompt, output, requests or TRTLLM_V017_REQUESTS[(prompt, output)],
                               trtllm_v017_options(table, prompt, output))


def print_trtllm_v017() -> None:
    print(f"\nTensorRT-LLM 0.17 trtllm-bench, all requests at once. Source: {TRTLLM_V017_SOURCE}\n")
    print_bench_rows("trtllm-v017", TRTLLM_V017, TRTLLM_V017_REQUESTS, trtllm_v017_options, "tok/s")
