"""One class per Transformer block, each owning all of its formulas as sympy expressions.

A block's cost() returns a Cost: parameters, forward matmul FLOPs, the elements of every other op
(norms, softmax, activations, residual adds, scaling, RoPE), backward matmul FLOPs, bytes saved for
backward and KV-cache bytes. Nothing else in the project types a formula: totals are sums of these,
LaTeX is sympy.latex of these, numbers are these with the dimensions substituted.

Conventions (what "formula == measurement" means, see shared/DESIGN.md):
- matmul FLOPs are 2*m*n*k per matrix product, as torch.utils.flop_counter.FlopCounterMode counts
  them; bias adds are not counted; attention scores are dense (n_q x n_k, the causal mask ignored).
- backward matmul FLOPs are 2x forward for a product whose two inputs both need gradients (a weight
  and an activation, or two activations): one product for each input's gradient.
- other ops are counted in output elements per op kind; OTHER_FLOPS_PER_ELEMENT turns elements into
  FLOPs (a stated convention, not a measurement): softmax and log-softmax 5 (max, subtract, exp,
  sum, divide or log),
  layernorm 5 (mean, subtract, square-mean, divide, affine), rmsnorm 4 (square, mean, rsqrt-scale,
  weight), gelu 8, gelu_tanh 8, silu 4, relu 1, add 1, mul 1, rope 3 (two products, one sum per
  rotated element).
- bytes saved for backward follow an implementation profile (Profile below): which tensors the code
  that runs keeps for the backward pass, in which dtype. e is the activation dtype's bytes.
- bytes moved (for the roofline) count one forward's memory traffic if every op reads its inputs
  and writes its outputs once, and every weight is read once, all in the activation dtype; fused
  attention (sdpa, flash) never writes the n_q x n_k matrix. A model of traffic, not a measurement.
  It is split in two: bytes_matmul, the matrix products' traffic (weights, their inputs, their
  outputs), and bytes_other, the other ops' (they run as separate kernels with their own roofs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy as sp

from . import symbols as S
from .config import GATED_ACTIVATIONS
from .facts import Facts, facts_for
from .kernels import Kernel, choose
from .precision import ParamBytes, param_bytes
from .terms import (
    FP32, INDEX, ZERO, Expr, dtype_bytes, elementwise_bytes, if_batch_of_one, unless_fp32,
)

OTHER_FLOPS_PER_ELEMENT = {
    "add": 1,
    "mul": 1,
    "softmax": 5,
    "log_softmax": 5,
    "layernorm": 5,
    "rmsnorm": 4,
    "relu": 1,
    "gelu": 8,
    "gelu_tanh": 8,
    "silu": 4,
    "tanh": 1,
    "rope": 3,
}



@dataclass(frozen=True)
class Profile:
    """Which code runs, and how: everything about a run that is not the architecture.

    impl: "hf" (transformers 5.24's code for the family) or "reference" (validate/reference.py,
    which computes everything in the activation dtype); what each keeps, and in which dtype, is a
    row of the facts table (costmodel/facts.py), looked up by (impl, family). attention: the kernel
    choice (costmodel/kernels.py). dropout: whether dropout runs (a training forward with p > 0).
    kv_cache: "dynamic" appends each step's keys and values with torch.cat, copying the whole
    cache (Hugging Face's DynamicCache and the reference model), "static" writes them into a
    preallocated cache. recompute: none, selective (the attention core) or full (every layer).
    precision and optimizer: the bytes per parameter (costmodel/precision.py). optimizer_impl and
    device: torch's AdamW variant (single-tensor, the CPU default; foreach, the CUDA default;
    fused) and where it runs, which set the optimizer step's temporaries and step counters.
    """

    impl: str = "hf"
    attention: str = "eager"
    dropout: bool = False
    family: str = "custom"
    kv_cache: str = "dynamic"
    recompute: str = "none"
    precision: str = "mixed"
    optimizer: str = "adamw"
    optimizer_impl: str = "single"
    device: str = "cpu"

    @cached_property
    def facts(self) -> Facts:
        return facts_for(self.impl, self.family)

    def kernel(self, bias_needs_grad: bool = False) -> Kernel:
        """The attention kernel that runs (a position bias that needs gradients can change it)."""
        return choose(self.attention, self.dropout, bias_needs_grad, self.recompute == "selective")

    @property
    def mask_bytes(self) -> Expr:
        return dtype_bytes(self.facts.dropout_mask_dtype)

    def dropout_sites(self) -> tuple[str, ...]:
        """Where dropout runs, if it runs (the facts' dropout_sites)."""
        return self.facts.dropout_sites if self.dropout else ()

    @property
    def param_bytes(self) -> ParamBytes:
        return param_bytes(self.precision, self.optimizer)


@dataclass(frozen=True)
class Tensor:
    """A parameter tensor's shape: `rows` along dim 0 (what FSDP2 and a Shard(0) split, padding
    to ceil(rows / world)), `cols` the product of the other dimensions."""

    rows: Expr
    cols: Expr = sp.Integer(1)

    @property
    def elements(self) -> Expr:
        return self.rows * self.cols


@dataclass(frozen=True)
class Cost:
    """The costs of one block, as sympy expressions (for a whole batch, one run of the block).

    Forward: parameters (tensors, in the order the code registers them), matmul FLOPs, other ops'
    elements, traffic. Backward: matmul FLOPs, and the traffic and other-op work by the stated
    convention (twice the forward's). Memory: bytes saved for backward, KV cache, buffers (non-
    parameter tensors the module holds), inputs (int64 ids the caller passes and holds), results
    (what the caller holds: the loss, inference logits) and the transients that set a peak: what
    the block's backward holds when it starts (less what it has freed by then) and what an
    optimizer step allocates. The optimizer leaf also holds its step counters and moves the
    optimizer step's traffic.
    """

    tensors: tuple[Tensor, ...] = ()  # parameter tensors, in registration order
    flops_matmul: Expr = ZERO
    elements: tuple[tuple[str, Expr], ...] = ()  # (op kind, output elements) of non-matmul ops
    flops_matmul_backward: Expr = ZERO
    saved_bytes: Expr = ZERO
    kv_cache_bytes: Expr = ZERO
    bytes_matmul: Expr = ZERO  # traffic of the matrix products: weights, their inputs and outputs
    bytes_other: Expr = ZERO  # traffic of the other ops (elementwise, reductions, gathers)
    buffer_bytes: Expr = ZERO
    input_bytes: Expr = ZERO
    result_bytes: Expr = ZERO
    backward_transient_bytes: Expr = ZERO
    step_transient_bytes: Expr = ZERO
    step_state_bytes: Expr = ZERO
    bytes_optimizer: Expr = ZERO

    @property
    def params(self) -> Expr:
        return sp.Add(*(t.elements for t in self.tensors))

    @property
    def bytes_moved(self) -> Expr:
        return self.bytes_matmul + self.bytes_other

    @property
    def flops_other(self) -> Expr:
        return sp.Add(*(OTHER_FLOPS_PER_ELEMENT[k] * x for k, x in self.elements))

    # Backward traffic and other-op work (a stated convention, not a measurement): a backward
    # reads and writes about twice what its forward does, and runs about twice its other ops.
    @property
    def bytes_matmul_backward(self) -> Expr:
        return 2 * self.bytes_matmul

    @property
    def flops_other_backward(self) -> Expr:
        return 2 * self.flops_other

    @property
    def bytes_other_backward(self) -> Expr:
        return 2 * self.bytes_other

    def element_counts(self) -> dict[str, Expr]:
        out: dict[str, Expr] = {}
        for kind, count in self.elements:
            out[kind] = out.get(kind, ZERO) + count
        return out

    QUANTITIES = (
        "params", "flops_matmul", "flops_other", "flops_matmul_backward", "saved_bytes",
        "kv_cache_bytes", "bytes_matmul", "bytes_other", "bytes_moved",
    )
    #: Memory and traffic of a training step beyond the forward's (for the peak and the roofline).
    STEP_QUANTITIES = (
        "buffer_bytes", "input_bytes", "result_bytes", "backward_transient_bytes",
        "step_transient_bytes", "step_state_bytes", "bytes_optimizer", "bytes_matmul_backward",
        "flops_other_backward", "bytes_other_backward",
    )

    def get(self, quantity: str) -> Expr:
        return getattr(self, quantity)


def _cost(**kwargs) -> Cost:
    """A Cost with every value made a sympy expression (zero elements dropped; a tensor given as
    an expression is one-dimensional)."""
    values = {k: sp.sympify(v) for k, v in kwargs.items() if k not in ("elements", "tensors")}
    elements = tuple((k, sp.sympify(x)) for k, x in kwargs.get("elements", ()) if x != 0)
    tensors = tuple(t if isinstance(t, Tensor) else Tensor(sp.sympify(t)) for t in kwargs.get("tensors", ()))
    return Cost(elements=elements, tensors=tensors, **values)


class Block:
    """A piece of the model with formulas; subclasses are frozen dataclasses."""

    #: A short description for tables and the formulas command.
    title = "block"

    def cost(self) -> Cost:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError


def _linear(tokens: Expr, d_in: Expr, d_out: Expr) -> tuple[Expr, Expr]:
    """Forward and backward matmul FLOPs of tokens x (d_in -> d_out) with a trained weight."""
    forward = 2 * tokens * d_in * d_out
    return forward, 2 * forward


def _linear_bytes(tokens: Expr, d_in: Expr, d_out: Expr) -> Expr:
    """Traffic of a linear layer: the weight once, the input read, the output written."""
    return S.e * (d_in * d_out + tokens * (d_in + d_out))


def _weight_and_bias(d_in: Expr, d_out: Expr, bias: bool, transposed: bool = False) -> tuple[Tensor, ...]:
    """A linear layer's tensors as torch registers them: the weight (d_out x d_in, or d_in x
    d_out for a transposed one such as GPT-2's Conv1D), then the bias."""
    weight = Tensor(d_in, d_out) if transposed else Tensor(d_out, d_in)
    return (weight, Tensor(d_out)) if bias else (weight,)


# ---------------------------------------------------------------------------------------------
# Embeddings and positions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenEmbedding(Block):
    """Token lookup table V x d; scaled by sqrt(d) in the seeds' Transformer."""

    tokens: Expr
    owns_table: bool = True  # False when the table belongs to another block (shared embeddings)
    scaled: bool = False
    output_kept: bool = False  # post-LN without an embedding norm: layer 0's projections keep it
    title = "token embedding"

    def cost(self) -> Cost:
        scale = self.tokens * S.d if self.scaled else ZERO
        # The lookup keeps the token ids for its backward; scaling by a constant keeps nothing.
        output = S.e * self.tokens * S.d if self.output_kept else 0
        return _cost(
            tensors=[Tensor(S.V, S.d)] if self.owns_table else [],
            elements=[("mul", scale)],
            saved_bytes=INDEX * self.tokens + output,
            bytes_other=elementwise_bytes(self.tokens * S.d),  # gather rows, write them
            input_bytes=INDEX * self.tokens,  # the int64 ids the caller passes
        )


@dataclass(frozen=True)
class LearnedPositions(Block):
    """A learned position table P x d added to the token embeddings."""

    tokens: Expr
    seq: Expr = S.n
    profile: Profile = Profile()
    title = "learned positions"

    def cost(self) -> Cost:
        facts = self.profile.facts
        # The lookup keeps its int64 position ids, one row of n shared by the batch.
        saved = INDEX * self.seq if facts.position_ids_saved else 0
        return _cost(
            tensors=[Tensor(S.P, S.d)],
            elements=[("add", self.tokens * S.d)],
            saved_bytes=saved,
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
            buffer_bytes=INDEX * S.P if "position_ids" in facts.id_buffers else 0,
        )


@dataclass(frozen=True)
class TokenTypes(Block):
    """BERT's segment embeddings N_tt x d, added to the token embeddings."""

    tokens: Expr
    profile: Profile = Profile()
    title = "token-type embeddings"

    def cost(self) -> Cost:
        buffer = INDEX * S.P if "token_type_ids" in self.profile.facts.id_buffers else 0
        return _cost(
            tensors=[Tensor(S.N_tt, S.d)],
            elements=[("add", self.tokens * S.d)],
            saved_bytes=INDEX * self.tokens,  # the int64 token-type ids
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
            input_bytes=INDEX * self.tokens,
            buffer_bytes=buffer,
        )


@dataclass(frozen=True)
class SinusoidalPositions(Block):
    """Fixed sinusoids (a P x d buffer in the model dtype, no parameters) added to the token
    embeddings."""

    tokens: Expr
    title = "sinusoidal positions"

    def cost(self) -> Cost:
        return _cost(
            elements=[("add", self.tokens * S.d)],
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
            buffer_bytes=S.e * S.P * S.d,
        )


@dataclass(frozen=True)
class RotaryTables(Block):
    """RoPE's cos and sin for the n positions, shared by all layers of a stack.

    Computed per forward (facts.rotary_tables == "forward", Hugging Face) in the activation dtype:
    the rotation keeps both for backward, 2 * n * d_h elements, and the module holds inv_freq and
    original_inv_freq (d_h / 2 each, fp32). Held as buffers ("buffer", the reference): cos and sin
    of P x d_h in the model dtype, nothing kept.
    """

    seq: Expr
    profile: Profile = Profile()
    title = "rotary cos/sin tables"

    def cost(self) -> Cost:
        if self.profile.facts.rotary_tables == "forward":
            return _cost(saved_bytes=2 * self.seq * S.d_h * S.e, buffer_bytes=2 * FP32 * (S.d_h / 2))
        return _cost(buffer_bytes=2 * S.P * S.d_h * S.e)


@dataclass(frozen=True)
class AlibiSlopes(Block):
    """ALiBi's slopes, one per head: a buffer in the model dtype, shared by a stack's layers."""

    title = "ALiBi slopes"

    def cost(self) -> Cost:
        return _cost(buffer_bytes=S.e * S.h)


@dataclass(frozen=True)
class RelativePositionBias(Block):
    """T5's bucketed relative position bias: an N_rb x h table owned by a stack's first layer,
    looked up once per forward by an n x n matrix of int64 bucket ids (kept for backward)."""

    seq: Expr = S.n
    title = "relative position bias"

    def cost(self) -> Cost:
        return _cost(tensors=[Tensor(S.N_rb, S.h)], saved_bytes=INDEX * self.seq**2)


@dataclass(frozen=True)
class SharedAttentionMask(Block):
    """A float mask of shape (1, h, q_len, k_len) made once and passed to every layer, which a
    fused kernel keeps (Hugging Face's T5 cross-attention under sdpa: a zero position bias)."""

    q_len: Expr
    k_len: Expr
    title = "shared attention mask"

    def cost(self) -> Cost:
        return _cost(saved_bytes=S.e * S.h * self.q_len * self.k_len)


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Norm(Block):
    """LayerNorm (weight and bias) or RMSNorm (weight only) over d."""

    tokens: Expr
    kind: str  # "layernorm" | "rmsnorm"
    profile: Profile = Profile()
    title = "norm"

    def cost(self) -> Cost:
        tensors = [S.d, S.d] if self.kind == "layernorm" else [S.d]
        return _cost(
            tensors=tensors,
            elements=[(self.kind, self.tokens * S.d)],
            saved_bytes=self.saved(),
            bytes_other=elementwise_bytes(self.tokens * S.d) + S.e * sp.Add(*tensors),
        )

    def saved(self) -> Expr:
        """Kept for backward, including the output (the next linear keeps it as its input).

        RMSNorm: the input, the rsqrt per token, the normalised tensor (multiplied by the weight),
        the output; computed in fp32 (facts.norm_dtype) it keeps the input and rsqrt in fp32, and
        an implementation that multiplies the un-cast input (facts.norm_keeps_uncast_input, T5)
        keeps that too. LayerNorm (aten.native_layer_norm): the input, mean and rstd per token (in
        the activation dtype on the CPU), the output.
        """
        rows, values = self.tokens, self.tokens * S.d
        facts = self.profile.facts
        if not facts.norm_keeps_stats:
            return 2 * S.e * values  # its input and its output (the next linear's input)
        if self.kind == "layernorm":
            return 2 * S.e * values + 2 * S.e * rows
        if facts.norm_dtype == "activation":
            return 3 * S.e * values + S.e * rows
        width = dtype_bytes(facts.norm_dtype)
        saved = width * values + width * rows + 2 * S.e * values
        if facts.norm_keeps_uncast_input:
            saved += unless_fp32(S.e * values)
        return saved


@dataclass(frozen=True)
class QKVProjection(Block):
    """Queries from q_tokens, keys and values from kv_tokens; h query heads, h_kv KV heads of d_h.

    In cross-attention kv_tokens are the encoder's tokens. The KV cache (when cached) holds the
    keys and values of every KV head: 2 * b * h_kv * d_h per cached token per layer. A fused
    projection (facts.fused_qkv, GPT-2's c_attn) is one weight and one bias.
    """

    q_tokens: Expr
    kv_tokens: Expr
    bias: bool
    cached_tokens: Expr = ZERO  # tokens held in this layer's KV cache after prefill + decode
    copies_cache: bool = False  # a decode step's append copies the cache (torch.cat)
    fused: bool = False
    transposed: bool = False  # weights stored (d_in, d_out) (facts.linear_weights_transposed)
    title = "Q, K, V projections"

    def cost(self) -> Cost:
        q_fwd, q_bwd = _linear(self.q_tokens, S.d, S.h * S.d_h)
        kv_fwd, kv_bwd = _linear(self.kv_tokens, S.d, 2 * S.h_kv * S.d_h)
        if self.fused:
            tensors = _weight_and_bias(S.d, (S.h + 2 * S.h_kv) * S.d_h, self.bias, self.transposed)
        else:
            tensors = (_weight_and_bias(S.d, S.h * S.d_h, self.bias, self.transposed)
                       + 2 * _weight_and_bias(S.d, S.h_kv * S.d_h, self.bias, self.transposed))
        kv_cache = 2 * S.b * S.h_kv * S.d_h * self.cached_tokens * S.e
        moved = _linear_bytes(self.q_tokens, S.d, S.h * S.d_h)
        moved += _linear_bytes(self.kv_tokens, S.d, 2 * S.h_kv * S.d_h)
        return _cost(
            tensors=tensors,
            flops_matmul=q_fwd + kv_fwd,
            flops_matmul_backward=q_bwd + kv_bwd,
            kv_cache_bytes=kv_cache,
            bytes_matmul=moved,
            # torch.cat reads the cache and the new token's keys and values, writes them all.
            bytes_other=2 * kv_cache if self.copies_cache else ZERO,
        )


@dataclass(frozen=True)
class RotaryEmbedding(Block):
    """RoPE: rotate every query and key element by its position (cos/sin from RotaryTables)."""

    q_tokens: Expr
    kv_tokens: Expr
    title = "rotary position embedding"

    def cost(self) -> Cost:
        rotated = self.q_tokens * S.h * S.d_h + self.kv_tokens * S.h_kv * S.d_h
        return _cost(elements=[("rope", rotated)], bytes_other=elementwise_bytes(rotated))


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

    @property
    def kernel(self) -> Kernel:
        return self.profile.kernel(self.bias_needs_grad)

    @property
    def pairs(self) -> Expr:
        return S.b * S.h * self.q_len * self.k_len

    @property
    def kv_heads_kept(self) -> Expr:
        """Heads of K and V an eager product keeps: h, except that repeating K/V (expand then
        reshape) stays a view for multi-query attention (h_kv = 1) at b = 1 where the code does it
        that way (facts.repeat_kv_view_for_mqa)."""
        if self.profile.facts.repeat_kv_view_for_mqa:
            return sp.Piecewise((S.h_kv, sp.And(sp.Eq(S.b, 1), sp.Eq(S.h_kv, 1))), (S.h, True))
        return S.h

    @property
    def fused_qkv_extra(self) -> Expr:
        """A fused QKV projection's query is a view of its output (3d wide), which a kept query
        keeps whole (facts.fused_qkv; when the kernel keeps a view of it)."""
        if not self.profile.facts.fused_qkv or self.cross:
            return ZERO
        return self.kernel.query_view_saved(2 * S.e * S.b * self.q_len * S.d)


@dataclass(frozen=True)
class AttentionScores(AttentionCore):
    """Q K^T times the scale over every (query, key) pair, plus mask and position bias adds."""

    causal_or_padding_mask: bool = True
    position_bias: bool = False  # ALiBi or T5 relative bias added to the scores
    scaled: bool = True  # False: no multiply at all (a scale of 1, T5's)
    title = "attention scores"

    def cost(self) -> Cost:
        pairs, kernel = self.pairs, self.kernel
        forward = 2 * pairs * S.d_h
        elements = [("mul", pairs if self.scaled else 0)]
        elements.append(("add", pairs * (int(self.causal_or_padding_mask) + int(self.position_bias))))
        # Reads the queries and the keys (h_kv heads: the cache in a decode step); a dense kernel
        # writes the scores, and its scaling, mask and position bias each read and write them (the
        # broadcast mask or bias itself is small); a fused kernel does them in registers.
        moved = S.e * S.b * S.d_h * (S.h * self.q_len + S.h_kv * self.k_len)
        pointwise = ZERO
        if kernel.dense:
            moved += S.e * pairs
            pointwise = sp.Add(*(elementwise_bytes(x) for _, x in elements))
        return _cost(
            flops_matmul=forward,
            flops_matmul_backward=kernel.scores_backward(forward),
            elements=elements,
            saved_bytes=kernel.scores_saved(self) + self.fused_qkv_extra,
            bytes_matmul=moved,
            bytes_other=pointwise,
        )


@dataclass(frozen=True)
class Softmax(AttentionCore):
    """Softmax over keys for every (query, key) pair (inside the kernel when fused)."""

    title = "softmax"

    def cost(self) -> Cost:
        kernel = self.kernel
        moved = elementwise_bytes(self.pairs) if kernel.dense else 0
        return _cost(elements=[("softmax", self.pairs)], saved_bytes=kernel.softmax_saved(self),
                     bytes_other=moved)


@dataclass(frozen=True)
class WeightedSum(AttentionCore):
    """Probabilities times values: (n_q x n_k) @ (n_k x d_h) per head."""

    title = "weighted sum of values"

    def cost(self) -> Cost:
        pairs, kernel = self.pairs, self.kernel
        forward = 2 * pairs * S.d_h
        # Reads the values (h_kv heads) and, dense, the probabilities; writes the heads' output.
        moved = S.e * S.b * S.d_h * (S.h_kv * self.k_len + S.h * self.q_len)
        if kernel.dense:
            moved += S.e * pairs
        return _cost(
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            saved_bytes=kernel.weighted_sum_saved(self),
            bytes_matmul=moved,
        )


@dataclass(frozen=True)
class AttentionOutput(Block):
    """The output projection h*d_h -> d."""

    tokens: Expr
    bias: bool
    input_kept_by_kernel: bool = False  # a fused kernel's saved output is this block's input
    transposed: bool = False  # the weight stored (d_in, d_out) (facts.linear_weights_transposed)
    title = "attention output projection"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.h * S.d_h, S.d)
        # It keeps its input: the heads transposed back to (b, len, h*d_h), a contiguous copy.
        saved = 0 if self.input_kept_by_kernel else S.e * self.tokens * S.h * S.d_h
        return _cost(
            tensors=_weight_and_bias(S.h * S.d_h, S.d, self.bias, self.transposed),
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=saved,
            bytes_matmul=_linear_bytes(self.tokens, S.h * S.d_h, S.d),
        )


