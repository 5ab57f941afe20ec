"""`simulate`: the time of prefill, decode and a training step on a hardware preset; with a layout,
per GPU, with its communication and pipeline bubble. Four modes: inference or training, on one
GPU (costmodel/roofline.py, costmodel/roofline_training.py) or with a layout (costmodel/layout/timing.py)."""

from __future__ import annotations


import json
from typing import Any

import click

from costmodel import spec
from costmodel.json_units import JSON_UNITS
from costmodel.api import generation_start
from costmodel.checkpoint import inference_options
from costmodel.config import ConfigError, require_decoder
from costmodel.errors import graphs_replayed
from costmodel.hardware import time_model_for
from costmodel.defaults import attention_source, fallback_note, unfused_note, has_attention, implied
from costmodel.flash_support import require_attention, runs_flash

from costmodel.simulate_api import decode_inputs, training_inputs

from .inputs import InputError, finite, load_model, make_layout, make_workload, microbatches_for, with_mtp
from .options import (ATTENTION_HELP, IMPL_HELP, batch_option, choice_option, decode_code_option, dtype_option,
                      hardware_option, json_option, layout_options, model_options, mtp_option, optimizer_option,
                      refuse_mla_without_latent, refuse_typed, GEN_LENGTH, LENGTH, PRICE, TOKENS, untimed_offload_option, weight_bits_option)

TIME_MODEL_HELP = (f"kernels (the default: {spec.TIME_MODELS.meanings['kernels']}) or roofline "
                   f"({spec.TIME_MODELS.meanings['roofline']}); a hardware without sm_count, and training on one "
                   "GPU without a layout, are timed by the roofline (docs/time.md).")


def efficiency_of(hardware: Any, compute: float | None, memory: float | None) -> Any:
    """The preset's efficiencies with --compute-efficiency / --memory-efficiency in their place."""
    from costmodel.hardware import Efficiency

    if compute is None and memory is None:
        return None
    return Efficiency(compute=hardware.efficiency.get("compute", 1.0) if compute is None else compute,
                      memory=hardware.efficiency.get("memory", 1.0) if memory is None else memory,
                      given=tuple(name for name, value in (("compute", compute), ("memory", memory))
                                  if value is not None))


def with_launches(hardware: Any, overhead: float | None, graph_gap: float | None,
                  host_op: float | None = None) -> Any:
    """The hardware with --launch-overhead / --graph-kernel-gap / --host-op-time in place of its file's
    figures (--host-op-time: module_s_per_op, which Hardware.eager_op_s takes first)."""
    for name, value in (("--launch-overhead", overhead), ("--graph-kernel-gap", graph_gap)):
        if value is not None and not 0 <= value < 1:
            raise ConfigError(f"{name} is seconds, at least 0 and below 1, got {value}.")
    if host_op is not None and not 0 < host_op < 1:
        raise ConfigError(f"--host-op-time is seconds, above 0 and below 1, got {host_op} (--cuda-graphs times "
                          "a step without the host).")
    changes = {"overhead_s_per_block": overhead, "graph_kernel_s": graph_gap, "module_s_per_op": host_op}
    return hardware.replace(**{k: v for k, v in changes.items() if v is not None})


def unread_host_op_time(result: dict[str, Any], hardware: Any, train: bool, layout: Any, compiled: bool) -> None:
    """--host-op-time given where no step weighs the host (kernel_facts_file.weighs_host): one line
    saying why, as an option the mode would ignore is refused."""
    from costmodel.kernel_facts_file import weighs_host

    if weighs_host(result):
        return
    if train and layout is None:
        why = "training on one GPU is timed by the roofline, which counts no ops (give a layout, e.g. --dp 1)"
    elif compiled:
        why = "--compile runs every step compiled, with no eager op for the host to issue"
    elif not hardware.issues_ahead:
        why = (f"{hardware.name} is a CPU, which runs each op in the thread that issues it: its steps pay the "
               "file's per-block launch overhead (--launch-overhead), not a host op time")
    else:
        why = ("no step here runs code whose eager ops are counted (kernel_facts.json eager_step_ops: Hugging "
               "Face generate's and gpt-fast's unquantized decoding of the families counted; eager_training_ops: "
               "one GPU's eager Hugging Face training step; not this model, code or framework)")
    raise ConfigError(f"--host-op-time is the host's time per eager op, which nothing here weighs: {why}; "
                      "drop it.")


