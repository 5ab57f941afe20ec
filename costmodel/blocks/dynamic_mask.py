"""Doge's dynamic mask attention (transformers 5.24's DogeAttention.prepare_dynamic_mask): a mask
learned from the values, added to the scores.

dt_proj maps each key's values (h_kv heads of d_h, the cache's: a copy of the values transposed
back to (b, k, h_kv d_h)) to one number per KV head; exp(A * softplus(.)) with a learned A per KV
head; expanded over the queries and masked with the causal mask (masked_fill, which keeps its
bool condition, (b, 1, n_q, k)); repeated to the h query heads and added to the scores. The mask
needs gradients, so sdpa runs its math path (Profile.kernel's bias_needs_grad, as T5's trained
bias). Kept for backward (measured with saved_tensors_hooks, validate/FINDINGS.md, "New Hugging
Face model types: diffllama and doge (session 22)"): dt_proj's input copy, its output (softplus's
input), softplus's output (the product with A keeps it), exp's output, and the bool condition. The
top-k masking past keep_window_size keys is not modelled (hf_llama_variants.py refuses a
keep_window_size under max_position_embeddings).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import Expr, elementwise_bytes
from .base import Block, Cost, Tensor, linear_bytes, linear_flops, make_cost, weight_and_bias, weight_matrix


@dataclass(frozen=True)
class DynamicMask(Block):
    """dt_proj (h_kv d_h -> h_kv, with attention_bias's bias) over key_tokens keys, A, and the mask
    of q_len queries by k_len keys per sequence (see the module docstring)."""

    key_tokens: Expr  # b * k_len: every key the layer attends to (the cache's, in a decode step)
    q_len: Expr
    k_len: Expr
    bias: bool = False
    title = "dynamic mask"

    def cost(self) -> Cost:
        width = S.h_kv * S.d_h
        forward, backward = linear_flops(self.key_tokens, width, S.h_kv)
        states = self.key_tokens * S.h_kv  # one number per key and KV head
        masked = S.b * S.h_kv * self.q_len * self.k_len
        saved = S.e * self.key_tokens * width + 3 * S.e * states + S.b * self.q_len * self.k_len
        return make_cost(
            tensors=[*weight_and_bias(width, S.h_kv, self.bias), Tensor(S.h_kv)],
            matrices=[weight_matrix(width, S.h_kv)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("softplus", states), ("mul", states), ("exp", states)],
            saved_bytes=saved,
            bytes_matmul=linear_bytes(self.key_tokens, width, S.h_kv),
            # the values' copy, the three pointwise ops, the masked fill and the repeat to h heads
            bytes_other=elementwise_bytes(self.key_tokens * width) + 3 * elementwise_bytes(states)
            + elementwise_bytes(masked) + elementwise_bytes(masked * S.h / S.h_kv),
        )
