"""Cold start of `python cli.py estimate --model llama2-7b` against llm-analysis's `infer`, side by side.

Each round runs both in fresh interpreters, alternating, and the script prints the medians and
their ratio (issue 11's target: estimate at most 0.5x llm-analysis). "Cold" is a new process
each time; estimate's compiled-expression cache (costmodel/compiled.py) is warm after the first
run, which is timed and reported on its own (a private cache directory, emptied first), as is
the list of heavy modules a warm run imports (none of sympy, torch, numpy, pandas, matplotlib).

llm-analysis is a registry package, never a dependency of this project: the script installs it
into its own venv (benchmarks/.venv-llm-analysis, made on the first run, about a minute) and runs
`python -m llm_analysis.analysis infer --model_name NousResearch_Llama-2-7b-hf`, its bundled
Llama-2-7B config (no network).

    python benchmarks/bench_estimate.py [--rounds 9]
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
PEER_VENV = ROOT / "benchmarks" / ".venv-llm-analysis"
PEER_VERSION = "llm-analysis==0.2.2"
ESTIMATE = [sys.executable, "cli.py", "estimate", "--model", "llama2-7b", "--json"]
PEER = [str(PEER_VENV / "bin" / "python"), "-m", "llm_analysis.analysis", "infer",
        "--model_name", "NousResearch_Llama-2-7b-hf", "--log_level", "WARNING"]
HEAVY = ("sympy", "torch", "numpy", "pandas", "matplotlib")


def install_peer() -> None:
    if (PEER_VENV / "bin" / "python").exists():
        return
    print(f"installing {PEER_VERSION} into {PEER_VENV} ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    subprocess.run([str(PEER_VENV / "bin" / "pip"), "install", "-q", PEER_VERSION], check=True)


def wall_seconds(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def imported_heavy_modules(env: dict[str, str]) -> list[str]:
    code = ("import sys, cli; cli.main(['estimate', '--model', 'llama2-7b', '--json']); "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True)
    line = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
    return [m for m in line.split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    install_peer()
    cache = Path(tempfile.mkdtemp(prefix="costmodel-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    try:
        first = wall_seconds(ESTIMATE, env)  # compiles and caches the expressions
        wall_seconds(PEER, env)  # warm the file cache
        ours, peer = [], []
        for _ in range(args.rounds):
            ours.append(wall_seconds(ESTIMATE, env))
            peer.append(wall_seconds(PEER, env))
        heavy = imported_heavy_modules(env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    o, p = statistics.median(ours), statistics.median(peer)
    ratios = sorted(a / b for a, b in zip(ours, peer))
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.rounds} alternating rounds")
    print(f"llm-analysis infer (Llama-2-7B)          median {p * 1e3:7.1f} ms  (min {min(peer) * 1e3:.1f})")
    print(f"cli.py estimate --model llama2-7b        median {o * 1e3:7.1f} ms  (min {min(ours) * 1e3:.1f})")
    print(f"  first run, compiling its expressions          {first * 1e3:7.1f} ms")
    print(f"ratio of medians {o / p:.2f}; median of per-round ratios {statistics.median(ratios):.2f} "
          f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}); target <= 0.5")
    print(f"heavy modules a warm estimate imports: {', '.join(heavy) if heavy else 'none'}")


if __name__ == "__main__":
    main()
