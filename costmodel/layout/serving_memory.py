"""The memory of the most loaded rank while a layout serves (plan's serving candidates and
`simulate --layout`'s decode read it; apart from plan.py and time.py so neither imports the other).
"""

from __future__ import annotations

import dataclasses

from .rank import ParallelEstimate


def serving_memory(estimate: ParallelEstimate, chunk: int | None = None) -> dict[str, int]:
    """The most loaded rank while serving: its weights (ParallelEstimate.weight_bytes: the dtype's
    bytes per parameter, quantized shards as stored), the modules' buffers, and the larger of the
    two phases as memory.inference_phases takes them without a layout: the prefill (its KV cache of
    the prompt, the n tokens' ids on the first stage and the gathered logits on the last) and the
    last decode step (the KV cache at n + T - 1, in --kv-dtype's bytes, one token's ids and logits).
    kv_cache and transient (its ids, and its logits or its largest forward transient) are those of the phase that peaks, so the row's parts
    add up to its total (the last decode step's cache unless the prefill peaks). The prefill
    is Hugging Face generate's: the last position's logits only (tree.generate_logits_to_keep).
    chunk: an engine's token budget (vLLM's max_num_batched_tokens, serving/budgets.py): its prefill
    runs at most that many tokens a step, so the prefill's transient is one chunk's (prefill_transient);
    None: the whole batch's prompts in one forward, as generate runs them (simulate --layout, estimate's fit).
    With a chunk the row also holds `whole_prefill_total`: the most loaded rank's total with generate's whole-batch
    prefill, what `simulate` with the layout sizes (plan --serve fit 62.49 GiB where simulate needs 92.60)."""
    from ..tree import generate_logits_to_keep  # here: a warm training plan never imports the tree

    cfg, workload = estimate.cfg, estimate.workload
    generate = dataclasses.replace(workload, logits_to_keep=generate_logits_to_keep(cfg, workload.impl))
    prefill = ParallelEstimate(cfg, generate, estimate.layout, phase="prefill")
    worst, whole = None, 0
    for stage, prompt_stage in zip(estimate.stages, prefill.stages):
        weights = estimate.weight_bytes(stage)
        buffers = estimate.on_stage(stage, "buffers", per_stage=True)
        prompt_kv = prefill.on_stage(prompt_stage, "kv_cache")
        phases = [(estimate.on_stage(stage, "kv_cache"), _ids_and_logits(estimate, stage)),
                  (prompt_kv, _ids_and_logits(prefill, prompt_stage, chunk))]
        peak_kv, transient = max(phases, key=sum)
        row = {"stage": stage.rank, "weights": weights, "kv_cache": peak_kv, "buffers": buffers,
               "transient": transient, "total": weights + buffers + peak_kv + transient}
        if worst is None or row["total"] > worst["total"]:
            worst = row
        whole = max(whole, weights + buffers + max(sum(phases[0]), prompt_kv + _ids_and_logits(prefill, prompt_stage)))
    return worst if chunk is None else {**worst, "whole_prefill_total": whole}


def _ids_and_logits(estimate: ParallelEstimate, stage, chunk: int | None = None) -> int:
    """Bytes of a phase's ids passed in (the first stage's) and the larger of the logits returned,
    gathered over tp (the last stage's), and the largest no-grad transient of one block (never
    live together: memory.phase_bytes; an eager softmax's scores, the FFN's hidden tensors)."""
    logits = estimate.numbers["logits"] if stage.last else 0
    return estimate.on_stage(stage, "inputs") + max(logits, prefill_transient(estimate, chunk))


def prefill_transient(prefill: ParallelEstimate, chunk: int | None) -> int:
    """The largest no-grad transient of one block's run in a prefill of the rank's b x n tokens, or,
    under an engine's token budget `chunk`, of one step's min(chunk, b n) tokens: both terms scale with
    the step's query tokens (the FFN's hidden tensors, tokens x d_ff; an eager softmax's scores,
    queries x the prompt's n keys, a bound on a chunk's keys), so the whole batch's is scaled by
    min(chunk, b n) / (b n), exact (each term is a multiple of the tokens)."""
    whole = prefill.numbers.get("forward_transient", 0)
    tokens = prefill.values["b"] * prefill.values["n"]
    if chunk is None or chunk >= tokens:
        return whole
    return -(-whole * chunk // tokens)
