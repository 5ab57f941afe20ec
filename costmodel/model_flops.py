"""Model FLOPs by a named convention: what MFU divides by (docs/time.md, "Model FLOPs").

Model FLOPs of a training step are the forward and backward matmul and attention FLOPs of the
model as written, with no recomputation of any kind: neither activation recomputation (full or
selective) nor a kernel's own backward recompute of Q K^T (flash attention's). Per leaf that is
its forward matmul FLOPs plus its backward's products (input gradients, and weight gradients where
the weights train: the tree's flops_matmul_backward), except that the attention core's backward
is always 2 x its forward (the gradients of its two inputs), whichever kernel runs.

The conventions differ only in the attention core of causal self-attention:
  dense   every (query, key) pair, as PaLM's 6N + 12 L H Q T per token (Chowdhery et al. 2022,
          appendix B) and Korthikanti et al. 2022's 72 B s l h^2 (1 + s/(6h) + V/(12 l h));
  causal  half of them, as Megatron-LM's num_floating_point_operations (training.py: "only half
          of the attention matrix is non-zero and needs to be multiplied with V").
Hardware FLOPs (HFU) are what the kernels execute: recomputation included.

Multi-token prediction (ModelConfig.mtp_layers) counts in model FLOPs, as in Megatron-LM's: each
depth's eh_proj, layer and logit GEMM (tests/test_mtp.py: DeepSeek-V3's total equals
num_floating_point_operations' with mtp_num_layers 1 but for the conventions stated there; its
hybrid formula leaves each depth's eh_proj and router out, which ours count).
"""

from __future__ import annotations

from typing import Any, Iterable

from .config import ConfigError, show
from .spec import FLOPS_CONVENTIONS


def check_convention(convention: str) -> str:
    if convention not in FLOPS_CONVENTIONS:
        raise ConfigError(f"flops convention must be one of {', '.join(FLOPS_CONVENTIONS)}, got {show(convention)}.")
    return convention


def leaf_model_flops(leaf: Any, convention: str = "dense") -> Any:
    """One run of a leaf's model FLOPs (forward + backward, no recomputation)."""
    from .blocks import AttentionCore

    cost = leaf.cost
    if isinstance(leaf.block, AttentionCore):
        forward = cost.flops_matmul
        if check_convention(convention) == "causal" and leaf.block.causal and not leaf.block.cross:
            forward = forward / 2
        return 3 * forward
    return cost.flops_matmul + cost.flops_matmul_backward


def model_flops(leaves: Iterable[Any], convention: str = "dense") -> Any:
    """A training pass's model FLOPs over these leaves (each leaf times its layers)."""
    import sympy as sp  # not at import: plan imports this module and runs without sympy

    return sp.Add(*(leaf.count * leaf_model_flops(leaf, convention) for leaf in leaves))


def palm_model_flops(matmul_params: int, layers: int, heads: int, head_dim: int, seq_len: int,
                     tokens: int) -> int:
    """PaLM's model FLOPs of `tokens` tokens: (6 N + 12 L H Q T) per token, N the parameters the
    tokens multiply by (the output head's included)."""
    return tokens * (6 * matmul_params + 12 * layers * heads * head_dim * seq_len)


def megatron_model_flops(batch: int, seq_len: int, layers: int, hidden: int, ffn_hidden: int,
                         vocabulary: int, heads: int, kv_heads: int | None = None,
                         head_dim: int | None = None, gated: bool = False) -> float:
    """Megatron-LM's num_floating_point_operations (megatron/training/training.py, dense
    models): 12 B s L h^2 ((1 + g/a + s/(2h)) q/h + f/h m + V/(2 L h)), with g the query groups,
    a the heads, q the query projection size, f the FFN size, m 3/2 for a gated FFN."""
    kv_heads = kv_heads or heads
    query = (head_dim or hidden // heads) * heads
    attention = (1 + kv_heads / heads + seq_len / hidden / 2) * query / hidden
    mlp = ffn_hidden / hidden * (1.5 if gated else 1)
    logits = vocabulary / (2 * layers * hidden)
    return 12 * batch * seq_len * layers * hidden * hidden * (attention + mlp + logits)
