"""The optimizer step: what it allocates, the step counters it keeps and the traffic it moves, over
the parameter tensors in the order the optimizer visits them (TensorRun).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..terms import FP32, ZERO, Expr
from .base import Block, Cost, Profile, make_cost


@dataclass(frozen=True)
class TensorRun:
    """Parameter tensors in the order an optimizer visits them, repeated `times` (a stack's
    layers: one layer's tensors, L times)."""

    tensors: tuple[Expr, ...]  # elements of each tensor
    times: Expr = sp.Integer(1)


@dataclass(frozen=True)
class OptimizerStep(Block):
    """One optimizer step over every parameter (the runs in registration order).

    State per parameter is the precision policy's (costmodel/precision.py), counted by each
    block; this block holds what the step adds. torch's AdamW keeps one fp32 `step` per tensor on
    the device on the CPU and when fused (single-tensor and foreach keep it on the host under
    CUDA). Its temporaries: single-tensor (the CPU default) computes
    denom = (exp_avg_sq.sqrt() / c).add_(eps), holding the sqrt and quotient of tensor i (2 s_i)
    while tensor i-1's denom (s_{i-1}) is still bound: max_i (2 s_i + s_{i-1}) moment elements;
    foreach (the CUDA default) one copy of every parameter; fused none. Its traffic, as a fused
    step moves it: every copy read once, the weights and states written once.
    """

    runs: tuple[TensorRun, ...]
    profile: Profile = Profile()
    title = "optimizer step"

    @property
    def params(self) -> Expr:
        return sp.Add(*(run.times * sp.Add(*run.tensors) for run in self.runs))

    @property
    def tensor_count(self) -> Expr:
        return sp.Add(*(run.times * len(run.tensors) for run in self.runs))

    def largest_pair(self) -> Expr:
        """max_i (2 s_i + s_{i-1}) over the tensors in order (s_{-1} = 0)."""
        candidates, previous = [], ZERO
        for run in (r for r in self.runs if r.tensors):
            first, last = run.tensors[0], run.tensors[-1]
            candidates.append(2 * first + previous)
            candidates += [2 * s + p for p, s in zip(run.tensors, run.tensors[1:])]
            # The next copy of the run starts after this one's last tensor.
            candidates.append(sp.Piecewise((2 * first + last, run.times > 1), (ZERO, True)))
            previous = last
        return sp.Max(*candidates, evaluate=False) if candidates else ZERO  # compared when evaluated

    def cost(self) -> Cost:
        p = self.profile
        per_param = p.param_bytes
        adam = p.optimizer == "adamw"
        temporaries = {"single": self.largest_pair(), "foreach": self.params, "fused": ZERO}
        counters_on_device = p.device == "cpu" or p.optimizer_impl == "fused"
        return make_cost(
            step_state_bytes=FP32 * self.tensor_count if per_param.step_counter and counters_on_device else 0,
            step_transient_bytes=per_param.moment * temporaries[p.optimizer_impl] if adam else 0,
            bytes_optimizer=per_param.step_traffic * self.params,
        )
