"""The kernels Megatron-Core's all-to-all dispatcher launches for its permutations without
--moe-permute-fusion, counted by running its code on the CPU (kernel_facts.json "megatron_permute_unfused"
holds the counts; tests/test_permute_fusion.py checks them here).

    PYTHONPATH=. python validate/permute_fusion_ops.py

MoEAlltoAllTokenDispatcher (NVIDIA/Megatron-LM d98e8a64dd megatron/core/transformer/moe/token_dispatcher.py)
calls, where moe_permute_fusion is off and the routing is dropless: permute(hidden_states, routing_map,
probs, num_out_tokens) (:671; moe_utils.py:382-470, the argsort path), sort_chunks_by_idxs of the tokens and
probabilities by local expert (:782; moe_utils.py:602-634: torch.split, torch.cat) and back (:817, tokens
only) where an EP rank holds more than one expert, and unpermute without probabilities (:891; moe_utils.py
:535-598: torch.zeros and scatter_add_). With the flag each is one Transformer Engine autograd Function of
one kernel a pass. Every aten op here that is not a view launches one kernel (router_fusion_ops.KernelRecorder).
"""

from __future__ import annotations

from typing import Any

import torch

from validate.router_fusion_ops import KernelRecorder


def _permute(tokens, routing_map, probs, num_out_tokens):  # moe_utils.py:445-470 (dropless, unfused)
    num_tokens, hidden = tokens.shape
    routing_map = routing_map.bool().T.contiguous()
    flat_sorted = routing_map.reshape(-1).argsort(descending=True, stable=True)
    flat_sorted = flat_sorted[:num_out_tokens]
    sorted_indices = flat_sorted % num_tokens
    permuted_probs = probs.T.contiguous().reshape(-1)[flat_sorted]
    permuted_input = tokens.index_select(0, sorted_indices)
    return permuted_input, permuted_probs, sorted_indices


def _sort_chunks(input, split_sizes, sorted_idxs, probs=None):  # moe_utils.py:625-634
    input = torch.split(input, split_sizes.tolist(), dim=0)
    output = torch.cat([input[i] for i in sorted_idxs.tolist()], dim=0)
    if probs is not None:
        probs = torch.split(probs, split_sizes.tolist(), dim=0)
        permuted_probs = torch.cat([probs[i] for i in sorted_idxs.tolist()], dim=0)
    else:
        permuted_probs = None
    return output, permuted_probs


def _unpermute(permuted_tokens, sorted_indices, restore_shape):  # moe_utils.py:572-598 (no probs)
    _, hidden = restore_shape
    input_dtype = permuted_tokens.dtype
    output_tokens = torch.zeros(restore_shape, dtype=permuted_tokens.dtype, device=permuted_tokens.device)
    output_tokens.scatter_add_(0, sorted_indices.unsqueeze(1).expand(-1, hidden), permuted_tokens)
    return output_tokens.to(dtype=input_dtype)


def unfused_permute_kernels(tokens: int, hidden: int, experts: int, topk: int, chunks: int,
                            dtype: torch.dtype = torch.bfloat16) -> dict[str, Any]:
    """The kernels (and bytes) of one MoE layer's unfused permutations, forward and backward, at these
    sizes: T tokens of `hidden` in `dtype`, E experts, k a token, `chunks` = EP ranks x local experts > 1
    (sort_chunks_by_idxs runs; the exchange between them is left out). {"forward": [...], "backward": [...]}"""
    torch.manual_seed(0)
    hidden_states = torch.randn(tokens, hidden, dtype=dtype, requires_grad=True)
    scores = torch.rand(tokens, experts)
    top = scores.topk(topk, dim=1).indices
    routing_map = torch.zeros(tokens, experts, dtype=torch.bool).scatter(1, top, True)
    probs = torch.zeros(tokens, experts).scatter(1, top, 0.5).requires_grad_(True)
    slots = tokens * topk
    split_sizes = torch.full((chunks,), slots // chunks)
    split_sizes[-1] += slots - int(split_sizes.sum())
    order = torch.arange(chunks).flip(0)
    with KernelRecorder() as forward:
        permuted, permuted_probs, sorted_indices = _permute(hidden_states, routing_map, probs, slots)
        sorted_tokens, sorted_probs = _sort_chunks(permuted, split_sizes, order, permuted_probs)
        # (the experts run here: identity, their gradients given below)
        restored, _ = _sort_chunks(sorted_tokens, split_sizes, order)
        output = _unpermute(restored, sorted_indices, hidden_states.shape)
    grads = [torch.ones_like(output), torch.ones_like(sorted_probs)]
    with KernelRecorder() as backward:
        torch.autograd.backward([output, sorted_probs], grads)
    return {"forward": forward.ops, "backward": backward.ops}


def main() -> int:
    ops = unfused_permute_kernels(4096, 7168, 256, 8, 256)
    for side in ("forward", "backward"):
        names = [name for name, _ in ops[side]]
        print(f"DeepSeek-V3, 4,096 tokens, EP 32 x 8 local experts, {side}: {len(names)} kernels, "
              f"{sum(b for _, b in ops[side]):,} bytes: {' '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