#: The options one mode reads and the other would ignore (parameter name: option).
TRAINING_ONLY = {"seq_len": "--seq-len", "tgt_len": "--tgt-len", "recompute": "--recompute",
                 "recompute_layers": "--recompute-layers",
                 "optimizer": "--optimizer",
                 "tokens": "--tokens", "step_time": "--step-time",
                 "global_batch": "--global-batch", "impl": "--impl", "flops_convention": "--flops-convention",
                 "mtp": "--mtp", "graph_scopes": "--cuda-graph-scope"}
#: The overlap options' Overlap fields, refused on a layout without the collective each hides (unread_overlaps).
OVERLAP_FIELDS = {"--tp-overlap": "tp", "--async-tp": "tp", "--tp-comm-overlap": "tp", "--pp-overlap": "pp", "--dp-overlap": "dp",
                  "--overlap-grad-reduce": "dp", "--no-prefetch": "prefetch"}
INFERENCE_ONLY = {"prompt": "--prompt", "gen": "--gen", "kv_cache": "--kv-cache", "mla": "--mla",
                  "cuda_graphs": "--cuda-graphs", "decode_code": "--decode-code", "cache_size": "--cache-size",
                  "eager_prefill": "--eager-prefill"}
#: Layout options only a training step reads: an inference layout's decode and prefill ignore them.
TRAINING_LAYOUT_ONLY = {"microbatches": "--microbatches", "zero": "--zero", "sp": "--sp", "fp8": "--fp8",
                        "framework": "--framework", "layout_device": "--device",
                        "capacity_factor": "--capacity-factor", "pad_to_capacity": "--pad-to-capacity",
                        "etp": "--etp", "ep_dispatcher": "--ep-dispatcher", "dp_shard": "--dp-shard",
                        "grad_reduce_dtype": "--grad-reduce-dtype",
                        "precision_aware_optimizer": "--precision-aware-optimizer", "schedule": "--schedule",
                        "fp8_param_gather": "--fp8-param-gather", "tp_only_amax_red": "--tp-only-amax-red", "fp8_autocast": "--fp8-autocast",
                        "moe_router_fusion": "--[no-]moe-router-fusion",
                        "moe_router_load_balancing_type": "--moe-router-load-balancing-type",
                        "moe_permute_fusion": "--[no-]moe-permute-fusion", "moe_grouped_gemm": "--no-moe-grouped-gemm",
                        "virtual_stages": "--virtual-stages", "cp_rotate": "--cp-rotate",
                        "cp_kv_heads": "--cp-kv-heads", "unfused_loss": "--unfused-loss",
                        "fp32_norm_input": "--fp32-norm-input", "zero_optimizer": "--zero-optimizer",
                        "optimizer_step": "--optimizer-step", "megatron_release": "--megatron-release"}


def refuse_unread_moe_options(ctx: click.Context, cfg: Any, layout: Any, time_model: str) -> None:
    """A typed MoE router or permute option that nothing would read, one line: the unfused router's and
    permutations' eager kernels are the kernel model's terms (the roofline counts no ops), and the load-balancing
    type is read only by the unfused router of routed experts (layout/router_fusion.py)."""
    if time_model != "kernels" and layout is not None and not (layout.moe_router_fusion and layout.moe_permute_fusion):
        refuse_typed(ctx, {"moe_router_fusion": "--no-moe-router-fusion", "moe_permute_fusion": "--no-moe-permute-fusion"},
                     "the unfused router's and permutations' eager kernels and host calls are the kernel model's "
                     "terms; the roofline counts no ops: drop one of them.")
    if layout is None or not cfg.n_experts or layout.moe_router_fusion:
        refuse_typed(ctx, {"moe_router_load_balancing_type": "--moe-router-load-balancing-type"},
                     "read only by Megatron-Core's unfused router of routed experts (--framework megatron "
                     "--no-moe-router-fusion with a mixture of experts); the fused kernels price every type the same.")


