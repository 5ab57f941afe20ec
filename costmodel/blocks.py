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

import sympy as sp

from . import symbols as S

Expr = sp.Expr
ZERO = sp.Integer(0)

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

FP32 = 4  # bytes of an fp32 element: tensors some implementations upcast regardless of dtype
INDEX = 8  # bytes of an int64 token id or label
LLAMA_LIKE = ("llama", "mistral", "qwen2")


def unless_fp32(x: Expr) -> Expr:
    """x when activations are narrower than fp32, else 0: a low-precision copy of an fp32 tensor
    exists only when the activation dtype is not fp32 itself."""
    return sp.Piecewise((ZERO, sp.Eq(S.e, FP32)), (x, True))


def if_batch_of_one(x: Expr) -> Expr:
    """x when b = 1, else 0 (a view that stays a view only for a single sequence)."""
    return sp.Piecewise((x, sp.Eq(S.b, 1)), (ZERO, True))


@dataclass(frozen=True)
class Profile:
    """Which code runs, as far as bytes saved for backward are concerned (measured on the CPU).

    impl: "hf" (transformers 5.24's code for the family) or "reference" (validate/reference.py,
    which computes everything in the activation dtype). attention: "eager" keeps the n_q x n_k
    probabilities; "flash" is a fused kernel that keeps q, k, v, its output and a log-sum-exp per
    row; "sdpa" is torch's scaled_dot_product_attention on the CPU: the flash kernel, except with
    dropout or a position bias that needs gradients, when it falls back to its math path in fp32.
    dropout: whether dropout runs (a training forward with p > 0). kv_cache: "dynamic" appends
    each step's keys and values with torch.cat, copying the whole cache (Hugging Face's
    DynamicCache and the reference model), "static" writes them into a preallocated cache. The
    facts below are what validate/FINDINGS.md measured, one property each.
    """

    impl: str = "hf"
    attention: str = "eager"
    dropout: bool = False
    family: str = "custom"
    kv_cache: str = "dynamic"

    @property
    def hf(self) -> bool:
        return self.impl == "hf"

    @property
    def dense_scores(self) -> bool:
        return self.attention == "eager"

    def kernel(self, bias_needs_grad: bool = False) -> str:
        """eager, flash or math (sdpa's fp32 fallback) for one attention."""
        if self.attention == "sdpa" and (self.dropout or bias_needs_grad):
            return "math"
        return "eager" if self.attention == "eager" else "flash"

    @property
    def rms_upcast(self) -> bool:
        """Hugging Face's Llama and T5 RMSNorms compute in fp32 (the reference: in its dtype)."""
        return self.hf and self.family in LLAMA_LIKE + ("t5",)

    @property
    def softmax_bytes(self) -> Expr:
        """Hugging Face's Llama takes the softmax in fp32; everyone else in the activation dtype."""
        return sp.Integer(FP32) if self.hf and self.family in LLAMA_LIKE else S.e

    @property
    def loss_bytes(self) -> Expr:
        """Hugging Face's causal-LM loss upcasts the logits to fp32; T5 and the reference do not."""
        return sp.Integer(FP32) if self.hf and self.family in LLAMA_LIKE + ("gpt2",) else S.e

    @property
    def mask_bytes(self) -> Expr:
        """A dropout mask on the CPU has the dtype of its input (on CUDA it is 1-byte bool)."""
        return S.e

    @property
    def python_gelu_tanh(self) -> bool:
        """gelu_new written in Python (GPT-2, BERT, T5) keeps four tensors; aten's gelu one."""
        return self.hf and self.family in ("gpt2", "bert", "t5")

    @property
    def position_ids_saved(self) -> bool:
        """A learned table looked up by int64 position ids (BERT's come from a buffer: not kept)."""
        return not (self.hf and self.family == "bert")

    @property
    def shifted_labels(self) -> bool:
        """The causal-LM loss pads the labels by one and shifts: at b = 1 the target is a view of
        the padded row (one more id)."""
        return self.hf and self.family in LLAMA_LIKE + ("gpt2",)

    def dropout_sites(self) -> tuple[str, ...]:
        """Where dropout runs when it runs. Hugging Face: Llama only on the attention
        probabilities; GPT-2 and BERT also on embeddings and sublayer outputs; T5 also inside the
        FFN and after each stack's final norm. The reference model: probabilities, embeddings and
        sublayer outputs, whatever the family (the seeds' placement)."""
        if not self.dropout:
            return ()
        if not self.hf:
            return ("probs", "embedding", "sublayer")  # the reference model, every family
        if self.family in LLAMA_LIKE:
            return ("probs",)
        sites = ("probs", "embedding", "sublayer")
        if self.family in ("t5", "transformer"):
            sites += ("ffn",)
        if self.family == "t5":
            sites += ("final",)
        return sites