@dataclass(frozen=True)
class Residual(Block):
    """x + sublayer(x)."""

    tokens: Expr
    title = "residual add"

    def cost(self) -> Cost:
        values = self.tokens * S.d
        return _cost(elements=[("add", values)], bytes_other=elementwise_bytes(values, reads=2))


# ---------------------------------------------------------------------------------------------
# Feed-forward, heads
# ---------------------------------------------------------------------------------------------

#: ModelConfig.activation -> the elementwise op it runs over d_ff (gated: on the gate projection).
ACTIVATION_OPS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "silu": "silu",
                  "swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}


@dataclass(frozen=True)
class FeedForward(Block):
    """d -> d_ff -> d with an activation; gated variants (SwiGLU, GeGLU) have a third matrix."""

    tokens: Expr
    activation: str  # a key of ACTIVATION_OPS
    bias: bool
    profile: Profile = Profile()
    inner_dropout: bool = True  # dropout on the hidden layer, where the profile has it
    title = "feed-forward network"

    @property
    def gated(self) -> bool:
        return self.activation in GATED_ACTIVATIONS

    def cost(self) -> Cost:
        n_in = 2 if self.gated else 1  # matrices d -> d_ff
        transposed = self.profile.facts.linear_weights_transposed
        inputs = n_in * _weight_and_bias(S.d, S.d_ff, self.bias, transposed)  # (gate,) up
        forward_in, backward_in = _linear(self.tokens, S.d, n_in * S.d_ff)
        forward_out, backward_out = _linear(self.tokens, S.d_ff, S.d)
        act = ACTIVATION_OPS[self.activation]
        inner = self.tokens * S.d_ff
        elements = [(act, inner), ("mul", inner if self.gated else 0)]
        return _cost(
            tensors=inputs + _weight_and_bias(S.d_ff, S.d, self.bias, transposed),
            flops_matmul=forward_in + forward_out,
            flops_matmul_backward=backward_in + backward_out,
            elements=elements,
            saved_bytes=self.saved(act),
            bytes_matmul=_linear_bytes(self.tokens, S.d, n_in * S.d_ff) + _linear_bytes(self.tokens, S.d_ff, S.d),
            # The activation over d_ff (and, gated, the product with the second projection).
            bytes_other=elementwise_bytes(inner) + (elementwise_bytes(inner, reads=2) if self.gated else 0),
        )

    def saved(self, act: str) -> Expr:
        """Hidden tensors (b, len, d_ff) kept for backward; the input is counted by the norm.

        The activation keeps what its backward needs: relu its output, gelu and silu their input,
        a gelu with the tanh approximation written in Python (facts.gelu_tanh_python: GPT-2, BERT
        and T5 in Hugging Face) x, tanh, 0.5*x and 1+tanh. A gate's product keeps both factors.
        The output matrix keeps its input, which for an ungated relu is relu's own output (one
        tensor). Dropout inside the FFN keeps its mask, and the output matrix then keeps
        dropout's output instead.
        """
        python_gelu = act == "gelu_tanh" and self.profile.facts.gelu_tanh_python
        internal = 4 if python_gelu else 1
        dropout = self.inner_dropout and "ffn" in self.profile.dropout_sites()
        kept = internal + (2 if self.gated else 0) + 1
        if act == "relu" and not self.gated and not dropout:
            kept -= 1  # relu's output is the output matrix's input
        inner = self.tokens * S.d_ff
        return kept * S.e * inner + (self.profile.mask_bytes * inner if dropout else 0)


