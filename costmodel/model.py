"""Assembles a ModelConfig's blocks into a cost tree with paths and multiplicities.

A path reads like the model: "decoder.layer.self_attention.scores". A node's multiplicity is how
often it repeats inside its parent (a layer node repeats L times), so a leaf's total is its block's
cost times the product of multiplicities on its path, and a model total is the sum over leaves.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

import sympy as sp

from . import blocks as B
from . import symbols as S
from .config import ConfigError, ModelConfig, Workload

ONE = sp.Integer(1)


@dataclass(frozen=True)
class Node:
    """A named node of the cost tree: either a block (leaf) or a group of children."""

    name: str
    children: tuple["Node", ...] = ()
    block: B.Block | None = None
    multiplicity: sp.Expr = ONE


@dataclass(frozen=True)
class Leaf:
    """A block with its full path, how many times it runs, and its cost for one run."""

    path: str
    count: sp.Expr
    block: B.Block
    cost: B.Cost

    def total(self, quantity: str) -> sp.Expr:
        return self.count * self.cost.get(quantity)


def _group(name: str, *children: Node | None, multiplicity: sp.Expr = ONE) -> Node:
    return Node(name, tuple(c for c in children if c is not None), multiplicity=multiplicity)


def _leaf(name: str, block: B.Block) -> Node:
    return Node(name, block=block)


# Paths of the blocks that make up each regime, for the crossover n*.
ATTENTION_CORE = ("scores", "weighted_sum")
PROJECTIONS_AND_FFN = ("qkv", "out", "mlp")


class _TreeBuilder:
    """Builds the tree for one config; each method returns the node of one part of the model."""

    def __init__(self, cfg: ModelConfig, profile: B.Profile, decode: bool = False):
        self.cfg = cfg
        self.profile = profile
        self.decode = decode
        self.dropout_sites = profile.dropout_sites()  # where dropout runs (see Profile)

    def dropout_leaf(self, tokens: sp.Expr, site: str, name: str = "dropout") -> Node | None:
        if site not in self.dropout_sites:
            return None
        return _leaf(name, B.Dropout(tokens, S.d, self.profile))

    def attention(
        self, name: str, q_len: sp.Expr, k_len: sp.Expr, *, cross: bool, cached: sp.Expr,
        kv_len: sp.Expr | None = None,
    ) -> Node:
        """One attention sublayer; `cached` tokens of its keys/values stay in the KV cache.

        kv_len is the number of tokens whose keys and values are projected here (default k_len;
        in a decode step, the new token for self-attention and none for cross-attention).
        """
        cfg = self.cfg
        q_tokens = S.b * q_len
        kv_tokens = S.b * (k_len if kv_len is None else kv_len)
        profile = self.profile
        position_bias = not cross and cfg.position in ("alibi", "relative")
        pre, post = self.norms(q_tokens)
        core = dict(
            profile=profile,
            bias_needs_grad=position_bias and cfg.position == "relative",
            cross=cross,
            causal=not cross and cached != 0,
        )
        scores = B.AttentionScores(
            q_len, k_len, **core, position_bias=position_bias, scaled=cfg.family != "t5"
        )
        flash = scores.kernel == "flash"
        return _group(
            name,
            pre,
            _leaf("qkv", B.QKVProjection(
                q_tokens, kv_tokens, cfg.qkv_bias, cached,
                copies_cache=self.decode and not cross and profile.kv_cache == "dynamic",
            )),
            _leaf("rope", B.RotaryEmbedding(q_tokens, kv_tokens)) if cfg.rope and not cross else None,
            _leaf("scores", scores),
            _leaf("softmax", B.Softmax(q_len, k_len, **core)),
            _leaf("weighted_sum", B.WeightedSum(q_len, k_len, **core)),
            _leaf("out", B.AttentionOutput(q_tokens, cfg.out_bias, input_kept_by_kernel=flash)),
            self.dropout_leaf(q_tokens, "sublayer"),
            _leaf("residual", B.Residual(q_tokens)),
            post,
        )

    def norms(self, tokens: sp.Expr) -> tuple[Node | None, Node | None]:
        """The sublayer's norm before (pre-LN) or after (post-LN) it."""
        norm = _leaf("norm", B.Norm(tokens, self.cfg.norm, self.profile))
        return (norm, None) if self.cfg.norm_position == "pre" else (None, norm)

    def ffn(self, tokens: sp.Expr) -> Node:
        pre, post = self.norms(tokens)
        cfg = self.cfg
        mlp = B.FeedForward(tokens, cfg.activation, cfg.ffn_bias, self.profile)
        return _group(
            "ffn",
            pre,
            _leaf("mlp", mlp),
            self.dropout_leaf(tokens, "sublayer"),
            _leaf("residual", B.Residual(tokens)),
            post,
        )

    def embedding(self, name: str, seq: sp.Expr, owns_table: bool) -> Node:
        cfg = self.cfg
        tokens = S.b * seq
        positions = {
            "learned": lambda: B.LearnedPositions(tokens, seq, self.profile),
            "sinusoidal": lambda: B.SinusoidalPositions(tokens),
        }.get(cfg.position)
        # Post-LN without an embedding norm: nothing else keeps the embeddings that layer 0's
        # projections read (pre-LN: the first norm keeps them as its input).
        output_kept = cfg.norm_position == "post" and not cfg.embedding_norm
        token_embedding = B.TokenEmbedding(tokens, owns_table, cfg.scale_embeddings, output_kept)
        return _group(
            name,
            _leaf("tokens", token_embedding),
            _leaf("positions", positions()) if positions else None,
            _leaf("token_types", B.TokenTypes(tokens)) if cfg.token_types else None,
            _leaf("norm", B.Norm(tokens, cfg.norm, self.profile)) if cfg.embedding_norm else None,
            self.dropout_leaf(tokens, "embedding"),
        )

    def stack(
        self, name: str, seq: sp.Expr, layers: sp.Expr, *, decoder: bool, cross_len: sp.Expr | None
    ) -> Node:
        """A stack of layers. A decoder caches its n prompt + T generated tokens' keys/values and,
        in an encoder-decoder, the encoder's keys/values for cross-attention. In a decode step
        (seq = 1) the new token attends to c keys and only its own keys/values are projected."""
        cfg = self.cfg
        if self.decode:
            self_attention = self.attention(
                "self_attention", seq, S.c, cross=False, cached=S.c, kv_len=seq
            )
        else:
            self_cached = S.n + S.T if decoder else sp.Integer(0)
            self_attention = self.attention("self_attention", seq, seq, cross=False, cached=self_cached)
        cross = None
        if cross_len is not None:
            kv_len = sp.Integer(0) if self.decode else None
            cross = self.attention(
                "cross_attention", seq, cross_len, cross=True, cached=cross_len, kv_len=kv_len
            )
        layer = _group(
            "layer",
            self_attention,
            cross,
            self.ffn(S.b * seq),
            multiplicity=layers,
        )
        final_norm = B.Norm(S.b * seq, cfg.norm, self.profile) if cfg.norm_position == "pre" else None
        relative = cfg.position == "relative"
        return _group(
            name,
            _leaf("relative_bias", B.RelativePositionBias(seq)) if relative else None,
            self.shared_cross_mask(seq, cross_len, layer),
            _leaf("rope_tables", B.RotaryTables(seq, self.profile)) if cfg.rope else None,
            layer,
            _leaf("final_norm", final_norm) if final_norm else None,
            self.dropout_leaf(S.b * seq, "final", "final_dropout"),
        )

    def shared_cross_mask(self, seq: sp.Expr, cross_len: sp.Expr | None, layer: Node) -> Node | None:
        """Hugging Face's T5 passes cross-attention a zero position bias (1, h, n, s) made once;
        the flash kernel keeps it (sdpa without dropout)."""
        if cross_len is None or not (self.profile.hf and self.cfg.family == "t5"):
            return None
        cross = next(c for c in layer.children if c.name == "cross_attention")
        scores = next(c for c in cross.children if c.name == "scores").block
        if scores.kernel != "flash":
            return None
        return _leaf("cross_bias", B.SharedAttentionMask(seq, cross_len))

    def head(self, seq: sp.Expr) -> Node | None:
        cfg = self.cfg
        tokens = S.b * seq
        if cfg.head == "pooler":
            return _group("head", _leaf("pooler", B.Pooler()))
        if cfg.head == "none":
            return None
        t5_scale = cfg.family == "t5" and cfg.tie_embeddings
        lm = B.LMHead(tokens, not cfg.tie_embeddings, cfg.lm_head_bias, scaled_input=t5_scale)
        loss = None if self.decode else _leaf("loss", B.CrossEntropy(tokens, self.profile))
        return _group("head", _leaf("lm_head", lm), loss)

    def build(self) -> Node:
        cfg = self.cfg
        arch = cfg.architecture
        if self.decode:
            return self.build_decode_step()
        if arch == "encoder-decoder":
            return _group(
                cfg.name,
                self.embedding("encoder_embedding", S.s, owns_table=True),
                self.stack("encoder", S.s, S.L_enc, decoder=False, cross_len=None),
                self.embedding("decoder_embedding", S.n, owns_table=not cfg.share_embeddings),
                self.stack("decoder", S.n, S.L_dec, decoder=True, cross_len=S.s),
                self.head(S.n),
            )
        stack_name, layers = ("decoder", S.L_dec) if arch == "decoder" else ("encoder", S.L_enc)
        return _group(
            cfg.name,
            self.embedding("embedding", S.n, owns_table=True),
            self.stack(stack_name, S.n, layers, decoder=arch == "decoder", cross_len=None),
            self.head(S.n),
        )


    def build_decode_step(self) -> Node:
        """One cached decoding step: one new token per sequence through the decoder only (an
        encoder-decoder's encoder ran once, before; its keys/values are in the cache)."""
        cfg = self.cfg
        if not cfg.n_decoder_layers:
            raise ConfigError(f"model {cfg.name!r} has no decoder, so no decode step.")
        one = ONE
        cross_len = S.s if cfg.architecture == "encoder-decoder" else None
        owns = not cfg.share_embeddings if cross_len is not None else True
        name = "decoder_embedding" if cross_len is not None else "embedding"
        return _group(
            cfg.name,
            self.embedding(name, one, owns_table=owns),
            self.stack("decoder", one, S.L_dec, decoder=True, cross_len=cross_len),
            self.head(one),
        )


