"""What surrounds a layer's sublayers: norms (and Qwen3's per-head query and key norms), residual
adds, dropout, the input a recomputed layer keeps, and the outputs an op policy keeps.

norm_saved is what a norm keeps for backward; latent attention's own norms use it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..facts import Facts
from ..terms import FP32, ZERO, Expr, dtype_bytes, elementwise_bytes, unless_fp32
from .base import Backward, BackwardStep, Block, Cost, Profile, Tensor, make_cost


def norm_saved(kind: str, rows: Expr, width: Expr, facts: Facts, input_kept: bool = True,
                output_kept: bool = True, recomputed: bool = False, affine: bool = True) -> Expr:
    """Bytes a norm over rows x width keeps for backward (see Norm.saved); an RMSNorm without a
    weight (affine False: NanoChat's, Llama 4's L2 norm) keeps no normalised tensor for one to
    multiply, its output being that tensor (cast back). A recomputed norm
    (Profile.recomputes("norms")) keeps only its input, as passed to it, and nothing it computes:
    its statistics and output are rebuilt in backward (Megatron-LM's output-discarding checkpoint,
    CheckpointWithoutOutput, saves the function's inputs only)."""
    values = rows * width
    if recomputed:
        return S.e * values if input_kept else ZERO
    if kind == "layernorm" and facts.layernorm_python_fp32:
        # x - mean twice (the variance's and x_hat's, two subtractions) and x_hat in fp32, rsqrt
        # per row, w.to(fp32) when w is narrower; the output w * x_hat (cast back); not the input
        output = S.e * values if output_kept else ZERO
        return FP32 * (3 * values + rows) + unless_fp32(FP32 * width) + output
    output = S.e * values if output_kept else ZERO
    if not facts.norm_keeps_stats:  # its input and its output (the next linear's input) only
        return (S.e * values if input_kept else ZERO) + output
    if kind == "layernorm" and facts.layernorm_fp32:  # on x.float(): that copy, fp32 statistics
        return (FP32 * values if input_kept else unless_fp32(FP32 * values)) + 2 * FP32 * rows + output
    if kind == "layernorm":
        # LayerNorm1P's weight + 1, which aten's layer_norm keeps as its weight
        plus_one = S.e * width if facts.layernorm_weight_plus_one else ZERO
        return (S.e * values if input_kept else ZERO) + 2 * S.e * rows + plus_one + output
    x_hat = rmsnorm_x_hat(values, facts, affine)  # the normalised tensor the weight multiplies
    if facts.norm_dtype == "activation":
        return (S.e * values if input_kept else ZERO) + S.e * rows + x_hat + output
    size = dtype_bytes(facts.norm_dtype)
    # x.to(float32) is the input itself in an fp32 model (then shared with whoever keeps it), a
    # new fp32 copy otherwise.
    saved = (size * values if input_kept else unless_fp32(size * values)) + size * rows + output
    if facts.rmsnorm_pow_stats:  # pow(mean + eps, -0.5) keeps its input beside the product's rsqrt
        saved += size * rows
    saved += x_hat
    if facts.rmsnorm_weight_fp32:  # (x_hat * (1 + w.float())).type_as(x): and the fp32 (1 + w)
        saved += size * width
    elif facts.rmsnorm_weight_times_fp32 and facts.rmsnorm_weight_cast_fp32:
        saved += unless_fp32(size * width)  # w.to(float32): a new fp32 copy unless w is fp32
    if facts.norm_keeps_uncast_input:
        saved += unless_fp32(S.e * values)
    return saved


def rmsnorm_x_hat(values: Expr, facts: Facts, affine: bool = True) -> Expr:
    """Bytes of the normalised tensor an RMSNorm keeps only for its weight's gradient (a frozen
    weight frees it: costmodel/finetune.py): x_hat cast back, or in fp32 where the weight
    multiplies the fp32 x_hat (facts.rmsnorm_weight_fp32, Gemma's (1 + w); rmsnorm_weight_times_fp32,
    OLMo 2's); none without a weight."""
    if facts.norm_dtype != "activation" and (facts.rmsnorm_weight_fp32 or facts.rmsnorm_weight_times_fp32):
        return dtype_bytes(facts.norm_dtype) * values
    return S.e * values if affine else ZERO


def fp32_input_norm_bytes(values: Expr, rerun: bool) -> tuple[Expr, Expr]:
    """Traffic of a norm over `values` elements that reads an fp32 copy of its input, forward and
    backward, as InternLM's layer runs it (InternLM/InternLM c18bec93 internlm/model/modeling_internlm.py
    _dropout_and_norm_attn / _ffn: self.norm1(_residual.float()) with apex's MixedFusedRMSNorm, whose
    output takes the bf16 weight's dtype and whose input gradient the input's, fp32):
      forward   the cast (read e, write 4) and the norm (read 4, write e): 2e + 8 bytes a value;
      backward  the norm's (read the output's gradient e and the fp32 input 4, write the fp32 input
                gradient 4) and the cast's (read 4, write e): 2e + 12; with `rerun` (the function
                checkpointed: dropout_selective_checkpoint, on where the layer is not recomputed whole)
                the forward again first: 4e + 20. The dropout (p 0 there) launches nothing."""
    forward = (2 * S.e + 2 * FP32) * values
    backward = (2 * S.e + 3 * FP32) * values
    return forward, backward + (forward if rerun else 0)


def dropout_add_norm_bytes(values: Expr, residual: Expr, mask: Expr, returns_residual: bool) -> tuple[Expr, Expr]:
    """Traffic of flash_attn's dropout_add_layer_norm over `values` elements (facts.dropout_add_norm:
    Dao-AILab/flash-attention 30fd8c17 flash_attn/ops/layer_norm.py DropoutAddLayerNormFn, csrc/layer_norm/ln_api.cpp
    dropout_add_ln_fwd and dropout_add_ln_bwd), `residual` bytes a residual element (4 under residual_in_fp32),
    `mask` bytes a dropout mask element (uint8; 0 without dropout):
      forward   reads the sublayer's output x0 (e) and the residual (r), writes the new residual x (r), the mask
                and the normalised output z (e): 2e + 2r + mask;
      backward  reads z's gradient (e), x (r) and the mask, and where the kernel returned the residual (prenorm,
                every layer's norm; not the final ln_f, prenorm=False) that residual's gradient (r); writes x0's
                gradient (e) and the residual's (r): 2e + 2r + mask (+ r).
    mu and rsigma (fp32 a row) and the weights' partial sums are a row's or a column's, not an element's: left out.
    The first layer's kernel reads no residual (the embeddings'; residual None) and writes no residual gradient:
    priced as every layer's."""
    forward = (2 * S.e + 2 * residual + mask) * values
    backward = (2 * S.e + 2 * residual + mask + (residual if returns_residual else 0)) * values
    return forward, backward


@dataclass(frozen=True)
class Norm(Block):
    """LayerNorm (weight and bias, or weight only: bias False) or RMSNorm (weight only) over d
    (or another width); affine False: neither (OLMo 1's LayerNorm)."""

    tokens: Expr
    kind: str  # "layernorm" | "rmsnorm"
    profile: Profile = Profile()
    width: Expr = S.d
    input_kept: bool = True  # False: another norm keeps the same input (parallel attention/FFN)
    output_kept: bool = True  # False: only a residual add reads it (Gemma 2's post-sublayer norms)
    affine: bool = True
    bias: bool = True  # a LayerNorm's bias (False: weight only, MPT's)
    before_experts: bool = False  # the norm before a layer's routed experts (recompute "moe_norms")
    # the dropout and residual add before it run in its kernel (facts.dropout_add_norm): "layer" (a layer's
    # pre-norm, which returns the residual), "final" (the stack's last norm, which does not), "" (none)
    dropout_add: str = ""
    title = "norm"

    def cost(self) -> Cost:
        tensors = ([] if not self.affine else [self.width, self.width]
                   if self.kind == "layernorm" and self.bias else [self.width])
        values = self.tokens * self.width
        python = self.kind == "layernorm" and self.profile.facts.layernorm_python_fp32
        weights = S.e * sp.Add(*tensors)
        forward, backward = elementwise_bytes(values) + weights, None
        if self.profile.fp32_norm_input:  # InternLM's norm(residual.float()), checkpointed
            forward, backward = fp32_input_norm_bytes(values, rerun=self.profile.recompute != "full")
            forward, backward = forward + weights, backward + 2 * weights
        elif self.dropout_add:  # flash_attn's dropout_add_layer_norm: the residual add's and dropout's passes too
            forward, backward = dropout_add_norm_bytes(values, self.residual_bytes, self.residual_mask_bytes,
                                                       returns_residual=self.dropout_add == "layer")
            forward, backward = forward + weights, backward + 2 * weights
        return make_cost(
            tensors=tensors,
            elements=[("layernorm_python" if python else self.kind, values)],
            saved_bytes=self.saved(),
            bytes_other=forward,
            backward_bytes_other=backward,
        )

    def saved(self) -> Expr:
        """Kept for backward, including the output (the next linear keeps it as its input).

        RMSNorm: the input, the rsqrt per token, the normalised tensor (multiplied by the weight),
        the output; computed in fp32 (facts.norm_dtype) it keeps the input and rsqrt in fp32, and
        an implementation that multiplies the un-cast input (facts.norm_keeps_uncast_input, T5)
        keeps that too; one that multiplies by (1 + weight) in fp32 before casting
        (facts.rmsnorm_weight_fp32, Gemma) keeps the fp32 normalised tensor and the fp32 (1 + w)
        instead of the cast. LayerNorm (aten.native_layer_norm): the input, mean and rstd per
        token (in the activation dtype on the CPU), the output, and Nemotron's weight + 1
        (facts.layernorm_weight_plus_one); Cohere's LayerNorm in Python in
        fp32 (facts.layernorm_python_fp32) keeps two copies of x - mean, x_hat and rsqrt in fp32 and
        the output.
        """
        if self.dropout_add and not self.recomputed:  # x (the residual, its dtype), fp32 mu and rsigma, z
            output = S.e * self.tokens * self.width if self.output_kept else ZERO
            return self.residual_bytes * self.tokens * self.width + 2 * FP32 * self.tokens + output
        return norm_saved(self.kind, self.tokens, self.width, self.profile.facts,
                          self.input_kept, self.output_kept, self.recomputed, self.affine)

    @property
    def residual_bytes(self) -> Expr:
        """Bytes a residual element where the norm runs the residual add (facts.dropout_add_norm): 4 under
        residual_in_fp32 ("fp32"), else the activation's."""
        return FP32 if self.profile.facts.dropout_add_norm == "fp32" else S.e

    @property
    def residual_mask_bytes(self) -> Expr:
        """The dropout mask's bytes an element where dropout runs on the sublayers' outputs, else 0."""
        return self.profile.mask_bytes if "sublayer" in self.profile.dropout_sites() else ZERO

    def backward(self) -> Backward | None:
        """aten's LayerNorm backward (weight and bias, statistics in the activation dtype): its
        input's gradient and the weight gradients at once, then its input and statistics go; its
        output goes with the next block's backward. Other norms: not stated."""
        facts = self.profile.facts
        plain = (self.kind == "layernorm" and self.affine and self.bias and self.input_kept and not self.dropout_add
                 and facts.norm_keeps_stats and not facts.layernorm_python_fp32 and not facts.layernorm_fp32
                 and not facts.layernorm_weight_plus_one and not self.recomputed)
        if not plain:
            return None
        values = S.e * self.tokens * self.width
        output = values if self.output_kept else ZERO
        return Backward(steps=(BackwardStep(values, params=self.cost().params, freed=self.saved() - output),),
                        grad_input=values, output_kept=output)

    @property
    def recomputed(self) -> bool:
        """Rerun in backward (recompute "deepseek"; "layernorm-moe-act" the norm before routed
        experts only): it keeps its input only."""
        return self.profile.recomputes("norms") or (self.before_experts and self.profile.recomputes("moe_norms"))


def _weightless_saved(rows: Expr, width: Expr, facts: Facts, recomputed: bool, shared: bool = False) -> Expr:
    """Bytes a weightless RMSNorm over rows x width keeps whose output another block keeps (Gemma
    4's v_norm): its input in the norm's dtype and its statistics (two a row with pow's). shared:
    its input is the key norm's too (attention_k_eq_v), so in an fp32 model x.float() is that tensor."""
    if recomputed:
        return ZERO if shared else S.e * rows * width
    size = S.e if facts.norm_dtype == "activation" else dtype_bytes(facts.norm_dtype)
    values = unless_fp32(size * rows * width) if shared else size * rows * width
    return values + size * rows * (2 if facts.rmsnorm_pow_stats else 1)


@dataclass(frozen=True)
class HeadNorms(Block):
    """Qwen3's q_norm and k_norm: an RMSNorm over each query and each key head (d_h wide), before
    RoPE. Their outputs go on to RoPE, which keeps only cos and sin: nothing keeps them.
    whole: OLMo 2's, one RMSNorm over the whole query projection (h d_h wide) and one over the
    whole key projection (h_kv d_h), each with a weight that wide. facts.value_rmsnorm (Gemma 4's
    v_norm): a third, weightless RMSNorm over each value head, whose fp32 input and statistics
    backward keeps (its cast output is the value the attention keeps)."""

    q_tokens: Expr
    kv_tokens: Expr
    profile: Profile = Profile()
    whole: bool = False
    kind: str = "rmsnorm"  # "layernorm": Persimmon's, a LayerNorm with a weight and bias per head
    head_dim: Expr = S.d_h  # the width of every head (Gemma 4's full layers: d_hg)
    values_are_keys: bool = False  # the value norm reads the keys' projection (Gemma 4's attention_k_eq_v)
    kv_shared: bool = False  # the query norm alone: K and V are an earlier layer's (num_kv_shared_layers)
    kv_heads: Expr = S.h_kv  # its KV heads (Gemma 4's full layers: h_kvg)
    title = "query and key norms"

    def cost(self) -> Cost:
        facts, recomputed = self.profile.facts, self.profile.recomputes("norms")
        # (rows, width) of the query and the key norm
        if self.whole:
            norms = ((self.q_tokens, S.h * self.head_dim), (self.kv_tokens, self.kv_heads * self.head_dim))
        else:
            norms = ((self.q_tokens * S.h, self.head_dim), (self.kv_tokens * self.kv_heads, self.head_dim))
        norms = norms[:1] if self.kv_shared else norms
        value_rows = self.kv_tokens * self.kv_heads if facts.value_rmsnorm and not self.whole else ZERO  # Gemma 4's v_norm
        values = sp.Add(*(rows * width for rows, width in norms)) + value_rows * self.head_dim
        per_norm = 2 if self.kind == "layernorm" else 1  # a weight, and a LayerNorm's bias
        tensors = [width for _, width in norms for _ in range(per_norm)]
        # two norms: Gemma 3's each keep their own fp32 (1 + w)
        saved = sum(norm_saved(self.kind, rows, width, facts, output_kept=False,
                               recomputed=recomputed) for rows, width in norms)
        saved += _weightless_saved(value_rows, self.head_dim, facts, recomputed, self.values_are_keys)
        if facts.fused_qkv and self.kind == "layernorm" and not recomputed:
            # Persimmon: the LayerNorms keep their inputs as views of the fused q/k/v output,
            # whose storage holds the values too (measured: NativeLayerNormBackward0's input)
            saved += S.e * self.kv_tokens * self.kv_heads * self.head_dim
        return make_cost(
            tensors=tensors,
            elements=[(self.kind, values)],
            saved_bytes=saved,
            bytes_other=elementwise_bytes(values) + S.e * sp.Add(*tensors),
        )


@dataclass(frozen=True)
class HeadL2Norms(Block):
    """Llama 4's qk_norm (Llama4TextL2Norm): x * rsqrt(mean(x^2) + eps) over each query and key
    head (d_h wide) after RoPE, computed in fp32 (x.float()), no weight. Kept for backward: the
    fp32 input (pow and the multiply keep the same copy) and the fp32 rsqrt per head row; the
    output, cast back, goes on to the scores, which keep their own copy."""

    q_tokens: Expr
    kv_tokens: Expr
    title = "query and key L2 norms"

    def cost(self) -> Cost:
        rows = self.q_tokens * S.h + self.kv_tokens * S.h_kv
        values = rows * S.d_h
        return make_cost(elements=[("rmsnorm", values)], saved_bytes=FP32 * (values + rows),
                         bytes_other=elementwise_bytes(values))


@dataclass(frozen=True)
class ClipQKV(Block):
    """OLMo's clip_qkv: the q, k and v projections clamped in place; autograd keeps a copy of
    each as it was before the clamp (an in-place op whose backward reads its input)."""

    q_tokens: Expr
    kv_tokens: Expr
    title = "q/k/v clamp"

    def cost(self) -> Cost:
        values = (self.q_tokens * S.h + 2 * self.kv_tokens * S.h_kv) * S.d_h
        return make_cost(elements=[("clamp", values)], saved_bytes=S.e * values,
                         bytes_other=elementwise_bytes(values))


@dataclass(frozen=True)
class SublayerInput(Block):
    """The input a sublayer's first linears keep where no norm before the sublayer keeps it as
    its output (OLMo 2: norms only after the sublayers): tokens x d, the residual stream."""

    tokens: Expr
    title = "sublayer input kept"

    def cost(self) -> Cost:
        return make_cost(saved_bytes=S.e * self.tokens * S.d)


@dataclass(frozen=True)
class OutputBias(Block):
    """A d-wide bias added to one sublayer's output (GPT-NeoX-Japanese's dense_bias on its last layer's
    attention, added before the dropout, ModelConfig.last_out_bias): d parameters and one add, which
    keeps nothing for backward."""

    tokens: Expr
    title = "output bias"

    def cost(self) -> Cost:
        values = self.tokens * S.d
        return make_cost(tensors=[Tensor(S.d)], elements=[("add", values)],
                         bytes_other=elementwise_bytes(values, reads=2))


@dataclass(frozen=True)
class Residual(Block):
    """x + sublayer(x); scaled: x + sublayer(x) * a Python number first (Granite's
    residual_multiplier: one more pointwise op, which keeps nothing for backward); layer_scalar:
    the sum then multiplied in place by a one-element buffer (Gemma 4's, facts.layer_scalar_buffer),
    which keeps nothing either; vector: the residual stream times a learned d-vector before the add
    (Doge's input_residual and post_attention_residual: d parameters, and the product keeps the
    stream, e t d bytes, which in fp32 is the storage the norm before the sublayer keeps already)."""

    tokens: Expr
    scaled: bool = False
    layer_scalar: bool = False
    vector: bool = False
    in_norm: bool = False  # the next norm's kernel adds it (facts.dropout_add_norm: Norm.dropout_add)
    title = "residual add"

    def cost(self) -> Cost:
        values = self.tokens * S.d
        if self.in_norm:
            return make_cost(elements=[("add", values)], bytes_other=ZERO, backward_bytes_other=ZERO, own_kernel=False)
        muls = int(self.scaled) + int(self.layer_scalar) + int(self.vector)
        return make_cost(tensors=[Tensor(S.d)] if self.vector else [],
                         elements=[("add", values), ("mul", muls * values)],
                         # the stream is the next norm's input: in fp32 that norm's x.float() is it
                         saved_bytes=unless_fp32(S.e * values) if self.vector else 0,
                         bytes_other=elementwise_bytes(values, reads=2)
                         + muls * elementwise_bytes(values),
                         buffer_bytes=S.e if self.layer_scalar else 0)

    def backward(self) -> Backward | None:
        """The plain add passes its gradient to both inputs as it is: along the skip and into the
        sublayer, summed (a new tokens x d tensor) where they meet at the sublayer's input. Scaled
        or multiplied by a layer scalar: not stated."""
        if self.scaled or self.layer_scalar:
            return None
        return Backward(skip=S.e * self.tokens * S.d)


@dataclass(frozen=True)
class Dropout(Block):
    """Training-time dropout over tokens x width: keeps its mask for backward (its output takes
    the place of its input wherever the next op keeps one, so it adds nothing else)."""

    tokens: Expr
    width: Expr
    profile: Profile = Profile()
    in_norm: bool = False  # the next norm's kernel runs it (facts.dropout_add_norm: Norm.dropout_add)
    title = "dropout"

    def cost(self) -> Cost:
        elements = self.tokens * self.width
        return make_cost(elements=[("mul", elements)], saved_bytes=self.profile.mask_bytes * elements,
                         own_kernel=not self.in_norm)

    def backward(self) -> Backward:
        """Its gradient times the kept mask, a new tensor; then the mask goes."""
        elements = self.tokens * self.width
        return Backward(steps=(BackwardStep(S.e * elements, freed=self.profile.mask_bytes * elements),),
                        grad_input=S.e * elements)


@dataclass(frozen=True)
class LayerCheckpoint(Block):
    """Full recomputation keeps each layer's input (tokens x d) and nothing else of the layer; its
    backward reruns the layer's forward (Korthikanti et al. 2022, section 4)."""

    tokens: Expr
    title = "layer input kept for recomputation"

    def cost(self) -> Cost:
        return make_cost(saved_bytes=S.e * self.tokens * S.d)


@dataclass(frozen=True)
class KeptOutputs(Block):
    """Outputs of a block's ops that torchtitan's op policy keeps through the forward (recompute
    "torchtitan-op", costmodel/op_checkpoint.py): `saved` bytes of the `source` block's outputs,
    which also says how tensor parallelism splits them (layout/split.py)."""

    source: Block
    saved: Expr
    title = "outputs the op policy keeps"

    def cost(self) -> Cost:
        return make_cost(saved_bytes=self.saved)
