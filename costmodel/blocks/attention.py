"""Attention's blocks: the Q, K, V projections (and the KV cache they fill), RoPE's rotation, the
kernel's three parts (scores, softmax, weighted sum; what each keeps is the kernel's, see
costmodel/kernels.py) and the output projection. Latent attention's projections are in mla.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..kernels import Kernel
from ..spec import KV_DTYPE_BYTES
from ..terms import FP32, INDEX, ZERO, Expr, dtype_bytes, elementwise_bytes, unless_fp32
from .base import (
    Backward, BackwardStep, Block, Cost, LinearOp, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_and_bias,
    weight_matrix,
)
from .megatron_softmax import MEGATRON_CAUSAL_VECTOR, MEGATRON_SOFTMAX_MASK_BYTES


#: Bytes of the per-tensor scales a quantized KV cache keeps beside one layer's keys and values:
#: one fp32 scale for the keys and one for the values (transformers' QuantizedCache(backend="fp8"),
#: FINDINGS 11.4; TensorRT-LLM's int8 and fp8 KV caches scale per tensor the same way).
KV_SCALE_BYTES = 2 * FP32


def kv_element_bytes(profile: Profile) -> Expr:
    """Bytes of one cached key or value element as the cache stores it: the activation dtype, or
    one byte in a quantized cache (profile.kv_dtype fp8 or int8: spec.KV_DTYPES). The cache's size
    (kv_cache_bytes) and a kernel's reads of it as stored (AttentionCore.cache_element_bytes) both
    take it from here."""
    return S.e if profile.kv_dtype is None else sp.Integer(KV_DTYPE_BYTES[profile.kv_dtype])


def kv_cache_bytes(elements: Expr, profile: Profile) -> Expr:
    """Bytes of one layer's cached key/value elements (kv_element_bytes each), plus a quantized
    cache's two per-tensor scales for the layer."""
    cached = elements * kv_element_bytes(profile)
    return cached if elements == 0 or profile.kv_dtype is None else cached + KV_SCALE_BYTES


