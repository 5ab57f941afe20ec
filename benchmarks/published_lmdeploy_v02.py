"""LMDeploy's later TurboMind request-throughput figures, not used before session 39 (wt39_unseens): two tables of
InternLM/lmdeploy's docs, each ShareGPT through benchmark/profile_throughput.py (a closed loop: `concurrency`
threads pull the sampled prompts from one queue, each stream_infer with ignore_eos for the completion's length).

1. docs/en/benchmark/a100_fp16.md at f148d471f (2024-04-07; the table as 9e4205613 rewrote it, 2024-01-15):
   "All the following results are tested on A100-80G(x8) CUDA 11.8. The tested lmdeploy version is `v0.2.0`",
   "Request Throughput Benchmark", "FP16": llama2-7b (batch 256, tp 1), llama2-13b (128, 1), internlm-20b
   (128, 2; no preset, left out) and llama2-70b (256, 4), num_promts 3000, RPS, FTL(ave/min/max) (s), the
   token latency percentiles, throughput(out tok/s) and throughput(total tok/s). The run (benchmark/benchmark.sh
   at 9e4205613, benchmark_rpm): `profile_throughput.py DATASET MODEL --concurrency $batch --num_prompts 3000`
   with the engine settings benchmark/config/llama_{7b,13b,70b}.ini write into the converted model's
   config.ini: cache_max_entry_count 1000 / 500 / 4000 (BlockManager.cc at v0.2.0: a count of blocks when it
   is 1 or more) and max_batch_size 256 / 128 / 256; the converter's defaults (turbomind/deploy/target_model/
   base.py at 9e4205613): cache_block_seq_len 128, max_context_token_num 1, which LlamaTritonModel.cc (v0.2.0)
   multiplies by session_len (4,096, lmdeploy/model.py's Llama 2) when it is at most max_batch_size: 4,096
   prompt tokens a step. profile_throughput.py at 9e4205613: random.seed(0), sample_requests keeps ShareGPT's
   first two turns and drops prompts or completions under 4 tokens, prompts over 1,024 and pairs over 2,048
   (Llama 2's tokenizer), random.sample(3000); each request's first-token latency is its own (the timer starts
   at each request), FTL(ave) their mean; RPS = 3000 / the wall time; out tok/s = generated tokens / the time.
2. docs/en/quantization/kv_quant.md at 3247e22c3 (2024-04-16, main after v0.3.0: "please install lmdeploy from
   source ... because lmdeploy hasn't released this feature yet"), "Performance": RPS of llama2-chat-7b (tp 1,
   ratio 0.8, bs 256, 10,000 prompts) and llama2-chat-13b (ratio 0.9, bs 128 for fp16, 256 for int8 and int4)
   with the KV cache in fp16, int8 and int4 ("The performance data is obtained by benchmark/profile_throughput.py";
   no GPU named). Kept: the fp16 and int8 rows of the two Llama 2 models (serve has no int4 KV cache;
   internlm2-chat-7b has no preset). The engine's settings at v0.3.0: TurbomindEngineConfig's
   cache_max_entry_count as a share of the free memory (BlockManager.cc GetBlockCount: free x ratio / block),
   profile_throughput's max_batch_size = --concurrency, session_len 4,096, cache_block_seq_len 64,
   max_prefill_token_num 8,192 (lmdeploy/messages.py at v0.3.0).

Ours: `serve`'s closed loop (the row's concurrency as clients) with vllm-v0 standing for TurboMind's loop, as the
lmdeploy and lmdeploy-rpm tables run it; every choice the pages leave open in LMDEPLOY_V02_ASSUMED, written and
committed before any figure was computed.

    python benchmarks/serve_published.py lmdeploy-v02
"""

from __future__ import annotations

LMDEPLOY_V02_SOURCE = ("InternLM/lmdeploy docs/en/benchmark/a100_fp16.md (commit f148d471f, lmdeploy v0.2.0, "
                       "'Request Throughput Benchmark', FP16) and docs/en/quantization/kv_quant.md (commit 3247e22c3, "
                       "'Performance'): TurboMind, profile_throughput.py, ShareGPT, closed loop")