def refuse_other_mode(ctx: click.Context, train: bool) -> None:
    """One line naming the options typed that this mode would ignore (`--seq-len` without --train
    left the prompt at 2,048)."""
    if train:
        refuse_typed(ctx, INFERENCE_ONLY, "inference options, which --train ignores; a training step takes "
                     "--seq-len and --batch.")
    else:
        refuse_typed(ctx, TRAINING_ONLY, "training options, read only with --train; inference takes --prompt, "
                     "--gen and --batch.")
        refuse_typed(ctx, TRAINING_LAYOUT_ONLY, "training layout options, read only with --train: an inference "
                     "layout is --tp, --pp, --dp, --ep and --stage-layers (FP8 weights: --weight-dtype fp8).")


@click.command()
@model_options
@hardware_option()
@click.option("--prompt", type=LENGTH, default=None, help="Prompt tokens (inference). Default 2048, or what the context leaves after --gen.")
@click.option("--gen", "--gen-tokens", "--output", "gen", type=GEN_LENGTH, default=spec.DEFAULT_GEN_TOKENS,
              show_default=True, help="Tokens to generate (inference); --gen-tokens is estimate's name, --output serve's.")
@batch_option
@dtype_option(None, "Weights and activations (default: the hardware's, bf16 for the GPU presets, fp16 on "
              "V100 and T4, which have no bf16 tensor cores, and the calibrated dtype for local).")
@choice_option("--attention", spec.ATTENTIONS, ATTENTION_HELP)
@choice_option("--kv-cache", spec.KV_CACHES, f"{spec.KV_CACHES.described()}.", spec.DEFAULT_KV_CACHE)
@choice_option("--mla", spec.MLA_FORMS, f"Latent attention (DeepSeek): {spec.MLA_FORMS.phrase()}.", spec.DEFAULT_MLA)
@click.option("--train", is_flag=True, help="Simulate a training step instead of inference.")
@click.option("--seq-len", "-n", type=LENGTH, default=None, help="Training sequence length (default 2048 or the context).")
@click.option("--tgt-len", type=LENGTH, default=None, help="Training: an encoder-decoder's decoder tokens (default: "
              "--seq-len), as estimate's.")
@choice_option("--recompute", spec.RECOMPUTES, f"Training: {spec.RECOMPUTES.listed()}.", spec.DEFAULT_RECOMPUTE)
@click.option("--recompute-layers", type=int, default=None,
              help="Training, --recompute full: only the first N layers of each pipeline stage recompute (Megatron's "
              "recompute_method block, recompute_num_layers); the others keep everything.")
@optimizer_option
@click.option("--tokens", type=TOKENS, default=None, help="Training: tokens to train on (a number, 2e12, or one with k, M, B (G) or T: 15T) for the time to train.")
@click.option("--price", type=PRICE, default=None, help="Dollars per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one): training with --tokens costs the run; inference, the dollars per million generated tokens at the end-to-end rate, as serve --price at its throughput.")
@click.option("--step-time", type=float, default=None, help="Training: a measured step time in seconds, for its MFU.")
@click.option("--compute-efficiency", type=float, default=None, help="Fraction of peak FLOP/s reached (default: the preset's).")
@click.option("--memory-efficiency", type=float, default=None, help="Fraction of peak bandwidth reached (default: the preset's).")
@click.option("--global-batch", type=int, default=None, help="Training with a layout: sequences per step (sets --microbatches = global / (batch x dp)).")
@choice_option("--impl", spec.IMPLEMENTATIONS, "Training: " + IMPL_HELP)
@choice_option("--flops-convention", spec.FLOPS_CONVENTIONS, "Training: the model FLOPs MFU divides by: "
               f"{spec.FLOPS_CONVENTIONS.phrase()}. Never counts recomputation.", "dense")
@click.option("--tp-overlap", type=float, default=0.0, show_default=True,
              help="Training with a layout: the fraction of tensor-parallel communication hidden behind compute.")
