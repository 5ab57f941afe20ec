"""Where a step of transformers' continuous-batching engine spends its time on this CPU, by op.

The serving step-time model (costmodel/serving/steptime.py) predicts the leaves' work: the matrix
products, attention, norms, activations. benchmarks/bench_serve_steps.py measures the engine's
steps at 2.7-8x that. This script runs the same engine and trace (a 4-layer, 512-wide random
Llama in fp32, sdpa paged attention, one torch thread) and profiles every step's
ContinuousBatchProcessor._generation_step (batch inputs, forward, logits processing, sampling,
outputs) with torch.profiler, summing each aten op's self CPU time over the steps of each kind
(decode-only, mixed). The ops are grouped: the matrix products (what the leaves hold), the
attention kernel, the paged cache's reads and writes (index/scatter), and the rest; the Python
time between ops is the step's wall time less every op's self time. Then, without the engine,
the same model's matrix products alone (its 29 weight matrices, F.linear on 1, 8 and 128 rows;
median of 30 runs): whether the engine slows its matmuls, and the rate small-row fp32 matmuls
reach on this CPU. Last, without the profiler, each step's wall time and its model forward's
(timers around _generation_step and model.forward): the engine's work outside the forward
(batch inputs, logits processing, sampling, outputs), median per step.

    python benchmarks/profile_engine_step.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from benchmarks.bench_serve_steps import BUDGETS, MODEL, TRACE  # noqa: E402
from validate.serving_engine import TINY_LLAMA, run_engine, tiny_model  # noqa: E402

GROUPS = {
    "matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear"),
    "attention": ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::scaled_dot_product_attention",
                  "aten::_scaled_dot_product_attention_math", "aten::_softmax", "aten::softmax"),
    "cache index": ("aten::index", "aten::index_select", "aten::index_put_", "aten::_index_put_impl_",
                    "aten::scatter_", "aten::gather", "aten::index_copy_", "aten::take"),
    "copies": ("aten::copy_", "aten::to", "aten::_to_copy", "aten::contiguous", "aten::clone", "aten::cat"),
}


def group_of(name: str) -> str:
    for group, names in GROUPS.items():
        if name in names:
            return group
    return "other ops"


def profile() -> dict:
    from transformers.generation.continuous_batching.continuous_api import ContinuousBatchProcessor

    torch.set_num_threads(1)
    original = ContinuousBatchProcessor._generation_step
    per_kind: dict[str, dict] = defaultdict(lambda: {"steps": 0, "wall_s": 0.0, "ops": defaultdict(float),
                                                     "calls": defaultdict(int)})

    def profiled(self, model):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            original(self, model)
            wall = time.perf_counter() - start
        events = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in prof.key_averages()]
        STEPS.append((wall, events))  # the step's kind comes from the recorded schedule

    STEPS: list = []
    ContinuousBatchProcessor._generation_step = profiled
    try:
        model = tiny_model(0, **{k: v for k, v in MODEL.items() if k not in TINY_LLAMA or TINY_LLAMA[k] != v})
        run = run_engine(TRACE, scheduler="fifo", model=model, **BUDGETS)
    finally:
        ContinuousBatchProcessor._generation_step = original
    for (entries, _, _), (wall, events) in zip(run.schedule, STEPS):
        kind = per_kind["decode" if max(q for _, q in entries) == 1 else "mixed"]
        kind["steps"] += 1
        kind["wall_s"] += wall
        for key, seconds, count in events:
            kind["ops"][key] += seconds
            kind["calls"][key] += count
    out = {}
    for name, kind in per_kind.items():
        steps = kind["steps"]
        groups = defaultdict(float)
        for key, seconds in kind["ops"].items():
            groups[group_of(key)] += seconds
        ops_total = sum(groups.values())
        groups["python between ops"] = kind["wall_s"] - ops_total
        top = sorted(kind["ops"].items(), key=lambda kv: -kv[1])[:15]
        out[name] = {
            "steps": steps,
            "wall_ms_per_step": 1e3 * kind["wall_s"] / steps,
            "ms_per_step_by_group": {g: 1e3 * s / steps for g, s in sorted(groups.items(), key=lambda kv: -kv[1])},
            "ops_calls_per_step": sum(kind["calls"].values()) / steps,
            "top_ops_ms_per_step": {k: [round(1e3 * s / steps, 3), kind["calls"][k] / steps] for k, s in top},
        }
    return out


def matmuls_alone(rows_list=(1, 8, 128), runs: int = 30) -> dict:
    """The model's weight matrices multiplied by `rows` rows each, one after another (a decode
    step's products at batch = rows), without the engine: ms, GB/s of weights, GFLOP/s."""
    import statistics

    torch.set_num_threads(1)
    d, f, kv = MODEL["hidden_size"], MODEL["intermediate_size"], MODEL["num_key_value_heads"] * (
        MODEL["hidden_size"] // MODEL["num_attention_heads"])
    shapes = [(d, d), (d, kv), (d, kv), (d, d), (d, f), (d, f), (f, d)] * MODEL["num_hidden_layers"]
    shapes.append((d, MODEL["vocab_size"]))
    weights = [torch.randn(n, k) for k, n in shapes]
    out = {}
    for rows in rows_list:
        inputs = [torch.randn(rows, k) for k, _ in shapes]
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            for x, w in zip(inputs, weights):
                torch.nn.functional.linear(x, w)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        elements = sum(w.numel() for w in weights)
        out[str(rows)] = {"ms": 1e3 * median, "weights_GB_per_s": 4 * elements / median / 1e9,
                          "GFLOP_per_s": 2 * rows * elements / median / 1e9, "matrices": len(weights)}
    return out


def outside_forward() -> dict:
    """Median ms per step of the whole step, the model forward inside it, and the rest, by kind
    (timers only, no profiler)."""
    import statistics

    from transformers.generation.continuous_batching.continuous_api import ContinuousBatchProcessor

    torch.set_num_threads(1)
    original = ContinuousBatchProcessor._generation_step
    walls: list[float] = []
    forwards: list[float] = []

    def timed(self, model):
        start = time.perf_counter()
        original(self, model)
        walls.append(time.perf_counter() - start)

    ContinuousBatchProcessor._generation_step = timed
    try:
        model = tiny_model(0, **{k: v for k, v in MODEL.items() if k not in TINY_LLAMA or TINY_LLAMA[k] != v})
        forward = model.forward

        def timed_forward(*args, **kwargs):
            start = time.perf_counter()
            out = forward(*args, **kwargs)
            forwards.append(time.perf_counter() - start)
            return out

        model.forward = timed_forward
        run = run_engine(TRACE, scheduler="fifo", model=model, **BUDGETS)
    finally:
        ContinuousBatchProcessor._generation_step = original
    out = {}
    for kind in ("decode", "mixed"):
        rows = [(w, f) for (entries, _, _), w, f in zip(run.schedule, walls, forwards)
                if (max(q for _, q in entries) == 1) == (kind == "decode")][1:]  # the first step warms up
        out[kind] = {"steps": len(rows), "step_ms": 1e3 * statistics.median(w for w, _ in rows),
                     "forward_ms": 1e3 * statistics.median(f for _, f in rows),
                     "outside_forward_ms": 1e3 * statistics.median(w - f for w, f in rows)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    result = {"engine_steps": profile(), "matmuls_alone": matmuls_alone(), "outside_forward": outside_forward()}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
