"""The kernels Megatron-Core's SequentialMLP (the experts without --moe-grouped-gemm) launches around its
experts' GEMMs, counted by running its loop on the CPU (kernel_facts.json "megatron_sequential_mlp" holds the
counts; tests/test_sequential_mlp.py checks them here).

    PYTHONPATH=. python validate/sequential_mlp_ops.py

SequentialMLP.forward (NVIDIA/Megatron-LM core_r0.6.0 megatron/core/transformer/moe/experts.py; the same
lines in alibaba/Pai-Megatron-Patch 9fce17b3 megatron_patch/model/qwen1_5/moe/experts.py, which FlagPerf's
Qwen1.5-MoE script runs): output_local = torch.zeros_like(permuted_local_hidden_states); the cumulative
token counts on the host (tokens_per_expert is a CPU tensor: the dispatcher's .cpu()); for each local expert
hidden = permuted_local_hidden_states[start:end] (a view), output = expert(hidden) and
output_local[start:end] = output (a copy into the slice; no bias: --disable-bias-linear). The experts' own
GEMMs and activation are left out here (`_Expert`: its mm ops are dropped from the count): the grouped path
runs the same activation bytes, and the GEMMs are timed per expert by the kernel model. What autograd runs
for the loop in backward (CopySlices over output_local's in-place copies, the slices' SliceBackward and the
accumulation of the E gradients of the permuted tokens) is recorded as it runs. Every aten op that is not a
view launches a kernel (LoopRecorder: slice_backward two).
"""

from __future__ import annotations

from typing import Any

import torch

from torch.utils._pytree import tree_flatten
from torch.utils._python_dispatch import TorchDispatchMode

from validate.router_fusion_ops import VIEWS

GEMMS = {"mm", "addmm"}  # the experts' own products, timed by the kernel model
#: ops that only write their output (a fill): their input is read for its shape alone
FILLS = {"zeros_like", "zeros", "new_zeros", "fill_", "zero_"}


class LoopRecorder(TorchDispatchMode):
    """Each aten op with the kernels it launches on a GPU and the bytes they move: a fill writes its
    output; copy_ reads its source and writes its destination; slice_backward (at::zeros then a copy into
    the slice, torch's FunctionsManual) is two kernels, the full gradient written and the slice copied;
    any other op reads its tensor inputs and writes its output. Views launch nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, int, int]] = []  # (name, kernels, bytes)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0]
        if name in VIEWS:
            return out
        size = lambda t: t.numel() * t.element_size()  # noqa: E731
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if name in FILLS:
            self.ops.append((name, 1, sum(map(size, outputs))))
        elif name == "copy_":
            self.ops.append((name, 1, 2 * size(args[1])))
        elif name == "slice_backward":
            self.ops.append((name, 2, sum(map(size, outputs)) + 2 * size(args[0])))
        else:
            self.ops.append((name, 1, sum(map(size, inputs)) + sum(map(size, outputs))))
        return out


class _Expert(torch.autograd.Function):
    """An expert as one product of its tokens (x @ w), forward and backward: the GEMMs the count drops."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(w)
        return torch.mm(x, w)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (w,) = ctx.saved_tensors
        return torch.mm(grad, w.t()), None


def _sequential_mlp(permuted, tokens_per_expert, weights):  # experts.py SequentialMLP.forward (no bias)
    output_local = torch.zeros_like(permuted)
    cumsum_num_tokens = torch.cumsum(tokens_per_expert, dim=0)
    zero_tensor = torch.zeros(1, dtype=torch.long, device=cumsum_num_tokens.device)
    cumsum_num_tokens = torch.cat((zero_tensor, cumsum_num_tokens))
    for expert_num, weight in enumerate(weights):
        start = cumsum_num_tokens[expert_num]
        end = cumsum_num_tokens[expert_num + 1]
        hidden = permuted[start:end]
        output = _Expert.apply(hidden, weight)
        output_local[start:end] = output
    return output_local


def loop_kernels(slots: int, hidden: int, experts: int, dtype: torch.dtype = torch.bfloat16) -> dict[str, Any]:
    """The loop's kernels (and bytes) around `experts` local experts' products, forward and backward, at these
    sizes: `slots` permuted tokens of `hidden` in `dtype`, split as evenly as the routing's uniform share (the
    first experts one more). The host-side cumsum and cat (CPU tensors) are not GPU kernels: dropped.
    {"forward": [...], "backward": [...]}"""
    torch.manual_seed(0)
    permuted = torch.randn(slots, hidden, dtype=dtype, requires_grad=True)
    base, extra = divmod(slots, experts)
    tokens_per_expert = torch.tensor([base + (1 if i < extra else 0) for i in range(experts)])
    weights = [torch.randn(hidden, hidden, dtype=dtype) for _ in range(experts)]
    with LoopRecorder() as forward:
        output = _sequential_mlp(permuted, tokens_per_expert, weights)
    grad = torch.ones_like(output)
    with LoopRecorder() as backward:
        output.backward(grad)
    # tokens_per_expert's CPU ops: its cumsum, the zero, the cat and each start and end read (.item()).
    host = {"cumsum", "cat", "zeros", "lift_fresh", "_local_scalar_dense"}
    def gpu(ops: list) -> list:
        return [op for op in ops if op[0] not in GEMMS and op[0] not in host]
    return {"forward": gpu(forward.ops), "backward": gpu(backward.ops)}


def main() -> int:
    for experts in (2, 4, 8):
        ops = loop_kernels(16384, 2048, experts)
        for side in ("forward", "backward"):
            names = [name for name, _, _ in ops[side]]
            print(f"{experts} local experts, 16,384 slots of 2,048, {side}: {sum(k for _, k, _ in ops[side])} kernels, "
                  f"{sum(b for _, _, b in ops[side]):,} bytes: {' '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
