"""One class per Transformer block, each owning all of its formulas as sympy expressions.

A block's cost() returns a Cost: parameters, forward matmul FLOPs, the elements of every other op
(norms, softmax, activations, residual adds, scaling, RoPE), backward matmul FLOPs, bytes saved for
backward and KV-cache bytes. Nothing else in the project types a formula: totals are sums of these,
LaTeX is sympy.latex of these, numbers are these with the dimensions substituted.

Conventions (what "formula == measurement" means, see docs/design.md):
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
from typing import Any

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
    "sigmoid": 4,
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
    mla: how latent attention runs at inference: "naive" (transformers' code: every cached latent
    up-projected to keys and values at every step) or "absorbed" (inference engines: W_UK folded
    into the queries and W_UV applied after the weighted sum, attention over the cached latents).
    """

    impl: str = "hf"
    attention: str = "eager"
    dropout: bool = False
    attention_dropout: bool | None = None  # dropout on the attention probabilities (None: as dropout)
    family: str = "custom"
    kv_cache: str = "dynamic"
    recompute: str = "none"
    precision: str = "mixed"
    optimizer: str = "adamw"
    optimizer_impl: str = "single"
    device: str = "cpu"
    kv_dtype: str | None = None  # a quantized KV cache (fp8, int8): one byte per element + scales
    weight_format: Any = None  # quantization.WeightFormat of the weights (inference), or None
    mla: str = "naive"  # latent attention's form: "naive" or "absorbed" (inference only)

    @cached_property
    def facts(self) -> Facts:
        return facts_for(self.impl, self.family)

    def kernel(self, bias_needs_grad: bool = False) -> Kernel:
        """The attention kernel that runs (a position bias that needs gradients can change it)."""
        return choose(self.attention, self.probs_dropout, bias_needs_grad,
                      self.recompute == "selective")

    @property
    def probs_dropout(self) -> bool:
        """Whether dropout runs on the attention probabilities."""
        return "probs" in self.dropout_sites()

    @property
    def mask_bytes(self) -> Expr:
        return dtype_bytes(self.facts.dropout_mask_dtype)

    def dropout_sites(self) -> tuple[str, ...]:
        """Where dropout runs, if it runs (the facts' dropout_sites): on the probabilities when the
        attention dropout is on, everywhere else when the dropout is."""
        probs = self.dropout if self.attention_dropout is None else self.attention_dropout
        return tuple(site for site in self.facts.dropout_sites
                     if (probs if site == "probs" else self.dropout))

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
    inactive_params: Expr = ZERO  # parameters a token does not use (routed experts it skips)
    # The weight matrices a quantized format stores quantized, as (rows, columns, how many): the
    # matrices a layer multiplies by (costmodel/quantization.py says which stay unquantized).
    matrices: tuple[tuple[Expr, Expr, Expr], ...] = ()
    # Forward matmul FLOPs under a named variant of how the block runs, where it has one:
    # "windowed" (a kernel that computes only the keys in a sliding window) and "absorbed" (MLA
    # with its key/value up-projections folded into the query and the output).
    variants: tuple[tuple[str, Expr], ...] = ()

    @property
    def params(self) -> Expr:
        return sp.Add(*(t.elements for t in self.tensors))

    @property
    def active_params(self) -> Expr:
        """Parameters one token's forward uses (all but the routed experts it is not sent to)."""
        return self.params - self.inactive_params

    @property
    def matrix_params(self) -> Expr:
        """Elements of the weight matrices a quantized format quantizes."""
        return sp.Add(*(rows * cols * count for rows, cols, count in self.matrices))

    def variant_flops(self, name: str) -> Expr:
        """Forward matmul FLOPs under a variant (the block's own when it has none of that name)."""
        return dict(self.variants).get(name, self.flops_matmul)

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

    def is_active(self) -> bool:
        """Whether the block runs any op (what a per-block launch overhead is paid for)."""
        return any(self.get(q) != 0 for q in ("flops_matmul", "flops_other", "bytes_moved"))


def _cost(**kwargs) -> Cost:
    """A Cost with every value made a sympy expression (zero elements and tensors dropped; a
    tensor given as an expression is one-dimensional)."""
    pairs = ("elements", "tensors", "matrices", "variants")
    values = {k: sp.sympify(v) for k, v in kwargs.items() if k not in pairs}
    elements = tuple((k, sp.sympify(x)) for k, x in kwargs.get("elements", ()) if x != 0)
    tensors = tuple(t if isinstance(t, Tensor) else Tensor(sp.sympify(t))
                    for t in kwargs.get("tensors", ()) if t != 0)
    matrices = tuple(tuple(sp.sympify(x) for x in m) for m in kwargs.get("matrices", ()))
    variants = tuple((k, sp.sympify(x)) for k, x in kwargs.get("variants", ()))
    return Cost(elements=elements, tensors=tensors, matrices=matrices, variants=variants, **values)


