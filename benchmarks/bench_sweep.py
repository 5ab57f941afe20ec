"""Points per second of the vectorised sweep behind `python cli.py sweep`.

Builds the sweep's expressions (every column of reports.sweep.QUANTITIES: FLOPs, activations, KV
cache, memory totals) for a model, lambdifies them once (costmodel.evaluate.Sweep), then times the
evaluation alone over an (n, b) grid. Prints the median of several runs.

    python benchmarks/bench_sweep.py [--model llama2-7b] [--lengths 1000] [--batches 1000]
                                     [--repeats 7] [--json out.json]

The target is at least 1,000,000 (n, b) points per second.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from costmodel.config import Workload  # noqa: E402
from costmodel.evaluate import Sweep  # noqa: E402
from reports.series import load_model  # noqa: E402
from reports.sweep import QUANTITIES, expressions  # noqa: E402

TARGET_POINTS_PER_SECOND = 1_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama2-7b")
    parser.add_argument("--lengths", type=int, default=1000, help="sequence lengths in the grid")
    parser.add_argument("--batches", type=int, default=1000, help="batch sizes in the grid")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", dest="json_path", default=None, help="also write the result here")
    args = parser.parse_args(argv)

    cfg = load_model(args.model)
    workload = Workload()
    started = time.perf_counter()
    model, exprs = expressions(cfg, workload)
    sweep = Sweep(model, exprs)
    compile_seconds = time.perf_counter() - started

    lengths = np.geomspace(1, 131072, args.lengths).round()
    batches = np.arange(1, args.batches + 1, dtype=np.float64)
    grid_n, grid_b = (a.ravel() for a in np.meshgrid(lengths, batches, indexing="ij"))
    points = grid_n.size
    sweep(n=grid_n[:1000], b=grid_b[:1000])  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        sweep(n=grid_n, b=grid_b, e=workload.bytes_per_element)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    result = {
        "model": cfg.name,
        "columns": len(QUANTITIES),
        "points": points,
        "repeats": args.repeats,
        "median_seconds": median,
        "min_seconds": min(times),
        "points_per_second": points / median,
        "lambdify_seconds": compile_seconds,
        "target_points_per_second": TARGET_POINTS_PER_SECOND,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}",
    }
    print(f"{cfg.name}: {points:,} (n, b) points x {len(QUANTITIES)} columns")
    print(f"  lambdify once      {compile_seconds:.3f} s")
    print(f"  evaluate (median)  {median:.3f} s over {args.repeats} runs (min {min(times):.3f} s)")
    print(f"  points per second  {points / median:,.0f} (target {TARGET_POINTS_PER_SECOND:,})")
    print(f"  machine            {result['machine']}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if points / median >= TARGET_POINTS_PER_SECOND else 1


if __name__ == "__main__":
    sys.exit(main())
