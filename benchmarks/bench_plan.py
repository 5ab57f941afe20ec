"""How fast `plan` ranks layouts: the README's example, llama2-70b on 64 H100s, n = 4096, a global
batch of 1024 (every framework, tp, pp, ZeRO stage, micro-batch, schedule and recomputation).

Two measurements per time model (roofline and kernels), medians over the rounds, with the
machine's cores and load beside them:
- the command, `python cli.py plan ... --json`, in a fresh interpreter each round with a warm
  compiled-expression cache; its first run, with an empty cache (every structure compiled with
  sympy once; under the kernel model also each rank's kernel shapes), on its own;
- layouts per second: costmodel.layout.plan.plan_training in this process, timed round by round
  after a first call (the structures already compiled and loaded).

    python benchmarks/bench_plan.py [--rounds 5] [--time-model roofline|kernels|both]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PLAN = [sys.executable, "cli.py", "plan", "--model", "llama2-70b", "--hardware", "h100-sxm", "--gpus", "64",
        "--seq-len", "4096", "--global-batch", "1024", "--json"]


def command(env: dict[str, str], time_model: str) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run(PLAN + ["--time-model", time_model], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout
    return time.perf_counter() - start, json.loads(out)


def in_process(rounds: int, time_model: str) -> list[float]:
    """Layouts per second of plan_training, round by round."""
    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.layout.plan import plan_training
    from costmodel.presets import load_preset

    cfg, hardware = load_preset("llama2-70b"), load_hardware("h100-sxm")
    workload = Workload(seq_len=4096, attention="sdpa")
    plan_training(cfg, hardware, 64, 4096, 1024, workload, time_model=time_model)
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = plan_training(cfg, hardware, 64, 4096, 1024, workload, time_model=time_model)
        rates.append((len(result["feasible"]) + len(result["infeasible"])) / (time.perf_counter() - start))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--time-model", choices=("roofline", "kernels", "both"), default="both")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.rounds} rounds")
    for time_model in ("roofline", "kernels") if args.time_model == "both" else (args.time_model,):
        measure(time_model, args.rounds)
    print(f"load after: {os.getloadavg()[0]:.2f}")


def measure(time_model: str, rounds: int) -> None:
    cache = Path(tempfile.mkdtemp(prefix="costmodel-plan-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    try:
        cold, result = command(env, time_model)
        walls = [command(env, time_model)[0] for _ in range(rounds)]
        os.environ["XDG_CACHE_HOME"] = str(cache)
        rates = in_process(rounds, time_model)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    layouts = len(result["feasible"]) + len(result["infeasible"])
    print(f"plan llama2-70b on 64 x h100-sxm, --time-model {time_model}: {layouts:,} layouts, "
          f"{len(result['feasible']):,} fit")
    print(f"  the command, first run (empty cache, compiling)  {cold:6.2f} s")
    print(f"  the command, warm cache: median wall             {statistics.median(walls):6.2f} s "
          f"(range {min(walls):.2f}-{max(walls):.2f})")
    print(f"  layouts per second (plan_training in process)    {statistics.median(rates):6.0f} "
          f"(range {min(rates):.0f}-{max(rates):.0f})")


if __name__ == "__main__":
    main()