def _matrix(d_in: Expr, d_out: Expr, count: Expr = 1) -> tuple[Expr, Expr, Expr]:
    """A linear layer's weight as quantized: d_out rows (output features) of d_in columns."""
    return (d_out, d_in, count)


def quantized_bytes(matrices: tuple[tuple[Expr, Expr, Expr], ...], fmt: Any) -> dict[str, Expr]:
    """Bytes of quantized weight matrices by part (data, scales, zeros, tables) in a format of
    costmodel/quantization.py; R rows of C columns, N = R C values per matrix:

      row   data N bits/8, scales 4 R (one fp32 per output row)
      gptq  data N bits/8, per group of g columns of a row (G = R ceil(C/g)): scales 2 G (fp16),
            zeros G bits/8 (packed)
      nf4   data N/2; per block of g values (B = ceil(N/g)): scales 4 B, tables 64 (the code); with
            double quantisation scales B + 4 ceil(B/256), tables 64 + 1024 + 4 (the second code
            and the offset)
    """
    parts = {"data": ZERO, "scales": ZERO, "zeros": ZERO, "tables": ZERO}
    for rows, cols, count in matrices:
        values = rows * cols
        parts["data"] += count * sp.ceiling(values * fmt.bits / 8)
        if fmt.layout == "row":
            parts["scales"] += count * FP32 * rows
        elif fmt.layout == "gptq":
            groups = rows * sp.ceiling(cols / fmt.group)
            parts["scales"] += count * 2 * groups
            parts["zeros"] += count * sp.ceiling(groups * fmt.bits / 8)
        elif fmt.double_quant:
            blocks = sp.ceiling(values / fmt.group)
            parts["scales"] += count * (blocks + FP32 * sp.ceiling(blocks / 256))
            parts["tables"] += count * (16 * FP32 + 256 * FP32 + FP32)
        else:
            parts["scales"] += count * FP32 * sp.ceiling(values / fmt.group)
            parts["tables"] += count * 16 * FP32
    return parts


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


#: Bytes of the per-tensor scales a quantized KV cache keeps beside one layer's keys and values:
#: one fp32 scale for the keys and one for the values (transformers' QuantizedCache(backend="fp8"),
#: FINDINGS 11.4; TensorRT-LLM's int8 and fp8 KV caches scale per tensor the same way).
KV_SCALE_BYTES = 2 * FP32


def kv_cache_bytes(elements: Expr, profile: "Profile") -> Expr:
    """Bytes of one layer's cached key/value elements: the activation dtype, or with a quantized
    cache (profile.kv_dtype fp8 or int8) one byte each plus the layer's two scales."""
    if elements == 0 or profile.kv_dtype is None:
        return elements * S.e
    return elements + KV_SCALE_BYTES


