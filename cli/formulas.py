"""`formulas`: the sympy expressions every number comes from, block by block."""

from __future__ import annotations

import json

import click

from .inputs import InputError, load_model
from .options import model_options


@click.command()
@model_options
@click.option("--block", "block", default=None, help="Only blocks whose path contains this text (e.g. attention, ffn, lm_head).")
@click.option("--quantity", "quantities", multiple=True, help="params, flops_matmul, flops_other, flops_matmul_backward, saved_bytes, kv_cache_bytes, bytes_matmul, bytes_other, bytes_moved, and a training step's buffer_bytes, input_bytes, result_bytes, backward_transient_bytes, step_transient_bytes, step_state_bytes, bytes_optimizer, ... (default: all non-zero).")
@click.option("--latex", is_flag=True, help="Print LaTeX instead of plain sympy text.")
@click.option("--json", "as_json", is_flag=True,
              help="As JSON on stdout: each block's path, count, title and formulas (text, or LaTeX with --latex), "
                   "and the meanings of the symbols they use.")
def formulas(model, config, block, quantities, latex, as_json) -> None:
    """The sympy expressions every number comes from, block by block."""
    from costmodel.config import ConfigError
    from costmodel.formulas import formula_table

    cfg = load_model(model, config)
    try:
        rows, symbols = formula_table(cfg, block, tuple(quantities), latex)
    except ConfigError as error:
        raise InputError(str(error)) from None
    # Gemma's `--block head --quantity params` read "it is 0 in each" and no word why: the head is the embedding's
    tied = ("params" in (q.lower() for q in quantities) and cfg.tie_embeddings and not any("lm_head" in row["path"]
            for row in rows) and (block is None or block.lower() in "head.lm_head"))
    note = (f"the output head of {cfg.name} is tied to its token embedding: its V*d weights are counted once, in "
            "embedding.tokens (--block embedding)") if tied else None
    if as_json:
        click.echo(json.dumps({"model": cfg.name, "latex": latex, "blocks": rows, "symbols": symbols,
                               **({"note": note} if note else {})}, indent=2))
        return
    if not rows:  # every block asked for holds none of the quantities: said, not three bare headers
        where = "" if block is None else f" whose path contains {block!r}"
        click.echo(f"no block of {cfg.name}{where} has a non-zero {' or '.join(q.lower() for q in quantities)}: "
                   f"it is 0 in each{f'; {note}' if note else ''}.")
        return
    for row in rows:
        held = "" if row["holds"] is None else f", weights held x {row['holds']}"  # a shared block's
        click.echo(f"{row['path']}  (x {row['count']}{held}): {row['title']}")
        for quantity, text in row["formulas"].items():
            click.echo(f"  {quantity} = {text}")
    click.echo(f"symbols: {', '.join(f'{k}: {v}' for k, v in symbols.items())}")
