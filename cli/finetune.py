"""`finetune`: the memory of a LoRA or QLoRA fine-tuning step (costmodel/finetune.py), and with
--hardware whether it fits."""

from __future__ import annotations

import json

import click

from costmodel import spec
from costmodel.json_units import JSON_UNITS
from costmodel.config import ConfigError
from costmodel.cost import check_run_inputs

from .inputs import InputError, hardware_and_dtype, load_model, make_workload
from .options import LENGTH, PRICE, SEQ_LEN_HELP, TOKENS, choice_option, dtype_option, hardware_option, json_option, model_options

TARGETS_HELP = ("Linear layers that get adapters, comma-separated, by their module names: "
                f"{', '.join(spec.LORA_TARGETS)} (Llama layout), {', '.join(spec.NEOX_LORA_TARGETS)} (GPT-NeoX), "
                f"{', '.join(spec.PHI3_LORA_TARGETS)} (Phi-3), "
                f"or all-linear (default: peft's, {','.join(spec.DEFAULT_LORA_TARGETS)} query_key_value or qkv_proj).")


#: What finetune does not answer without --hardware (its step's time and price), and more GPUs.
NOT_TIMED = ("needs --hardware: the step is timed on a GPU's kernels (costmodel/lora_time.py). `simulate --train "
             "--tokens N --price P` times and prices full fine-tuning, every weight trained.")
ONE_GPU = ("finetune sizes one GPU's LoRA/QLoRA step (with --offload-optimizer, the host's share); sharding it is "
           "not modelled. `estimate --hardware GPU --gpus N` and `plan` size full training over N GPUs.")


#: The names a user reaches for full fine-tuning by, refused with where it is answered (`--method full` itself is
#: one of the methods, refused by costmodel with the same sentence: spec.FULL_FINETUNE).
FULL_HINTS = {name: spec.FULL_FINETUNE_WHERE for name in ("full", "fft", "full-finetune", "full_finetune")}


@click.command()
@model_options
@choice_option("--method", spec.FINETUNE_METHODS, f"{spec.FINETUNE_METHODS.described()}.", "lora",
               hints=FULL_HINTS)
@click.option("--lora-rank", "rank", type=int, default=16, show_default=True, help="The adapters' rank r.")
@click.option("--lora-alpha", "alpha", type=float, default=32.0, show_default=True, help="Scales the adapters' output by alpha / r (no memory of its own).")
@click.option("--lora-targets", "targets", default=None, help=TARGETS_HELP)
@choice_option("--adapter-dtype", spec.ADAPTER_DTYPES,
               "The adapters' dtype (peft makes them fp32 unless autocast_adapter_dtype=False).", "fp32")
@choice_option("--optimizer", spec.FINETUNE_OPTIMIZERS,
               "The optimizer of the adapters (8-bit and paged: bitsandbytes; adafactor: transformers').", "adamw")
@click.option("--offload-optimizer", is_flag=True, help="ZeRO-Offload: the optimizer state and its update on the host.")
@choice_option("--offload-device", spec.OFFLOAD_DEVICES,
               "With --offload-optimizer: where the state lives (nvme: ZeRO-Infinity).", "cpu")
@click.option("--seq-len", "-n", type=LENGTH, default=None, help=SEQ_LEN_HELP)
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences per step.")
@dtype_option(spec.DEFAULT_DTYPE, "The base's dtype and its activations (fp16 where --hardware has no bf16 "
              "and --dtype is not given: V100, T4).")
@choice_option("--attention", spec.ATTENTIONS, f"{spec.ATTENTIONS.listed()} (default: sdpa, as transformers picks "
               "it, or eager for a class without an sdpa path: Gemma 2).")
@choice_option("--recompute", spec.RECOMPUTES, "full: gradient checkpointing (what QLoRA recipes turn on).",
               spec.DEFAULT_RECOMPUTE)