@dataclass(frozen=True)
class LMHead(Block):
    """Logits over the vocabulary for every position: d -> V (weight tied or its own)."""

    tokens: Expr
    owns_weight: bool
    bias: bool
    scaled_input: bool = False  # the decoder output times d**-0.5 first (T5 with a tied head)
    returns_logits: bool = False  # inference: the caller holds the logits
    title = "output projection to the vocabulary"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.d, S.V)
        tensors = ([Tensor(S.V, S.d)] if self.owns_weight else []) + ([S.V] if self.bias else [])
        elements = [("mul", self.tokens * S.d if self.scaled_input else 0)]
        return _cost(
            tensors=tensors,
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=elements,
            bytes_matmul=_linear_bytes(self.tokens, S.d, S.V),  # the weight is read, tied or not
            result_bytes=S.e * self.tokens * S.V if self.returns_logits else 0,
        )


@dataclass(frozen=True)
class Pooler(Block):
    """BERT's pooler: dense d -> d with bias and tanh on the first ([CLS]) token of each sequence."""

    title = "pooler (CLS head)"

    def cost(self) -> Cost:
        forward, backward = _linear(S.b, S.d, S.d)
        # The dense layer keeps hidden[:, 0], a view of the whole last hidden state: the last
        # norm's output, counted there. tanh keeps its output.
        saved = S.e * S.b * S.d
        return _cost(
            tensors=_weight_and_bias(S.d, S.d, True),
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("tanh", S.b * S.d)],
            saved_bytes=saved,
            bytes_matmul=_linear_bytes(S.b, S.d, S.d),
            bytes_other=elementwise_bytes(S.b * S.d),
        )


