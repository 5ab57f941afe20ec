"""Measured step times of transformers' continuous-batching engine on this CPU beside the serving
simulator's step time (costmodel/serving/steptime.py), step by step, with both time models.

Each round, in this process and right before the timed steps, calibrates `local` afresh
(validate/calibrate.py, what `hardware --measure` writes: matmul and vector FLOP/s, bandwidth,
per-block overhead, the GEMM efficiency by rows from the linear chain at 1 to 256 rows, one
tiny op's dispatch time, and torch sdpa's efficiency by query rows; one torch thread). It then runs a trace through the engine
(validate/serving_engine.py, a random Llama in fp32, sdpa paged attention) and times every step's
forward (ContinuousBatchProcessor._generation_step: the model, the logits and the sampling;
scheduling and batch preparation excluded), and predicts each recorded step from its (query
tokens, keys) mix:
- roofline: StepTime(time_model="roofline") on the calibrated `local`;
- kernels: StepTime() on the calibrated `local` as it is, the default: the kernel model with each
  GEMM at the measured efficiency for its rows, the attention at the measured efficiency for its
  queries, as the engine runs it (a masked step's sequences packed into one call per layer, every
  query against every key, not causal: kernel_facts.json eager_ops "packed_attention"), each eager
  op at the measured dispatch time, and the paged path's copies of the keys as bytes;
- kernels_peak_attention: the default without the attention efficiency by queries (the attention
  call at the peak, as the default was before calibrate measured it);
- kernels_rows: the default without the dispatch per op (dispatch_s_per_op None): each active
  leaf pays overhead_s_per_block once, as before the op counts, and the paged path's copies (which go
  with the counted implementation) are not charged;
- kernels_tiles: the kernel model as it was before the rows table (the same `local` without the
  rows table, attention table or dispatch, with sm_count = the torch threads, one core computing one tile at a
  time, and matmul_efficiency 1.0, flops_per_s being itself the large-GEMM rate): cuBLAS's tiles
  and waves (kernel_facts.json), a GPU's, and one launch per leaf;
- kernels_engine_op: the default kernel model with each op at the time one op takes inside the
  engine, not torch.add's: the 2-layer, 64-wide Llama of validate/serving_engine.py (its products
  take microseconds) through the same engine, each step's time over the ops it launches
  (validate/eager_op_counts.py, counted in a run apart; the model's and the engine's own ops
  included), the median over its steps. A benchmark-only figure from another model's steps, not
  the benchmark's; it shows how far the eager Python around each op goes beyond the dispatcher;
- kernels_gemms: the default kernel model with each GEMM's time measured on this CPU at its own shape
  (MeasuredGemmTimer: torch's linear of M x K by K x N through distinct weights of 64 MiB in all,
  so each reads its weights from memory, median of 3, at every token count the steps ran and
  every weight shape of the model, measured right after the timed steps): what the step would be
  if the kernel model's GEMMs were exact, so the rest of the gap is not theirs.
Reports, per kind of step (decode-only, mixed) and model, the median of measured / predicted and
the share of steps within 25%, per round with the load average, and their medians over rounds.

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
from costmodel.kernel_time import KernelTimer  # noqa: E402
from costmodel.presets import config_from_dict  # noqa: E402
from costmodel.serving.steptime import StepTime, serving_profile  # noqa: E402
from validate.calibrate import measure_local  # noqa: E402
from validate.serving_engine import TINY_LLAMA, run_engine, tiny_model  # noqa: E402

MODEL = {**TINY_LLAMA, "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 4,
         "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 2000}
TRACE = [(i, 24 + 40 * (i % 4), 24) for i in range(12)]
MODELS = ("roofline", "kernels", "kernels_peak_attention", "kernels_rows", "kernels_tiles", "kernels_gemms", "kernels_engine_op")
BUDGETS = dict(block_size=16, num_blocks=64, max_batch_tokens=128, max_requests=8)


def engine_seconds_per_op() -> float:
    """One op's time inside the engine: a near compute-free Llama's steps over their ops."""
    from validate.eager_op_counts import count_engine_steps

    trace, budgets = [(0, 6, 4), (5, 9, 3), (5, 5, 4), (5, 7, 2), (5, 3, 3)] * 2, \
        dict(scheduler="fifo", block_size=4, num_blocks=64, max_batch_tokens=16, max_requests=8)
    counted = count_engine_steps(trace, tiny_model(0), **budgets)
    timed = run_engine(trace, model=tiny_model(0), **budgets)
    layers = TINY_LLAMA["num_hidden_layers"]
    ops = [sum(n * (layers if p.startswith("decoder.layer.") else 1) for p, n in step["ops"].items())
           for step in counted]
    assert [len(s["queries"]) for s in counted] == [len(e) for e, _, _ in timed.schedule]
    return statistics.median(seconds / n for seconds, n in zip(timed.seconds[1:], ops[1:]))


class MeasuredGemmTimer(KernelTimer):
    """A KernelTimer whose GEMMs take the time torch takes for their shape on this CPU."""

    def __init__(self, hardware: Hardware, **options):
        super().__init__(hardware, "fp32", "sdpa", **options)
        self.measured: dict[tuple[int, int, int, int], float] = {}

    def measure(self, m: int, n: int, k: int, count: int = 1) -> float:
        from validate.calibrate import median_seconds

        key = (m, n, k, count)
        if key not in self.measured:
            # distinct weights of 64 MiB in all, one product each per pass: each product reads its
            # weights from memory, as a step's layers do (one weight reused stays in the cache)
            copies = max(1, -(-64 * 2**20 // (4 * n * k * count)))
            x = torch.randn(count, m, k).squeeze(0)
            weights = [torch.randn(count, n, k).squeeze(0) for _ in range(copies)]
            if count == 1:
                product = lambda: [torch.nn.functional.linear(x, w) for w in weights]  # noqa: E731
            else:
                product = lambda: [torch.bmm(x, w.transpose(1, 2)) for w in weights]  # noqa: E731
            self.measured[key] = median_seconds(product, 3, warmup=1) / copies
        return self.measured[key]

    def gemm_seconds(self, gemm, tile=None) -> float:
        return self.measure(gemm.m, gemm.n, gemm.k, gemm.count)


def one_round() -> dict:
    import dataclasses
    import os

    from costmodel.eager_ops import eager_op_counts

    load = os.getloadavg()[0]
    calibrated = measure_local()
    local = Hardware.from_dict(calibrated, source="measured now")
    cfg = config_from_dict({**MODEL, "model_type": "llama", "torch_dtype": "float32"}, "bench", "bench-llama")
    profile = serving_profile(cfg, attention="sdpa")
    rows = dataclasses.replace(local, dispatch_s_per_op=None)
    peak_attention = dataclasses.replace(local, attention_efficiency_by_queries={})
    tiles = dataclasses.replace(local, gemm_efficiency_by_rows={}, attention_efficiency_by_queries={},
                                dispatch_s_per_op=None, sm_count=torch.get_num_threads(),
                                matmul_efficiency={"fp32": 1.0})
    ops = eager_op_counts(cfg, "sdpa")
    assert ops is not None, "the benchmark's Llama is one the eager op counts are stated for"
    per_op = engine_seconds_per_op()
    steps = {"roofline": StepTime(cfg, local, "fp32", profile=profile, time_model="roofline"),
             "kernels_engine_op": StepTime(cfg, dataclasses.replace(local, dispatch_s_per_op=per_op), "fp32",
                                           profile=profile),
             "kernels": StepTime(cfg, local, "fp32", profile=profile),
             "kernels_peak_attention": StepTime(cfg, peak_attention, "fp32", profile=profile),
             "kernels_rows": StepTime(cfg, rows, "fp32", profile=profile),
             "kernels_tiles": StepTime(cfg, tiles, "fp32", profile=profile),
             "kernels_gemms": StepTime(cfg, local, "fp32", profile=profile, time_model="kernels",
                                       timer=MeasuredGemmTimer(local, eager_ops=ops))}
    from costmodel.kernel_time import Gemm

    timer = steps["kernels_gemms"].timer
    shapes = {(g.n, g.k) for group in ("tokens", "head") for kernels, _ in steps["kernels_gemms"].groups[group]
              for g in kernels(1, 1) if isinstance(g, Gemm)}
    model = tiny_model(0, **{k: v for k, v in MODEL.items() if k not in TINY_LLAMA or TINY_LLAMA[k] != v})
    run = run_engine(TRACE, scheduler="fifo", model=model, **BUDGETS)
    # the GEMMs at every token count the steps ran (M) and weight shape, right after the timed steps
    for m in sorted({sum(q for _, q in entries) for entries, _, _ in run.schedule} |
                    {len(entries) for entries, _, _ in run.schedule}):
        for n, k in sorted(shapes):
            timer.measure(m, n, k)
    rows = []
    cached: dict[int, int] = {}
    for (entries, _, finished), measured in zip(run.schedule, run.seconds):
        queries, keys = [], []
        for request, q in entries:  # keys: what each request has cached after this step
            cached[request] = cached.get(request, 0) + q
            queries.append(q)
            keys.append(cached[request])
        rows.append({"queries": queries, "keys": keys, "measured_s": measured,
                     "kind": "decode" if max(queries) == 1 else "mixed",
                     **{f"{name}_s": step.seconds(queries, keys) for name, step in steps.items()}})
        for request in finished:
            cached.pop(request, None)
    peak = local.flops_per_s["fp32"]
    return {"load_before": load, "load_after": os.getloadavg()[0], "steps": rows,
            "calibration": {"flops_per_s": peak, "bandwidth_bytes_per_s": local.bandwidth_bytes_per_s,
                            "vector_flops_per_s": local.vector_flops_per_s,
                            "overhead_s_per_block": local.overhead_s_per_block,
                            "dispatch_s_per_op": local.dispatch_s_per_op, "engine_seconds_per_op": per_op,
                            "gemm_efficiency_by_rows": calibrated["gemm_efficiency_by_rows"]["fp32"],
                            "gemm_rows_flops_per_s": calibrated["_gemm_rows_flops_per_s"]["fp32"],
                            "attention_efficiency_by_queries": calibrated["attention_efficiency_by_queries"]["fp32"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rounds = []
    for _ in range(args.rounds):
        result = one_round()
        rows = result["steps"][1:]  # the first step warms the engine up
        for name in MODELS:
            for kind in ("decode", "mixed"):
                ratios = [r["measured_s"] / r[f"{name}_s"] for r in rows if r["kind"] == kind]
                result[f"{name}_{kind}"] = {"median_ratio": statistics.median(ratios),
                                            "share_within_25pct": sum(abs(x - 1) <= 0.25 for x in ratios) / len(ratios),
                                            "median_measured_s": statistics.median(r["measured_s"] for r in rows
                                                                                   if r["kind"] == kind),
                                            "median_predicted_s": statistics.median(r[f"{name}_s"] for r in rows
                                                                                    if r["kind"] == kind)}
        rounds.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "steps"}))
    summary = {f"{name}_{kind}": {field: statistics.median(r[f"{name}_{kind}"][field] for r in rounds)
                                  for field in ("median_ratio", "share_within_25pct")}
               for name in MODELS for kind in ("decode", "mixed")}
    summary["loads"] = [(r["load_before"], r["load_after"]) for r in rounds]
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
