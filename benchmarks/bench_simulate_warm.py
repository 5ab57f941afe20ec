"""A warm `simulate`'s seconds (issue 18's bar: 0.3 s), per model, in one process, this tree against others.

A warm call is one made after a first (cold) call in the same process: the compiled modules, the cost
trees and the phases' memory are loaded by then. Two columns per model: `same`, the same command again
(what `simulate` in a notebook or a sweep's repeated point costs), and `new prompt`, the command with a
prompt one token longer each time (a workload the process has not seen, the same model).

The machine is shared, so each tree is timed in its own interpreter, the trees taking turns round by
round (every root once per round, in the order given), and each column reports the median of all its
warm calls. The load average before and after is printed.

    python benchmarks/bench_simulate_warm.py [--rounds 2] [--runs 5] [--against /tmp/old-tree] [--models m1,m2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: (name, simulate's arguments): Round 28's five (validate/FINDINGS.md, wt30_user28 item 3).
CASES = {
    "llama3.1-8b": ["--model", "llama3.1-8b", "--batch", "32", "--prompt", "1024", "--gen", "256"],
    "gemma3-27b-32k": ["--model", "gemma3-27b", "--prompt", "32768", "--gen", "256"],
    "gpt-oss-120b": ["--model", "gpt-oss-120b", "--batch", "8", "--prompt", "1024", "--gen", "256"],
    "qwen3-30b-a3b": ["--model", "qwen3-30b-a3b", "--batch", "32", "--prompt", "1024", "--gen", "256"],
    "deepseek-v3": ["--model", "deepseek-v3", "--batch", "32", "--prompt", "1024", "--gen", "256"],
}


def worker(root: Path, names: list[str], runs: int) -> dict[str, dict[str, list[float]]]:
    """In this process, with `root`'s code: per case, a cold call, then `runs` warm calls of each kind."""
    sys.path.insert(0, str(root))
    import cli

    def seconds(args: list[str]) -> float:
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(["simulate", *args, "--json"])
        if code != 0:
            raise SystemExit(f"simulate {' '.join(args)} exited {code}")
        return time.perf_counter() - start

    out = {}
    for name in names:
        args = CASES[name]
        prompt = args.index("--prompt") + 1
        cold = seconds(args)
        same = [seconds(args) for _ in range(runs)]
        longer = [seconds([*args[:prompt], str(int(args[prompt]) + 1 + i), *args[prompt + 1:]]) for i in range(runs)]
        out[name] = {"cold": [cold], "same": same, "new prompt": longer}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="interpreters per tree (default 2)")
    parser.add_argument("--runs", type=int, default=5, help="warm calls of each kind per interpreter (default 5)")
    parser.add_argument("--against", type=Path, action="append", default=[],
                        help="another tree (a checkout or `git archive` of a commit) timed in turn with this one")
    parser.add_argument("--models", default=",".join(CASES), help=f"cases, of {', '.join(CASES)}")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}: one of {', '.join(CASES)}")
    if args.worker:
        print(json.dumps(worker(args.worker, names, args.runs)))
        return 0
    roots = [ROOT, *(p.resolve() for p in args.against)]
    times: dict[Path, dict[str, dict[str, list[float]]]] = {root: {} for root in roots}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for _ in range(args.rounds):
        for root in roots:
            run = subprocess.run([sys.executable, __file__, "--worker", str(root), "--runs", str(args.runs),
                                  "--models", ",".join(names)], capture_output=True, text=True, check=True,
                                 env={**os.environ, "PYTHONHASHSEED": "0"})
            for name, kinds in json.loads(run.stdout).items():
                for kind, values in kinds.items():
                    times[root].setdefault(name, {}).setdefault(kind, []).extend(values)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    kinds = ("cold", "same", "new prompt")
    print(f"median seconds of {args.rounds} x {args.runs} warm calls (cold: median of {args.rounds})")
    print(f"{'case':<16} " + " ".join(f"{kind + ' ' + str(i):>14}" for i in range(len(roots)) for kind in kinds))
    for name in names:
        cells = [statistics.median(times[root][name][kind]) for root in roots for kind in kinds]
        print(f"{name:<16} " + " ".join(f"{cell:>14.3f}" for cell in cells))
    for i, root in enumerate(roots):
        print(f"tree {i}: {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
