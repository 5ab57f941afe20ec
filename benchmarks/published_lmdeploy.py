"""LMDeploy's "Benchmark on A100 (FP16)" (InternLM/lmdeploy docs/en/benchmark/a100_fp16.md, added in commit
ebe90bc94, 2023-12-06, "Report the inference benchmark of models with different size (#794)"; the same table at
3e391df): "All the following results are tested on (x8) A100-80G CUDA 11.8. The tested lmdeploy version is
`v0.1.0a1`." Its "Static Inference Benchmark" tables: TurboMind (LMDeploy's C++ engine) on Llama 2 7B and 13B at
tp 1 and Llama 2 70B at tp 4, FP16, at concurrency 1, 16, 32 and 64 and five fixed shapes (prompt / output
tokens 1 / 128, 128 / 128, 128 / 2048, 2048 / 128, 2048 / 2048); the figure kept is "throughput(out tok/s)".

How the figure is measured (benchmark/profile_generation.py at ebe90bc94): `concurrency` threads start at once,
each sends `test_round` requests one after another (default 6, after one untimed warm-up round) with the same
random prompt of exactly `prompt` tokens and `ignore_eos=True` for `output` tokens; the throughput is
concurrency x 6 x output tokens over the wall time from the threads' start to the last one's end: a closed loop.

The engine's settings (benchmark/benchmark_{7b,13b,70b}.sh at ebe90bc94, written into the converted model's
config.ini): max_batch_size 128 (7B, 13B) or 256 (70B); cache_max_entry_count 1000, 500 or 4000, which TurboMind
v0.1.0a1 reads as a count of KV blocks when it is 1 or more (src/turbomind/models/llama/BlockManager.cc), each
block of cache_block_seq_len 128 tokens (its default, LlamaTritonModel.cc handleMissingParams); cache_chunk_size
-1 (every block allocated at start); max_context_token_num 4, which LlamaTritonModel.cc multiplies by session_len
when it is at most max_batch_size: 4 x 4,096 (lmdeploy/model.py's Llama2 session_len) = 16,384 prompt tokens a
step. Its loop (LlamaBatch.cc InternalThreadEntry at v0.1.0a1): admit what the blocks allow (a sequence short of
blocks is evicted, its blocks cached, recomputed if taken), prefill the newcomers (ContextDecode: prompt - 1
tokens), then one decode step for every active sequence; no CUDA graphs in its source.

Ours: `serve` in a closed loop (concurrency clients, 6 requests each, the table's fixed lengths) with vLLM v0's
scheduler (prefills first, whole prompts within the token budget, recompute preemption: the nearest of ours to
TurboMind's loop), the scripts' block counts, block size, batch caps and token budget, fp16, no CUDA graphs, on
the a100-80gb preset; the figure as the script's: output tokens over the span to the last token.

    python benchmarks/serve_published.py lmdeploy
"""

from __future__ import annotations

LMDEPLOY_SOURCE = ("InternLM/lmdeploy docs/en/benchmark/a100_fp16.md (commit ebe90bc94, 2023-12-06), 'Static Inference "
                   "Benchmark', lmdeploy v0.1.0a1 (TurboMind), A100-80G, FP16, throughput(out tok/s)")
