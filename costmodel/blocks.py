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
  FLOPs (a stated convention, not a measurement): softmax 5 (max, subtract, exp, sum, divide),
  layernorm 5 (mean, subtract, square-mean, divide, affine), rmsnorm 4 (square, mean, rsqrt-scale,
  weight), gelu 8, gelu_tanh 8, silu 4, relu 1, add 1, mul 1, rope 3 (two products, one sum per
  rotated element).
- bytes saved for backward follow an implementation profile (Profile below): which tensors the code
  that runs keeps for the backward pass, in which dtype. e is the activation dtype's bytes.
- bytes moved (for the roofline) count one forward's memory traffic if every op reads its inputs
  and writes its outputs once, and every weight is read once, all in the activation dtype; fused
  attention (sdpa, flash) never writes the n_q x n_k matrix. A model of traffic, not a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from . import symbols as S

Expr = sp.Expr
ZERO = sp.Integer(0)

OTHER_FLOPS_PER_ELEMENT = {
    "add": 1,
    "mul": 1,
    "softmax": 5,
    "layernorm": 5,
    "rmsnorm": 4,
    "relu": 1,
    "gelu": 8,
    "gelu_tanh": 8,
    "silu": 4,
    "tanh": 1,
    "rope": 3,
}

FP32 = 4  # bytes of an fp32 element: tensors some implementations upcast regardless of dtype
MASK = 1  # bytes of a dropout mask element (torch keeps a bool mask)
INDEX = 8  # bytes of an int64 token id or label


def unless_fp32(x: Expr) -> Expr:
    """x when activations are narrower than fp32, else 0: a low-precision copy of an fp32 tensor
    exists only when the activation dtype is not fp32 itself."""
    return sp.Piecewise((ZERO, sp.Eq(S.e, FP32)), (x, True))


@dataclass(frozen=True)
class Profile:
    """Which code runs, as far as bytes saved for backward are concerned.

    impl: "hf" (Hugging Face transformers' eager/sdpa code) or "reference" (validate/reference.py).
    attention: "eager" keeps the n_q x n_k probabilities; "sdpa" and "flash" keep only the output
    and a log-sum-exp per row. dropout: whether dropout runs (a training forward with p > 0).
    """

    impl: str = "hf"
    attention: str = "eager"
    dropout: bool = False

    @property
    def dense_scores(self) -> bool:
        return self.attention == "eager"


@dataclass(frozen=True)
class Cost:
    """The costs of one block, as sympy expressions (for a whole batch, one forward)."""

    params: Expr = ZERO
    flops_matmul: Expr = ZERO
    elements: tuple[tuple[str, Expr], ...] = ()  # (op kind, output elements) of non-matmul ops
    flops_matmul_backward: Expr = ZERO
    saved_bytes: Expr = ZERO
    kv_cache_bytes: Expr = ZERO
    bytes_moved: Expr = ZERO

    @property
    def flops_other(self) -> Expr:
        return sp.Add(*(OTHER_FLOPS_PER_ELEMENT[k] * x for k, x in self.elements))

    def element_counts(self) -> dict[str, Expr]:
        out: dict[str, Expr] = {}
        for kind, count in self.elements:
            out[kind] = out.get(kind, ZERO) + count
        return out

    QUANTITIES = (
        "params", "flops_matmul", "flops_other", "flops_matmul_backward", "saved_bytes",
        "kv_cache_bytes", "bytes_moved",
    )

    def get(self, quantity: str) -> Expr:
        return getattr(self, quantity)


def _cost(**kwargs) -> Cost:
    """A Cost with every value made a sympy expression."""
    values = {k: sp.sympify(v) for k, v in kwargs.items() if k != "elements"}
    elements = tuple((k, sp.sympify(x)) for k, x in kwargs.get("elements", ()) if x != 0)
    return Cost(elements=elements, **values)


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


def _elementwise_bytes(elements: Expr, reads: int = 1) -> Expr:
    """Traffic of an elementwise op: `reads` inputs read, one output written."""
    return S.e * (reads + 1) * elements


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
            params=S.V * S.d if self.owns_table else 0,
            elements=[("mul", scale)],
            saved_bytes=INDEX * self.tokens + output,
            bytes_moved=_elementwise_bytes(self.tokens * S.d),  # gather rows, write them
        )


@dataclass(frozen=True)
class LearnedPositions(Block):
    """A learned position table P x d added to the token embeddings."""

    tokens: Expr
    title = "learned positions"

    def cost(self) -> Cost:
        return _cost(
            params=S.P * S.d,
            elements=[("add", self.tokens * S.d)],
            bytes_moved=_elementwise_bytes(self.tokens * S.d, reads=2),
        )


