"""How much of each MoE training row's gap the routed experts' grouped GEMMs could explain (issue 18,
session 34): per row of `python cli.py published` whose rate is tokens a second a GPU, the kernel
model's step, the published step, the rows an expert of its grouped GEMMs (the forward's M, what
kernel_facts.json "grouped_gemm_efficiency" is keyed by) and the seconds a step those GEMMs take in
the model (forward, both backward products and any recomputed forward, every micro-batch, at the
layout's factor; an FP8 leaf's GEMMs on the FP8 timer, as layout/kernel_step.py's _parts times them,
its casts left out). `needed` is the fraction of the model's grouped-GEMM rate those GEMMs would
have to run at for them alone to close the gap (expert / (expert + gap)): a grouped kernel's
measured share of the model's rate above it cannot close the gap. TE's multi-stream cuBLAS grouped
GEMM on H100 in BF16 reads 0.75 at 2,048 rows an expert and 0.86 at 4,096 (TransformerEngine PR
#2045, kernel_facts.json); the single-launch kernels published beside it read 0.87-0.97.

    PYTHONPATH=. python validate/moe_grouped_bound.py [--all]   # --all: the rows the model is within 10% of, too

The first pipeline stage's kernels (the others run the same layers). Exposed communication, the
bubble and the host are left as the model prices them. Nothing here enters the model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """One row: the model's and the published step (seconds), the forward rows an expert and the
    experts a rank of its grouped GEMMs, and their seconds in the model's step."""
    run_id: str
    model_step: float
    published_step: float
    rows: int
    experts: int
    expert_seconds: float

    @property
    def ratio(self) -> float:
        """The model's speed over the published one (published step over the model's)."""
        return self.published_step / self.model_step

    @property
    def needed(self) -> float | None:
        """The share of the model's rate the grouped GEMMs would need to close the gap alone; None
        where the model is slower than published (no loss closes that)."""
        gap = self.published_step - self.model_step
        if gap <= 0:
            return None
        return needed_share(self.expert_seconds, gap)


def needed_share(expert_seconds: float, gap: float) -> float:
    """The fraction of their modelled rate GEMMs taking expert_seconds must run at to take gap more."""
    return expert_seconds / (expert_seconds + gap)


def grouped_seconds(step_time) -> tuple[float, int, int]:
    """(seconds a step, forward rows an expert, experts a rank) of a KernelStepTime's routed experts'
    grouped GEMMs (Gemm.grouped_rows > 0 on an experts leaf), on its first stage."""
    from costmodel.kernel_time import Gemm, kernels_seconds
    from costmodel.layout.roofline_parts import leaf_factor, runs_fp8

    estimate = step_time.estimate
    timer, fp8_timer = step_time.timer, step_time.fp8_timer
    runs = step_time.part_runs(estimate.stages[0])
    microbatches = estimate.layout.microbatches
    seconds, rows, experts = 0.0, 0, 0
    for (key, rerun, _, kernels), leaf in zip(step_time.kernel_entries, estimate.structure["work"]):
        if not leaf.get("experts"):
            continue
        fp8 = runs_fp8(leaf, estimate) and fp8_timer is not None
        gemm_timer = fp8_timer if fp8 else timer
        factor = leaf_factor(leaf, estimate) * runs.get(key, 0) * microbatches
        for listed, training in ((kernels, True), (rerun, False)):
            grouped = [k for k in listed if isinstance(k, Gemm) and k.grouped_rows]
            seconds += factor * kernels_seconds(grouped, gemm_timer, training)
            if grouped and not rows:
                rows, experts = grouped[0].grouped_rows, grouped[0].count
    return seconds, rows, experts


def bounds() -> list[Bound]:
    """Every expressible MoE training row published in tokens a second a GPU."""
    from costmodel.config import ConfigError
    from costmodel.layout.kernel_step import KernelStepTime
    from reports.published_runs import other_runs_data, run_kind, train_setup
    from validate.time_breakdown import published_step_seconds

    data = other_runs_data()
    out = []
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        if run["kind"] != "train" or run_kind(run, source) != "MoE training":
            continue
        published = published_step_seconds(run, source)
        if published is None:
            continue
        try:
            estimate, hardware, options = train_setup(run, source)
            step_time = KernelStepTime(estimate, hardware, **options)
            step = step_time.step()
        except ConfigError:
            continue
        seconds, rows, experts = grouped_seconds(step_time)
        if rows:
            out.append(Bound(run["id"], step["seconds"], published, rows, experts, seconds))
    return out


def main(argv: list[str]) -> int:
    if argv not in ([], ["--all"]):
        print(f"error: {' '.join(argv)!r} is not an option; usage: python validate/moe_grouped_bound.py [--all]",
              file=sys.stderr)
        return 2
    print("| row | ours / published | model step s | published step s | rows an expert x experts "
          "| grouped GEMMs s | needed share |\n|---|---|---|---|---|---|---|")
    for b in sorted(bounds(), key=lambda b: -b.ratio):
        if not argv and abs(b.ratio - 1) <= 0.10:
            continue
        needed = "-" if b.needed is None else f"{b.needed:.2f}"
        print(f"| {b.run_id} | {b.ratio:.2f} | {b.model_step:.2f} | {b.published_step:.2f} | "
              f"{b.rows:,} x {b.experts} | {b.expert_seconds:.2f} | {needed} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
