"""The memory of the most loaded rank while a layout serves (plan's serving candidates and
`simulate --layout`'s decode read it; apart from plan.py and time.py so neither imports the other).
"""

from __future__ import annotations

import dataclasses

from .rank import ParallelEstimate


def serving_memory(estimate: ParallelEstimate) -> dict[str, int]:
    """The most loaded rank while serving: its weights (ParallelEstimate.weight_bytes: the dtype's
    bytes per parameter, quantized shards as stored), the modules' buffers, and the larger of the
    two phases as memory.inference_phases takes them without a layout: the prefill (its KV cache of
    the prompt, the n tokens' ids on the first stage and the gathered logits on the last) and the
    last decode step (the KV cache at n + T - 1, in --kv-dtype's bytes, one token's ids and logits).
    kv_cache and transient (its ids, and its logits or its largest forward transient) are those of the phase that peaks, so the row's parts
    add up to its total (the last decode step's cache unless the prefill peaks). The prefill
    is Hugging Face generate's: the last position's logits only (tree.generate_logits_to_keep)."""
    from ..tree import generate_logits_to_keep  # here: a warm training plan never imports the tree

    cfg, workload = estimate.cfg, estimate.workload
    generate = dataclasses.replace(workload, logits_to_keep=generate_logits_to_keep(cfg, workload.impl))
    prefill = ParallelEstimate(cfg, generate, estimate.layout, phase="prefill")
    worst = None
    for stage, prompt_stage in zip(estimate.stages, prefill.stages):
        weights = estimate.weight_bytes(stage)
        buffers = estimate.on_stage(stage, "buffers", per_stage=True)
        phases = [(held.on_stage(at, "kv_cache"), _ids_and_logits(held, at))
                  for held, at in ((estimate, stage), (prefill, prompt_stage))]
        peak_kv, transient = max(phases, key=sum)
        row = {"stage": stage.rank, "weights": weights, "kv_cache": peak_kv, "buffers": buffers,
               "transient": transient, "total": weights + buffers + peak_kv + transient}
        if worst is None or row["total"] > worst["total"]:
            worst = row
    return worst


def _ids_and_logits(estimate: ParallelEstimate, stage) -> int:
    """Bytes of a phase's ids passed in (the first stage's) and the larger of the logits returned,
    gathered over tp (the last stage's), and the largest no-grad transient of one block (never
    live together: memory.phase_bytes; an eager softmax's scores, the FFN's hidden tensors)."""
    logits = estimate.numbers["logits"] if stage.last else 0
    return estimate.on_stage(stage, "inputs") + max(logits, estimate.numbers.get("forward_transient", 0))
