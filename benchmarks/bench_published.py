"""How long `published`'s tables take to compute: a fixed subset of rows, several times, and the whole table once.

Each run is a fresh Python process (the command's own case: `python cli.py published` computes every
table once, its caches cold), timed around reports.published_runs' call alone (imports excluded): its
CPU seconds (time.process_time, the figure to compare: the shared machine's load stretches the wall
clock, not the CPU a process spends) and its wall seconds. The
subset is a fixed list of sources of costmodel/published_runs.json (SUBSET: decoding rows on one GPU
and tensor-parallel, quantized, and training rows), computed by other_runs(sources=...) as the whole
table computes them; the figure is the median over --rounds processes. The whole table
(published_tables(), every row and summary) runs once unless --no-whole.

Quote the machine with a figure: the project's is 2 cores shared by about ten processes, so a
process's time swings by tens of percent with the load; compare figures taken back to back.

    PYTHONPATH=. python benchmarks/bench_published.py [--rounds 5] [--no-whole] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Sources (a run id's first word) whose rows the subset computes: gpt-fast decoding on
# one GPU, TensorRT-LLM's tensor-parallel decoding, AutoAWQ's 4-bit decoding, and torchtitan's training
# runs (the layout model's kernel steps).
SUBSET = ("gpt-fast", "trtllm-v0.5.0", "autoawq-v0.1.6", "torchtitan")

_TIMED = """
import json, sys, time
from reports.published_runs import other_runs, published_tables
sources = json.loads(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
rows = other_runs(sources=tuple(sources)) if sources else published_tables()
print(json.dumps({"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
                  "rows": len(rows) if sources else len(rows["other_runs"])}))
"""


def timed(sources: tuple[str, ...] | None) -> dict:
    """One fresh process's seconds for these sources' rows (None: the whole table) and how many rows."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _TIMED, json.dumps(list(sources or []))], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes timing the subset (default 5)")
    parser.add_argument("--no-whole", action="store_true", help="skip the whole table's single run")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.exit(2, f"--rounds must be at least 1, got {args.rounds}.\n")
    runs = [timed(SUBSET) for _ in range(args.rounds)]
    cpu, wall = [r["cpu_seconds"] for r in runs], [r["seconds"] for r in runs]
    out = {"machine": f"{os.cpu_count()} cores, shared (load average {os.getloadavg()[0]:.2f} at the start)",
           "subset": {"sources": list(SUBSET), "rows": runs[0]["rows"], "cpu_seconds": cpu, "wall_seconds": wall,
                      "median_cpu_seconds": statistics.median(cpu), "median_wall_seconds": statistics.median(wall)}}
    print(f"subset ({runs[0]['rows']} rows of {', '.join(SUBSET)}): median {statistics.median(cpu):.1f} s of CPU "
          f"({statistics.median(wall):.1f} s wall) over {len(runs)} processes "
          f"(CPU {', '.join(f'{s:.1f}' for s in cpu)})")
    if not args.no_whole:
        whole = timed(None)
        out["whole"] = whole
        print(f"whole table ({whole['rows']} other runs and the papers' tables): {whole['cpu_seconds']:.1f} s of CPU "
              f"({whole['seconds']:.1f} s wall)")
    print(f"machine: {out['machine']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
