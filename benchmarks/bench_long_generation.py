"""`simulate --gen N` for long generations: wall time and peak resident memory of fresh
processes, median of several runs.

Each run is `python cli.py simulate --model llama3-8b --hardware h100-sxm --gen N --json` in a
new interpreter under `/usr/bin/time -f %e %M` (seconds, peak KiB). The whole decode used to be
one array of N steps (about 300 bytes a step); then chunks of costmodel.roofline.DECODE_CHUNK
steps (flat memory, time linear in N); now the sum over steps is in closed form
(costmodel/decode_sums.py), so neither time nor memory grows with N.

    python benchmarks/bench_long_generation.py [--gen 1000000 10000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(gen: int) -> tuple[float, float]:
    """(seconds, peak MiB) of one fresh `simulate --gen` process."""
    command = ["/usr/bin/time", "-f", "%e %M", sys.executable, "cli.py", "simulate", "--model", "llama3-8b",
               "--hardware", "h100-sxm", "--gen", str(gen), "--json"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    seconds, kib = done.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gen", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for gen in args.gen:
        runs = [run_once(gen) for _ in range(args.rounds)]
        print(f"--gen {gen:>12,}: median {statistics.median(r[0] for r in runs):6.2f} s, "
              f"peak {statistics.median(r[1] for r in runs):7.1f} MiB ({args.rounds} runs)")


if __name__ == "__main__":
    main()