@dataclass(frozen=True)
class Cost:
    """The costs of one block, as sympy expressions (for a whole batch, one forward)."""

    params: Expr = ZERO
    flops_matmul: Expr = ZERO
    elements: tuple[tuple[str, Expr], ...] = ()  # (op kind, output elements) of non-matmul ops
    flops_matmul_backward: Expr = ZERO
    saved_bytes: Expr = ZERO
    kv_cache_bytes: Expr = ZERO
    bytes_matmul: Expr = ZERO  # traffic of the matrix products: weights, their inputs and outputs
    bytes_other: Expr = ZERO  # traffic of the other ops (elementwise, reductions, gathers)

    @property
    def bytes_moved(self) -> Expr:
        return self.bytes_matmul + self.bytes_other

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
        "kv_cache_bytes", "bytes_matmul", "bytes_other", "bytes_moved",
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
            bytes_other=_elementwise_bytes(self.tokens * S.d),  # gather rows, write them
        )


@dataclass(frozen=True)
class LearnedPositions(Block):
    """A learned position table P x d added to the token embeddings."""

    tokens: Expr
    seq: Expr = S.n
    profile: Profile = Profile()
    title = "learned positions"

    def cost(self) -> Cost:
        # The lookup keeps its int64 position ids, one row of n shared by the batch.
        saved = INDEX * self.seq if self.profile.position_ids_saved else 0
        return _cost(
            params=S.P * S.d,
            elements=[("add", self.tokens * S.d)],
            saved_bytes=saved,
            bytes_other=_elementwise_bytes(self.tokens * S.d, reads=2),
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
            saved_bytes=INDEX * self.tokens,  # the int64 token-type ids
            bytes_other=_elementwise_bytes(self.tokens * S.d, reads=2),
        )


@dataclass(frozen=True)
class SinusoidalPositions(Block):
    """Fixed sinusoids (a buffer, no parameters) added to the token embeddings."""

    tokens: Expr
    title = "sinusoidal positions"

    def cost(self) -> Cost:
        return _cost(
            elements=[("add", self.tokens * S.d)],
            bytes_other=_elementwise_bytes(self.tokens * S.d, reads=2),
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
    """T5's bucketed relative position bias: an N_rb x h table owned by a stack's first layer,
    looked up once per forward by an n x n matrix of int64 bucket ids (kept for backward)."""

    seq: Expr = S.n
    title = "relative position bias"

    def cost(self) -> Cost:
        return _cost(params=S.N_rb * S.h, saved_bytes=INDEX * self.seq**2)


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
        params = 2 * S.d if self.kind == "layernorm" else S.d
        return _cost(
            params=params,
            elements=[(self.kind, self.tokens * S.d)],
            saved_bytes=self.saved(),
            bytes_other=_elementwise_bytes(self.tokens * S.d) + S.e * params,
        )

    def saved(self) -> Expr:
        """Kept for backward, including the output (the next linear keeps it as its input).

        RMSNorm: the input, the rsqrt per token, the normalised tensor (multiplied by the weight),
        the output; Hugging Face's Llama and T5 keep the input and rsqrt in fp32, and T5 also the
        un-cast input (x * rsqrt multiplies the original x). LayerNorm (aten.native_layer_norm):
        the input, mean and rstd per token (in the activation dtype on the CPU), the output.
        """
        rows, values = self.tokens, self.tokens * S.d
        if self.kind == "layernorm":
            return 2 * S.e * values + 2 * S.e * rows
        if not self.profile.rms_upcast:
            return 3 * S.e * values + S.e * rows
        saved = FP32 * values + FP32 * rows + 2 * S.e * values
        if self.profile.family == "t5":
            saved += unless_fp32(S.e * values)
        return saved


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
    copies_cache: bool = False  # a decode step's append copies the cache (torch.cat)
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
            bytes_matmul=moved,
            # torch.cat reads the cache and the new token's keys and values, writes them all.
            bytes_other=2 * kv_cache if self.copies_cache else ZERO,
        )


