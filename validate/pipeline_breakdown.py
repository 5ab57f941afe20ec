"""Korthikanti et al. Table 5's pipelined steps taken apart under the kernel model, and the model's
forward-backward (m + (p - 1)/v micro-batches of the slowest stage) beside Megatron-LM's interleaved
schedule replayed from its code (validate/megatron_interleaved.py) with the model's own per-chunk
seconds (issue 18, session 35, wt35_pipe: what in a pipelined Megatron step is short?).

    PYTHONPATH=. python validate/pipeline_breakdown.py

Per stage (the first, an inner one, the last) a micro-batch's layers (compute + exposed TP), its
extra over the inner stage (the embedding on the first, the final norm, LM head and loss on the
last), its pipeline sends (exposed); per step the bubble, the tied-embedding gradient all-reduce,
the optimizer. The replay takes a chunk's seconds as the inner stage's micro-batch over v, split
forward : backward as one layer's (published_breakdowns.layer_split), the first and last stages'
extras split 1 : 2 (a forward and its two backward GEMMs), and one blocking exchange as two of the
model's sends (a steady-state _communicate sends a tensor each way out of the rank's one NIC).
"""

from __future__ import annotations

from typing import Any

from costmodel.hardware import load_hardware
from costmodel.layout import ParallelEstimate
from costmodel.layout.kernel_step import KernelStepTime
from costmodel.layout.overlap import Overlap
from validate.megatron_interleaved import ChunkTimes, step_seconds
from validate.published_breakdowns import korthikanti_what_if, layer_split


def stage_rows(step_time: KernelStepTime) -> list[dict[str, Any]]:
    """A micro-batch on the first, an inner and the last stage (seconds)."""
    estimate = step_time.estimate
    p = estimate.layout.pp
    rows = []
    for rank in sorted({0, min(1, p - 1), p - 1}):
        times = step_time.stage(estimate.stages[rank])
        crossings = estimate.pipeline_exchange(estimate.stages[rank])[0]
        rows.append({"rank": rank, "work_s": times["compute"] + times["tp"] + times["contention"],
                     "compute_s": times["compute"], "tp_s": times["tp"], "pp_s": times["pp"], "crossings": crossings,
                     "tied_embedding_s": times["pp_step"], "parts": dict(step_time.part_runs(estimate.stages[rank]))})
    return rows


def decompose(estimate: ParallelEstimate, step_time: KernelStepTime) -> dict[str, Any]:
    """The step's terms, the model's forward-backward and the replayed schedule's with the same chunks."""
    layout = estimate.layout
    p, v, m = layout.pp, layout.virtual_stages, layout.microbatches
    step = step_time.step()
    stages = stage_rows(step_time)
    first, inner, last = stages[0], stages[min(1, len(stages) - 1)], stages[-1]
    slowest = next(row for row in stages if row["rank"] == step["slowest_stage"])
    per_microbatch = slowest["work_s"] + slowest["pp_s"]
    model_fb = (m + layout.bubble()) * per_microbatch
    split = layer_split(estimate, step_time)
    forward_share = split["forward_ms"] / (split["forward_ms"] + split["backward_ms"])
    chunk = inner["work_s"] / v
    head = last["work_s"] - inner["work_s"] if p > 1 else 0.0
    embedding = first["work_s"] - inner["work_s"] if p > 1 else 0.0
    exchange = 2 * inner["pp_s"] / inner["crossings"] if inner["crossings"] else 0.0
    times = ChunkTimes(forward_share * chunk, (1 - forward_share) * chunk, (head / 3, 2 * head / 3),
                       (embedding / 3, 2 * embedding / 3), exchange)
    replayed = step_seconds(p, v, m, times) if p > 1 else m * (chunk + head + embedding)
    return {"p": p, "v": v, "m": m, "stages": stages, "step_s": step["seconds"], "bubble_s": step["bubble_seconds"],
            "optimizer_s": step["optimizer_seconds"], "tied_embedding_s": max(row["tied_embedding_s"] for row in stages),
            "slowest_stage": step["slowest_stage"], "model_fb_s": model_fb, "replayed_fb_s": replayed,
            "forward_share": forward_share, "chunk": times, "rest_s": step["seconds"] - model_fb}


def korthikanti_rows(hidden: bool = False) -> list[dict[str, Any]]:
    """Table 5's rows decomposed; hidden: with wt35_dense's what-if (the backward's TP collectives
    under the weight-gradient GEMMs, Overlap.tp at their share, as published_breakdowns computes it)."""
    from reports.published_runs import korthikanti_runs

    hardware = load_hardware("a100-80gb")
    shares = {(row["model"], row["key"]): row["overlap_share"] for row in korthikanti_what_if()} if hidden else {}
    out = []
    for row, key, cfg, workload, layout in korthikanti_runs():
        estimate = ParallelEstimate(cfg, workload, layout)
        overlap = Overlap(tp=shares[(row[0], key)]) if hidden else Overlap()
        parts = decompose(estimate, KernelStepTime(estimate, hardware, overlap=overlap))
        out.append({"model": row[0], "key": key, "published_s": row[9] if key == "full" else row[10], **parts})
    return out


def main() -> None:
    for hidden in (False, True):
        print("Korthikanti Table 5 pipelined steps, kernel model" + (" with the backward TP collectives hidden "
                                                                    "(wt35_dense's what-if)" if hidden else ""))
        for r in korthikanti_rows(hidden):
            print(f"  {r['model']:>4} {r['key']:<7} p {r['p']} v {r['v']} m {r['m']}: published {r['published_s']:.2f} s, "
                  f"ours {r['step_s']:.3f} s ({r['published_s'] / r['step_s']:.3f}); slowest stage {r['slowest_stage']}")
            for s in r["stages"]:
                print(f"      stage {s['rank']:>2}: a micro-batch {1e3 * s['work_s']:7.2f} ms (compute {1e3 * s['compute_s']:.2f}"
                      f" + TP {1e3 * s['tp_s']:.2f}), sends {1e3 * s['pp_s']:.2f} ms ({s['crossings']})")
            print(f"      bubble {r['bubble_s']:.3f} s, tied-embedding all-reduce {1e3 * r['tied_embedding_s']:.1f} ms, "
                  f"optimizer {1e3 * r['optimizer_s']:.1f} ms, all beyond the forward-backward {r['rest_s']:.3f} s")
            print(f"      forward-backward: model {r['model_fb_s']:.3f} s, Megatron's schedule replayed "
                  f"{r['replayed_fb_s']:.3f} s (replayed / model {r['replayed_fb_s'] / r['model_fb_s']:.4f})")


if __name__ == "__main__":
    main()
