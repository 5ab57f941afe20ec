"""Memory of training and inference: sums and orderings over the cost tree's leaves, no formulas.

  weights, gradients, optimizer  each leaf's parameters x the precision policy's bytes per
                                 parameter (costmodel/precision.py)
  activations                    the bytes the leaves save for backward; under full recomputation
                                 the layers keep only their checkpoints, and the largest stack's
                                 layer is rebuilt once, one layer at a time
  KV cache                       the attention blocks' cache after the prefill and T tokens
  inference                      the larger of its two phases, each the sum over its tree of the
                                 weights, buffers, ids passed in, logits returned and KV cache:
                                 the prefill (n tokens' ids and logits, the cache of the prompt)
                                 and the last decode step (one token each, the cache of n + T - 1);
                                 inference_total's prefill is a plain forward (the logits of every
                                 position), generate_total's Hugging Face generate's (the last
                                 position's: tree.generate_logits_to_keep), what simulate, plan
                                 --serve and every fit verdict size

Published formulas shown beside these (Korthikanti et al. 2022) live in costmodel/published.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp

from . import symbols as S
from .config import ModelConfig, Workload
from .precision import ParamBytes, inference_precision
from .tree import CostModel, generate_logits_to_keep, profile_for


def largest(sizes: Any) -> sp.Expr:
    """The largest of some byte counts (none: 0; a zero among them left out). Max built unevaluated
    and compared when evaluated, as blocks/optimizer.py builds its own: sympy's pairwise proofs of
    which size dominates (Max's _find_localzeros) were a third of a cold `estimate` under cProfile
    and change no number (validate/FINDINGS.md, wt45_house)."""
    sizes = set(sizes) - {sp.Integer(0)}
    return sp.Max(*sizes, evaluate=False) if len(sizes) > 1 else next(iter(sizes), sp.Integer(0))


def replaced(expr: sp.Expr, rule: dict) -> sp.Expr:
    """expr.xreplace(rule) with its Max kept unevaluated: xreplace rebuilds each node it changes, and
    a Max rebuilt is compared again, which largest() spared."""
    if isinstance(expr, sp.Max):
        return sp.Max(*(replaced(arg, rule) for arg in expr.args), evaluate=False)
    if not expr.has(sp.Max):
        return expr.xreplace(rule)
    return expr.func(*(replaced(arg, rule) for arg in expr.args))


def activation_bytes(model: CostModel) -> sp.Expr:
    """Bytes saved for backward over a training forward, after recomputation (the tree's leaves:
    what selective recomputation keeps is its kernel's; full recomputation marks the layers'
    leaves checkpointed and adds each layer's checkpoint, and the largest layer of any kind is
    rebuilt once)."""
    kept = model.total("saved_bytes", (leaf for leaf in model.leaves if not leaf.checkpointed))
    rebuilt = []
    for stack in ("encoder", "decoder"):
        layers: dict[Any, list[sp.Expr]] = {}  # one layer of each kind (dense, moe, sliding, ...)
        for leaf in model.leaves:
            if leaf.checkpointed and leaf.stack == stack:
                layers.setdefault(leaf.kind, []).append(leaf.cost.saved_bytes)
        rebuilt += [sp.Add(*one_layer) for one_layer in layers.values()]
    if not rebuilt:
        return kept
    return kept + largest(rebuilt)


PHASE_QUANTITIES = ("weight_bytes", "buffer_bytes", "input_bytes", "result_bytes", "kv_cache_bytes")


def forward_transient(model: CostModel) -> sp.Expr:
    """The largest transient one block's run holds in a no-grad forward (blocks run one at a
    time): the eager softmax's n x n scores (kernels.Kernel.scores_live_no_grad); 0 where no
    block states one. The other tensors of a layer's forward are not counted (a lower bound)."""
    return largest(leaf.cost.forward_transient_bytes for leaf in model.leaves)


