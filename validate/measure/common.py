"""What every measurement shares: the inputs, the loss a training step differentiates, the module
running forward, and a storage's identity."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

aten = torch.ops.aten
Inputs = dict[str, Any]
LossFn = Callable[[Any], torch.Tensor]


def default_loss(output: Any) -> torch.Tensor:
    """The model's own loss if it returns one, else mean squares of its hidden and pooled outputs.

    BertModel has no loss: it gets last_hidden_state.float().pow(2).mean() plus
    pooler_output.float().pow(2).mean(). A bare tensor output gets output.float().pow(2).mean().
    """
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    if isinstance(output, torch.Tensor):
        return output.float().pow(2).mean()
    terms = [
        getattr(output, key).float().pow(2).mean()
        for key in ("last_hidden_state", "pooler_output")
        if isinstance(getattr(output, key, None), torch.Tensor)
    ]
    if not terms:
        raise ValueError("default_loss: the output has no loss, hidden states or tensor; pass loss_fn.")
    return sum(terms[1:], terms[0])


def forward_loss(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None) -> tuple[Any, torch.Tensor]:
    output = model(**inputs)
    return output, (loss_fn or default_loss)(output)


@contextlib.contextmanager
def module_stack(model: nn.Module) -> Iterator[list[str]]:
    """A list whose last element is the path of the innermost module currently running forward."""
    stack = ["(root)"]

    def enter(path: str) -> Callable[..., None]:
        return lambda module, args: stack.append(path) and None

    def leave(module: nn.Module, args: Any, output: Any) -> None:
        stack.pop()

    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(enter(name or "(root)")))
        handles.append(module.register_forward_hook(leave, always_call=True))
    try:
        yield stack
    finally:
        for handle in handles:
            handle.remove()


def storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage (the StorageImpl pointer; also right for fake tensors)."""
    return t.untyped_storage()._cdata


def held(t: torch.Tensor) -> torch.Tensor:
    """The tensor whose storage t keeps alive on this rank: a DTensor's local shard, else t.
    (Under tensor parallelism autograd saves DTensors, wrappers without a storage of their own.)"""
    local = getattr(t, "_local_tensor", None)
    return local if isinstance(local, torch.Tensor) else t
