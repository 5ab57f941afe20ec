"""The eager kernels Megatron-Core runs around GPT-OSS's fused ones, counted by running its code on the CPU
(kernel_facts.json "megatron_gpt_oss_eager" holds the counts; tests/test_gpt_oss_megatron_ops.py checks them
here).

    PYTHONPATH=. python validate/gpt_oss_megatron_ops.py

Three pieces of NVIDIA/Megatron-LM, the same at every submodule commit of the rows' Megatron-Bridge releases
(92c8482e6d for 25.11 through 24bad8e677 for 26.08; fused_bias_geglu.py unchanged since 2e29a5e1e3, 2025-09-09):
- the clamp of weighted_bias_quick_geglu_impl (megatron/core/fusions/fused_bias_geglu.py, 44151194 lines
  410-441): with activation_func_clamp_value set (the GPT-OSS bridge's 7.0) the fc1 output is chunked, each
  half clamped and the halves concatenated in eager torch before the torch.compile'd weighted quick-GEGLU,
  which TEGroupedMLP calls under bias_activation_fusion (experts.py 44151194 lines 660-670) wherever the
  Transformer Engine op fuser is off;
- the unfused rotary embedding (megatron/core/models/common/embeddings/rope_utils.py 44151194 lines 73-126,
  _rotate_half and _apply_rotary_pos_emb_bshd), which apply_rotary_pos_emb (lines 250-316) runs for the query
  and the key (attention.py lines 1230-1250) when apply_rope_fusion is off or mscale != 1: GPT-OSS's YaRN
  (position_embedding_type 'yarn', Megatron-Bridge gpt_oss_bridge.py at 21d102f5e) has mscale
  0.1 ln 32 + 1 = 1.347 (yarn_rotary_pos_embedding.py _yarn_get_concentration_factor), and the bridge's
  fusions.validate_rope_fusion_compatibility turns apply_rope_fusion off for any position type but 'rope';
- TEGroupedMLP._apply_bias (experts.py 44151194 lines 295-312): fc2's bias times the routing weights added
  expert by expert, whose forward the tree's expert leaf already prices (facts.json expert_bias "megatron").
Every aten op here that is not a view launches one kernel (router_fusion_ops.KernelRecorder).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from validate.router_fusion_ops import KernelRecorder


def _clamp(input, clamp_value):  # fused_bias_geglu.py:424-433
    x_glu, x_linear = input.chunk(2, -1)
    return torch.cat((x_glu.clamp(min=None, max=clamp_value), x_linear.clamp(min=-clamp_value, max=clamp_value)), -1)


def _rotate_half(x):  # rope_utils.py:73-84 (not interleaved)
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _rope_bshd(t, freqs, mscale):  # rope_utils.py:92-126 (not latent attention)
    rot_dim = freqs.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    cos_ = (torch.cos(freqs) * mscale).to(t.dtype)
    sin_ = (torch.sin(freqs) * mscale).to(t.dtype)
    t = (t * cos_) + (_rotate_half(t) * sin_)
    return torch.cat((t, t_pass), dim=-1)


def _apply_bias(intermediate_parallel, bias_parallel, tokens_per_expert, permuted_probs):  # experts.py:295-312
    shape = intermediate_parallel.shape
    return (torch.cat([t + b * p for t, b, p in zip(torch.split(intermediate_parallel.view(-1, shape[-1]),
                                                                tokens_per_expert), bias_parallel,
                                                    torch.split(permuted_probs, tokens_per_expert))])
            .view(shape).to(intermediate_parallel.dtype))


def _passes(run: Any, output_of: Any) -> dict[str, list[tuple[str, int]]]:
    """The kernels of `run()` (forward) and of its output's backward, each (op, bytes)."""
    forward, backward = KernelRecorder(), KernelRecorder()
    with forward:
        out = run()
    grad = torch.randn_like(output_of(out))
    with backward:
        output_of(out).backward(grad)
    return {"forward": forward.ops, "backward": backward.ops}


def clamp_kernels(slots: int, hidden: int, dtype: torch.dtype = torch.bfloat16) -> dict[str, Any]:
    """One MoE layer's clamp of the (slots, 2 hidden) fc1 output, forward and backward."""
    torch.manual_seed(0)
    x = torch.randn(slots, 2 * hidden, dtype=dtype, requires_grad=True)
    return _passes(lambda: _clamp(x, 7.0), lambda out: out)


def rope_kernels(seq: int, batch: int, heads: int, head_dim: int, dtype: torch.dtype = torch.bfloat16) -> dict[str, Any]:
    """One apply_rotary_pos_emb call on (seq, batch, heads, head_dim), YaRN's mscale, forward and backward."""
    torch.manual_seed(0)
    t = torch.randn(seq, batch, heads, head_dim, dtype=dtype, requires_grad=True)
    freqs = torch.randn(seq, 1, 1, head_dim, dtype=torch.float32)
    return _passes(lambda: _rope_bshd(t, freqs, 0.1 * math.log(32) + 1), lambda out: out)


def bias_kernels(rows: int, width: int, experts: int, dtype: torch.dtype = torch.bfloat16) -> dict[str, Any]:
    """_apply_bias over `experts` local experts of `rows` rows each, forward and backward."""
    torch.manual_seed(0)
    out = torch.randn(experts * rows, width, dtype=dtype, requires_grad=True)
    biases = [torch.randn(width, dtype=dtype, requires_grad=True) for _ in range(experts)]
    probs = torch.rand(experts * rows, 1, dtype=torch.float32, requires_grad=True)
    return _passes(lambda: _apply_bias(out, biases, [rows] * experts, probs), lambda y: y)


def summary(passes: dict[str, list[tuple[str, int]]]) -> str:
    return "; ".join(f"{side} {len(ops)} kernels, {sum(b for _, b in ops):,} bytes ({', '.join(n for n, _ in ops)})"
                     for side, ops in passes.items())


def main() -> None:
    print("clamp, 96 slots x 2 x 40:", summary(clamp_kernels(96, 40)))
    print("rope, 32 x 2 x 4 x 16:", summary(rope_kernels(32, 2, 4, 16)))
    print("_apply_bias, 2 experts x 64 rows x 48:", summary(bias_kernels(64, 48, 2)))


if __name__ == "__main__":
    main()
