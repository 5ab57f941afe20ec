"""Gemma 4's per-layer inputs (ModelConfig.per_layer_input, p; transformers 5.24
models/gemma4/modeling_gemma4.py, Gemma4TextModel and Gemma4TextDecoderLayer).

Before the layers (PerLayerEmbeddings): a second table of V_pl rows, each L p wide (one p-wide slice
for each decoder layer), scaled by sqrt(p) like the token table (embed_tokens_per_layer); a bias-free
d -> L p projection of the scaled token embeddings times d^-1/2 (per_layer_model_projection), an
RMSNorm over each p-wide slice (per_layer_projection_norm), and (projection + lookup) / sqrt(2).
In each layer after the FFN's residual add (PerLayerInput): a d -> p gate, the model's activation,
times that layer's slice, a p -> d projection, an RMSNorm over d and a residual add.

What backward keeps (measured, tests/test_hf_gemma4.py): the projection's input (the scaled
embeddings, layer 0's first norm keeps an fp32 copy of them unless the model is fp32, when that copy
is the tensor itself), the slice norm's fp32 work (norm_saved, its output read by an add only) and the
combined L p inputs, one tensor whose slices every layer's product keeps (and Gemma 3n's copy of the
token ids, facts.per_layer_ids_copied); in a layer, the gate's input
(the FFN residual's output), the activation's input, its output and the product (the factor and the
projection's input), and the d-wide norm's work, its output read by the residual add only.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import INDEX, Expr, elementwise_bytes, unless_fp32
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix
from .ffn import ACTIVATION_OPS
from .norms import norm_saved


def _norm_saved(tokens: Expr, width: Expr, profile: Profile) -> Expr:
    """An RMSNorm whose output only an add reads (Norm with output_kept False)."""
    return norm_saved("rmsnorm", tokens, width, profile.facts, output_kept=False,
                      recomputed=profile.recomputes("norms"))


@dataclass(frozen=True)
class PerLayerEmbeddings(Block):
    """The per-layer inputs every layer reads, made once before the layers."""

    tokens: Expr
    profile: Profile = Profile()
    title = "per-layer input embeddings"

    def cost(self) -> Cost:
        width = S.L_dec * S.p_l
        values = self.tokens * width
        forward, backward = linear_flops(self.tokens, S.d, width)
        buffer = S.e if self.profile.facts.embed_scale_buffer else 0  # its own embed_scale
        return make_cost(
            tensors=[Tensor(S.V_pl, width), Tensor(width, S.d), Tensor(S.p_l)],
            matrices=[weight_matrix(S.d, width)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            # the table's scale, the projection's, the slice norm, the sum and its 2^-1/2
            elements=[("mul", 3 * values), ("rmsnorm", values), ("add", values)],
            saved_bytes=unless_fp32(S.e * self.tokens * S.d) + _norm_saved(self.tokens * S.L_dec, S.p_l, self.profile)
            + S.e * values + (INDEX * self.tokens if self.profile.facts.per_layer_ids_copied else 0),
            bytes_matmul=linear_bytes(self.tokens, S.d, width),
            bytes_other=5 * elementwise_bytes(values),
            buffer_bytes=buffer,
        )


@dataclass(frozen=True)
class PerLayerInput(Block):
    """One layer's gate on its per-layer input, after the FFN's residual add."""

    tokens: Expr
    activation: str  # the model's (ModelConfig.activation, a key of ACTIVATION_OPS)
    profile: Profile = Profile()
    title = "per-layer input gate"

    def cost(self) -> Cost:
        narrow, wide = self.tokens * S.p_l, self.tokens * S.d
        gate, gate_backward = linear_flops(self.tokens, S.d, S.p_l)
        out, out_backward = linear_flops(self.tokens, S.p_l, S.d)
        return make_cost(
            tensors=[Tensor(S.p_l, S.d), Tensor(S.d, S.p_l), Tensor(S.d)],
            matrices=[weight_matrix(S.d, S.p_l), weight_matrix(S.p_l, S.d)],
            flops_matmul=gate + out,
            flops_matmul_backward=gate_backward + out_backward,
            elements=[(ACTIVATION_OPS[self.activation], narrow), ("mul", narrow), ("rmsnorm", wide),
                      ("add", wide)],
            saved_bytes=S.e * wide + 3 * S.e * narrow + _norm_saved(self.tokens, S.d, self.profile),
            bytes_matmul=linear_bytes(self.tokens, S.d, S.p_l) + linear_bytes(self.tokens, S.p_l, S.d),
            bytes_other=elementwise_bytes(narrow) + elementwise_bytes(narrow, reads=2)
            + 2 * elementwise_bytes(wide),
        )
