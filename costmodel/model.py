"""Assembles a ModelConfig's blocks into a cost tree: an ordered list of leaves with their places.

A leaf is one block where it runs: its stack (encoder or decoder), its part of the model (the
embeddings, a repeated layer, a stack's own blocks, the head, the loss, the optimizer), its sublayer
inside a layer (self_attention, cross_attention, ffn) and its name, and how many times it runs (a
layer leaf L times). The path ("decoder.layer.self_attention.scores") is only for display:
consumers select leaves by these fields, never by parsing a path. A total is the sum over leaves of
count x the block's cost; the order of the leaves is the order the code registers its parameters,
which is the order an optimizer visits them.

Three phases: "train" (a forward with the loss, then the optimizer step), "prefill" (a forward over
the prompt, returning logits) and "decode" (one cached step: one new token per sequence attending
to c keys).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable

import sympy as sp

from . import blocks as B
from . import symbols as S
from .config import ConfigError, ModelConfig, Workload

ONE = sp.Integer(1)
PHASES = ("train", "prefill", "decode")
#: Quantities a leaf derives from its parameters and the precision policy (bytes per parameter).
STATE_QUANTITIES = ("weight_bytes", "gradient_bytes", "optimizer_bytes")

# The names of the blocks in each regime, for the crossover n*.
ATTENTION_CORE = ("scores", "weighted_sum")
PROJECTIONS_AND_FFN = ("qkv", "out", "mlp")


@dataclass(frozen=True)
class Leaf:
    """A block where it runs, how many times, and its cost for one run."""

    block: B.Block
    cost: B.Cost
    count: sp.Expr  # runs per pass: its stack's layers for a layer leaf, else 1
    group: str  # the top-level group: embedding, encoder_embedding, encoder, decoder, head, optimizer
    part: str  # embedding, layer, stack (a stack's own blocks), head, loss, optimizer
    name: str
    stack: str | None = None  # encoder or decoder: the side it runs on (None: the optimizer)
    sublayer: str | None = None  # self_attention, cross_attention or ffn (layer leaves only)
    recomputed: bool = False  # its forward runs again in backward (recomputation)
    checkpointed: bool = False  # full recomputation: what it saves is rebuilt one layer at a time
    per_param: object = None  # precision.ParamBytes of the tree (for STATE_QUANTITIES)

    @property
    def path(self) -> str:
        inner = f"layer.{self.sublayer}." if self.sublayer else ("layer." if self.part == "layer" else "")
        return f"{self.group}.{inner}{self.name}"

    @property
    def in_layer(self) -> bool:
        return self.part == "layer"

    def total(self, quantity: str) -> sp.Expr:
        if quantity in STATE_QUANTITIES:
            per_param = {"weight_bytes": self.per_param.weights,
                         "gradient_bytes": self.per_param.gradients,
                         "optimizer_bytes": self.per_param.optimizer}[quantity]
            return self.count * per_param * self.cost.params
        return self.count * self.cost.get(quantity)


@dataclass(frozen=True)
class _Place:
    """Where the builder is: the fields every leaf made here shares."""

    group: str
    part: str
    stack: str | None = None
    sublayer: str | None = None
    count: sp.Expr = ONE

    def leaf(self, name: str, block: B.Block) -> Leaf:
        return Leaf(block, block.cost(), self.count, self.group, self.part, name, self.stack,
                    self.sublayer)


Leaves = list[Leaf]


class _TreeBuilder:
    """Builds the leaves of one config; each method returns the leaves of one part of the model."""

    def __init__(self, cfg: ModelConfig, profile: B.Profile, phase: str):
        self.cfg = cfg
        self.profile = profile
        self.phase = phase
        self.decode = phase == "decode"
        self.dropout_sites = profile.dropout_sites()  # where dropout runs (see Profile)

    def dropout(self, at: _Place, tokens: sp.Expr, site: str, name: str = "dropout") -> Leaves:
        if site not in self.dropout_sites:
            return []
        return [at.leaf(name, B.Dropout(tokens, S.d, self.profile))]

    def norms(self, at: _Place, tokens: sp.Expr) -> tuple[Leaves, Leaves]:
        """The sublayer's norm before (pre-LN) or after (post-LN) it."""
        norm = [at.leaf("norm", B.Norm(tokens, self.cfg.norm, self.profile))]
        return (norm, []) if self.cfg.norm_position == "pre" else ([], norm)

    def attention(
        self, at: _Place, q_len: sp.Expr, k_len: sp.Expr, *, cross: bool, cached: sp.Expr,
        kv_len: sp.Expr | None = None,
    ) -> Leaves:
        """One attention sublayer; `cached` tokens of its keys/values stay in the KV cache.

        kv_len is the number of tokens whose keys and values are projected here (default k_len;
        in a decode step, the new token for self-attention and none for cross-attention).
        """
        cfg, profile = self.cfg, self.profile
        q_tokens = S.b * q_len
        kv_tokens = S.b * (k_len if kv_len is None else kv_len)
        position_bias = not cross and cfg.position in ("alibi", "relative")
        core = dict(
            profile=profile,
            bias_needs_grad=position_bias and cfg.position == "relative",
            cross=cross,
            causal=not cross and cached != 0,
        )
        scores = B.AttentionScores(q_len, k_len, **core, position_bias=position_bias,
                                   scaled=cfg.scaled_scores)
        qkv = B.QKVProjection(
            q_tokens, kv_tokens, cfg.qkv_bias, cached,
            copies_cache=self.decode and not cross and profile.kv_cache == "dynamic",
            fused=profile.facts.fused_qkv and not cross,
            transposed=profile.facts.linear_weights_transposed,
        )
        pre, post = self.norms(at, q_tokens)
        return [
            *pre,
            at.leaf("qkv", qkv),
            *([at.leaf("rope", B.RotaryEmbedding(q_tokens, kv_tokens))] if cfg.rope and not cross else []),
            at.leaf("scores", scores),
            at.leaf("softmax", B.Softmax(q_len, k_len, **core)),
            at.leaf("weighted_sum", B.WeightedSum(q_len, k_len, **core)),
            at.leaf("out", B.AttentionOutput(q_tokens, cfg.out_bias,
                                             input_kept_by_kernel=scores.kernel.keeps_output,
                                             transposed=profile.facts.linear_weights_transposed)),
            *self.dropout(at, q_tokens, "sublayer"),
            at.leaf("residual", B.Residual(q_tokens)),
            *post,
        ]

    def ffn(self, at: _Place, tokens: sp.Expr) -> Leaves:
        cfg = self.cfg
        pre, post = self.norms(at, tokens)
        return [
            *pre,
            at.leaf("mlp", B.FeedForward(tokens, cfg.activation, cfg.ffn_bias, self.profile)),
            *self.dropout(at, tokens, "sublayer"),
            at.leaf("residual", B.Residual(tokens)),
            *post,
        ]

    def embedding(self, group: str, stack: str, seq: sp.Expr, owns_table: bool) -> Leaves:
        cfg = self.cfg
        at = _Place(group, "embedding", stack)
        tokens = S.b * seq
        positions = {
            "learned": lambda: B.LearnedPositions(tokens, seq, self.profile),
            "sinusoidal": lambda: B.SinusoidalPositions(tokens),
        }.get(cfg.position)
        # Post-LN without an embedding norm: nothing else keeps the embeddings that layer 0's
        # projections read (pre-LN: the first norm keeps them as its input).
        output_kept = cfg.norm_position == "post" and not cfg.embedding_norm
        token_embedding = B.TokenEmbedding(tokens, owns_table, cfg.scale_embeddings, output_kept)
        return [
            at.leaf("tokens", token_embedding),
            *([at.leaf("positions", positions())] if positions else []),
            *([at.leaf("token_types", B.TokenTypes(tokens, self.profile))] if cfg.token_types else []),
            *([at.leaf("norm", B.Norm(tokens, cfg.norm, self.profile))] if cfg.embedding_norm else []),
            *self.dropout(at, tokens, "embedding"),
        ]

    def stack(self, stack: str, seq: sp.Expr, layers: sp.Expr, *, cross_len: sp.Expr | None) -> Leaves:
        """A stack of layers. A decoder caches its n prompt + T generated tokens' keys/values and,
        in an encoder-decoder, the encoder's keys/values for cross-attention. In a decode step
        (seq = 1) the new token attends to c keys and only its own keys/values are projected."""
        cfg = self.cfg
        decoder = stack == "decoder"
        own = _Place(stack, "stack", stack)
        layer = _Place(stack, "layer", stack, count=layers)
        self_at = dataclasses.replace(layer, sublayer="self_attention")
        if self.decode:
            self_attention = self.attention(self_at, seq, S.c, cross=False, cached=S.c, kv_len=seq)
        else:  # the cache after the prompt (prefill), or after it and T generated tokens (train)
            cached = (S.n if self.phase == "prefill" else S.n + S.T) if decoder else sp.Integer(0)
            self_attention = self.attention(self_at, seq, seq, cross=False, cached=cached)
        cross: Leaves = []
        if cross_len is not None:
            cross_at = dataclasses.replace(layer, sublayer="cross_attention")
            kv_len = sp.Integer(0) if self.decode else None
            cross = self.attention(cross_at, seq, cross_len, cross=True, cached=cross_len, kv_len=kv_len)
        body = [*self_attention, *cross,
                *self.ffn(dataclasses.replace(layer, sublayer="ffn"), S.b * seq)]
        if self.profile.recompute == "full" and self.phase == "train":
            body = [dataclasses.replace(leaf, checkpointed=True) for leaf in body]
            body.insert(0, layer.leaf("checkpoint", B.LayerCheckpoint(S.b * seq)))
        final_norm = B.Norm(S.b * seq, cfg.norm, self.profile) if cfg.norm_position == "pre" else None
        return [
            *([own.leaf("relative_bias", B.RelativePositionBias(seq))] if cfg.position == "relative" else []),
            *self.shared_cross_mask(own, seq, cross_len),
            *([own.leaf("rope_tables", B.RotaryTables(seq, self.profile))] if cfg.rope else []),
            *([own.leaf("alibi_slopes", B.AlibiSlopes())] if cfg.position == "alibi" else []),
            *body,
            *([own.leaf("final_norm", final_norm)] if final_norm else []),
            *self.dropout(own, S.b * seq, "final", "final_dropout"),
        ]

    def shared_cross_mask(self, at: _Place, seq: sp.Expr, cross_len: sp.Expr | None) -> Leaves:
        """A zero position bias (1, h, n, s) made once for cross-attention, which the flash kernel
        keeps (facts.cross_attention_zero_bias: Hugging Face's T5 under sdpa without dropout)."""
        if cross_len is None or not self.profile.facts.cross_attention_zero_bias:
            return []
        if self.profile.kernel().saves_as != "flash":
            return []
        return [at.leaf("cross_bias", B.SharedAttentionMask(seq, cross_len))]

    def head(self, seq: sp.Expr, stack: str) -> Leaves:
        cfg = self.cfg
        at = _Place("head", "head", stack)
        tokens = S.b * seq
        if cfg.head == "pooler":
            leaves = [at.leaf("pooler", B.Pooler())]
        elif cfg.head == "lm":
            lm = B.LMHead(tokens, not cfg.tie_embeddings, cfg.lm_head_bias,
                          scaled_input=cfg.scale_lm_head_input, returns_logits=self.phase != "train")
            leaves = [at.leaf("lm_head", lm)]
        else:
            leaves = []
        if self.phase == "train":
            loss = B.CrossEntropy(tokens, self.profile) if cfg.head == "lm" else B.SumLoss()
            leaves.append(dataclasses.replace(at, part="loss").leaf("loss", loss))
        return leaves

    def build(self) -> Leaves:
        cfg = self.cfg
        if self.decode:
            return self.decode_step()
        if cfg.architecture == "encoder-decoder":
            return [
                *self.embedding("encoder_embedding", "encoder", S.s, owns_table=True),
                *self.stack("encoder", S.s, S.L_enc, cross_len=None),
                *self.embedding("decoder_embedding", "decoder", S.n, owns_table=not cfg.share_embeddings),
                *self.stack("decoder", S.n, S.L_dec, cross_len=S.s),
                *self.head(S.n, "decoder"),
            ]
        stack, layers = ("decoder", S.L_dec) if cfg.architecture == "decoder" else ("encoder", S.L_enc)
        return [
            *self.embedding("embedding", stack, S.n, owns_table=True),
            *self.stack(stack, S.n, layers, cross_len=None),
            *self.head(S.n, stack),
        ]

    def decode_step(self) -> Leaves:
        """One cached decoding step: one new token per sequence through the decoder only (an
        encoder-decoder's encoder ran once, before; its keys/values are in the cache)."""
        cfg = self.cfg
        if not cfg.n_decoder_layers:
            raise ConfigError(f"model {cfg.name!r} has no decoder, so no decode step.")
        encoder_decoder = cfg.architecture == "encoder-decoder"
        group = "decoder_embedding" if encoder_decoder else "embedding"
        owns = not cfg.share_embeddings if encoder_decoder else True
        return [
            *self.embedding(group, "decoder", ONE, owns_table=owns),
            *self.stack("decoder", ONE, S.L_dec, cross_len=S.s if encoder_decoder else None),
            *self.head(ONE, "decoder"),
        ]


