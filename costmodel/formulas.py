"""The `formulas` command's data: each block's sympy expressions, chosen by path and by quantity, as sympy's
text or LaTeX. The command prints them, `formulas --json` as they are; the numbers are computed from these
expressions, not from a copy."""

from __future__ import annotations

from typing import Any

from .config import ConfigError, ModelConfig


#: estimate's words for a quantity that the formulas name otherwise (its "activations" are saved for backward).
ESTIMATE_WORDS = {"activations": "saved_bytes", "weights": "params", "parameters": "params"}


def formula_rows(cfg: ModelConfig, block: str | None = None, quantities: tuple[str, ...] = (),
                 latex: bool = False) -> list[dict[str, Any]]:
    """One row a leaf whose path contains `block` (all without it): its path, count (and, for a shared block,
    the weights it holds), title and each of `quantities` that is not zero (all without them), as text;
    with `quantities`, only the leaves where one of them is not zero (none: an empty list).
    An unknown quantity, or a block no path contains, is one ConfigError naming what there is."""
    return formula_table(cfg, block, quantities, latex)[0]


def formula_table(cfg: ModelConfig, block: str | None = None, quantities: tuple[str, ...] = (),
                  latex: bool = False) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """formula_rows' rows and the meanings of the symbols they use (counts, held weights and the formulas
    shown), as text or LaTeX. `block` and `quantities` are read in any case, as every choice is."""
    import difflib

    from . import symbols as S
    from .blocks import Cost
    from .tree import CostModel

    known = Cost.QUANTITIES + Cost.STEP_QUANTITIES
    quantities = tuple(str(q).lower() for q in quantities)
    unknown = [q for q in quantities if q not in known]
    if unknown:  # "kv_cache" and "flops" (estimate's words) read only the whole list: the names that hold them said
        near = ([ESTIMATE_WORDS[unknown[0]]] if unknown[0] in ESTIMATE_WORDS else [name for name in known if unknown[0] in name]
                or difflib.get_close_matches(unknown[0], known, n=2))
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise ConfigError(f"unknown quantity {unknown[0]!r}{hint}; use one of {', '.join(known)}.")
    cost_model = CostModel(cfg)
    needle = None if block is None else block.lower()
    leaves = [leaf for leaf in cost_model.leaves if needle is None or needle in leaf.path.lower()]
    if not leaves:  # a typo ('atention') was told nothing more; the path's words spelled like it are named
        words = sorted({word for leaf in cost_model.leaves for word in leaf.path.split(".")})
        near = difflib.get_close_matches(needle, words, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(near)}?" if near else f" Its paths' words: {', '.join(words)}."
        raise ConfigError(f"no block of {cfg.name} has {block!r} in its path.{hint}")
    show = S.latex if latex else str
    rows, used = [], set()
    for leaf in leaves:
        shown = {quantity: leaf.cost.get(quantity) for quantity in quantities or known
                 if leaf.cost.get(quantity) != 0}
        if quantities and not shown:  # `--block ffn --quantity kv_cache_bytes` listed three headers, no formula
            continue
        for expr in (leaf.count, leaf.holds, *shown.values()):
            used |= getattr(expr, "free_symbols", set())
        rows.append({"path": leaf.path, "count": show(leaf.count),
                     "holds": None if leaf.holds is None else show(leaf.holds), "title": leaf.block.title,
                     "formulas": {quantity: show(expr) for quantity, expr in shown.items()}})
    symbols = {show(symbol): meaning for symbol, meaning in S.DESCRIPTIONS.items() if symbol in used}
    return rows, symbols
