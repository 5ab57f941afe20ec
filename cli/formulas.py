"""`formulas`: the sympy expressions every number comes from, block by block."""

from __future__ import annotations

import click

from .inputs import InputError, load_model
from .options import model_options


@click.command()
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
    if not leaves:  # a typo ('atention') was told nothing more; the path's words spelled like it are named
        import difflib

        words = sorted({word for leaf in cost_model.leaves for word in leaf.path.split(".")})
        near = difflib.get_close_matches(block, words, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(near)}?" if near else f" Its paths' words: {', '.join(words)}."
        raise InputError(f"no block of {cfg.name} has {block!r} in its path.{hint}")
    show = S.latex if latex else str
    for leaf in leaves:
        held = "" if leaf.holds is None else f", weights held x {show(leaf.holds)}"  # a shared block's
        click.echo(f"{leaf.path}  (x {show(leaf.count)}{held}): {leaf.block.title}")
        for quantity in quantities or known:
            expr = leaf.cost.get(quantity)
            if expr != 0:
                click.echo(f"  {quantity} = {show(expr)}")
    click.echo(f"symbols: {', '.join(f'{k}: {v}' for k, v in S.DESCRIPTIONS.items())}")