@dataclass(frozen=True)
class QKVProjection(Block):
    """Queries from q_tokens, keys and values from kv_tokens; h query heads, h_kv KV heads of d_h.

    In cross-attention kv_tokens are the encoder's tokens. The KV cache (when cached) holds the
    keys and values of every KV head: 2 * b * h_kv * d_h per cached token per layer (b * h_kv *
    (d_h + d_v) where the values have a width of their own, value_dim). A fused
    projection (facts.fused_qkv, GPT-2's c_attn) is one weight and one bias.
    """

    q_tokens: Expr
    kv_tokens: Expr
    bias: bool
    cached_tokens: Expr = ZERO  # tokens held in this layer's KV cache after prefill + decode
    copies_cache: bool = False  # a decode step's append copies the cache (torch.cat)
    fused: bool = False
    transposed: bool = False  # weights stored (d_in, d_out) (facts.linear_weights_transposed)
    profile: Profile = Profile()
    cache_heads: Expr = S.h_kv  # heads the cache holds (Falcon's new layout: h, see facts)
    head_dim: Expr = S.d_h  # the width of every head (Gemma 4's full layers: d_hg)
    values_are_keys: bool = False  # no v projection: the keys' is the values' (Gemma 4's attention_k_eq_v)
    kv_shared: bool = False  # no k or v projection: an earlier layer's K and V (Gemma 4's num_kv_shared_layers)
    kv_heads: Expr = S.h_kv  # its KV heads (Gemma 4's full layers: h_kvg)
    value_dim: Expr | None = None  # a value head's width where not head_dim (MiMo-V2-Flash: d_v)
    # False: no query projection here (JetMoE's queries come from blocks/attention_experts.py; its
    # kv_proj is one d -> 2 h_kv d_h linear, counted as k and v)
    queries: bool = True
    input_width: Expr = S.d  # the width it reads (Zamba's shared attention: 2 d, the layer's input and the embeddings)
    title = "Q, K, V projections"

    @property
    def q_width(self) -> Expr:
        return S.h * self.head_dim if self.queries else ZERO

    @property
    def value_width(self) -> Expr:
        return self.head_dim if self.value_dim is None else self.value_dim

    def kv_widths(self) -> tuple[Expr, ...]:
        """Widths of the K and V projections this layer runs (k and v, k alone, or neither)."""
        names = () if self.kv_shared else ("k",) if self.values_are_keys else ("k", "v")
        return tuple(self.kv_heads * (self.head_dim if name == "k" else self.value_width) for name in names)

    def linear_ops(self) -> tuple[LinearOp, ...]:
        """q, k, v in the order the attention's forward runs them (or the one fused projection)."""
        if self.fused:
            return (LinearOp("qkv", self.q_tokens, self.input_width, (S.h + 2 * self.kv_heads) * self.head_dim, self.bias),)
        return (*([LinearOp("q", self.q_tokens, self.input_width, self.q_width, self.bias)] if self.queries else []),
                *(LinearOp(name, self.kv_tokens, self.input_width, width, self.bias)
                  for name, width in zip(("k", "v"), self.kv_widths())))

    def cost(self) -> Cost:
        q_fwd, q_bwd = linear_flops(self.q_tokens, self.input_width, self.q_width)
        kv_width = sum(self.kv_widths(), ZERO)
        kv_fwd, kv_bwd = linear_flops(self.kv_tokens, self.input_width, kv_width)
        if self.fused:
            tensors = weight_and_bias(self.input_width, (S.h + 2 * self.kv_heads) * self.head_dim, self.bias, self.transposed)
            matrices = [weight_matrix(self.input_width, (S.h + 2 * self.kv_heads) * self.head_dim)]
        else:
            tensors = weight_and_bias(self.input_width, self.q_width, self.bias, self.transposed) if self.queries else ()
            for width in self.kv_widths():
                tensors = tensors + weight_and_bias(self.input_width, width, self.bias, self.transposed)
            widths = self.kv_widths()  # one matrix counted len(widths) times where k and v match
            matrices = [*([weight_matrix(self.input_width, self.q_width)] if self.queries else []),
                        *([weight_matrix(self.input_width, self.kv_heads * self.head_dim, len(widths))] if self.value_dim is None
                          else (weight_matrix(self.input_width, width) for width in widths))]
        kv_cache = kv_cache_bytes(S.b * self.cache_heads * (self.head_dim + self.value_width) * self.cached_tokens,
                                  self.profile)
        moved = linear_bytes(self.q_tokens, self.input_width, self.q_width) if self.queries else ZERO
        moved += linear_bytes(self.kv_tokens, self.input_width, kv_width)
        # cross-attention's queries are the decoder's rows, its keys and values the encoder's: each matrix its own
        # rows (else a kernel reads the mean, T5's 3,072 and 12,288 + 12,288 as three of 9,216); a decode step's
        # cached K/V (no rows) and self-attention keep the one count the FLOPs imply
        own_rows = not self.fused and self.queries and self.kv_tokens != 0 and self.q_tokens != self.kv_tokens
        forward_passes, backward_passes = self.megatron_dense_bytes()
        return make_cost(
            tensors=tensors,
            matrices=matrices,
            matrix_tokens=[self.q_tokens, *[self.kv_tokens] * (len(matrices) - 1)] if own_rows else (),
            flops_matmul=q_fwd + kv_fwd,
            flops_matmul_backward=q_bwd + kv_bwd,
            # Falcon splits its fused output with qkv[..., [-2]] and [-1]: two int64 index tensors.
            saved_bytes=self.profile.facts.qkv_split_index_bytes if self.fused else 0,
            kv_cache_bytes=kv_cache,
            bytes_matmul=moved,
            # torch.cat reads the cache and the new token's keys and values, writes them all.
            bytes_other=2 * kv_cache if self.copies_cache else forward_passes,
            backward_bytes_other=backward_passes,
        )

    def megatron_dense_bytes(self) -> tuple[Expr, Expr | None]:
        """(forward, backward) bytes of the passes Megatron's own dense path runs around its fused Q/K/V GEMM
        (facts.megatron_dense_passes): the bias added after the GEMM (reads and writes the output; backward reads
        its gradient for the bias's) and the split's backward, torch.cat of the three gradients (reads and writes
        them). flash_attn's dense path (facts.einsum_layout_copies) the unbind's backward alone, a torch.stack of
        the three gradients (Dao-AILab/flash-attention 30fd8c17 flash_attn/modules/mha.py line 172). (0, None)
        elsewhere: no such pass, the tree's convention."""
        outputs = self.q_tokens * (S.h + 2 * self.kv_heads) * self.head_dim
        if self.fused and self.profile.facts.einsum_layout_copies and self.profile.kernel().dense:
            # flash_attn's SelfAttention: q, k, v = qkv.unbind(dim=2), whose backward stacks the three gradients
            # (reads and writes them); its bias rides the GEMM (facts.activation_in_gemm's FusedDense)
            return ZERO, 2 * S.e * outputs
        if not (self.fused and self.profile.facts.megatron_dense_passes and self.profile.kernel().dense):
            return ZERO, None
        bias = 1 if self.bias else 0
        return 2 * S.e * outputs * bias, (bias + 2) * S.e * outputs


