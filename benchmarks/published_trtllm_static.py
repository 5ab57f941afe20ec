"""TensorRT-LLM's static-batch figures beside the serving simulator's for the same setup (the first
tables of `python benchmarks/serve_published.py`, printed as Markdown; docs/serving.md holds a copy).

The A100 tables: TensorRT-LLM's documented performance (docs/source/performance.md at commit 138f96d,
"data updated for v0.6.1"; gptSessionBenchmark, i.e. static batches: B requests of the given
input and output lengths started together), A100 GPUs in FP16. Throughput is output tokens per
second of the batch; first-token latency is at batch 1. Ours: the `static` scheduler (Hugging
Face generate-style lockstep batches) with TensorRT-LLM's decoding code (DECODE_CODE) on the a100-80gb preset in fp16, same model, batch, lengths
and tensor parallelism, each decode step's attention the engine's masked MHA of that commit
(DECODE_KERNEL: each query head's thread block loads its KV head's cache, so Llama-2-70B's eight query
heads a KV head load it eight times; Llama-2-7B's heads are not grouped), a FlashAttention-style decode
(each KV head's cache loaded once) beside it. The A100 table's header reads "out tok/s" where the H100 table's reads
"out tok/s/GPU"; its tp > 1 rows agree with ours only per GPU, so both columns are printed.

Second table: TensorRT-LLM's H200 launch note (docs/source/blogs/H200launch.md at commits 1555478
and 2c39687: "H200 FP8 Max throughput", output tokens/s per GPU, TensorRT-LLM v0.5.0, TensorRT
9.1.0.4, preliminary), also static batches (the largest power-of-2 batch that fits); ours per GPU
too (a tp 2 run's tokens/s over 2). Ours: the static
scheduler on the h200 preset with FP8 weights and an FP8 KV cache (--weight-dtype fp8
--kv-dtype fp8), bf16 activations: the projections' GEMMs run W8A8 at the FP8 peak (--fp8-gemm
auto; costmodel/quantized_matmul.py runs_w8a8), the attention core in bf16, each decode step's attention the
engine's masked MHA (DECODE_KERNEL) as in the A100 table (since session 31; a FlashAttention-style decode beside
it, as before): the note's v0.5.0 precedes v0.6.1, whose generation phase is that kernel alone (gpt_attention.md at
138f96d names no other; the XQA kernel for MQA and GQA came later, docs/source/blogs/XQA-kernel.md), and the note
itself says "There have been significant improvements in v0.6 & later". The kernel's grid is read at 138f96d
(v0.6.1); v0.5.0's own file is not stored here, so its being the same kernel is the assumption.
"""

from __future__ import annotations

from costmodel.serving.replica import build_replica
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.workload import Request

SOURCE = "TensorRT-LLM docs/source/performance.md (commit 138f96d, v0.6.1 data), A100 FP16"
# The engine's generation-phase attention at that commit: its masked MHA (kernel_facts.json decode_attention_kernels)
DECODE_KERNEL = "trtllm-mmha"
# The engine's decoding code (costmodel/decode_codes.json "tensorrt-llm", read at 138f96d): its cache holds the
# model's KV heads and its attention reads an FP8 cache as stored; the static scheduler's own code is transformers'
# (generate's), which reads a quantized cache dequantized. Every row here runs TensorRT-LLM's code on the static
# schedule (session 31; before it the H200 FP8 rows read their cache at 2 bytes an element).
DECODE_CODE = "tensorrt-llm"
# (model, tp, batch, input, output, published output tokens/s) -- "Peak Throughput" table
THROUGHPUT = [
    ("llama2-7b", 1, 384, 128, 128, 5586),
    ("llama2-7b", 1, 60, 128, 2048, 1928),
    ("llama2-7b", 1, 52, 2048, 128, 591),
    ("llama2-7b", 2, 64, 2048, 2048, 782),
    ("llama2-70b", 4, 1280, 128, 128, 670),
    ("llama2-70b", 4, 240, 128, 2048, 525),
    ("llama2-70b", 4, 120, 2048, 128, 79),
]
# (model, tp, batch, input, output, published output tokens/s per GPU) -- "H200 FP8 Max throughput"
H200_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/blogs/H200launch.md (commits 1555478 and 2c39687), "
               "'H200 FP8 Max throughput', out tok/s/GPU, TensorRT-LLM v0.5.0 preliminary")
