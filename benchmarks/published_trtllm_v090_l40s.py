"""TensorRT-LLM 0.9.0's performance overview, its L40S FP8 tables and its A100 FP16 Mixtral rows
(docs/source/performance/perf-overview.md as the fork WhiteD2125/TensorRT-LLM stores it at commit
6ad7cf1bcc08e31990c62ba929a8e84f35667654, "All data was generated using version 0.9.0", the page
benchmarks/published_trtllm_v090.py typed the H100 FP8 rows of): static batches timed by gptSessionBenchmark
(`--warm_up 1 --batch_size $batch_size --duration 0 --num_runs 5 --input_output_len $in_out_dims`, engines built
with `--paged_kv_cache disable --context_fmha enable --gpt_attention_plugin float16 --strongly_typed`; FP8 engines
from a config of "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}; "To run the benchmarks below
on A100, you will need to undefine or remove the following quantization fields"; `export TRTLLM_ENABLE_XQA=1` for
Llama2-70b and Falcon-180B). "Peak Throughput": "Throughput (out tok/s/GPU)" at a stated batch size, tp, input and
output length; "Low Latency": "1st Token Latency (ms)" at batch 1. Not used before session 42 (wt42_unseens): session
40 typed the page's H100 FP8 LLaMA rows and left out "the H200, L40S and A100 tables (another table's worth each)";
no table held an L40S serving figure, nor Falcon-180B served.

Kept (chosen before any was computed), 30 figures: every L40S FP8 row of Mistral 7B, LLaMA 7B, LLaMA 70B and
Falcon 180B (four throughput shapes and two first-token lengths each: 24), and the A100 FP16 rows of Mixtral 8x7B
(four and two: 6). Left out: GPT-J 6B (no preset), the H200 tables (the H100's models again on a GPU other tables
cover), the A100's Mistral, LLaMA and Falcon rows (trtllm-static types release 0.6.1's A100 FP16 LLaMA rows).

Ours: published_trtllm_v090.v090_run (the trtllm-static table's static_run: the `static` scheduler, the batch's
requests started together and run in lockstep, TensorRT-LLM's decoding code; the release's all-reduce), on the l40s
and a100-80gb presets; per GPU as the page (ours over tp). Every other choice in TRTLLM_V090_L40S_ASSUMED, written
and committed before any figure was computed. Printed by `python benchmarks/serve_published.py trtllm-v090-l40s`.
"""

from __future__ import annotations

from benchmarks.published_trtllm_v090 import v090_run
from reports.serving_published import record

TRTLLM_V090_L40S_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md as stored in the fork "
                           "WhiteD2125/TensorRT-LLM at 6ad7cf1b (release 0.9.0 data), 'L40S GPUs (FP8)' and 'A100 GPUs "
                           "(FP16)' (Mixtral 8x7B): gptSessionBenchmark static batches, 'Throughput (out tok/s/GPU)' "
                           "and '1st Token Latency (ms)' at batch 1")
TRTLLM_V090_L40S_ASSUMED = (
    "decided and committed before any figure was computed: 'Mistral 7B' as the mistral-7b preset (v0.1, GQA with 8 "
    "KV heads, its 4,096-token sliding window; the page gives no config for it), 'LLaMA 7B' and 'LLaMA 70B' as "
    "llama2-7b and llama2-70b (the page's configs), 'Falcon 180B' as falcon-180b (the page's config: 80 layers, "
    "hidden 14848, 232 heads, 8 KV heads, parallel attention, bfloat16), 'Mixtral 8x7B' as mixtral-8x7b (no config "
    "given); the 'L40S' as the l40s preset (PCIe between GPUs, no NVLink), the 'A100' as a100-80gb (SXM, NVLink); on "
    "the L40S FP8 weights and activations in the projections and an FP8 KV cache with fp16 elsewhere (bf16 for "
    "Falcon 180B, its config's dtype), on the A100 fp16 throughout; each decode step's attention one load of each "
    "KV head's cache for LLaMA 7B (MHA: the masked MHA reads the same bytes), LLaMA 70B and Falcon 180B (XQA "
    "enabled for them), and the masked MHA (decode kernel 'trtllm-mmha': each query head loads its KV head's "
    "cache) for Mistral 7B and Mixtral 8x7B (GQA without XQA, which 0.9.0 left off by default and the page enables "
    "only for Llama2-70b and Falcon-180B); the throughput the batch's output tokens over the time to its last token "
    "(no warm-up or run-to-run spread), per GPU; the first-token latency one request's prompt and its first token "
    "(output length 1, batch 1 as the table states; the page's commands pass batch 64 or 32 with output 1); the "
    "all-reduce the release's (TensorRT-LLM's own plugin kernel where collectives.custom_all_reduce takes the call "
    "on that fabric, else NCCL's); no host time.")