@dataclass(frozen=True)
class ValueScale(Block):
    """MiMo-V2-Flash's attention_value_scale: the values (kv_tokens x kv_heads heads of d_v) times
    a constant before RoPE and the cache (transformers 5.24 MiMoV2FlashAttention.forward). A
    product by a Python float keeps nothing for backward."""

    kv_tokens: Expr
    kv_heads: Expr = S.h_kv
    title = "value scale"

    def cost(self) -> Cost:
        values = self.kv_tokens * self.kv_heads * S.d_v
        return make_cost(elements=[("mul", values)], bytes_other=elementwise_bytes(values))


@dataclass(frozen=True)
class RotaryEmbedding(Block):
    """RoPE: rotate the first `width` dimensions (all d_h, or d_r) of every query and key head by
    its position (cos/sin from RotaryTables); MLA rotates one shared key head."""

    q_tokens: Expr
    kv_tokens: Expr
    width: Expr = S.d_h
    key_heads: Expr = S.h_kv
    # bytes of the cos and sin this layer makes for itself and keeps (interleaved RoPE,
    # facts.rotary_tables_per_layer); 0: it uses the stack's RotaryTables
    tables_kept: Expr = ZERO
    profile: Profile = Profile()
    title = "rotary position embedding"

    def cost(self) -> Cost:
        rotated = (self.q_tokens * S.h + self.kv_tokens * self.key_heads) * self.width
        # GPT-J repeats sin and cos for the queries and again for the keys (one row of positions
        # shared by the batch), and the products keep each: facts.rotary_repeats_per_call; in
        # fp32 where the lookup is not cast (CodeGen, facts.rotary_tables_fp32).
        size = FP32 if self.profile.facts.rotary_tables_fp32 else S.e
        repeats = (2 * size * (self.q_tokens + self.kv_tokens) / S.b * self.width
                   if self.profile.facts.rotary_repeats_per_call else ZERO)
        in_place = self.profile.facts.rotary_in_place  # flash_attn's kernel: backward reads and writes the gradient
        return make_cost(elements=[("rope", rotated)], bytes_other=elementwise_bytes(rotated),
                         backward_bytes_other=elementwise_bytes(rotated) if in_place else None,
                         saved_bytes=self.tables_kept + repeats)


@dataclass(frozen=True)
class AttentionTemperature(Block):
    """Llama 4's attention temperature tuning on its NoPE layers: the queries times
    log1p(floor((position + 1) / floor_scale)) * attn_scale + 1, one fp32 scale per position,
    broadcast over the batch and the heads. The scales come from q_len positions (an add of the
    cached length, +1, a divide, floor, log1p, a multiply, +1: the adds and multiplies counted,
    floor and log1p, kinds of their own, not); the multiply keeps the fp32 scales (not the
    queries, as the scales need no gradient)."""

    q_tokens: Expr
    q_len: Expr
    title = "attention temperature"

    def cost(self) -> Cost:
        values = self.q_tokens * S.h * S.d_h
        return make_cost(elements=[("mul", values + 2 * self.q_len), ("add", 3 * self.q_len)],
                         saved_bytes=FP32 * self.q_len, bytes_other=elementwise_bytes(values))


@dataclass(frozen=True)
class QueryScale(Block):
    """Ministral 3's per-position query scale on every RoPE layer (rope_parameters'
    llama_4_scaling_beta): the rotated queries times 1 + beta log(1 + floor(position /
    original_max_position_embeddings)), computed for q_len positions in fp32 (a divide, floor,
    +1, log, a multiply by beta, +1: the divide, multiply and adds counted, floor and log kinds
    of their own, not) and cast to the activation dtype, broadcast over the batch and heads. The
    multiply keeps the cast scales (not the queries: the scales need no gradient)."""

    q_tokens: Expr
    q_len: Expr
    title = "query scale"

    def cost(self) -> Cost:
        values = self.q_tokens * S.h * S.d_h
        return make_cost(elements=[("mul", values + 2 * self.q_len), ("add", 2 * self.q_len)],
                         saved_bytes=S.e * self.q_len, bytes_other=elementwise_bytes(values))


