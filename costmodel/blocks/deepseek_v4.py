"""DeepSeek-V4's own blocks, as transformers 5.24 runs them (models/deepseek_v4/modeling_deepseek_v4.py,
DeepseekV4ForCausalLM): the hyper-connections around each sublayer and before the final norm, the
attention's projections (a query rank, one shared key = value head), its compressors (compressed
sparse attention with its indexer, heavily compressed attention) and the grouped output projection.
The attention core (scores, softmax with sinks, weighted sum) is attention.py's, over the prompt's
keys plus the compressed entries; the experts are experts.py's.

Measured exactly against the class (tests/test_hf_deepseek_v4.py): parameters, forward matmul
FLOPs (FlopCounterMode, eager attention and eager experts) and the bytes saved for backward (fp32
and bf16, prompts that close no window and some that close several). The other ops' elements are
this module's stated counts, not measured (the estimate says so: costmodel/workload.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from .. import symbols as S
from ..model_choices import SINKHORN_ITERS
from ..terms import FP32, ZERO, Expr, unless_fp32
from .attention import kv_cache_bytes
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix


def compressed_entries(keys: Expr, rate: Expr) -> Expr:
    """Entries a compressor has emitted after `keys` tokens: one per whole window of `rate`
    (DeepseekV4HCACache.store_compression_weights keeps the remainder for the next call)."""
    return sp.floor(keys / rate)


def compressor_state_bytes(seen: Expr, rate: Expr, width: Expr, prompt_view: Any, sparse: bool) -> Expr:
    """Bytes a compressor's cache (DeepseekV4HCACache, DeepseekV4CSACache: one per compressor, CSA's
    indexer its own) holds after `seen` tokens, for a projection `width` wide per token (d_h, CSA's
    two series 2 d_h, its indexer's 2 d_i) in the activation dtype:
      compressed_kv  one entry of width / series per whole window (fresh tensors, concatenated);
      buffer_kv and buffer_gate  the seen mod rate tokens of the unclosed window, each a slice
        kv[:, usable:] of the call's projection: after the prefill (prompt_view true) its storage is
        the whole prompt's (b n width), after a decode step the remainder's; none when it is empty;
      overlap_kv and overlap_gate (CSA only: width is two series)  the last closed window's first
        series, b rate (width / 2) cloned, the gate in fp32 (plus the fp32 position_bias), held once a
        window has closed."""
    series = width / 2 if sparse else width  # one entry's width
    left = sp.Mod(seen, rate)
    buffer = sp.Piecewise((ZERO, sp.Eq(left, 0)), (S.b * S.n * width, prompt_view), (S.b * left * width, True))
    overlap = sp.Piecewise((ZERO, sp.Lt(seen, rate)), (S.b * rate * series * (S.e + FP32), True)) if sparse else ZERO
    return S.e * (S.b * compressed_entries(seen, rate) * series + 2 * buffer) + overlap


def streams_norm_saved(tokens: Expr) -> Expr:
    """Bytes an fp32 unweighted RMSNorm of the flattened streams keeps, then the fp32 linear after it
    (DeepseekV4HyperConnection, DeepseekV4HyperHead): the streams in the activation dtype (their
    fp32 view where activations are fp32), an fp32 copy where they are narrower, the rsqrt per
    token, the normed streams the linear reads."""
    streams = tokens * S.H_c * S.d
    return S.e * streams + unless_fp32(FP32 * streams) + FP32 * tokens + FP32 * streams


@dataclass(frozen=True)
class HyperConnection(Block):
    """DeepseekV4HyperConnection (attn_hc, ffn_hc), kept in fp32: an unweighted RMSNorm of the H_c
    streams flattened (H_c d), the fp32 linear fn (H_c d -> (2 + H_c) H_c, then base and 3 scales)
    into pre, post and the H_c x H_c comb (sigmoids, a softmax and Sinkhorn's normalisations, not
    counted: H_c^2 values a token); the streams collapsed by pre; after the sublayer, post x output
    plus comb^T @ streams (a (H_c, H_c) x (H_c, d) product per token) in place of the residual add.
    """

    tokens: Expr
    profile: Profile = Profile()
    title = "hyper-connection (mHC)"

    def cost(self) -> Cost:
        mixes = (2 + S.H_c) * S.H_c
        fn_forward, fn_backward = linear_flops(self.tokens, S.H_c * S.d, mixes)
        comb = 2 * self.tokens * S.H_c * S.H_c * S.d
        streams = self.tokens * S.H_c * S.d
        return make_cost(
            saved_bytes=self.saved(),
            tensors=[Tensor(mixes, S.H_c * S.d), Tensor(mixes), Tensor(3)],
            flops_matmul=fn_forward + comb,
            flops_matmul_backward=fn_backward + 2 * comb,
            elements=[("rmsnorm", streams), ("sigmoid", 2 * self.tokens * S.H_c),
                      ("softmax", self.tokens * S.H_c * S.H_c), ("mul", 2 * streams), ("add", 2 * streams)],
            bytes_matmul=linear_bytes(self.tokens, S.H_c * S.d, mixes) + S.e * (self.tokens * S.H_c * (S.H_c + 2 * S.d)),
        )

    def saved(self) -> Expr:
        """Bytes kept for backward (measured exactly: tests/test_hf_deepseek_v4.py): the streams'
        norm and the fp32 linear (streams_norm_saved); in fp32, the linear's (2 + H_c) H_c outputs
        (the scales' products read the one storage), the two sigmoids' results (H_c each), the
        softmax's (H_c^2), each of the Sinkhorn loop's 2 x 20 - 1 divisions its numerator (H_c^2)
        and its sums (H_c), pre + eps (H_c) for the collapse; in the activation dtype the
        sublayer's output (d), post and comb cast for the expand and the comb^T @ streams product."""
        tokens, hc = self.tokens, S.H_c
        weights = FP32 * tokens * ((2 + hc) * hc + 2 * hc + hc * hc + (2 * SINKHORN_ITERS - 1) * (hc * hc + hc) + hc)
        return streams_norm_saved(tokens) + weights + S.e * tokens * (S.d + hc + hc * hc)


@dataclass(frozen=True)
class HyperHead(Block):
    """DeepseekV4HyperHead (hc_head, fp32), before the final norm: the unweighted RMSNorm of the
    flattened streams, hc_fn (H_c d -> H_c), hc_base and hc_scale, a sigmoid, the streams' weighted sum."""

    tokens: Expr
    title = "hyper-connection head"

    def cost(self) -> Cost:
        forward, backward = linear_flops(self.tokens, S.H_c * S.d, S.H_c)
        streams = self.tokens * S.H_c * S.d
        return make_cost(
            tensors=[Tensor(S.H_c, S.H_c * S.d), Tensor(S.H_c), Tensor(1)],
            flops_matmul=forward, flops_matmul_backward=backward,
            elements=[("rmsnorm", streams), ("sigmoid", self.tokens * S.H_c), ("mul", streams), ("add", streams)],
            # the norm and linear, then in fp32 the mixes (the scale's product), the sigmoid, pre + eps
            saved_bytes=streams_norm_saved(self.tokens) + FP32 * self.tokens * 3 * S.H_c,
            bytes_matmul=linear_bytes(self.tokens, S.H_c * S.d, S.H_c),
        )


@dataclass(frozen=True)
class V4Projections(Block):
    """DeepseekV4Attention's projections in registration order: q_a_proj (d -> r_q), q_a_norm (an
    fp32 RMSNorm of r_q), q_b_proj (r_q -> h d_h) and an unweighted RMSNorm per head, kv_proj
    (d -> d_h: one head, read as key and as value) and kv_norm (fp32); RoPE on the last d_r of each
    query and the key, and with -sin on the attention output. A compressed layer's cache
    (DeepseekV4HCACache.update) holds the key once, values being the same tensor; a sliding layer's
    (transformers' DynamicSlidingWindowLayer, handed the key as key and as value) concatenates each
    apart: two copies."""

    q_tokens: Expr
    kv_tokens: Expr
    cached_tokens: Expr
    profile: Profile = Profile()
    copies: int = 1  # copies of the key the cache holds (2 in a sliding layer)
    title = "query rank, shared key-value head"

    def projections(self) -> tuple[tuple[Expr, Expr, Expr], ...]:
        """(tokens, input width, output width) of q_a_proj, q_b_proj and kv_proj."""
        return ((self.q_tokens, S.d, S.r_q), (self.q_tokens, S.r_q, S.h * S.d_h), (self.kv_tokens, S.d, S.d_h))

    def cost(self) -> Cost:
        projections = self.projections()
        forward = sum((linear_flops(*p)[0] for p in projections), ZERO)
        return make_cost(
            tensors=[Tensor(S.r_q, S.d), Tensor(S.r_q), Tensor(S.h * S.d_h, S.r_q), Tensor(S.d_h, S.d), Tensor(S.d_h)],
            matrices=[weight_matrix(d_in, d_out) for _, d_in, d_out in projections],
            matrix_tokens=[tokens for tokens, _, _ in projections],
            flops_matmul=forward, flops_matmul_backward=2 * forward,
            elements=[("rmsnorm", self.q_tokens * (S.r_q + S.h * S.d_h) + self.kv_tokens * S.d_h),
                      ("rope", S.d_r * (2 * self.q_tokens * S.h + self.kv_tokens))],
            kv_cache_bytes=kv_cache_bytes(self.copies * S.b * self.cached_tokens * S.d_h, self.profile),
            bytes_matmul=sum((linear_bytes(*p) for p in projections), ZERO),
            saved_bytes=self.saved(),
        )

    def saved(self) -> Expr:
        """Bytes kept for backward (measured exactly: tests/test_hf_deepseek_v4.py). q_a_norm and
        kv_norm (DeepseekV4RMSNorm, fp32): the input in fp32, the rsqrt per token, the normed fp32
        values the weight multiplies; q_a_norm's output, cast, for q_b_proj. q_b_norm (unweighted,
        per head): the query and its rsqrt in fp32, and where activations are narrower both again in
        the activation dtype (the product's operands). RoPE: cos and sin repeated per call (the
        query, the key, the output's rotation back), one row of positions each."""
        q, kv, positions = self.q_tokens, self.kv_tokens, self.q_tokens / S.b
        q_a_norm = FP32 * (2 * q * S.r_q + q) + S.e * q * S.r_q
        q_b_norm = FP32 * q * S.h * (S.d_h + 1) + unless_fp32(S.e * q * S.h * (S.d_h + 1))
        kv_norm = FP32 * (2 * kv * S.d_h + kv)
        return q_a_norm + q_b_norm + kv_norm + 3 * 2 * S.e * positions * S.d_r


@dataclass(frozen=True)
class Compressor(Block):
    """DeepseekV4HCACompressor (sparse False) or DeepseekV4CSACompressor (sparse True) over the
    layer's input. HCA: kv_proj and gate_proj (d -> d_h), position_bias (m_h x d_h, fp32), kv_norm
    (d_h); one entry per m_h tokens, a softmax-weighted sum of its window. CSA: the same at 2 d_h (two
    overlapping series), m_c, then its DeepseekV4Indexer: kv_proj and gate_proj (d -> 2 d_i),
    position_bias (m_c x 2 d_i), kv_norm (d_i), q_b_proj (r_q -> h_i d_i, from the attention's query
    latent) and the scorer's weights_proj (d -> h_i); each query scored against every compressed
    key (an fp32 matmul of 2 h_i d_i per pair), the top index_topk kept as a mask. No gradient
    reaches the indexer (its output is top-k indices), nor the compressor's projections where no
    window closes (a prompt shorter than the rate)."""

    q_tokens: Expr
    kv_tokens: Expr
    entries: Expr  # compressed entries the attention (and CSA's scorer) reads
    sparse: bool
    windows: Expr = ZERO  # windows this call closes and compresses (a softmax over each)
    seen: Expr = ZERO  # tokens the cache has seen (0: no cache)
    prompt_view: Any = False  # the cache's unclosed windows are slices of the prompt's projections
    profile: Profile = Profile()
    title = "KV compressor"

    def cache_bytes(self) -> Expr:
        """The compressor's cache (compressor_state_bytes), and CSA's indexer's."""
        if self.seen == 0:
            return ZERO
        rate = S.m_c if self.sparse else S.m_h
        held = compressor_state_bytes(self.seen, rate, 2 * S.d_h if self.sparse else S.d_h, self.prompt_view, self.sparse)
        if self.sparse:
            held += compressor_state_bytes(self.seen, rate, 2 * S.d_i, self.prompt_view, True)
        return held

    def compressor_projections(self) -> tuple[tuple[Expr, Expr, Expr], ...]:
        width = 2 * S.d_h if self.sparse else S.d_h
        return ((self.kv_tokens, S.d, width), (self.kv_tokens, S.d, width))

    def indexer_projections(self) -> tuple[tuple[Expr, Expr, Expr], ...]:
        if not self.sparse:
            return ()
        return ((self.kv_tokens, S.d, 2 * S.d_i), (self.kv_tokens, S.d, 2 * S.d_i),
                (self.q_tokens, S.r_q, S.h_i * S.d_i), (self.q_tokens, S.d, S.h_i))

    def cost(self) -> Cost:
        rate, width = (S.m_c, 2 * S.d_h) if self.sparse else (S.m_h, S.d_h)
        tensors = [Tensor(width, S.d), Tensor(width, S.d), Tensor(rate, width), Tensor(S.d_h)]
        if self.sparse:
            tensors += [Tensor(2 * S.d_i, S.d), Tensor(2 * S.d_i, S.d), Tensor(rate, 2 * S.d_i), Tensor(S.d_i),
                        Tensor(S.h_i * S.d_i, S.r_q), Tensor(S.h_i, S.d)]
        own = sum((linear_flops(*p)[0] for p in self.compressor_projections()), ZERO)
        scoring = 2 * self.q_tokens * S.h_i * S.d_i * self.entries if self.sparse else ZERO
        indexer = sum((linear_flops(*p)[0] for p in self.indexer_projections()), ZERO) + scoring
        projections = (*self.compressor_projections(), *self.indexer_projections())
        return make_cost(
            tensors=tensors,
            matrices=[weight_matrix(d_in, d_out) for _, d_in, d_out in projections],
            matrix_tokens=[tokens for tokens, _, _ in projections],
            flops_matmul=own + indexer,
            # no window closed: the projections feed nothing that needs a gradient (kv[:, :0])
            flops_matmul_backward=sp.Piecewise((ZERO, sp.Eq(self.windows, 0)), (2 * own, True)),
            # one softmax per window over its rate (HCA) or twice its rate (CSA's overlap) slots, per width
            elements=[("softmax", S.b * self.windows * (2 * rate * (S.d_h + S.d_i) if self.sparse else rate * S.d_h)),
                      ("relu", self.q_tokens * S.h_i * self.entries if self.sparse else ZERO)],
            kv_cache_bytes=self.cache_bytes(),
            bytes_matmul=sum((linear_bytes(*p) for p in projections), ZERO),
            saved_bytes=self.saved(),
        )

    def saved(self) -> Expr:
        """Bytes kept for backward (measured exactly: tests/test_hf_deepseek_v4.py), nothing where no
        window closes, nothing of CSA's indexer (the loss cannot reach it: freed with the forward).
        Per closed window of `slots` (m_h; CSA's two overlapping series, 2 m_c) d_h-wide tokens: the
        fp32 softmax over the gates, cast where activations are narrower, and the values it weighs
        (HCA: a view of the whole prompt's kv projection, b n d_h; CSA: the windows put together,
        b W 2 m_c d_h); kv_norm (fp32) on each entry; RoPE's cos and sin, one per entry."""
        rate, slots = (S.m_c, 2 * S.m_c) if self.sparse else (S.m_h, S.m_h)
        entries = S.b * self.windows
        weights = entries * slots * S.d_h
        values = S.e * weights if self.sparse else S.e * self.kv_tokens * S.d_h
        kept = (FP32 * weights + unless_fp32(S.e * weights) + values
                + FP32 * (2 * entries * S.d_h + entries) + 2 * S.e * entries * S.d_r)
        return sp.Piecewise((ZERO, sp.Eq(self.windows, 0)), (kept, True))


@dataclass(frozen=True)
class GroupedOutput(Block):
    """The grouped output projection: o_a_proj (DeepseekV4GroupedLinear, a bmm of g_o groups, each
    h d_h / g_o -> r_o: one weight of g_o r_o x h d_h / g_o) then o_b_proj (g_o r_o -> d)."""

    tokens: Expr
    title = "grouped output projection"

    def cost(self) -> Cost:
        grouped, grouped_backward = linear_flops(self.tokens, S.h * S.d_h, S.r_o)  # g_o groups of (h d_h / g_o) x r_o
        mixed, mixed_backward = linear_flops(self.tokens, S.g_o * S.r_o, S.d)
        return make_cost(
            tensors=[Tensor(S.g_o * S.r_o, S.h * S.d_h / S.g_o), Tensor(S.d, S.g_o * S.r_o)],
            matrices=[weight_matrix(S.h * S.d_h / S.g_o, S.g_o * S.r_o), weight_matrix(S.g_o * S.r_o, S.d)],
            matrix_tokens=[self.tokens, self.tokens],
            flops_matmul=grouped + mixed, flops_matmul_backward=grouped_backward + mixed_backward,
            # each product's input: the heads' output regrouped (h d_h) and the groups' (g_o r_o)
            saved_bytes=S.e * self.tokens * (S.h * S.d_h + S.g_o * S.r_o),
            bytes_matmul=S.e * (S.h * S.d_h * S.r_o + self.tokens * (S.h * S.d_h + S.g_o * S.r_o))
            + linear_bytes(self.tokens, S.g_o * S.r_o, S.d),
        )
