"""How a ZeRO-1 layout reduces its data-parallel gradients (Layout.zero_grad_reduce): the
reduce-scatter of Megatron-Core's distributed optimizer and DeepSpeed, or nanotron's all-reduce.

nanotron (huggingface/nanotron at c252843039cc167ff8d6894b87172af4637eb14b, the Ultra-Scale
Playbook's benchmark) shards the optimizer state over DP (optim/zero.py ZeroDistributedOptimizer) but
reduces the gradients whole: src/nanotron/trainer.py lines 510-518 call sync_gradients_across_dp(...,
reduce_scatter=False, # "TODO @thomasw21: This is too memory hungry, instead we run all_reduce"), which
all-reduces the gradient accumulator's contiguous fp32 buffer (optim/gradient_accumulator.py
sync_gradients_across_dp); optim/zero.py lines 95-120 then step the rank's shard and _all_gather_params
(lines 217-249) all-gathers every parameter's slices from every rank. So a step moves an all-reduce of
the whole gradient where Megatron-Core moves a reduce-scatter (twice the bytes on the wire: a ring
all-reduce is a reduce-scatter and an all-gather), and the same parameter all-gather. Memory is not
changed: the rank keeps its whole fp32 gradient either way (frameworks.py, megatron's 6 + 12 / dp).
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, show
from ..spec import ZERO_GRAD_REDUCES


def check(layout: Any) -> None:
    """One of ZERO_GRAD_REDUCES; the all-reduce only where the optimizer state is sharded and the
    gradient is not (--zero 1)."""
    if layout.zero_grad_reduce not in ZERO_GRAD_REDUCES:
        raise ConfigError(f"layout: zero_grad_reduce must be {ZERO_GRAD_REDUCES.listed()}, "
                          f"got {show(layout.zero_grad_reduce)}.")
    if layout.zero_grad_reduce == "all_reduce" and layout.zero != 1:
        raise ConfigError("layout: --zero-grad-reduce all_reduce is how a ZeRO-1 optimizer (nanotron's) reduces "
                          f"its whole gradient before stepping its shard; it needs --zero 1 (here {layout.zero}).")


def all_reduces(layout: Any) -> bool:
    """Whether the layout's data-parallel gradients are all-reduced whole under --zero 1."""
    return layout.zero == 1 and layout.zero_grad_reduce == "all_reduce"
