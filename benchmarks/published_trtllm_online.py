"""TensorRT-LLM's "Online Serving Measurements" (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md at
commit 258c7540c03517def55d9a5aadfa9288af474e1b, the release 0.17 page): "The TensorRT-LLM backend
(triton-inference-server/tensorrtllm_backend) is used to measure the performance of TensorRT-LLM for online serving
... All data in the table below was generated using version 0.14.0, with 500 requests and BF16 precision." Rows:
model, GPU, TP, input and output length, QPS (2, 4, 8, 16, 32, INF), and the run's Tput (req/s), Mean TTFT (ms),
Mean ITL (ms), Total Token Tput and Output Tput (tok/s).

Kept (chosen before any was computed): Llama 3.1 8B at TP 1 and Llama 3.1 70B at TP 4 on the H100 80GB HBM3, all
three shapes (467 / 256, 467 / 16, 202 / 214) and six loads each: 36 rows, three figures each (mean TTFT, mean
ITL, output tokens/s). The H200 rows are left out to keep the set small (none for its error).

Ours: `serve` with the trtllm scheduler at the row's rate (Poisson arrivals, seed 0; INF: every request at 0), 500
requests at the row's fixed lengths, bf16 weights, activations and cache; every choice in TRTLLM_ONLINE_ASSUMED.

    python benchmarks/serve_published.py trtllm-online
"""

from __future__ import annotations

import math

TRTLLM_ONLINE_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (commit 258c7540), 'Online Serving "
                        "Measurements': TensorRT-LLM 0.14.0 under Triton's tensorrtllm_backend, 500 requests, BF16")
TRTLLM_ONLINE_REQUESTS = 500
# Per (model, GPU): the rows as the page prints them: (input, output, QPS (math.inf: INF), published req/s, mean TTFT
# ms, mean ITL ms, total tokens/s, output tokens/s).
INF = math.inf
TRTLLM_ONLINE = [
    {"model": "llama3.1-8b", "published_model": "LLaMA 3.1 8B", "hardware": "h100-sxm", "gpu": "H100 80GB HBM3", "tp": 1,
     "rows": [(467, 256, 2, 2, 23, 8, 1423, 504), (467, 256, 4, 4, 24, 9, 2624, 929),
              (467, 256, 8, 8, 26, 9, 5535, 1959), (467, 256, 16, 15, 30, 11, 10636, 3765),
              (467, 256, 32, 26, 50, 19, 19138, 6774), (467, 256, INF, 37, 3335, 39, 26614, 9420),
              (467, 16, 2, 2, 19, 7, 956, 32), (467, 16, 4, 4, 20, 7, 1910, 63), (467, 16, 8, 8, 22, 7, 3808, 126),
              (467, 16, 16, 16, 24, 8, 7567, 251), (467, 16, 32, 31, 29, 10, 14894, 493),
              (467, 16, INF, 79, 3280, 193, 38319, 1269),
              (202, 214, 2, 2, 19, 7, 809, 416), (202, 214, 4, 4, 20, 8, 1586, 816),
              (202, 214, 8, 7, 21, 9, 3047, 1568), (202, 214, 16, 13, 23, 10, 5597, 2879),
              (202, 214, 32, 23, 27, 11, 9381, 4825), (202, 214, INF, 39, 1657, 21, 16117, 8291)]},
    {"model": "llama3.1-70b", "published_model": "LLaMA 3.1 70B", "hardware": "h100-sxm", "gpu": "H100 80GB HBM3",
     "tp": 4,
     "rows": [(467, 256, 2, 2, 62, 21, 1406, 498), (467, 256, 4, 4, 68, 24, 2750, 973),
              (467, 256, 8, 7, 92, 32, 5256, 1860), (467, 256, 16, 12, 175, 66, 8941, 3164),
              (467, 256, 32, 16, 1229, 86, 11537, 4083), (467, 256, INF, 16, 9123, 85, 11593, 4103),
              (467, 16, 2, 2, 53, 18, 844, 28), (467, 16, 4, 4, 58, 20, 1908, 63), (467, 16, 8, 8, 71, 24, 3795, 126),
              (467, 16, 16, 16, 109, 38, 7492, 248), (467, 16, 32, 28, 1197, 482, 13655, 452),
              (467, 16, INF, 28, 9126, 548, 13719, 454),
              (202, 214, 2, 2, 48, 20, 780, 401), (202, 214, 4, 4, 51, 22, 1499, 771),
              (202, 214, 8, 7, 57, 25, 2702, 1390), (202, 214, 16, 11, 74, 32, 4364, 2245),
              (202, 214, 32, 14, 116, 42, 5837, 3003), (202, 214, INF, 16, 4482, 50, 6725, 3459)]},
]
TRTLLM_ONLINE_ASSUMED = (
    "decided before any row was computed: the H100 80GB HBM3 as h100-sxm; Llama 3.1 8B and 70B as the llama3.1-8b "
    "and llama3.1-70b presets in bf16 (weights, activations, KV cache); the engines as trtllm-build 0.14 builds them "
    "by default (max_batch_size 2,048, max_num_tokens 8,192: the tuning guide's defaults, the trtllm scheduler's "
    "default budgets here) and the Triton backend's defaults (kv_cache_free_gpu_mem_fraction 0.9; the "
    "guaranteed_no_evict policy with chunked context off: serve's trtllm scheduler); its CUDA graphs as graphs.py "
    "has the trtllm engine's (a TensorRT engine enqueues its fused kernels from C++: neither its launch cost nor "
    "the backend's own graph setting is modelled apart); the client's arrivals as Poisson at the row's QPS (seed "
    "0), INF as every request at 0; the 70B's all-reduces as NCCL's curves of the h100-sxm preset; the Triton "
    "server's and client's host time (HTTP/gRPC, tokenizing, streaming) not modelled; mean TTFT as the mean over "
    "the 500 requests of first token minus arrival; mean ITL as the mean of every gap between a request's "
    "consecutive output tokens (the summary's itl mean); output tokens/s as all output tokens over the span from "
    "the first arrival to the last token")


