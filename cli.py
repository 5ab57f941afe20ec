"""The command line: a thin click group over costmodel/, validate/ and reports/.

Each command parses its options, calls the library and formats the result. Errors in the input end
with one line on stderr and exit status 2; no formula lives here.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from costmodel.config import (ATTENTIONS, DTYPES, IMPLEMENTATIONS, KV_CACHES, OPTIMIZERS, PRECISIONS, RECOMPUTES,
                              ConfigError, ModelConfig, Workload, require_decoder)
from costmodel.defaults import DEFAULT_DTYPE, DEFAULT_HARDWARE, DEFAULT_RECOMPUTE, implied
from costmodel.hardware import DEFAULT_TIME_MODEL, TIME_MODELS
from costmodel.layout.frameworks import FRAMEWORKS


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit status 2."""

    exit_code = 2


class Mismatch(click.ClickException):
    """A formula and its measurement disagree: exit status 1."""

    exit_code = 1


def require_measure_extra(what: str) -> None:
    """One line and exit status 2 when torch/transformers (the `measure` extra) are missing."""
    from validate import needs_measure_extra

    message = needs_measure_extra(what)
    if message:
        raise InputError(message)


def load_model(model: str | None, config: str | None) -> ModelConfig:
    """The ModelConfig named by --model or read from --config (exactly one of them)."""
    from costmodel.hub import load_named
    from costmodel.presets import load_config_file

    if (model is None) == (config is None):
        raise InputError("give exactly one of --model NAME or --config PATH.")
    try:
        return load_named(model) if model is not None else load_config_file(config)
    except ConfigError as error:
        raise InputError(str(error)) from None


def make_workload(cfg: ModelConfig, seq_len: int | None, **options: Any) -> Workload:
    """A Workload with the defaults (costmodel.api.make_workload: seq_len 2048, or the model's
    context if that is shorter); its warnings go to stderr."""
    from costmodel.api import make_workload as workload_for

    try:
        workload, warnings = workload_for(cfg, seq_len, **options)
    except ConfigError as error:
        raise InputError(str(error)) from None
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    return workload


def with_mtp(cfg: ModelConfig, mtp: int | None) -> ModelConfig:
    """The model with DeepSeek-V3's multi-token prediction modules (--mtp N) while training."""
    if not mtp:
        return cfg
    try:
        return cfg.replace(mtp_layers=mtp)
    except ConfigError as error:
        raise InputError(str(error)) from None


MTP_HELP = ("Training: DeepSeek-V3's multi-token prediction, this many modules (norms, a 2d -> d "
            "projection, one more layer, the shared head and a loss; docs/layouts.md).")


def model_options(function):
    """--model / --config, shared by the commands that take one model."""
    function = click.option("--config", "config", type=str, help="A Hugging Face config.json or a ModelConfig JSON file.")(function)
    return click.option("--model", "-m", "model", type=str, help="A preset name or alias, any case (see `models`), or a Hugging Face Hub id (org/name: its config.json, from the local cache first).")(function)


def _expert_load(ctx: Any, param: Any, value: str | None) -> tuple[float, ...] | None:
    """--expert-load as numbers (Workload checks them)."""
    if value is None:
        return None
    try:
        return tuple(float(x) for x in value.split(","))
    except ValueError:
        raise InputError(f"--expert-load must be comma-separated numbers, got {value!r}.") from None


IMPL_HELP = ("Whose code the activation memory models: hf, reference or megatron (default: the "
             "framework's, megatron for --framework megatron, else hf; costmodel/defaults.py).")
ATTENTION_HELP = ("eager, sdpa or flash; fused kernels keep no n x n matrix (default: the framework's, "
                  "flash for megatron, sdpa for deepspeed and fsdp2; eager without a layout).")


