"""Qwen3's speed benchmark, the SGLang tables (QwenLM/Qwen2.5 repository, docs/source/getting_started/speed_benchmark.md
at commit ac7272455d45483d2f579a88295e81586d60ff6f, the Qwen3 page): "NVIDIA H20 96GB", "SGLang 0.4.6.post1",
"SGL-kernel 0.1.0", "PyTorch 2.6.0+cu124"; "Speed = (tokens_prompt + tokens_generation) / time", "a batch size of 1
and the minimum number of GPUs possible", "generating 2048 tokens, with input lengths of 1, 6144, 14336, 30720,
63488, and 129024 tokens", "mem_fraction_static=0.85", "context_length=140000 and enable_mixed_chunk=True",
"skip_tokenizer_init=True ... input_ids instead of raw text prompts". Not used before session 37 (wt37_unseens);
the Qwen2.5 page's vLLM tables are benchmarks/published_qwen_vllm.py.

Unlike the Qwen2.5 vLLM rows this speed counts the prompt's tokens too, so a long prompt's row is mostly a prefill
throughput: the rows test the prefill and the decode of one request on one replica together.

Ours: serve has no SGLang engine. The rows run serve's vllm scheduler (vLLM v1's: chunked prefill within a token
budget, decode steps graphed), the closest one in kind to SGLang 0.4's (a chunked prefill, enable_mixed_chunk
putting decode rows beside a chunk, CUDA graphs for decode batches), on the h20 preset at the row's GPU count as tp,
with one request of the row's input and 2,048 output tokens arriving at 0; ours = (input + 2,048) / the last token's
time. Every choice the page leaves open is in QWEN3_SGLANG_ASSUMED, written and committed before any figure was
computed.

    python benchmarks/serve_published.py qwen3-sglang
"""

from __future__ import annotations

QWEN3_SGLANG_SOURCE = ("QwenLM/Qwen2.5 docs/source/getting_started/speed_benchmark.md (commit ac72724), the Qwen3 "
                       "'(SGLang)' tables: H20 96GB, SGLang 0.4.6.post1, batch 1, 2,048 new tokens, speed = "
                       "(prompt + generated tokens) / time")