@click.option("--async-tp", is_flag=True, default=False,
              help="Training with a layout: torchtitan's Async TP (--framework fsdp2, --sp, --compile): the tensor-parallel "
              "collectives torch's micro-pipeline pass fuses into the blocks' matmuls, each hidden up to its own chunked "
              "matmuls, the rest exposed; under --fp8 rowwise no all-gather is fused, the gathered bf16 tensor being "
              "cast before its matmul (costmodel/layout/async_tp.py).")
@click.option("--tp-comm-overlap", default=None, metavar="CONFIG",
              help="Training with a layout: Megatron's --tp-comm-overlap, Transformer Engine's userbuffers (--framework "
              "megatron, --sp, the kernel time model), each overlapped GEMM priced by its op's method and SMs: 'te' "
              "(TE's defaults) or a NeMo config named in costmodel/ub_overlap_facts.json (costmodel/layout/ub_overlap.py).")
@click.option("--dp-overlap", type=float, default=None,
              help="Training with a layout: the fraction of the last micro-batch's compute a gradient reduction "
              "(DDP, ZeRO-1/2) overlaps (0: reduced after backward; default the framework's: 0 under --framework "
              "megatron, whose --overlap-grad-reduce is off unless given, else 2/3, the backward).")
@click.option("--overlap-grad-reduce", is_flag=True,
              help="Training with a layout: the gradient reduction under the last micro-batch's backward (2/3 of its "
              "compute), as Megatron-LM's --overlap-grad-reduce and every NeMo, Megatron-Bridge and Primus recipe "
              "read run it; --framework megatron's default is Megatron-LM's, after the backward.")
@click.option("--no-prefetch", is_flag=True, help="Training with a layout: FSDP/ZeRO-3 collectives exposed, not prefetched.")
@click.option("--pp-overlap", type=float, default=None,
              help="Training with a layout: the fraction of each micro-batch's pipeline sends hidden behind compute "
              "(1: Megatron-Core's overlap_p2p_comm; default the framework's: 1 on an interleaved --framework "
              "megatron layout, whose overlap_p2p_comm is on unless --no-overlap-p2p-communication, else 0).")
@click.option("--param-gather-overlap", type=float, default=0.0, show_default=True,
              help="Training with a layout, ZeRO-1/2: the fraction of the next step's first forward the parameter "
              "all-gather runs under (1: Megatron-Core's --overlap-param-gather; 0: exposed).")
@click.option("--no-align-grad-reduce", is_flag=True,
              help="Training with an interleaved --framework megatron layout: each model chunk's gradient reduce "
              "starts as the chunk's last backward ends (NeMo 2.2, which sets no grad_sync_func), not r backwards "
              "later on pipeline rank r (Megatron-LM's align_grad_reduce, the default).")
@click.option("--ep-overlap", type=float, default=0.0, show_default=True,
              help="Training with a layout, --ep > 1: the fraction of each micro-batch's expert all-to-all hidden "
              "behind compute in the combined 1F1B's paired steps (the warm-up forwards and cool-down backwards "
              "run alone, exposed; 1: Megatron-Core's --overlap-moe-expert-parallel-comm, Megatron-Bridge's "
              "moe_a2a_overlap; 0: exposed).")
@click.option("--overlap-slowdown", type=float, default=None,
              help="Training with a layout: how much slower compute runs while a hidden collective runs beside it "
              "(default: nccl_facts.json's overlap_compute_slowdown, Lee et al. 2025's measured average; 0: free "
              "overlap).")
@click.option("--compile", "compiled", is_flag=True,
              help="With --time-model kernels: torch.compile's fusions (a residual add with the next norm, a "
              "gated activation with its product; docs/time.md).")
@click.option("--cuda-graphs", type=click.Choice(["auto", "on", "off"]), is_flag=False, flag_value="on", default="off",
              callback=lambda ctx, param, value: graphs_replayed("--cuda-graphs", value),
              help="Inference: decode steps replayed from a CUDA graph (no CPU launch overhead; each kernel keeps "
              "the GPU's gap between kernels, the hardware's graph_kernel_s). Alone or `on`, as serve's and "
              "plan's `--cuda-graphs on`; auto (Hugging Face generate's) and off: eager.")
@click.option("--eager-prefill", is_flag=True,
              help="Inference, with --compile: the prefill runs eager beside the compiled decode steps (gpt-fast's, "
              "torchao's and torchchat's generate.py compile decode_one_token alone unless --compile_prefill).")
