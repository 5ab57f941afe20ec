"""How fast the time models answer: `simulate` in this process after a first (warm) call, under the
roofline and the kernel-level model, and the kernel model's layout step for GPT-3 175B.

Medians over the rounds, with the machine's cores and load beside them (a shared 2-core machine).

    python benchmarks/bench_time_model.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_seconds(function, rounds: int) -> tuple[float, float, float]:
    function()  # warm: trees built, expressions compiled
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.timing import step_time
    from costmodel.presets import load_preset
    from costmodel.roofline import simulate_inference
    from reports.published_runs import gpt

    cfg, a100 = load_preset("llama2-7b"), load_hardware("a100-80gb")
    cases = {
        f"simulate llama2-7b --time-model {model} (prompt 2048, gen 128)":
            lambda model=model: simulate_inference(cfg, a100, prompt=2048, gen=128, batch=1, time_model=model)
        for model in ("roofline", "kernels")
    }
    gpt3 = gpt("175B", 96, 12288, 96)
    workload = Workload(seq_len=2048, batch=1, dtype="bf16", impl="megatron", recompute="selective")
    layout = Layout(tp=8, pp=8, dp=1, sp=True, microbatches=64, framework="megatron", schedule="interleaved",
                    virtual_stages=3)
    for model in ("roofline", "kernels"):
        cases[f"GPT-3 175B layout step, {model}"] = (
            lambda model=model: step_time(ParallelEstimate(gpt3, workload, layout), a100, time_model=model).step())
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.rounds} rounds after a warm call")
    for name, function in cases.items():
        middle, low, high = median_seconds(function, args.rounds)
        print(f"  {name:<62} {middle:6.3f} s (range {low:.3f}-{high:.3f})")


if __name__ == "__main__":
    main()
