"""Qwen2.5's speed benchmark, the vLLM tables (QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst at commit
a912d239c2d0e2e5d10bb8d02e6f5685edb43e68, 2024-11-06; first added by 0f0ecfb, 2024-10-30): "NVIDIA A100 80GB, CUDA
12.1, vLLM 0.6.3, Pytorch 2.4.0, Flash Attention 2.6.3, Transformers 4.46.0", "the batch size of 1 and the least
number of GPUs as possible", "generating 2048 tokens with the input lengths of 1, 6144, 14336, 30720, 63488, and
129024 tokens", "gpu_memory_utilization=0.9 max_model_len=32768 enforce_eager=False by default"; Speed(tokens/s) of
one request at a time. Not used before session 29 (the transformers tables are decoding rows in
costmodel/published_runs.json, "qwen2.5-speed-hf").

The script the docs point to, examples/speed-benchmark/speed_benchmark_vllm.py (commit 8205ba2, 2024-11-18): LLM(
model, tensor_parallel_size=len(gpus), gpu_memory_utilization, max_model_len, enforce_eager=False), one
llm.generate([query], SamplingParams(temperature=1.0, top_p=0.8, top_k=-1, repetition_penalty=0.1,
presence_penalty=-2.0, frequency_penalty=-2.0, max_tokens=output_len)) timed by time.time(), retried with another
query if fewer than output_len tokens came back, and tokens/s = output_len / time (collect_statistics).

Ours: serve's vllm-v0 scheduler (vLLM 0.6.3 is a v0 engine; chunked prefill off: 0.6.3 turns it on by itself only
past a 32K max_model_len, and 32,768 is not past it) with one request of the row's input and 2,048 output tokens
arriving at 0 on one replica on the a100-80gb preset at the row's tp, its decode graphs as graphs.py has vLLM v0's
(max_seq_len_to_capture 8,192: the steps past it eager), vLLM v0.6.0's host time a step (host_time.json); ours =
2,048 / the last token's time. Every choice the docs leave open is in QWEN_VLLM_ASSUMED, written before any figure
was computed.

    python benchmarks/serve_published.py qwen-vllm
"""

from __future__ import annotations

QWEN_VLLM_SOURCE = ("QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst (commit a912d23), the '(vLLM)' tables: "
                    "A100 80GB, vLLM 0.6.3, batch 1, 2,048 new tokens; examples/speed-benchmark/speed_benchmark_vllm.py "
                    "at 8205ba2")
QWEN_VLLM_OUTPUT = 2048  # --generate_length's default, "generating 2048 tokens"
QWEN_VLLM_MAX_MODEL_LEN = 32768  # "max_model_len=32768"
QWEN_VLLM_MEMORY = 0.9  # "gpu_memory_utilization=0.9"
QWEN_VLLM_MAX_NUM_SEQS = 256  # vLLM 0.6.3 EngineArgs.max_num_seqs default (the script passes none)
QWEN_VLLM_INPUTS = (1, 6144, 14336, 30720)
# model (ours) -> (the table's model, tp, tokens/s at QWEN_VLLM_INPUTS; None where the row is not kept). Kept: every
# BF16 row at the docs' default settings (a Note of "setting1", "setting-64k" or "vllm==0.6.2, new sample config"
# names settings the docs do not state: those rows, and every 63,488 and 129,024 row, are left out).
QWEN_VLLM = {
    "qwen2.5-0.5b": ("Qwen2.5-0.5B-Instruct", 1, (311.55, 304.79, 290.28, 264.51)),
    "qwen2.5-1.5b-instruct": ("Qwen2.5-1.5B-Instruct", 1, (183.33, 176.68, 168.69, 152.04)),
    "qwen2.5-3b": ("Qwen2.5-3B-Instruct", 1, (127.61, 123.15, 117.35, 105.88)),
    "qwen2.5-7b-instruct": ("Qwen2.5-7B-Instruct", 1, (84.28, 80.70, 77.69, 70.33)),
    "qwen2.5-14b": ("Qwen2.5-14B-Instruct", 1, (46.30, 43.83, 41.91, 37.18)),
    "qwen2.5-32b-instruct": ("Qwen2.5-32B-Instruct", 2, (None, None, None, 31.82)),
    "qwen2.5-72b-instruct": ("Qwen2.5-72B-Instruct", 4, (31.37, 29.90, 30.10, 27.53)),
}
QWEN_VLLM_ASSUMED = (
    "decided before any figure was computed: the A100 80GB as the a100-80gb preset (SXM4, 400 W; the docs say only "
    "'NVIDIA A100 80GB'); bf16 weights, activations and KV cache (the checkpoints' torch_dtype, vLLM's dtype 'auto' "
    "and kv_cache_dtype 'auto'); vLLM 0.6.3 as serve's vllm-v0 scheduler with max_num_batched_tokens = "
    "max(max_model_len, 2048) = 32,768 (SchedulerConfig without chunked prefill), max_num_seqs 256, "
    "gpu_memory_utilization 0.9, one scheduler step, prefix caching off (0.6.3's default), FlashAttention-2 (vLLM's "
    "FLASH_ATTN backend on an A100, the 'Flash Attention 2.6.3' listed); its host time a step as vLLM v0.6.0's "
    "(host_time.json: the same v0 engine, asynchronous output processing on by default since 0.6.0; no profile of "
    "0.6.3 is published); CUDA graphs for the decode steps up to max_seq_len_to_capture 8,192 (0.6.3's default), "
    "eager past it; the prompt as the row's input length (the script's query of create_query: '熵' x L below 96 "
    "tokens, else the chat template around '# ' x (L - 96), its real length logged, not published: taken as L); "
    "exactly 2,048 output tokens (the script retries a shorter generation); the -Instruct checkpoints as the "
    "presets of the same sizes where no -Instruct preset exists (qwen2.5-0.5b, -3b, -14b); tp as the row's 'GPU "
    "Num' (tensor_parallel_size = len(gpus)); the sampler's repetition, presence and frequency penalties and "
    "top-p as vLLM's sampling, inside its host time; the one run's time as the request's end to end, its prefill "
    "included")


