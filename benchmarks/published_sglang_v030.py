"""SGLang v0.3.0's own rows of its v0.3.0-vs-vLLM-v0.6.0 benchmark (sgl-project/sglang
benchmark/benchmark_vllm_060/README.md at commit 120affb9613cc3f5bcd055ec09c7621d3ced0ebc, "How to reproduce the
benchmark results for SGLang v0.3.0 compared to vLLM v0.6.0"): Llama 3.1 8B Instruct on "1 x A100 80G" and Llama 3.1
70B Instruct on "4 x H100 80G", ShareGPT through `sglang.bench_serving --backend sglang`: offline (5,000 prompts at
an infinite rate: request and output token throughput) and online (4 and 8 req/s, 1,200 and 2,400 prompts: median
E2E latency, TTFT, TPOT and ITL in ms). The same README's vLLM rows are the sglang-vllm table
(benchmarks/serve_published.py); the SGLang rows were not used before session 38 (wt38_unseens).

The servers as the README starts them:

    python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --enable-torch-compile --disable-radix-cache
    python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --disable-radix-cache --tp 4 [--mem-frac 0.88]

(--mem-frac 0.88 on the offline 70B run only; "SGLang's `mem_frac` is 0.88 at TP 1 and 0.85 at TP 4").

SGLang's defaults of that era, read in python/sglang/srt/server_args.py as this index stores a v0.3-era copy (the
dataclass with `additional_ports`, `attention_backend`, `max_torch_compile_bs: int = 32`; the v0.3.0 tag itself is
not stored: the repository's snapshot is over the fetch limit): `chunked_prefill_size: int = 8192`,
`max_prefill_tokens: int = 16384`, `schedule_policy: str = "lpm"`, `enable_mixed_chunk: bool = False`,
mem_fraction_static 0.88 at tp 1 and 0.85 at tp 4 (`__post_init__`), attention_backend "flashinfer"; and in the
v0.3-era tp_worker / model_runner: `max_running_requests = min(max_total_num_tokens // 2,
req_to_token_pool.size - 1)`, the pool `max_num_reqs = min(max(int(max_total_num_tokens / context_len * 512),
2048), 5120)`: 2,048 for Llama 3.1 (context 131,072, a pool of fewer tokens than 131,072 x 4), so 2,047 requests.

Ours since session 42 (wt42_sglang): serve's SGLang engine at v0.3.0 (`sglang_v030_options`: costmodel/serving/sglang.py,
its admission, retraction, running cap and KV pool), every other choice below as first stated. The FIRST figures
(`sglang_v030_first_options`): serve had no SGLang engine. The rows ran serve's vllm-v0 scheduler, the closest in kind to SGLang 0.3's
(a prefill batch runs alone, before any decode, up to a token budget; mixed chunks off), with every choice the
README leaves open in SGLANG_V030_ASSUMED, written and committed before any figure was computed. The ShareGPT
requests, the Poisson arrivals and the metrics are the sglang-vllm table's (serve_published.sglang_vllm_run).

    python benchmarks/serve_published.py sglang-v030
"""

from __future__ import annotations

SGLANG_V030_SOURCE = ("sgl-project/sglang benchmark/benchmark_vllm_060/README.md (commit 120affb), the SGLang v0.3.0 "
                      "rows: sglang.bench_serving --backend sglang --dataset-name sharegpt")