def profile_for(cfg: ModelConfig, workload: Workload | None = None, **changes) -> B.Profile:
    """The implementation profile a workload asks for (training forward: dropout if p > 0)."""
    workload = workload or Workload()
    profile = B.Profile(
        impl=workload.impl, attention=workload.attention, dropout=cfg.dropout > 0,
        family=cfg.family, recompute=workload.recompute, precision=workload.precision,
        optimizer=workload.optimizer,
    )
    return dataclasses.replace(profile, **changes)


def _norm_first(layer: list[Leaf]) -> list[Leaf]:
    """Each sublayer's norm before its other blocks, sublayers in their order."""
    sublayers = list(dict.fromkeys(leaf.sublayer for leaf in layer))
    return sorted(layer, key=lambda leaf: (sublayers.index(leaf.sublayer),
                                           not isinstance(leaf.block, B.Norm)))


#: Layer parameter orders (facts.parameter_order): one layer's leaves -> registration order.
_PARAMETER_ORDERS: dict[str, Callable[[list[Leaf]], list[Leaf]]] = {
    "tree": list,
    "norm_first": _norm_first,
    "norms_last": lambda layer: sorted(layer, key=lambda leaf: isinstance(leaf.block, B.Norm)),
}


class CostModel:
    """The cost tree of one ModelConfig, with totals and selections as sympy expressions."""

    def __init__(self, cfg: ModelConfig, profile: B.Profile | None = None, phase: str = "train"):
        """phase "train": a forward over b sequences of n tokens (s source tokens) with the loss,
        then the optimizer step; "prefill": the same forward returning logits; "decode": one
        cached decoding step of b sequences whose new token attends to c keys."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}.")
        self.cfg = cfg
        self.phase = phase
        self.profile = profile or profile_for(cfg)
        if phase != "train":  # inference: no dropout, nothing recomputed
            self.profile = dataclasses.replace(self.profile, dropout=False, recompute="none")

    @cached_property
    def leaves(self) -> tuple[Leaf, ...]:
        per_param = self.profile.param_bytes
        leaves = [dataclasses.replace(leaf, per_param=per_param, recomputed=self._reruns(leaf))
                  for leaf in _TreeBuilder(self.cfg, self.profile, self.phase).build()]
        if self.phase == "train":
            step = B.OptimizerStep(self.parameter_runs(leaves), self.profile)
            leaves.append(Leaf(step, step.cost(), ONE, "optimizer", "optimizer", "step",
                               per_param=per_param))
        return tuple(leaves)

    def _reruns(self, leaf: Leaf) -> bool:
        """Whether recomputation reruns this leaf's forward in backward: every block under full
        recomputation, the attention core under selective (its kernel says so)."""
        if self.phase != "train":
            return False
        if self.profile.recompute == "full":
            return True
        return isinstance(leaf.block, B.AttentionCore) and leaf.block.kernel.recomputes_core

    def parameter_runs(self, leaves: Iterable[Leaf]) -> tuple[B.TensorRun, ...]:
        """The parameter tensors in registration order: leaves outside layers in tree order, each
        stack's layer in the implementation's order (facts.parameter_order), repeated L times."""
        order = _PARAMETER_ORDERS[self.profile.facts.parameter_order]
        runs: list[B.TensorRun] = []
        outside: list[sp.Expr] = []
        layer: list[Leaf] = []

        def close_layer() -> None:
            if layer:
                tensors = tuple(t.elements for leaf in order(layer) for t in leaf.cost.tensors)
                runs.append(B.TensorRun(tensors, layer[0].count))
                layer.clear()

        for leaf in leaves:
            if leaf.in_layer:
                if outside:
                    runs.append(B.TensorRun(tuple(outside)))
                    outside = []
                if layer and layer[0].stack != leaf.stack:
                    close_layer()
                layer.append(leaf)
            else:
                close_layer()
                outside += [t.elements for t in leaf.cost.tensors]
        close_layer()
        if outside:
            runs.append(B.TensorRun(tuple(outside)))
        return tuple(runs)

    def select(self, **fields) -> tuple[Leaf, ...]:
        """The leaves whose fields have these values; a tuple value means any of them
        (select(part="layer", name=("scores", "weighted_sum")))."""
        def matches(leaf: Leaf) -> bool:
            return all(getattr(leaf, k) in v if isinstance(v, tuple) else getattr(leaf, k) == v
                       for k, v in fields.items())
        return tuple(leaf for leaf in self.leaves if matches(leaf))

    def total(self, quantity: str, leaves: Iterable[Leaf] | None = None) -> sp.Expr:
        """Sum of one quantity over every leaf (or the leaves given)."""
        return sp.Add(*(leaf.total(quantity) for leaf in (self.leaves if leaves is None else leaves)))

    def element_counts(self) -> dict[str, sp.Expr]:
        """Output elements of the non-matmul ops, per op kind, over the whole model."""
        out: dict[str, sp.Expr] = {}
        for leaf in self.leaves:
            for kind, count in leaf.cost.element_counts().items():
                out[kind] = out.get(kind, sp.Integer(0)) + leaf.count * count
        return out

    def layer_leaves(self) -> tuple[Leaf, ...]:
        return self.select(part="layer")

    def layer_total(self, quantity: str, names: tuple[str, ...]) -> sp.Expr:
        """A quantity summed over the layers' leaves of these names."""
        return self.total(quantity, self.select(part="layer", name=names))

    def attention_flops(self) -> sp.Expr:
        """The layers' attention matmuls (scores and weighted sum): the n^2 d term."""
        return self.layer_total("flops_matmul", ATTENTION_CORE)

    def projection_ffn_flops(self) -> sp.Expr:
        """The layers' Q/K/V, output and FFN matmuls: the n d^2 term."""
        return self.layer_total("flops_matmul", PROJECTIONS_AND_FFN)

    @cached_property
    def crossover(self) -> sp.Expr:
        """n* where the layers' attention matmuls (~n^2 d) equal their projections + FFN (~n d^2).

        Solved symbolically: attention = a n^2 and projections + FFN = c n (source length taken
        equal to the target length), so n* = c / a.
        """
        difference = self.attention_flops() - self.projection_ffn_flops()
        difference = sp.expand(difference.xreplace({S.s: S.n}))
        quadratic, linear_coeff = difference.coeff(S.n, 2), difference.coeff(S.n, 1)
        return sp.factor(-linear_coeff / quadratic)


def model_values(cfg: ModelConfig) -> dict[sp.Symbol, int]:
    """The model dimensions' values."""
    return {getattr(S, symbol): value for symbol, value in cfg.dimensions().items()}


def workload_values(cfg: ModelConfig, workload: Workload) -> dict[sp.Symbol, int]:
    """The workload dimensions' values: n is the decoder (or only) side, s the encoder side."""
    return {getattr(S, symbol): value for symbol, value in workload.dimensions(cfg).items()}
