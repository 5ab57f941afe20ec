"""AMD's vLLM throughput table on the MI300X (ROCm/vllm docs/dev-docker/README.md at commit
040de12d45c16d6de6ad386cc57dd68b8c5b805e, "vllm FP8 Latency and Throughput benchmarks with vLLM on the AMD Instinct
MI300X accelerator", "Throughput Measurements"): Llama 3.1 70B and 405B (amd/Llama-3.1-{70B,405B}-Instruct-FP8-KV:
AMD Quark's w_fp8_a_fp8, FP8 weights and activations, an FP8 KV cache) at TP 8 on "8x AMD Instinct MI300X (192GiB,
750W)", "a local inference client is fed requests at an infinite rate", four fixed shapes each, "Throughput
(tokens/s)". The stack: rocm/vllm-dev:main with ROCm 6.4.1, hipBLASLt 0.15, vLLM v0.10.0 (its V1 engine: "V1 on by
default" since 20250620_aiter), PyTorch 2.7, "AITER full graph capture"; "Benchmarks were run with benchmark scripts
from v0.8.5". The command the page gives (its Throughput Benchmark section):

    benchmark_throughput.py --distributed-executor-backend mp --kv-cache-dtype fp8 --dtype float16
        --disable-detokenize --gpu-memory-utilization 0.9 --model M --max-model-len 8192
        --max-num-batched-tokens 131072 --max-seq-len-to-capture 131072 --input-len IN --output-len OUT
        --tensor-parallel-size 8 --num-prompts PROMPTS --max-num-seqs MAX_NUM_SEQS

with VLLM_USE_TRITON_FLASH_ATTN=0 and VLLM_V1_USE_PREFILL_DECODE_ATTENTION=1; each row gives its PROMPTS and
MAX_NUM_SEQS. vLLM v0.8.5's benchmark_throughput.py gives every prompt to the LLM class at once and prints
"Throughput: R requests/s, T total tokens/s, O output tokens/s" over the elapsed time of the generate call.

The latency table of the same page is costmodel/published_runs.json's "amd-vllm" source (python cli.py
published); this throughput table was not used before session 26.

Ours: every prompt at time 0 on one replica of `serve`'s vLLM V1 scheduler (chunked prefill, its graphs as
graphs.py has vLLM's), the row's max_num_seqs, 131,072 batched tokens, 90% of memory, FP8 weights in W8A8 GEMMs
at the FP8 peak, an FP8 KV cache, fp16 activations, on the mi300x preset at tp 8; the figure as output tokens
per second since session 37 (total tokens per second before: AMD_VLLM_READING says why it moved).

    python benchmarks/serve_published.py amd-vllm
"""

from __future__ import annotations

AMD_VLLM_SOURCE = ("ROCm/vllm docs/dev-docker/README.md (commit 040de12d), 'Throughput Measurements': vLLM v0.10.0, "
                   "8 x MI300X, FP8, TP 8, benchmark_throughput.py (v0.8.5), Throughput (tokens/s)")
AMD_VLLM_BATCHED_TOKENS = 131072  # --max-num-batched-tokens 131072
AMD_VLLM_MAX_MODEL_LEN = 8192  # --max-model-len 8192
# The table: per model, (input, output, num prompts, max num seqs, published throughput tokens/s).
AMD_VLLM_THROUGHPUT = [
    {"model": "llama3.1-70b", "published_model": "Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)",
     "rows": [(128, 2048, 3200, 3200, 13383.3), (128, 4096, 1500, 1500, 11203.6), (500, 2000, 2000, 2000, 10963.3),
              (2048, 2048, 1500, 1500, 7560.9)]},
    {"model": "llama3.1-405b", "published_model": "Llama 3.1 405B (amd/Llama-3.1-405B-Instruct-FP8-KV)",
     "rows": [(128, 2048, 1500, 1500, 3867.7), (128, 4096, 1500, 1500, 3043.3), (500, 2000, 2000, 2000, 2905.6),
              (2048, 2048, 500, 500, 2174.1)]},
]
AMD_VLLM_ASSUMED = (
    "decided before any row was computed (session 26): 'Throughput (tokens/s)' as benchmark_throughput.py's total "
    "tokens/s (prompts x (input + output) over the elapsed time: the first tokens/s it prints, the one not "
    "qualified as output; the page does not say which; were it the output tokens/s, every ratio below would be "
    "divided by output / (input + output), 0.50-0.97); since session 37 read as output tokens/s instead "
    "(AMD_VLLM_READING); the MI300X as the mi300x preset at its datasheet figures (the page "
    "states 750 W, the preset's board power); vLLM v0.10.0's V1 engine as serve's vllm scheduler with its CUDA "
    "graphs as graphs.py has vLLM's (AITER's full graph capture not modelled apart; decode batches past the "
    "captured sizes run eager) and prefix caching on (random prompts share nothing); the GEMMs W8A8 at the FP8 "
    "peak (Quark's per-tensor FP8 weights and activations); AITER's and vLLM's ROCm kernels as the kernel time "
    "model's, the attention at the flash kernel's rates; the all-reduces as RCCL's curve (nccl_facts.json's "
    "rccl-tests on 8 MI300X; vLLM's custom all-reduce not modelled, as the amd-vllm source assumed); the page's "
    "--max-model-len 8192 holds every row (at most 4,224 tokens a request); vLLM's host time (scheduling, "
    "sampling, the engine core's loop) not modelled; the span from 0 (every prompt given at once) to the last "
    "token, start-up and graph capture outside it as vLLM's timer leaves them")


