"""Blocks before the first layer, and the position tables a stack's layers share.

Token embeddings (and OPT's projection between the embedding width and d), learned, sinusoidal
and token-type embeddings, RoPE's cos/sin tables, ALiBi's slopes, T5's relative position bias and
the attention mask made once for every layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import FP32, INDEX, ZERO, Expr, elementwise_bytes, if_fp32
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix


@dataclass(frozen=True)
class TokenEmbedding(Block):
    """Token lookup table V x width (d, or OPT's narrower d_e); scaled by sqrt(d) in the seeds'
    Transformer and in Gemma."""

    tokens: Expr
    owns_table: bool = True  # False when the table belongs to another block (shared embeddings)
    scaled: bool = False
    output_kept: bool = False  # post-LN without an embedding norm: layer 0's projections keep it
    width: Expr = S.d
    profile: Profile = Profile()
    extra_rows: int = 0  # rows past V (Mllama's 8 image tokens)
    title = "token embedding"

    def cost(self) -> Cost:
        scale = self.tokens * self.width if self.scaled else ZERO
        # The lookup keeps the token ids for its backward; scaling by a constant keeps nothing.
        # What layer 0 reads is d wide (after a projection in, where there is one).
        output = S.e * self.tokens * S.d if self.output_kept else 0
        # Gemma holds its scale as a one-element buffer in the model dtype (facts.embed_scale_buffer).
        bf16 = self.profile.facts.embed_scale_bf16  # RecurrentGemma's normalizer, cast to the
        buffer = (2 if bf16 else S.e) if self.scaled and self.profile.facts.embed_scale_buffer else 0
        cast = if_fp32(FP32) if bf16 and self.scaled else 0  # dtype each forward: in fp32 a copy the product keeps
        return make_cost(
            tensors=[Tensor(S.V + self.extra_rows, self.width)] if self.owns_table else [],
            elements=[("mul", scale)],
            saved_bytes=INDEX * self.tokens + output + cast,
            bytes_other=elementwise_bytes(self.tokens * self.width),  # gather rows, write them
            input_bytes=INDEX * self.tokens,  # the int64 ids the caller passes
            saved_input_bytes=INDEX * self.tokens,  # the ids it keeps are those
            buffer_bytes=buffer,
        )


@dataclass(frozen=True)
class EmbeddingProjection(Block):
    """A bias-free linear map between the embedding width and d (OPT-350m's project_in before the
    layers, d_e -> d, and project_out after them, d -> d_e). project_in keeps its input, the token
    embeddings; project_out's input is the last layer's output (kept there) and its output is what
    the head keeps (output_kept)."""

    tokens: Expr
    d_in: Expr
    d_out: Expr
    input_kept: bool = False
    output_kept: bool = False
    title = "embedding projection"

    def cost(self) -> Cost:
        forward, backward = linear_flops(self.tokens, self.d_in, self.d_out)
        kept = (self.d_in if self.input_kept else 0) + (self.d_out if self.output_kept else 0)
        return make_cost(
            tensors=[Tensor(self.d_out, self.d_in)],
            matrices=[weight_matrix(self.d_in, self.d_out)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=S.e * self.tokens * kept,
            bytes_matmul=linear_bytes(self.tokens, self.d_in, self.d_out),
        )


@dataclass(frozen=True)
class LearnedPositions(Block):
    """A learned position table P x d added to the token embeddings; the P-long buffers a class
    holds beside it (BERT's position ids, GPT-BigCode's P x P causal mask: facts)."""

    tokens: Expr
    seq: Expr = S.n
    profile: Profile = Profile()
    offset: int = 0  # extra rows: OPT looks position p up at row p + 2
    title = "learned positions"

    def cost(self) -> Cost:
        facts = self.profile.facts
        # The lookup keeps its int64 position ids: one row of n shared by the batch, or one per
        # sequence where the code builds them from the attention mask (facts.position_ids_per_sequence).
        ids = self.tokens if facts.position_ids_per_sequence else self.seq
        saved = INDEX * ids if facts.position_ids_saved else 0
        return make_cost(
            tensors=[Tensor(S.P + self.offset, S.d)],
            elements=[("add", self.tokens * S.d)],
            saved_bytes=saved,
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
            buffer_bytes=(INDEX * S.P if "position_ids" in facts.id_buffers else 0)
            + (S.P**2 if facts.causal_mask_buffer == "model" else 0),
        )


@dataclass(frozen=True)
class TokenTypes(Block):
    """BERT's segment embeddings N_tt x d, added to the token embeddings."""

    tokens: Expr
    profile: Profile = Profile()
    title = "token-type embeddings"

    def cost(self) -> Cost:
        buffer = INDEX * S.P if "token_type_ids" in self.profile.facts.id_buffers else 0
        return make_cost(
            tensors=[Tensor(S.N_tt, S.d)],
            elements=[("add", self.tokens * S.d)],
            saved_bytes=INDEX * self.tokens,  # the int64 token-type ids
            saved_input_bytes=INDEX * self.tokens,
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
            input_bytes=INDEX * self.tokens,
            buffer_bytes=buffer,
        )


@dataclass(frozen=True)
class SinusoidalPositions(Block):
    """Fixed sinusoids (a (P + offset) x d buffer in the model dtype, no parameters) added to the
    token embeddings; XGLM's table has 2 rows more, looked up at position + 2."""

    tokens: Expr
    offset: int = 0  # extra rows: XGLM looks position p up at row p + 2
    fp32_buffer: bool = False  # facts.sinusoid_buffer_fp32: CTRL builds its table in fp32
    title = "sinusoidal positions"

    def cost(self) -> Cost:
        return make_cost(
            elements=[("add", self.tokens * S.d)],
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
            buffer_bytes=(FP32 if self.fp32_buffer else S.e) * (S.P + self.offset) * S.d,
        )


@dataclass(frozen=True)
class RotaryTables(Block):
    """RoPE's cos and sin for the n positions, shared by all layers of a stack.

    Computed per forward (facts.rotary_tables == "forward", Hugging Face) in the activation dtype
    (OLMo 2: fp32, facts.rotary_tables_fp32; Llama 4: "complex", one complex64 per pair of
    dimensions, 4 n d_h bytes kept whatever the dtype):
    the rotation keeps both for backward, 2 * n * d_h elements (gpt-oss: 2 * n * d_h / 2,
    facts.rotary_tables_half; none where each layer interleaves its own copy,
    facts.rotary_tables_per_layer: RotaryEmbedding keeps those), and the module holds inv_freq and
    original_inv_freq (d_h / 2 each, fp32). Held as buffers ("buffer", the reference): cos and sin
    of P x d_h in the model dtype, nothing kept; GPT-J's ("sincos_buffer") one P x d_r fp32 table
    of sin and cos halves, nothing kept here (facts.rotary_repeats_per_call: each layer keeps its
    own repeats). `sets` of them where each attention type has its own
    (facts.rotary_tables_per_layer_type: Gemma 3's local and global RoPE), one of them held but
    never called (facts.rotary_global_set_unused: GraniteSWA's global rotary_emb).
    """

    seq: Expr
    profile: Profile = Profile()
    width: Expr = S.d_h  # the rotated part of a head: d_h, or d_r where RoPE is partial
    sets: int = 1
    title = "rotary cos/sin tables"

    def cost(self) -> Cost:
        inv_freq = self.sets * 2 * FP32 * (self.width / 2)  # inv_freq and original_inv_freq
        if self.profile.facts.rotary_tables == "complex":  # complex64: 8 bytes a pair of dimensions
            return make_cost(saved_bytes=self.sets * 2 * FP32 * self.seq * (self.width / 2),
                             buffer_bytes=inv_freq)
        if self.profile.facts.rotary_tables == "forward":
            facts = self.profile.facts
            size = FP32 if facts.rotary_tables_fp32 else S.e
            width = self.width / 2 if facts.rotary_tables_half else self.width
            made = self.sets - 1 if facts.rotary_global_set_unused else self.sets
            kept = 0 if facts.rotary_tables_per_layer else made * 2 * self.seq
            return make_cost(saved_bytes=kept * width * size, buffer_bytes=inv_freq)
        if self.profile.facts.rotary_tables == "none":  # no rotary module (Kimi Linear)
            return make_cost()
        if self.profile.facts.rotary_tables == "sincos_buffer":  # sin and cos halves, fp32
            return make_cost(buffer_bytes=FP32 * S.P * self.width)
        return make_cost(buffer_bytes=2 * S.P * self.width * S.e)


@dataclass(frozen=True)
class AlibiSlopes(Block):
    """ALiBi's slopes, one per head: a buffer in the model dtype, shared by a stack's layers
    (facts.alibi_slopes_buffer; BLOOM builds its bias tensor each forward and keeps nothing)."""

    profile: Profile = Profile()
    title = "ALiBi slopes"

    def cost(self) -> Cost:
        return make_cost(buffer_bytes=S.e * S.h if self.profile.facts.alibi_slopes_buffer else 0)


@dataclass(frozen=True)
class RelativePositionBias(Block):
    """T5's bucketed relative position bias: an N_rb x h table owned by a stack's first layer,
    looked up once per forward by an n x n matrix of int64 bucket ids (kept for backward)."""

    seq: Expr = S.n
    title = "relative position bias"

    def cost(self) -> Cost:
        return make_cost(tensors=[Tensor(S.N_rb, S.h)], saved_bytes=INDEX * self.seq**2)


@dataclass(frozen=True)
class KeptCausalMask(Block):
    """A (b, 1, n, n) bool causal mask made once a forward and passed to every layer, whose
    masked_fill keeps it for backward under the eager kernel (facts.masked_fill_causal_mask:
    MPT); a fused kernel masks inside and keeps none."""

    seq: Expr
    profile: Profile = Profile()
    title = "causal mask kept"

    def cost(self) -> Cost:
        return make_cost(saved_bytes=S.b * self.seq**2 if self.profile.kernel().dense else 0)


@dataclass(frozen=True)
class SharedAttentionMask(Block):
    """A float mask of shape (1, h, q_len, k_len) made once and passed to every layer, which a
    fused kernel keeps (Hugging Face's T5 cross-attention under sdpa: a zero position bias)."""

    q_len: Expr
    k_len: Expr
    title = "shared attention mask"

    def cost(self) -> Cost:
        return make_cost(saved_bytes=S.e * S.h * self.q_len * self.k_len)
