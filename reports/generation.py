"""Generation cost from the cost tree: T tokens without a KV cache and with one (decoder-only).

Without a cache, step t (t = 1..T) runs a full forward over the t tokens so far: the tree's forward
matmul FLOPs at n = t, b = 1. Summed over T steps this is O(T^3 d) (the n^2 d attention term).

With a cache, step t feeds one token whose query attends to t keys (the t - 1 cached ones and its
own): the tree's decode step, CostModel(cfg, decode=True), at c = t keys, b = 1. Summed over T
steps this is O(T^2 d). Step 1 (a one-token prompt) is the same in both.

Convention (as FlopCounterMode counts the reference model): a forward computes the logits of all
its positions (the tree's LM head covers b*n tokens); a decode step computes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from costmodel import symbols as S
from costmodel.config import ModelConfig
from costmodel.evaluate import Sweep
from costmodel.model import CostModel

#: The summation index of the steps (step t has t tokens of context).
t = sp.Symbol("t", integer=True, positive=True)


class NotADecoder(ValueError):
    """Generation is costed for decoder-only models."""


def _check(model: CostModel) -> None:
    if model.cfg.architecture != "decoder":
        raise NotADecoder(
            f"model {model.cfg.name!r} is an {model.cfg.architecture}; the generation cost is "
            "derived for decoder-only models."
        )


def full_forward(model: CostModel, quantity: str = "flops_matmul") -> sp.Expr:
    """A forward over the whole prefix of n tokens (b = 1): the tree's total at n."""
    _check(model)
    return model.total(quantity).xreplace({S.b: 1})


def decode_step(model: CostModel, quantity: str = "flops_matmul") -> sp.Expr:
    """One cached decoding step against n keys (b = 1): the tree's decode step with c = n."""
    _check(model)
    step = CostModel(model.cfg, model.profile, decode=True)
    return step.total(quantity).xreplace({S.b: 1, S.c: S.n})


def cumulative(step_cost: sp.Expr) -> sp.Expr:
    """The sum of a per-step cost (in n = context length) over steps t = 1..T, as a polynomial in T."""
    return sp.expand(sp.summation(step_cost.xreplace({S.n: t}), (t, 1, S.T)))


@dataclass(frozen=True)
class GenerationCurves:
    """Cumulative forward matmul FLOPs of generating 1..T_max tokens (b = 1)."""

    tokens: Any  # 1..T_max
    without_cache: Any
    with_cache: Any
    without_cache_step: Any
    with_cache_step: Any


def generation_curves(cfg: ModelConfig, max_tokens: int) -> GenerationCurves:
    """Per-step and cumulative FLOPs for T = 1..max_tokens, evaluated with one Sweep."""
    import numpy as np

    model = CostModel(cfg)
    sweep = Sweep(model, {"forward": full_forward(model), "step": decode_step(model)})
    tokens = np.arange(1, max_tokens + 1, dtype=np.int64)
    steps = sweep(n=tokens, b=1)
    return GenerationCurves(
        tokens=tokens,
        without_cache=np.cumsum(steps["forward"]),
        with_cache=np.cumsum(steps["step"]),
        without_cache_step=steps["forward"],
        with_cache_step=steps["step"],
    )


def leading_terms(cfg: ModelConfig) -> dict[str, Any]:
    """The cumulative costs' degree in T and leading coefficient (symbolic, model dimensions free)."""
    model = CostModel(cfg)
    out = {}
    for name, step in (("without_cache", full_forward(model)), ("with_cache", decode_step(model))):
        poly = sp.Poly(cumulative(step), S.T)
        degree = poly.degree()
        out[name] = {
            "degree": degree,
            "leading": sp.factor(poly.coeff_monomial(S.T**degree)),
            "expression": cumulative(step),
        }
    return out
