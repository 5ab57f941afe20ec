"""The aten ops and bytes of flash_attn's unfused attention (the FlashAttention-2 paper's "without FlashAttention"
rows, --impl flash_attn with eager attention), counted on the CPU.

flash_attn itself does not build here (its CUDA extensions), but its SelfAttention is plain PyTorch. Below is a
verbatim transcription of Dao-AILab/flash-attention 30fd8c17 flash_attn/modules/mha.py SelfAttention.forward
(lines 161-190, the key-padding branch left out: the GPT passes no mask) and the lines of MHA.forward around it
(line 450: rearrange(qkv, '... (three h d) -> ... three h d'), a view, and line 516:
self.out_proj(rearrange(context, '... h d -> ... (h d)')), a reshape); einops' rearrange is written as the
reshape it runs. A TorchDispatchMode counts every aten op that is not a view, with the bytes of its tensor
arguments and outputs, forward and backward, and gives each to the tree's leaf that prices it
(blocks/attention.py: QKVProjection.megatron_dense_bytes, AttentionScores.keys_scale_bytes,
Softmax.fused_softmax_bytes, WeightedSum). The GEMMs (bmm) are the leaves' matmuls, not counted here.

The CPU's dropout is not CUDA's: at::dropout on the CPU draws a noise tensor of the input's dtype
(empty_like, bernoulli_, div_, then mul), where on CUDA native_dropout reads the probabilities once and writes
them and a bool mask (its backward reads the gradient and the mask, writes one). Those ops are reported apart
("dropout (cpu)") and the model prices CUDA's kernel (facts.softmax_dropout_passes).

    PYTHONPATH=. python validate/flash_attn_attention_ops.py [B S H D]
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from typing import Any

#: The ops that move no bytes of their own (a view's aliasing op; an allocation that no kernel reads).
NO_BYTES = ("aten._unsafe_view", "aten.empty_like")
#: The CPU's dropout (at::dropout's noise tensor), in the order it runs forward and backward.
CPU_DROPOUT = ("aten.bernoulli_", "aten.div_", "aten.mul")  # its empty_like moves nothing (NO_BYTES)


def self_attention(qkv: Any, drop: Any, softmax_scale: float | None, causal: bool = True) -> Any:
    """flash_attn/modules/mha.py SelfAttention.forward at 30fd8c17, lines 170-190 (key_padding_mask None)."""
    import torch

    batch_size, seqlen = qkv.shape[0], qkv.shape[1]  # noqa: F841 (as the source has it)
    q, k, v = qkv.unbind(dim=2)
    softmax_scale = softmax_scale or 1.0 / math.sqrt(q.shape[-1])
    scores = torch.einsum('bthd,bshd->bhts', q, k * softmax_scale)
    if causal:
        # "triu_tril_cuda_template" not implemented for 'BFloat16'
        # So we have to construct the mask in float
        causal_mask = torch.triu(torch.full((seqlen, seqlen), -10000.0, device=scores.device), 1)
        # TD [2022-09-30]: Adding is faster than masked_fill_ (idk why, just better kernel I guess)
        scores = scores + causal_mask.to(dtype=scores.dtype)
    attention = torch.softmax(scores, dim=-1, dtype=v.dtype)
    attention_drop = drop(attention)
    output = torch.einsum('bhts,bshd->bthd', attention_drop, v)
    return output


def count(batch: int, seqlen: int, heads: int, head_dim: int, dropout: float = 0.1,
          softmax_scale: float | None = 0.125) -> dict[str, Any]:
    """One forward and backward of the attention between the fused Q/K/V projection's output and the output
    projection's input, in bf16: {"ops": {pass: [(op, region, bytes)]}, "bytes": {pass: Counter(region -> bytes)}}.
    softmax_scale: create_mixer_cls's head_dim ** -0.5 / (layer_idx + 1) (any number: the same ops)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def tensor_bytes(value: Any) -> int:
        if isinstance(value, torch.Tensor):
            return value.numel() * value.element_size()
        if isinstance(value, (list, tuple)):
            return sum(tensor_bytes(v) for v in value)
        return 0

    ops: dict[str, list[tuple[str, int]]] = {"forward": [], "backward": []}

    class Ops(TorchDispatchMode):
        phase = "forward"

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            name = str(func).rsplit(".", 1)[0] if str(func).count(".") > 1 else str(func)
            if not func.is_view and not name.startswith(NO_BYTES):
                moved = tensor_bytes(list(args) + list((kwargs or {}).values())) + tensor_bytes(out)
                ops[self.phase].append((name, moved))
            return out

    torch.manual_seed(0)
    width = heads * head_dim
    projected = torch.randn(batch, seqlen, 3 * width, dtype=torch.bfloat16, requires_grad=True)  # Wqkv's output
    gradient = torch.randn(batch, seqlen, width, dtype=torch.bfloat16)  # out_proj's input gradient
    drop = torch.nn.Dropout(dropout)
    mode = Ops()
    with mode:
        qkv = projected.reshape(batch, seqlen, 3, heads, head_dim)  # rearrange '... (three h d) -> ... three h d'
        context = self_attention(qkv, drop, softmax_scale)
        out_input = context.reshape(batch, seqlen, width)  # rearrange '... h d -> ... (h d)'
        mode.phase = "backward"
        out_input.backward(gradient)
    return _by_leaf(ops, dropout > 0)