@dataclass(frozen=True)
class RotaryEmbedding(Block):
    """RoPE: rotate every query and key element by its position (cos/sin tables are buffers)."""

    q_tokens: Expr
    kv_tokens: Expr
    title = "rotary position embedding"

    def cost(self) -> Cost:
        rotated = self.q_tokens * S.h * S.d_h + self.kv_tokens * S.h_kv * S.d_h
        return _cost(elements=[("rope", rotated)], bytes_other=_elementwise_bytes(rotated))


@dataclass(frozen=True)
class AttentionCore(Block):
    """What the scores, softmax and weighted-sum blocks share: lengths, profile, kernel.

    Bytes kept for backward by kernel (b sequences, h heads, a = b*h*q_len*k_len pairs):
      eager: Q and K^T copies (b*h*len*d_h each: GQA keys are repeated to h heads), the softmax
        output (softmax dtype), V and the probabilities in the activation dtype (the softmax output
        itself when that is the dtype; dropout's output and mask when dropout runs);
      flash: q, k and v (h_kv heads), the output and an fp32 log-sum-exp per query row;
      math (sdpa's fallback on the CPU): q, k, v (h heads), softmax, mask, dropped probs in fp32.
    """

    q_len: Expr
    k_len: Expr
    profile: Profile = Profile()
    bias_needs_grad: bool = False  # a trained position bias (T5's self-attention) is added
    cross: bool = False
    causal: bool = False  # a decoder's self-attention

    @property
    def kernel(self) -> str:
        return self.profile.kernel(self.bias_needs_grad)

    @property
    def pairs(self) -> Expr:
        return S.b * S.h * self.q_len * self.k_len

    @property
    def kv_heads_kept(self) -> Expr:
        """Heads of K and V an eager product keeps: h, except that repeating K/V (expand then
        reshape, in Hugging Face's Llama and in the reference) stays a view for multi-query
        attention (h_kv = 1) at b = 1."""
        if not self.profile.hf or self.profile.family in LLAMA_LIKE:
            return sp.Piecewise((S.h_kv, sp.And(sp.Eq(S.b, 1), sp.Eq(S.h_kv, 1))), (S.h, True))
        return S.h

    @property
    def fused_qkv_extra(self) -> Expr:
        """GPT-2's query is a view of its fused c_attn output (3d wide), which a kept query keeps
        whole: under sdpa always, eager at b = 1 (where no copy is made)."""
        if not (self.profile.hf and self.profile.family == "gpt2" and not self.cross):
            return ZERO
        extra = 2 * S.e * S.b * self.q_len * S.d
        if self.kernel == "math":  # the fp32 fallback copies q: no view is kept
            return ZERO
        return extra if self.kernel == "flash" else if_batch_of_one(extra)


