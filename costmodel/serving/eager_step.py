"""What a step of a counted eager implementation (costmodel/kernel_facts.json "eager_ops":
transformers' engine running its Llama under the paged sdpa path) does beyond its sequences'
own leaves, decided by the step's mix: the kernel model's serving step (steptime.KernelStepTime)
adds it to every step.

- The packed attention call ("packed_attention"): a masked step runs one attention call per layer
  over all its sequences packed, every query of the step against every key it reads, not causal;
  the context leaves charge each sequence's own causal call, so the difference is added.
- The attention module's case ("cases"): the leaf's stated ops and copies are those of a masked
  step reading keys from the cache; a step of one sequence decoding alone passes no mask (sdpa's
  grouped-query heads: 23 ops, no repeat_kv copies), and a step in which no sequence has anything
  cached yet reads nothing from the cache (28 ops, no gather). The step is charged its own case's
  ops (at the hardware's dispatch time) and none of the copies its case skips (at the bandwidth,
  as the copies are charged).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..blocks import WeightedSum
from ..kernel_time import AttentionCall, KernelTimer
from ..eager_ops import copy_parts
from ..layout.split import heads_split

CHARGED = "mask_cached"  # the case whose ops and copies the attention leaf is charged


class EagerStep:
    """The step-level facts of an eager implementation `entry` (None: no counted implementation,
    nothing added), for a model whose context leaves are `context` ((LeafKernels, runs per step)
    pairs) timed by `timer`; `subs` the model's symbol values, `tp` the tensor-parallel ranks
    (each holds 1 / tp of the heads, split.heads_split)."""

    def __init__(self, entry: dict | None, context: list, timer: KernelTimer, subs: dict, tp: int = 1):
        self.timer = timer
        self.layers, self.call, self.cases = 0, None, {}
        found = [(kernels, count) for kernels, count in context if isinstance(kernels.leaf.block, WeightedSum)]
        if entry is None or not found:
            return
        kernels, self.layers = found[0]
        if "packed_attention" in entry and timer.fused_attention:
            self.call = next(k for k in kernels(1, 1) if isinstance(k, AttentionCall))
        parts = {name: float(expr.xreplace(heads_split(tp)).xreplace(subs))
                 for name, expr in copy_parts(entry, "WeightedSum").items()}
        stated = entry.get("cases", {}).get("WeightedSum", {})
        if CHARGED in stated:
            charged = stated[CHARGED]["ops"]
            # per case: (ops beyond the charged ones, bytes a key of the copies it skips)
            self.cases = {name: (case["ops"] - charged, sum(parts[p] for p in case.get("skips", ())))
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
        """What the step adds to its leaves' seconds (negative where its case skips work)."""
        return self.packing_seconds(query, context) + self.case_seconds(query, context)

    def case_seconds(self, query: Any, context: Any) -> float:
        """The step's case against the charged one: its ops' difference at the dispatch time, less
        the copies it skips (every key of the step) at the bandwidth."""
        if not self.cases:
            return 0.0
        ops, per_key = self.cases.get(self.case(query, context), (0, 0.0))
        keys = float(sum(int(c) for c in context))
        return self.layers * (ops * self.timer.dispatch_s - per_key * keys / self.timer.bandwidth)

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
