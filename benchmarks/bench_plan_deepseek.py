"""How fast `plan` ranks DeepSeek-V3's layouts on 2,048 H800s (issue 22: under 10 s): every
framework, tp, pp, expert-parallel size, ZeRO stage, micro-batch, schedule and recomputation, at
n = 4096 and the default global batch (8 a GPU).

The command in a fresh interpreter each round with a warm compiled-expression cache; the median
of the rounds, with the first (cold-cache) run on its own and the machine's cores and load.

    python benchmarks/bench_plan_deepseek.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAN = [sys.executable, "cli.py", "plan", "--model", "deepseek-v3", "--hardware", "h800", "--gpus", "2048",
        "--seq-len", "4096", "--json"]


def run(env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(PLAN, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    after = os.times()
    return time.perf_counter() - start, (after.children_user + after.children_system
                                         - before.children_user - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="plan-bench-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    try:
        cold = run(env)
        warm = [run(env) for _ in range(args.rounds)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    print(f"cold cache: {cold[0]:.2f} s wall, {cold[1]:.2f} s CPU")
    print(f"warm cache, median of {args.rounds}: {statistics.median(w for w, _ in warm):.2f} s wall, "
          f"{statistics.median(c for _, c in warm):.2f} s CPU")


if __name__ == "__main__":
    main()
