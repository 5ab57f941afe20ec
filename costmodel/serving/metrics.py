"""Figures of a simulated run: per request (queueing, time to first token, time per output token,
inter-token latencies, end-to-end latency, preemptions) and aggregates (mean and p50/p90/p99,
throughput, goodput under SLOs, KV-block use over time).

Definitions (as vLLM's benchmark_serving.py reports them): TTFT = first token - arrival; TPOT =
(last token - first token) / (output tokens - 1); ITL = the gaps between a request's tokens;
e2e = last token - arrival; queueing = first step that runs it - arrival. Goodput: requests per
second that meet both SLOs (DistServe's definition).
"""

from __future__ import annotations

import bisect
import math
from operator import sub
from typing import Any

from .engine import Timeline

PERCENTILES = (50, 90, 99)
LATENCIES = ("queueing_s", "ttft_s", "tpot_s", "e2e_s")


def request_rows(timeline: Timeline, replica: int = 0) -> list[dict[str, Any]]:
    rows = []
    for s in timeline.sequences:
        r, times = s.request, s.token_times
        first, last = times[0], times[-1]
        rows.append({
            "id": r.id, "replica": replica, "arrival_s": r.arrival_s, "prompt_tokens": r.prompt_tokens,
            "output_tokens": r.output_tokens, "queueing_s": s.first_scheduled_s - r.arrival_s,
            "ttft_s": first - r.arrival_s,
            "tpot_s": (last - first) / (len(times) - 1) if len(times) > 1 else float("nan"),
            # the largest gap, as float(np.diff(times).max()) gave it (the same float subtractions),
            # without an array a request: plan --serve --rate reads 300 requests a point
            "max_itl_s": float(max(map(sub, times[1:], times[:-1]))) if len(times) > 1 else float("nan"),
            "e2e_s": last - r.arrival_s, "finish_s": last, "preemptions": s.preemptions,
            "cached_tokens": s.cached_tokens,
        })
    return rows


def inter_token_latencies(timeline: Timeline) -> Any:
    import numpy as np

    gaps = [np.diff(s.token_times) for s in timeline.sequences if len(s.token_times) > 1]
    return np.concatenate(gaps) if gaps else np.zeros(0)


def step_rows(timeline: Timeline, replica: int = 0) -> list[dict[str, Any]]:
    """The KV and batch timeline: each step's start, length, sequences, tokens and blocks used."""
    return [{"replica": replica, "start_s": st.start_s, "seconds": st.seconds, "sequences": len(st.entries),
             "tokens": st.tokens, "kv_blocks_used": timeline.num_blocks - st.free_blocks,
             "kv_use": 1 - st.free_blocks / timeline.num_blocks, "preempted": st.preempted}
            for st in timeline.steps]


def _stats(values: Any) -> dict[str, float]:
    import numpy as np

    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if not len(values):
        return {"mean": float("nan"), **{f"p{p}": float("nan") for p in PERCENTILES}}
    return {"mean": float(values.mean()), **{f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES}}


def summarize(requests: Any, steps: Any, itl: Any, slo_ttft: float | None = None,
              slo_tpot: float | None = None, rate: float | None = None) -> dict[str, Any]:
    """Aggregates of the per-request frame and the step frame (pandas); `rate` (Poisson arrivals a
    second, or None) for the sustained output rate (sustained_output)."""
    import numpy as np

    span = float(requests["finish_s"].max() - requests["arrival_s"].min()) or float("nan")
    met = np.ones(len(requests), dtype=bool)
    if slo_ttft is not None:
        met &= requests["ttft_s"].to_numpy() <= slo_ttft
    if slo_tpot is not None:
        tpot = requests["tpot_s"].to_numpy()
        met &= np.isnan(tpot) | (tpot <= slo_tpot)
    busy = float(steps["seconds"].sum()) if len(steps) else 0.0
    sustained, basis = sustained_output(requests.to_dict("records"), rate)
    weights = steps["seconds"].to_numpy() if len(steps) else np.zeros(0)
    return {
        "requests": int(len(requests)),
        "duration_s": span,
        **{name[:-2]: _stats(requests[name]) for name in LATENCIES},
        "itl": _stats(itl),
        "preemptions": int(requests["preemptions"].sum()),
        "throughput": {"requests_per_s": len(requests) / span,
                       "output_tokens_per_s": float(requests["output_tokens"].sum()) / span,
                       "total_tokens_per_s": float((requests["prompt_tokens"] + requests["output_tokens"]).sum()) / span,
                       "sustained_output_tokens_per_s": sustained, "sustained_basis": basis},
        "goodput": {"slo_ttft_s": slo_ttft, "slo_tpot_s": slo_tpot, "requests_per_s": float(met.sum()) / span,
                    "fraction_meeting_slo": float(met.mean())},
        "steps": int(len(steps)),
        "busy_fraction": busy / span / max(1, int(steps["replica"].max()) + 1 if len(steps) else 1),
        "kv_use": {"mean_over_time": float(np.average(steps["kv_use"], weights=weights)) if busy else 0.0,
                   "max": float(steps["kv_use"].max()) if len(steps) else 0.0},
        "batch": {"mean_sequences_over_time": float(np.average(steps["sequences"], weights=weights)) if busy else 0.0,
                  "max_sequences": int(steps["sequences"].max()) if len(steps) else 0},
    }


def sustained_output(rows: list[dict[str, Any]], rate: float | None) -> tuple[float, str]:
    """The output tokens a second a deployment sustains, which a price per token is over, and its basis.

    A run's throughput (vLLM benchmark_serving's output_throughput: the tokens over the first arrival to
    the last finish) counts the drain after the last arrival, so where the replicas keep up it moves with
    --requests: 300 requests at 20 req/s on one H100 read 2,109 tokens/s, 1,200 read 2,458, where the
    deployment serves the offered 20 x 128 = 2,560.
    - "offered": Poisson arrivals at `rate` that the replicas keep up with are served at that rate:
      rate x the requests' mean output tokens. They keep up when, in the window from the first finish
      (the pipeline full) to the last arrival (the load still on), some admission left nobody waiting.
    - "run": otherwise (a queue that never empties in that window, --rate inf, a trace or a closed
      loop, or arrivals that end before the first finish) the run's throughput, at most the offered
      rate: a backlog from start to end is the capacity. (The rate emitted between the first finish
      and the last admission was tried: at --rate 200 on one H100 it read 9,137 and 6,997 tokens/s with 1,000
      and 3,000 requests, the run's 6,553 and 6,745; the ramp and the drain offset each other.)"""
    arrivals = sorted(r["arrival_s"] for r in rows)
    admitted = sorted(r["arrival_s"] + r["queueing_s"] for r in rows)
    first_finish = min(r["finish_s"] for r in rows)
    tokens = sum(r["output_tokens"] for r in rows)
    offered = rate * tokens / len(rows) if rate is not None else None
    offered = offered if offered is not None and math.isfinite(offered) else None  # --rate inf, or 1e308 x 128
    if offered is not None:
        # a moment the queue was empty: an admission by which everyone arrived was admitted
        for when in admitted[bisect.bisect_left(admitted, first_finish):bisect.bisect_right(admitted, arrivals[-1])]:
            if bisect.bisect_right(arrivals, when) <= bisect.bisect_right(admitted, when + 1e-9):
                return offered, "offered"
    span = max(r["finish_s"] for r in rows) - arrivals[0]
    measured = tokens / span if span > 0 else float("nan")
    return (min(offered, measured) if offered is not None else measured), "run"