def phase_bytes(model: CostModel) -> sp.Expr:
    """Memory of one inference phase (a prefill or a decode tree): weights, buffers, the ids
    passed in, the KV cache it holds, and the larger of the logits returned and its largest
    forward transient (never live together: the logits come after the last layer)."""
    held = sp.Add(*(model.total(q) for q in PHASE_QUANTITIES if q != "result_bytes"))
    transient = forward_transient(model)
    logits = model.total("result_bytes")
    return held + largest((logits, transient))


@lru_cache(maxsize=64)
def decode_phase_bytes(cfg: ModelConfig, profile: Any) -> sp.Expr:
    """Memory of one decode step at context c (its cache holds c tokens). A class that holds no
    cache (facts.kv_cache_held false: OpenAI GPT's) reruns the prefix instead: a prefill of c tokens.
    Cached by (cfg, profile), both frozen: a warm simulate built its trees and Max anew each call."""
    if not profile.facts.kv_cache_held:
        return replaced(phase_bytes(CostModel(cfg, profile, phase="prefill")), {S.n: S.c})
    return phase_bytes(CostModel(cfg, profile, phase="decode"))


def inference_phases(cfg: ModelConfig, profile: Any) -> dict[str, sp.Expr]:
    """The prefill's memory and, for a model with a decoder, the last decode step's at c = n + T - 1
    (symbols.LAST_CONTEXT; decode_phase_bytes is that step's at any context c)."""
    return dict(_inference_phases(cfg, profile))


@lru_cache(maxsize=64)
def _inference_phases(cfg: ModelConfig, profile: Any) -> tuple[tuple[str, sp.Expr], ...]:
    """inference_phases' pairs, cached by (cfg, profile) (a new dict to each caller)."""
    phases = {"prefill": phase_bytes(CostModel(cfg, profile, phase="prefill"))}
    if cfg.n_decoder_layers:
        phases["decode"] = replaced(decode_phase_bytes(cfg, profile), {S.c: S.LAST_CONTEXT})
    return tuple(phases.items())


def inference_bytes(cfg: ModelConfig, profile: Any) -> sp.Expr:
    """Memory of inference: the larger of its phases (see inference_phases)."""
    return largest(inference_phases(cfg, profile).values())


@dataclass(frozen=True)
class Memory:
    """Memory expressions of one model and workload (bytes)."""

    weights: sp.Expr
    gradients: sp.Expr
    optimizer: sp.Expr
    activations: sp.Expr
    kv_cache: sp.Expr
    buffers: sp.Expr  # the modules' buffers (RoPE's inv_freq, BERT's id buffers): held, not trained
    inference_total: sp.Expr  # the prefill a plain forward: the logits of every position
    param_bytes: ParamBytes
    generate_total: sp.Expr  # the prefill generate's: the last position's logits (generate_logits_to_keep)

    @property
    def training_total(self) -> sp.Expr:
        """What a training step holds between steps and at the end of its forward: weights,
        gradients, optimizer state, bytes saved for backward and the modules' buffers. The one
        definition: `estimate`'s training_total, simulate's fit and a layout's per-rank total at
        dp = 1 all read it (a layout adds its framework's communication buffers when dp > 1).
        The step's transient peaks are costmodel/peak.py's."""
        return self.weights + self.gradients + self.optimizer + self.activations + self.buffers


def memory(cfg: ModelConfig, workload: Workload, model: CostModel | None = None) -> Memory:
    """Training and inference memory of a workload as expressions."""
    model = model or CostModel(cfg, profile_for(cfg, workload))
    serving = dataclasses.replace(model.profile, precision=inference_precision(model.profile.precision))
    inference = inference_bytes(cfg, serving)
    keep = generate_logits_to_keep(cfg, workload.impl)
    generate = (inference if keep == serving.logits_to_keep
                else inference_bytes(cfg, dataclasses.replace(serving, logits_to_keep=keep)))
    return Memory(
        weights=model.total("weight_bytes"),
        gradients=model.total("gradient_bytes"),
        optimizer=model.total("optimizer_bytes"),
        activations=activation_bytes(model),
        kv_cache=model.total("kv_cache_bytes"),
        buffers=model.total("buffer_bytes"),
        inference_total=inference,
        param_bytes=model.profile.param_bytes,
        generate_total=generate,
    )