FP8 = {"dtype": "fp16", "weight_dtype": "fp8", "kv_dtype": "fp8"}
# page's model -> (preset, hardware, formats, decode kernel)
MODELS = {
    "Mistral 7B": ("mistral-7b", "l40s", FP8, "trtllm-mmha"),
    "LLaMA 7B": ("llama2-7b", "l40s", FP8, None),
    "LLaMA 70B": ("llama2-70b", "l40s", FP8, None),
    "Falcon 180B": ("falcon-180b", "l40s", {**FP8, "dtype": "bf16"}, None),
    "Mixtral 8x7B": ("mixtral-8x7b", "a100-80gb", {"dtype": "fp16"}, "trtllm-mmha"),
}
# (page's model, batch, tp, input, output, published out tok/s per GPU) -- "Peak Throughput", L40S FP8 and A100 FP16
THROUGHPUT = [
    ("Mistral 7B", 896, 1, 128, 128, 9562), ("Mistral 7B", 120, 1, 128, 2048, 4387),
    ("Mistral 7B", 84, 1, 2048, 128, 971), ("Mistral 7B", 56, 1, 2048, 2048, 1721),
    ("LLaMA 7B", 256, 1, 128, 128, 5885), ("LLaMA 7B", 64, 1, 128, 2048, 1654),
    ("LLaMA 7B", 32, 1, 2048, 128, 574), ("LLaMA 7B", 16, 1, 2048, 2048, 537),
    ("LLaMA 70B", 256, 2, 128, 128, 562), ("LLaMA 70B", 256, 4, 128, 2048, 478),
    ("LLaMA 70B", 16, 2, 2048, 128, 49), ("LLaMA 70B", 64, 4, 2048, 2048, 185),
    ("Falcon 180B", 512, 8, 128, 128, 152), ("Falcon 180B", 256, 8, 128, 2048, 200),
    ("Falcon 180B", 32, 8, 2048, 128, 15), ("Falcon 180B", 32, 8, 2048, 2048, 52),
    ("Mixtral 8x7B", 512, 2, 128, 128, 2842), ("Mixtral 8x7B", 128, 2, 128, 2048, 1724),
    ("Mixtral 8x7B", 64, 2, 2048, 128, 319), ("Mixtral 8x7B", 32, 2, 2048, 2048, 801),
]
# (page's model, tp, input, published first-token latency in ms at batch 1) -- "Low Latency", L40S FP8 and A100 FP16
FIRST_TOKEN = [
    ("Mistral 7B", 1, 128, 15.4), ("Mistral 7B", 1, 2048, 87.3),
    ("LLaMA 7B", 1, 128, 14.1), ("LLaMA 7B", 1, 2048, 80.1),
    ("LLaMA 70B", 8, 128, 70.4), ("LLaMA 70B", 4, 2048, 673.3),
    ("Falcon 180B", 8, 128, 91.0), ("Falcon 180B", 8, 2048, 768.8),
    ("Mixtral 8x7B", 2, 128, 23.8), ("Mixtral 8x7B", 2, 2048, 160.9),
]


# Falcon-180B's engines are built per shape ("a custom engine per batch size, input/output sequence length":
# trtllm-build --max_input_len $isl --max_output_len $osl), so its longest sequence is the row's input + output,
# past the 2,048 of its config's max_position_embeddings at every shape but 128 / 128 and 128 / 1 (added after the first run
# stopped on that limit at the first such row, before any figure was printed; no row or other setting changed).
PER_SHAPE_ENGINE = {"Falcon 180B"}


def l40s_run(name: str, tp: int, batch: int, prompt: int, output: int):
    """One static batch of the page's model on its GPU, as MODELS sets it (published_trtllm_v090.v090_run)."""
    model, hardware, formats, kernel = MODELS[name]
    context = prompt + output if name in PER_SHAPE_ENGINE else None
    return v090_run(model, tp, batch, prompt, output, hardware=hardware, decode_kernel=kernel, formats=formats,
                    context=context)


def gpu_of(name: str) -> str:
    return "L40S FP8" if MODELS[name][1] == "l40s" else "A100 FP16"


def print_trtllm_v090_l40s() -> None:
    print(f"\nTensorRT-LLM 0.9.0, static batches on L40S (FP8) and A100 (FP16). Source: {TRTLLM_V090_L40S_SOURCE}\n")
    print(f"Assumed: {TRTLLM_V090_L40S_ASSUMED}\n")
    print("| model (ours) | GPU | tp | batch | in | out | published out tok/s per GPU | ours per GPU | ours / published |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, batch, tp, prompt, output, published in THROUGHPUT:
        model, gpu = MODELS[name][0], gpu_of(name)
        timeline = l40s_run(name, tp, batch, prompt, output)
        ours = batch * output / max(s.token_times[-1] for s in timeline.sequences) / tp
        record("trtllm-v090-l40s", f"{model} {gpu} tp {tp} batch {batch} {prompt}/{output}", "out tok/s per GPU",
               published, ours)
        print(f"| {name} ({model}) | {gpu} | {tp} | {batch} | {prompt} | {output} | {published:,} | {ours:,.0f} "
              f"| {ours / published:.2f} |")
    print("\n| model (ours) | GPU | tp | in | published first token (ms), batch 1 | ours (ms) | ours / published |")
    print("|---|---|---|---|---|---|---|")
    for name, tp, prompt, published in FIRST_TOKEN:
        model, gpu = MODELS[name][0], gpu_of(name)
        ours = 1e3 * l40s_run(name, tp, 1, prompt, 1).sequences[0].token_times[0]
        record("trtllm-v090-l40s", f"{model} {gpu} tp {tp} {prompt}", "first token ms, batch 1", published, ours)
        print(f"| {name} ({model}) | {gpu} | {tp} | {prompt} | {published} | {ours:.1f} | {ours / published:.2f} |")
