"""torchao's quantization README, "Performance benchmarks" (pytorch/ao torchao/quantization/README.md at
commit aa25287, 2026-01-05, "Update quantization README.md (#3551)"): Llama 3.1 8B ("meta-llama/Llama-3-8.1B",
the script's default meta-llama/Llama-3.1-8B) served by vLLM 0.13.0 (its V1 engine) under torch 2.9.0, on an
NVIDIA H100 and an NVIDIA B200, unquantized (bfloat16) and with torchao's recipes, two `vllm bench throughput`
runs each (benchmarks/quantization/measure_accuracy_and_performance.sh at the same commit):

    prefill: vllm bench throughput --model M --dtype bfloat16 --num_prompts 32 --input_len 4096 --output_len 32
             --max_model_len 4128
    decode:  vllm bench throughput --model M --dtype bfloat16 --num_prompts 128 --input_len 32 --output_len 2048
             --max_model_len 2080

The README's "prefill toks/s" and "decode toks/s" are the runs' "total tokens/s" (benchmarks/quantization/
parse_log.py at aa25287: `result["prefill_total_tokens_per_sec"]`, `result["decode_total_tokens_per_sec"]`,
parsed from vLLM's "Throughput: R requests/s, T total tokens/s, O output tokens/s"): every prompt's input and
output tokens over the run's elapsed time, all prompts given to the LLM class at once.
The recipes (benchmarks/quantization/create_quantized_model.py at aa25287): "float8_rowwise" is
Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()) (FP8 weights, activations quantized per row at
run time), "int8_rowwise_weight_only" is Int8WeightOnlyConfig(), "nvfp4" NVFP4 weights and activations.

Ours: every prompt at time 0 on one replica of `serve`'s vLLM V1 scheduler ("vllm": chunked prefill, its
piecewise CUDA graphs), the budgets vLLM's LLM class takes on a GPU of 70 GiB or more other than an A100
(vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: max_num_batched_tokens 16,384 and max_num_seqs 1,024
for UsageContext.LLM_CLASS), 90% of memory (gpu_memory_utilization's default), a bf16 KV cache (kv_cache_dtype
"auto"), and the figure as the README's: prompts x (input + output) over the span from 0 to the last token.

    python benchmarks/serve_published.py torchao-vllm
"""

from __future__ import annotations

TORCHAO_VLLM_SOURCE = ("pytorch/ao torchao/quantization/README.md (commit aa25287), 'Performance benchmarks': "
                       "Llama-3.1-8B, torch 2.9.0, vllm 0.13.0, `vllm bench throughput`, total tokens/s")
# (prompts, input tokens, output tokens) of the two runs (measure_accuracy_and_performance.sh's PREFILL_ARGS and
# DECODE_ARGS)
TORCHAO_VLLM_RUNS = {"prefill": (32, 4096, 32), "decode": (128, 32, 2048)}
# vLLM's LLM-class defaults on a >= 70 GiB GPU other than an A100 (EngineArgs.get_batch_defaults)
TORCHAO_VLLM_BUDGETS = {"max_num_seqs": 1024, "max_batched_tokens": 16384}
# Each recipe as ours runs it: (weight_dtype, fp8_gemm, quant_layout); None where it is not expressible.
TORCHAO_VLLM_RECIPES = {
    "bfloat16": (None, "auto", "gptq"),
    "float8_rowwise": ("fp8", "w8a8", "gptq"),
    "int8_rowwise_weight_only": ("int8", "auto", "torchao"),
    "nvfp4": None,  # no NVFP4 weight format for inference here (--weight-dtype has none)
}
# The README's tables: per GPU, (recipe, prefill total tokens/s, decode total tokens/s). The B200's mxfp8 row
# (a TODO, no figures) and the H100's int4 row (a TODO) are left out: they print no number.
TORCHAO_VLLM = [
    {"gpu": "NVIDIA H100", "hardware": "h100-sxm",
     # as the torchao-h100 source of costmodel/published_runs.json: Meta's H100 (96 GB HBM2e, 2.4 TB/s, 500 W)
     "hardware_overrides": {"bandwidth_bytes_per_s": 2.4e12, "memory_bytes": 103079215104,
                            "gemv_bandwidth_bytes_per_s": 0.0, "power_limit_watts": 500},
     "rows": [("bfloat16", 30946.5, 6612), ("float8_rowwise", 45312.5, 8025.95),
              ("int8_rowwise_weight_only", 28231.9, 4309.8)]},
    {"gpu": "NVIDIA B200", "hardware": "b200", "hardware_overrides": {},
     "rows": [("bfloat16", 59099.9, 14380), ("nvfp4", 102786, 15218.9), ("float8_rowwise", 69313.7, 15984)]},
]
TORCHAO_VLLM_ASSUMED = (
    "decided before any row was computed: Llama 3.1 8B as the llama3.1-8b preset; vLLM 0.13.0 as serve's vLLM V1 "
    "scheduler with its piecewise CUDA graphs (cuda_graphs auto) and prefix caching as the scheduler has it (the "
    "random prompts share nothing); the LLM class's budgets (1,024 sequences, 16,384 batched tokens; the 4,096-token "
    "prompts chunked within them as V1 does); 90% of memory; the KV cache in bf16; the 'NVIDIA H100' as the PyTorch "
    "team's H100 of the torchao-h100 source (96 GB of HBM2e at 2.4 TB/s, 500 W: the device name the script logs, "
    "'NVIDIA H100', is not the 80 GB SXM part's 'NVIDIA H100 80GB HBM3'), the 'NVIDIA B200' as the b200 preset; "
    "float8_rowwise as FP8 weights in W8A8 GEMMs at the FP8 peak (the per-row activation scales read as the per-"
    "tensor ones: not modelled apart); int8_rowwise_weight_only as int8 weights with a bf16 scale per row "
    "(quant_layout torchao), the GEMM as the model runs int8 weight-only; nvfp4 not expressible (kept, not "
    "computed); vLLM's CPU time (tokenizing, detokenizing, sampling on the host, the engine core's loop) not "
    "modelled; the figure as the README's total tokens per second over the span from the first arrival (all at 0) "
    "to the last token, the engine's start-up and graph capture outside it as vLLM's timer leaves them")