def profile_for(cfg: ModelConfig, workload: Workload | None = None) -> B.Profile:
    """The implementation profile a workload asks for (training forward: dropout if p > 0)."""
    workload = workload or Workload()
    return B.Profile(
        impl=workload.impl, attention=workload.attention, dropout=cfg.dropout > 0, family=cfg.family
    )


class CostModel:
    """The cost tree of one ModelConfig, with totals and per-path sums as sympy expressions."""

    def __init__(self, cfg: ModelConfig, profile: B.Profile | None = None, decode: bool = False):
        """decode=False: a forward over b sequences of n tokens (s source tokens); decode=True:
        one cached decoding step of b sequences whose new token attends to c keys."""
        self.cfg = cfg
        self.decode = decode
        self.profile = profile or profile_for(cfg)
        if decode:  # inference: no dropout
            self.profile = dataclasses.replace(self.profile, dropout=False)
        self.root = _TreeBuilder(cfg, self.profile, decode).build()

    @cached_property
    def leaves(self) -> tuple[Leaf, ...]:
        return tuple(self._walk(self.root, "", ONE))

    def _walk(self, node: Node, prefix: str, count: sp.Expr) -> Iterator[Leaf]:
        path = f"{prefix}.{node.name}" if prefix else node.name
        count = count * node.multiplicity
        if node.block is not None:
            yield Leaf(path, count, node.block, node.block.cost())
        for child in node.children:
            yield from self._walk(child, path if node is not self.root else "", count)

    def total(self, quantity: str, paths: tuple[str, ...] | None = None) -> sp.Expr:
        """Sum of one quantity over every leaf (or the leaves whose last name is in paths)."""
        leaves = self.leaves
        if paths is not None:
            leaves = tuple(leaf for leaf in leaves if leaf.path.rsplit(".", 1)[-1] in paths)
        return sp.Add(*(leaf.total(quantity) for leaf in leaves))

    def element_counts(self) -> dict[str, sp.Expr]:
        """Output elements of the non-matmul ops, per op kind, over the whole model."""
        out: dict[str, sp.Expr] = {}
        for leaf in self.leaves:
            for kind, count in leaf.cost.element_counts().items():
                out[kind] = out.get(kind, sp.Integer(0)) + leaf.count * count
        return out

    def layer_leaves(self) -> tuple[Leaf, ...]:
        return tuple(leaf for leaf in self.leaves if ".layer." in leaf.path)

    def layer_total(self, quantity: str, names: tuple[str, ...]) -> sp.Expr:
        """A quantity summed over the layers' leaves whose last path name is in names."""
        return sp.Add(*(leaf.total(quantity) for leaf in self.layer_leaves()
                        if leaf.path.rsplit(".", 1)[-1] in names))

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
    return {
        S.d: cfg.d_model,
        S.h: cfg.n_heads,
        S.h_kv: cfg.n_kv_heads,
        S.d_h: cfg.d_head,
        S.d_ff: cfg.d_ff,
        S.V: cfg.vocab_size,
        S.P: cfg.max_positions,
        S.N_tt: max(cfg.token_types, 1),
        S.N_rb: cfg.relative_buckets,
        S.L_enc: max(cfg.n_encoder_layers, 1),
        S.L_dec: max(cfg.n_decoder_layers, 1),
    }


def workload_values(cfg: ModelConfig, workload: Workload) -> dict[sp.Symbol, int]:
    """The workload dimensions' values: n is the decoder (or only) side, s the encoder side."""
    if cfg.architecture == "encoder-decoder":
        n, s = workload.decoder_len, workload.seq_len
    else:
        n, s = workload.seq_len, workload.seq_len
    return {S.b: workload.batch, S.n: n, S.s: s, S.T: workload.gen_tokens,
            S.c: n + workload.gen_tokens,
            S.e: workload.bytes_per_element}
