"""TensorRT-LLM's performance overview of release 0.20 (docs/source/performance/perf-overview.md as the fork
dominicshanshan/TensorRT-LLM stores it at commit ab4143e1d3c82df550f0d5673090a8feee84c7bd: "Starting with v0.19,
testing was performed using the PyTorch backend", "The data collected for the v0.20 benchmarks was run with the
following file" (llm_options.yml: cuda_graph_config padding_enabled true, batch_sizes 1, 2, 4, ..., 256, 384, 512,
1024, ..., 8192)): trtllm-bench throughput, "a local inference client is fed requests at an infinite rate (no delay
between messages)", "The reported metric is `Total Output Throughput (tokens/sec)`", ModelOpt's FP8 checkpoints
(nvidia/Llama-3.3-70B-Instruct-FP8). Not used before session 40 (wt40_unseens): the trtllm-bench table's rows are
the v1.0 page's (commit 00f37686), of whose Llama 3.3 70B columns it types H100 TP2 and H200 TP1.

Kept (chosen before any was computed): the Llama 3.3 70B FP8 columns that no typed table holds, H200 TP4 (ten
shapes), H100 TP4 (the nine it fills) and H100 TP1 (the six it fills: 70 GB of FP8 weights on an 80 GB GPU, the
KV cache squeezed into what is left), 25 figures. Left out: the page's Llama 3.1 8B and 405B columns (the same
GPUs and tp as the v1.0 rows, another release), its H200 TP2 / TP8 and H100 TP2 / TP8 70B columns (to keep the set
small; none for its error), the B200 FP4 tables (no nvfp4 path) and Llama 4 Maverick (no preset).

Ours: the trtllm-bench table's replica (benchmarks/published_trtllm_bench.py trtllm_bench_options: the trtllm
scheduler, trtllm-bench's own engine-settings heuristic, FP8 weights (W8A8) and KV cache, bf16 activations, 0.95 of
memory, decode-only steps from CUDA graphs at the same capture sizes), every request at 0, output tokens over the
span. Printed by `python benchmarks/serve_published.py trtllm-v020`.
"""

from __future__ import annotations

from benchmarks.published_trtllm_bench import (TRTLLM_BENCH_REQUESTS, output_rate_at_once, print_bench_rows,
                                               trtllm_bench_options)

TRTLLM_V020_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md as stored in the fork "
                      "dominicshanshan/TensorRT-LLM at ab4143e1 (the v0.20 page), 'Llama 3.3 70B FP8': trtllm-bench "
                      "throughput, PyTorch backend, 'Total Output Throughput (tokens/sec)'")
# The page's $num_requests table lists the same ten (input, output) pairs and counts as the v1.0 page's
# (TRTLLM_BENCH_REQUESTS); it has no 1024 / 2048 line, though every column has a 1024 / 2048 row: assumed 1,500,
# the count of 1000 / 2000, the nearest listed shape.
TRTLLM_V020_REQUESTS = {**TRTLLM_BENCH_REQUESTS, (1024, 2048): 1500}
TRTLLM_V020_ASSUMED = (
    "decided and committed before any figure was computed: Llama 3.3 70B as the llama3.1-70b preset (the same "
    "architecture); the 'H200 141GB HBM3' as the h200 preset and the 'H100 80GB HBM3' as h100-sxm, NVLink within "
    "the node; trtllm-bench's engine settings by its heuristic (no max_batch_size or max_num_tokens stated, as the "
    "v1.0 rows), chunked prefill off (get_settings' default), kv_cache_free_gpu_mem_fraction 0.95 for every row "
    "(the page: 'In a majority of cases ... 0.95 ... We fall back to 0.90 if we hit an out of memory issue'; which "
    "rows fell back is not stated); the 1024 / 2048 rows' $num_requests 1,500 (not listed); every request at 0, "
    "exactly its lengths (--input-stdev=0 --output-stdev=0); the all-reduce NCCL's (TensorRT-LLM's own all-reduce "
    "kernels not modelled); no host time a step.")
# One table per (model, GPU column) of the page, as TRTLLM_BENCH's; rows: (input, output, published output tok/s).
TRTLLM_V020 = [
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h200", "gpu": "H200 TP4 (FP8)", "tp": 4,
     "rows": [(128, 128, 10407.42), (128, 2048, 13508.59), (128, 4096, 11458.56), (500, 2000, 12200.18),
              (1000, 1000, 8685.44), (1000, 2000, 9031.21), (1024, 2048, 8946.71), (2048, 128, 1264.76),
              (5000, 500, 1698.22), (20000, 2000, 1161.29)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h100-sxm", "gpu": "H100 TP4 (FP8)",
     "tp": 4,
     "rows": [(128, 2048, 11464.94), (128, 4096, 8206.39), (500, 2000, 9903.53), (1000, 1000, 7435.65),
              (1000, 2000, 7611.12), (1024, 2048, 7575.24), (2048, 128, 1213.33), (5000, 500, 1552.68),
              (20000, 2000, 903.66)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h100-sxm", "gpu": "H100 TP1 (FP8)",
     "tp": 1,
     "rows": [(128, 128, 3128.33), (128, 2048, 756.42), (1000, 1000, 742.14), (1000, 2000, 533.74),
              (1024, 2048, 530.16), (5000, 500, 204.94)]},
]


def trtllm_v020_throughput(table: dict, prompt: int, output: int, requests: int | None = None) -> float:
    """Our total output tokens per second for a v0.20 row: the page's requests (or `requests`) all at 0 on the
    trtllm-bench table's replica, output tokens over the span."""
    return output_rate_at_once(table, prompt, output, requests or TRTLLM_V020_REQUESTS[(prompt, output)],
                               trtllm_bench_options(table, prompt, output))


def print_trtllm_v020() -> None:
    print(f"\nTensorRT-LLM 0.20 trtllm-bench, all requests at once. Source: {TRTLLM_V020_SOURCE}\n")
    print(f"Assumed: {TRTLLM_V020_ASSUMED}\n")
    print_bench_rows("trtllm-v020", TRTLLM_V020, TRTLLM_V020_REQUESTS, trtllm_bench_options, "out tok/s", ",.2f")
