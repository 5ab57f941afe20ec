"""Speed of the serving simulator (costmodel/serving) on this machine.

1. 10,000 requests of 512 prompt + 128 output tokens, all arriving at once (rate = inf), Llama-3-8B
   on one H100 under vLLM's scheduler (its default 1,024 sequences, and 256): the whole `costmodel.serve` call (building the step-time
   model from the tree, the event loop, the frames), median of --runs runs in fresh processes
   (so no run reuses the lambdified tree of another).
   The same 10,000 requests from a closed loop of 256 clients (`serve --concurrency 256`: each
   client sends its next request when its previous one finishes).
2. A 200-configuration `plan --serve --rate` search (Llama-3-70B at 10 req/s, p99 TTFT <= 2 s,
   TPOT <= 60 ms; 4 GPU presets x tp 2, 4 x 5 max-num-seqs x 5 token budgets; 200 simulated
   requests per point), with a process pool of all cores (--processes 1: in this process, as
   `python -m cProfile -s tottime benchmarks/bench_serve.py --skip-10k --processes 1` profiles it); one run.

    python benchmarks/bench_serve.py [--runs 5] [--skip-plan] [--skip-10k] [--processes N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ONE_RUN = """
import time
t = time.perf_counter()
import costmodel
run = costmodel.serving.serve("llama3-8b", "h100-sxm", LOAD, requests=10000,
                              prompt="512", output="128", scheduler="vllm", max_num_seqs=SEQS)
print(time.perf_counter() - t, len(run.requests), len(run.steps))
"""


def ten_thousand(runs: int, seqs: int | None, concurrency: int | None = None) -> dict:
    seconds = []
    load = 'rate=float("inf")' if concurrency is None else f"concurrency={concurrency}"
    for _ in range(runs):
        code = "import costmodel.serving\n" + ONE_RUN.replace("SEQS", repr(seqs)).replace("LOAD", load)
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": str(ROOT)})
        value, requests, steps = out.stdout.split()
        seconds.append(float(value))
    return {"what": f"10,000 requests of 512 + 128 tokens, llama3-8b, h100-sxm, vllm, max_num_seqs {seqs or 'default'}, "
                    + ("all at once" if concurrency is None else f"concurrency {concurrency}"),
            "runs": seconds, "median_s": statistics.median(seconds), "requests": int(requests), "steps": int(steps)}


def plan_search(processes: int | None = None) -> dict:
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.capacity import Target, plan_capacity

    start = time.perf_counter()
    hardware = [load_hardware(name) for name in ("h100-sxm", "h100-pcie", "a100-80gb", "h200")]
    result = plan_capacity(costmodel.load_model("llama3-70b"), hardware,
                           Target(10.0, 2.0, 0.06, requests=200, output="128"), tps=[2, 4],
                           max_num_seqs=[32, 64, 128, 256, 512], max_batched_tokens=[256, 512, 1024, 2048, 8192],
                           processes=processes)
    seconds = time.perf_counter() - start
    best = result["feasible"][0] if result["feasible"] else None
    return {"what": "plan --serve --rate 10 for llama3-70b (TTFT p99 <= 2 s, TPOT p99 <= 60 ms)",
            "configurations": result["configurations"], "seconds": seconds, "best": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-plan", action="store_true")
    parser.add_argument("--skip-10k", action="store_true", help="only the plan search")
    parser.add_argument("--processes", type=int, default=None, help="the plan search's pool (default: all cores)")
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    results = {}
    if not args.skip_10k:
        results = {"simulate_10k_default": ten_thousand(args.runs, None),
                   "simulate_10k_256_seqs": ten_thousand(args.runs, 256),
                   "simulate_10k_concurrency_256": ten_thousand(args.runs, None, 256)}
        for name in ("simulate_10k_default", "simulate_10k_256_seqs", "simulate_10k_concurrency_256"):
            print(json.dumps(results[name]))
    if not args.skip_plan:
        results["plan_search"] = plan_search(args.processes)
        print(json.dumps(results["plan_search"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
