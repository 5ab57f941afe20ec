"""Activation memory: the bytes of unique storages a training forward saves for backward, by module
and by kind, with the loss, parameters and buffers (and views of them) excluded."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_flatten

from .common import Inputs, LossFn, forward_loss, held, module_stack, storage_key


@dataclass(frozen=True)
class SavedTensor:
    """One tensor saved for backward, in the order the forward saved it."""

    module: str  # innermost module running when it was saved ("model.layers.0.mlp")
    op: str  # the backward node and its attribute ("MmBackward0._saved_self")
    shape: tuple[int, ...]
    dtype: str
    storage_bytes: int  # bytes of its whole storage
    kind: str  # "new": first time its storage is seen; "shared": seen before; "parameter";
    #            "unreachable": saved by a node the loss cannot reach (freed with the forward)

    @property
    def bytes(self) -> int:
        """What it adds to the total: its storage bytes the first time, otherwise 0."""
        return self.storage_bytes if self.kind == "new" else 0


@dataclass(frozen=True)
class SavedResult:
    """Bytes saved for backward (unique storages, parameters and buffers excluded) and each tensor.

    unreachable_bytes: unique storages saved only by autograd nodes that the loss cannot reach
    (DeepSeek-V3's router saves top-k indices and a mask on branches that end in integer indices);
    nothing holds those nodes once the forward returns, so they are not in total_bytes.
    """

    total_bytes: int
    tensors: list[SavedTensor] = field(repr=False)
    unreachable_bytes: int = 0

    def by_module(self, depth: int = 2) -> dict[str, int]:
        """Counted bytes per module path cut at depth."""
        result: dict[str, int] = defaultdict(int)
        for t in self.tensors:
            result[".".join(t.module.split(".")[:depth])] += t.bytes
        return dict(result)



def _label_saved(roots: list[Any], label: list[str]) -> None:
    """Walk the autograd graph from roots, unpacking every saved tensor so the unpack hook can
    record which node (and attribute) saved it."""
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if attr.startswith("_saved_"):
                label[0] = f"{node.name()}.{attr}"
                with contextlib.suppress(RuntimeError):
                    getattr(node, attr)
        label[0] = f"{node.name()}.saved_tensors"  # custom autograd.Function (set before hasattr,
        with contextlib.suppress(RuntimeError, AttributeError):  # which already unpacks)
            node.saved_tensors
        stack.extend(next_node for next_node, _ in node.next_functions)


def saved_activation_bytes(model: nn.Module, inputs: Inputs,
                           loss_fn: LossFn | None = None) -> SavedResult:
    """Bytes of the unique storages saved for backward by a training forward including the loss.

    Parameters, buffers and views of them (a transposed weight) are excluded; a storage saved by
    several ops, or a view saved beside its base, counts once. Inputs saved by an op (token ids
    saved by the embedding) are included. A DTensor (tensor parallelism) counts its local shard.
    Tensors saved only by nodes the loss cannot reach are freed with the forward: they are
    reported as unreachable_bytes, not in total_bytes. The graph is freed afterwards without a
    backward.
    """
    with module_stack(model) as stack:
        recorder = SavedRecorder(model, stack)
        with recorder.hooks():
            output, loss = forward_loss(model, inputs, loss_fn)
    return recorder.result(output, loss)


class SavedRecorder:
    """Records every tensor autograd saves during a forward (with the module that saved it) and,
    once the forward is done, which node saved it and what it costs (saved_activation_bytes)."""

    def __init__(self, model: nn.Module, stack: list[str]) -> None:
        # The parameters' and buffers' storages held until the result: a storage's key is the address
        # of its StorageImpl, and a forward that replaces a buffer (CTRLModel.forward casts its
        # pos_encoding and assigns it back) frees the old one, whose address the allocator may hand to
        # a storage the forward then saves, counted as a parameter's (48 bytes of ctrl's eager row
        # went so in long test processes: validate/FINDINGS.md, session 26).
        self.kept = [held(t).untyped_storage() for t in [*model.parameters(), *model.buffers()]]
        self.excluded = {storage._cdata for storage in self.kept}
        self.stack = stack
        self.saved: list[torch.Tensor] = []
        self.modules: list[str] = []
        self.ops: dict[int, str] = {}
        self.label = [UNREACHABLE]

    def pack(self, t: torch.Tensor) -> int:
        self.saved.append(t)
        self.modules.append(self.stack[-1])
        return len(self.saved) - 1

    def unpack(self, index: int) -> torch.Tensor:
        self.ops.setdefault(index, self.label[0])
        return self.saved[index]

    def hooks(self) -> Any:
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def result(self, output: Any, loss: torch.Tensor) -> SavedResult:
        saved, ops = self.saved, self.ops
        roots = [loss.grad_fn] + [
            t.grad_fn for t in tree_flatten(_as_tree(output))[0] if isinstance(t, torch.Tensor)
        ]
        _label_saved(roots, self.label)
        kinds = _saved_kinds(saved, [index in ops for index in range(len(saved))], self.excluded)
        tensors = [
            SavedTensor(module=self.modules[index], op=ops.get(index, UNREACHABLE),
                        shape=tuple(t.shape), dtype=str(t.dtype).removeprefix("torch."),
                        storage_bytes=held(t).untyped_storage().nbytes(), kind=kinds[index])
            for index, t in enumerate(saved)
        ]
        unreachable = {storage_key(held(saved[i])): tensors[i].storage_bytes
                       for i, kind in enumerate(kinds) if kind == "unreachable"}
        return SavedResult(total_bytes=sum(t.bytes for t in tensors), tensors=tensors,
                           unreachable_bytes=sum(unreachable.values()))


UNREACHABLE = "(unreachable from the loss)"


def _saved_kinds(saved: list[torch.Tensor], reachable: list[bool], excluded: set[int]) -> list[str]:
    """parameter / new / shared / unreachable per saved tensor. A storage is "new" at its first
    reachable save (even if an unreachable node saved it earlier) and "unreachable" only if no
    reachable node saves it."""
    counted: set[int] = set()
    reached = {storage_key(held(t)) for t, r in zip(saved, reachable) if r}
    kinds = []
    for t, is_reachable in zip(saved, reachable):
        key = storage_key(held(t))
        if key in excluded:
            kinds.append("parameter")
        elif key not in reached:
            kinds.append("unreachable")
        elif key in counted or not is_reachable:
            kinds.append("shared")
        else:
            kinds.append("new")
            counted.add(key)
    return kinds


def _as_tree(output: Any) -> Any:
    """Model outputs (ModelOutput, tuples, tensors) as something tree_flatten walks."""
    if isinstance(output, dict):
        return [v for v in output.values() if v is not None]
    return output
