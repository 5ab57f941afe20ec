"""TensorRT-LLM's performance overview of release 0.9.0 (docs/source/performance/perf-overview.md as the fork
WhiteD2125/TensorRT-LLM stores it at commit 6ad7cf1bcc08e31990c62ba929a8e84f35667654: "All data was generated using
version 0.9.0"): static batches timed by gptSessionBenchmark (the page's "Benchmarking per Model": `gptSessionBenchmark
--engine_dir ... --warm_up 1 --batch_size $batch_size --duration 0 --num_runs 5 --input_output_len $in_out_dims`,
engines built with `--paged_kv_cache disable --context_fmha enable --gpt_attention_plugin float16 --strongly_typed`
from a config of "dtype": "float16" and "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, and
`export TRTLLM_ENABLE_XQA=1` for Llama2-70b). Two of its H100 FP8 tables: "Peak Throughput" ("Throughput (out
tok/s/GPU)" at a stated batch size, tp, input and output length) and "Low Latency" ("1st Token Latency (ms)" at
batch 1). Not used before session 40 (wt40_unseens): the trtllm-static table's rows are release 0.6.1's A100 page
and the v0.5.0 H200 launch note.

Kept (chosen before any was computed): the H100 FP8 rows of "LLaMA 7B" and "LLaMA 70B" (the page's build sections
name them Llama2-7b and Llama2-70b and give their configs), four throughput shapes and two first-token lengths
each: 12 figures. Left out: GPT-J 6B (no preset), Mistral 7B and Falcon 180B (to keep the set small), the H200,
L40S and A100 tables (another table's worth each).

Ours: the trtllm-static table's static_run (the `static` scheduler: the batch's requests start together and run in
lockstep; TensorRT-LLM's decoding code), FP8 weights (W8A8) and KV cache with fp16 activations, on h100-sxm; per GPU
as the page (ours over tp). Printed by `python benchmarks/serve_published.py trtllm-v090`.
"""

from __future__ import annotations

from benchmarks.published_trtllm_static import static_run
from reports.serving_published import record

TRTLLM_V090_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md as stored in the fork "
                      "WhiteD2125/TensorRT-LLM at 6ad7cf1b (release 0.9.0 data), 'H100 GPUs (FP8)': gptSessionBenchmark "
                      "static batches, 'Throughput (out tok/s/GPU)' and '1st Token Latency (ms)' at batch 1")
TRTLLM_V090_ASSUMED = (
    "decided and committed before any figure was computed: 'LLaMA 7B' and 'LLaMA 70B' as the llama2-7b and "
    "llama2-70b presets (the page's configs: 32 layers, hidden 4096, 32 KV heads, vocab 32000; 80 layers, hidden "
    "8192, intermediate 28672, 8 KV heads); the 'H100-HBM3-80GB' as h100-sxm, NVLink within the node; FP8 weights "
    "and activations in the projections (quant_algo FP8) and an FP8 KV cache, fp16 elsewhere; each decode step's "
    "attention one load of each KV head's cache (decode_kernel none: XQA, enabled for Llama2-70b, reads a KV head "
    "once for its group; Llama2-7b's heads are not grouped, so the masked MHA reads the same bytes); the throughput "
    "the batch's output tokens over the time to its last token, no warm-up or run-to-run spread; the first-token "
    "latency one request's prompt and its first token (output length 1); the all-reduce NCCL's (TensorRT-LLM's own "
    "all-reduce plugin not modelled); no host time.")
DECODE_KERNEL = None  # a FlashAttention-style decode: each KV head's cache loaded once (XQA for the GQA model)
# (page's model, preset, tp, batch, input, output, published out tok/s per GPU) -- "Peak Throughput", H100 FP8
THROUGHPUT = [
    ("LLaMA 7B", "llama2-7b", 1, 896, 128, 128, 19854), ("LLaMA 7B", "llama2-7b", 1, 120, 128, 2048, 6944),
    ("LLaMA 7B", "llama2-7b", 1, 84, 2048, 128, 2163), ("LLaMA 7B", "llama2-7b", 1, 56, 2048, 2048, 2826),
    ("LLaMA 70B", "llama2-70b", 2, 1024, 128, 128, 3214), ("LLaMA 70B", "llama2-70b", 4, 512, 128, 2048, 2725),
    ("LLaMA 70B", "llama2-70b", 2, 96, 2048, 128, 346), ("LLaMA 70B", "llama2-70b", 2, 64, 2048, 2048, 1011),
]
# (page's model, preset, tp, input, published first-token latency in ms at batch 1) -- "Low Latency", H100 FP8
FIRST_TOKEN = [
    ("LLaMA 7B", "llama2-7b", 1, 128, 6.3), ("LLaMA 7B", "llama2-7b", 1, 2048, 30.8),
    ("LLaMA 70B", "llama2-70b", 4, 128, 19.6), ("LLaMA 70B", "llama2-70b", 8, 2048, 85.1),
]
FORMATS = {"dtype": "fp16", "weight_dtype": "fp8", "kv_dtype": "fp8"}


#: The release's all-reduce (session 41, wt41_trtar, after the first computation: the 'assumed' NCCL above is superseded
#: by 0.9.0's trtllm-build default, use_custom_all_reduce enable; collectives.engine_all_reduce, "trtllm-custom")
RELEASE = "0.9.0"


def v090_run(model: str, tp: int, batch: int, prompt: int, output: int, hardware: str = "h100-sxm",
             decode_kernel: str | None = DECODE_KERNEL, formats: dict | None = None, context: int | None = None):
    """One static batch of the table's engine on an H100 SXM (benchmarks/published_trtllm_static.static_run), its
    tensor-parallel all-reduces the release's (TensorRT-LLM's own plugin kernel where it takes the call); hardware,
    decode_kernel, formats (FORMATS if None) and context (static_run's): the same page's other tables
    (published_trtllm_v090_l40s.py)."""
    from costmodel.collectives import engine_all_reduce

    return static_run(model, tp, batch, prompt, output, hardware, decode_kernel=decode_kernel,
                      all_reduce=engine_all_reduce("tensorrt-llm", RELEASE), context=context,
                      **(FORMATS if formats is None else formats))


def print_trtllm_v090() -> None:
    print(f"\nTensorRT-LLM 0.9.0, static batches. Source: {TRTLLM_V090_SOURCE}\n")
    print(f"Assumed: {TRTLLM_V090_ASSUMED}\n")
    print("| model (ours) | tp | batch | in | out | published out tok/s per GPU | ours per GPU | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for name, model, tp, batch, prompt, output, published in THROUGHPUT:
        timeline = v090_run(model, tp, batch, prompt, output)
        ours = batch * output / max(s.token_times[-1] for s in timeline.sequences) / tp
        record("trtllm-v090", f"{model} tp {tp} batch {batch} {prompt}/{output}", "out tok/s per GPU", published, ours)
        print(f"| {name} ({model}) | {tp} | {batch} | {prompt} | {output} | {published:,} | {ours:,.0f} "
              f"| {ours / published:.2f} |")
    print("\n| model (ours) | tp | in | published first token (ms), batch 1 | ours (ms) | ours / published |")
    print("|---|---|---|---|---|---|")
    for name, model, tp, prompt, published in FIRST_TOKEN:
        ours = 1e3 * v090_run(model, tp, 1, prompt, 1).sequences[0].token_times[0]
        record("trtllm-v090", f"{model} tp {tp} {prompt}", "first token ms, batch 1", published, ours)
        print(f"| {name} ({model}) | {tp} | {prompt} | {published} | {ours:.1f} | {ours / published:.2f} |")
