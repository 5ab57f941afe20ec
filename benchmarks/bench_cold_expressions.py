"""The cost of building and compiling a model's expressions from an empty cache (what a fresh clone,
CI's test run and the first command after an edit of costmodel/ pay): each command run in a new
process with a new, empty $XDG_CACHE_HOME, several times; the median CPU seconds of the process
(user + system, from its rusage: CPU, not wall time, so that a loaded machine gives comparable
figures) and its stdout's hash (the same figures before and after a change).

    PYTHONPATH=. python benchmarks/bench_cold_expressions.py [--runs 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "estimate llama2-7b": ["estimate", "--model", "llama2-7b", "--seq-len", "2048", "--json"],
    "estimate mixtral-8x7b": ["estimate", "--model", "mixtral-8x7b", "--seq-len", "4096", "--json"],
    "simulate llama3-8b a100": ["simulate", "--model", "llama3-8b", "--hardware", "a100-80gb", "--prompt", "512",
                                "--gen", "128", "--json"],
}


def cold_run(arguments: list[str]) -> tuple[float, str]:
    """(CPU seconds, sha256 of stdout) of one `python cli.py ...` with an empty expression cache."""
    with tempfile.TemporaryDirectory(prefix="cold-cache-") as cache:
        before = os.times()
        out = subprocess.run([sys.executable, "cli.py", *arguments], cwd=ROOT, capture_output=True, check=True,
                             env={**os.environ, "XDG_CACHE_HOME": cache}).stdout
        after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system), \
        hashlib.sha256(out).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    result = {"machine": f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start",
              "commands": {}}
    for name, arguments in COMMANDS.items():
        runs = [cold_run(arguments) for _ in range(args.runs)]
        result["commands"][name] = {"cpu_s": [round(s, 2) for s, _ in runs],
                                    "median_cpu_s": round(statistics.median(s for s, _ in runs), 2),
                                    "stdout_sha256": sorted({h for _, h in runs})}
        print(f"{name}: median {result['commands'][name]['median_cpu_s']} s CPU of {result['commands'][name]['cpu_s']}, "
              f"stdout {result['commands'][name]['stdout_sha256']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
