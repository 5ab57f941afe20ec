"""The memory of the most loaded rank while a layout serves (plan's serving candidates and
`simulate --layout`'s decode read it; apart from plan.py and time.py so neither imports the other).
"""

from __future__ import annotations

from .rank import ParallelEstimate


def serving_memory(estimate: ParallelEstimate) -> dict[str, int]:
    """The most loaded rank while serving: its weights (ParallelEstimate.weight_bytes: the dtype's
    bytes per parameter, quantized shards as stored), its share of the KV cache at the last step
    (in --kv-dtype's bytes) and the modules' buffers."""
    worst = None
    for stage in estimate.stages:
        weights = estimate.weight_bytes(stage)
        kv = estimate.on_stage(stage, "kv_cache")
        buffers = estimate.on_stage(stage, "buffers", per_stage=True)
        row = {"stage": stage.rank, "weights": weights, "kv_cache": kv, "buffers": buffers,
               "total": weights + kv + buffers}
        if worst is None or row["total"] > worst["total"]:
            worst = row
    return worst