@dataclass(frozen=True)
class TokenTypes(Block):
    """BERT's segment embeddings N_tt x d, added to the token embeddings."""

    tokens: Expr
    title = "token-type embeddings"

    def cost(self) -> Cost:
        return _cost(
            params=S.N_tt * S.d,
            elements=[("add", self.tokens * S.d)],
            bytes_moved=_elementwise_bytes(self.tokens * S.d, reads=2),
        )


@dataclass(frozen=True)
class SinusoidalPositions(Block):
    """Fixed sinusoids (a buffer, no parameters) added to the token embeddings."""

    tokens: Expr
    title = "sinusoidal positions"

    def cost(self) -> Cost:
        return _cost(
            elements=[("add", self.tokens * S.d)],
            bytes_moved=_elementwise_bytes(self.tokens * S.d, reads=2),
        )


@dataclass(frozen=True)
class RotaryTables(Block):
    """RoPE's cos and sin for the n positions, computed once per forward and shared by all layers.

    Hugging Face computes them per forward in the activation dtype, and the rotation keeps both
    for backward: 2 * n * d_h elements. A model that holds them as buffers keeps nothing.
    """

    seq: Expr
    profile: Profile = Profile()
    title = "rotary cos/sin tables"

    def cost(self) -> Cost:
        computed = self.profile.impl == "hf"
        return _cost(saved_bytes=2 * self.seq * S.d_h * S.e if computed else 0)


@dataclass(frozen=True)
class RelativePositionBias(Block):
    """T5's bucketed relative position bias: an N_rb x h table owned by a stack's first layer."""

    title = "relative position bias"

    def cost(self) -> Cost:
        return _cost(params=S.N_rb * S.h)


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Norm(Block):
    """LayerNorm (weight and bias) or RMSNorm (weight only) over d."""

    tokens: Expr
    kind: str  # "layernorm" | "rmsnorm"
    title = "norm"

    def cost(self) -> Cost:
        params = 2 * S.d if self.kind == "layernorm" else S.d
        return _cost(
            params=params,
            elements=[(self.kind, self.tokens * S.d)],
            saved_bytes=self.saved(),
            bytes_moved=_elementwise_bytes(self.tokens * S.d) + S.e * params,
        )

    def saved(self) -> Expr:
        """Kept for backward, including the output (the next linear keeps it as its input).

        RMSNorm (Hugging Face's and the reference's): the input upcast to fp32, the fp32 rsqrt per
        token, the normalised tensor in the activation dtype (multiplied by the weight), the output.
        LayerNorm (aten.native_layer_norm): the input, fp32 mean and rstd per token, the output.
        """
        rows, values = self.tokens, self.tokens * S.d
        if self.kind == "rmsnorm":
            return FP32 * values + FP32 * rows + 2 * S.e * values
        return 2 * S.e * values + 2 * FP32 * rows


@dataclass(frozen=True)
class QKVProjection(Block):
    """Queries from q_tokens, keys and values from kv_tokens; h query heads, h_kv KV heads of d_h.

    In cross-attention kv_tokens are the encoder's tokens. The KV cache (when cached) holds the
    keys and values of every KV head: 2 * b * h_kv * d_h per cached token per layer.
    """

    q_tokens: Expr
    kv_tokens: Expr
    bias: bool
    cached_tokens: Expr = ZERO  # tokens held in this layer's KV cache after prefill + decode
    title = "Q, K, V projections"

    def cost(self) -> Cost:
        q_fwd, q_bwd = _linear(self.q_tokens, S.d, S.h * S.d_h)
        kv_fwd, kv_bwd = _linear(self.kv_tokens, S.d, 2 * S.h_kv * S.d_h)
        params = S.d * (S.h + 2 * S.h_kv) * S.d_h
        if self.bias:
            params += (S.h + 2 * S.h_kv) * S.d_h
        kv_cache = 2 * S.b * S.h_kv * S.d_h * self.cached_tokens * S.e
        moved = _linear_bytes(self.q_tokens, S.d, S.h * S.d_h)
        moved += _linear_bytes(self.kv_tokens, S.d, 2 * S.h_kv * S.d_h)
        return _cost(
            params=params,
            flops_matmul=q_fwd + kv_fwd,
            flops_matmul_backward=q_bwd + kv_bwd,
            kv_cache_bytes=kv_cache,
            bytes_moved=moved,
        )


@dataclass(frozen=True)
class RotaryEmbedding(Block):
    """RoPE: rotate every query and key element by its position (cos/sin tables are buffers)."""

    q_tokens: Expr
    kv_tokens: Expr
    title = "rotary position embedding"

    def cost(self) -> Cost:
        rotated = self.q_tokens * S.h * S.d_h + self.kv_tokens * S.h_kv * S.d_h
        return _cost(elements=[("rope", rotated)], bytes_moved=_elementwise_bytes(rotated))


