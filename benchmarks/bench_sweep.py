"""How fast `python cli.py sweep` is: the vectorised evaluation alone, and the whole command.

Evaluation (the default): builds the sweep's expressions (every column of
reports.sweep.QUANTITIES: FLOPs, activations, KV cache, memory totals) for a model, lambdifies
them once (costmodel.evaluate.Sweep), then times the evaluation alone over an (n, b) grid and
prints the median of several runs. The target is at least 1,000,000 (n, b) points per second.

    python benchmarks/bench_sweep.py [--model llama2-7b] [--lengths 1000] [--batches 1000]
                                     [--repeats 7] [--json out.json]

The whole command (--command): runs `python cli.py sweep` in a fresh process, as a user does,
writing the grid to a temporary directory (removed afterwards), several times; reports the median
wall time, the peak resident memory (the child's ru_maxrss) and the evaluation time the command
itself prints, beside the same command on a one-point grid (start-up: imports, building and
lambdifying the expressions). The target is the whole command within 3x the evaluation time.

    python benchmarks/bench_sweep.py --command [--format csv|npz] [--repeats 5]
        [--seq-len 128:131072:+128] [--batch 1:1250] [--repo PATH]

--repo times another checkout's cli.py (the code before a change, for a before/after figure).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

TARGET_POINTS_PER_SECOND = 1_000_000
TARGET_COMMAND_OVER_EVALUATION = 3.0


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.machine()}, {os.cpu_count()} CPUs (load {load:.1f} at the start), "
            f"numpy {np.__version__}")


# ---------------------------------------------------------------------------------------------
# The evaluation alone


def bench_evaluation(args: argparse.Namespace) -> int:
    from costmodel.config import Workload
    from costmodel.evaluate import Sweep
    from reports.series import load_model
    from reports.sweep import QUANTITIES, expressions

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
        "machine": machine(),
    }
    print(f"{cfg.name}: {points:,} (n, b) points x {len(QUANTITIES)} columns")
    print(f"  lambdify once      {compile_seconds:.3f} s")
    print(f"  evaluate (median)  {median:.3f} s over {args.repeats} runs (min {min(times):.3f} s)")
    print(f"  points per second  {points / median:,.0f} (target {TARGET_POINTS_PER_SECOND:,})")
    print(f"  machine            {result['machine']}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if points / median >= TARGET_POINTS_PER_SECOND else 1


# ---------------------------------------------------------------------------------------------
# The whole command


def run_once(repo: Path, arguments: list[str]) -> dict[str, float]:
    """One `python cli.py sweep ...` in a fresh process: wall seconds, peak RSS, the evaluation
    seconds it prints."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "cli.py", "sweep", *arguments], cwd=repo,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(repo)})
    stderr = child.stderr.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"the command failed ({child.returncode}): {stderr.strip()}")
    evaluated = re.search(r"evaluated in ([0-9.]+) s", stderr)
    return {"wall_seconds": wall, "peak_rss_bytes": usage.ru_maxrss * 1024,
            "evaluate_seconds": float(evaluated[1]) if evaluated else float("nan")}


def bench_command(args: argparse.Namespace) -> int:
    repo = Path(args.repo).resolve() if args.repo else ROOT
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as folder:
        out = Path(folder) / f"sweep.{args.format}"
        option = "--csv" if args.format == "csv" else "--npz"
        for label, grid in (("one point (start-up)", ["--seq-len", "128", "--batch", "1"]),
                            ("grid", ["--seq-len", args.seq_len, "--batch", args.batch])):
            runs = []
            for _ in range(args.repeats if label == "grid" else max(args.repeats, 3)):
                runs.append(run_once(repo, ["--model", args.model, *grid, option, str(out)]))
            size = out.stat().st_size
            out.unlink()
            results[label] = {
                "runs": runs,
                "median_wall_seconds": statistics.median(r["wall_seconds"] for r in runs),
                "median_peak_rss_bytes": statistics.median(r["peak_rss_bytes"] for r in runs),
                "max_peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs),
                "median_evaluate_seconds": statistics.median(r["evaluate_seconds"] for r in runs),
                "output_bytes": size,
            }
    start_up, grid = results["one point (start-up)"], results["grid"]
    wall, evaluate = grid["median_wall_seconds"], grid["median_evaluate_seconds"]
    ratio = wall / evaluate
    beyond = (wall - start_up["median_wall_seconds"]) / evaluate
    summary = {
        "repo": str(repo), "model": args.model, "seq_len": args.seq_len, "batch": args.batch,
        "format": args.format, "repeats": args.repeats, "machine": machine(),
        "whole_over_evaluation": ratio, "beyond_start_up_over_evaluation": beyond,
        "target_whole_over_evaluation": TARGET_COMMAND_OVER_EVALUATION, "results": results,
    }
    print(f"python cli.py sweep --model {args.model} --seq-len {args.seq_len} --batch {args.batch} "
          f"{option} FILE   ({repo})")
    for label, r in results.items():
        print(f"  {label:<22} median {r['median_wall_seconds']:7.2f} s over {len(r['runs'])} runs, "
              f"peak RSS {r['median_peak_rss_bytes'] / 2**20:,.0f} MiB (max "
              f"{r['max_peak_rss_bytes'] / 2**20:,.0f}), evaluation {r['median_evaluate_seconds']:.3f} s, "
              f"{r['output_bytes'] / 1e6:,.1f} MB written")
    print(f"  whole command / evaluation          {ratio:.1f}x (target {TARGET_COMMAND_OVER_EVALUATION:g}x: "
          f"{'met' if ratio <= TARGET_COMMAND_OVER_EVALUATION else 'missed'})")
    print(f"  (whole - one-point run) / evaluation {beyond:.1f}x")
    print(f"  machine                             {summary['machine']}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if ratio <= TARGET_COMMAND_OVER_EVALUATION else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama2-7b")
    parser.add_argument("--lengths", type=int, default=1000, help="sequence lengths in the grid")
    parser.add_argument("--batches", type=int, default=1000, help="batch sizes in the grid")
    parser.add_argument("--repeats", type=int, default=None, help="runs (default 7; --command 5)")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the result here")
    parser.add_argument("--command", action="store_true", help="time the whole `cli.py sweep`")
    parser.add_argument("--format", choices=("csv", "npz"), default="csv")
    parser.add_argument("--seq-len", default="128:131072:+128", help="--command: the grid's n")
    parser.add_argument("--batch", default="1:1250", help="--command: the grid's b")
    parser.add_argument("--repo", default=None, help="--command: another checkout's cli.py")
    args = parser.parse_args(argv)
    if args.command:
        args.repeats = args.repeats or 5
        return bench_command(args)
    args.repeats = args.repeats or 7
    return bench_evaluation(args)


if __name__ == "__main__":
    sys.exit(main())