def qwen_vllm_rows() -> list[dict]:
    """The kept rows: model (ours), the table's model, tp, input tokens and published tokens/s."""
    return [{"model": model, "published_model": name, "tp": tp, "input": length, "published": rate}
            for model, (name, tp, rates) in QWEN_VLLM.items()
            for length, rate in zip(QWEN_VLLM_INPUTS, rates) if rate is not None]


def alone_token_times(model: str, hardware: str, prompt: int, output: int, max_model_len: int,
                      **build: object) -> list[float]:
    """The token times of one request of `prompt` tokens and `output` new ones arriving at 0, alone on one replica of
    `model` on `hardware` built with build_replica's `build` options (the speed benchmarks' one request at a time:
    this table's and benchmarks/published_qwen3_sglang.py's)."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica
    from costmodel.serving.engine import simulate_replicas
    from costmodel.serving.kvcache import BlockPool
    from costmodel.serving.workload import Request

    (cls, blocks, block_size, seqs, tokens), step, _ = build_replica(
        costmodel.load_model(model), load_hardware(hardware), **build)
    timeline, = simulate_replicas([Request(0, 0.0, prompt, output)], [cls(BlockPool(blocks, block_size), seqs, tokens)],
                                  step.seconds, max_model_len, record=False, decode_run=step.decode_run,
                                  host=step.host_time)
    return timeline.sequences[0].token_times


def qwen_vllm_tokens_per_s(model: str, tp: int, prompt: int) -> float:
    """Ours: one request of `prompt` tokens and QWEN_VLLM_OUTPUT new ones, alone on one replica, as
    QWEN_VLLM_ASSUMED states it: the output tokens over the time of its last token."""
    times = alone_token_times(
        model, "a100-80gb", prompt, QWEN_VLLM_OUTPUT, QWEN_VLLM_MAX_MODEL_LEN, scheduler="vllm-v0", tp=tp, dtype="bf16",
        max_batched_tokens=max(QWEN_VLLM_MAX_MODEL_LEN, 2048), max_num_seqs=QWEN_VLLM_MAX_NUM_SEQS,
        gpu_memory_utilization=QWEN_VLLM_MEMORY, num_scheduler_steps=1, prefix_caching=False,
        host_time="vllm==0.6.3")  # the release's V0 profile by host_time.json's rules, as `serve --host-time` takes it
    return len(times) / times[-1]


def print_speed_rows(source: str, title: str, rows: list[dict], ours_per_s) -> None:
    """A speed benchmark's rows beside ours (ours_per_s(model, tp, input)), each fed to the summary as `source`."""
    from reports.serving_published import record

    print(f"\n{title}\n")
    print("| model (ours) | tp | input tokens | published tokens/s | ours | ours / published |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ours = ours_per_s(row["model"], row["tp"], row["input"])
        record(source, f"{row['model']} tp {row['tp']} input {row['input']}", "tokens/s", row["published"], ours)
        print(f"| {row['published_model']} ({row['model']}) | {row['tp']} | {row['input']:,} | {row['published']:,.2f} "
              f"| {ours:,.2f} | {ours / row['published']:.2f} |")


def print_qwen_vllm() -> None:
    print_speed_rows("qwen-vllm", "Qwen2.5's vLLM 0.6.3 speed benchmark on A100 80GB, one request at a time. "
                     f"Source: {QWEN_VLLM_SOURCE}", qwen_vllm_rows(), qwen_vllm_tokens_per_s)