def _by_leaf(ops: dict[str, list[tuple[str, int]]], dropout: bool) -> dict[str, Any]:
    """Each op's leaf, by where it runs: forward, the scores' until the softmax, the softmax's through the
    dropout, then the weighted sum's; backward, the weighted sum's until the dropout's, the softmax's, the
    scores' until the unbind's stack (the Q/K/V projection's)."""
    regions: dict[str, list[tuple[str, str, int]]] = {"forward": [], "backward": []}
    region = "scores"
    pending = list(CPU_DROPOUT) if dropout else []
    for name, moved in ops["forward"]:
        if name == "aten._softmax":
            region = "softmax"
        elif region == "softmax" and pending and name == pending[0]:
            pending.pop(0)
            regions["forward"].append((name, "dropout (cpu)", moved))
            if not pending:
                region = "weighted_sum"
            continue
        elif region == "softmax" and not dropout:
            region = "weighted_sum"
        regions["forward"].append((name, region, moved))
    region = "weighted_sum"
    for name, moved in ops["backward"]:
        if region == "weighted_sum" and name == "aten.mul" and dropout:
            regions["backward"].append((name, "dropout (cpu)", moved))
            region = "softmax"
            continue
        if name == "aten._softmax_backward_data":
            region = "softmax"
        elif region == "softmax" and name == "aten.bmm":
            region = "scores"
        elif name == "aten.stack":
            region = "qkv"
        regions["backward"].append((name, region, moved))
    totals = {phase: Counter() for phase in regions}
    for phase, listed in regions.items():
        for name, region, moved in listed:
            if name != "aten.bmm":
                totals[phase][region] += moved
    return {"ops": regions, "bytes": totals}


def main(argv: list[str]) -> None:
    batch, seqlen, heads, head_dim = (int(x) for x in argv) if argv else (2, 13, 3, 6)
    counted = count(batch, seqlen, heads, head_dim)
    print(f"flash_attn SelfAttention (30fd8c17), bf16, b {batch}, s {seqlen}, h {heads}, d {head_dim}:")
    for phase in ("forward", "backward"):
        print(f"  {phase}:")
        for name, region, moved in counted["ops"][phase]:
            print(f"    {name:34s} {region:14s} {moved:8d} bytes")
        print("    pointwise bytes by leaf (no bmm):", dict(counted["bytes"][phase]))


if __name__ == "__main__":
    main(sys.argv[1:])
