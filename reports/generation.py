"""Generation cost from the cost tree: T tokens without a KV cache and with one.

Step 1 reads the prompt: a one-token prompt for a decoder-only model; for an encoder-decoder, the
encoder over the s source tokens and the decoder over its start token (validate/decoding.py's
prefill). It is the same with and without a cache: the tree's forward at n = 1 (and s), b = 1.

Without a cache, step t > 1 re-runs the decoder over all t tokens so far (an encoder-decoder keeps
its encoder output): the tree's decoder-side leaves at n = t. Summed over T steps this is
O(T^3 d), from the n^2 d attention term.

With a cache, step t > 1 feeds one token whose query attends to t keys: the tree's decode step,
CostModel(cfg, phase="decode"), at c = t keys. Summed over T steps this is O(T^2 d).

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
from costmodel.tree import CostModel

#: The summation index of the steps (step t has t tokens of context).
t = sp.Symbol("t", integer=True, positive=True)

class NotADecoder(ValueError):
    """Generation needs a decoder with an LM head."""


@dataclass(frozen=True)
class StepCosts:
    """One quantity of the three kinds of step, b = 1, as expressions in n (context), s, c."""

    encoder: sp.Expr  # the encoder over s source tokens, once (0 for a decoder-only model)
    decoder: sp.Expr  # the decoder (and head) over n tokens without a cache
    decode: sp.Expr  # one cached step against n keys

    def first(self) -> sp.Expr:
        """Step 1: the prompt (one decoder token, and the encoder)."""
        return (self.encoder + self.decoder).xreplace({S.n: 1})


def step_costs(cfg: ModelConfig, quantity: str = "flops_matmul") -> StepCosts:
    """The tree's costs of each kind of step (see the module docstring)."""
    if not cfg.n_decoder_layers or cfg.head != "lm":
        raise NotADecoder(
            f"model {cfg.name!r} is an {cfg.architecture} without a decoder and an LM head; it "
            "does not generate."
        )
    model = CostModel(cfg, phase="prefill")
    encoder = model.total(quantity, model.select(stack="encoder"))
    decoder = model.total(quantity, model.select(stack="decoder"))
    step = CostModel(cfg, model.profile, phase="decode").total(quantity)
    one = {S.b: 1}
    return StepCosts(encoder.xreplace(one), decoder.xreplace(one), step.xreplace({S.b: 1, S.c: S.n}))


def cumulative(costs: StepCosts) -> dict[str, sp.Expr]:
    """Total cost of generating T tokens, as polynomials in T (s and the model dimensions free).
    A sliding-window layer's step attends min(t, w) keys: taken as w, the generation past the
    window that the leading term describes (and a Mamba-2 scan's ceil(t / Q) chunks as t / Q, DeepSeek-V4's
    floor(t / rate) compressed entries as t / rate)."""
    def past_window(step: sp.Expr) -> sp.Expr:
        step = step.replace(lambda e: isinstance(e, sp.Min) and S.w in e.args, lambda e: S.w)
        # A Mamba-2 scan's chunks, ceil(t / Q), taken as t / Q, and a prompt padded to the conv's
        # K taps, max(t, K), as t: the long generation the leading term describes.
        # DeepSeek-V4's compressed entries, floor(t / rate), taken as t / rate likewise.
        step = step.replace(lambda e: isinstance(e, (sp.ceiling, sp.floor)), lambda e: e.args[0])
        return step.replace(lambda e: isinstance(e, sp.Max) and S.K_m in e.args,
                            lambda e: sp.Max(*(a for a in e.args if a != S.K_m)))

    def summed(step: sp.Expr) -> sp.Expr:  # steps 2..T
        return sp.summation(past_window(step).xreplace({S.n: t}), (t, 2, S.T))

    return {
        "without_cache": sp.expand(costs.first() + summed(costs.decoder)),
        "with_cache": sp.expand(costs.first() + summed(costs.decode)),
    }


@dataclass(frozen=True)
class GenerationCurves:
    """Per-step and cumulative forward matmul FLOPs of generating 1..T_max tokens (b = 1)."""

    tokens: Any  # 1..T_max
    source_len: int  # s (encoder-decoders); 0 for decoder-only models
    without_cache: Any
    with_cache: Any
    without_cache_step: Any
    with_cache_step: Any


def generation_curves(cfg: ModelConfig, max_tokens: int, source_len: int = 1) -> GenerationCurves:
    """Per-step and cumulative FLOPs for T = 1..max_tokens, evaluated with one Sweep."""
    import numpy as np

    costs = step_costs(cfg)
    sweep = Sweep(CostModel(cfg), {"encoder": costs.encoder, "decoder": costs.decoder,
                                   "decode": costs.decode})
    tokens = np.arange(1, max_tokens + 1, dtype=np.int64)
    steps = sweep(n=tokens, s=source_len, b=1)
    first = steps["encoder"][0] + steps["decoder"][0]
    without = np.concatenate([[first], steps["decoder"][1:]])
    with_cache = np.concatenate([[first], steps["decode"][1:]])
    encoder_decoder = cfg.architecture == "encoder-decoder"
    return GenerationCurves(tokens, source_len if encoder_decoder else 0, np.cumsum(without),
                            np.cumsum(with_cache), without, with_cache)


def leading_terms(cfg: ModelConfig) -> dict[str, Any]:
    """The cumulative costs' degree in T and leading coefficient (symbolic, model dimensions free)."""
    out = {}
    for name, expression in cumulative(step_costs(cfg)).items():
        poly = sp.Poly(expression, S.T)
        degree = poly.degree()
        out[name] = {"degree": degree, "leading": sp.factor(poly.coeff_monomial(S.T**degree)),
                     "expression": expression}
    return out