def amd_vllm_options(max_num_seqs: int) -> dict:
    """build_replica's options for one row: the page's engine arguments under serve's vllm scheduler."""
    return {"scheduler": "vllm", "tp": 8, "max_num_seqs": max_num_seqs, "max_batched_tokens": AMD_VLLM_BATCHED_TOKENS,
            "dtype": "fp16", "weight_dtype": "fp8", "fp8_gemm": "w8a8", "kv_dtype": "fp8",
            "gpu_memory_utilization": 0.90}


# The same page's latency table (benchmark_latency.py, one batch of BS sequences, all at once), its batch-128 rows
# at the throughput table's shapes, seconds: (model, input, output) -> "MI300X Latency (sec)".
AMD_VLLM_LATENCY_BATCH = 128
AMD_VLLM_LATENCY_S = {("llama3.1-70b", 128, 2048): 46.484, ("llama3.1-70b", 2048, 2048): 52.394,
                      ("llama3.1-405b", 128, 2048): 117.027, ("llama3.1-405b", 2048, 2048): 125.471}
AMD_VLLM_READING = (
    "'Throughput (tokens/s)' read as output tokens/s (prompts x output over the elapsed time: the last figure "
    "benchmark_throughput.py v0.8.5 prints; AMD's own harness, vllm_benchmark_report.py in seungrokj/ootb_vllm, "
    "writes both, tot_throughput and gen_throughput = num_prompts x output_len / elapsed_time). Why: read as "
    "total tokens/s, the two 2,048 / 2,048 rows would take longer than the same page's latency script needs for "
    "the same prompts in successive batches of 128 (latency_bound_s: 70B 1,500 prompts 812.6 s against 12 x "
    "52.394 = 628.7 s; 405B 500 prompts 942.0 s against 4 x 125.471 = 501.9 s), though the throughput run holds "
    "every prompt at once with max_num_seqs = prompts, an FP8 cache with room for all (the latency command keeps "
    "fp16), and 131,072 tokens a step; as output tokens/s every row with a latency row of its shape is under its "
    "bound (406.3 and 471.0 s). Five versions of the page are stored (vLLM 0.6.6 and 0.7.3 V0 with 10 scheduler "
    "steps, ROCm/vllm b309ea79 the second; 0.10.0; one more with v0.8.5's scripts; 0.11.1 RC): their tables agree "
    "within 20% row by row, and as total tokens/s the 405B's 500 prompts overrun four batches of 128 in every "
    "one (1.49-1.88x), the 70B's 1,500 in four of five (0.7.3: 735.6 s against 749.0). Derived from the page's "
    "own two tables, not from ours.")


def latency_bound_s(model: str, prompt: int, output: int, prompts: int) -> float | None:
    """The longest span the page's latency table allows for `prompts` requests of one shape: ceil(prompts / 128)
    successive batch-128 runs of benchmark_latency.py (None where the table has no row of the shape)."""
    seconds = AMD_VLLM_LATENCY_S.get((model, prompt, output))
    return None if seconds is None else -(-prompts // AMD_VLLM_LATENCY_BATCH) * seconds


def published_span_s(prompt: int, output: int, prompts: int, published: float, tokens: str) -> float:
    """The elapsed time a row's published figure means, read as `tokens` ("total" or "output") tokens/s."""
    return prompts * (output if tokens == "output" else prompt + output) / published


def amd_vllm_tokens_per_s(model: str, prompt: int, output: int, prompts: int, max_num_seqs: int,
                          tokens: str = "total") -> float:
    """Our tokens per second for one row: `prompts` requests at 0, prompts x (input + output) ("total") or
    prompts x output ("output") over the span to the last token."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.api import run_replicas
    from costmodel.serving.replica import build_replica
    from costmodel.serving.workload import Request

    cfg = costmodel.load_model(model)
    replica, step, _ = build_replica(cfg, load_hardware("mi300x"), **amd_vllm_options(max_num_seqs))
    requests = [Request(i, 0.0, prompt, output) for i in range(prompts)]
    rows, _, _ = run_replicas(requests, replica, step, 1, AMD_VLLM_MAX_MODEL_LEN, record=False)
    return published_span_s(prompt, output, prompts, 1.0, tokens) / max(r["finish_s"] for r in rows)


def print_amd_vllm() -> None:
    from reports.serving_published import record

    print(f"\nAMD's vLLM throughput table, all prompts at once. Source: {AMD_VLLM_SOURCE}\n")
    print("| model (ours) | in / out | prompts / max_num_seqs | published tok/s | ours (output tok/s) "
          "| ours / published | as total tok/s (before session 37) |")
    print("|---|---|---|---|---|---|---|")
    for table in AMD_VLLM_THROUGHPUT:
        for prompt, output, prompts, seqs, published in table["rows"]:
            ours = amd_vllm_tokens_per_s(table["model"], prompt, output, prompts, seqs, tokens="output")
            total = ours * (prompt + output) / output
            record("amd-vllm", f"{table['model']} {prompt}/{output} {prompts} prompts", "output tok/s", published,
                   ours)
            print(f"| {table['published_model']} ({table['model']}) | {prompt} / {output} | {prompts:,} / {seqs:,} "
                  f"| {published:,.1f} | {ours:,.0f} | {ours / published:.2f} | {total / published:.2f} |")
    print(f"\nThe reading: {AMD_VLLM_READING}")