LMDEPLOY_V02_SESSION_LEN = 4096  # lmdeploy/model.py's Llama 2 session_len (v0.2.0); profile_throughput's default (v0.3.0)
# Table 1, as the page types it: (model, batch, tp, num_prompts, RPS, FTL ave s, FTL min s, FTL max s,
# out tok/s, total tok/s), and the ini's engine settings (cache_max_entry_count blocks, max_batch_size).
LMDEPLOY_V02 = [
    ("llama2-7b", 256, 1, 3000, 14.556, 0.526, 0.092, 4.652, 3387.419, 6981.159),
    ("llama2-13b", 128, 1, 3000, 7.950, 0.352, 0.075, 4.193, 1850.145, 3812.978),
    ("llama2-70b", 256, 4, 3000, 7.231, 1.075, 0.139, 14.524, 1682.738, 3467.969),
]
LMDEPLOY_V02_ENGINE = {"llama2-7b": (1000, 256), "llama2-13b": (500, 128), "llama2-70b": (4000, 256)}
LMDEPLOY_V02_BLOCK = 128  # cache_block_seq_len, turbomind/deploy/target_model/base.py at 9e4205613
LMDEPLOY_V02_BUDGET = 1 * LMDEPLOY_V02_SESSION_LEN  # max_context_token_num 1 x session_len (LlamaTritonModel.cc)
# Table 2, the kept rows: (model, kv type, tp, cache ratio, batch, num_prompts, RPS).
LMDEPLOY_KV = [
    ("llama2-7b", "fp16", 1, 0.8, 256, 10000, 14.98),
    ("llama2-7b", "int8", 1, 0.8, 256, 10000, 19.01),
    ("llama2-13b", "fp16", 1, 0.9, 128, 10000, 8.55),
    ("llama2-13b", "int8", 1, 0.9, 256, 10000, 10.96),
]
LMDEPLOY_KV_BLOCK = 64  # TurbomindEngineConfig.cache_block_seq_len, lmdeploy/messages.py at v0.3.0
LMDEPLOY_KV_BUDGET = 8192  # TurbomindEngineConfig.max_prefill_token_num, lmdeploy/messages.py at v0.3.0
LMDEPLOY_V02_ASSUMED = (
    "decided and committed before any figure was computed: TurboMind's loop as serve's vllm-v0 scheduler (prefill "
    "steps before decode steps within the token budget, recompute preemption), as the lmdeploy and lmdeploy-rpm "
    "tables; fp16 weights and activations, no CUDA graphs, no sampler priced (TurboMind's C++ sampling not read), "
    "the 70B's all-reduce NCCL's curve; the A100-80G as the a100-80gb preset (table 2 names no GPU: its sibling "
    "pages and benchmark_turbomind_engine_a100.sh are A100-80G runs, so A100-80G too); the requests: vLLM's "
    "ShareGPT sample (sharegpt_vllm_lengths_5000.json: the same filter, prompts and completions of at least 4 "
    "tokens, prompts at most 1,024, pairs at most 2,048, counted with Llama 3.1's tokenizer, not Llama 2's, and "
    "not lmdeploy's seeded draw), its first 3,000 pairs for table 1 and its 5,000 pairs twice over, in order, for "
    "table 2's 10,000; all handed to the clients at 0 (the queue), each client sending its next request when its "
    "previous one ends, no think time, the threads' Python tokenizing, streaming and detokenizing not priced; "
    "exactly the completion's length generated (ignore_eos). Table 1: blocks of 128 tokens, the ini's block "
    "counts and max_batch_size per replica (each rank holds its heads' share of every block), 4,096 prompt "
    "tokens a step; fed: RPS (3,000 / the span to the last token), FTL(ave) (the mean over the 3,000 requests of "
    "their time from being sent to the first token) and out tok/s (generated tokens / the span); not fed: PRM, "
    "FTL min/max, the percentiles, total tok/s. Table 2: blocks of 64 tokens, the row's batch as max_batch_size "
    "and clients, 8,192 prompt tokens a step, the blocks cache_max_entry_count x (the preset's usable memory less "
    "our weights per GPU) / our block's bytes (TurboMind sizes its pool from the free memory after the weights), "
    "the int8 rows as serve's int8 KV cache (kv_dtype int8: LMDeploy's quant_policy 8, per-head per-token "
    "asymmetric int8), the rest of the step as fp16; fed: RPS only (the page's one figure)")


def lmdeploy_v02_pairs(count: int) -> list[tuple[int, int]]:
    """The first `count` (prompt, output) pairs of vLLM's 5,000-pair ShareGPT sample, taken in order and from the
    start again past its end (table 2's 10,000 prompts)."""
    from benchmarks.published_lengths import sharegpt_lengths
    from benchmarks.serve_published import SGLANG_VLLM_LENGTHS

    pairs = sharegpt_lengths(SGLANG_VLLM_LENGTHS)
    return [pairs[i % len(pairs)] for i in range(count)]


