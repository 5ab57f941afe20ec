"""Measured step times of transformers' continuous-batching engine on this CPU beside the serving
simulator's step time (costmodel/serving/steptime.py), step by step, with both time models.

Each round, in this process and right before the timed steps, calibrates `local` afresh
(validate/calibrate.py, what `hardware --measure` writes: matmul and vector FLOP/s, bandwidth,
per-block overhead, the GEMM efficiency by rows from the linear chain at 1 to 256 rows, the GEMV
efficiency by inner width, one tiny op's dispatch time, the module code's and the engine's time per
op, the paged cache's copies cold, and torch sdpa's efficiency by query rows; one torch thread).
It then runs a trace through the engine
(validate/serving_engine.py, a random Llama in fp32, sdpa paged attention) `--repeats` times (the
engine is deterministic: the same schedule each run, checked) and times every step's forward
(ContinuousBatchProcessor._generation_step: the model, the logits and the sampling; scheduling and
batch preparation excluded), each step's time the median of its runs, its minor page faults beside
it; and predicts each recorded step from its (query tokens, keys) mix and the sequences whose
logits the engine keeps (validate/serving_engine.step_features):
- roofline: StepTime(time_model="roofline") on the calibrated `local`;
- kernels: StepTime() on the calibrated `local` as it is, the default: the kernel model with each
  GEMM at the measured efficiency for its rows (a one-row product at the measured GEMV efficiency for
  its inner width K: gemv_efficiency_by_inner), the attention at the measured efficiency for its
  queries, as the engine runs it (a masked step's sequences packed into one call per layer, every
  query against every key, not causal: kernel_facts.json eager_ops "packed_attention"), each of the
  engine's counted ops at the engine's measured time per op (engine_s_per_op: validate/calibrate.py
  engine_seconds_per_op, a compute-free 64-wide Llama's steps through the same engine over the ops
  they dispatch), and the paged path's copies of the keys, each call at the measured cold copy's fixed
  time and rate (cold_copies: validate/cold_copies.py, index_select and repeat_kv's clone timed cold
  at several sizes), each step charged the ops and copies of its attention module's case (eager_ops "cases");
- kernels_flat_copies: the default with the copies' bytes at the bandwidth (no cold_copies), as the
  default was before cold_copies;
- kernels_one_case: the default with every step charged the attention module's ops and copies of a
  masked step reading keys from the cache, whatever its mix (as before round 7: a sequence
  decoding alone runs neither repeat_kv nor its ops, a step with nothing cached no gather;
  costmodel/serving/eager_step.py);
- kernels_peak_attention: the default without the attention efficiency by queries (the attention
  call at the peak, as the default was before calibrate measured it);
- kernels_module_op: the default with each op at the module code's time per op (module_s_per_op:
  transformers' Llama decoder layers at one token, 32 wide, without the engine), as the default was
  before engine_s_per_op;
- kernels_flat_inner: the default without the GEMV table (one-row products at the rows table's one-row
  efficiency, the chain's, whatever their K), as the default was before gemv_efficiency_by_inner;
- kernels_before: without either (the default of the previous stop);
- kernels_add_op: the default with each eager op at one bare op's dispatch time (dispatch_s_per_op,
  an add of two 1-element tensors) instead of the module code's or the engine's;
- kernels_rows: the default without an op's time (dispatch_s_per_op, module_s_per_op, engine_s_per_op None): each active
  leaf pays overhead_s_per_block once, as before the op counts, and the paged path's copies (which go
  with the counted implementation) are not charged;
- kernels_tiles: the kernel model as it was before the rows table (the same `local` without the
  rows table, attention table or dispatch, with sm_count = the torch threads, one core computing one tile at a
  time, and matmul_efficiency 1.0, flops_per_s being itself the large-GEMM rate): cuBLAS's tiles
  and waves (kernel_facts.json), a GPU's, and one launch per leaf;
- kernels_gemms: the default kernel model with each GEMM's time measured on this CPU at its own shape
  (MeasuredGemmTimer: torch's linear of M x K by K x N through distinct weights of 64 MiB in all,
  so each reads its weights from memory, median of 3, at every token count the steps ran and
  every weight shape of the model, measured right after the timed steps): what the step would be
  if the kernel model's GEMMs were exact, so the rest of the gap is not theirs.
Reports, per kind of step (decode-only, mixed) and model, the median of measured / predicted and
the share of steps within 25%, per round with the load average, and their medians over rounds; the
measurement's own spread (each run of a step over the median of its runs: a model cannot agree
with the steps more closely than they agree with themselves); and, for the default model, each
step pooled over the rounds (the median of its measured times over the median of its predictions),
its misses by what the step was (a request joined, one finished the step before, cache blocks
opened, one sequence alone, 1 MiB or more of page faults), the worst eight, and how far the
rounds' calibrations moved the same step's prediction and the rounds the same step's measured time.
Each round times the calibration's linear chain again right after its timed steps (FLOP/s at 256
tokens, bytes/s at one): a round whose chain moved by more than 10% from its calibration ran on
another machine than the one calibrated (other jobs on the 2 shared cores, or on the host), and the
default's medians are also given over the rounds that stayed within it. `--steady-malloc` keeps glibc from
returning freed memory to the kernel for the whole run (steady_malloc).

    python benchmarks/bench_serve_steps.py [--rounds 3] [--repeats 3] [--steady-malloc] [--json out.json]
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
from validate.calibrate import CHAIN_RUNS, LinearChain, measure_local  # noqa: E402
from validate.serving_engine import TINY_LLAMA, run_engine, step_features, tiny_model  # noqa: E402

MODEL = {**TINY_LLAMA, "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 4,
         "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 2000}
TRACE = [(i, 24 + 40 * (i % 4), 24) for i in range(12)]
MODELS = ("roofline", "kernels", "kernels_one_case", "kernels_peak_attention", "kernels_rows", "kernels_tiles", "kernels_gemms",
          "kernels_module_op", "kernels_flat_inner", "kernels_before", "kernels_add_op", "kernels_flat_copies")
BUDGETS = dict(block_size=16, num_blocks=64, max_batch_tokens=128, max_requests=8)


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


def one_round(repeats: int = 1) -> dict:
    import dataclasses
    import os

    from costmodel.eager_ops import eager_op_counts

    load = os.getloadavg()[0]
    calibrated = measure_local()
    local = Hardware.from_dict(calibrated, source="measured now")
    cfg = config_from_dict({**MODEL, "model_type": "llama", "torch_dtype": "float32"}, "bench", "bench-llama")
    profile = serving_profile(cfg, attention="sdpa")
    rows = dataclasses.replace(local, dispatch_s_per_op=None, module_s_per_op=None, engine_s_per_op=None)
    peak_attention = dataclasses.replace(local, attention_efficiency_by_queries={})
    tiles = dataclasses.replace(local, gemm_efficiency_by_rows={}, attention_efficiency_by_queries={},
                                gemv_efficiency_by_inner={}, dispatch_s_per_op=None, module_s_per_op=None,
                                engine_s_per_op=None, sm_count=torch.get_num_threads(),
                                matmul_efficiency={"fp32": 1.0})
    ops = eager_op_counts(cfg, "sdpa")
    assert ops is not None, "the benchmark's Llama is one the eager op counts are stated for"
    steps = {"roofline": StepTime(cfg, local, "fp32", profile=profile, time_model="roofline"),
             "kernels_module_op": StepTime(cfg, dataclasses.replace(local, engine_s_per_op=None), "fp32",
                                           profile=profile),
             "kernels_flat_inner": StepTime(cfg, dataclasses.replace(local, gemv_efficiency_by_inner={}), "fp32",
                                            profile=profile),
             "kernels_before": StepTime(cfg, dataclasses.replace(local, gemv_efficiency_by_inner={}, engine_s_per_op=None),
                                        "fp32", profile=profile),
             "kernels_add_op": StepTime(cfg, dataclasses.replace(local, module_s_per_op=None, engine_s_per_op=None),
                                        "fp32", profile=profile),
             "kernels": StepTime(cfg, local, "fp32", profile=profile),
             "kernels_flat_copies": StepTime(cfg, dataclasses.replace(local, cold_copies={}), "fp32", profile=profile),
             "kernels_peak_attention": StepTime(cfg, peak_attention, "fp32", profile=profile),
             "kernels_rows": StepTime(cfg, rows, "fp32", profile=profile),
             "kernels_tiles": StepTime(cfg, tiles, "fp32", profile=profile),
             "kernels_gemms": StepTime(cfg, local, "fp32", profile=profile, time_model="kernels",
                                       timer=MeasuredGemmTimer(local, eager_ops=ops))}
    steps["kernels_one_case"] = StepTime(cfg, local, "fp32", profile=profile)
    steps["kernels_one_case"].eager_step.cases = {}  # every step charged the masked, cached case
    from costmodel.kernel_time import Gemm

    timer = steps["kernels_gemms"].timer
    shapes = {(g.n, g.k) for group in ("tokens", "head") for kernels, _ in steps["kernels_gemms"].groups[group]
              for g in kernels(1, 1) if isinstance(g, Gemm)}
    model = tiny_model(0, **{k: v for k, v in MODEL.items() if k not in TINY_LLAMA or TINY_LLAMA[k] != v})
    runs = [run_engine(TRACE, scheduler="fifo", model=model, **BUDGETS) for _ in range(repeats)]
    if any(run.schedule != runs[0].schedule for run in runs):
        raise RuntimeError("the engine scheduled the same trace differently in two runs.")
    # the GEMMs at every token count the steps ran (M) and weight shape, right after the timed steps
    for m in sorted({sum(q for _, q in entries) for entries, _, _ in runs[0].schedule} |
                    {len(entries) for entries, _, _ in runs[0].schedule}):
        for n, k in sorted(shapes):
            timer.measure(m, n, k)
    # did the machine stay as calibrated? the calibration's chain again, right after the timed runs
    chain = LinearChain()
    drift = {"flops": chain.flops_per_s(*CHAIN_RUNS["fp32"]) / local.flops_per_s["fp32"],
             "bandwidth": chain.bytes_per_s() / local.bandwidth_bytes_per_s}
    del chain
    rows = []
    for index, step in enumerate(step_features(runs[0], TRACE, BUDGETS["block_size"])):
        repeated = [run.seconds[index] for run in runs]
        rows.append({**step, "measured_s": statistics.median(repeated), "repeats_s": repeated,
                     "faults": [run.faults[index] for run in runs],
                     **{f"{name}_s": model_step.seconds(step["queries"], step["keys"], step["emitting"])
                        for name, model_step in steps.items()}})
    peak = local.flops_per_s["fp32"]
    return {"load_before": load, "load_after": os.getloadavg()[0], "steps": rows, "drift": drift,
            "calibration": {"flops_per_s": peak, "bandwidth_bytes_per_s": local.bandwidth_bytes_per_s,
                            "vector_flops_per_s": local.vector_flops_per_s,
                            "overhead_s_per_block": local.overhead_s_per_block,
                            "dispatch_s_per_op": local.dispatch_s_per_op, "module_s_per_op": local.module_s_per_op,
                            "engine_s_per_op": local.engine_s_per_op,
                            "cold_copies": calibrated.get("cold_copies", {}),
                            "cold_copy_seconds": calibrated.get("_cold_copy_seconds", {}),
                            "gemv_efficiency_by_inner": calibrated["gemv_efficiency_by_inner"]["fp32"],
                            "gemm_efficiency_by_rows": calibrated["gemm_efficiency_by_rows"]["fp32"],
                            "gemm_rows_flops_per_s": calibrated["_gemm_rows_flops_per_s"]["fp32"],
                            "attention_efficiency_by_queries": calibrated["attention_efficiency_by_queries"]["fp32"]}}


FEATURES = ("joined", "after_finish", "blocks", "alone", "faults")
DRIFT = 0.1  # the chain after the steps against the calibration's, for a round to count as steady
FAULTS = 256  # minor page faults (4 KiB pages: 1 MiB) for a step to count as faulting


def steady_malloc() -> None:
    """glibc's malloc told to keep what it frees (mallopt(3): M_MMAP_MAX 0, no allocation from a
    fresh mapping; M_TRIM_THRESHOLD 1 GiB, no return of the heap's top to the kernel), so a step's
    tensors reuse pages already touched, as a caching allocator (jemalloc, tcmalloc: the ones
    PyTorch's CPU tuning guide recommends) does."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6")
    if not (libc.mallopt(-4, 0) and libc.mallopt(-1, 2**30)):
        raise RuntimeError("glibc's mallopt refused M_MMAP_MAX or M_TRIM_THRESHOLD.")


def kind_summary(rows: list[dict], name: str, kind: str) -> dict:
    """One round's steps of a kind: the median of measured / predicted and the share within 25%."""
    ratios = [r["measured_s"] / r[f"{name}_s"] for r in rows if r["kind"] == kind]
    return {"median_ratio": statistics.median(ratios), "share_within_25pct": within(ratios),
            "median_measured_s": statistics.median(r["measured_s"] for r in rows if r["kind"] == kind),
            "median_predicted_s": statistics.median(r[f"{name}_s"] for r in rows if r["kind"] == kind)}


def within(ratios: list[float]) -> float:
    return sum(abs(x - 1) <= 0.25 for x in ratios) / len(ratios)


def spread(rows: list[dict], kind: str) -> dict:
    """The measurement's own spread: each repeat of a step over the median of its repeats."""
    ratios = [x / r["measured_s"] for r in rows if r["kind"] == kind for x in r["repeats_s"]]
    return {"repeats_within_25pct_of_their_median": within(ratios),
            "median_abs_deviation": statistics.median(abs(x - 1) for x in ratios)}


def pooled(rounds: list[dict], name: str) -> list[dict]:
    """Each step (the first left out) over all rounds: the median of its measured times (each a
    median of repeats) over the median of its predictions (each from its round's calibration)."""
    out = []
    for index in range(1, len(rounds[0]["steps"])):
        step = rounds[0]["steps"][index]
        measured = statistics.median(r["steps"][index]["measured_s"] for r in rounds)
        predicted = statistics.median(r["steps"][index][f"{name}_s"] for r in rounds)
        faults = statistics.median(f for r in rounds for f in r["steps"][index]["faults"])
        predictions = [r["steps"][index][f"{name}_s"] / predicted for r in rounds]
        out.append({"step": index, "kind": step["kind"], "sequences": len(step["queries"]),
                    "query_tokens": sum(step["queries"]), "keys": sum(step["keys"]),
                    **{k: step[k] for k in ("joined", "after_finish", "blocks", "alone")}, "faults": faults,
                    "measured_s": measured, "predicted_s": predicted, "ratio": measured / predicted,
                    "predictions_over_their_median": [min(predictions), max(predictions)]})
    return out


def across_rounds(rounds: list[dict]) -> dict:
    """The same step in different rounds (minutes apart): each round's measured time (a median of
    repeats) and each round's prediction over the step's median across rounds, within 25%."""
    measured, predicted = [], []
    for index in range(1, len(rounds[0]["steps"])):
        times = [r["steps"][index]["measured_s"] for r in rounds]
        models = [r["steps"][index]["kernels_s"] for r in rounds]
        measured += [t / statistics.median(times) for t in times]
        predicted += [m / statistics.median(models) for m in models]
    return {"measured_within_25pct_of_their_median": within(measured),
            "predicted_within_25pct_of_their_median": within(predicted)}


def by_feature(steps: list[dict]) -> dict:
    """Per kind and feature, the steps with it and without it: count, median ratio, share within 25%."""
    out = {}
    for kind in ("decode", "mixed"):
        mine = [s for s in steps if s["kind"] == kind]
        for feature in FEATURES:
            test = (lambda s: s["faults"] >= FAULTS) if feature == "faults" else (lambda s, f=feature: bool(s[f]))
            for label, group in (("with", [s for s in mine if test(s)]), ("without", [s for s in mine if not test(s)])):
                if group:
                    ratios = [s["ratio"] for s in group]
                    out[f"{kind} {label} {feature}"] = {"steps": len(group), "median_ratio": statistics.median(ratios),
                                                         "share_within_25pct": within(ratios)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="runs of the trace per round; each step's time is "
                        "the median of its runs")
    parser.add_argument("--steady-malloc", action="store_true", help="keep glibc from returning freed memory to "
                        "the kernel (steady_malloc), so no step pays first touches of fresh pages")
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    if args.rounds < 1 or args.repeats < 1:
        parser.error("--rounds and --repeats must be at least 1.")
    if args.steady_malloc:
        steady_malloc()
    torch.set_num_threads(1)
    rounds = []
    for _ in range(args.rounds):
        result = one_round(args.repeats)
        rows = result["steps"][1:]  # the first step warms the engine up
        for name in MODELS:
            for kind in ("decode", "mixed"):
                result[f"{name}_{kind}"] = kind_summary(rows, name, kind)
        for kind in ("decode", "mixed"):
            result[f"measurement_{kind}"] = spread(rows, kind)
        rounds.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "steps"}))
    summary = {f"{name}_{kind}": {field: statistics.median(r[f"{name}_{kind}"][field] for r in rounds)
                                  for field in ("median_ratio", "share_within_25pct")}
               for name in MODELS for kind in ("decode", "mixed")}
    steps = pooled(rounds, "kernels")
    summary["measurement"] = {kind: {field: statistics.median(r[f"measurement_{kind}"][field] for r in rounds)
                                     for field in ("repeats_within_25pct_of_their_median", "median_abs_deviation")}
                              for kind in ("decode", "mixed")}
    summary["kernels_pooled"] = {kind: {"median_ratio": statistics.median(s["ratio"] for s in steps if s["kind"] == kind),
                                        "share_within_25pct": within([s["ratio"] for s in steps if s["kind"] == kind])}
                                 for kind in ("decode", "mixed")}
    summary["kernels_pooled_by_feature"] = by_feature(steps)
    summary["kernels_pooled_worst"] = [" ".join(f"{k}={round(v, 3) if isinstance(v, float) else v}"
                                                for k, v in s.items() if k != "predictions_over_their_median")
                                       for s in sorted(steps, key=lambda s: -abs(s["ratio"] - 1))[:8]]
    summary["calibration"] = {"predictions_within_25pct_of_their_median": within(
        [x for s in steps for x in s["predictions_over_their_median"]]),
        "peak_flops_per_s": [r["calibration"]["flops_per_s"] for r in rounds]}
    summary["loads"] = [(r["load_before"], r["load_after"]) for r in rounds]
    # rounds in which the machine stayed as calibrated (the chain after the steps within 10% of the
    # calibration's, in FLOP/s and in bytes/s): the default model's medians over those alone
    summary["drift"] = [r["drift"] for r in rounds]
    steady = [r for r in rounds if all(abs(x - 1) <= DRIFT for x in r["drift"].values())]
    summary["kernels_steady_rounds"] = {"rounds": len(steady), **({
        kind: {field: statistics.median(r[f"kernels_{kind}"][field] for r in steady)
               for field in ("median_ratio", "share_within_25pct")} for kind in ("decode", "mixed")} if steady else {})}
    summary["same_step_across_rounds"] = across_rounds(rounds)
    summary["options"] = {"repeats": args.repeats, "steady_malloc": args.steady_malloc}
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
