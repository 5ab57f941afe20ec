"""Cold start of `python cli.py estimate --model llama2-7b` against `python -c "import sympy"`.

Runs both commands alternately, several times, in fresh interpreters, and reports the medians and
their ratio (the target: estimate within 1.5x of importing sympy), plus which heavy modules the
estimate imported (none of torch, matplotlib, pandas, numpy is expected).

    python benchmarks/bench_estimate.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ESTIMATE = [sys.executable, "cli.py", "estimate", "--model", "llama2-7b", "--json"]
SYMPY = [sys.executable, "-c", "import sympy"]
HEAVY = ("torch", "matplotlib", "pandas", "numpy")


def wall_seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def imported_heavy_modules() -> list[str]:
    code = (
        "import sys, cli; cli.main(['estimate', '--model', 'llama2-7b', '--json']); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    line = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
    return [m for m in line.split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    wall_seconds(ESTIMATE), wall_seconds(SYMPY)  # warm the file cache
    estimate, sympy = [], []
    for _ in range(args.runs):
        estimate.append(wall_seconds(ESTIMATE))
        sympy.append(wall_seconds(SYMPY))
    e, s = statistics.median(estimate), statistics.median(sympy)
    print(f"machine: {os.cpu_count()} cores; {args.runs} alternating runs each; load {os.getloadavg()[0]:.2f}")
    print(f"python -c 'import sympy'          median {s * 1e3:7.1f} ms  (min {min(sympy) * 1e3:.1f})")
    print(f"cli.py estimate --model llama2-7b  median {e * 1e3:7.1f} ms  (min {min(estimate) * 1e3:.1f})")
    print(f"ratio {e / s:.2f} (target <= 1.5)")
    heavy = imported_heavy_modules()
    print(f"heavy modules imported by estimate: {', '.join(heavy) if heavy else 'none'}")


if __name__ == "__main__":
    main()
