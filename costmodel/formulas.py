"""The `formulas` command's data: each block's sympy expressions, chosen by path and by quantity, as sympy's
text or LaTeX. The command prints them, `formulas --json` as they are; the numbers are computed from these
expressions, not from a copy."""

from __future__ import annotations

from typing import Any

from .config import ConfigError, ModelConfig


def formula_rows(cfg: ModelConfig, block: str | None = None, quantities: tuple[str, ...] = (),
                 latex: bool = False) -> list[dict[str, Any]]:
    """One row a leaf whose path contains `block` (all without it): its path, count (and, for a shared block,
    the weights it holds), title and each of `quantities` that is not zero (all without them), as text.
    An unknown quantity, or a block no path contains, is one ConfigError naming what there is."""
    from . import symbols as S
    from .blocks import Cost
    from .tree import CostModel

    known = Cost.QUANTITIES + Cost.STEP_QUANTITIES
    unknown = [q for q in quantities if q not in known]
    if unknown:
        raise ConfigError(f"unknown quantity {unknown[0]!r}; use one of {', '.join(known)}.")
    cost_model = CostModel(cfg)
    leaves = [leaf for leaf in cost_model.leaves if block is None or block in leaf.path]
    if not leaves:  # a typo ('atention') was told nothing more; the path's words spelled like it are named
        import difflib

        words = sorted({word for leaf in cost_model.leaves for word in leaf.path.split(".")})
        near = difflib.get_close_matches(block, words, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(near)}?" if near else f" Its paths' words: {', '.join(words)}."
        raise ConfigError(f"no block of {cfg.name} has {block!r} in its path.{hint}")
    show = S.latex if latex else str
    return [{"path": leaf.path, "count": show(leaf.count), "holds": None if leaf.holds is None else show(leaf.holds),
             "title": leaf.block.title,
             "formulas": {quantity: show(leaf.cost.get(quantity)) for quantity in quantities or known
                          if leaf.cost.get(quantity) != 0}}
            for leaf in leaves]
