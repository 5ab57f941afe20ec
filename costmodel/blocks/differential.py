"""DiffLlama's differential attention (transformers 5.24's DiffLlamaAttention, Ye et al. 2024,
arXiv:2410.05258): what it adds to one attention's leaves besides its second kernel call.

The class splits the value heads in two halves, repeats each half to h_kv heads (v.repeat(1, 2, 1,
1): two copies), and calls the attention kernel twice with the same queries and keys, once per half
(costmodel/leaves.py places the second call's scores, softmax and weighted sum as leaves of their
own, AttentionCore.second_call). Then it concatenates the two outputs on the last dimension (b, n,
h, 2 d_h), splits that on the heads into two (b, n, h/2, 2 d_h) views and computes

    out = (1 - lambda_init) * RMSNorm_{2 d_h}(out_1 - lambda_full * out_2),
    lambda_full = exp(sum(lambda_q1 * lambda_k1)) - exp(sum(lambda_q2 * lambda_k2)) + lambda_init,

with four learned d_h-vectors a layer and a group RMSNorm (nn.RMSNorm, no weight) over each
2 d_h-wide group; the result goes to o_proj (AttentionOutput, which keeps it).

Kept for backward (measured with saved_tensors_hooks, validate/FINDINGS.md, "New Hugging Face model
types: diffllama and doge (session 22)"): each exp's 0-d fp32 result, lambda_full (0-d, activation
dtype) and the concatenated outputs (the product lambda_full * out_2 keeps both: out_2 is a view of
the concatenation), and the group norm's fp32 input with its fp32 rstd per group (h/2 per token).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import FP32, Expr, elementwise_bytes
from .base import Block, Cost, Tensor, make_cost


@dataclass(frozen=True)
class DifferentialCombine(Block):
    """The lambda vectors, the two outputs' concatenation, their weighted difference, the group
    RMSNorm and its scale (see the module docstring), for q_tokens queries and value_tokens values
    (the values repeated per half: in a decode step, the whole cache)."""

    q_tokens: Expr
    value_tokens: Expr
    title = "differential attention"

    def cost(self) -> Cost:
        values = self.q_tokens * S.h * S.d_h  # one output's elements, and the difference's
        groups = self.q_tokens * S.h / 2
        saved = 2 * FP32 + S.e + S.e * 2 * values + FP32 * (values + groups)
        repeated = 2 * self.value_tokens * S.h_kv * S.d_h  # the two halves, each repeated twice
        elements = [("mul", 2 * S.d_h + 2 * values), ("add", 2 + values), ("rmsnorm", values)]
        moved = (elementwise_bytes(repeated) + elementwise_bytes(2 * values)  # repeat and cat: copies
                 + elementwise_bytes(values) * 3)  # the product, the difference and the scale
        return make_cost(tensors=[Tensor(S.d_h)] * 4, elements=elements, saved_bytes=saved, bytes_other=moved)