def trtllm_online_options(table: dict) -> dict:
    """serve's replica options for a table: the trtllm scheduler at its default budgets, bf16, 0.9 of memory."""
    return {"scheduler": "trtllm", "tp": table["tp"], "dtype": "bf16", "gpu_memory_utilization": 0.90}


def trtllm_online_run(table: dict, prompt: int, output: int, qps: float,
                      requests: int = TRTLLM_ONLINE_REQUESTS) -> dict:
    """Our figures for one row: mean TTFT (ms), mean ITL (ms) and output tokens/s."""
    from costmodel.serving.api import serve

    run = serve(table["model"], table["hardware"], rate=qps, requests=requests, prompt=str(prompt),
                output=str(output), seed=0, **trtllm_online_options(table))
    summary, frame = run.summary(), run.requests
    span = frame["finish_s"].max() - frame["arrival_s"].min()
    return {"ttft_ms": 1e3 * summary["ttft"]["mean"], "itl_ms": 1e3 * summary["itl"]["mean"],
            "output_tokens_per_s": float(frame["output_tokens"].sum() / span)}


def print_trtllm_online() -> None:
    from reports.serving_published import record

    print(f"\nTensorRT-LLM 0.14 online serving. Source: {TRTLLM_ONLINE_SOURCE}\n")
    print("| model (ours) | tp | in / out | QPS | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for table in TRTLLM_ONLINE:
        for prompt, output, qps, _rps, ttft, itl, _total, out in table["rows"]:
            ours = trtllm_online_run(table, prompt, output, qps)
            for name, key, published in (("mean TTFT (ms)", "ttft_ms", ttft), ("mean ITL (ms)", "itl_ms", itl),
                                         ("output tok/s", "output_tokens_per_s", out)):
                record("trtllm-online", f"{table['model']} tp {table['tp']} {prompt}/{output} QPS "
                       f"{'INF' if math.isinf(qps) else qps}", name, published, ours[key])
                print(f"| {table['published_model']} ({table['model']}) | {table['tp']} | {prompt} / {output} "
                      f"| {'INF' if math.isinf(qps) else qps} | {name} | {published:,} | {ours[key]:,.1f} "
                      f"| {ours[key] / published:.2f} |")
