"""The paged cache's copies timed cold on this CPU, for the hardware file's cold_copies
(`hardware --measure`: validate/calibrate.py and validate/hardware_file.py call cold_copies).

transformers' continuous-batching engine (paged sdpa path) copies every key a step reads twice
a layer, K's and V's each (kernel_facts.json eager_ops "copies"): the cache's index_select of the
keys out of the paged cache (cache_allocators/full_attention.py), then repeat_kv's clone of the
gathered keys to every query head (integrations/sdpa_attention.py). Between one layer's copies and
the next step's the layers' weights stream through the caches, so each copy starts cold; on a
2-core EPYC VM such copies ran at 0.6-2.8 GB/s against an 11-12 GB/s stream, with a fixed time
per call of a few hundred microseconds (validate/FINDINGS.md, "Issue 19: the engine's time per op").

The microbenchmark: a paged cache of COPY_CACHE_KEYS keys x COPY_KV_HEADS heads x COPY_HEAD_DIM
(fp32: the serving benchmark's Llama, 4 KV heads of 64 for 8 query heads), the keys of each count
in COPY_KEYS gathered in random blocks of COPY_BLOCK (as the engine's read index holds a
sequence's blocks), then the gathered keys as the engine views them ([1, h_kv, keys, d_h])
copied to COPY_HEADS heads as repeat_kv does; a FLUSH_MEGABYTES read of another tensor before
each timed call, the counts in turn, `repeats` times round, the median of each. Cold caches, warm
pages: a WARM_MEGABYTES tensor is allocated and freed first, so that the outputs reuse memory
already touched, as in the engine's steps, which take no page faults (in a fresh process the clone
otherwise wrote to fresh pages and read 1.9-2.2 GB/s, against 6.7-7.9 after). Each op's
medians are fitted by least squares as T = s_per_call + bytes / bytes_per_s, bytes as
kernel_facts.json counts them (what the call reads and writes). A microbenchmark of the op, not
the engine's steps.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

#: The keys each timed call copies, and the cache and heads it copies them in (fp32).
COPY_KEYS = (64, 128, 256, 384, 512, 768, 1024)
COPY_CACHE_KEYS, COPY_BLOCK = 8192, 16
COPY_KV_HEADS, COPY_HEADS, COPY_HEAD_DIM = 4, 8, 64
#: What is read between timed calls to evict the copies' operands (larger than the L3 here, 32 MiB).
FLUSH_MEGABYTES = 64
#: A tensor allocated and freed before the timed calls, larger than their outputs (under glibc's
#: largest mmap threshold, 32 MiB), so that the outputs reuse pages already touched.
WARM_MEGABYTES = 16


def repeat_kv(hidden: torch.Tensor, n_rep: int) -> torch.Tensor:
    """transformers' repeat_kv (integrations/sdpa_attention.py): [b, h_kv, s, d] to [b, h_kv n_rep, s, d],
    a copy (aten clone) of the expanded view."""
    batch, kv_heads, keys, head_dim = hidden.shape
    expanded = hidden[:, :, None, :, :].expand(batch, kv_heads, n_rep, keys, head_dim)
    return expanded.reshape(batch, kv_heads * n_rep, keys, head_dim)


def copy_bytes(op: str, keys: int, kv_heads: int = COPY_KV_HEADS, heads: int = COPY_HEADS,
               head_dim: int = COPY_HEAD_DIM, element: int = 4) -> int:
    """The bytes one call of `op` reads and writes for `keys` keys (one of K or V), from
    kernel_facts.json's copies (eager_ops.copy_parts: the part whose op it is, its bytes a key over
    its calls): index_select reads and writes keys x h_kv x d_h elements; clone reads those and
    writes keys x h x d_h."""
    from costmodel import symbols as S
    from costmodel.eager_ops import copy_parts
    from costmodel.kernel_time import kernel_facts

    (entry,) = kernel_facts()["eager_ops"]["implementations"]
    (part,) = [part for part in copy_parts(entry, "WeightedSum").values() if part.op == op]
    per_key = part.bytes_per_key.xreplace({S.e: element, S.d_h: head_dim, S.h_kv: kv_heads, S.h: heads})
    return int(per_key * keys / part.calls)


def cold_copy_seconds(keys: tuple[int, ...] = COPY_KEYS, repeats: int = 9,
                      flush_megabytes: int = FLUSH_MEGABYTES) -> dict[str, dict[int, float]]:
    """The median seconds of one cold call of each op (index_select, clone) at each key count."""
    generator = torch.Generator().manual_seed(0)
    cache = torch.randn(COPY_CACHE_KEYS, COPY_KV_HEADS, COPY_HEAD_DIM, generator=generator)
    blocks = COPY_CACHE_KEYS // COPY_BLOCK
    index = {}
    for count in keys:
        chosen = torch.randperm(blocks, generator=generator)[:-(-count // COPY_BLOCK)]
        index[count] = (chosen[:, None] * COPY_BLOCK + torch.arange(COPY_BLOCK)).flatten()[:count]
    flush = torch.ones(flush_megabytes * 2**20 // 4)
    # The engine's steps take no page faults (benchmarks/bench_serve_steps.py records them): its
    # process reuses memory it has touched. A fresh process would map fresh pages for each output
    # (glibc serves a large allocation by mmap until a freed mapping raises its threshold), so a
    # tensor larger than every output is allocated and freed first.
    torch.ones(max(WARM_MEGABYTES * 2**20, 2 * copy_bytes("clone", max(keys))) // 4)  # allocated, touched, freed
    n_rep = COPY_HEADS // COPY_KV_HEADS
    times: dict[str, dict[int, list[float]]] = {"index_select": {k: [] for k in keys}, "clone": {k: [] for k in keys}}

    def timed(function: Any) -> tuple[float, Any]:
        flush.sum()  # the operands out of the caches, as a step's weights evict them
        start = time.perf_counter()
        out = function()
        return time.perf_counter() - start, out

    for round_ in range(repeats + 1):  # the first round warms up
        for count in keys:
            seconds, gathered = timed(lambda: torch.index_select(cache, 0, index[count]))
            view = gathered.transpose(0, 1).unsqueeze(0)  # [1, h_kv, keys, d_h], as the engine reads it
            cloned, _ = timed(lambda: repeat_kv(view, n_rep))
            if round_:
                times["index_select"][count].append(seconds)
                times["clone"][count].append(cloned)
    return {op: {k: statistics.median(t) for k, t in by_keys.items()} for op, by_keys in times.items()}


def fit_fixed_and_rate(points: dict[int, float]) -> tuple[float, float] | None:
    """(s_per_call, bytes_per_s) of T = s_per_call + bytes / bytes_per_s, least squares over
    {bytes: seconds}; an intercept below 0 is refitted through the origin (0 s a call). None where
    the seconds do not grow with the bytes (a measurement the shared machine's noise swamped)."""
    sizes, seconds = list(points), list(points.values())
    n, mean_x, mean_y = len(sizes), sum(sizes) / len(sizes), sum(seconds) / len(seconds)
    spread = sum((x - mean_x) ** 2 for x in sizes)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes, seconds)) / spread if n > 1 and spread else 0.0
    fixed = mean_y - slope * mean_x
    if fixed < 0:
        fixed, slope = 0.0, sum(x * y for x, y in zip(sizes, seconds)) / sum(x * x for x in sizes)
    return None if slope <= 0 else (fixed, 1 / slope)


