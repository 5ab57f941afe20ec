"""The kernel model's FP8 GEMMs, dense and grouped as routed experts run them, beside DeepGEMM's
published H800 table (session 28, validate/FINDINGS.md "The MoE rows' kernels against their
sources"), and the rows per expert of every published MoE training row.

DeepGEMM's README (validate/grouped_gemm_table.json, with its source and what it leaves open)
prints TFLOPS by (M, N, K) for dense GEMMs and by (groups, M per group, N, K) for grouped ones.
The model times each as KernelTimer.gemm_seconds of Gemm(M, N, K, count=groups) on the h800
preset at the burst FP8 rate. The second table: for each MoE training row of
costmodel/published_runs.json the rows (M) of its routed experts' grouped GEMMs a rank and the
experts a rank (the expert leaf's Gemm m and count), so the shapes the table covers can be read
beside the shapes the rows run.

    PYTHONPATH=. python validate/grouped_gemm_table.py [--rows]

Nothing here enters the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer

TABLE = Path(__file__).with_name("grouped_gemm_table.json")


def table() -> dict:
    return json.loads(TABLE.read_text())


def rows(data: dict | None = None) -> list[tuple[str, int, int, int, int, float, float]]:
    """(layout, groups, M per group, N, K, published TFLOPS, model TFLOPS) for every entry."""
    data = data or table()
    timer = KernelTimer(load_hardware(data["hardware"]), "bf16", matmul_dtype="fp8")
    entries = [("dense", 1, *entry) for entry in data["dense"]] + \
        [(layout, *entry) for layout in ("contiguous", "masked") for entry in data[layout]]
    out = []
    for layout, groups, m, n, k, published in entries:
        flops = 2 * groups * m * n * k
        out.append((layout, groups, m, n, k, float(published), flops / timer.gemm_seconds(Gemm(m, n, k, count=groups)) / 1e12))
    return out


def expert_rows() -> list[tuple[str, int, int]]:
    """(row id, rows per expert, experts a rank) of every expressible MoE training row's routed
    experts (the first expert leaf's first GEMM, as the kernel model builds it)."""
    from costmodel.config import ConfigError
    from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
    from reports.published_runs import other_runs_data, run_kind, train_setup

    data = other_runs_data()
    out = []
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        if run["kind"] != "train" or run_kind(run, source) != "MoE training" or "published_gpu_hours" in run:
            continue
        try:
            estimate, hardware, options = train_setup(run, source)
            step = KernelStepTime(estimate, hardware, **options)
        except ConfigError:
            continue
        entries = rank_kernels(estimate, step.timer.fused_attention, step.timer.compiled, step.autocast)
        gemms = [k for (_, _, _, kernels), leaf in zip(entries, estimate.structure["work"]) if leaf.get("experts")
                 for k in kernels if isinstance(k, Gemm)]
        if gemms:
            out.append((run["id"], gemms[0].m, gemms[0].count))
    return out


def main(argv: list[str]) -> int:
    if argv not in ([], ["--rows"]):
        print(f"error: {' '.join(argv)!r} is not an option; usage: python validate/grouped_gemm_table.py [--rows]",
              file=sys.stderr)
        return 2
    if argv:
        print("| row | rows per expert | experts a rank |\n|---|---|---|")
        for run_id, m, count in sorted(expert_rows(), key=lambda r: (r[1], r[0])):
            print(f"| {run_id} | {m:,} | {count} |")
        return 0
    print("| layout | groups | M | N | K | published TFLOPS | model TFLOPS | model / published |")
    print("|---|---|---|---|---|---|---|---|")
    for layout, groups, m, n, k, published, model in rows():
        print(f"| {layout} | {groups} | {m:,} | {n:,} | {k:,} | {published:,.0f} | {model:,.0f} | {model / published:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