def workload_options(function):
    """The workload options shared by estimate and the commands built on it."""
    options = [
        click.option("--seq-len", "-n", type=int, help="Tokens per sequence (encoder side for encoder-decoders). Default 2048 or the model's context."),
        click.option("--tgt-len", type=int, help="Decoder tokens of an encoder-decoder (default: --seq-len)."),
        click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences per batch."),
        click.option("--dtype", type=click.Choice(DTYPES), default=DEFAULT_DTYPE, show_default=True, help="Weights and activations."),
        click.option("--impl", type=click.Choice(IMPLEMENTATIONS), default=None, help=IMPL_HELP),
        click.option("--attention", type=click.Choice(ATTENTIONS), default=None, help=ATTENTION_HELP),
        click.option("--recompute", type=click.Choice(RECOMPUTES), default=DEFAULT_RECOMPUTE, show_default=True,
                     help="Activation recomputation: none, selective (the attention core) or full (each layer)."),
        click.option("--gen-tokens", "-T", type=int, default=0, show_default=True, help="Tokens generated after the prefill (KV cache)."),
        click.option("--optimizer", type=click.Choice(OPTIMIZERS), default="adamw", show_default=True,
                     help="The optimizer whose state is counted: adamw (two moments) or sgd (none)."),
        click.option("--precision", type=click.Choice(PRECISIONS), default="mixed", show_default=True,
                     help="mixed: --dtype weights and gradients, fp32 master weights and moments (2 + 2 + 12 "
                     "bytes a parameter with AdamW); pure: everything in --dtype, as torch.optim on a model "
                     "built in it; megatron: fp32 gradients too (2 + 4 + 12); fsdp2: fp32 sharded weights and "
                     "gradients, fp32 moments (4 + 4 + 8)."),
        click.option("--weight-dtype", default=None,
                     help="Quantized inference weights: int8 (LLM.int8), int4 (GPTQ/AWQ), fp8 or nf4 "
                     "(bitsandbytes); embeddings, head and norms stay in --dtype."),
        click.option("--weight-group", type=int, default=None,
                     help="Values per scale (and zero): int4 128, nf4 64 by default; int8 per row unless given."),
        click.option("--no-double-quant", "double_quant", flag_value=False, default=True,
                     help="nf4 without double quantisation of its scales."),
        click.option("--kv-dtype", default=None, help="A quantized KV cache: fp8 or int8."),
        click.option("--expert-load", default=None, callback=_expert_load,
                     help="Mixture of experts: tokens routed to each expert, as relative shares "
                     "(e.g. 3,1,1,1,1,1,1,1); default balanced. Sets per-expert FLOPs, not totals."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """An analytic cost model for Transformers, proven against real PyTorch code."""


LAYOUT_OPTIONS = ("dp", "tp", "pp", "sp", "zero", "microbatches", "schedule", "virtual_stages",
                  "framework", "stage_layers", "gpus", "device", "ep", "capacity_factor", "fp8", "cp",
                  "cp_rotate")


def layout_options(function):
    """The parallel layout: group sizes, schedule, ZeRO stage, framework (costmodel/layout)."""
    from costmodel.layout.spec import SCHEDULES

    options = [
        click.option("--dp", type=int, default=None, help="Data-parallel ranks (--batch is per rank)."),
        click.option("--tp", type=int, default=None, help="Tensor-parallel ranks."),
        click.option("--pp", type=int, default=None, help="Pipeline-parallel ranks (stages)."),
        click.option("--sp", is_flag=True, default=None, help="Sequence parallelism over the tensor-parallel ranks."),
        click.option("--zero", type=click.IntRange(0, 3), default=None, help="ZeRO stage: 1 optimizer state, 2 + gradients, 3 + parameters sharded over dp."),
        click.option("--microbatches", type=int, default=None, help="Micro-batches per step per pipeline (gradient accumulation without --pp); global batch = batch x microbatches x dp."),
        click.option("--schedule", type=click.Choice(SCHEDULES), default=None, help="Pipeline schedule (default 1f1b)."),
        click.option("--virtual-stages", type=int, default=None, help="Stages per pipeline rank (interleaved)."),
        click.option("--framework", type=click.Choice(tuple(FRAMEWORKS)), default=None,
                     help="Whose conventions set the bytes per parameter, sharding and collectives (default deepspeed: 2 + 2 + 12, as estimate prints)."),
        click.option("--stage-layers", type=str, default=None, help="Layers per stage, comma-separated (an uneven split)."),
        click.option("--gpus", type=int, default=None, help="Check that tp x pp x dp is this many GPUs."),
        click.option("--device", "layout_device", type=click.Choice(("cuda", "cpu")), default=None,
                     help="Where the ranks run (torch's AdamW keeps its step counters on the host on CUDA)."),
        click.option("--ep", type=int, default=None,
                     help="Expert-parallel ranks, drawn from dp: each holds E / ep experts (docs/layouts.md)."),
        click.option("--cp", type=int, default=None,
                     help="Context-parallel ranks: each holds seq-len / cp tokens of every sequence (docs/layouts.md)."),
        click.option("--cp-rotate", type=click.Choice(("allgather", "ring")), default=None,
                     help="How context parallelism moves keys and values (default allgather, torch's)."),
        click.option("--fp8", type=click.Choice(("tensorwise", "rowwise", "blockwise")), default=None,
                     help="FP8 training: the layers' linear products at the FP8 peak, as torchao's tensorwise "
                     "or rowwise recipe or DeepSeek-V3's blockwise one (docs/layouts.md)."),
        click.option("--capacity-factor", type=float, default=None,
                     help="Mixture of experts: each expert takes at most this times its balanced share of "
                     "the routed tokens, the rest are dropped (default: dropless)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def offload_options(function):
    """DeepSpeed's ZeRO-Offload and ZeRO-Infinity (costmodel/offload.py), for estimate's layout."""
    from costmodel.offload import OFFLOAD_DEVICES, OFFLOADS

    options = [
        click.option("--offload", type=click.Choice(OFFLOADS), default=None,
                     help="DeepSpeed offload: optimizer (ZeRO-Offload, --zero 1-3) or params too (ZeRO-Infinity, --zero 3)."),
        click.option("--offload-device", type=click.Choice(OFFLOAD_DEVICES), default=None,
                     help="Where the offloaded state lives (nvme needs --zero 3; default cpu)."),
        click.option("--gpus-per-node", type=int, default=None,
                     help="GPUs sharing a host, for host memory per node (default 8)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


OFFLOAD_OPTIONS = ("offload", "offload_device", "gpus_per_node")


def microbatches_for(global_batch: int, batch: int, layout_given: dict[str, Any]) -> int:
    """Micro-batches per step for a global batch: global / (micro-batch x dp)."""
    dp = layout_given.get("dp") or 1
    if global_batch < 1 or global_batch % (batch * dp):
        raise InputError(f"--global-batch {global_batch} is not a multiple of batch x dp = {batch} x {dp}.")
    return global_batch // (batch * dp)


def make_layout(cfg: ModelConfig, options: dict[str, Any]) -> Any:
    """The Layout the options describe, checked against the model; None if none was given."""
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return None
    from costmodel.layout import Layout

    gpus = given.pop("gpus", None)
    if "layout_device" in given:
        given["device"] = given.pop("layout_device")
    if "stage_layers" in given:
        try:
            given["stage_layers"] = tuple(int(x) for x in given["stage_layers"].split(","))
        except ValueError:
            raise InputError(f"--stage-layers {given['stage_layers']!r}: give integers separated by commas.") from None
    try:
        layout = Layout(**given)
        layout.check(cfg, gpus)
    except ConfigError as error:
        raise InputError(str(error)) from None
    return layout


@cli.command()
@model_options
@workload_options
@layout_options
@offload_options
@click.option("--hardware", "hardware_name", default=None,
              help="A GPU (see `hardware`): say whether training and inference fit in its memory, and what to change if not.")
@click.option("--mtp", type=click.IntRange(min=0), default=None, help=MTP_HELP)
@click.option("--json", "as_json", is_flag=True, help="Exact integers as JSON on stdout.")
def estimate(model, config, seq_len, hardware_name, mtp, as_json, **options) -> None:
    """Parameters, FLOPs, memory and the regime of a model for a workload; with a layout, the
    memory and communication of each rank; with --hardware (and --gpus), whether it fits."""
    from costmodel.estimation import Estimate

    layout_given = {k: options.pop(k) for k in list(options)
                    if k in LAYOUT_OPTIONS or k in OFFLOAD_OPTIONS or k == "layout_device"}
    cfg = with_mtp(load_model(model, config), mtp)
    gpus = layout_given.get("gpus")
    if hardware_name is not None and all(v is None for k, v in layout_given.items() if k != "gpus"):
        layout_given["gpus"] = None  # --gpus alone with --hardware: data parallel over them
    layout = make_layout(cfg, layout_given)
    options.update(implied(layout.framework if layout else None, options["impl"], options["attention"]))
    workload = make_workload(cfg, seq_len, **options)
    try:
        result = Estimate(cfg, workload, layout)
        data = result.to_dict()
        if hardware_name is not None:
            from costmodel.hardware import load_hardware
            from costmodel.verdict import verdict

            hardware = load_hardware(hardware_name)
            data["fit"] = {"hardware": hardware.name, **{
                phase: verdict(cfg, workload, layout, capacity, gpus, phase)
                for phase, capacity in (("training", hardware.training_memory_bytes),
                                        ("inference", hardware.serving_memory_bytes))}}
    except ConfigError as error:
        raise InputError(str(error)) from None
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=False))
        return
    from reports.text import render_estimate, render_fit

    click.echo(render_estimate(data, result.held_rows))
    if "fit" in data:
        click.echo("")
        click.echo(render_fit(data["fit"]))


@cli.command()
@model_options
@click.option("--block", "block", default=None, help="Only blocks whose path contains this text (e.g. attention, ffn, lm_head).")
@click.option("--quantity", "quantities", multiple=True, help="params, flops_matmul, flops_other, flops_matmul_backward, saved_bytes, kv_cache_bytes, bytes_matmul, bytes_other, bytes_moved, and a training step's buffer_bytes, input_bytes, result_bytes, backward_transient_bytes, step_transient_bytes, step_state_bytes, bytes_optimizer, ... (default: all non-zero).")
@click.option("--latex", is_flag=True, help="Print LaTeX instead of plain sympy text.")
def formulas(model, config, block, quantities, latex) -> None:
    """The sympy expressions every number comes from, block by block."""
    from costmodel import symbols as S
    from costmodel.blocks import Cost
    from costmodel.tree import CostModel

    cfg = load_model(model, config)
    known = Cost.QUANTITIES + Cost.STEP_QUANTITIES
    unknown = [q for q in quantities if q not in known]
    if unknown:
        raise InputError(f"unknown quantity {unknown[0]!r}; use one of {', '.join(known)}.")
    cost_model = CostModel(cfg)
    leaves = [leaf for leaf in cost_model.leaves if block is None or block in leaf.path]
    if not leaves:
        raise InputError(f"no block of {cfg.name} has {block!r} in its path.")
    show = S.latex if latex else str
    for leaf in leaves:
        click.echo(f"{leaf.path}  (x {show(leaf.count)}): {leaf.block.title}")
        for quantity in quantities or known:
            expr = leaf.cost.get(quantity)
            if expr != 0:
                click.echo(f"  {quantity} = {show(expr)}")
    click.echo(f"symbols: {', '.join(f'{k}: {v}' for k, v in S.DESCRIPTIONS.items())}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="As JSON on stdout.")
def models(as_json) -> None:
    """The presets, one line each, with their aliases: a name or an alias, in any case, works as
    --model (LLAMA2-7B, meta-llama/Llama-2-7b-hf)."""
    from costmodel.estimation import Estimate
    from costmodel.presets import load_preset, preset_aliases
    from reports.text import count, table

    rows = []
    for name, aliases in preset_aliases().items():
        cfg = load_preset(name)
        params = Estimate(cfg, Workload(seq_len=min(2048, cfg.max_positions))).total("params")
        rows.append({
            "name": name, "family": cfg.family, "architecture": cfg.architecture,
            "params": params, "layers": cfg.n_layers, "d_model": cfg.d_model,
            "heads": cfg.n_heads, "kv_heads": cfg.n_kv_heads, "context": cfg.max_positions,
            "position": cfg.position, "aliases": list(aliases),
        })
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(table(
        ["model", "family", "architecture", "params", "layers", "d", "heads", "kv", "context",
         "positions", "aliases"],
        ([r["name"], r["family"], r["architecture"], count(r["params"]), r["layers"], r["d_model"],
          r["heads"], r["kv_heads"], r["context"], r["position"], ", ".join(r["aliases"])]
         for r in rows),
        align="lllrrrrrrll",
    ))


@cli.command()
@model_options
@click.option("--hardware", "hardware_name", default=DEFAULT_HARDWARE, show_default=True, help="A hardware preset (see `hardware`; any case) or a path to a hardware file (docs/time.md).")
@click.option("--prompt", type=int, default=None, help="Prompt tokens (inference). Default 2048, or what the context leaves after --gen.")
@click.option("--gen", type=int, default=128, show_default=True, help="Tokens to generate (inference).")
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences per batch.")
@click.option("--dtype", type=click.Choice(DTYPES), default=None,
              help="Weights and activations (default: the hardware's, bf16 for the GPU presets and the "
              "calibrated dtype for local).")
@click.option("--attention", type=click.Choice(ATTENTIONS), default=None, help=ATTENTION_HELP)
@click.option("--kv-cache", type=click.Choice(KV_CACHES), default="dynamic", show_default=True,
              help="dynamic: each decode step copies the cache to append (torch.cat, Hugging Face's default); "
              "static: a preallocated cache written in place.")
@click.option("--mla", type=click.Choice(("naive", "absorbed")), default="naive", show_default=True,
              help="Latent attention (DeepSeek): naive (every cached latent up-projected each step, as "
              "transformers runs it) or absorbed (W_UK/W_UV folded into queries and output, as vLLM runs it).")
@click.option("--train", is_flag=True, help="Simulate a training step instead of inference.")
@click.option("--seq-len", "-n", type=int, default=None, help="Training sequence length (default 2048 or the context).")
@click.option("--recompute", type=click.Choice(RECOMPUTES), default=DEFAULT_RECOMPUTE, show_default=True, help="Training: none, selective or full.")
@click.option("--tokens", type=float, default=None, help="Training: tokens to train on (e.g. 2e12) for the time to train.")
@click.option("--price", type=float, default=None, help="Training with --tokens: dollars per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one).")
@click.option("--step-time", type=float, default=None, help="Training: a measured step time in seconds, for its MFU.")
@click.option("--compute-efficiency", type=float, default=None, help="Fraction of peak FLOP/s reached (default: the preset's).")
@click.option("--memory-efficiency", type=float, default=None, help="Fraction of peak bandwidth reached (default: the preset's).")
@click.option("--global-batch", type=int, default=None, help="Training with a layout: sequences per step (sets --microbatches = global / (batch x dp)).")
@click.option("--impl", type=click.Choice(IMPLEMENTATIONS), default=None, help="Training: " + IMPL_HELP)
@click.option("--flops-convention", type=click.Choice(("dense", "causal")), default="dense", show_default=True,
              help="Training: the model FLOPs MFU divides by: dense (PaLM's 6N + 12LHQT, every attention pair) "
              "or causal (Megatron's, half the causal attention core). Never counts recomputation.")
@click.option("--tp-overlap", type=float, default=0.0, show_default=True,
              help="Training with a layout: the fraction of tensor-parallel communication hidden behind compute.")
@click.option("--dp-overlap", type=float, default=2 / 3, show_default=True,
              help="Training with a layout: the fraction of the last micro-batch's compute a gradient reduction "
              "(DDP, ZeRO-1/2) overlaps (0: reduced after backward).")
@click.option("--no-prefetch", is_flag=True, help="Training with a layout: FSDP/ZeRO-3 collectives exposed, not prefetched.")
@click.option("--compile", "compiled", is_flag=True,
              help="With --time-model kernels: torch.compile's fusions (a residual add with the next norm, a "
              "gated activation with its product; docs/time.md).")
@click.option("--cuda-graphs", is_flag=True, help="Inference: decode steps replayed from a CUDA graph (no launch overhead per kernel).")
@click.option("--time-model", type=click.Choice(TIME_MODELS), default=None,
              help="kernels (the default: GEMM tiles and waves, flash attention's executed FLOPs) or roofline "
              "(each block's two kernels at the efficiencies); a hardware without sm_count, and training on "
              "one GPU without a layout, are timed by the roofline (docs/time.md).")
@click.option("--weight-dtype", default=None, help="Inference: quantized weights (int8, int4, fp8, nf4), read as stored.")
@click.option("--weight-group", type=int, default=None, help="Inference: values per scale of --weight-dtype.")
@click.option("--kv-dtype", default=None, help="Inference: a quantized KV cache (fp8 or int8): its memory.")
@layout_options
@click.option("--mtp", type=click.IntRange(min=0), default=None, help=MTP_HELP)
@click.option("--json", "as_json", is_flag=True, help="As JSON on stdout.")
def simulate(model, config, hardware_name, prompt, gen, batch, dtype, attention, kv_cache, mla, train, seq_len,
             recompute, tokens, price, step_time, compute_efficiency, memory_efficiency, global_batch, impl,
             flops_convention, tp_overlap, dp_overlap, no_prefetch, compiled, cuda_graphs, time_model,
             weight_dtype, weight_group, kv_dtype, mtp, as_json, **layout_given) -> None:
    """Time of prefill, decode and training on a hardware preset (the kernel-level model by default,
    --time-model roofline for the roofline); with a layout
    (--tp/--pp/--dp...), per GPU: the step time with communication and pipeline bubble, MFU and
    HFU, or the time per output token with tensor parallelism's all-reduces."""
    from costmodel import roofline as sim
    from costmodel.hardware import Efficiency, load_hardware

    cfg = with_mtp(load_model(model, config), mtp if train else None)
    try:
        hardware = load_hardware(hardware_name)
        efficiency = None
        if compute_efficiency is not None or memory_efficiency is not None:
            efficiency = Efficiency(
                compute=hardware.efficiency.get("compute", 1.0) if compute_efficiency is None else compute_efficiency,
                memory=hardware.efficiency.get("memory", 1.0) if memory_efficiency is None else memory_efficiency,
            )
        for name, value in (("--tokens", tokens), ("--step-time", step_time), ("--price", price)):
            if value is not None and not value > 0:
                raise ConfigError(f"{name} must be positive, got {value}.")
        note = None
        if dtype is None:
            dtype = hardware.default_dtype
            if hardware.name == "local":
                note = (f"dtype {dtype}: the dtype `local` was calibrated in (--dtype to choose; "
                        "`hardware --measure --dtype bf16` measures another)")
        if global_batch is not None:
            layout_given["microbatches"] = microbatches_for(global_batch, batch, layout_given)
        if not train:
            require_decoder(cfg)  # before the workload warns that generated tokens are ignored
        layout = make_layout(cfg, layout_given)
        code = implied(layout.framework if layout else None, impl, attention)
        impl, attention = code["impl"], code["attention"]
        if layout is not None:
            from costmodel.layout import timing as parallel_time

            if train:
                workload = make_workload(cfg, seq_len, batch=batch, dtype=dtype, recompute=recompute,
                                         attention=attention, impl=impl)
                overlap = parallel_time.Overlap(tp=tp_overlap, dp=dp_overlap, prefetch=not no_prefetch)
                result = parallel_time.simulate_training(cfg, workload, layout, hardware, efficiency,
                                                         tokens, step_time, flops_convention, time_model, overlap,
                                                         compiled, price)
            else:
                workload = make_workload(cfg, prompt, batch=batch, dtype=dtype, attention=attention,
                                         gen_tokens=gen, precision="pure", kv_cache=kv_cache,
                                         weight_dtype=weight_dtype, weight_group=weight_group, kv_dtype=kv_dtype)
                result = parallel_time.simulate_decode(cfg, workload, layout, hardware, efficiency,
                                                       cuda_graphs, time_model, compiled)
            result["inputs"] = {"model": cfg.name, "hardware": hardware.name, "dtype": workload.dtype,
                                "seq_len": workload.seq_len, "gen": workload.gen_tokens,
                                "batch": workload.batch, "recompute": workload.recompute,
                                "tokens": tokens}
        elif train:
            if time_model == "kernels" or compiled:
                raise ConfigError("training on one GPU is timed by the roofline; give a layout (e.g. --dp 1) "
                                  "for --time-model kernels or --compile.")
            workload = make_workload(cfg, seq_len, batch=batch, dtype=dtype, recompute=recompute,
                                     **implied(None, impl, attention))
            result = sim.simulate_training(cfg, workload, hardware, tokens=tokens,
                                           step_seconds=step_time, efficiency=efficiency,
                                           flops_convention=flops_convention, price=price)
        else:
            if gen < 0:
                raise ConfigError(f"--gen must be at least 0, got {gen}.")
            quantization = {"weight_dtype": weight_dtype, "weight_group": weight_group, "kv_dtype": kv_dtype}
            workload = make_workload(cfg, prompt, batch=batch, dtype=dtype, attention=attention, gen_tokens=gen,
                                     **quantization)
            result = sim.simulate_inference(cfg, hardware, prompt=workload.seq_len, gen=gen, batch=batch,
                                            dtype=workload.dtype, efficiency=efficiency, attention=attention,
                                            kv_cache=kv_cache, cuda_graphs=cuda_graphs,
                                            quantization=quantization, time_model=time_model, compiled=compiled,
                                            mla=mla)
    except ConfigError as error:
        raise InputError(str(error)) from None
    if note:
        result["inputs"]["dtype_note"] = note
        click.echo(f"note: {note}", err=True)
    if as_json:
        click.echo(json.dumps(finite(result), indent=2))
        return
    from reports.text import (render_inference, render_parallel_decode, render_parallel_training,
                              render_training)

    if layout is not None:
        click.echo(render_parallel_training(result) if train else render_parallel_decode(result))
    else:
        click.echo(render_training(result) if train else render_inference(result))


@cli.command()
@model_options
@click.option("--hardware", "hardware_name", default=DEFAULT_HARDWARE, show_default=True, help="A hardware preset (see `hardware`; any case) or a path to a hardware file (docs/time.md).")
@click.option("--gpus", type=str, default=None, help="How many GPUs of that kind; several counts comma-separated (8,16,32) to compare them (required unless --serve --rate).")
@click.option("--seq-len", "-n", type=int, default=None, help="Training: tokens per sequence (default 2048 or the context).")
@click.option("--global-batch", type=int, default=None, help="Training: sequences per step (default 8 x gpus).")
@click.option("--serve", is_flag=True, help="Plan serving instead: layouts for --batch sequences of --prompt + --gen tokens.")
@click.option("--batch", "-b", type=int, default=None, help="Training: fix the micro-batch; --serve: the sequences served at once (default 32).")
@click.option("--prompt", type=int, default=None, help="--serve: prompt tokens (default 2048, or what the context leaves after --gen).")
@click.option("--gen", type=int, default=256, show_default=True, help="--serve: generated tokens.")
@click.option("--dtype", type=click.Choice(DTYPES), default=DEFAULT_DTYPE, show_default=True, help="Weights and activations.")
@click.option("--impl", type=click.Choice(IMPLEMENTATIONS), default=None, help="Only this activation profile: " + IMPL_HELP)
@click.option("--attention", type=click.Choice(ATTENTIONS), default=None, help="Only this kernel: " + ATTENTION_HELP)
@click.option("--kv-cache", type=click.Choice(KV_CACHES), default="dynamic", show_default=True,
              help="--serve: dynamic (torch.cat copies the cache each step) or static (written in place).")
@click.option("--tp", type=int, default=None, help="Only this tensor-parallel size.")
@click.option("--pp", type=int, default=None, help="Only this pipeline size.")
@click.option("--dp", type=int, default=None, help="Only this data-parallel size.")
@click.option("--zero", type=click.IntRange(0, 3), default=None, help="Only this ZeRO stage.")
@click.option("--sp/--no-sp", default=None, help="Only with (or without) sequence parallelism.")
@click.option("--framework", type=click.Choice(tuple(FRAMEWORKS)), default=None, help="Only this framework.")
@click.option("--ep", type=int, default=None, help="Only this expert-parallel size (a mixture of experts).")
@click.option("--cp", type=int, default=None, help="Only this context-parallel size (default: 1, and sizes that "
              "keep at least 4096 tokens a rank).")
@click.option("--schedule", type=click.Choice(("gpipe", "1f1b", "interleaved", "zb-h1", "zbv", "dualpipev")),
              default=None, help="Only this pipeline schedule (default: 1f1b and interleaved).")
@click.option("--fp8", type=click.Choice(("tensorwise", "rowwise", "blockwise")), default=None,
              help="Train every layout with this FP8 recipe (docs/layouts.md).")
@click.option("--recompute", type=click.Choice(RECOMPUTES), default=None, help="Only this recomputation.")
@click.option("--tokens", type=float, default=None, help="Training: tokens to train on (e.g. 1e12): each layout's days, GPU-hours and FLOPs.")
@click.option("--price", type=float, default=None, help="Training with --tokens: dollars per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one).")
@click.option("--rank-by", type=click.Choice(("time", "cost")), default="time", show_default=True,
              help="time: step time (time per output token with --serve); cost: GPU-seconds per token, which differs where the GPU counts do.")
@click.option("--mtp", type=click.IntRange(min=0), default=None, help=MTP_HELP)
@click.option("--top", type=int, default=10, show_default=True, help="Rows of the ranked table.")
@click.option("--time-model", type=click.Choice(TIME_MODELS), default=None,
              help="kernels (the default) or roofline, as simulate's (docs/time.md).")
@click.option("--json", "as_json", is_flag=True, help='{"feasible": [...], "infeasible": [...]} on stdout.')
@click.option("--rate", type=float, default=None,
              help="--serve: requests per second to serve within --slo-ttft/--slo-tpot (a capacity search; "
                   "--hardware may list presets).")
@click.option("--slo-ttft", type=float, default=None, help="--serve --rate: p99 time to first token, seconds.")
@click.option("--slo-tpot", type=float, default=None, help="--serve --rate: p99 time per output token, seconds.")
@click.option("--requests", type=int, default=300, show_default=True, help="--serve --rate: requests simulated per point.")
@click.option("--mla", type=click.Choice(("absorbed", "naive")), default="absorbed", show_default=True,
              help="--serve: latent attention (DeepSeek) absorbed, as vLLM runs it, or naive (see simulate).")
def plan(model, config, hardware_name, gpus, seq_len, global_batch, serve, batch, prompt, gen, dtype, impl,
         attention, kv_cache, tp, pp, dp, zero, sp, framework, ep, cp, schedule, fp8, recompute, mtp, tokens, price,
         rank_by, top, time_model, as_json, rate, slo_ttft, slo_tpot, requests, mla) -> None:
    """Every layout of a model on N GPUs: those that do not fit (and why, in a word), the rest
    ranked by step time (training) or time per output token (--serve); with --tokens, the days,
    GPU-hours, FLOPs and dollars of the run. With --serve --rate: the deployments (GPUs, tp,
    replicas, budgets) that meet p99 SLOs, simulated (docs/serving.md). Exit status 1 when no
    layout fits."""
    from costmodel.planning import plan as make_plan

    cfg = with_mtp(load_model(model, config), None if serve else mtp)
    if rate is not None:
        if not serve:
            raise InputError("--rate plans serving: add --serve.")
        from reports.serving import plan_capacity_command

        plan_capacity_command(cfg, hardware_name, rate, slo_ttft, slo_tpot, requests, prompt or 512, gen, tp,
                              top, as_json, mla=mla, pp=pp)
        return
    if gpus is None:
        raise InputError("--gpus is required (how many GPUs of that kind).")
    try:
        counts = [int(x) for x in gpus.split(",")]
    except ValueError:
        raise InputError(f"--gpus {gpus!r}: give a whole number, or several separated by commas.") from None
    try:
        if tokens is not None and not tokens > 0:
            raise ConfigError(f"--tokens must be positive, got {tokens}.")
        result = make_plan(cfg, counts if len(counts) > 1 else counts[0], hardware_name, serve=serve,
                           seq_len=seq_len, global_batch=global_batch, batch=batch, prompt=prompt, gen=gen,
                           dtype=dtype, impl=impl, attention=attention, kv_cache=kv_cache, tokens=tokens,
                           price=price, rank_by=rank_by, time_model=time_model, mla=mla, tp=tp, pp=pp, dp=dp,
                           zero=zero, sp=sp, framework=framework, recompute=recompute, ep=ep, cp=cp,
                           schedule=schedule, fp8=fp8)
    except ConfigError as error:
        raise InputError(str(error)) from None
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(json.dumps(finite(result.to_dict()), indent=2) if as_json else result.text(top))
    if not result.feasible:
        click.get_current_context().exit(1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="The rows as JSON on stdout.")
def published(as_json) -> None:
    """Published training runs beside the layout model: Narayanan et al. 2021 Table 1 (parameters,
    TFLOP/s per GPU), Korthikanti et al. 2022 Table 5 (seconds per iteration, MFU, HFU), more published
    runs (costmodel/published_runs.json), DeepSeek-V3 and Llama 3 405B's 131k-context run."""
    from reports.published_frontier import frontier
    from reports.published_runs import korthikanti, narayanan, other_runs
    from reports.text import table

    tables = {"narayanan_2021_table_1": narayanan(), "korthikanti_2022_table_5": korthikanti(),
              "other_runs": other_runs(), "frontier": frontier()}
    if as_json:
        click.echo(json.dumps(tables, indent=2))
        return
    click.echo("Narayanan et al. 2021, Table 1 (A100 80GB, full recomputation, fp16): TFLOP/s per GPU "
               "with recomputation; parameters ours vs their Eq. (2), which leaves out the final LayerNorm (2h)")
    click.echo(table(["model", "tp x pp x dp", "GPUs", "batch", "parameters", "Eq. (2)", "TFLOP/s published",
                      "TFLOP/s roofline", "roofline / published", "kernels (default) / published"],
                     ([r["model"], r["layout"], r["gpus"], r["batch"], f"{r['params']:,}", f"{r['params_eq2']:,}",
                       r["tflops_published"], f"{r['tflops_ours']:.0f}",
                       f"{r['tflops_ours'] / r['tflops_published']:.2f}",
                       f"{r['tflops_kernels'] / r['tflops_published']:.2f}"] for r in tables["narayanan_2021_table_1"])))
    click.echo("")
    click.echo("Korthikanti et al. 2022, Table 5 (tp 8, no data parallelism): seconds per iteration, and MFU/HFU "
               "of sequence parallelism + selective recomputation")
    click.echo(table(["model", "GPUs", "full recompute published", "roofline", "kernels (default)",
                      "SP + selective published", "roofline", "kernels (default)", "MFU published", "roofline",
                      "kernels", "HFU published", "roofline", "kernels"],
                     ([r["model"], r["gpus"], f"{r['full_published']:.2f} s", f"{r['full_ours']:.2f} s",
                       f"{r['full_kernels']:.2f} s", f"{r['present_published']:.2f} s", f"{r['present_ours']:.2f} s",
                       f"{r['present_kernels']:.2f} s",
                       f"{r['mfu_published']:.1f}%", f"{r['mfu_ours']:.1f}%", f"{r['mfu_kernels']:.1f}%",
                       f"{r['hfu_published']:.1f}%", f"{r['hfu_ours']:.1f}%", f"{r['hfu_kernels']:.1f}%"]
                      for r in tables["korthikanti_2022_table_5"])))
    click.echo("")
    click.echo("More published runs (costmodel/published_runs.json: sources and stated layouts), ours under the "
               "roofline and the kernel-level time model (docs/time.md)")

    def ratio(r: dict, key: str) -> str:
        return f"{r[key]:,.1f} ({r[key] / r['published']:.2f}x)" if r[key] is not None else "not expressible"

    click.echo(table(["run", "unit", "published", "roofline", "kernels (default)"],
                     ([r["run"], r["unit"], f"{r['published']:,}", ratio(r, "roofline"), ratio(r, "kernels")]
                      for r in tables["other_runs"])))

    click.echo("")
    click.echo("Frontier runs (what each assumes: docs/layouts.md)")
    click.echo(table(["run", "layout", "GPUs", "quantity", "published", "roofline", "roofline / published",
                      "kernels (default)", "kernels / published", "memory"],
                     ([r["run"], r["layout"], r["gpus"], r["quantity"], f"{r['published']:,.0f}",
                       f"{r['ours']:,.0f}", f"{r['ratio']:.2f}", f"{r['kernels']:,.0f}", f"{r['kernels_ratio']:.2f}",
                       f"{r['memory_gib']:.1f} GiB"]
                      for r in tables["frontier"])))


def measure_hardware_file(out: str, device: str, like: str | None, dtypes: tuple[str, ...], quick: bool) -> None:
    """`hardware --measure --out FILE`: measure a device and write its hardware file."""
    from pathlib import Path

    from costmodel.hardware import load_hardware

    require_measure_extra("hardware --measure --out")
    import torch

    from validate.hardware_file import measure_file, write_hardware_file

    if device not in ("cpu", "cuda") or device == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device {device}: no such device here (cpu, or cuda where a GPU is present).")
    try:
        reference = load_hardware(like) if like else None
        wanted = tuple(dict.fromkeys(Workload(dtype=d).dtype for d in dtypes)) or (("fp32",) if device == "cpu" else ("bf16",))
        path = Path(out)
        data = measure_file(path.stem, device, wanted, reference, "quick" if quick else "full")
        write_hardware_file(path, data)
    except ConfigError as error:
        raise InputError(str(error)) from None
    click.echo(str(path))


@cli.command()
@click.option("--measure", is_flag=True, help="Benchmark this machine (matmul and vector FLOP/s, bandwidth, overhead) and cache it as `local`.")
@click.option("--dtype", "dtypes", type=click.Choice(DTYPES), multiple=True,
              help="With --measure: the matmul dtypes to measure (repeatable; default fp32, the first is "
              "local's default dtype; bf16 takes about a minute on this kind of CPU).")
@click.option("--show", "shown", default=None,
              help="Print one hardware (a preset's name, any case, or a path to a hardware file) as a "
              "hardware file, after checking it (docs/time.md gives the schema).")
@click.option("--out", "out", default=None,
              help="With --measure: write a hardware file here instead of caching `local` (a GEMM grid, "
              "attention, bandwidth, the CUDA context's memory; validate/hardware_file.py).")
@click.option("--device", default="cuda", show_default=True, help="With --out: the device to measure (cuda or cpu).")
@click.option("--like", default=None, help="With --out: a preset whose datasheet peaks, interconnect and clocks to "
              "keep; the measurements become its efficiencies.")
@click.option("--quick", is_flag=True, help="With --out: a small grid (seconds; for a test).")
@click.option("--json", "as_json", is_flag=True, help="As JSON on stdout.")
def hardware(measure, dtypes, shown, out, device, like, quick, as_json) -> None:
    """The hardware presets; --measure benchmarks this machine as `local` (or, with --out, writes
    a hardware file of a device); --show prints one."""
    from costmodel.hardware import hardware_names, load_hardware
    from reports.text import binary_bytes, si, table

    if out is not None:
        measure_hardware_file(out, device, like, dtypes, quick)
        return
    if shown is not None:
        try:
            click.echo(json.dumps(load_hardware(shown).to_dict(), indent=2))
        except ConfigError as error:
            raise InputError(str(error)) from None
        return
    if measure:
        require_measure_extra("hardware --measure")
        from validate.calibrate import calibrate

        click.echo("measuring matmul and vector FLOP/s, memory bandwidth and per-block overhead "
                   "(about 15 seconds)...", err=True)
        calibrate(dtypes=tuple(dict.fromkeys(Workload(dtype=d).dtype for d in dtypes)) or ("fp32",))
    rows = []
    for name in hardware_names():
        try:
            hw = load_hardware(name)
        except ConfigError:
            continue  # `local` before it is measured
        rows.append({"name": name, "description": hw.description, "flops_per_s": hw.flops_per_s,
                     "vector_flops_per_s": hw.vector_flops_per_s,
                     "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
                     "memory_bytes": hw.memory_bytes, "serving_memory_bytes": hw.serving_memory_bytes,
                     "sm_count": hw.sm_count, "efficiency": hw.efficiency, "source": hw.source})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(table(
        ["hardware", "fp8", "bf16", "fp32", "vector", "bandwidth", "memory", "efficiency (compute/memory)",
         "description"],
        ([r["name"], *(si(r["flops_per_s"][d], "FLOP/s") if d in r["flops_per_s"] else
                       ("not measured" if r["name"] == "local" else "-") for d in ("fp8", "bf16", "fp32")),
          si(r["vector_flops_per_s"], "FLOP/s"), si(r["bandwidth_bytes_per_s"], "B/s"),
          binary_bytes(r["memory_bytes"]),
          f"{r['efficiency'].get('compute', 1):g} / {r['efficiency'].get('memory', 1):g}", r["description"]]
         for r in rows),
        align="lrrrrrrll",
    ))
    if "local" not in {r["name"] for r in rows}:
        click.echo("(local: not measured yet; `python cli.py hardware --measure`)")


@cli.command()
@model_options
@click.option("--all", "all_presets", is_flag=True, help="Every preset.")
@click.option("--quick", is_flag=True, help="Small workloads (n=32, b=2) instead of the defaults.")
@click.option("--target", type=str, default=None, help="hf (Hugging Face's class; default where the family has one) or reference.")
@click.option("--device", default="fake", show_default=True, help="fake (FakeTensorMode: full size, no memory) or cpu (real tensors).")
@click.option("--seq-len", "-n", type=int, default=None, help="Tokens per sequence (default 2048 or the context).")
@click.option("--tgt-len", type=int, default=None, help="Decoder tokens of an encoder-decoder.")
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences per batch.")
@click.option("--dtype", type=click.Choice(DTYPES), default=None, help="Default: bf16 under FakeTensorMode, fp32 on real CPU tensors, where bf16 matmuls are slow.")
@click.option("--attention", default="eager", show_default=True, help="eager or sdpa (the measured model's attention).")
@click.option("--gen-tokens", "-T", type=int, default=2, show_default=True, help="Decode steps after the prefill (KV cache).")
@click.option("--blocks", is_flag=True, help="Also one row per sublayer for parameters and forward FLOPs.")
@click.option("--json", "as_json", is_flag=True, help="Rows as JSON on stdout.")
def validate(model, config, all_presets, quick, target, device, seq_len, tgt_len, batch, dtype,
             attention, gen_tokens, blocks, as_json) -> None:
    """formula == measurement: parameters, FLOPs, saved activations and KV cache, measured."""
    from costmodel.presets import load_preset, preset_names

    require_measure_extra("validate")
    if device not in ("fake", "cpu"):
        raise InputError(f"--device must be fake or cpu, got {device!r}.")
    if target not in (None, "hf", "reference"):
        raise InputError(f"--target must be hf or reference, got {target!r}.")
    if attention not in ("eager", "sdpa"):
        raise InputError(f"--attention must be eager or sdpa for a measurement, got {attention!r}.")
    if all_presets:
        if model is not None or config is not None:
            raise InputError("give --all or one of --model/--config, not both.")
        configs = [load_preset(name) for name in preset_names()]
    else:
        configs = [load_model(model, config)]
    if quick:
        seq_len, batch = seq_len or 32, max(batch, 2)
    dtype = dtype or ("bf16" if device == "fake" else "fp32")
    from validate.compare import prompt_length
    from validate.compare import validate as compare
    from validate.hf_models import HF_FAMILIES

    results, failed = [], False
    for cfg in configs:
        chosen = target or ("hf" if cfg.family in HF_FAMILIES else "reference")
        if chosen == "hf" and cfg.family not in HF_FAMILIES:
            raise InputError(f"model {cfg.name} ({cfg.family}) has no Hugging Face class; use --target reference.")
        length, why = prompt_length(cfg, seq_len, gen_tokens, fit=all_presets)
        if why:
            click.echo(f"note: [{cfg.name}] {why}", err=True)
        workload = make_workload(cfg, length,
                                 tgt_len=tgt_len if cfg.architecture == "encoder-decoder" else None,
                                 batch=batch, dtype=dtype, attention=attention, gen_tokens=gen_tokens)
        progress = (lambda message, name=cfg.name: click.echo(f"[{name}] {message}", err=True))
        try:
            rows = compare(cfg, workload, target=chosen, device=device, blocks=blocks, progress=progress)
        except ValueError as error:
            raise InputError(str(error)) from None
        failed |= not all(row.ok for row in rows)
        results.append((cfg, chosen, workload, rows))
    if as_json:
        click.echo(json.dumps([
            {"model": cfg.name, "target": chosen, "device": device, "seq_len": w.seq_len,
             "tgt_len": w.tgt_len, "batch": w.batch, "dtype": w.dtype, "attention": w.attention,
             "gen_tokens": w.gen_tokens,
             "rows": [{"quantity": r.quantity, "block": r.block or None, "formula": r.formula,
                       "measured": r.measured, "difference": r.difference, "ok": r.ok} for r in rows]}
            for cfg, chosen, w, rows in results], indent=2))
    else:
        from reports.text import table

        for cfg, chosen, w, rows in results:
            click.echo(f"{cfg.name}: {chosen} on {device}, n={w.seq_len}"
                       + (f", m={w.decoder_len}" if cfg.architecture == "encoder-decoder" else "")
                       + f", b={w.batch}, {w.dtype}, {w.attention}, T={w.gen_tokens}")
            click.echo(table(
                ["quantity", "block", "formula", "measured", "difference", "relative", "status"],
                ([r.quantity, r.block, f"{r.formula:,}", f"{r.measured:,}", f"{r.difference:,}",
                  f"{r.relative:.2e}", "ok" if r.ok else "MISMATCH"] for r in rows),
                align="llrrrrl",
            ))
            click.echo("")
        if not failed:
            click.echo("all rows equal")
    if failed:
        raise Mismatch("some rows that should be exact differ (see MISMATCH above).")


@cli.command("train-demo")
@click.option("--steps", type=int, default=2000, show_default=True, help="Training steps.")
@click.option("--batch", "-b", type=int, default=128, show_default=True, help="Strings per step.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (training and held-out strings).")
@click.option("--out", "out_png", default="out/train_loss.png", show_default=True, help="Where the loss curve (PNG) goes.")
@click.option("--eval-strings", type=int, default=1000, show_default=True, help="Held-out strings for exact match.")
@click.option("--json", "as_json", is_flag=True, help="The result as JSON on stdout.")
def train_demo(steps, batch, seed, out_png, eval_strings, as_json) -> None:
    """Train seed-toy on the string-reversal task of the original Transformer's teaching articles; report exact match and plot the loss."""
    for name, value in (("--steps", steps), ("--batch", batch), ("--eval-strings", eval_strings)):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}.")
    from pathlib import Path

    require_measure_extra("train-demo")
    out = Path(out_png)
    if out.suffix.lower() != ".png":
        raise InputError(f"--out must name a .png file, got {out_png!r}.")
    if out.parent.exists() and not out.parent.is_dir():
        raise InputError(f"--out: {out.parent} is not a folder.")
    from validate.train import run_train_demo

    every = max(steps // 20, 1)

    def progress(step: int, loss: float) -> None:
        if step % every == 0 or step == steps:
            click.echo(f"step {step:>5}/{steps}  loss {loss:.4f}", err=True)

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        result = run_train_demo(steps=steps, batch=batch, seed=seed, out_png=out,
                                progress=progress, eval_strings=eval_strings)
    except OSError as error:
        raise InputError(f"--out {out_png}: {error.strerror or error}.") from None
    if as_json:
        click.echo(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in result.items()}, indent=2))
        return
    click.echo(
        f"seed-toy on string reversal: {result['steps']} steps of batch {result['batch']} in "
        f"{result['seconds']:.0f} s; loss {result['first_loss']:.3f} -> {result['final_loss']:.2e}; "
        f"exact match {100 * result['exact_match']:.1f}% on {result['eval_strings']} held-out strings "
        f"(the articles report 99.5% after 2,000 steps); loss curve: {result['png']}"
    )


@cli.command()
@model_options
@click.option("--method", type=click.Choice(("lora", "qlora")), default="lora", show_default=True,
              help="lora: adapters on the frozen base in --dtype; qlora: the base's linear layers in nf4 with double quantization.")
@click.option("--lora-rank", "rank", type=int, default=16, show_default=True, help="The adapters' rank r.")
@click.option("--lora-alpha", "alpha", type=float, default=32.0, show_default=True, help="Scales the adapters' output by alpha / r (no memory of its own).")
@click.option("--lora-targets", "targets", default=None,
              help="Linear layers that get adapters, comma-separated, by their module names: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (Llama layout), query_key_value, dense, dense_h_to_4h, dense_4h_to_h (GPT-NeoX), or all-linear (default: peft's, q_proj,v_proj or query_key_value).")
@click.option("--adapter-dtype", type=click.Choice(("fp32", "bf16", "fp16")), default="fp32", show_default=True,
              help="The adapters' dtype (peft makes them fp32 unless autocast_adapter_dtype=False).")
@click.option("--optimizer", type=click.Choice(("adamw", "adamw8bit", "paged_adamw", "paged_adamw8bit", "adafactor", "sgd_momentum")),
              default="adamw", show_default=True, help="The optimizer of the adapters (8-bit and paged: bitsandbytes; adafactor: transformers').")
@click.option("--offload-optimizer", is_flag=True, help="ZeRO-Offload: the optimizer state and its update on the host.")
@click.option("--offload-device", type=click.Choice(("cpu", "nvme")), default="cpu", show_default=True,
              help="With --offload-optimizer: where the state lives (nvme: ZeRO-Infinity).")
@click.option("--seq-len", "-n", type=int, default=None, help="Tokens per sequence (default 2048 or the context).")
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences per step.")
@click.option("--dtype", type=click.Choice(DTYPES), default="bf16", show_default=True, help="The base's dtype and its activations.")
@click.option("--attention", type=click.Choice(ATTENTIONS), default="sdpa", show_default=True, help="eager, sdpa or flash.")
@click.option("--recompute", type=click.Choice(RECOMPUTES), default="none", show_default=True,
              help="full: gradient checkpointing (what QLoRA recipes turn on).")
@click.option("--hardware", "hardware_name", default=None, help="A GPU (see `hardware`): whether the step fits, and what would make it fit.")
@click.option("--json", "as_json", is_flag=True, help="As JSON on stdout.")
def finetune(model, config, method, rank, alpha, targets, adapter_dtype, optimizer, offload_optimizer,
             offload_device, seq_len, batch, dtype, attention, recompute, hardware_name, as_json) -> None:
    """Memory of a LoRA or QLoRA fine-tuning step: the frozen base, the adapters, their gradients
    and optimizer state, and the activations; with --hardware, whether it fits and what would."""
    from costmodel.finetune import FineTune, finetune_memory, finetune_verdict, targets_of

    cfg = load_model(model, config)
    workload = make_workload(cfg, seq_len, batch=batch, dtype=dtype, attention=attention, recompute=recompute)
    try:
        tune = FineTune(method=method, rank=rank, alpha=alpha,
                        targets=None if targets is None else tuple(t.strip() for t in targets.split(",")),
                        adapter_dtype=adapter_dtype, optimizer=optimizer, offload_optimizer=offload_optimizer,
                        offload_device=offload_device)
        memory = finetune_memory(cfg, workload, tune)
        data = {"inputs": {"model": cfg.name, "method": method, "rank": rank, "alpha": alpha,
                           "targets": list(targets_of(cfg, tune)), "adapter_dtype": adapter_dtype, "optimizer": optimizer,
                           "offload_optimizer": offload_optimizer, "offload_device": offload_device, "seq_len": workload.seq_len, "batch": batch,
                           "dtype": workload.dtype, "attention": attention, "recompute": recompute},
                "memory": memory.to_dict()}
        if hardware_name is not None:
            from costmodel.hardware import load_hardware

            hardware = load_hardware(hardware_name)
            data["fit"] = {"hardware": hardware.name, **finetune_verdict(cfg, workload, tune, hardware.training_memory_bytes)}
    except ConfigError as error:
        raise InputError(str(error)) from None
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    from reports.text import render_finetune

    click.echo(render_finetune(data))


from reports.commands import COMMANDS  # noqa: E402  (report, plot, claims, sweep; lazy imports)

for _command in COMMANDS:
    cli.add_command(_command)

from reports.serving import serve as _serve  # noqa: E402  (serving simulator; lazy imports inside)

cli.add_command(_serve)


def finite(value: Any) -> Any:
    """JSON has no infinity: an unbounded figure (a crossover that never comes) becomes null."""
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def one_line(message: str) -> str:
    """The message with every non-printable character (newlines included) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; usage errors and bad input print one line and return 2."""
    try:
        code = cli.main(args=argv, prog_name="cli.py", standalone_mode=False)
        if isinstance(code, int):  # a command that ended with ctx.exit(code): plan with nothing feasible
            return code
    except click.exceptions.NoArgsIsHelpError as error:  # pragma: no cover - click >= 8.2
        click.echo(error.ctx.get_help() if error.ctx else str(error))
        return 0
    except click.UsageError as error:
        click.echo(f"error: {one_line(error.format_message())}", err=True)
        return 2
    except click.ClickException as error:
        click.echo(f"error: {one_line(error.format_message())}", err=True)
        return error.exit_code
    except click.Abort:
        click.echo("aborted.", err=True)
        return 1
    except OSError as error:  # a path that cannot be read or written, wherever it is used
        where = f"{error.filename}: " if error.filename else ""
        click.echo(f"error: {one_line(where + (error.strerror or str(error)))}.", err=True)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
