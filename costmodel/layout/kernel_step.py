"""A layout's step time with the kernel-level model (opt-in: `simulate --time-model kernels` with
a layout, and the `published` comparison's second column).

The same StepTime (costmodel/layout/time.py: stages, bubble, overlap conventions, optimizer, and
the one communication model, costmodel/collectives.py), with one part replaced: a part's compute
is its leaves' kernels on one tensor-parallel rank (costmodel/kernel_time.py: GEMM tiles and waves
at the measured large-GEMM efficiency, attention's executed FLOPs), the leaves' shapes the rank's
share (layout/split.py's substitution: h -> h / tp, d_ff -> d_ff / tp, the vocabulary, and the
tokens of the norms and adds under sequence parallelism).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import sympy as sp

from .. import symbols as S
from ..hardware import Efficiency, Hardware
from ..kernel_time import KernelTimer, check_kernel_model, launches_of, leaf_seconds
from .rank import FRAMEWORKS, ParallelEstimate, _loss_parallel, _part_of
from .split import substitution
from .time import StepTime


class KernelStepTime(StepTime):
    """StepTime with kernel-level compute and measured collective bandwidths."""

    def __init__(self, estimate: ParallelEstimate, hardware: Hardware, efficiency: Efficiency | None = None,
                 flops_convention: str = "dense", cuda_graphs: bool = False, overlap: Any = None,
                 compiled: bool = False):
        super().__init__(estimate, hardware, efficiency, flops_convention, cuda_graphs, overlap)
        check_kernel_model(hardware)
        self.timer = KernelTimer(hardware, estimate.workload.dtype, estimate.workload.attention,
                                 efficiency=efficiency, compiled=compiled)

    @cached_property
    def part_seconds(self) -> dict[str, tuple[float, int]]:
        """Per part (one run of its leaves on one rank): the kernels' seconds and how many of
        its leaves run any op (what the per-block overhead is paid for)."""
        from ..model import CostModel, profile_for

        estimate = self.estimate
        cfg, workload, layout = estimate.cfg, estimate.workload, estimate.layout
        framework = FRAMEWORKS[layout.framework]
        profile = profile_for(cfg, workload, precision=framework.precision, device=layout.device,
                              optimizer_impl="foreach" if layout.device == "cuda" else "single")
        tree = CostModel(cfg, profile, phase=estimate.phase)
        values = {**cfg.dimensions(), **workload.dimensions(cfg), "tp": layout.tp, "dp": layout.dp}
        subs = {getattr(S, k): sp.Integer(v) for k, v in values.items()}
        training = estimate.phase == "train"
        out: dict[str, tuple[float, int]] = {}
        for i, part in _part_of(tree).items():
            leaf = tree.leaves[i]
            key = part if part != "layer" else f"layer.{leaf.stack}" + (f".{leaf.kind}" if leaf.kind else "")
            encoder = leaf.stack == "encoder" and cfg.architecture == "encoder-decoder"
            local = substitution(leaf.block, sp_on=layout.sp, vocabulary=framework.vocabulary,
                                 loss_parallel=_loss_parallel(layout), encoder=encoder)
            seconds, kernels = leaf_seconds(leaf, subs, self.timer, training, local)
            total, active = out.get(key, (0.0, 0))
            out[key] = (total + seconds, active + int(launches_of(leaf, kernels, self.timer.compiled) > 0))
        return out


def kernel_step(estimate: ParallelEstimate, hardware: Hardware, **options: Any) -> dict[str, Any]:
    return KernelStepTime(estimate, hardware, **options).step()