@dataclass(frozen=True)
class AttentionCore(Block):
    """What the scores, softmax and weighted-sum blocks share: lengths, profile, kernel.

    What they keep for backward, their backward FLOPs and whether the n_q x n_k matrix moves
    through memory are the kernel's (costmodel/kernels.py); b sequences, h heads,
    pairs = b*h*q_len*k_len.
    """

    q_len: Expr
    k_len: Expr
    profile: Profile = Profile()
    bias_needs_grad: bool = False  # a trained position bias (T5's self-attention) is added
    cross: bool = False
    causal: bool = False  # a decoder's self-attention
    qk_dim: Expr = S.d_h  # width of a query/key head
    value_dim: Expr = S.d_h  # width of a value head (MLA: d_v)
    kv_heads: Expr = S.h_kv  # heads of K and V as they reach the kernel (Falcon's new layout: h)
    windowed: bool = False  # a sliding-window layer's prefill (its "windowed" variant)
    chunked: bool = False  # the window is Llama 4's chunk (ModelConfig.chunked_window)
    latent: bool = False  # MLA (its "absorbed" variant)
    sinks: bool = False  # a learned logit per head joins each softmax row (gpt-oss)
    kv_shared: bool = False  # K and V are an earlier layer's (Gemma 4's num_kv_shared_layers)
    # DiffLlama's second kernel call on the same queries and keys (blocks/differential.py): a fused
    # kernel keeps those once, for the first call; the eager products copy them again
    second_call: bool = False

    def own_kv_heads(self, heads: Expr) -> Expr:
        """Heads of K (or V) kept that this layer holds itself: all of them, but in a layer reusing
        an earlier one's K and V none unless they reach the kernel repeated (a copy of h heads)."""
        if not self.kv_shared:
            return heads
        if isinstance(heads, sp.Piecewise):  # each branch's heads (a condition must hold no Piecewise)
            return sp.Piecewise(*((self.own_kv_heads(value), condition) for value, condition in heads.args))
        return sp.Piecewise((ZERO, sp.Eq(heads, self.kv_heads)), (heads, True))

    @property
    def windowed_pairs(self) -> Expr:
        """(query, key) pairs a causal kernel with a window of w computes over a prompt of n:
        query i attends min(i, w) keys, n w - w (w - 1) / 2 in all once n >= w. Chunks of w
        (chunked): query i (from 0) attends i mod w + 1 keys, w (w + 1) / 2 a whole chunk."""
        n = self.q_len
        if self.chunked:
            chunks = sp.floor(n / S.w)
            rest = n - chunks * S.w
            return S.b * S.h * (chunks * S.w * (S.w + 1) / 2 + rest * (rest + 1) / 2)
        return S.b * S.h * sp.Piecewise((n * S.w - S.w * (S.w - 1) / 2, n >= S.w),
                                        (n * (n + 1) / 2, True))

    def core_variants(self, width: Expr, latent_width: Expr) -> list[tuple[str, Expr]]:
        """This product's FLOPs under a windowed kernel, or absorbed MLA (attending in the
        latent: latent_width per head, every key of one shared head)."""
        variants = []
        if self.windowed:
            variants.append(("windowed", 2 * self.windowed_pairs * width))
        if self.latent:
            variants.append(("absorbed", 2 * self.pairs * latent_width))
        return variants

    @property
    def kernel(self) -> Kernel:
        return self.profile.kernel(self.bias_needs_grad)

    @property
    def cache_element_bytes(self) -> Expr:
        """Bytes of each key and value element the kernel reads: the cache's as stored
        (kv_element_bytes, the rule its size takes: one byte in an FP8 or int8 cache) where the
        decode code's fused kernel attends on a quantized cache as stored (Profile.kv_read_as_stored,
        costmodel/decode_codes.py: vLLM's FlashAttention-3 backend runs attention in FP8 on an FP8
        cache, vLLM docs features/quantization/quantized_kvcache.md; TensorRT-LLM's masked MHA
        converts the FP8 or int8 cache as it loads it, with one fp32 scale a layer passed to the
        kernel, not read per element), the activation dtype's otherwise (transformers' QuantizedCache
        and torchao's cache hand the kernel a dequantized copy; a dense kernel runs torch ops)."""
        if self.profile.kv_read_as_stored and not self.kernel.dense:
            return kv_element_bytes(self.profile)
        return S.e

    @property
    def inputs_rebuilt(self) -> bool:
        """Latent attention whose up-projections are recomputed (recompute "deepseek"): the
        queries, keys and values the kernel reads are their discarded outputs, rebuilt before the
        kernel's backward (Megatron-LM's mla_up_proj checkpoint frees them once the core has run),
        so the kernel keeps none of them."""
        return self.latent and self.profile.recomputes("up_projections")

    @property
    def pairs(self) -> Expr:
        return S.b * S.h * self.q_len * self.k_len

    @property
    def kv_heads_kept(self) -> Expr:
        """Heads of K and V an eager product keeps: h, except that repeating K/V (expand then
        reshape) stays a view for multi-query attention (h_kv = 1) at b = 1 where the code does it
        that way (facts.repeat_kv_view_for_mqa)."""
        if self.profile.facts.repeat_kv_view_for_mqa:
            kv = S.h_kv if self.kv_heads == S.h else self.kv_heads  # Falcon's new layout: its groups', h_kv
            return sp.Piecewise((kv, sp.And(sp.Eq(S.b, 1), sp.Eq(kv, 1))), (S.h, True))
        return S.h

    @property
    def fused_qkv_extra(self) -> Expr:
        """A fused QKV projection's query is a view of its output ((h + 2 h_kv) d_h wide), which
        a kept query keeps whole (facts.fused_qkv_query_view; when the kernel keeps a view)."""
        if not self.profile.facts.fused_qkv_query_view or self.cross:
            return ZERO
        return self.kernel.query_view_saved(2 * S.e * S.b * self.q_len * S.h_kv * S.d_h)