def cold_copies(keys: tuple[int, ...] = COPY_KEYS, repeats: int = 9,
                flush_megabytes: int = FLUSH_MEGABYTES) -> dict[str, Any]:
    """The hardware file's cold_copies, measured now: {"fields": {op: {s_per_call, bytes_per_s}}
    (an op whose fit failed left out), "seconds": {op: {keys: median seconds}}, "bytes": {op: {keys:
    bytes}}}."""
    seconds = cold_copy_seconds(keys, repeats, flush_megabytes)
    moved = {op: {k: copy_bytes(op, k) for k in keys} for op in seconds}
    fields = {}
    for op, by_keys in seconds.items():
        fit = fit_fixed_and_rate({moved[op][k]: t for k, t in by_keys.items()})
        if fit is not None:
            fields[op] = {"s_per_call": fit[0], "bytes_per_s": fit[1]}
    return {"fields": fields, "seconds": seconds, "bytes": moved}


#: The source string of the fields (the hardware file's `source`).
SOURCE = (f"cold_copies by validate/cold_copies.py: index_select of {', '.join(map(str, COPY_KEYS))} keys out of a "
          f"[{COPY_CACHE_KEYS}, {COPY_KV_HEADS}, {COPY_HEAD_DIM}] fp32 cache (random blocks of {COPY_BLOCK}), then "
          f"repeat_kv's clone of them to {COPY_HEADS} heads, a {FLUSH_MEGABYTES} MiB read before each timed call "
          f"(the allocator warmed by a {WARM_MEGABYTES} MiB tensor), "
          "the medians fitted as T = s_per_call + bytes / bytes_per_s by least squares")
