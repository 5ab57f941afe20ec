"""NVIDIA NIM's LLM benchmarking guide, "Performance" (https://docs.nvidia.com/nim/benchmarking/llm/
1.0.0/performance, and its Markdown at .../performance.md; the guide's 2.0.0 has no performance
page): tables of concurrency against TTFT (ms), ITL (ms) and throughput (tokens/s), measured with
AIPerf at a fixed concurrency (a closed loop: each client sends its next request when its
previous one ends). Kept: the Llama-3.3-70B-Instruct table of NIM 1.8.0 whose setup the stored
page states ("2 x H100 80G", "fp8 TP2", "5000 Input Tokens / 500 Output Tokens"; every row) and
the first row of the next one (500 input / 2,000 output tokens; the stored copy ends after it).
The throughput is output tokens per second (at concurrency 1: 500 / (0.40677 + 499 x 0.01858 s)
= 51.7, the table's 51.67), ITL the time per output token after the first. The page does not say,
in what is stored, which engine the container ran (NIM runs TensorRT-LLM or vLLM profiles) nor
whether its figures are means or medians (AIPerf reports both); the tables of Llama-3.1-8B and of
NIM 1.3.0/1.5.0 appear only without their setups (GPU, precision, lengths) and are left out.
Ours: `serve --concurrency N --scheduler vllm` on llama3-70b (Llama 3.3's architecture; its
context of 128K is not used by 5,500 tokens) on two h100-sxm as tp 2, FP8 weights and KV cache
(the projections W8A8 at the FP8 peak), vLLM's default budgets, 10 requests per client at the
table's fixed lengths; the means of TTFT and TPOT and the run's output tokens per second.

Printed by `python benchmarks/serve_published.py nim` (and with every table) as a Markdown table.
"""

from __future__ import annotations


NIM_SOURCE = ("NVIDIA NIM LLM benchmarking guide 1.0.0, Performance, https://docs.nvidia.com/nim/benchmarking/llm/"
              "1.0.0/performance.md, Llama-3.3-70b-instruct Results, Version 1.8.0")
NIM_REQUESTS_PER_CLIENT = 10  # ours: requests in all = 10 x concurrency (the page does not give AIPerf's count)
# The tables as the page types them: (concurrency, TTFT ms, ITL ms, throughput tokens/s).
NIM = [
    {"model": "llama3-70b", "published_model": "Llama-3.3-70B-Instruct", "version": "1.8.0",
     "gpus": "2 x H100 80G", "hardware": "h100-sxm", "tp": 2, "precision": "fp8", "prompt": 5000, "output": 500,
     "rows": [(1, 406.77, 18.58, 51.67), (5, 546.7, 21.83, 218.48), (25, 688.69, 38.75, 623.4),
              (50, 834.51, 59.73, 814.37), (100, 7996.25, 92.91, 917.26), (150, 34794.22, 92.86, 920.9),
              (200, 61680.22, 93.06, 920.54), (250, 88605.32, 93.2, 920.12)]},
    {"model": "llama3-70b", "published_model": "Llama-3.3-70B-Instruct", "version": "1.8.0",
     "gpus": "2 x H100 80G", "hardware": "h100-sxm", "tp": 2, "precision": "fp8", "prompt": 500, "output": 2000,
     "rows": [(1, 47.77, 18.91, 52.85)]},
]


def nim_options(table: dict) -> dict:
    """Our replica for a NIM table: vLLM's scheduler and default budgets, the table's tp, FP8
    weights and KV cache with bf16 activations (the projections W8A8 at the FP8 peak)."""
    return {"scheduler": "vllm", "tp": table["tp"], "dtype": "bf16", "weight_dtype": "fp8", "kv_dtype": "fp8",
            "sampling": None,  # the page names no engine (TensorRT-LLM or vLLM): no sampler priced,
            "all_reduce": "nccl"}  # nor whose all-reduce: NCCL's, not vLLM's custom one (collectives.engine_all_reduce)


def nim_row(table: dict, concurrency: int, requests: int | None = None) -> dict:
    """Ours at one concurrency: mean TTFT and TPOT (ms) and output tokens per second."""
    from costmodel.serving.api import serve

    run = serve(table["model"], table["hardware"], concurrency=concurrency,
                requests=requests or NIM_REQUESTS_PER_CLIENT * concurrency, prompt=str(table["prompt"]),
                output=str(table["output"]), seed=0, **nim_options(table))
    summary = run.summary()
    return {"ttft_ms": 1e3 * summary["ttft"]["mean"], "itl_ms": 1e3 * summary["tpot"]["mean"],
            "tokens_per_s": summary["throughput"]["output_tokens_per_s"]}


def print_nim() -> None:
    from reports.serving_published import record

    print(f"\nNVIDIA NIM at a fixed concurrency. Source: {NIM_SOURCE}\n")
    print("| model (ours) | GPUs | in / out | concurrency | TTFT ms: published | ours | ratio | ITL ms: published "
          "| ours | ratio | tokens/s: published | ours | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for table in NIM:
        for concurrency, ttft, itl, tokens in table["rows"]:
            ours = nim_row(table, concurrency)
            for metric, key, published in (("TTFT ms", "ttft_ms", ttft), ("ITL ms", "itl_ms", itl),
                                           ("tokens/s", "tokens_per_s", tokens)):
                record("nim", f"{table['prompt']}/{table['output']} concurrency {concurrency}", metric, published,
                       ours[key])
            print(f"| {table['published_model']} ({table['model']}) | {table['gpus']} {table['precision']} tp "
                  f"{table['tp']} | {table['prompt']} / {table['output']} | {concurrency} | {ttft:,.1f} "
                  f"| {ours['ttft_ms']:,.1f} | {ours['ttft_ms'] / ttft:.2f} | {itl:.2f} | {ours['itl_ms']:.2f} "
                  f"| {ours['itl_ms'] / itl:.2f} | {tokens:,.1f} | {ours['tokens_per_s']:,.1f} "
                  f"| {ours['tokens_per_s'] / tokens:.2f} |")