def lmdeploy_v02_options(model: str, tp: int, batch: int, table: int, kv: str = "fp16", ratio: float | None = None,
                         ) -> dict:
    """build_replica's options for a row of table 1 (table=1: the ini's blocks and batch cap) or table 2 (table=2:
    the blocks from `ratio` of the memory the weights leave, the row's batch, `kv` fp16 or int8)."""
    common = {"scheduler": "vllm-v0", "tp": tp, "dtype": "fp16", "cuda_graphs": "off", "sampling": None,
              "all_reduce": "nccl"}  # TurboMind's, not vLLM's custom all-reduce (the scheduler's default engine)
    if table == 1:
        blocks, max_batch = LMDEPLOY_V02_ENGINE[model]
        return {**common, "max_num_seqs": max_batch, "max_batched_tokens": LMDEPLOY_V02_BUDGET,
                "block_size": LMDEPLOY_V02_BLOCK, "num_blocks": blocks}
    options = {**common, "max_num_seqs": batch, "max_batched_tokens": LMDEPLOY_KV_BUDGET,
               "block_size": LMDEPLOY_KV_BLOCK, **({"kv_dtype": kv} if kv != "fp16" else {})}
    return {**options, "num_blocks": ratio_blocks(model, ratio, options)}


def ratio_blocks(model: str, ratio: float, options: dict) -> int:
    """TurboMind's pool under cache_max_entry_count < 1: `ratio` of the memory free after the weights (ours: the
    preset's usable memory less our weight bytes per GPU), in blocks of our block bytes under `options`."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    sizings: dict = {}
    build_replica(costmodel.load_model(model), load_hardware("a100-80gb"), sizings=sizings, **options)
    (sizing,) = sizings.values()
    return int(ratio * (sizing.memory_bytes - sizing.weight_bytes)) // sizing.block_bytes


def lmdeploy_v02_run(model: str, batch: int, prompts: int, options: dict) -> dict:
    """Ours for one row: `batch` clients in a closed loop over the first `prompts` pairs; RPS, the mean TTFT (s)
    and the output tokens a second, each over the span from 0 to the last token."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.api import run_replicas
    from costmodel.serving.replica import build_replica
    from costmodel.serving.workload import Request

    chosen = [Request(i, 0.0, prompt, output) for i, (prompt, output) in enumerate(lmdeploy_v02_pairs(prompts))]
    replica, step, _ = build_replica(costmodel.load_model(model), load_hardware("a100-80gb"), **options)
    rows, _, _ = run_replicas(chosen, replica, step, 1, LMDEPLOY_V02_SESSION_LEN, record=False, concurrency=batch)
    span = max(row["finish_s"] for row in rows)
    return {"rps": len(rows) / span, "ftl_ave_s": sum(row["ttft_s"] for row in rows) / len(rows),
            "out_tokens_per_s": sum(row["output_tokens"] for row in rows) / span}


def print_lmdeploy_v02() -> None:
    from reports.serving_published import record

    print(f"\nLMDeploy v0.2.0 / v0.3-era request throughput, closed loop. Source: {LMDEPLOY_V02_SOURCE}\n")
    print("| table | model | tp | batch (clients) | KV | prompts | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, batch, tp, prompts, rps, ftl, _, _, out, _ in LMDEPLOY_V02:
        ours = lmdeploy_v02_run(model, batch, prompts, lmdeploy_v02_options(model, tp, batch, 1))
        for published, key, name in ((rps, "rps", "RPS"), (ftl, "ftl_ave_s", "FTL ave (s)"),
                                     (out, "out_tokens_per_s", "out tok/s")):
            record("lmdeploy-v02", f"v0.2.0 {model} batch {batch}", name, published, ours[key])
            print(f"| v0.2.0 | {model} | {tp} | {batch} | fp16 | {prompts:,} | {name} | {published:,.3f} "
                  f"| {ours[key]:,.3f} | {ours[key] / published:.2f} |")
    for model, kv, tp, ratio, batch, prompts, rps in LMDEPLOY_KV:
        ours = lmdeploy_v02_run(model, batch, prompts, lmdeploy_v02_options(model, tp, batch, 2, kv, ratio))
        record("lmdeploy-v02", f"kv {kv} {model} batch {batch}", "RPS", rps, ours["rps"])
        print(f"| kv_quant | {model} | {tp} | {batch} | {kv} (ratio {ratio}) | {prompts:,} | RPS | {rps:,.3f} "
              f"| {ours['rps']:,.3f} | {ours['rps'] / rps:.2f} |")
