"""Per-rank bytes of a model's training state: parameters, gradients and optimizer state.

Two counts of each, because sharding frameworks pad:
    storage   bytes of the unique storages this rank holds (a view counts its whole base once):
              what the allocator holds. FSDP2's shards are views of padded buffers, so this
              includes the padding.
    elements  numel x element size of the tensors themselves (a DTensor's local shard): no padding.
A DTensor is counted by its local tensor. Works on real and fake tensors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn
from torch.distributed.tensor import DTensor


def local(t: torch.Tensor) -> torch.Tensor:
    """The tensor this rank holds: a DTensor's local shard, or the tensor itself."""
    return t._local_tensor if isinstance(t, DTensor) else t


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


@dataclass(frozen=True)
class Bytes:
    """Bytes of a set of tensors: unique storages, and elements."""

    storage: int
    elements: int


def tensor_set_bytes(tensors: Iterable[torch.Tensor]) -> Bytes:
    """Bytes of the tensors this rank holds (DTensors by their local shard)."""
    seen: set[int] = set()
    storage = elements = 0
    for t in tensors:
        t = local(t)
        elements += t.numel() * t.element_size()
        key = _storage_key(t)
        if key not in seen:
            seen.add(key)
            storage += t.untyped_storage().nbytes()
    return Bytes(storage, elements)


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """Every tensor in the optimizer's state (AdamW: step, exp_avg, exp_avg_sq per parameter)."""
    states = optimizer.state.values()
    return [v for state in states for v in state.values() if isinstance(v, torch.Tensor)]


@dataclass(frozen=True)
class TrainingState:
    """This rank's parameters, gradients and optimizer state, in bytes."""

    parameters: Bytes
    gradients: Bytes
    optimizer: Bytes

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {k: vars(getattr(self, k)) for k in ("parameters", "gradients", "optimizer")}


def training_state(model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> TrainingState:
    """Bytes of this rank's parameters, the gradients they hold now, and the optimizer's state."""
    params = list(model.parameters())
    grads = [p.grad for p in params if p.grad is not None]
    return TrainingState(
        parameters=tensor_set_bytes(params),
        gradients=tensor_set_bytes(grads),
        optimizer=tensor_set_bytes(optimizer_tensors(optimizer) if optimizer else []),
    )
