"""What a step of a counted eager implementation (costmodel/kernel_facts.json "eager_ops":
transformers' engine running its Llama under the paged sdpa path) does beyond its sequences'
own leaves, decided by the step's mix: the kernel model's serving step (steptime.KernelStepTime)
adds it to every step.

- The packed attention call ("packed_attention"): a masked step runs one attention call per layer
  over all its sequences packed, every query of the step against every key it reads, not causal;
  the context leaves charge each sequence's own causal call, so the difference is added.
- The attention module's case ("cases"): the leaf's stated ops are those of a masked step reading
  keys from the cache; a step of one sequence decoding alone passes no mask (sdpa's grouped-query
  heads: 23 ops, no repeat_kv copies), and a step in which no sequence has anything cached yet
  reads nothing from the cache (28 ops, no gather). The step is charged its own case's ops (at
  the hardware's op time) and only the copies its case runs.
- The copies ("copies", the one place they are charged): per layer, each part the step's case
  runs is `calls` calls of its aten op over every key of the step (the paged cache's index_select
  of K and of V; repeat_kv's clone of each). A hardware that measures the op cold
  (Hardware.cold_copies: validate/calibrate.py cold_copies, a fixed time per call and a rate)
  charges calls x its fixed time + the part's bytes at its rate; one that does not, the bytes at
  the bandwidth (a memory-bound kernel, as before the measurement).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..blocks import WeightedSum
from ..kernel_time import AttentionCall, KernelTimer
from ..eager_ops import copy_parts
from ..layout.split import heads_split

CHARGED = "mask_cached"  # the case whose ops the attention leaf is charged (and whose copies all run)


class EagerStep:
    """The step-level facts of an eager implementation `entry` (None: no counted implementation,
    nothing added), for a model whose context leaves are `context` ((LeafKernels, runs per step)
    pairs) timed by `timer`; `subs` the model's symbol values, `tp` the tensor-parallel ranks
    (each holds 1 / tp of the heads, split.heads_split)."""

    def __init__(self, entry: dict | None, context: list, timer: KernelTimer, subs: dict, tp: int = 1):
        self.timer = timer
        self.layers, self.call, self.cases = 0, None, {}
        # per copy part: (calls per layer, bytes a key per rank, fixed seconds a call, bytes/s)
        self.copies: dict[str, tuple[int, float, float, float]] = {}
        found = [(kernels, count) for kernels, count in context if isinstance(kernels.leaf.block, WeightedSum)]
        if entry is None or not found:
            return
        kernels, self.layers = found[0]
        if "packed_attention" in entry and timer.fused_attention:
            self.call = next(k for k in kernels(1, 1) if isinstance(k, AttentionCall))
        for name, part in copy_parts(entry, "WeightedSum").items():
            fixed, rate = timer.cold_copies.get(part.op, (0.0, timer.bandwidth))
            per_key = float(part.bytes_per_key.xreplace(heads_split(tp)).xreplace(subs))  # a rank's heads
            self.copies[name] = (part.calls, per_key, fixed, rate)
        stated = entry.get("cases", {}).get("WeightedSum", {})
        if CHARGED in stated:
            charged = stated[CHARGED]["ops"]
            # per case: (ops beyond the charged ones, the copies it skips)
            self.cases = {name: (case["ops"] - charged, tuple(case.get("skips", ())))
                          for name, case in stated.items() if isinstance(case, dict)}

    @staticmethod
    def case(query: Any, context: Any) -> str:
        """The attention module's case for a step (query tokens and keys per sequence)."""
        if len(query) == 1 and int(query[0]) == 1:
            return "no_mask"
        if all(int(c) == int(q) for q, c in zip(query, context)):
            return "mask_nothing_cached"
        return CHARGED

    def seconds(self, query: Any, context: Any) -> float:
        """What the step adds to its leaves' seconds (negative where its case runs fewer ops)."""
        return self.packing_seconds(query, context) + self.case_seconds(query, context) + \
            self.copy_seconds(query, context)

    def case_seconds(self, query: Any, context: Any) -> float:
        """The step's case against the charged one: its ops' difference at the op time."""
        if not self.cases:
            return 0.0
        ops, _ = self.cases.get(self.case(query, context), (0, ()))
        return self.layers * ops * self.timer.dispatch_s

    def copy_seconds(self, query: Any, context: Any) -> float:
        """The copies the step's case runs, every key of the step in each call, per layer: calls x
        the op's fixed time + bytes at its rate (Hardware.cold_copies; without it no fixed time and
        the bandwidth). Without stated cases (or a case not stated) every copy."""
        if not self.copies:
            return 0.0
        skipped = self.cases.get(self.case(query, context), (0, ()))[1] if self.cases else ()
        keys = float(sum(int(c) for c in context))
        return self.layers * sum(calls * fixed + per_key * keys / rate
                                 for name, (calls, per_key, fixed, rate) in self.copies.items() if name not in skipped)

    def packing_seconds(self, query: Any, context: Any) -> float:
        """What packing a masked step's sequences into one attention call per layer adds (0 where
        the implementation packs nothing). The context leaves charge the step's attention as one
        batched call, the larger of its sequences' summed compute (causal, each its own queries
        against its own keys) and their summed bytes (steptime's _row, _finish); the packed call
        computes every query of the step against every key it reads, not causal, and reads the
        same bytes. A step of one sequence decoding alone has no mask."""
        if self.call is None or self.case(query, context) == "no_mask":
            return 0.0
        terms = [self.timer.attention_terms(replace(self.call, n_q=int(q), n_kv=int(c)))
                 for q, c in zip(query, context)]
        compute, moved = (sum(column) for column in zip(*terms))
        packed, _ = self.timer.attention_terms(replace(self.call, n_q=int(sum(int(q) for q in query)),
                                                       n_kv=int(sum(int(c) for c in context)), causal=False))
        return self.layers * (max(packed, moved) - max(compute, moved))
