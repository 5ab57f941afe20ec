"""Parameters of any nn.Module: unique tensors (tied weights once), buffers excluded."""

from __future__ import annotations

from collections import defaultdict

from torch import nn


def count_parameters(model: nn.Module) -> int:
    """Number of parameter elements, each tensor once (tied weights once), buffers excluded."""
    return sum(p.numel() for p in model.parameters())


def parameters_by_module(model: nn.Module, depth: int = 1) -> dict[str, int]:
    """Parameter elements per module path cut at depth, each tensor under the first path owning it."""
    counts: dict[str, int] = defaultdict(int)
    for name, param in model.named_parameters():  # yields each tensor once, first owner first
        parts = name.split(".")[:-1]
        counts[".".join(parts[:depth]) or "(root)"] += param.numel()
    return dict(counts)
