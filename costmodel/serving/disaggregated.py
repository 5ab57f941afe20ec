"""Disaggregated prefill and decode (DistServe, Zhong et al. OSDI 2024; Splitwise, Patel et al.
ISCA 2024): a pool of replicas that only prefill, a pool that only decode, and each request's KV
cache sent from one to the other.

A request is prefilled in the prefill pool (its first token comes out there), then its cache
crosses the link between the pools: prompt tokens x KV bytes per token per GPU over one GPU's
inter-node link (each of a replica's tp GPUs sends its shard on its own link), plus the link's
latency; it then joins the decode pool as a request that holds its prompt's cache and first token.
Each pool is its own event loop of the same schedulers and step time (engine.py); a request's
figures join its two halves (queueing from the prefill pool, preemptions of both).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import metrics
from .engine import Timeline, simulate_replicas
from .kvcache import BlockPool
from .workload import Request


def transfer_seconds(hardware: Any, kv_bytes_per_token_per_gpu: int, prompt_tokens: int) -> float:
    link = hardware.link(hardware.gpus_per_node + 1)  # the pools sit on different nodes
    return prompt_tokens * kv_bytes_per_token_per_gpu / link + hardware.collective_latency_s


def run_disaggregated(requests: list[Request], replica: tuple, step: Any, prefill_replicas: int,
                      decode_replicas: int, max_model_len: int, hardware: Any, kv_bytes_per_token: int,
                      router: str = "round-robin") -> tuple[list, list, list]:
    """Rows, steps and inter-token latencies as run_replicas returns them; step rows' replicas
    0..P-1 are the prefill pool's, P..P+D-1 the decode pool's."""
    import numpy as np

    cls, blocks, block_size, seqs, tokens = replica
    pool = lambda count: [cls(BlockPool(blocks, block_size), seqs, tokens) for _ in range(count)]  # noqa: E731
    first = [replace(r, output_tokens=1) for r in requests]
    prefill = simulate_replicas(first, pool(prefill_replicas), step.seconds, max_model_len, router, True,
                                step.decode_run, host=getattr(step, "host_time", None))
    done = {s.request.id: (index, s) for index, timeline in enumerate(prefill) for s in timeline.sequences}
    second = [replace(r, arrival_s=done[r.id][1].token_times[0]
                      + transfer_seconds(hardware, kv_bytes_per_token, r.prompt_tokens), prefilled=True)
              for r in requests if r.output_tokens > 1]
    decode = simulate_replicas(second, pool(decode_replicas), step.seconds, max_model_len, router, True,
                               step.decode_run, host=getattr(step, "host_time", None))
    original = {r.id: r for r in requests}
    joined: dict[int, list] = {}
    for index, timeline in enumerate(decode):
        for s in timeline.sequences:
            _, head = done[s.request.id]
            s.request = original[s.request.id]
            s.token_times.insert(0, head.token_times[0])
            s.first_scheduled_s = head.first_scheduled_s
            s.preemptions += head.preemptions
            joined.setdefault(prefill_replicas + index, []).append(s)
    for index, s in done.values():
        if s.request.output_tokens == 1 and original[s.request.id].output_tokens == 1:
            joined.setdefault(index, []).append(s)
    rows, steps, itl = [], [], []
    for index, timeline in enumerate(prefill + decode):
        steps += metrics.step_rows(timeline, index)
    for index, sequences in sorted(joined.items()):
        view = Timeline(sequences, num_blocks=blocks)
        rows += metrics.request_rows(view, index)
        itl.append(metrics.inter_token_latencies(view))
    return rows, steps, [np.concatenate(itl) if itl else np.zeros(0)]