@dataclass(frozen=True)
class AttentionScores(AttentionCore):
    """Q K^T / sqrt(d_h) over every (query, key) pair, plus mask and position bias adds."""

    causal_or_padding_mask: bool = True
    position_bias: bool = False  # ALiBi or T5 relative bias added to the scores
    scaled: bool = True  # T5 folds the scale into its initialisation and does not scale
    title = "attention scores"

    def cost(self) -> Cost:
        pairs, kernel = self.pairs, self.kernel
        forward = 2 * pairs * S.d_h
        # The CPU flash kernel's backward recomputes Q K^T (torch's sdpa FLOP formula counts it).
        backward = 2 * forward + (forward if kernel == "flash" else 0)
        elements = [("mul", pairs if self.scaled else 0)]
        elements.append(("add", pairs * (int(self.causal_or_padding_mask) + int(self.position_bias))))
        if kernel == "eager":
            saved = S.e * S.b * S.d_h * (S.h * self.q_len + self.kv_heads_kept * self.k_len)
        elif kernel == "flash":
            saved = S.e * S.b * S.d_h * (S.h * self.q_len + S.h_kv * self.k_len)
        else:
            saved = FP32 * S.b * S.h * S.d_h * (self.q_len + self.k_len)
        # Reads the queries and the keys (h_kv heads: the cache in a decode step); eager attention
        # writes the scores.
        moved = S.e * S.b * S.d_h * (S.h * self.q_len + S.h_kv * self.k_len)
        pointwise = ZERO
        if self.profile.dense_scores:
            moved += S.e * pairs
            # Scaling, the mask and the position bias each read and write the scores (the
            # broadcast mask or bias itself is small); a fused kernel does them in registers.
            pointwise = sp.Add(*(_elementwise_bytes(x) for _, x in elements))
        return _cost(
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=elements,
            saved_bytes=saved + self.fused_qkv_extra,
            bytes_matmul=moved,
            bytes_other=pointwise,
        )


@dataclass(frozen=True)
class Softmax(AttentionCore):
    """Softmax over keys for every (query, key) pair (inside the kernel when fused)."""

    title = "softmax"

    def cost(self) -> Cost:
        pairs, kernel, p = self.pairs, self.kernel, self.profile
        if kernel == "eager":
            saved = p.softmax_bytes * pairs + (p.mask_bytes * pairs if p.dropout else 0)
        elif kernel == "flash":
            saved = FP32 * S.b * S.h * self.q_len  # the log-sum-exp per query row
        else:
            saved = FP32 * pairs * (2 if p.dropout else 1)  # softmax and mask in fp32
            if p.hf and p.family == "t5" and self.causal:
                saved += self.q_len * self.k_len  # T5 builds a bool causal mask per layer
        moved = _elementwise_bytes(pairs) if p.dense_scores else 0
        return _cost(elements=[("softmax", pairs)], saved_bytes=saved, bytes_other=moved)


@dataclass(frozen=True)
class WeightedSum(AttentionCore):
    """Probabilities times values: (n_q x n_k) @ (n_k x d_h) per head."""

    title = "weighted sum of values"

    def cost(self) -> Cost:
        pairs, kernel, p = self.pairs, self.kernel, self.profile
        forward = 2 * pairs * S.d_h
        if kernel == "eager":
            values = S.e * S.b * self.kv_heads_kept * self.k_len * S.d_h
            if p.dropout:
                probs = S.e * pairs  # dropout's output
            elif p.softmax_bytes == S.e:
                probs = ZERO  # the softmax output itself, already kept
            else:
                probs = unless_fp32(S.e * pairs)  # the cast of the fp32 softmax output
            saved = values + probs
        elif kernel == "flash":
            # v (h_kv heads) and the kernel's output, which is also the output projection's input.
            saved = S.e * S.b * S.d_h * (S.h_kv * self.k_len + S.h * self.q_len)
        else:
            saved = FP32 * S.b * S.h * self.k_len * S.d_h + (FP32 * pairs if p.dropout else 0)
        # Reads the values (h_kv heads) and, eager, the probabilities; writes the heads' output.
        moved = S.e * S.b * S.d_h * (S.h_kv * self.k_len + S.h * self.q_len)
        if p.dense_scores:
            moved += S.e * pairs
        return _cost(
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            saved_bytes=saved,
            bytes_matmul=moved,
        )


