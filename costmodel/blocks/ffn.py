"""The dense feed-forward block (gated or not) and the activations it runs. A mixture of experts' blocks
live beside it: router.py (the router and the MoE layer's input noise) and experts.py (the routed
experts, latent projections and the shared-expert gate).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..config import GATED_ACTIVATIONS
from ..terms import ZERO, Expr, elementwise_bytes, tiled_bytes
from .base import (OTHER_FLOPS_PER_ELEMENT, Backward, BackwardStep, Block, Cost, LinearOp, Profile,
                   linear_bytes, linear_flops, make_cost, weight_and_bias, weight_matrix)


#: ModelConfig.activation -> the elementwise op it runs over d_ff (gated: on the gate projection).
#: A squared ReLU (relu2) runs relu and then a square, one multiply an element (SQUARED below).
ACTIVATION_OPS = {"relu": "relu", "relu2": "relu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "silu": "silu",
                  "swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh", "xielu": "xielu",
                  "relu2_glu": "relu"}
#: xIELU's pointwise kernels over d_ff, for the bytes they move: one per op of OTHER_FLOPS_PER_ELEMENT's
#: count, each op one flop an element (transformers' Python xIELU).
XIELU_KERNELS = OTHER_FLOPS_PER_ELEMENT["xielu"]
#: The activations squared after their op: a second elementwise kernel over d_ff.
SQUARED = ("relu2", "relu2_glu")


@dataclass(frozen=True)
class FeedForward(Block):
    """d -> d_ff -> d with an activation; gated variants (SwiGLU, GeGLU) have a third matrix."""

    tokens: Expr
    activation: str  # a key of ACTIVATION_OPS
    bias: bool
    profile: Profile = Profile()
    inner_dropout: bool = True  # dropout on the hidden layer, where the profile has it
    width: Expr = S.d_ff  # the inner width (a shared expert's: d_s)
    # BitNet's ffn_sub_norm between the gate's product and the down projection, a leaf of its own
    # (costmodel/leaves.py): that norm keeps the product (its input) and down's input (its output)
    sub_norm: bool = False
    # a MoE layer's shared expert: Megatron-Core's "moe" recomputation reruns it with the layer
    # (spec.RECOMPUTED_PARTS "moe_layer"), so it keeps nothing then
    shared_expert: bool = False
    title = "feed-forward network"

    @property
    def recomputed(self) -> bool:
        """Rerun whole in backward with its MoE layer (Megatron-Core's "moe" module)."""
        return self.shared_expert and self.profile.recomputes("moe_layer")

    @property
    def gated(self) -> bool:
        return self.activation in GATED_ACTIVATIONS

    def linear_ops(self) -> tuple[LinearOp, ...]:
        """In the order the forward runs them: gated, down(act(gate(x)) * up(x)) runs the gate,
        then the up projection (one gate_up where fused), then down; ungated, up then down."""
        if self.gated and not self.profile.facts.fused_gate_up:
            inputs = (LinearOp("gate", self.tokens, S.d, self.width, self.bias),
                      LinearOp("up", self.tokens, S.d, self.width, self.bias))
        else:
            inputs = (LinearOp("gate_up" if self.gated else "up", self.tokens, S.d,
                               (2 if self.gated else 1) * self.width, self.bias),)
        return (*inputs, LinearOp("down", self.tokens, self.width, S.d, self.bias))

    def cost(self) -> Cost:
        n_in = 2 if self.gated else 1  # matrices d -> d_ff
        transposed = self.profile.facts.linear_weights_transposed
        if self.gated and self.profile.facts.fused_gate_up:  # one gate_up weight (Phi-3)
            inputs = weight_and_bias(S.d, 2 * self.width, self.bias, transposed)
            matrices = [weight_matrix(S.d, 2 * self.width)]
        else:
            inputs = n_in * weight_and_bias(S.d, self.width, self.bias, transposed)  # (gate,) up
            matrices = [weight_matrix(S.d, self.width, n_in)]
        forward_in, backward_in = linear_flops(self.tokens, S.d, n_in * self.width)
        forward_out, backward_out = linear_flops(self.tokens, self.width, S.d)
        act = ACTIVATION_OPS[self.activation]
        inner = self.tokens * self.width
        squared = self.activation in SQUARED
        # The gate's product with the up projection, and a squared activation's square: a multiply each
        elements = [(act, inner), ("mul", inner * (int(self.gated) + int(squared)))]
        if self.gated and self.profile.facts.swiglu_clamped_copies:  # the gate clamped above, up both ways
            elements += [("clamp_max", inner), ("clamp", inner)]
        xielu = self.activation == "xielu"
        # the bias and activation in the first GEMM's epilogue, their gradients in the second's dgrad epilogue
        # (facts.activation_in_gemm: flash_attn's FusedMLP; its pre-activation, an aux output of the first GEMM
        # and an aux input of the dgrad GEMM, rides those GEMMs): no pass of its own
        in_gemm = self.profile.facts.activation_in_gemm and not self.gated and not squared and not xielu
        return make_cost(
            # xIELU: its alpha_p and alpha_n (one element each), and beta and eps as buffers
            tensors=inputs + weight_and_bias(self.width, S.d, self.bias, transposed) + (
                (sp.Integer(1), sp.Integer(1)) if xielu else ()),
            buffer_bytes=2 * S.e if xielu else 0,
            matrices=[*matrices, weight_matrix(self.width, S.d)],
            flops_matmul=forward_in + forward_out,
            flops_matmul_backward=backward_in + backward_out,
            elements=elements,
            saved_bytes=ZERO if self.recomputed else self.saved(act),
            bytes_matmul=(linear_bytes(self.tokens, S.d, n_in * self.width)
                          + linear_bytes(self.tokens, self.width, S.d)),
            # The activation over d_ff (and, gated, the product with the second projection; squared,
            # the square: one more kernel reading and writing d_ff).
            bytes_other=ZERO if in_gemm else (XIELU_KERNELS if xielu else 1) * elementwise_bytes(inner)
            + (elementwise_bytes(inner, reads=2) if self.gated else 0)
            + (elementwise_bytes(inner) if squared else 0),
            backward_bytes_other=ZERO if in_gemm else None,
            own_kernel=not in_gemm,
            forward_transient_bytes=self.live_no_grad(act),
        )

    def live_no_grad(self, act: str) -> Expr:
        """The d_ff-wide tensors a no-grad forward holds at once: gated, down(act(gate(x)) * up(x))
        holds the activation's output, the up projection's and their product (the gate's output
        freed after the activation); ungated, the up projection's output and the activation's; a
        gelu written in Python (facts.gelu_tanh_python, GPT-2's) x, 0.5 x, x^3 and 0.044715 x^3.
        Measured on the CPU (tests/test_inference_peak.py). Variants with other temporaries
        (clamped, fused, xIELU, squared, FP8, a sub-norm) state none: 0, a lower bound."""
        if (self.activation == "xielu" or self.activation in SQUARED or self.sub_norm
                or self.profile.fp8_activations or (self.gated and (self.profile.facts.swiglu_clamped_copies
                                                                     or self.profile.facts.fused_swiglu
                                                                     or self.profile.facts.fused_gate_up))):
            return ZERO
        python_gelu = act == "gelu_tanh" and self.profile.facts.gelu_tanh_python
        held = 3 if self.gated else 4 if python_gelu else 2
        return held * S.e * self.tokens * self.width

    def backward(self) -> Backward | None:
        """Ungated, with an activation that keeps its input (gelu, silu, as aten runs them) and
        nothing between it and the output matrix: the output matrix's input gradient (tokens x
        d_ff) and weight gradients, then its kept input (the activation's output) goes; the
        activation's input gradient, then its kept input and the first gradient go; the input
        matrix's input gradient (tokens x d) and weight gradients, then the second goes. Its own
        input, counted by the norm before it, goes after (that norm's output_kept). Other FFNs:
        not stated."""
        act = ACTIVATION_OPS[self.activation]
        dropout = self.inner_dropout and "ffn" in self.profile.dropout_sites()
        if self.gated or self.sub_norm or dropout or act not in ("gelu", "silu") \
                or self.activation in SQUARED or self.profile.fp8_activations:
            return None
        inner, bias = S.e * self.tokens * self.width, int(self.bias)
        return Backward(steps=(BackwardStep(inner, params=self.width * S.d + bias * S.d, freed=inner),
                               BackwardStep(inner, freed=2 * inner),
                               BackwardStep(S.e * self.tokens * S.d, params=S.d * self.width + bias * self.width,
                                            freed=inner)),
                        grad_input=S.e * self.tokens * S.d)

    def saved(self, act: str) -> Expr:
        """Hidden tensors (b, len, d_ff) kept for backward; the input is counted by the norm.

        The activation keeps what its backward needs: relu its output, gelu and silu their input,
        a gelu with the tanh approximation written in Python (facts.gelu_tanh_python: GPT-2, BERT
        and T5 in Hugging Face) x, tanh, 0.5*x and 1+tanh. A gate's product keeps both factors.
        The output matrix keeps its input, which for an ungated relu is relu's own output (one
        tensor). Dropout inside the FFN keeps its mask, and the output matrix then keeps
        dropout's output instead. A fused SwiGLU (facts.fused_swiglu, Megatron) keeps its input,
        gate and up, and recomputes the rest: three tensors with the output matrix's input. With
        DeepSeek-V3's FP8 activations (Profile.fp8_activations) a gated FFN's output matrix keeps
        its input in FP8, with its tiles' scales.
        """
        python_gelu = act == "gelu_tanh" and self.profile.facts.gelu_tanh_python
        internal = 4 if python_gelu else 1
        dropout = self.inner_dropout and "ffn" in self.profile.dropout_sites()
        kept = internal + (2 if self.gated else 0) + (0 if self.sub_norm else 1)
        if self.gated and self.profile.facts.swiglu_clamped_copies:
            kept += 2  # the clamped gate and up beside the projections' outputs
        if self.gated and self.profile.facts.fused_swiglu:
            kept = 3  # the fused kernel's input (gate and up) and the output matrix's input
        if self.activation == "relu" and not dropout:
            kept -= 1  # relu's output is the output matrix's input (a squared relu keeps both)
        inner = self.tokens * self.width
        mask = self.profile.mask_bytes * inner if dropout else 0
        if self.activation == "xielu":
            # its input x, alpha_p x, expm1(min(x, eps)) and that minus x, where's bool condition,
            # the softplus'd alpha_p and alpha_n (one element each), the output matrix's input
            return 5 * S.e * inner + inner + 2 * S.e + mask
        if self.gated and self.profile.fp8_activations:  # the output matrix's input cached in FP8
            return (kept - 1) * S.e * inner + tiled_bytes(self.tokens, self.width) + mask
        return kept * S.e * inner + mask