@dataclass(frozen=True)
class AttentionScores(AttentionCore):
    """Q K^T times the scale over every (query, key) pair, plus mask and position bias adds."""

    causal_or_padding_mask: bool = True
    position_bias: bool = False  # ALiBi or T5 relative bias added to the scores
    scaled: bool = True  # False: no multiply at all (a scale of 1, T5's)
    softcap: bool = False  # cap * tanh(scores / cap) before the softmax (Gemma 2)
    title = "attention scores"

    def cost(self) -> Cost:
        pairs, kernel = self.pairs, self.kernel
        forward = 2 * pairs * self.qk_dim
        # flash_attn's dense scores scale the keys, k * softmax_scale (facts.scores_scale_on_keys), not the scores
        keys_scaled = kernel.dense and self.profile.facts.scores_scale_on_keys
        scale = self.key_elements if keys_scaled else pairs * int(self.scaled)
        elements = [("mul", scale + pairs * 2 * int(self.softcap))]
        elements.append(("add", pairs * (int(self.causal_or_padding_mask) + int(self.position_bias))))
        if self.masked_by_product:  # w * b + -1e4 * (1 - b), b the buffer's n_q x n_k slice: the
            # product over the scores, 1 - b and its product over the slice (the add is the mask's)
            elements += [("mul", pairs + self.q_len * self.k_len), ("add", self.q_len * self.k_len)]
        elements.append(("tanh", pairs if self.softcap else 0))
        # Reads the queries and the keys (h_kv heads: the cache in a decode step); a dense kernel
        # writes the scores, and its scaling, mask and position bias each read and write them (the
        # broadcast mask or bias itself is small); a fused kernel does them in registers.
        moved = S.b * self.qk_dim * (S.e * S.h * self.q_len + self.cache_element_bytes * self.kv_heads * self.k_len)
        pointwise, backward = ZERO, None
        if kernel.dense:
            moved += S.e * pairs
            # Megatron's scale is the GEMM's alpha and its mask the fused softmax's (facts.fused_scale_mask_softmax)
            pointwise = ZERO if self.profile.facts.fused_scale_mask_softmax \
                else sp.Add(*(elementwise_bytes(x) for _, x in elements))
            if self.profile.facts.scores_scale_on_keys:  # flash_attn's SelfAttention: its own passes
                pointwise, backward = self.keys_scale_bytes()
        # Soft-capping keeps tanh's result (its backward reads it), in the activation dtype.
        capped = S.e * pairs if self.softcap and kernel.dense else ZERO
        # GPT-Neo's attention holds its own P x P bool causal (or local) mask as a buffer, OpenAI
        # GPT's a P x P matrix of ones and zeros in the model dtype.
        mask_bytes = {"layer": 1, "layer_model_dtype": S.e}.get(self.profile.facts.causal_mask_buffer, 0)
        mask = mask_bytes * S.P**2 if not self.cross else 0
        # XGLM clamps the masked scores below (torch.max with a 0-d fp32 tensor): both are kept.
        clamped = S.e * pairs + FP32 if self.profile.facts.scores_clamped_min and kernel.dense else ZERO
        return make_cost(
            flops_matmul=forward,
            variants=self.core_variants(self.qk_dim, S.r_kv + S.d_r),
            flops_matmul_backward=kernel.scores_backward(forward),
            elements=elements,
            saved_bytes=(self.second_call_saved() if self.second_call else kernel.scores_saved(self))
            + self.fused_qkv_extra + capped + clamped,
            bytes_matmul=moved,
            bytes_other=pointwise,
            backward_bytes_other=backward,
            buffer_bytes=mask,
        )

    @property
    def key_elements(self) -> Expr:
        """The keys' values (b x keys x KV heads x width): what flash_attn's k * softmax_scale multiplies."""
        return S.b * self.k_len * self.kv_heads * self.qk_dim

    def keys_scale_bytes(self) -> tuple[Expr, Expr]:
        """(forward, backward) bytes of flash_attn's unfused scores (facts.scores_scale_on_keys;
        Dao-AILab/flash-attention 30fd8c17 flash_attn/modules/mha.py SelfAttention.forward, lines 172-186):
          k * softmax_scale             reads and writes the keys (backward: the same for their gradient);
          torch.einsum('bthd,bshd->bhts', q, k)  copies q (a view of the packed projection) and the
                                        scaled k, each permuted to (b h, s, d), for its bmm (backward none:
                                        the gradients' bmm write them in that layout);
          the causal mask               torch.full((n, n), -10000.0) in fp32 (write 4), torch.triu (read 4,
                                        write 4), .to(the scores' dtype) (read 4, write e), once a call;
          scores + causal_mask          reads the scores and the mask, writes the scores (backward: none,
                                        the gradient passes through).
        Counted on the CPU (torch 2.13) by validate/flash_attn_attention_ops.py, op for op."""
        queries = S.b * self.q_len * S.h * self.qk_dim
        keys = self.key_elements
        forward = 2 * S.e * keys + 2 * S.e * (queries + keys)
        if self.causal and not self.cross:
            square = self.q_len * self.k_len
            forward += (4 + 8 + 4 + S.e) * square + 2 * S.e * self.pairs + S.e * square
        return forward, 2 * S.e * keys

    @property
    def masked_by_product(self) -> bool:
        """The dense scores masked as `w * b + -1e4 * (1 - b)` (facts.scores_masked_by_product)."""
        return self.profile.facts.scores_masked_by_product and self.kernel.dense and not self.cross

    def second_call_saved(self) -> Expr:
        """What DiffLlama's second call on the same queries and keys keeps anew (measured,
        validate/FINDINGS.md, "New Hugging Face model types", session 22). A fused kernel keeps q and k as they reach
        it, the first call's. The eager products copy the queries again, but at b = 1 the query's
        reshape is a view of the rotated queries, kept once; the keys (the cache's contiguous
        concatenation) are a view too, unless repeated to the query heads (a new copy each call)."""
        if self.kernel.saves_as != "eager":
            return ZERO
        queries = sp.Piecewise((ZERO, sp.Eq(S.b, 1)), (S.h, True))
        keys = dataclasses.replace(self, kv_shared=True).own_kv_heads(self.kv_heads_kept)
        return S.e * S.b * self.qk_dim * (queries * self.q_len + keys * self.k_len)