QWEN3_SGLANG_OUTPUT = 2048  # "generating 2048 tokens"
QWEN3_SGLANG_CONTEXT = 140000  # "context_length=140000"
QWEN3_SGLANG_MEMORY = 0.85  # "mem_fraction_static=0.85"
QWEN3_SGLANG_CHUNK = 8192  # assumed: SGLang 0.4's chunked_prefill_size default on a GPU of over 25 GB (QWEN3_SGLANG_ASSUMED)
QWEN3_SGLANG_MAX_NUM_SEQS = 256  # assumed: the budget's sequences; one request runs, so the cap never binds
QWEN3_SGLANG_INPUTS = (1, 6144, 14336, 30720, 63488, 129024)
# model (ours) -> (the page's model, GPU num, BF16 tokens/s at QWEN3_SGLANG_INPUTS; None where the page has no row).
# Kept: every BF16 row of the SGLang tables (FP8, GPTQ and AWQ rows are left out: not the checkpoints' dtype). The
# page prints the longest input as "129042" in its tables and as 129024 in its notes: taken as 129024. Qwen3-32B's
# longest row is on 2 GPUs ("TP=2"), its others on 1; Qwen3-235B-A22B's are on 8 ("TP=8").
QWEN3_SGLANG = {
    "qwen3-0.6b": ("Qwen3-0.6B", (1, 1, 1, 1, None, None), (414.17, 1426.46, 2478.02, 3577.42, None, None)),
    "qwen3-1.7b": ("Qwen3-1.7B", (1, 1, 1, 1, None, None), (227.80, 838.28, 1525.71, 2439.03, None, None)),
    "qwen3-4b": ("Qwen3-4B", (1,) * 6, (133.13, 466.19, 789.25, 1165.75, 1423.98, 1371.04)),
    "qwen3-8b": ("Qwen3-8B", (1,) * 6, (81.73, 296.25, 524.70, 832.67, 1112.78, 1173.32)),
    "qwen3-14b": ("Qwen3-14B", (1,) * 6, (47.10, 174.85, 317.56, 525.80, 742.36, 826.15)),
    "qwen3-32b": ("Qwen3-32B", (1, 1, 1, 1, 1, 2), (20.72, 77.82, 143.08, 240.75, 342.96, 711.40)),
    "qwen3-30b-a3b": ("Qwen3-30B-A3B", (1,) * 6, (137.18, 490.10, 849.62, 1283.94, 1538.79, 1385.65)),
    "qwen3-235b-a22b": ("Qwen3-235B-A22B", (8,) * 6, (74.50, 289.03, 546.73, 979.41, 1493.91, 1639.54)),
}
QWEN3_SGLANG_ASSUMED = (
    "decided and committed before any figure was computed: the H20 96GB as the h20 preset (its peaks as reported, no "
    "NVIDIA datasheet); bf16 weights, activations and KV cache (the BF16 rows, SGLang's dtype 'auto' and "
    "kv_cache_dtype 'auto'); SGLang 0.4.6.post1 as serve's vllm scheduler (vLLM v1's chunked prefill; serve has no "
    "SGLang engine) with a token budget of 8,192 (SGLang 0.4's ServerArgs chunked_prefill_size default for a GPU of "
    "over 25 GB, as recalled, not read at 0.4.6.post1's commit), 256 sequences a step, mem_fraction_static 0.85 as "
    "gpu_memory_utilization, block 16 (SGLang pages one token at a time; the pool's size, not the block, matters for "
    "one request), prefix caching off (RadixAttention is on in SGLang, but a request's own prompt shares nothing the "
    "first time; whether the page's timed run repeated a warm-up prompt is not stated: taken as not); the attention "
    "as serve's backend default flash-attn2 (SGLang 0.4.6 runs FlashInfer by default on Hopper; serve's flashinfer "
    "backend figures were not chosen, to keep the rows beside the other vLLM-scheduled tables); CUDA graphs as serve's "
    "vllm engine default (decode steps graphed, as SGLang's cuda_graph_max_bs covers batch 1; the 8,192-token "
    "prefill chunks eager in both); no host time between steps (SGLang's overlap scheduler; no profile of it is "
    "published) and no sampler priced (SGLang's sampler not read; the page states no sampling parameters); exactly "
    "2,048 output tokens (ignore_eos not stated: taken as the benchmark forcing the length); the prompt as the row's "
    "input length exactly (input_ids passed, so no template is added), 129042 as 129024; tp as the row's 'GPU Num'; "
    "Qwen3-30B-A3B's and -235B-A22B's experts as serve prices a MoE decode with its default code; the time as the "
    "request's end to end, its prefill included, from arrival at 0 (no queueing, no tokenization)")


def qwen3_sglang_rows() -> list[dict]:
    """The kept rows: model (ours), the page's model, tp, input tokens and published tokens/s."""
    return [{"model": model, "published_model": name, "tp": tp, "input": length, "published": rate}
            for model, (name, tps, rates) in QWEN3_SGLANG.items()
            for length, tp, rate in zip(QWEN3_SGLANG_INPUTS, tps, rates) if rate is not None]


def qwen3_sglang_tokens_per_s(model: str, tp: int, prompt: int) -> float:
    """Ours: one request of `prompt` tokens and QWEN3_SGLANG_OUTPUT new ones, alone on one replica, as
    QWEN3_SGLANG_ASSUMED states it: the prompt's and the output's tokens over the time of its last token."""
    from benchmarks.published_qwen_vllm import alone_token_times

    times = alone_token_times(
        model, "h20", prompt, QWEN3_SGLANG_OUTPUT, QWEN3_SGLANG_CONTEXT, scheduler="vllm", tp=tp, dtype="bf16",
        max_batched_tokens=QWEN3_SGLANG_CHUNK, max_num_seqs=QWEN3_SGLANG_MAX_NUM_SEQS,
        gpu_memory_utilization=QWEN3_SGLANG_MEMORY, prefix_caching=False, sampling=None)
    return (prompt + len(times)) / times[-1]


def print_qwen3_sglang() -> None:
    from benchmarks.published_qwen_vllm import print_speed_rows

    print_speed_rows("qwen3-sglang", "Qwen3's SGLang 0.4.6 speed benchmark on H20 96GB, one request at a time. "
                     f"Source: {QWEN3_SGLANG_SOURCE}", qwen3_sglang_rows(), qwen3_sglang_tokens_per_s)