# ---------------------------------------------------------------------------------------------
# Embeddings and positions
# ---------------------------------------------------------------------------------------------


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
    title = "token embedding"

    def cost(self) -> Cost:
        scale = self.tokens * self.width if self.scaled else ZERO
        # The lookup keeps the token ids for its backward; scaling by a constant keeps nothing.
        # What layer 0 reads is d wide (after a projection in, where there is one).
        output = S.e * self.tokens * S.d if self.output_kept else 0
        # Gemma holds its scale as a one-element buffer in the model dtype (facts.embed_scale_buffer).
        buffer = S.e if self.scaled and self.profile.facts.embed_scale_buffer else 0
        return _cost(
            tensors=[Tensor(S.V, self.width)] if self.owns_table else [],
            elements=[("mul", scale)],
            saved_bytes=INDEX * self.tokens + output,
            bytes_other=elementwise_bytes(self.tokens * self.width),  # gather rows, write them
            input_bytes=INDEX * self.tokens,  # the int64 ids the caller passes
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
        forward, backward = _linear(self.tokens, self.d_in, self.d_out)
        kept = (self.d_in if self.input_kept else 0) + (self.d_out if self.output_kept else 0)
        return _cost(
            tensors=[Tensor(self.d_out, self.d_in)],
            matrices=[_matrix(self.d_in, self.d_out)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=S.e * self.tokens * kept,
            bytes_matmul=_linear_bytes(self.tokens, self.d_in, self.d_out),
        )


@dataclass(frozen=True)
class LearnedPositions(Block):
    """A learned position table P x d added to the token embeddings."""

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
        return _cost(
            tensors=[Tensor(S.P + self.offset, S.d)],
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
    width: Expr = S.d_h  # the rotated part of a head: d_h, or d_r where RoPE is partial
    title = "rotary cos/sin tables"

    def cost(self) -> Cost:
        if self.profile.facts.rotary_tables == "forward":
            return _cost(saved_bytes=2 * self.seq * self.width * S.e,
                         buffer_bytes=2 * FP32 * (self.width / 2))
        return _cost(buffer_bytes=2 * S.P * self.width * S.e)


@dataclass(frozen=True)
class AlibiSlopes(Block):
    """ALiBi's slopes, one per head: a buffer in the model dtype, shared by a stack's layers
    (facts.alibi_slopes_buffer; BLOOM builds its bias tensor each forward and keeps nothing)."""

    profile: Profile = Profile()
    title = "ALiBi slopes"

    def cost(self) -> Cost:
        return _cost(buffer_bytes=S.e * S.h if self.profile.facts.alibi_slopes_buffer else 0)


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


def _norm_saved(kind: str, rows: Expr, width: Expr, facts: Facts, input_kept: bool = True,
                output_kept: bool = True) -> Expr:
    """Bytes a norm over rows x width keeps for backward (see Norm.saved)."""
    values = rows * width
    output = S.e * values if output_kept else ZERO
    if not facts.norm_keeps_stats:  # its input and its output (the next linear's input) only
        return (S.e * values if input_kept else ZERO) + output
    if kind == "layernorm":
        return (S.e * values if input_kept else ZERO) + 2 * S.e * rows + output
    if facts.norm_dtype == "activation":
        return (S.e * values if input_kept else ZERO) + S.e * rows + S.e * values + output
    size = dtype_bytes(facts.norm_dtype)
    # x.to(float32) is the input itself in an fp32 model (then shared with whoever keeps it), a
    # new fp32 copy otherwise.
    saved = (size * values if input_kept else unless_fp32(size * values)) + size * rows + output
    if facts.rmsnorm_weight_fp32:  # (x_hat * (1 + w.float())).type_as(x): fp32 x_hat and (1 + w)
        saved += size * values + size * width
    else:
        saved += S.e * values  # x_hat cast back, which the weight multiplies
    if facts.norm_keeps_uncast_input:
        saved += unless_fp32(S.e * values)
    return saved


@dataclass(frozen=True)
class Norm(Block):
    """LayerNorm (weight and bias) or RMSNorm (weight only) over d (or another width)."""

    tokens: Expr
    kind: str  # "layernorm" | "rmsnorm"
    profile: Profile = Profile()
    width: Expr = S.d
    input_kept: bool = True  # False: another norm keeps the same input (parallel attention/FFN)
    output_kept: bool = True  # False: only a residual add reads it (Gemma 2's post-sublayer norms)
    title = "norm"

    def cost(self) -> Cost:
        tensors = [self.width, self.width] if self.kind == "layernorm" else [self.width]
        values = self.tokens * self.width
        return _cost(
            tensors=tensors,
            elements=[(self.kind, values)],
            saved_bytes=self.saved(),
            bytes_other=elementwise_bytes(values) + S.e * sp.Add(*tensors),
        )

    def saved(self) -> Expr:
        """Kept for backward, including the output (the next linear keeps it as its input).

        RMSNorm: the input, the rsqrt per token, the normalised tensor (multiplied by the weight),
        the output; computed in fp32 (facts.norm_dtype) it keeps the input and rsqrt in fp32, and
        an implementation that multiplies the un-cast input (facts.norm_keeps_uncast_input, T5)
        keeps that too; one that multiplies by (1 + weight) in fp32 before casting
        (facts.rmsnorm_weight_fp32, Gemma) keeps the fp32 normalised tensor and the fp32 (1 + w)
        instead of the cast. LayerNorm (aten.native_layer_norm): the input, mean and rstd per
        token (in the activation dtype on the CPU), the output.
        """
        return _norm_saved(self.kind, self.tokens, self.width, self.profile.facts,
                           self.input_kept, self.output_kept)


@dataclass(frozen=True)
class HeadNorms(Block):
    """Qwen3's q_norm and k_norm: an RMSNorm over each query and each key head (d_h wide), before
    RoPE. Their outputs go on to RoPE, which keeps only cos and sin: nothing keeps them."""

    q_tokens: Expr
    kv_tokens: Expr
    profile: Profile = Profile()
    title = "query and key norms"

    def cost(self) -> Cost:
        rows = self.q_tokens * S.h + self.kv_tokens * S.h_kv
        return _cost(
            tensors=[S.d_h, S.d_h],
            elements=[("rmsnorm", rows * S.d_h)],
            saved_bytes=_norm_saved("rmsnorm", rows, S.d_h, self.profile.facts, output_kept=False),
            bytes_other=elementwise_bytes(rows * S.d_h) + 2 * S.e * S.d_h,
        )


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
    profile: Profile = Profile()
    cache_heads: Expr = S.h_kv  # heads the cache holds (Falcon's new layout: h, see facts)
    title = "Q, K, V projections"

    def cost(self) -> Cost:
        q_fwd, q_bwd = _linear(self.q_tokens, S.d, S.h * S.d_h)
        kv_fwd, kv_bwd = _linear(self.kv_tokens, S.d, 2 * S.h_kv * S.d_h)
        if self.fused:
            tensors = _weight_and_bias(S.d, (S.h + 2 * S.h_kv) * S.d_h, self.bias, self.transposed)
            matrices = [_matrix(S.d, (S.h + 2 * S.h_kv) * S.d_h)]
        else:
            tensors = (_weight_and_bias(S.d, S.h * S.d_h, self.bias, self.transposed)
                       + 2 * _weight_and_bias(S.d, S.h_kv * S.d_h, self.bias, self.transposed))
            matrices = [_matrix(S.d, S.h * S.d_h), _matrix(S.d, S.h_kv * S.d_h, 2)]
        kv_cache = kv_cache_bytes(2 * S.b * self.cache_heads * S.d_h * self.cached_tokens,
                                  self.profile)
        moved = _linear_bytes(self.q_tokens, S.d, S.h * S.d_h)
        moved += _linear_bytes(self.kv_tokens, S.d, 2 * S.h_kv * S.d_h)
        return _cost(
            tensors=tensors,
            matrices=matrices,
            flops_matmul=q_fwd + kv_fwd,
            flops_matmul_backward=q_bwd + kv_bwd,
            # Falcon splits its fused output with qkv[..., [-2]] and [-1]: two int64 index tensors.
            saved_bytes=self.profile.facts.qkv_split_index_bytes if self.fused else 0,
            kv_cache_bytes=kv_cache,
            bytes_matmul=moved,
            # torch.cat reads the cache and the new token's keys and values, writes them all.
            bytes_other=2 * kv_cache if self.copies_cache else ZERO,
        )


@dataclass(frozen=True)
class RotaryEmbedding(Block):
    """RoPE: rotate the first `width` dimensions (all d_h, or d_r) of every query and key head by
    its position (cos/sin from RotaryTables); MLA rotates one shared key head."""

    q_tokens: Expr
    kv_tokens: Expr
    width: Expr = S.d_h
    key_heads: Expr = S.h_kv
    title = "rotary position embedding"

    def cost(self) -> Cost:
        rotated = (self.q_tokens * S.h + self.kv_tokens * self.key_heads) * self.width
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
    qk_dim: Expr = S.d_h  # width of a query/key head
    value_dim: Expr = S.d_h  # width of a value head (MLA: d_v)
    kv_heads: Expr = S.h_kv  # heads of K and V as they reach the kernel (Falcon's new layout: h)
    windowed: bool = False  # a sliding-window layer's prefill (its "windowed" variant)
    latent: bool = False  # MLA (its "absorbed" variant)

    @property
    def windowed_pairs(self) -> Expr:
        """(query, key) pairs a causal kernel with a window of w computes over a prompt of n:
        query i attends min(i, w) keys, n w - w (w - 1) / 2 in all once n >= w."""
        n = self.q_len
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
        elements = [("mul", pairs * (int(self.scaled) + 2 * int(self.softcap)))]
        elements.append(("add", pairs * (int(self.causal_or_padding_mask) + int(self.position_bias))))
        elements.append(("tanh", pairs if self.softcap else 0))
        # Reads the queries and the keys (h_kv heads: the cache in a decode step); a dense kernel
        # writes the scores, and its scaling, mask and position bias each read and write them (the
        # broadcast mask or bias itself is small); a fused kernel does them in registers.
        moved = S.e * S.b * self.qk_dim * (S.h * self.q_len + self.kv_heads * self.k_len)
        pointwise = ZERO
        if kernel.dense:
            moved += S.e * pairs
            pointwise = sp.Add(*(elementwise_bytes(x) for _, x in elements))
        # Soft-capping keeps tanh's result (its backward reads it), in the activation dtype.
        capped = S.e * pairs if self.softcap and kernel.dense else ZERO
        return _cost(
            flops_matmul=forward,
            variants=self.core_variants(self.qk_dim, S.r_kv + S.d_r),
            flops_matmul_backward=kernel.scores_backward(forward),
            elements=elements,
            saved_bytes=kernel.scores_saved(self) + self.fused_qkv_extra + capped,
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

    # Absorbed MLA: the values are the first r_kv of the keys' own cached latent, which a fused
    # kernel has already read for the scores (FlashMLA, vLLM's MLA backend): not read again.
    values_are_keys: bool = False
    title = "weighted sum of values"

    def cost(self) -> Cost:
        pairs, kernel = self.pairs, self.kernel
        forward = 2 * pairs * self.value_dim
        # Reads the values (h_kv heads) and, dense, the probabilities; writes the heads' output.
        values_read = 0 if self.values_are_keys and not kernel.dense else self.kv_heads * self.k_len
        moved = S.e * S.b * self.value_dim * (values_read + S.h * self.q_len)
        if kernel.dense:
            moved += S.e * pairs
        return _cost(
            flops_matmul=forward,
            variants=self.core_variants(self.value_dim, S.r_kv),
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
    value_dim: Expr = S.d_h  # width of a value head (MLA: d_v)
    title = "attention output projection"

    def cost(self) -> Cost:
        width = S.h * self.value_dim
        forward, backward = _linear(self.tokens, width, S.d)
        # It keeps its input: the heads transposed back to (b, len, h*d_h), a contiguous copy.
        saved = 0 if self.input_kept_by_kernel else S.e * self.tokens * width
        return _cost(
            tensors=_weight_and_bias(width, S.d, self.bias, self.transposed),
            matrices=[_matrix(width, S.d)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=saved,
            bytes_matmul=_linear_bytes(self.tokens, width, S.d),
        )


@dataclass(frozen=True)
class Residual(Block):
    """x + sublayer(x)."""

    tokens: Expr
    title = "residual add"

    def cost(self) -> Cost:
        values = self.tokens * S.d
        return _cost(elements=[("add", values)], bytes_other=elementwise_bytes(values, reads=2))


@dataclass(frozen=True)
class LatentAttention(Block):
    """Multi-head latent attention's projections (DeepSeek-V2/V3, modeling_deepseek_v3.py).

    Queries: d -> r_q (q_a_proj), an RMSNorm, r_q -> h d_h (q_b_proj); or d -> h d_h directly
    (q_proj) without a query rank. Keys and values: d -> r_kv + d_r (kv_a_proj_with_mqa), the r_kv
    latent normed (kv_a_layernorm) and cached with the d_r RoPE key; every attention step then
    up-projects every latent it attends to, r_kv -> h (d_h - d_r + d_v) (kv_b_proj), so a decode
    step re-projects the whole cache (up_tokens = b c). The cache per token per layer is r_kv + d_r
    values, one head.

    absorbed (how inference engines run it; DeepSeek-V2, arXiv:2405.04434, section 2.1.2: W_UK
    "can be absorbed into W_Q" and W_UV into W_O; vLLM's MLA attention backend,
    vllm/attention/backends/mla): kv_b_proj's two halves are applied to the queries and to the
    attention's output instead of the cache. Each query head's d_h - d_r non-rotated part goes
    through W_UK (-> r_kv) and each head's r_kv-wide weighted sum through W_UV (-> d_v): 2 q_tokens
    h r_kv (d_h - d_r + d_v) FLOPs, whatever the context; no latent is up-projected (up_tokens
    unused) and the core attends with one shared head of r_kv + d_r (values: its first r_kv).

    Kept for backward beyond the norms and the attention core: q_b's input (the normed query
    latent); kv_a_layernorm in fp32, whose input is a view of kv_a's whole r_kv + d_r output in an
    fp32 model and an fp32 copy of the latent otherwise, its rsqrt, its cast output and kv_b's
    input (the normed latent); at b = 1 the kept V is a view of kv_b's whole output (the keys'
    d_h - d_r part with it).
    """

    q_tokens: Expr
    kv_tokens: Expr  # tokens whose latent is computed here
    up_tokens: Expr  # tokens whose latent kv_b up-projects (all the keys attended)
    cached_tokens: Expr = ZERO
    q_lora: bool = True
    bias: bool = False  # attention_bias: q_a_proj and kv_a_proj_with_mqa (and o_proj)
    profile: Profile = Profile()
    absorbed: bool = False
    title = "latent attention projections (MLA)"

    def absorbed_flops(self, q_fwd: Expr, kv_fwd: Expr) -> Expr:
        """Forward FLOPs of the absorbed form: the query and latent projections, then W_UK on each
        query head's non-rotated part and W_UV on each head's latent-wide output."""
        return q_fwd + kv_fwd + 2 * self.q_tokens * S.h * S.r_kv * (S.d_h - S.d_r + S.d_v)

    def cost(self) -> Cost:
        nope = S.d_h - S.d_r
        up_width = S.h * (nope + S.d_v)
        if self.q_lora:
            q_tensors = (*_weight_and_bias(S.d, S.r_q, self.bias), Tensor(S.r_q),
                         Tensor(S.h * S.d_h, S.r_q))
            q_matrices = [_matrix(S.d, S.r_q), _matrix(S.r_q, S.h * S.d_h)]
            q_fwd = _linear(self.q_tokens, S.d, S.r_q)[0] + _linear(self.q_tokens, S.r_q, S.h * S.d_h)[0]
        else:
            q_tensors = (Tensor(S.h * S.d_h, S.d),)
            q_matrices = [_matrix(S.d, S.h * S.d_h)]
            q_fwd = _linear(self.q_tokens, S.d, S.h * S.d_h)[0]
        kv_fwd = _linear(self.kv_tokens, S.d, S.r_kv + S.d_r)[0]
        up_fwd = _linear(self.up_tokens, S.r_kv, up_width)[0]
        forward = q_fwd + kv_fwd + up_fwd
        tensors = (*q_tensors, *_weight_and_bias(S.d, S.r_kv + S.d_r, self.bias), Tensor(S.r_kv),
                   Tensor(up_width, S.r_kv))
        absorbed = self.absorbed_flops(q_fwd, kv_fwd)
        # Activations the projections read and write besides the weights: naive, kv_b reads every
        # latent attended and writes its keys and values; absorbed, W_UK reads the queries'
        # non-rotated parts and writes latent-wide queries, W_UV reads the latent-wide outputs and
        # writes d_v-wide ones.
        up_bytes = (S.e * self.q_tokens * S.h * (nope + 2 * S.r_kv + S.d_v) if self.absorbed
                    else S.e * self.up_tokens * (S.r_kv + up_width))
        return _cost(
            tensors=tensors,
            matrices=[*q_matrices, _matrix(S.d, S.r_kv + S.d_r), _matrix(S.r_kv, up_width)],
            variants=[("absorbed", absorbed)],
            flops_matmul=absorbed if self.absorbed else forward,
            flops_matmul_backward=2 * forward,
            elements=[("rmsnorm", self.q_tokens * S.r_q if self.q_lora else 0),
                      ("rmsnorm", self.kv_tokens * S.r_kv)],
            saved_bytes=self.saved(),
            kv_cache_bytes=kv_cache_bytes(S.b * self.cached_tokens * (S.r_kv + S.d_r), self.profile),
            bytes_matmul=(S.e * sp.Add(*(t.elements for t in tensors)) + S.e * self.q_tokens * (S.d + S.h * S.d_h)
                          + S.e * self.kv_tokens * (S.d + S.r_kv + S.d_r) + up_bytes),
        )

    def latent_gradient_bytes(self) -> Expr:
        """The latents read by the head-split up-projections (q_b_proj and kv_b_proj): under tensor
        parallelism each rank's backward gives a partial gradient of them, which is all-reduced."""
        return S.e * (self.q_tokens * S.r_q if self.q_lora else ZERO) + S.e * self.up_tokens * S.r_kv

    def saved(self) -> Expr:
        facts, tokens = self.profile.facts, self.kv_tokens
        saved = ZERO
        if self.q_lora:  # q_a_layernorm, its output kept by q_b_proj
            saved += _norm_saved("rmsnorm", self.q_tokens, S.r_q, facts)
        if facts.norm_dtype == "fp32":
            latent_input = sp.Piecewise((FP32 * tokens * (S.r_kv + S.d_r), sp.Eq(S.e, FP32)),
                                        (FP32 * tokens * S.r_kv, True))
            saved += latent_input + FP32 * tokens + S.e * tokens * S.r_kv
        else:
            saved += S.e * tokens * (2 * S.r_kv + S.d_r) + S.e * tokens
        saved += S.e * tokens * S.r_kv  # kv_b_proj's input: the normed latent
        kernel = self.profile.kernel()
        return saved + kernel.query_view_saved(S.e * self.up_tokens * S.h * (S.d_h - S.d_r))


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
    width: Expr = S.d_ff  # the inner width (a shared expert's: d_s)
    title = "feed-forward network"

    @property
    def gated(self) -> bool:
        return self.activation in GATED_ACTIVATIONS

    def cost(self) -> Cost:
        n_in = 2 if self.gated else 1  # matrices d -> d_ff
        transposed = self.profile.facts.linear_weights_transposed
        if self.gated and self.profile.facts.fused_gate_up:  # one gate_up weight (Phi-3)
            inputs = _weight_and_bias(S.d, 2 * self.width, self.bias, transposed)
            matrices = [_matrix(S.d, 2 * self.width)]
        else:
            inputs = n_in * _weight_and_bias(S.d, self.width, self.bias, transposed)  # (gate,) up
            matrices = [_matrix(S.d, self.width, n_in)]
        forward_in, backward_in = _linear(self.tokens, S.d, n_in * self.width)
        forward_out, backward_out = _linear(self.tokens, self.width, S.d)
        act = ACTIVATION_OPS[self.activation]
        inner = self.tokens * self.width
        elements = [(act, inner), ("mul", inner if self.gated else 0)]
        return _cost(
            tensors=inputs + _weight_and_bias(self.width, S.d, self.bias, transposed),
            matrices=[*matrices, _matrix(self.width, S.d)],
            flops_matmul=forward_in + forward_out,
            flops_matmul_backward=backward_in + backward_out,
            elements=elements,
            saved_bytes=self.saved(act),
            bytes_matmul=(_linear_bytes(self.tokens, S.d, n_in * self.width)
                          + _linear_bytes(self.tokens, self.width, S.d)),
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
        dropout's output instead. A fused SwiGLU (facts.fused_swiglu, Megatron) keeps its input,
        gate and up, and recomputes the rest: three tensors with the output matrix's input.
        """
        python_gelu = act == "gelu_tanh" and self.profile.facts.gelu_tanh_python
        internal = 4 if python_gelu else 1
        dropout = self.inner_dropout and "ffn" in self.profile.dropout_sites()
        kept = internal + (2 if self.gated else 0) + 1
        if self.gated and self.profile.facts.fused_swiglu:
            kept = 3  # the fused kernel's input (gate and up) and the output matrix's input
        if act == "relu" and not self.gated and not dropout:
            kept -= 1  # relu's output is the output matrix's input
        inner = self.tokens * self.width
        return kept * S.e * inner + (self.profile.mask_bytes * inner if dropout else 0)


@dataclass(frozen=True)
class Router(Block):
    """A mixture-of-experts router: logits d -> E for every token, then the top k experts.

    "softmax" (Mixtral, Qwen2-MoE): an fp32 softmax over the logits and its top k. "sigmoid"
    (DeepSeek-V3): fp32 sigmoid scores, plus a bias for the choice only (e_score_correction_bias,
    an fp32 buffer of E), the top k within the best groups. Kept for backward (FINDINGS 11.3): the
    fp32 probabilities, the int64 top-k indices, and where the weights are renormalised
    (renormalize) their fp32 sum and values; a router run in fp32 (facts.router_dtype) keeps an fp32
    copy of its input in a narrower model. Its input is the norm's output, kept there. The group
    choice keeps tensors too, but no path from the loss reaches them: they are freed (11.5).
    """

    tokens: Expr
    kind: str = "softmax"
    renormalize: bool = True
    profile: Profile = Profile()
    title = "router"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.d, S.E)
        tokens = self.tokens
        saved = FP32 * tokens * S.E + INDEX * tokens * S.k
        if self.renormalize:
            saved += FP32 * tokens + FP32 * tokens * S.k
        if self.profile.facts.router_dtype == "fp32":
            saved += unless_fp32(FP32 * tokens * S.d)
        return _cost(
            tensors=[Tensor(S.E, S.d)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[(self.kind, tokens * S.E)],
            saved_bytes=saved,
            bytes_matmul=_linear_bytes(tokens, S.d, S.E),
            bytes_other=elementwise_bytes(tokens * S.E),
            buffer_bytes=FP32 * S.E if self.kind == "sigmoid" else 0,
        )


@dataclass(frozen=True)
class Experts(Block):
    """The routed experts of a mixture-of-experts layer: E SwiGLU FFNs of inner width d_x, stored
    as gate_up_proj (E, 2 d_x, d) and down_proj (E, d, d_x), run by torch._grouped_mm over the
    S = tokens k routed slots (transformers' default experts kernel, integrations/moe.py).

    Without a capacity limit every slot runs one expert, so the FLOPs are S times one expert's,
    whatever the routing; the load per expert (expert_flops) is what the routing decides. Kept for
    backward (FINDINGS 11.3): the int64 slot permutation, its inverse and the token of each slot
    (24 S), the int32 group offsets (one per expert, shared by both grouped products), the gathered
    input (S, d), the gate_up output (SiLU keeps its gate half, a view of all of it), the SiLU
    output, the product, the down output and the routing weights (facts.routing_weights_dtype).
    A token uses k of the E experts: the other E - k are its inactive parameters.
    """

    tokens: Expr
    profile: Profile = Profile()
    title = "routed experts"

    def expert_flops(self, routed_tokens: Expr) -> Expr:
        """Forward matmul FLOPs of one expert given the tokens routed to it."""
        return 2 * routed_tokens * 3 * S.d * S.d_x

    def cost(self) -> Cost:
        slots = self.tokens * S.k
        forward = self.expert_flops(slots)
        weights = dtype_bytes(self.profile.facts.routing_weights_dtype)
        saved = 3 * INDEX * slots + 4 * S.E + S.e * slots * (2 * S.d + 4 * S.d_x) + weights * slots
        one_expert = 3 * S.d * S.d_x
        return _cost(
            tensors=[Tensor(S.E, 2 * S.d_x * S.d), Tensor(S.E, S.d * S.d_x)],
            matrices=[_matrix(S.d, 2 * S.d_x, S.E), _matrix(S.d_x, S.d, S.E)],  # each expert's own
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            elements=[("silu", slots * S.d_x), ("mul", slots * S.d_x + slots * S.d),
                      ("add", slots * S.d)],
            saved_bytes=saved,
            inactive_params=(S.E - S.k) * one_expert,
            # Traffic: each expert that gets a slot reads its weights once (balanced routing: all
            # of them once there are E slots; a decode step of b tokens reads at most b k).
            bytes_matmul=S.e * (sp.Min(S.E, slots) * one_expert + slots * (2 * S.d + 3 * S.d_x)),
            bytes_other=elementwise_bytes(slots * S.d_x, reads=2) + elementwise_bytes(slots * S.d, reads=2),
        )


@dataclass(frozen=True)
class SharedExpertGate(Block):
    """Qwen2-MoE's gate on the shared expert: sigmoid(x w), w of d -> 1, times the shared expert's
    output. The product keeps both factors: the sigmoid (one per token) and that output."""

    tokens: Expr
    title = "shared expert gate"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, S.d, 1)
        return _cost(
            tensors=[Tensor(sp.Integer(1), S.d)],  # nn.Linear(d, 1): one row of d
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("sigmoid", self.tokens), ("mul", self.tokens * S.d)],
            saved_bytes=S.e * self.tokens + S.e * self.tokens * S.d,
            bytes_matmul=_linear_bytes(self.tokens, S.d, 1),
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
        )


@dataclass(frozen=True)
class LMHead(Block):
    """Logits over the vocabulary for every position: d -> V (weight tied or its own)."""

    tokens: Expr
    owns_weight: bool
    bias: bool
    scaled_input: bool = False  # the decoder output times d**-0.5 first (T5 with a tied head)
    returns_logits: bool = False  # inference: the caller holds the logits
    width: Expr = S.d  # its input's width (OPT-350m's head reads the d_e-wide projection out)
    title = "output projection to the vocabulary"

    def cost(self) -> Cost:
        forward, backward = _linear(self.tokens, self.width, S.V)
        tensors = ([Tensor(S.V, self.width)] if self.owns_weight else []) + ([S.V] if self.bias else [])
        return _cost(
            tensors=tensors,
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("mul", self.tokens * S.d if self.scaled_input else 0)],
            bytes_matmul=_linear_bytes(self.tokens, self.width, S.V),  # the weight is read, tied or not
            result_bytes=S.e * self.tokens * S.V if self.returns_logits else 0,
        )


@dataclass(frozen=True)
class LogitSoftcap(Block):
    """Gemma 2's final soft-capping, logits -> cap * tanh(logits / cap): two multiplies and a tanh
    over the logits. It keeps tanh's result, in the activation dtype (the loss upcasts after). Its
    own block because tensor parallelism runs it on the gathered logits unless the loss is
    vocabulary-parallel (measured: FINDINGS 10.7)."""

    tokens: Expr
    title = "logit soft-capping"

    def cost(self) -> Cost:
        logits = self.tokens * S.V
        return _cost(
            elements=[("mul", 2 * logits), ("tanh", logits)],
            saved_bytes=S.e * logits,
            bytes_other=3 * elementwise_bytes(logits),
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