@dataclass(frozen=True)
class AttentionScores(Block):
    """Q K^T / sqrt(d_h) over every (query, key) pair, plus mask and position bias adds."""

    q_len: Expr
    k_len: Expr
    profile: Profile = Profile()
    causal_or_padding_mask: bool = True
    position_bias: bool = False  # ALiBi or T5 relative bias added to the scores
    scaled: bool = True  # T5 folds the scale into its initialisation and does not scale
    title = "attention scores"

    def cost(self) -> Cost:
        pairs = S.b * S.h * self.q_len * self.k_len
        forward = 2 * pairs * S.d_h
        elements = [("mul", pairs if self.scaled else 0)]
        elements.append(("add", pairs * (int(self.causal_or_padding_mask) + int(self.position_bias))))
        # Q K^T keeps both operands: the queries and the keys of all h heads (GQA keys are
        # repeated to h heads before the product), each copied into a (b*h, len, d_h) batch.
        saved = S.e * S.b * S.h * S.d_h * (self.q_len + self.k_len)
        # Reads the queries and the keys (h_kv heads: the cache in a decode step); eager attention
        # writes the scores.
        moved = S.e * S.b * S.d_h * (S.h * self.q_len + S.h_kv * self.k_len)
        if self.profile.dense_scores:
            moved += S.e * pairs
        return _cost(
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            elements=elements,
            saved_bytes=saved,
            bytes_moved=moved,
        )


@dataclass(frozen=True)
class Softmax(Block):
    """Softmax over keys for every (query, key) pair; eager attention only (fused otherwise)."""

    q_len: Expr
    k_len: Expr
    profile: Profile = Profile()
    title = "softmax"

    def cost(self) -> Cost:
        pairs = S.b * S.h * self.q_len * self.k_len
        # Eager attention keeps the probabilities: Hugging Face computes the softmax in fp32;
        # dropout on them keeps a 1-byte mask. Fused attention (sdpa, flash) keeps one fp32
        # log-sum-exp per query row instead.
        if self.profile.dense_scores:
            saved = FP32 * pairs + (MASK * pairs if self.profile.dropout else 0)
        else:
            saved = FP32 * S.b * S.h * self.q_len
        moved = _elementwise_bytes(pairs) if self.profile.dense_scores else 0
        return _cost(elements=[("softmax", pairs)], saved_bytes=saved, bytes_moved=moved)


@dataclass(frozen=True)
class WeightedSum(Block):
    """Probabilities times values: (n_q x n_k) @ (n_k x d_h) per head."""

    q_len: Expr
    k_len: Expr
    profile: Profile = Profile()
    title = "weighted sum of values"

    def cost(self) -> Cost:
        pairs = S.b * S.h * self.q_len * self.k_len
        forward = 2 * pairs * S.d_h
        values = S.e * S.b * S.h * self.k_len * S.d_h
        if self.profile.dense_scores:
            # The product keeps the values and the probabilities in the activation dtype: a copy
            # of the fp32 softmax output (none in fp32), or dropout's output.
            probs = S.e * pairs if self.profile.dropout else unless_fp32(S.e * pairs)
            saved = values + probs
        else:
            # Fused attention keeps its output (b, h, len, d_h) for its backward.
            saved = values + S.e * S.b * S.h * self.q_len * S.d_h
        # Reads the values (h_kv heads) and, eager, the probabilities; writes the heads' output.
        moved = S.e * S.b * S.d_h * (S.h_kv * self.k_len + S.h * self.q_len)
        if self.profile.dense_scores:
            moved += S.e * pairs
        return _cost(
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            saved_bytes=saved,
            bytes_moved=moved,
        )


@dataclass(frozen=True)
class AttentionOutput(Block):
    """The output projection h*d_h -> d."""

    tokens: Expr
    bias: bool
    title = "attention output projection"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.h * S.d_h, S.d)
        params = S.h * S.d_h * S.d + (S.d if self.bias else 0)
        # It keeps its input: the heads transposed back to (b, len, h*d_h), a contiguous copy.
        saved = S.e * self.tokens * S.h * S.d_h
        return _cost(
            params=params,
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=saved,
            bytes_moved=_linear_bytes(self.tokens, S.h * S.d_h, S.d),
        )


@dataclass(frozen=True)
class Residual(Block):
    """x + sublayer(x)."""

    tokens: Expr
    title = "residual add"

    def cost(self) -> Cost:
        values = self.tokens * S.d
        return _cost(elements=[("add", values)], bytes_moved=_elementwise_bytes(values, reads=2))