@dataclass(frozen=True)
class Softmax(AttentionCore):
    """Softmax over keys for every (query, key) pair (inside the kernel when fused).

    With attention sinks (gpt-oss) each head's learned logit joins every row as one more column:
    h parameters, and b h n_q more softmax elements. Eagerly (transformers 5.24's
    eager_attention_forward) the code concatenates the sink column to the scores, subtracts the
    row maximum and drops the column after the softmax: the softmax keeps its output with that
    column, and the maximum its int64 index per row; the probabilities the weighted sum reads are
    a view of that output."""

    title = "softmax"

    def cost(self) -> Cost:
        kernel = self.kernel
        rows = S.b * S.h * self.q_len if self.sinks else ZERO
        columns = self.pairs + rows  # the scores and, with sinks, the sink column
        saved = kernel.softmax_saved(self)
        elements = [("softmax", columns)]
        if self.sinks and kernel.dense and self.profile.facts.sink_lse_scaling:
            return self.lse_sink_cost(saved)
        if self.sinks and kernel.dense:
            # the concatenated copy and the max subtraction over it; the softmax's extra column
            saved += dtype_bytes(self.profile.facts.softmax_dtype) * rows + INDEX * rows
            elements.append(("add", columns))
        elif kernel.dense and self.profile.facts.scores_minus_row_max:  # no sink column, the row max still
            saved += INDEX * S.b * S.h * self.q_len
            elements.append(("add", columns))
        moved = elementwise_bytes(columns) * (2 if self.sinks else 1) if kernel.dense else 0
        backward = None
        facts = self.profile.facts
        if kernel.dense and not self.sinks and (facts.fused_scale_mask_softmax or facts.softmax_dropout_passes):
            moved, backward = self.fused_softmax_bytes()
        return make_cost(tensors=[Tensor(S.h)] if self.sinks else [], elements=elements,
                         saved_bytes=saved, bytes_other=moved, backward_bytes_other=backward,
                         forward_transient_bytes=kernel.scores_live_no_grad(self))

    def fused_softmax_bytes(self) -> tuple[Expr, Expr]:
        """(forward, backward) bytes of Megatron's fused scale-mask-softmax and the probabilities' dropout
        (facts.fused_scale_mask_softmax; NVIDIA/Megatron-LM megatron/model/transformer.py ParallelAttention at
        cbad126, Megatron-Core's DotProductAttention alike), each kernel's loads and stores as its code issues them
        (blocks/megatron_softmax.py, read at cbad126 and 00129014): causal, a row loads (s + v) / 2 of its s scores
        (v = MEGATRON_CAUSAL_VECTOR) and stores the whole row, forward and backward alike (about 3 B a 16-bit score
        forward and 4 B backward at 2,048, not 4 and 6); padding (a non-causal or cross attention) reads every
        score and its uint8 mask, writes the row, backward 3 e.
        torch's fused dropout reads the probabilities and writes its output and a mask (2 e + the mask's byte;
        backward reads the gradient and the mask, writes one: the same). flash_attn's SelfAttention
        (facts.softmax_dropout_passes; mha.py lines 187-188: torch.softmax(scores, dim=-1, dtype=v.dtype), then
        nn.Dropout) moves whole rows: aten's softmax 2 e, its backward (_softmax_backward_data) 3 e."""
        pairs = self.pairs
        dropout = (2 * S.e + self.profile.mask_bytes) * pairs if self.profile.probs_dropout else ZERO
        if not self.profile.facts.fused_scale_mask_softmax:
            return 2 * S.e * pairs + dropout, 3 * S.e * pairs + dropout
        if self.causal and not self.cross:
            loaded = pairs * (self.k_len + MEGATRON_CAUSAL_VECTOR) / (2 * self.k_len)
            return S.e * (loaded + pairs) + dropout, S.e * (2 * loaded + pairs) + dropout
        return (2 * S.e + MEGATRON_SOFTMAX_MASK_BYTES) * pairs + dropout, 3 * S.e * pairs + dropout

    def lse_sink_cost(self, softmax_saved: Expr) -> Cost:
        """GraniteSWA's eager sinks (facts.sink_lse_scaling): logsumexp over each row of the
        scores (keeping its input, the masked scores, and its result), the sink subtracted (an add), an
        fp32 sigmoid (keeping its output), and the weighted sum's output times that scale cast
        back (the product keeping both: the output and the cast scale, the sigmoid's own output
        in fp32)."""
        rows, pairs = S.b * S.h * self.q_len, self.pairs
        output = rows * self.value_dim
        saved = softmax_saved + S.e * pairs + S.e * rows + FP32 * rows + unless_fp32(S.e * rows) + S.e * output
        elements = [("softmax", pairs), ("logsumexp", pairs), ("add", rows), ("sigmoid", rows),
                    ("mul", output)]
        moved = elementwise_bytes(pairs) * 2 + elementwise_bytes(rows) * 2 + elementwise_bytes(output)
        return make_cost(tensors=[Tensor(S.h)], elements=elements, saved_bytes=saved, bytes_other=moved)


