"""How long the commands a new user found slow take (validate/FINDINGS.md, "New user, round 31"):
`plot params`, `plot generation`, `claims` and `plan --serve --rate` (docs/commands.md's example).

Each command runs in a fresh interpreter, as a user types it, round after round with a warm
compiled-expression cache (one first run, with an empty cache, on its own: what the cache saves).
Per command: the median wall time and the median CPU time of the process and its children (user +
system: plan --serve --rate's search runs in a process pool), the range beside them, and the
machine's cores and load average before and after (on a shared machine the wall time moves with
the load; the CPU time much less).

    python benchmarks/bench_slow_commands.py [--rounds 3] [--only params,generation,claims,rate]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commands(out: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "cli.py"]
    return {
        "params": cli + ["plot", "params", "-o", str(out / "params.png")],
        "generation": cli + ["plot", "generation", "-m", "gpt2", "-o", str(out / "generation.png")],
        "claims": cli + ["claims"],
        "rate": cli + ["plan", "--model", "llama3-70b", "--serve", "--rate", "20", "--slo-ttft", "2",
                       "--slo-tpot", "0.1", "--hardware", "h100-sxm,a100-80gb"],
    }


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="params,generation,claims,rate",
                        help="comma-separated: params, generation, claims, rate")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="costmodel-slow-"))
    cache = out / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    table = commands(out)
    names = [name.strip() for name in args.only.split(",")]
    unknown = [name for name in names if name not in table]
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)} (choose from {', '.join(table)})")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.rounds} rounds")
    try:
        for name in names:
            cold = run(table[name], env)
            rounds = [run(table[name], env) for _ in range(args.rounds)]
            walls, cpus = [r[0] for r in rounds], [r[1] for r in rounds]
            label = {"params": "plot params", "generation": "plot generation", "claims": "claims",
                     "rate": "plan --serve --rate"}[name]
            print(f"{label:19s} first run {cold[0]:6.2f} s wall {cold[1]:6.2f} s CPU; warm: "
                  f"median {statistics.median(walls):6.2f} s wall ({min(walls):.2f}-{max(walls):.2f}), "
                  f"{statistics.median(cpus):6.2f} s CPU ({min(cpus):.2f}-{max(cpus):.2f}); "
                  f"load {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