@click.option("--cuda-graph-scope", "graph_scopes", multiple=True,
              type=click.Choice(spec.CUDA_GRAPH_SCOPES),
              help="Training with a layout, --framework megatron: what Megatron-Core captures in CUDA graphs (its "
              "cuda_graph_scope; repeatable). The kernel model prices each MoE layer's device-to-host sync (the "
              "host's calls against the GPU's work, a captured scope one replay); full_iteration: none. Default: "
              "eager, one sync a MoE layer forward.")
@click.option("--launch-overhead", type=float, default=None,
              help="Seconds of launch overhead per block's kernels, eager (default: the hardware file's overhead_s_per_block).")
@click.option("--graph-kernel-gap", type=float, default=None,
              help="With --cuda-graphs, kernel model: seconds each replayed kernel takes beyond its work (default: the "
              "hardware file's graph_kernel_s, 0 where none is published).")
@click.option("--host-op-time", type=float, default=None,
              help="Eager, kernel model: the host's seconds per eager op (default: the hardware file's "
              "module_s_per_op, else dispatch_s_per_op; a GPU file stating neither borrows the project's "
              "H200 host's, 6.55 us, and says so).")
@choice_option("--time-model", spec.TIME_MODELS, TIME_MODEL_HELP)
@click.option("--weight-dtype", type=click.Choice(spec.WEIGHT_DTYPE_CHOICES), default=None,
              help=f"Inference: quantized weights ({spec.WEIGHT_DTYPE_CHOICES.listed()}), read as stored. "
              f"{spec.WEIGHT_DTYPE_DEFAULT}")
@click.option("--weight-group", type=click.IntRange(min=1), default=None, help="Inference: values per scale of --weight-dtype.")
@weight_bits_option
@click.option("--quantize-head", is_flag=True, default=False,
              help="Inference: the output head in --weight-dtype too, as gpt-fast and torchao quantize it "
              "(default: bf16, as bitsandbytes, AWQ, GPTQ and vLLM leave it); the embedding stays in --dtype.")
@choice_option("--quant-layout", spec.QUANT_LAYOUTS, "Inference, --weight-dtype int8 or int4: how the weights are "
               f"stored and read: {spec.QUANT_LAYOUTS.described()}.", spec.DEFAULT_QUANT_LAYOUT)
@click.option("--cache-size", type=LENGTH, default=None,
              help="Inference, --kv-cache static: the cache's allocated tokens, which every decode step attends "
              "whole, filled or not (torchao's generate.py --cache_size, transformers' StaticCache max_cache_len); "
              "default: a step attends the prompt and the tokens so far. One GPU (no layout).")
@click.option("--kv-dtype", type=click.Choice(spec.KV_DTYPES), default=None, help=f"Inference: a quantized KV cache ({spec.KV_DTYPES.listed()}): its memory, and its reads where --decode-code's attention reads it as stored (tensorrt-llm).")
@choice_option("--fp8-gemm", spec.FP8_GEMMS, f"Inference, --weight-dtype fp8: how its GEMMs multiply: "
               f"{spec.FP8_GEMMS.described()}.", spec.DEFAULT_FP8_GEMM)