# ---------------------------------------------------------------------------------------------
# Feed-forward, heads
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedForward(Block):
    """d -> d_ff -> d with an activation; gated variants (SwiGLU, GeGLU) have a third matrix."""

    tokens: Expr
    activation: str  # relu | gelu | gelu_tanh | silu | swiglu | geglu
    bias: bool
    profile: Profile = Profile()
    inner_dropout: bool = False  # T5 drops out the hidden activations before the output matrix
    title = "feed-forward network"

    @property
    def gated(self) -> bool:
        return self.activation in ("swiglu", "geglu")

    def cost(self) -> Cost:
        n_in = 2 if self.gated else 1  # matrices d -> d_ff
        params = (n_in + 1) * S.d * S.d_ff
        if self.bias:
            params += n_in * S.d_ff + S.d
        forward_in, backward_in = _linear(self.tokens, S.d, n_in * S.d_ff)
        forward_out, backward_out = _linear(self.tokens, S.d_ff, S.d)
        act = {"swiglu": "silu", "geglu": "gelu"}.get(self.activation, self.activation)
        inner = self.tokens * S.d_ff
        elements = [(act, inner), ("mul", inner if self.gated else 0)]
        return _cost(
            params=params,
            flops_matmul=forward_in + forward_out,
            flops_matmul_backward=backward_in + backward_out,
            elements=elements,
            saved_bytes=self.saved(act),
            bytes_moved=self.moved(n_in),
        )

    def moved(self, n_in: int) -> Expr:
        """The matrices' traffic plus the activation (and, gated, the product) over d_ff."""
        inner = self.tokens * S.d_ff
        matrices = _linear_bytes(self.tokens, S.d, n_in * S.d_ff) + _linear_bytes(self.tokens, S.d_ff, S.d)
        pointwise = _elementwise_bytes(inner) + (_elementwise_bytes(inner, reads=2) if self.gated else 0)
        return matrices + pointwise

    def saved(self, act: str) -> Expr:
        """Hidden tensors (b, len, d_ff) kept for backward; the input is counted by the norm.

        relu keeps its output, which the output matrix keeps too (one tensor); gelu and silu keep
        their input, the output matrix their output (two). Hugging Face's gelu_new is written in
        Python (0.5*x*(1+tanh(...))) and keeps x, tanh, 0.5*x and 1+tanh besides its output (five).
        A gate adds the up-projection and the product. Dropout adds a mask and its output.
        """
        kept = {"relu": 1, "gelu": 2, "silu": 2, "gelu_tanh": 2}[act]
        if act == "gelu_tanh" and self.profile.impl == "hf":
            kept = 5
        if self.gated:
            kept += 2
        inner = self.tokens * S.d_ff
        dropout = (MASK + S.e) * inner if self.inner_dropout and self.profile.dropout else 0
        return kept * S.e * inner + dropout


@dataclass(frozen=True)
class LMHead(Block):
    """Logits over the vocabulary for every position: d -> V (weight tied or its own)."""

    tokens: Expr
    owns_weight: bool
    bias: bool
    scaled_input: bool = False  # T5 multiplies the decoder output by d**-0.5 when tied
    title = "output projection to the vocabulary"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.d, S.V)
        params = (S.V * S.d if self.owns_weight else 0) + (S.V if self.bias else 0)
        elements = [("mul", self.tokens * S.d if self.scaled_input else 0)]
        return _cost(
            params=params,
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=elements,
            bytes_moved=_linear_bytes(self.tokens, S.d, S.V),  # the weight is read, tied or not
        )


@dataclass(frozen=True)
class Pooler(Block):
    """BERT's pooler: dense d -> d with bias and tanh on the first ([CLS]) token of each sequence."""

    title = "pooler (CLS head)"

    def cost(self) -> Cost:
        forward, backward = _linear(S.b, S.d, S.d)
        return _cost(
            params=S.d * S.d + S.d,
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("tanh", S.b * S.d)],
            bytes_moved=_linear_bytes(S.b, S.d, S.d),
        )


@dataclass(frozen=True)
class CrossEntropy(Block):
    """The training loss over the logits: log-softmax and the negative log-likelihood."""

    tokens: Expr
    title = "cross-entropy loss"

    def cost(self) -> Cost:
        # Log-softmax in fp32 keeps its output; the NLL keeps the int64 targets and a scalar.
        saved = FP32 * self.tokens * S.V + INDEX * self.tokens + FP32
        return _cost(elements=[("softmax", self.tokens * S.V)], saved_bytes=saved)


@dataclass(frozen=True)
class Dropout(Block):
    """Training-time dropout over tokens x width: keeps a 1-byte mask for backward.

    The output is kept too when the next op keeps its input but would not otherwise have kept
    the same tensor (a matrix after the FFN's inner dropout); before a residual add it is not.
    """

    tokens: Expr
    width: Expr
    output_kept: bool = False
    title = "dropout"

    def cost(self) -> Cost:
        elements = self.tokens * self.width
        saved = MASK * elements + (S.e * elements if self.output_kept else 0)
        return _cost(elements=[("mul", elements)], saved_bytes=saved)