LMDEPLOY_ROUNDS = 6  # profile_generation.py --test-round's default: requests per client
LMDEPLOY_SESSION_LEN = 4096  # lmdeploy/model.py (v0.1.0a1), class Llama2: session_len=4096
LMDEPLOY_BLOCK_TOKENS = 128  # cache_block_seq_len's default (LlamaTritonModel.cc handleMissingParams)
# One entry per model: the script's tp, max_batch_size and cache_max_entry_count (blocks), and the table's rows:
# (concurrency, prompt tokens, output tokens, published output tokens/s).
LMDEPLOY = [
    {"model": "llama2-7b", "published_model": "llama2-7b", "tp": 1, "max_batch_size": 128, "blocks": 1000,
     "rows": [(1, 1, 128, 100.02), (1, 128, 128, 102.21), (1, 128, 2048, 98.92), (1, 2048, 128, 86.1),
              (1, 2048, 2048, 93.78), (16, 1, 128, 1504.72), (16, 128, 128, 1272.47), (16, 128, 2048, 1010.62),
              (16, 2048, 128, 348.87), (16, 2048, 2048, 601.63), (32, 1, 128, 2136.73), (32, 128, 128, 2125.47),
              (32, 128, 2048, 1462.12), (32, 2048, 128, 450.43), (32, 2048, 2048, 733.34), (64, 1, 128, 4154.81),
              (64, 128, 128, 3024.07), (64, 128, 2048, 1852.06), (64, 2048, 128, 493.46),
              (64, 2048, 2048, 755.65)]},
    {"model": "llama2-13b", "published_model": "llama2-13b", "tp": 1, "max_batch_size": 128, "blocks": 500,
     "rows": [(1, 1, 128, 57.49), (1, 128, 128, 56.58), (1, 128, 2048, 55.29), (1, 2048, 128, 48.99),
              (1, 2048, 2048, 52.12), (16, 1, 128, 869.45), (16, 128, 128, 757.3), (16, 128, 2048, 605.88),
              (16, 2048, 128, 257.92), (16, 2048, 2048, 366.67), (32, 1, 128, 1667.5), (32, 128, 128, 1301.27),
              (32, 128, 2048, 860.14), (32, 2048, 128, 291.54), (32, 2048, 2048, 389.64), (64, 1, 128, 3049.16),
              (64, 128, 128, 2033.22), (64, 128, 2048, 998.86), (64, 2048, 128, 286.32),
              (64, 2048, 2048, 387.86)]},
    {"model": "llama2-70b", "published_model": "llama2-70b", "tp": 4, "max_batch_size": 256, "blocks": 4000,
     "rows": [(1, 1, 128, 33.94), (1, 128, 128, 33.63), (1, 128, 2048, 32.38), (1, 2048, 128, 28.32),
              (1, 2048, 2048, 31.9), (16, 1, 128, 468.52), (16, 128, 128, 439.77), (16, 128, 2048, 482.99),
              (16, 2048, 128, 189.34), (16, 2048, 2048, 399.42), (32, 1, 128, 906.03), (32, 128, 128, 746.36),
              (32, 128, 2048, 853.56), (32, 2048, 128, 232.6), (32, 2048, 2048, 636.23), (64, 1, 128, 1425.79),
              (64, 128, 128, 1159.84), (64, 128, 2048, 1391.8), (64, 2048, 128, 270.47),
              (64, 2048, 2048, 930.46)]},
]
LMDEPLOY_ASSUMED = (
    "decided before any row was computed: the A100-80G as the a100-80gb preset (the SXM board; the page does not "
    "say SXM or PCIe); Llama 2 7B, 13B and 70B as the llama2-7b, llama2-13b and llama2-70b presets in fp16; "
    "TurboMind v0.1.0a1's loop as serve's vllm-v0 scheduler (prefill-only steps before decode steps, whole prompts "
    "within 16,384 tokens, recompute preemption when the blocks run out: TurboMind evicts a sequence short of "
    "blocks and recomputes it if its cached blocks were taken), its kernels as the kernel time model's (its own "
    "GEMMs after the scripts' GEMM tuning and its own decoding attention not modelled apart), no CUDA graphs; "
    "the 70B's all-reduces as NCCL's curve (TurboMind's custom all-reduce off by default); the engine settings as "
    "the scripts at ebe90bc94 set them (the 70B script's generation concurrencies are 1 64 128 256, the table's "
    "1 16 32 64: the table's rows kept, the script's cache and batch settings taken); the blocks per rank as "
    "blocks of the replica (each rank holds its heads' share of every token); prompts of random ids with nothing "
    "shared (no prefix caching in TurboMind v0.1); TurboMind prefills prompt - 1 tokens and decodes every output "
    "token, ours prefills the prompt and decodes output - 1 (one decode step a request fewer, at most 1/128 of "
    "a row's steps); the clients' Python threads, streaming and detokenizing on the host not modelled; the warm-up "
    "round outside the timed span, as the script's")


def lmdeploy_options(table: dict) -> dict:
    """build_replica's options for one model: the script's engine settings under vllm-v0."""
    return {"scheduler": "vllm-v0", "tp": table["tp"], "max_num_seqs": table["max_batch_size"],
            "max_batched_tokens": 4 * LMDEPLOY_SESSION_LEN, "block_size": LMDEPLOY_BLOCK_TOKENS,
            "num_blocks": table["blocks"], "dtype": "fp16", "cuda_graphs": "off",
            "sampling": None,  # TurboMind's sampling layers (C++) are not vLLM's and were not read
            "all_reduce": "nccl"}  # TurboMind's custom all-reduce off by default (LMDEPLOY_ASSUMED), not vLLM's


def lmdeploy_tokens_per_s(table: dict, concurrency: int, prompt: int, output: int,
                          rounds: int = LMDEPLOY_ROUNDS) -> float:
    """Our output tokens per second for one row: `concurrency` clients in a closed loop, `rounds`
    requests each, all output tokens over the span from 0 to the last token."""
    from costmodel.serving.api import serve

    run = serve(table["model"], "a100-80gb", requests=concurrency * rounds, concurrency=concurrency,
                prompt=str(prompt), output=str(output), seed=0, **lmdeploy_options(table))
    return float(run.requests["output_tokens"].sum() / run.requests["finish_s"].max())


def print_lmdeploy() -> None:
    from reports.serving_published import record

    print(f"\nLMDeploy's static inference benchmark, closed loop. Source: {LMDEPLOY_SOURCE}\n")
    print("| model (ours) | tp | concurrency | prompt / output | published out tok/s | ours | ours / published |")
    print("|---|---|---|---|---|---|---|")
    for table in LMDEPLOY:
        for concurrency, prompt, output, published in table["rows"]:
            ours = lmdeploy_tokens_per_s(table, concurrency, prompt, output)
            record("lmdeploy", f"{table['model']} concurrency {concurrency} {prompt}/{output}", "out tok/s", published,
                   ours)
            print(f"| {table['published_model']} ({table['model']}) | {table['tp']} | {concurrency} | {prompt} / "
                  f"{output} | {published:,.2f} | {ours:,.1f} | {ours / published:.2f} |")