@dataclass(frozen=True)
class WeightedSum(AttentionCore):
    """Probabilities times values: (n_q x n_k) @ (n_k x d_h) per head."""

    # Absorbed MLA: the values are the first r_kv of the keys' own cached latent, which a fused
    # kernel has already read for the scores (FlashMLA, vLLM's MLA backend): not read again.
    values_are_keys: bool = False
    title = "weighted sum of values"

    def cost(self) -> Cost:
        pairs, kernel = self.pairs, self.kernel
        forward = 2 * pairs * self.value_dim
        # Reads the values (h_kv heads) and, dense, the probabilities; writes the heads' output.
        values_read = 0 if self.values_are_keys and not kernel.dense else self.kv_heads * self.k_len
        moved = S.b * self.value_dim * (self.cache_element_bytes * values_read + S.e * S.h * self.q_len)
        if kernel.dense:
            moved += S.e * pairs
        # Megatron's dense path copies the heads' output [b, heads, s, d] to [s, b, h] (permute(2, 0, 1, 3)
        # .contiguous(); facts.megatron_dense_passes): reads and writes it once, its backward a view
        copy = kernel.dense and self.profile.facts.megatron_dense_passes
        output = S.b * S.h * self.q_len * self.value_dim
        forward_other, backward_other = (2 * S.e * output, ZERO) if copy else (ZERO, None)
        if kernel.dense and self.profile.facts.einsum_layout_copies:
            # flash_attn's torch.einsum('bhts,bshd->bthd', attention_drop, v) (mha.py line 189) copies v (a view of
            # the packed projection) to (b h, s, d) for its bmm and returns (b, t, h, d) as a view of (b, h, t, d),
            # which the output projection's rearrange('... h d -> ... (h d)') copies (line 516); backward: the
            # gradient copied to (b h, t, d) for the bmm (validate/flash_attn_attention_ops.py)
            values = S.b * self.k_len * self.kv_heads * self.value_dim
            forward_other, backward_other = 2 * S.e * (values + output), 2 * S.e * output
        return make_cost(
            flops_matmul=forward,
            variants=self.core_variants(self.value_dim, S.r_kv),
            flops_matmul_backward=2 * forward,
            saved_bytes=kernel.weighted_sum_saved(self),
            bytes_matmul=moved,
            bytes_other=forward_other,
            backward_bytes_other=backward_other,
        )

    def backward(self) -> Backward | None:
        """The dense (eager, math) kernel: the values' gradient (b x h x n_k x d_h, reduced to the
        KV heads only later) and the probabilities' gradient (b x h x n_q x n_k) at once, then what
        it kept goes. The values' gradient lives on until the projection that made them. Fused
        kernels: not stated."""
        if not self.kernel.dense:
            return None
        probabilities = S.e * self.pairs
        return Backward(steps=(BackwardStep(S.e * S.b * S.h * self.k_len * self.value_dim + probabilities,
                                            freed=self.cost().saved_bytes),),
                        grad_input=probabilities)