@decode_code_option("Inference: ", spec.DEFAULT_DECODE_CODE)
@layout_options
@mtp_option
@untimed_offload_option
@json_option("As JSON on stdout.")
def simulate(model, config, hardware_name, prompt, gen, batch, dtype, attention, kv_cache, mla, train, seq_len,
             tgt_len, recompute, recompute_layers, optimizer, tokens, price, step_time, compute_efficiency, memory_efficiency, global_batch, impl,
             flops_convention, tp_overlap, async_tp, tp_comm_overlap, dp_overlap, overlap_grad_reduce, no_prefetch, pp_overlap, param_gather_overlap, ep_overlap, overlap_slowdown,
             no_align_grad_reduce, compiled, cuda_graphs, eager_prefill, graph_scopes,
             launch_overhead, graph_kernel_gap, host_op_time, time_model, weight_dtype, weight_group, weight_bits, quantize_head, quant_layout,
             cache_size, kv_dtype, fp8_gemm,
             decode_code, mtp,
             as_json, **layout_given) -> None:
    """Time of prefill, decode and training on a hardware preset (the kernel-level model by default,
    --time-model roofline for the roofline); with a layout
    (--tp/--pp/--dp...), per GPU: the step time with communication and pipeline bubble, MFU and
    HFU, or the time per output token with tensor parallelism's all-reduces."""
    from costmodel import roofline as sim
    from costmodel.hardware import load_hardware

    refuse_other_mode(click.get_current_context(), train)
    cfg = with_mtp(load_model(model, config), mtp if train else None)
    refuse_mla_without_latent(click.get_current_context(), cfg)
    try:
        if graph_kernel_gap is not None and not (cuda_graphs and time_model != "roofline"):
            raise ConfigError("--graph-kernel-gap is the per-kernel gap of a CUDA graph's replay: it needs "
                              "--cuda-graphs and the kernel model (the roofline counts no kernels).")
        hardware = with_launches(load_hardware(hardware_name), launch_overhead, graph_kernel_gap, host_op_time)
        if host_op_time is not None and time_model_for(hardware, time_model, dtype) != "kernels":
            raise ConfigError("--host-op-time is the host's time per eager op, which the kernel model weighs against "
                              "the kernels; the roofline counts no ops: drop one of them.")
        hardware.require_fp8(layout_given.get("fp8"))
        require_attention(hardware, attention)  # a typed flash on a T4: one line
        efficiency = efficiency_of(hardware, compute_efficiency, memory_efficiency)
        from costmodel.cost import add_generation_cost, check_price, check_run_inputs

        check_run_inputs(tokens, price if train else None, step_time)  # inf: "time to train inf"
        if not train:
            check_price(price)  # inference's price needs no --tokens: it costs the generated tokens
        note = None
        if dtype is None:
            dtype = hardware.default_dtype
            if hardware.name == "local":
                note = (f"dtype {dtype}: the dtype `local` was calibrated in (--dtype to choose; "
                        "`hardware --measure --dtype bf16` measures another)")
        if global_batch is not None:
            derived = microbatches_for(global_batch, batch, layout_given)
            if layout_given.get("microbatches") not in (None, derived):
                raise ConfigError(f"--global-batch {global_batch} sets --microbatches to global / (batch x dp) = "
                                  f"{derived}, not {layout_given['microbatches']}: give one of them.")
            layout_given["microbatches"] = derived
        if not train:
            require_decoder(cfg)  # before the workload warns that generated tokens are ignored
        layout = make_layout(cfg, layout_given, inference=not train)
        if train:
            refuse_unread_moe_options(click.get_current_context(), cfg, layout,
                                      time_model_for(hardware, time_model, dtype))
        overlap_given = [name for name, given in (
            ("--tp-overlap", tp_overlap != 0.0), ("--async-tp", async_tp), ("--tp-comm-overlap", tp_comm_overlap is not None),
            ("--dp-overlap", dp_overlap is not None),
            ("--overlap-grad-reduce", overlap_grad_reduce), ("--pp-overlap", pp_overlap is not None),
            ("--param-gather-overlap", param_gather_overlap != 0.0), ("--ep-overlap", ep_overlap != 0.0),
            ("--no-prefetch", no_prefetch), ("--overlap-slowdown", overlap_slowdown is not None),
            ("--no-align-grad-reduce", no_align_grad_reduce)) if given]
        if sum((async_tp, tp_overlap != 0.0, tp_comm_overlap is not None)) > 1:
            raise ConfigError("--async-tp, --tp-comm-overlap and --tp-overlap each set what the tensor-parallel "
                              "communication hides: give one of them.")
        if dp_overlap is not None and overlap_grad_reduce:
            raise ConfigError("--dp-overlap and --overlap-grad-reduce both set how the gradient reduction overlaps "
                              "the backward (--overlap-grad-reduce is --dp-overlap 2/3): give one of them.")
        if overlap_given and not (train and layout is not None):
            raise ConfigError(f"{', '.join(overlap_given)}: the overlap options time training with a layout "
                              "(--train with --tp/--pp/--dp/...); nothing here would read them.")
        if overlap_given:  # each on a layout with the collective it hides (layout/overlap.py unread_overlaps)
            from costmodel.layout.overlap import unread_overlaps

            unread = unread_overlaps(layout)
            for name in overlap_given:
                field = OVERLAP_FIELDS.get(name)
                if field in unread:
                    raise ConfigError(f"{name} sets an overlap this layout has nothing for ({unread[field]}).")
        framework = layout.framework if layout else None
        for attention_note in (fallback_note(framework, impl, attention, cfg.family, has_attention(cfg), inference=not train),
                               unfused_note(framework, attention, runs_flash(hardware), has_attention(cfg))):
            if attention_note:
                click.echo(f"note: {attention_note}", err=True)
        code = implied(framework, impl, attention, cfg.family, runs_flash(hardware))
        why = (attention_source(framework, impl, attention, cfg.family, runs_flash(hardware), inference=not train)
               if has_attention(cfg) else None)
        impl, attention = code["impl"], code["attention"]
        if train and weight_dtype == spec.UNQUANTIZED and weight_group is None:
            weight_dtype = None  # unquantized weights: what training holds anyway
        quantization = {"weight_dtype": weight_dtype, "weight_group": weight_group, "kv_dtype": kv_dtype}
        if train and (any(v is not None for v in quantization.values()) or fp8_gemm != spec.DEFAULT_FP8_GEMM):
            raise ConfigError("--weight-dtype, --weight-group, --kv-dtype and --fp8-gemm are inference options; "
                              "training on quantized weights (QLoRA) is `finetune`'s.")
        if fp8_gemm != spec.DEFAULT_FP8_GEMM:  # (Workload checks it applies: fp8 weights only)
            quantization["fp8_gemm"] = fp8_gemm
        if quantize_head:  # (Workload checks it applies: a weight format, an untied head)
            if train:
                raise ConfigError("--quantize-head is an inference option (with --weight-dtype).")
            quantization["quantize_head"] = True
        if weight_bits is not None:  # (Workload checks it applies: exl2)
            if train:
                raise ConfigError("--weight-bits is an inference option (with --weight-dtype exl2).")
            quantization["weight_bits"] = weight_bits
        if quant_layout != spec.DEFAULT_QUANT_LAYOUT:  # (Workload checks it applies: int8 or int4)
            if train:
                raise ConfigError("--quant-layout is an inference option (with --weight-dtype int8 or int4).")
            quantization["quant_layout"] = quant_layout
        source = None
        if not train:  # the weights' format: the checkpoint's unless --weight-dtype says
            quantization = inference_options(cfg, quantization)
            source = quantization.pop("weight_dtype_source")
        if layout is not None:
            from costmodel.layout import timing as parallel_time
            from costmodel.layout.overlap import framework_overlap

            if train:
                workload = make_workload(cfg, seq_len, holds_cache=False, batch=batch, dtype=dtype, recompute=recompute,
                                         recompute_layers=recompute_layers, attention=attention, impl=impl,
                                         optimizer=optimizer, tgt_len=tgt_len)
                stated = dict(tp=tp_overlap, prefetch=not no_prefetch, slowdown=overlap_slowdown,
                              params=param_gather_overlap, ep=ep_overlap, align_grad=not no_align_grad_reduce)
                if pp_overlap is not None:  # else the framework's (Megatron's interleaved overlap_p2p_comm)
                    stated["pp"] = pp_overlap
                if dp_overlap is not None:  # else the framework's (Megatron's --overlap-grad-reduce off)
                    stated["dp"] = dp_overlap
                overlap = framework_overlap(layout, stated, True if overlap_grad_reduce else None)
                if async_tp:  # torchtitan's Async TP: its fused ops priced one by one (costmodel/layout/async_tp.py)
                    from dataclasses import replace

                    from costmodel.layout import async_tp as micro_pipeline

                    micro_pipeline.check(layout, compiled)
                    overlap = replace(overlap, async_tp=True)
                if tp_comm_overlap is not None:  # TE's userbuffers op by op (costmodel/layout/ub_overlap.py)
                    from dataclasses import replace

                    from costmodel.layout.ub_overlap import check as check_ub

                    check_ub(layout, time_model_for(hardware, time_model, dtype))
                    overlap = replace(overlap, ub=tp_comm_overlap)
                result = parallel_time.simulate_training(cfg, workload, layout, hardware, efficiency,
                                                         tokens, step_time, flops_convention, time_model, overlap,
                                                         compiled, price, graph_scopes)
            else:
                sim.refuse_layout_cache_size(cache_size)
                workload = make_workload(cfg, prompt, batch=batch, dtype=dtype, attention=attention,
                                         gen_tokens=gen, precision="pure", kv_cache=kv_cache, mla=mla, **quantization)
                result = parallel_time.simulate_decode(cfg, workload, layout, hardware, efficiency,
                                                       cuda_graphs, time_model, compiled,
                                                       implementation=decode_code, eager_prefill=eager_prefill)
            result["inputs"] = {"model": cfg.name, **hardware.input_fields(), "dtype": workload.dtype,
                                "seq_len": workload.seq_len, "gen": workload.gen_tokens,
                                "batch": workload.batch, "recompute": workload.recompute,
                                "tokens": tokens, **{k: v for k, v in quantization.items() if v is not None}}
            if train:  # the code the step was timed as (the framework's unless given), as one GPU's says
                result["inputs"].update(training_inputs(cfg, workload, overlap, graph_scopes))
            else:
                result["inputs"].update(decode_inputs(workload, cuda_graphs, compiled, latent=bool(cfg.mla)),
                                        implementation=decode_code, **({"eager_prefill": True} if eager_prefill else {}))  # whose counted ops an eager step's hosts issue
        elif train:
            if time_model == "kernels" or compiled or graph_scopes:
                raise ConfigError("training on one GPU is timed by the roofline; give a layout (e.g. --dp 1) "
                                  "for --time-model kernels, --compile or --cuda-graph-scope.")
            workload = make_workload(cfg, seq_len, holds_cache=False, batch=batch, dtype=dtype, recompute=recompute,
                                     recompute_layers=recompute_layers, optimizer=optimizer, tgt_len=tgt_len,
                                     **implied(None, impl, attention, cfg.family))
            from costmodel.roofline_training import simulate_training

            result = simulate_training(cfg, workload, hardware, tokens=tokens, step_seconds=step_time,
                                       efficiency=efficiency, flops_convention=flops_convention, price=price)
        else:
            workload = make_workload(cfg, prompt, batch=batch, dtype=dtype, attention=attention, gen_tokens=gen,
                                     **generation_start(cfg), **quantization)
            result = sim.simulate_inference(cfg, hardware, prompt=workload.seq_len, gen=gen, batch=batch,
                                            dtype=workload.dtype, efficiency=efficiency, attention=attention,
                                            kv_cache=kv_cache, cuda_graphs=cuda_graphs,
                                            quantization=quantization, time_model=time_model, compiled=compiled,
                                            mla=mla, implementation=decode_code, cache_size=cache_size,
                                            eager_prefill=eager_prefill)
        if why is not None:  # which attention was timed and why, where none was typed
            result["inputs"]["attention_source"] = why
        if not train:
            add_generation_cost(result, hardware, price)  # a price that overflows the cost: one line
        if host_op_time is not None:
            unread_host_op_time(result, hardware, train, layout, compiled)
    except ConfigError as error:
        raise InputError(str(error)) from None
    if note:
        result["inputs"]["dtype_note"] = note
        click.echo(f"note: {note}", err=True)
    if source:
        result["inputs"]["weight_dtype_source"] = source
    if as_json:  # the verdict first, as the text puts it where the memory does not fit
        verdict = {key: result[key] for key in ("fits", "memory_capacity") if key in result}
        click.echo(json.dumps(finite({**verdict, **result, "units": JSON_UNITS["simulate"]}), indent=2))
        return
    from reports.simulate_text import (render_inference, render_parallel_decode, render_parallel_training,
                                       render_training)

    if layout is not None:
        click.echo(render_parallel_training(result) if train else render_parallel_decode(result))
    else:
        click.echo(render_training(result) if train else render_inference(result))
