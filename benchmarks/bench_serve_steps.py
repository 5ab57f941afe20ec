"""Measured step times of transformers' continuous-batching engine on this CPU beside the serving
simulator's step time (costmodel/serving/steptime.py) on the `local` roofline, step by step.

Each round calibrates `local` afresh (validate/calibrate.py: matmul and vector FLOP/s, bandwidth,
per-block overhead; one torch thread), runs a trace through the engine (validate/serving_engine.py,
a random Llama in fp32, sdpa paged attention) and times every step's forward
(ContinuousBatchProcessor._generation_step: the model, the logits and the sampling; scheduling
and batch preparation excluded), then predicts each recorded step from its (query tokens, keys)
mix. Reports, per kind of step (decode-only, mixed), the median of measured / predicted and the
share of steps within 25%.

    python benchmarks/bench_serve_steps.py [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from costmodel.hardware import Hardware  # noqa: E402
from costmodel.presets import config_from_dict  # noqa: E402
from costmodel.serving.steptime import StepTime, serving_profile  # noqa: E402
from validate.calibrate import measure_local  # noqa: E402
from validate.serving_engine import TINY_LLAMA, run_engine, tiny_model  # noqa: E402

MODEL = {**TINY_LLAMA, "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 4,
         "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 2000}
TRACE = [(i, 24 + 40 * (i % 4), 24) for i in range(12)]
BUDGETS = dict(block_size=16, num_blocks=64, max_batch_tokens=128, max_requests=8)


def one_round() -> list[dict]:
    local = Hardware.from_dict(measure_local(), source="measured now")
    cfg = config_from_dict({**MODEL, "model_type": "llama", "torch_dtype": "float32"}, "bench", "bench-llama")
    step = StepTime(cfg, local, "fp32", profile=serving_profile(cfg, attention="sdpa"))
    model = tiny_model(0, **{k: v for k, v in MODEL.items() if k not in TINY_LLAMA or TINY_LLAMA[k] != v})
    run = run_engine(TRACE, scheduler="fifo", model=model, **BUDGETS)
    rows = []
    for (entries, _, _), measured in zip(run.schedule, run.seconds):
        queries = [q for _, q in entries]
        # keys: what each request has cached after this step, replayed from the schedule
        rows.append({"queries": queries, "measured_s": measured})
    cached: dict[int, int] = {}
    for row, (entries, _, finished) in zip(rows, run.schedule):
        keys = []
        for request, q in entries:
            cached[request] = cached.get(request, 0) + q
            keys.append(cached[request])
        row["predicted_s"] = step.seconds(row["queries"], keys)
        row["kind"] = "decode" if max(row["queries"]) == 1 else "mixed"
        for request in finished:
            cached.pop(request, None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    summary = {}
    for kind in ("decode", "mixed"):
        summary[kind] = {"ratios": [], "within_25": []}
    for _ in range(args.rounds):
        rows = one_round()
        for kind in ("decode", "mixed"):
            ratios = [r["measured_s"] / r["predicted_s"] for r in rows[1:] if r["kind"] == kind]
            summary[kind]["ratios"].append(statistics.median(ratios))
            summary[kind]["within_25"].append(sum(abs(x - 1) <= 0.25 for x in ratios) / len(ratios))
        summary.setdefault("steps", len(rows))
    result = {kind: {"median_ratio_by_round": v["ratios"], "median_ratio": statistics.median(v["ratios"]),
                     "share_within_25pct": statistics.median(v["within_25"])}
              for kind, v in summary.items() if kind != "steps"}
    result["steps"] = summary["steps"]
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
