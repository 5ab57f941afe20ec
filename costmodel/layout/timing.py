"""A layout's step and token times under the chosen time model: step_time picks the roofline's
StepTime (costmodel/layout/time.py) or the kernel-level one (costmodel/layout/kernel_step.py), and
simulate_training / simulate_decode are `simulate` with a layout. Apart from both so that neither
imports the other.
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError
from ..hardware import Efficiency, Hardware, time_model_for
from ..spec import DEFAULT_DECODE_CODE
from .context import check_inference
from .kernel_step import KernelStepTime
from .rank import ParallelEstimate
from .time import Overlap, StepTime


def step_time(estimate: ParallelEstimate, hardware: Hardware, efficiency: Efficiency | None = None,
              time_model: str | None = None, **options: Any) -> StepTime:
    """The StepTime of a time model: the roofline's (costmodel/layout/time.py) or the kernel-level
    one (costmodel/layout/kernel_step.py); None: the default (costmodel/hardware.time_model_for)."""
    time_model = time_model_for(hardware, time_model, estimate.workload.dtype)
    if time_model == "kernels":
        return KernelStepTime(estimate, hardware, efficiency, **options)
    if options.pop("compiled", False):
        raise ConfigError("--compile is modelled by the kernel-level time model only; add --time-model kernels.")
    options.pop("attention_kernel", None)  # the roofline times attention at its one efficiency
    options.pop("implementation", None)  # the roofline has no host term
    options.pop("decode_kernel", None)  # nor kernels: its attention is the tree's bytes and FLOPs
    options.pop("host_syncs", None)
    options.pop("moe_op_fuser", None)  # the roofline prices the tree's fused kernels only
    return StepTime(estimate, hardware, efficiency, **options)


def simulate_training(cfg: Any, workload: Any, layout: Any, hardware: Hardware,
                      efficiency: Efficiency | None = None, tokens: float | None = None,
                      step_seconds: float | None = None, flops_convention: str = "dense",
                      time_model: str | None = None, overlap: Overlap | None = None,
                      compiled: bool = False, price: float | None = None,
                      graph_scopes: tuple[str, ...] = ()) -> dict[str, Any]:
    """`simulate --train` with a layout: the step time and its split, MFU and HFU, each rank's
    memory against the GPU's, and the time to train on `tokens` tokens with its GPU-hours, FLOPs
    and dollars (costmodel/cost.py). graph_scopes: what a Megatron-Core run captures in CUDA graphs
    (its cuda_graph_scope; the kernel model's MoE host-sync windows, layout/host_syncs.py)."""
    from ..cost import with_measured_step, measured_mfu, price_of, training_cost

    estimate = ParallelEstimate(cfg, workload, layout)
    options: dict[str, Any] = {"compiled": True} if compiled else {}
    if graph_scopes:
        if layout.framework != "megatron":
            raise ConfigError(f"--cuda-graph-scope is Megatron-Core's cuda_graph_scope: it needs --framework "
                              f"megatron, not {layout.framework}.")
        options["host_syncs"] = tuple(graph_scopes)
    timer = step_time(estimate, hardware, efficiency, time_model, flops_convention=flops_convention,
                      overlap=overlap, **options)
    step = timer.step()
    if isinstance(timer, KernelStepTime):  # which block the compute is: the slowest stage's micro-batches
        blocks = timer.compute_by_block(estimate.stages[step["slowest_stage"]])
        step["compute_by_block_seconds"] = {path: layout.microbatches * value for path, value in blocks.items()}
    parallel = estimate.to_dict()
    capacity = hardware.training_memory_bytes
    result = {"step": step, "parallel": parallel, "fits": parallel["per_rank"]["total"] <= capacity,
              "memory_capacity": capacity, "time_model": time_model_for(hardware, time_model, workload.dtype)}
    if tokens is not None:
        step_tokens = step["tokens_per_second"] * step["seconds"]
        result["cost"] = training_cost(tokens, step["tokens_per_second"], layout.gpus, step["model_flops"],
                                       step_tokens, *price_of(price, hardware))
        result["train_seconds"] = result["cost"]["train_seconds"]
    if step_seconds is not None:
        from .fp8 import RECIPES

        fastest = hardware.datasheet_peak(RECIPES[layout.fp8].peak) if layout.fp8 else None  # an FP8 run's GEMMs
        peak = hardware.datasheet_peak(workload.dtype)
        result["mfu_measured"] = measured_mfu(step["model_flops"], step_seconds, peak, layout.gpus, fastest)
        with_measured_step(result, step_seconds, step["tokens_per_second"] * step["seconds"])
    return result


def simulate_decode(cfg: Any, workload: Any, layout: Any, hardware: Hardware,
                    efficiency: Efficiency | None = None, cuda_graphs: bool = False,
                    time_model: str | None = None, compiled: bool = False, prefill: bool = True,
                    implementation: str = DEFAULT_DECODE_CODE, decode_kernel: str | None = None,
                    eager_prefill: bool = False) -> dict[str, Any]:
    """Inference with a layout: the prefill's time (the prompt's forward, stage after stage, with
    its tensor-parallel all-reduces: the time to the first token), the time per output token at
    the last step's context, its tensor-parallel all-reduce time, and each rank's weights and KV
    cache. The prefill is Hugging Face generate's, the last position's logits only, as simulate
    times it without a layout (equal at tp 1); prefill=False leaves it out (and the generation).
    With the prefill, "generation": the gen - 1 decode steps after the prefill's first token and
    the two rates (costmodel/roofline.generation_rates; generation_decode_seconds). implementation:
    the code that decodes (spec.DECODE_CODES, simulate's --decode-code): under the kernel model each
    eager step (the prefill; a decode step without CUDA graphs; not compiled) takes the longer of a
    rank's kernels with its exposed communication and its host's counted ops
    (kernel_step.KernelStepTime.token), as simulate without a layout (equal at tp 1). decode_kernel:
    the decode steps' attention kernel (kernel_facts.json decode_attention_kernels), the kernel model's.
    compiled: torch.compile's fusions (with cuda_graphs the decode steps' fused kernels replayed from a
    graph, each at graph_kernel_s: KernelStepTime); eager_prefill: the prefill runs eager beside compiled
    steps (gpt-fast's generate.py compiles decode_one_token alone unless --compile_prefill)."""
    import dataclasses

    from ..decode_codes import check_runs_on

    check_runs_on(implementation, hardware, f"--decode-code {implementation}")

    from ..roofline import check_eager_prefill, generation_rates
    from ..tree import generate_logits_to_keep
    from ..workload import logits_kept
    from .serving_memory import serving_memory

    check_inference(layout.cp)  # it printed a decode step alone, no prefill, each rank with the whole KV cache
    check_eager_prefill(compiled, eager_prefill)
    # the code's KV cache (costmodel/decode_codes.py): its heads in per_rank's memory and the steps alike
    workload = dataclasses.replace(workload, decode_code=implementation)
    estimate = ParallelEstimate(cfg, workload, layout, phase="decode")
    options = {"implementation": implementation, "decode_kernel": decode_kernel,
               **({"compiled": True} if compiled else {})}
    token = step_time(estimate, hardware, efficiency, time_model, cuda_graphs=cuda_graphs, **options).token()
    first = {}
    if prefill:
        generate = dataclasses.replace(workload, logits_to_keep=generate_logits_to_keep(cfg, workload.impl))
        prefill_options = {**options, "compiled": False} if eager_prefill else options
        forward = step_time(ParallelEstimate(cfg, generate, layout, phase="prefill"), hardware, efficiency,
                            time_model, **prefill_options).token()  # decode_kernel: a decode step's alone (KernelStepTime)
        first = {"prefill": {"seconds": forward["seconds_per_token"], "compute_seconds": forward["compute_seconds"],
                             "tp_all_reduce_seconds": forward["tp_all_reduce_seconds"],
                             "ep_all_to_all_seconds": forward["ep_all_to_all_seconds"],
                             "pp_seconds": forward["pp_seconds"], "logits": logits_kept(generate.logits_to_keep),
                             **({"host": forward["host"]} if "host" in forward else {})}}
    if first and workload.gen_tokens:
        decode_s = generation_decode_seconds(cfg, workload, layout, hardware, efficiency, time_model,
                                             cuda_graphs, compiled, implementation, decode_kernel)
        first["generation"] = generation_rates(workload.batch * layout.dp, workload.gen_tokens,
                                               first["prefill"]["seconds"], decode_s)
    per_rank = serving_memory(estimate)
    return {**first, "token": token, "per_rank": per_rank, "layout": layout.to_dict(workload.batch),
            "logits": logits_kept(generate_logits_to_keep(cfg, workload.impl)),  # the prefill's, in per_rank's transient
            "fits": per_rank["total"] <= hardware.serving_memory_bytes,
            "memory_capacity": hardware.serving_memory_bytes,
            "time_model": time_model_for(hardware, time_model, workload.dtype)}


def generation_decode_seconds(cfg: Any, workload: Any, layout: Any, hardware: Hardware,
                              efficiency: Efficiency | None = None, time_model: str | None = None,
                              cuda_graphs: bool = False, compiled: bool = False,
                              implementation: str = DEFAULT_DECODE_CODE, decode_kernel: str | None = None) -> float:
    """Seconds of the gen - 1 decode steps a generation of workload.gen_tokens tokens runs after
    the prefill's first token, step k at context prompt + k (k = 1 .. gen - 1), as
    simulate_inference counts them: the token time at up to 8 of those contexts (a workload of k + 1
    generated tokens has context prompt + k), linear between them (roofline.linear_sum)."""
    import dataclasses

    from ..roofline import generation_rates, linear_sum, shown_steps

    steps = workload.gen_tokens - 1
    if steps < 1:
        return 0.0
    options = {"implementation": implementation, "decode_kernel": decode_kernel,
               **({"compiled": True} if compiled else {})}
    workload = dataclasses.replace(workload, decode_code=implementation)  # its KV cache (decode_codes.py)
    shown = shown_steps(steps)
    # a workload of k + 1 generated tokens has its last step at context prompt + k
    times = [step_time(ParallelEstimate(cfg, dataclasses.replace(workload, gen_tokens=k + 1), layout, phase="decode"),
                       hardware, efficiency, time_model, cuda_graphs=cuda_graphs, **options).token()["seconds_per_token"]
             for k in shown]
    return linear_sum((shown, times), 1, steps)
