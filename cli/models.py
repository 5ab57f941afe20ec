"""`models`: the presets, one line each, with their aliases."""

from __future__ import annotations

import json

import click

from costmodel.config import Workload
from costmodel.spec import DEFAULT_SEQ_LEN

from .options import json_option


@click.command()
@click.argument("texts", nargs=-1)
@json_option("As JSON on stdout.")
def models(texts, as_json) -> None:
    """The presets, one line each, with their aliases: a name or an alias, in any case, works as
    --model (LLAMA2-7B, meta-llama/Llama-2-7b-hf). TEXT: only the presets whose name, family or an
    alias contains it (any case; `models qwen`, `models mistralai/`); several (`models mixtral qwen3`,
    or comma-separated): those that contain any of them."""
    from costmodel.config import ConfigError
    from costmodel.estimation import Estimate
    from costmodel.presets import load_preset, preset_aliases

    from .format import render_models
    from .inputs import InputError

    chosen = preset_aliases()
    if texts:  # `models mixtral qwen3` was click's "Got unexpected extra argument (qwen3)"
        text = " ".join(texts)
        wanted = [word.strip().lower() for given in texts for word in given.split(",") if word.strip()]
        if not wanted:
            raise InputError("models TEXT: give some text to look for (or leave TEXT out for every preset).")
        try:
            chosen = {name: aliases for name, aliases in chosen.items()
                      if any(word in each.lower() for word in wanted
                             for each in (name, load_preset(name).family, *aliases))}
        except ConfigError as error:
            raise InputError(str(error)) from None
        if not chosen:
            raise InputError(f"models {text}: no preset's name, family or alias contains {' or '.join(map(repr, wanted))}; "
                             "`models` lists them all, and --config takes any Hugging Face config.json.")
    rows = []
    for name, aliases in chosen.items():
        cfg = load_preset(name)
        params = Estimate(cfg, Workload(seq_len=min(DEFAULT_SEQ_LEN, cfg.max_positions))).total("params")
        rows.append({
            "name": name, "family": cfg.family, "architecture": cfg.architecture,
            "params": params, "layers": cfg.n_layers, "d_model": cfg.d_model,
            "heads": cfg.n_heads, "kv_heads": cfg.n_kv_heads, "context": cfg.max_positions,
            "position": cfg.position, "aliases": list(aliases),
        })
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(render_models(rows))
