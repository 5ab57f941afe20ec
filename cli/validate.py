"""`validate`: formula == measurement for parameters, FLOPs, saved activations and the KV cache,
measured on the Hugging Face class or the reference model (validate/)."""

from __future__ import annotations

import json

import click

from costmodel import spec

from .inputs import InputError, Mismatch, load_model, make_workload, require_measure_extra
from .options import GEN_LENGTH, LENGTH, SEQ_LEN_HELP, batch_option, dtype_option, json_option, model_options


@click.command()
@model_options
@click.option("--all", "all_presets", is_flag=True, help="Every preset.")
@click.option("--quick", is_flag=True, help="Small workloads (n=32, b=2) instead of the defaults.")
@click.option("--target", type=click.Choice(spec.TARGETS), default=None, help="hf (Hugging Face's class; default where the family has one) or reference.")
@click.option("--device", type=click.Choice(spec.MEASURE_DEVICES), default="fake", show_default=True, help=f"{spec.MEASURE_DEVICES.phrase()}.")
@click.option("--seq-len", "-n", type=LENGTH, default=None, help=SEQ_LEN_HELP)
@click.option("--tgt-len", type=LENGTH, default=None, help="Decoder tokens of an encoder-decoder.")
@batch_option
@dtype_option(None, "Default: bf16 under FakeTensorMode, fp32 on real CPU tensors, where bf16 matmuls are slow.")
@click.option("--attention", type=click.Choice(spec.MEASURED_ATTENTIONS), default="eager", show_default=True,
              help=f"{spec.MEASURED_ATTENTIONS.listed()} (the measured model's attention).")
@click.option("--gen-tokens", "--gen", "-T", "gen_tokens", type=GEN_LENGTH, default=2, show_default=True, help="Tokens generated (KV cache): the prefill makes the first, T - 1 decode steps the rest, as generate(max_new_tokens=T) runs.")
@click.option("--blocks", is_flag=True, help="Also one row per sublayer for parameters and forward FLOPs.")
@json_option("Rows as JSON on stdout.")
def validate(model, config, all_presets, quick, target, device, seq_len, tgt_len, batch, dtype,
             attention, gen_tokens, blocks, as_json) -> None:
    """formula == measurement: parameters, FLOPs, saved activations and KV cache, measured."""
    from costmodel.presets import load_preset, preset_names

    require_measure_extra("validate")
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
        from .format import render_validation

        for cfg, chosen, w, rows in results:
            click.echo(render_validation(cfg, chosen, device, w, rows))
            click.echo("")
        if not failed:
            click.echo("all rows equal")
    if failed:
        raise Mismatch("some rows that should be exact differ (see MISMATCH above).")