@dataclass(frozen=True)
class CrossEntropy(Block):
    """The training loss over the logits: log-softmax and the negative log-likelihood.

    Kept for backward: the log-softmax output and a scalar total weight in the loss dtype
    (facts.loss_dtype), the int64 targets (shifted labels: one more id at b = 1). The caller passes
    and holds the labels and holds the scalar loss. When its backward starts it holds the gradient
    of the log-softmax output and of the logits at once (2 * tokens * V elements in the loss
    dtype), and has freed the two int64 target tensors (measured with MemTracker: FINDINGS 7).
    """

    tokens: Expr
    profile: Profile = Profile()
    title = "cross-entropy loss"

    def cost(self) -> Cost:
        facts = self.profile.facts
        width = dtype_bytes(facts.loss_dtype)
        saved = width * (self.tokens * S.V + 1) + INDEX * self.tokens
        if facts.shifted_labels:
            saved += if_batch_of_one(INDEX)
        return _cost(
            elements=[("log_softmax", self.tokens * S.V)],
            saved_bytes=saved,
            input_bytes=INDEX * self.tokens,
            result_bytes=width,
            backward_transient_bytes=2 * self.tokens * S.V * width - 2 * INDEX * self.tokens,
        )


@dataclass(frozen=True)
class SumLoss(Block):
    """A model without an LM head trained on the sum of its outputs (how validate/ trains
    BertModel and bare encoders): a scalar in the activation dtype, nothing kept."""

    title = "sum of the outputs (loss)"

    def cost(self) -> Cost:
        return _cost(result_bytes=S.e)