def torchao_vllm_hardware(table: dict):
    """The table's GPU: its preset with the departures the table states (a power cap among them)."""
    from costmodel.hardware import Hardware, load_hardware

    hardware = load_hardware(table["hardware"])
    if not table["hardware_overrides"]:
        return hardware
    data = {k: v for k, v in hardware.to_dict().items() if k != "device_memory_bytes"}  # another capacity: not the preset's total
    return Hardware.from_dict(dict(data, **table["hardware_overrides"]), table["hardware"])


def torchao_vllm_options(recipe: str) -> dict:
    """build_replica's options for one recipe (ConfigError-free: the caller skips the inexpressible)."""
    weight_dtype, fp8_gemm, quant_layout = TORCHAO_VLLM_RECIPES[recipe]
    return {"scheduler": "vllm", "dtype": "bf16", "weight_dtype": weight_dtype, "fp8_gemm": fp8_gemm,
            "quant_layout": quant_layout, "gpu_memory_utilization": 0.90, **TORCHAO_VLLM_BUDGETS}


def torchao_vllm_tokens_per_s(table: dict, recipe: str, run: str, prompts: int | None = None) -> float:
    """Our total tokens per second for one run: `prompts` (the run's own count if None) requests at 0
    with the run's lengths, prompts x (input + output) over the span to the last token."""
    import costmodel
    from costmodel.serving.api import run_replicas
    from costmodel.serving.replica import build_replica
    from costmodel.serving.workload import Request

    count, prompt, output = TORCHAO_VLLM_RUNS[run]
    count = prompts or count
    cfg = costmodel.load_model("llama3.1-8b")
    replica, step, _ = build_replica(cfg, torchao_vllm_hardware(table), **torchao_vllm_options(recipe))
    requests = [Request(i, 0.0, prompt, output) for i in range(count)]
    rows, _, _ = run_replicas(requests, replica, step, 1, cfg.max_positions, record=False)
    return count * (prompt + output) / max(r["finish_s"] for r in rows)


def print_torchao_vllm() -> None:
    from reports.serving_published import record

    print(f"\ntorchao's vLLM throughput runs. Source: {TORCHAO_VLLM_SOURCE}\n")
    print("| GPU | recipe | run (prompts x in / out) | published total tok/s | ours | ours / published |")
    print("|---|---|---|---|---|---|")
    for table in TORCHAO_VLLM:
        for recipe, prefill, decode in table["rows"]:
            for run, published in (("prefill", prefill), ("decode", decode)):
                count, prompt, output = TORCHAO_VLLM_RUNS[run]
                shape = f"{run} ({count} x {prompt} / {output})"
                if TORCHAO_VLLM_RECIPES[recipe] is None:
                    print(f"| {table['gpu']} | {recipe} | {shape} | {published:,.1f} | not expressible | - |")
                    continue
                ours = torchao_vllm_tokens_per_s(table, recipe, run)
                record("torchao-vllm", f"{table['gpu']} {recipe} {run}", "total tok/s", published, ours)
                print(f"| {table['gpu']} | {recipe} | {shape} | {published:,.1f} | {ours:,.0f} "
                      f"| {ours / published:.2f} |")