SGLANG_V030_CHUNK = 8192  # server_args.py (v0.3 era): chunked_prefill_size: int = 8192
SGLANG_V030_MAX_RUNNING = 2047  # min(max_total_num_tokens // 2, req_to_token_pool.size - 1), the pool 2,048 (above)
SGLANG_V030_CONTEXT = 131072  # context_length None: the model's own (Llama 3.1's max_position_embeddings)
# One entry per model: the README's server (SGLang v0.3.0), mem_fraction_static per run kind, its offline row (5,000
# prompts at an infinite rate: request and output token throughput) and its online rows (rate, prompts, and the
# medians in ms of E2E latency, TTFT, TPOT and ITL), the "Engine: SGLang" lines as the README types them.
SGLANG_V030 = [
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B Instruct", "gpus": "1 x A100 80G", "hardware": "a100-80gb",
     "tp": 1, "memory": {"offline": 0.88, "online": 0.88},
     "offline": {"requests": 5000, "requests_per_s": 22.03, "output_tokens_per_s": 4281.51},
     "online": [(4, 1200, 1564.17, 31.98, 13.17, 11.93), (8, 2400, 2175.02, 35.68, 17.85, 14.41)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.1 70B Instruct", "gpus": "4 x H100 80G", "hardware": "h100-sxm",
     "tp": 4, "memory": {"offline": 0.88, "online": 0.85},
     "offline": {"requests": 5000, "requests_per_s": 19.84, "output_tokens_per_s": 3856.01},
     "online": [(4, 1200, 3005.24, 53.94, 25.03, 21.67), (8, 2400, 4064.98, 58.11, 33.07, 24.45)]},
]
SGLANG_V030_ASSUMED = (
    "decided and committed before any figure was computed: SGLang v0.3.0 as serve's vllm-v0 scheduler (prefill "
    "first, a prefill step holding prompts alone within a token budget, as SGLang 0.3 runs a prefill batch before "
    "any decode with enable_mixed_chunk off; SGLang's lpm policy is fcfs without a radix cache), its token budget "
    "the chunked_prefill_size 8,192 (every ShareGPT prompt here is under 1,024 tokens, so no prompt is chunked; "
    "SGLang's max_prefill_tokens 16,384 is the looser bound), 2,047 running requests (the pool rule above); "
    "mem_fraction_static as gpu_memory_utilization (0.88 at tp 1; 0.85 at tp 4 online, 0.88 offline by --mem-frac); "
    "bf16 weights, activations and KV cache (dtype auto, kv_cache_dtype auto); block 16 (SGLang pages one token at a "
    "time; the pool's size in tokens is what admits a request); prefix caching off (--disable-radix-cache); one "
    "scheduler step a decision (no multi-step); no host time between steps (SGLang 0.3 had no overlap scheduler, "
    "but no profile of its loop is published: its CPU time is left out, not guessed) and no sampler priced "
    "(SGLang's FlashInfer sampling not read); the attention as serve's backend default, flash-attn2 (SGLang 0.3 ran "
    "FlashInfer; serve's flashinfer figures were not chosen, to keep the rows beside sglang-vllm's); CUDA graphs "
    "as the vllm-v0 engine's default (decode batches up to 256 graphed; SGLang 0.3 captured decode graphs too, its "
    "largest size not read), --enable-torch-compile on the 8B not priced (the same kernels); the A100 80G as the "
    "a100-80gb preset (SXM) and the H100 80G as h100-sxm; the requests the sglang-vllm table's: the first 5,000 "
    "(offline), 1,200 or 2,400 (online) pairs of vLLM's ShareGPT sample (sharegpt_vllm_lengths_5000.json: "
    "sglang.bench_serving samples with the same filter, its seed's draw not reproduced), Poisson arrivals at the "
    "row's rate with seed 0, each request generating its sampled output length; TPOT's median over the requests "
    "of more than one output token; ITL not fed (the sglang-vllm table's metrics: E2E, TTFT, TPOT)")


def sglang_v030_first_options(table: dict, kind: str) -> dict:
    """The options the FIRST figures ran (session 38, before serve had an SGLang engine): SGLANG_V030_ASSUMED's
    vllm-v0 stand-in, 2,047 running requests; kind: "offline" or "online" (the 70B's memory fraction differs)."""
    return {"scheduler": "vllm-v0", "tp": table["tp"], "max_num_seqs": SGLANG_V030_MAX_RUNNING,
            "max_batched_tokens": SGLANG_V030_CHUNK, "dtype": "bf16", "sampling": None,
            "gpu_memory_utilization": table["memory"][kind], "prefix_caching": False}


def sglang_v030_options(table: dict, kind: str) -> dict:
    """serve's options for one of the README's SGLang servers since session 42 (wt42_sglang): serve's sglang
    scheduler at v0.3.0 (costmodel/serving/sglang.py: its admission, retraction and running cap, its KV pool
    from mem_fraction_static, one token a block); the budget its chunked_prefill_size; every other choice
    SGLANG_V030_ASSUMED's."""
    return {"scheduler": "sglang", "engine_release": "v0.3.0", "block_size": 1, "tp": table["tp"],
            "max_batched_tokens": SGLANG_V030_CHUNK, "dtype": "bf16", "sampling": None,
            "gpu_memory_utilization": table["memory"][kind], "prefix_caching": False}


def print_sglang_v030(path=None) -> None:
    """The README's SGLang rows beside ours, fed to reports/serving_published.py as "sglang-v030"."""
    from benchmarks.serve_published import SGLANG_VLLM_LENGTHS, print_bench_serving

    print_bench_serving("sglang-v030", f"SGLang v0.3.0 under its own ShareGPT benchmark. Source: {SGLANG_V030_SOURCE}",
                        SGLANG_V030, sglang_v030_options, SGLANG_V030_CONTEXT, path or SGLANG_VLLM_LENGTHS)