@dataclass(frozen=True)
class Dropout(Block):
    """Training-time dropout over tokens x width: keeps its mask for backward (its output takes
    the place of its input wherever the next op keeps one, so it adds nothing else)."""

    tokens: Expr
    width: Expr
    profile: Profile = Profile()
    title = "dropout"

    def cost(self) -> Cost:
        elements = self.tokens * self.width
        return _cost(elements=[("mul", elements)], saved_bytes=self.profile.mask_bytes * elements)


@dataclass(frozen=True)
class LayerCheckpoint(Block):
    """Full recomputation keeps each layer's input (tokens x d) and nothing else of the layer; its
    backward reruns the layer's forward (Korthikanti et al. 2022, section 4)."""

    tokens: Expr
    title = "layer input kept for recomputation"

    def cost(self) -> Cost:
        return _cost(saved_bytes=S.e * self.tokens * S.d)


# ---------------------------------------------------------------------------------------------
# The optimizer step
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorRun:
    """Parameter tensors in the order an optimizer visits them, repeated `times` (a stack's
    layers: one layer's tensors, L times)."""

    tensors: tuple[Expr, ...]  # elements of each tensor
    times: Expr = sp.Integer(1)


@dataclass(frozen=True)
class OptimizerStep(Block):
    """One optimizer step over every parameter (the runs in registration order).

    State per parameter is the precision policy's (costmodel/precision.py), counted by each
    block; this block holds what the step adds. torch's AdamW keeps one fp32 `step` per tensor on
    the device on the CPU and when fused (single-tensor and foreach keep it on the host under
    CUDA). Its temporaries: single-tensor (the CPU default) computes
    denom = (exp_avg_sq.sqrt() / c).add_(eps), holding the sqrt and quotient of tensor i (2 s_i)
    while tensor i-1's denom (s_{i-1}) is still bound: max_i (2 s_i + s_{i-1}) moment elements;
    foreach (the CUDA default) one copy of every parameter; fused none. Its traffic, as a fused
    step moves it: every copy read once, the weights and states written once.
    """

    runs: tuple[TensorRun, ...]
    profile: Profile = Profile()
    title = "optimizer step"

    @property
    def params(self) -> Expr:
        return sp.Add(*(run.times * sp.Add(*run.tensors) for run in self.runs))

    @property
    def tensor_count(self) -> Expr:
        return sp.Add(*(run.times * len(run.tensors) for run in self.runs))

    def largest_pair(self) -> Expr:
        """max_i (2 s_i + s_{i-1}) over the tensors in order (s_{-1} = 0)."""
        candidates, previous = [], ZERO
        for run in (r for r in self.runs if r.tensors):
            first, last = run.tensors[0], run.tensors[-1]
            candidates.append(2 * first + previous)
            candidates += [2 * s + p for p, s in zip(run.tensors, run.tensors[1:])]
            # The next copy of the run starts after this one's last tensor.
            candidates.append(sp.Piecewise((2 * first + last, run.times > 1), (ZERO, True)))
            previous = last
        return sp.Max(*candidates, evaluate=False) if candidates else ZERO  # compared when evaluated

    def cost(self) -> Cost:
        p = self.profile
        per_param = p.param_bytes
        adam = p.optimizer == "adamw"
        temporaries = {"single": self.largest_pair(), "foreach": self.params, "fused": ZERO}
        counters_on_device = p.device == "cpu" or p.optimizer_impl == "fused"
        return _cost(
            step_state_bytes=FP32 * self.tensor_count if per_param.step_counter and counters_on_device else 0,
            step_transient_bytes=per_param.moment * temporaries[p.optimizer_impl] if adam else 0,
            bytes_optimizer=per_param.step_traffic * self.params,
        )
