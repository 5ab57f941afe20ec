"""The kernels Megatron-Core's MoE router launches without --moe-router-fusion, counted by running its
code on the CPU (kernel_facts.json "megatron_router_unfused" holds the counts; tests check them here).

    PYTHONPATH=. python validate/router_fusion_ops.py

Megatron-Core's router (NVIDIA/Megatron-LM d98e8a64dd, megatron/core/transformer/moe/moe_utils.py and
router.py; the same lines at eb0783b6d3, the DeepSeek-V3 GB200 guide's commit) runs, where
moe_router_fusion is off, the eager torch code below: topk_routing_with_score_function's unfused branch
(moe_utils.py:893-958 at d98e8a64dd; group_limited_topk :673-718), compute_routing_scores_for_aux_loss's
(:995-1009) and switch_load_balancing_loss_func's (:146-149). With the flag, each is one Transformer Engine
autograd Function (fused_topk_with_score_function, fused_compute_score_for_moe_aux_loss,
fused_moe_aux_loss: one CUDA kernel a pass each, transformer_engine/common/fused_router/). Every aten op
here that is not a view (view, expand, unsqueeze, detach, _unsafe_view) launches one kernel. Common to both
paths and not counted: the gating GEMM, the tokens-per-expert sum and its all-reduce, MoEAuxLossAutoScaler.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

#: aten ops that return a view or an alias, or allocate without writing: no kernel.
VIEWS = {"view", "expand", "unsqueeze", "detach", "_unsafe_view", "alias", "reshape", "t", "transpose", "permute",
         "slice", "split", "split_with_sizes", "squeeze", "select", "narrow", "unbind", "as_strided",
         "empty", "empty_strided", "new_empty", "new_empty_strided"}


class KernelRecorder(TorchDispatchMode):
    """Each aten op that launches a kernel, with the bytes of its tensor inputs and outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0]
        if name not in VIEWS:
            tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
            self.ops.append((name, sum(t.numel() * t.element_size() for t in tensors)))
        return out


def _group_limited_topk(scores, topk, num_tokens, num_experts, num_groups, group_topk):  # moe_utils.py:673-718
    group_scores = (
        scores.view(num_tokens, num_groups, -1).topk(topk // group_topk, dim=-1)[0].sum(dim=-1)
    )
    group_idx = torch.topk(group_scores, k=group_topk, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = (
        group_mask.unsqueeze(-1).expand(num_tokens, num_groups, num_experts // num_groups).reshape(num_tokens, -1)
    )
    masked_scores = scores.masked_fill(~score_mask.bool(), float("-inf"))
    probs, top_indices = torch.topk(masked_scores, k=topk, dim=-1)
    return probs, top_indices


def _topk_routing(logits, topk, num_groups, group_topk, scaling_factor, score_function, expert_bias):
    """moe_utils.py:893-958 (use_pre_softmax off; not deterministic; no replay; sparse output)."""
    num_tokens, num_experts = logits.shape

    def compute_topk(scores, topk, num_groups=None, group_topk=None):
        if group_topk:
            return _group_limited_topk(scores, topk, num_tokens, num_experts, num_groups, group_topk)
        return torch.topk(scores, k=topk, dim=1, sorted=True)

    if score_function == "softmax":
        scores, top_indices = compute_topk(logits, topk, num_groups, group_topk)
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32)
    else:  # sigmoid
        scores = torch.sigmoid(logits.float())
        if expert_bias is not None:
            scores_for_routing = scores + expert_bias.float()
            _, top_indices = compute_topk(scores_for_routing, topk, num_groups, group_topk)
            scores = torch.gather(scores, dim=1, index=top_indices)
        else:
            scores, top_indices = compute_topk(scores, topk, num_groups, group_topk)
        probs = scores / (scores.sum(dim=-1, keepdim=True) + 1e-20) if topk > 1 else scores
    if scaling_factor:
        probs = probs * scaling_factor
    probs = probs.type_as(logits)
    routing_probs = torch.zeros_like(logits).scatter(1, top_indices, probs)
    routing_map = torch.zeros_like(logits).int().scatter(1, top_indices, 1).bool()
    return routing_probs, routing_map


def _aux_scores(logits, topk, score_function):  # moe_utils.py:995-1009
    if score_function == "softmax":
        scores = torch.softmax(logits, dim=-1, dtype=torch.float32)
    else:
        scores = torch.sigmoid(logits.float())
        scores = scores / (scores.sum(dim=-1, keepdim=True) + 1e-20)
    _, top_indices = torch.topk(scores, k=topk, dim=1)
    routing_map = torch.zeros_like(logits).int().scatter(1, top_indices, 1).bool()
    return routing_map, scores


def _aux_loss(probs, tokens_per_expert, total_num_tokens, topk, num_experts, coeff):  # moe_utils.py:146-149
    aggregated_probs_per_expert = probs.sum(dim=0)
    return torch.sum(aggregated_probs_per_expert * tokens_per_expert) * (
        num_experts * coeff / (topk * total_num_tokens * total_num_tokens))


def unfused_router_kernels(tokens: int, experts: int, topk: int, score_function: str = "sigmoid",
                           groups: int | None = None, group_topk: int | None = None,
                           scaling_factor: float | None = None, expert_bias: bool = False,
                           aux_loss: bool = True) -> dict[str, Any]:
    """The kernels (and their bytes) of one unfused router forward and backward in fp32 (the router's
    moe_router_dtype fp32) at these sizes, with an aux loss (Megatron's aux_loss, seq_aux_loss or
    global_aux_loss: the same scores and loss) or without (moe_router_load_balancing_type none):
    {"forward": [(op, bytes)...], "backward": [...]}."""
    torch.manual_seed(0)
    logits = torch.randn(tokens, experts, dtype=torch.float32, requires_grad=True)
    bias = torch.zeros(experts) if expert_bias else None
    with KernelRecorder() as forward:
        probs, _ = _topk_routing(logits, topk, groups, group_topk, scaling_factor, score_function, bias)
        if aux_loss:
            routing_map, scores = _aux_scores(logits, topk, score_function)
    outputs, grads = [probs], [torch.ones_like(probs)]
    if aux_loss:
        tokens_per_expert = routing_map.sum(dim=0)  # common to the fused path (not counted)
        with KernelRecorder() as loss:
            aux = _aux_loss(scores, tokens_per_expert, tokens, topk, experts, 1e-4)
        forward.ops += loss.ops
        outputs.append(aux)
        grads.append(torch.ones_like(aux))
    with KernelRecorder() as backward:
        torch.autograd.backward(outputs, grads)
    return {"forward": forward.ops, "backward": backward.ops}


def main() -> int:
    deepseek = dict(score_function="sigmoid", groups=8, group_topk=4, scaling_factor=2.5, expert_bias=True)
    for label, experts, kwargs in (("DeepSeek-V3 (sigmoid, bias, 8 groups, top 4 groups, x2.5), aux loss", 256, deepseek),
                                   ("the same, no aux loss", 256, dict(deepseek, aux_loss=False)),
                                   ("softmax (top k, then softmax), aux loss", 128, dict(score_function="softmax")),
                                   ("the same, no aux loss", 128, dict(score_function="softmax", aux_loss=False))):
        ops = unfused_router_kernels(4096, experts, 8, **kwargs)
        for side in ("forward", "backward"):
            names = [name for name, _ in ops[side]]
            print(f"{label} {side}: {len(names)} kernels, {sum(b for _, b in ops[side]):,} bytes: {' '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
