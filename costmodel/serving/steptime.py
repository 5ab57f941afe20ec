"""The seconds one engine step takes: a mix of prefill chunks and decode tokens, each sequence
with its own query tokens and context, timed from the cost tree's leaves.

This is the one place the serving simulator asks for time (the kernel-level time model of issue
18 replaces the body of StepTime.seconds; the event loop only calls it). Today it is the existing
roofline (costmodel/hardware.py kernel_times, as costmodel/roofline.py uses it) applied to the
tree's "chunk" phase (costmodel/tree.py: a decode step with n new tokens per sequence attending
to c keys; n = 1 is the decode step exactly):

- leaves whose work depends on the context (attention scores, softmax, weighted sum) are
  evaluated per sequence at (n = its query tokens, c = its keys) and summed, leaf by leaf;
- the other leaves (projections, FFN, norms, embeddings) do the same work per token whichever
  sequence it belongs to: evaluated once at b = 1, n = the step's tokens (weights read once);
- a context leaf that holds weights (naive MLA's projections: kv_b up-projects every key) reads
  them once per step: its weight bytes join the per-token leaves, the rest stays per sequence;
- the LM head runs on the tokens that emit a token (engines keep only their logits);
- each leaf's two kernels take max(compute, memory) at the hardware's peaks and efficiencies, and
  every active block pays the hardware's per-block overhead once per step (one batched forward).

Quantized weights (--weight-dtype): each leaf's matmul traffic reads its weights as the tree stores
them (its weight_bytes: data, scales, zeros) instead of e bytes each; dequantization's own work is
not counted.

Tensor parallelism (tp > 1): each leaf's FLOPs and bytes divided by tp (Megatron's sharding of
heads, FFN columns and the vocabulary), plus two all-reduces of the step's activations per layer
(ring: 2 (tp - 1) / tp of the bytes over the hardware's link, and its latency per call). A stated
approximation until the kernel-level model lands.

Pipeline parallelism (pp > 1): one batch passes the pp stages in sequence, each stage running its
L / pp layers on its own GPUs, so the batch's step takes the sum of the stages' times (the whole
model's leaves, as at pp = 1) plus pp - 1 sends of its hidden states (tokens x d x e bytes over
the link, and its latency each). The pipeline's concurrency (pp batches in flight) is the event
loop's: run_replicas gives each replica pp virtual engines (costmodel/serving/api.py).

Speed: a decode sequence's leaf work at context c is looked up in a table over c (one vectorised
evaluation), and the per-token leaves are cached by token count, so a step costs a numpy sum.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .. import symbols as S
from ..config import DTYPE_BYTES, ModelConfig, Workload
from ..evaluate import Sweep
from ..hardware import Efficiency, Hardware, kernel_times
from ..tree import CostModel, model_values, profile_for

QUANTITIES = ("flops_matmul", "bytes_matmul", "flops_other", "bytes_other")


def serving_profile(cfg: ModelConfig, attention: str = "flash", weight_dtype: str | None = None,
                    kv_dtype: str | None = None, mla: str = "absorbed") -> Any:
    """The implementation profile of a paged engine: no dropout, a cache written in place, latent
    attention absorbed (as vLLM's MLA backend runs it)."""
    workload = Workload(attention=attention, weight_dtype=weight_dtype, kv_dtype=kv_dtype, mla=mla)
    return profile_for(cfg, workload, dropout=False, kv_cache="static")


class StepTime:
    """seconds(query, context): one step of sequences with query[i] new tokens attending to
    context[i] keys (its cached tokens plus the new ones); `emitting` of them produce a token."""

    def __init__(self, cfg: ModelConfig, hardware: Hardware, dtype: str = "bf16",
                 efficiency: Efficiency | None = None, profile: Any = None, tp: int = 1, pp: int = 1):
        import numpy as np

        self.cfg, self.hardware, self.tp, self.pp = cfg, hardware, tp, pp
        self.dtype = Workload(dtype=dtype).dtype
        self.e = DTYPE_BYTES[self.dtype]
        eff = efficiency or Efficiency(**hardware.efficiency)
        self.peak = hardware.peak(self.dtype) * eff.compute
        self.vector = hardware.vector_flops_per_s * eff.compute
        self.bandwidth = hardware.bandwidth_bytes_per_s * eff.memory
        model = CostModel(cfg, profile or serving_profile(cfg), phase="chunk")
        fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
        groups: dict[str, list] = {"context": [], "head": [], "tokens": []}
        active_blocks = 0
        quantized = getattr(model.profile, "weight_format", None) is not None
        for leaf in model.leaves:
            totals = [leaf.total(q) for q in QUANTITIES]
            if quantized:  # the weights are read as stored (the tree counts e bytes per weight read)
                totals[1] = totals[1] - S.e * leaf.total("params") + leaf.total("weight_bytes")
            if any(t != 0 for t in totals) or leaf.cost.get("bytes_moved") != 0:
                active_blocks += int(leaf.count.xreplace(fixed))
            group = ("context" if any(S.c in t.free_symbols for t in totals)
                     else "head" if leaf.path.startswith("head") else "tokens")
            weights = (leaf.total("weight_bytes") if quantized else S.e * leaf.total("params"))
            if group == "context" and weights != 0:  # read once per step, not once per sequence
                totals[1] = totals[1] - weights
                groups["tokens"].append([sp.Integer(0), weights, sp.Integer(0), sp.Integer(0)])
            groups[group].append(totals)
        self.overhead_s = active_blocks * hardware.overhead_s_per_block
        self._sweeps = {name: Sweep(model, {f"{i}|{q}": t for i, totals in enumerate(leaves)
                                            for q, t in zip(QUANTITIES, totals)})
                        for name, leaves in groups.items() if leaves}
        self._sizes = {name: len(leaves) for name, leaves in groups.items()}
        self._decode_table = np.zeros((0, 4 * self._sizes["context"]))
        self._tables: dict[str, Any] = {}
        self._chunks: dict[tuple[int, int], Any] = {}
        self.layers = cfg.n_decoder_layers
        self.all_reduce = self._all_reduce_seconds_per_token() if tp > 1 else 0.0
        self.per_call = 2 * self.layers * hardware.collective_latency_s if tp > 1 else 0.0
        if pp > 1:  # pp - 1 sends of the hidden states between stages
            self.all_reduce += (pp - 1) * cfg.d_model * self.e / hardware.link(tp * pp)
            self.per_call += (pp - 1) * hardware.collective_latency_s

    def _all_reduce_seconds_per_token(self) -> float:
        """Bytes per token of the two all-reduces per layer, ring over tp GPUs, as seconds."""
        link = self.hardware.link(self.tp)
        per_token = 2 * self.layers * self.cfg.d_model * self.e * 2 * (self.tp - 1) / self.tp
        return per_token / link

    def _evaluate(self, name: str, n: Any, c: Any, b: Any = 1) -> Any:
        """The group's (F_mm, B_mm, F_o, B_o) per leaf as a (leaves*4, points) array."""
        import numpy as np

        out = self._sweeps[name](n=n, b=b, c=c, s=1, e=self.e)
        return np.stack([np.atleast_1d(out[key]) for key in self._sweeps[name].names])

    def _busy(self, quantities: Any) -> float:
        """Seconds of the leaves' kernels: quantities is (leaves*4,) of F_mm, B_mm, F_o, B_o."""
        q = quantities.reshape(-1, 4) / self.tp
        _, _, busy = kernel_times(q[:, 0], q[:, 1], q[:, 2], q[:, 3], self.peak, self.vector, self.bandwidth)
        return float(busy.sum())

    def _per_token_group(self, name: str, tokens: int) -> float:
        """Busy seconds of a group whose leaves depend on the token count only, from a table
        over 0..T (one vectorised evaluation, doubled when a larger count comes)."""
        import numpy as np

        if not self._sizes[name]:
            return 0.0
        table = self._tables.get(name)
        if table is None or tokens >= len(table):
            size = max(tokens + 1, 2 * (0 if table is None else len(table)), 1024)
            counts = np.arange(size)
            q = self._evaluate(name, counts, counts).reshape(-1, 4, size) / self.tp
            _, _, busy = kernel_times(q[:, 0], q[:, 1], q[:, 2], q[:, 3], self.peak, self.vector, self.bandwidth)
            table = busy.sum(axis=0)
            table[0] = 0.0
            self._tables[name] = table
        return float(table[tokens])

    def _decode_rows(self, contexts: Any) -> Any:
        """Context leaves of decode sequences (n = 1) at each context, from a table over c."""
        import numpy as np

        top = int(contexts.max())
        if top >= len(self._decode_table):
            size = max(top + 1, 2 * len(self._decode_table), 1024)
            c = np.arange(size)
            c[0] = 1
            self._decode_table = np.ascontiguousarray(self._evaluate("context", 1, c).T)
        return self._decode_table[contexts]

    def _chunk_rows(self, query: Any, context: Any) -> Any:
        """Context leaves of prefill chunks, cached by (query tokens, keys)."""
        import numpy as np

        pairs = list(zip(query.tolist(), context.tolist()))
        missing = [pair for pair in dict.fromkeys(pairs) if pair not in self._chunks]
        if missing:
            values = self._evaluate("context", np.array([m[0] for m in missing]), np.array([m[1] for m in missing]))
            for i, pair in enumerate(missing):
                self._chunks[pair] = values[:, i]
        return np.sum([self._chunks[pair] for pair in pairs], axis=0)

    def decode_run(self, keys: Any, steps: int) -> Any:
        """Seconds of `steps` consecutive decode-only steps of the same sequences, the first with
        `keys` keys each (one more per step): seconds() of each, vectorised over the steps."""
        import numpy as np

        keys = np.asarray(keys, dtype=np.int64)
        count = len(keys)
        base = self.overhead_s + self._per_token_group("tokens", count) + self._per_token_group("head", count)
        base += count * self.all_reduce + self.per_call
        if not self._sizes["context"]:
            return np.full(steps, base)
        self._decode_rows(keys + steps)  # grow the table first
        rows = self._decode_table[keys[:, None] + np.arange(steps)].sum(axis=0)  # (steps, leaves*4)
        q = rows.reshape(steps, -1, 4) / self.tp
        _, _, busy = kernel_times(q[..., 0], q[..., 1], q[..., 2], q[..., 3], self.peak, self.vector, self.bandwidth)
        return base + busy.sum(axis=1)

    def seconds(self, query: Any, context: Any, emitting: int | None = None) -> float:
        """One step's seconds: query and context are integer arrays, one entry per sequence."""
        import numpy as np

        query = np.asarray(query, dtype=np.int64)
        context = np.asarray(context, dtype=np.int64)
        tokens = int(query.sum())
        emitting = len(query) if emitting is None else emitting
        seconds = self.overhead_s + self._per_token_group("tokens", tokens)
        if emitting:
            seconds += self._per_token_group("head", emitting)
        if self._sizes["context"]:
            if query.max() == 1:  # decode only
                total = self._decode_rows(context).sum(axis=0)
            else:
                decode = query == 1
                total = self._decode_rows(context[decode]).sum(axis=0) if decode.any() else 0.0
                total = total + self._chunk_rows(query[~decode], context[~decode])
            seconds += self._busy(np.asarray(total))
        return seconds + tokens * self.all_reduce + self.per_call