@dataclass(frozen=True)
class AttentionOutput(Block):
    """The output projection h*d_h -> d."""

    tokens: Expr
    bias: bool
    input_kept_by_kernel: bool = False  # a fused kernel's saved output is this block's input
    transposed: bool = False  # the weight stored (d_in, d_out) (facts.linear_weights_transposed)
    value_dim: Expr = S.d_h  # width of a value head (MLA: d_v)
    title = "attention output projection"

    def linear_ops(self) -> tuple[LinearOp, ...]:
        return (LinearOp("out", self.tokens, S.h * self.value_dim, S.d, self.bias),)

    def cost(self) -> Cost:
        width = S.h * self.value_dim
        forward, backward = linear_flops(self.tokens, width, S.d)
        # It keeps its input: the heads transposed back to (b, len, h*d_h), a contiguous copy.
        saved = 0 if self.input_kept_by_kernel else S.e * self.tokens * width
        return make_cost(
            tensors=weight_and_bias(width, S.d, self.bias, self.transposed),
            matrices=[weight_matrix(width, S.d)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=saved,
            bytes_matmul=linear_bytes(self.tokens, width, S.d),
        )

    def backward(self) -> Backward | None:
        """Its input's gradient (tokens x h*d_h; the heads' layout back is a view) and weight
        gradients, then its kept input goes; not stated where a fused kernel keeps that input."""
        if self.input_kept_by_kernel:
            return None
        width = S.e * self.tokens * S.h * self.value_dim
        return Backward(steps=(BackwardStep(width, params=self.cost().params, freed=width),), grad_input=width)