@hardware_option(None, "A GPU (see `hardware`): whether the step fits, and what would make it fit.")
@click.option("--tokens", type=TOKENS, default=None, help="With --hardware: the tokens of an epoch (or run), timed at the step's time.")
@click.option("--price", type=PRICE, default=None, help="With --hardware and --tokens: $ per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one); the run's cost.")
@click.option("--gpus", type=int, default=None, hidden=True, help="Refused: the error names what sizes more GPUs.")
@json_option("As JSON on stdout.")
def finetune(model, config, method, rank, alpha, targets, adapter_dtype, optimizer, offload_optimizer,
             offload_device, seq_len, batch, dtype, attention, recompute, hardware_name, tokens, price, gpus,
             as_json) -> None:
    """Memory of a LoRA or QLoRA fine-tuning step: the frozen base, the adapters, their gradients
    and optimizer state, and the activations; with --hardware, whether it fits and what would."""
    from costmodel.finetune import finetune_memory
    from costmodel.finetune_verdict import finetune_verdict
    from costmodel.lora_adapters import FineTune, check_model_targets, family_of, targets_of

    for name, value, why in (("--tokens", tokens, NOT_TIMED), ("--price", price, NOT_TIMED), ("--gpus", gpus, ONE_GPU)):
        if value is not None and (name == "--gpus" or hardware_name is None):  # click's "No such option" named nothing that answers it
            raise InputError(f"{name}: {why}")
    try:  # a run's tokens and price, checked before the fit: a step that does not fit dropped --price -5 unread
        check_run_inputs(tokens, price)
    except ConfigError as error:
        raise InputError(str(error)) from None
    cfg = load_model(model, config)
    try:
        family_of(cfg)  # a family not modelled: one line, before any warning of the workload's
    except ConfigError as error:
        raise InputError(str(error)) from None
    hardware, dtype = hardware_and_dtype(hardware_name, dtype)
    fallback, pinned = None, False
    if attention is None:  # transformers' own choice (defaults.class_attention): sdpa refused Gemma 2 untyped
        attention, fallback, pinned = _default_attention(cfg, seq_len, batch=batch, dtype=dtype, recompute=recompute)
    workload = make_workload(cfg, seq_len, holds_cache=False, batch=batch, dtype=dtype, attention=attention,
                             recompute=recompute)
    try:
        if targets is not None:
            check_model_targets(cfg, targets)  # this model's linear layers, not every family's, where one is not
        tune = FineTune(method=method, rank=rank, alpha=alpha,
                        targets=targets,
                        adapter_dtype=adapter_dtype, optimizer=optimizer, offload_optimizer=offload_optimizer,
                        offload_device=offload_device)
        memory = finetune_memory(cfg, workload, tune)
        data = {"inputs": {"model": cfg.name, "method": method, "rank": rank, "alpha": alpha,
                           "targets": list(targets_of(cfg, tune)), "adapter_dtype": adapter_dtype, "optimizer": optimizer,
                           "offload_optimizer": offload_optimizer, "offload_device": offload_device, "seq_len": workload.seq_len, "batch": batch,
                           "dtype": workload.dtype, "attention": attention, "recompute": recompute},
                "memory": memory.to_dict()}
        if hardware is not None:
            from costmodel.flash_support import require_attention, runs_flash

            require_attention(hardware, attention)  # a typed flash on a T4: one line
            data["fit"] = {"hardware": hardware.name, **finetune_verdict(cfg, workload, tune, hardware.training_memory_bytes,
                                                                         flash=runs_flash(hardware))}
            if data["fit"]["fits"]:
                data["time"] = _step_time(cfg, workload, tune, hardware, tokens, price)
            elif tokens is not None:  # a step that does not fit runs no epoch: time one of the changes
                data["time"] = {"not_timed": f"the step does not fit on one {hardware.name}; time a change that fits"}
            if pinned:  # sized under the modelled eager, which a shorter --seq-len alone would not pick
                for option in data["fit"].get("options", []):
                    option["change"] += " --attention eager"
    except ConfigError as error:
        raise InputError(str(error)) from None
    from costmodel.lora_adapters import checkpoint_note, rank_warning

    too_wide = rank_warning(cfg, tune)
    if too_wide:
        click.echo(f"warning: {too_wide}", err=True)
    if fallback:  # said once the step is sized (bad input stays one error line)
        click.echo(f"note: {fallback}.", err=True)
    stored = checkpoint_note(cfg, method, workload.dtype)
    if stored:
        click.echo(f"note: {stored}", err=True)
    if as_json:
        click.echo(json.dumps({**data, "units": JSON_UNITS["finetune"]}, indent=2))
        return
    from reports.text import render_finetune

    click.echo(render_finetune(data))


def _step_time(cfg, workload, tune, hardware, tokens: int | None, price: float | None) -> dict:
    """The step's seconds (costmodel/lora_time.py) and, with --tokens, the run's steps, seconds,
    GPU-hours and, at --price or the hardware file's price_per_gpu_hour, dollars: a whole number of
    steps costed by costmodel/cost.py's training_cost, as simulate --train and plan cost theirs."""
    from costmodel.cost import price_of, priced_from, training_cost
    from costmodel.lora_time import lora_step

    price, source = price_of(price, hardware)
    try:
        step = lora_step(cfg, workload, tune, hardware)
    except ConfigError as error:  # asked for a run's time: one line; else the memory stands, with the reason
        if tokens is not None:
            raise InputError(f"--tokens: {error} Drop --tokens{' and --price' if source == '--price' else ''} for "
                             "the memory and the fit verdict, which do not need the step's time.") from None
        return {"not_timed": str(error)}
    out = {"step_seconds": step["seconds"], "tokens_per_step": step["tokens"], "parts": step["parts"],
           "gemm_flops": step["gemm_flops"], "dequant_bytes": step["dequant_bytes"],
           "skipped_weight_gradient_seconds": step["skipped_weight_gradient_seconds"], "counted": step["counted"]}
    if tokens is not None:
        run = training_cost(tokens, step["tokens"] / step["seconds"], 1, sum(step["gemm_flops"].values()),
                            step["tokens"], price)
        out |= {"tokens": tokens, "steps": run["steps"], "seconds": run["train_seconds"], "gpu_hours": run["gpu_hours"]}
        if price is not None:
            out |= {"price_per_gpu_hour": price, "dollars": run["dollars"], **priced_from(source)}
    return out


def _default_attention(cfg, seq_len: int | None, **options) -> tuple[str, str | None, bool]:
    """The attention when --attention is not given, a note when it is not sdpa, and whether it is
    eager in place of transformers' own choice: that choice (defaults.class_attention: eager for a
    class without an sdpa path, Gemma 2), or eager where the step's memory is not modelled under it
    (finetune.default_attention: GPT-NeoX, a sliding window shorter than the sequence), as estimate
    falls back."""
    from costmodel.api import make_workload as workload_for
    from costmodel.defaults import class_attention
    from costmodel.finetune import default_attention

    chosen = class_attention("hf", cfg.family, "sdpa")
    note = None if chosen == "sdpa" else (f"attention {chosen}: {cfg.family}'s Hugging Face class has no sdpa path "
                                          f"in transformers 5.24, which runs {chosen} when none is asked for")
    try:  # bad input is refused by make_workload and finetune_memory, each in one line
        attention, gap = default_attention(cfg, workload_for(cfg, seq_len, attention=chosen, **options)[0])
    except ConfigError:
        return chosen, note, False
    return attention, gap or note, gap is not None