@dataclass(frozen=True)
class AttentionOutput(Block):
    """The output projection h*d_h -> d."""

    tokens: Expr
    bias: bool
    input_kept_by_kernel: bool = False  # a flash kernel's saved output is this block's input
    title = "attention output projection"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.h * S.d_h, S.d)
        params = S.h * S.d_h * S.d + (S.d if self.bias else 0)
        # It keeps its input: the heads transposed back to (b, len, h*d_h), a contiguous copy.
        saved = 0 if self.input_kept_by_kernel else S.e * self.tokens * S.h * S.d_h
        return _cost(
            params=params,
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
        return _cost(elements=[("add", values)], bytes_other=_elementwise_bytes(values, reads=2))


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
    inner_dropout: bool = True  # dropout on the hidden layer, where the profile's family has it
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
        if self.activation == "gelu_tanh":
            act = "gelu_tanh"
        inner = self.tokens * S.d_ff
        elements = [(act, inner), ("mul", inner if self.gated else 0)]
        return _cost(
            params=params,
            flops_matmul=forward_in + forward_out,
            flops_matmul_backward=backward_in + backward_out,
            elements=elements,
            saved_bytes=self.saved(act),
            bytes_matmul=_linear_bytes(self.tokens, S.d, n_in * S.d_ff) + _linear_bytes(self.tokens, S.d_ff, S.d),
            # The activation over d_ff (and, gated, the product with the second projection).
            bytes_other=_elementwise_bytes(inner) + (_elementwise_bytes(inner, reads=2) if self.gated else 0),
        )

    def saved(self, act: str) -> Expr:
        """Hidden tensors (b, len, d_ff) kept for backward; the input is counted by the norm.

        The activation keeps what its backward needs: relu its output, gelu and silu their input,
        Python gelu_new (GPT-2, BERT, T5 in Hugging Face) x, tanh, 0.5*x and 1+tanh. A gate's
        product keeps both factors. The output matrix keeps its input, which for an ungated relu
        is relu's own output (one tensor). Dropout inside the FFN keeps its mask, and the output
        matrix then keeps dropout's output instead.
        """
        internal = 4 if act in ("gelu_tanh", "gelu") and self.python_gelu(act) else 1
        dropout = self.inner_dropout and "ffn" in self.profile.dropout_sites()
        kept = internal + (2 if self.gated else 0) + 1
        if act == "relu" and not self.gated and not dropout:
            kept -= 1  # relu's output is the output matrix's input
        inner = self.tokens * S.d_ff
        return kept * S.e * inner + (self.profile.mask_bytes * inner if dropout else 0)

    def python_gelu(self, act: str) -> bool:
        """Whether this gelu is Hugging Face's Python gelu_new (GPT-2/BERT gelu_new, T5 gated-gelu)."""
        tanh = self.activation == "gelu_tanh" or (self.activation == "geglu" and self.profile.family == "t5")
        return tanh and self.profile.python_gelu_tanh


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
            bytes_matmul=_linear_bytes(self.tokens, S.d, S.V),  # the weight is read, tied or not
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
            params=S.d * S.d + S.d,
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("tanh", S.b * S.d)],
            saved_bytes=saved,
            bytes_matmul=_linear_bytes(S.b, S.d, S.d),
            bytes_other=_elementwise_bytes(S.b * S.d),
        )


@dataclass(frozen=True)
class CrossEntropy(Block):
    """The training loss over the logits: log-softmax and the negative log-likelihood."""

    tokens: Expr
    profile: Profile = Profile()
    title = "cross-entropy loss"

    def cost(self) -> Cost:
        # Log-softmax keeps its output, the NLL the int64 targets and a scalar total weight.
        p = self.profile
        saved = p.loss_bytes * (self.tokens * S.V + 1) + INDEX * self.tokens
        if p.shifted_labels:
            saved += if_batch_of_one(INDEX)
        return _cost(elements=[("log_softmax", self.tokens * S.V)], saved_bytes=saved)


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