H200_FP8 = [
    ("llama2-13b", 1, 1024, 128, 128, 11819),
    ("llama2-13b", 1, 128, 128, 2048, 4750),
    ("llama2-13b", 1, 64, 2048, 128, 1349),
    ("llama2-70b", 1, 512, 128, 128, 3014),
    ("llama2-70b", 2, 512, 128, 2048, 1654),
    ("llama2-70b", 1, 64, 2048, 128, 341),
    ("llama2-70b", 1, 32, 2048, 128, 303),
]
# (model, tp, input, published first-token latency in ms at batch 1) -- "Low Latency" table (v0.5)
FIRST_TOKEN = [
    ("llama2-7b", 1, 128, 16), ("llama2-7b", 1, 2048, 133),
    ("llama2-70b", 4, 128, 47), ("llama2-70b", 4, 2048, 377),
]


def static_run(model: str, tp: int, batch: int, prompt: int, output: int, hardware: str = "a100-80gb",
               decode_kernel: str | None = None, context: int | None = None, **options):
    """One static batch of `batch` requests started together; context: the engine's longest sequence (None: the
    model's max_positions; a TensorRT-LLM engine built for its lengths holds max_input_len + max_output_len)."""
    import costmodel
    from costmodel.hardware import load_hardware

    cfg = costmodel.load_model(model)
    options = options or {"dtype": "fp16"}
    replica, step, _ = build_replica(cfg, load_hardware(hardware), scheduler="static", max_num_seqs=batch,
                                     tp=tp, num_blocks=10**9, host=False, decode_kernel=decode_kernel,
                                     decode_code=DECODE_CODE, **options)
    cls, blocks, block_size, seqs, tokens = replica
    requests = [Request(i, 0.0, prompt, output) for i in range(batch)]
    return simulate(requests, cls(BlockPool(blocks, block_size), seqs, tokens), step.seconds,
                    cfg.max_positions if context is None else context)


def print_static() -> None:
    from reports.serving_published import record

    print(f"Source: {SOURCE}\n")
    print("| model | tp | batch | in | out | published out tok/s | ours | ours per GPU | ours / published "
          "| per GPU / published | flash decode per GPU | / published |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, tp, batch, prompt, output, published in THROUGHPUT:
        rates = []
        for kernel in (DECODE_KERNEL, None):  # the engine's masked MHA; a FlashAttention-style decode beside it
            timeline = static_run(model, tp, batch, prompt, output, decode_kernel=kernel)
            rates.append(batch * output / max(s.token_times[-1] for s in timeline.sequences))
        ours, flash = rates
        record("trtllm-static", f"{model} tp {tp} batch {batch} {prompt}/{output}", "out tok/s per GPU", published,
               ours / tp)
        print(f"| {model} | {tp} | {batch} | {prompt} | {output} | {published:,} | {ours:,.0f} | {ours / tp:,.0f} "
              f"| {ours / published:.2f} | {ours / tp / published:.2f} | {flash / tp:,.0f} | {flash / tp / published:.2f} |")
    print("\n| model | tp | in | published first token (ms), batch 1 | ours (ms) | ours / published |")
    print("|---|---|---|---|---|---|")
    for model, tp, prompt, published in FIRST_TOKEN:
        timeline = static_run(model, tp, 1, prompt, 1)
        ours = 1e3 * timeline.sequences[0].token_times[0]
        record("trtllm-static", f"{model} tp {tp} {prompt}", "first token ms, batch 1", published, ours)
        print(f"| {model} | {tp} | {prompt} | {published} | {ours:.0f} | {ours / published:.2f} |")
    print(f"\nSource: {H200_SOURCE}\n")
    print("| model | tp | batch | in | out | published out tok/s per GPU | ours | ours / published "
          "| flash decode | / published |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, tp, batch, prompt, output, published in H200_FP8:
        rates = []
        for kernel in (DECODE_KERNEL, None):  # v0.5.0's masked MHA (before XQA); a FlashAttention-style decode
            timeline = static_run(model, tp, batch, prompt, output, "h200", decode_kernel=kernel, dtype="bf16",
                                  weight_dtype="fp8", kv_dtype="fp8")
            rates.append(batch * output / max(s.token_times[-1] for s in timeline.sequences) / tp)  # per GPU
        ours, flash = rates
        record("trtllm-h200", f"{model} tp {tp} batch {batch} {prompt}/{output}", "out tok/s per GPU", published, ours)
        print(f"| {model} | {tp} | {batch} | {prompt} | {output} | {published:,} | {ours:,.0f} | {ours / published:.2f} "
              f"| {flash:,.0f} | {flash / published:.2f} |")
