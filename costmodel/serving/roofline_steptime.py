"""The roofline time model of a serving step (RooflineStepTime; steptime.py's docstring for what
both models share).

The roofline (RooflineStepTime): each leaf's two kernels take max(compute, memory) at the
hardware's peaks and efficiencies (costmodel/hardware.py kernel_times), and every active block
pays the hardware's per-block overhead once per step. Quantized weights: each leaf's matmul
traffic reads its weights as the tree stores them (its weight_bytes); W8A8 leaves (fp8 weights on
an FP8 peak) at the FP8 peak (the products quantized_matmul.runs_quantized names; the rest of the
leaf's at the dtype's: quantized_matmul.blended_peak), with quantized_matmul.w8a8_leaf_bytes' traffic. tp > 1: each leaf's FLOPs
and bytes at one rank's share as the layout model splits it (layout/split.py substitution, as the
kernel model and serve's memory: heads and widths divided, replicated key/value heads, norms,
routers and latent attention's down-projections and cache reads whole), plus two
ring all-reduces of the step's activations per layer over the hardware's link, each call timed as
collectives.call_seconds times it (the kernel model's rule where no curve is measured: NCCL's PCIe
ring model on a PCIe node, else the bytes at the link plus collective_latency_s). pp > 1: the sum of
the stages' times plus pp - 1 sends of the hidden states over the link (call_seconds alike). The pipeline's concurrency (pp batches in
flight) is the event loop's: run_replicas gives each replica pp virtual engines (serving/api.py).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .. import symbols as S
from ..config import DTYPE_BYTES, ModelConfig, Workload
from ..evaluate import Sweep
from ..hardware import Efficiency, Hardware, kernel_times
from ..layout.split import local, substitution
from ..quantized_matmul import blended_peak, runs_w8a8, w8a8_leaf_adjustment, w8a8_peak
from ..tree import CostModel, model_values
from .graphs import Graphed
from .profile import serving_profile
from .step_base import QUANTITIES, StepTime


class RooflineStepTime(StepTime):
    """The roofline of each leaf's two kernels (the module's docstring, "The roofline")."""

    time_model = "roofline"

    def __init__(self, cfg: ModelConfig, hardware: Hardware, dtype: str = "bf16",
                 efficiency: Efficiency | None = None, profile: Any = None, tp: int = 1, pp: int = 1,
                 time_model: str | None = None, all_reduce: str = "nccl"):
        import numpy as np

        self.cfg, self.hardware, self.tp, self.pp, self.all_reduce = cfg, hardware, tp, pp, all_reduce
        self.dtype = Workload(dtype=dtype).dtype
        self.e = DTYPE_BYTES[self.dtype]
        eff = efficiency or Efficiency(**hardware.efficiency)
        self.peak = hardware.peak(self.dtype) * eff.compute
        self.vector = hardware.vector_flops_per_s * eff.compute
        self.bandwidth = hardware.bandwidth_bytes_per_s * eff.memory
        model = CostModel(cfg, profile or serving_profile(cfg), phase="chunk")
        fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
        groups: dict[str, list] = {"context": [], "head": [], "tokens": []}
        peaks: dict[str, list[float]] = {"context": [], "head": [], "tokens": []}
        active_blocks = {"context": 0, "head": 0, "tokens": 0}
        quantized = getattr(model.profile, "weight_format", None) is not None
        w8a8 = runs_w8a8(model.profile.weight_format, hardware)  # FP8 projections (quantized_matmul.py)
        fp8_peak = w8a8_peak(hardware, eff) if w8a8 else self.peak
        for leaf in model.leaves:
            totals = [leaf.total(q) for q in QUANTITIES]
            if quantized:  # the weights are read as stored (Leaf.matmul_bytes_as_stored, the one rule)
                totals[1] = leaf.count * leaf.matmul_bytes_as_stored()
            fp8_flops, read, quantize = w8a8_leaf_adjustment(leaf, w8a8, S.e)
            if fp8_flops != 0:  # inputs read in one byte, after their quantization pass
                totals[1], totals[3] = totals[1] + read, totals[3] + quantize
            group = ("context" if any(S.c in t.free_symbols for t in totals)
                     else "head" if leaf.path.startswith("head") else "tokens")
            weights = (leaf.total("weight_bytes") if quantized else S.e * leaf.total("params"))
            if tp > 1:  # a rank's share as layout/split.py splits the leaf (norms whole), times tp: the sums divide by tp
                split = substitution(leaf.block, sp_on=False, vocabulary="ceil", loss_parallel=False, encoder=False)
                totals, weights = ([tp * local(t, split).xreplace({S.tp: sp.Integer(tp)}) for t in totals],
                                   tp * local(weights, split).xreplace({S.tp: sp.Integer(tp)}))
            if any(t != 0 for t in totals) or leaf.cost.get("bytes_moved") != 0:
                active_blocks[group] += int(leaf.count.xreplace(fixed))
            if group == "context" and weights != 0:  # read once per step, not once per sequence
                totals[1] = totals[1] - weights
                groups["tokens"].append([sp.Integer(0), weights, sp.Integer(0), sp.Integer(0)])
                peaks["tokens"].append(self.peak)
            groups[group].append(totals)
            peaks[group].append(blended_peak(totals[0], fp8_flops, self.peak, fp8_peak, fixed, leaf.path))
        # Each group's leaves' matmul peaks, in the order of its rows (a W8A8 leaf's products at
        # the FP8 peak, those it runs in the data dtype at that one: quantized_matmul.runs_quantized).
        self._peaks = {name: np.array(values) for name, values in peaks.items()}
        # The per-block overhead of each group's active blocks (a graph's leaves pay none).
        self._overheads = {name: count * hardware.overhead_s_per_block for name, count in active_blocks.items()}
        self.overhead_s = sum(self._overheads.values())
        self._sweeps = {name: Sweep(model, {f"{i}|{q}": t for i, totals in enumerate(leaves)
                                            for q, t in zip(QUANTITIES, totals)})
                        for name, leaves in groups.items() if leaves}
        self._sizes = {name: len(leaves) for name, leaves in groups.items()}
        self._decode_table = np.zeros((0, 4 * self._sizes["context"]))
        self._tables: dict[str, Any] = {}
        self._chunks: dict[tuple[int, int], Any] = {}
        self.layers = cfg.n_decoder_layers
        self._links = (hardware.link(tp) if tp > 1 else 0.0, hardware.link(tp * pp) if pp > 1 else 0.0)

    def communication_seconds(self, tokens: int) -> float:
        """tp > 1: two ring all-reduces of the step's activations per layer over tp GPUs; pp > 1: pp - 1
        sends of its hidden states between stages; each call as collectives.call_seconds times it, or
        the engine's own all-reduce where it runs it (self.all_reduce "vllm-custom" or "trtllm-custom" and
        collectives.custom_all_reduce takes the call)."""
        from ..collectives import CUSTOM_ALL_REDUCES, call_seconds, custom_all_reduce

        activations, (tp_link, pp_link) = tokens * self.cfg.d_model * self.e, self._links
        custom = custom_all_reduce(self.hardware, activations, self.tp, self.all_reduce) if self.tp > 1 \
            and self.all_reduce in CUSTOM_ALL_REDUCES and self.tp <= self.hardware.gpus_per_node else None
        seconds = 2 * self.layers * (custom if custom is not None else
                                     call_seconds(self.hardware, "all_reduce", activations, self.tp, tp_link)) \
            if self.tp > 1 else 0.0
        if self.pp > 1:
            seconds += (self.pp - 1) * call_seconds(self.hardware, "send", activations, 2, pp_link)
        return seconds

    def _evaluate(self, name: str, n: Any, c: Any, b: Any = 1) -> Any:
        """The group's (F_mm, B_mm, F_o, B_o) per leaf as a (leaves*4, points) array."""
        import numpy as np

        out = self._sweeps[name](n=n, b=b, c=c, s=1, e=self.e)
        return np.stack([np.atleast_1d(out[key]) for key in self._sweeps[name].names])

    def _busy(self, quantities: Any) -> float:
        """Seconds of the leaves' kernels: quantities is (leaves*4,) of F_mm, B_mm, F_o, B_o."""
        q = quantities.reshape(-1, 4) / self.tp
        _, _, busy = kernel_times(q[:, 0], q[:, 1], q[:, 2], q[:, 3], self._peaks["context"], self.vector,
                                  self.bandwidth)
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
            _, _, busy = kernel_times(q[:, 0], q[:, 1], q[:, 2], q[:, 3], self._peaks[name][:, None], self.vector,
                                      self.bandwidth)
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
        _, base = self._run_plans(keys, steps)
        if not self._sizes["context"]:
            return np.full(steps, base)
        self._decode_rows(keys + steps)  # grow the table first
        rows = self._decode_table[keys[:, None] + np.arange(steps)].sum(axis=0)  # (steps, leaves*4)
        q = rows.reshape(steps, -1, 4) / self.tp
        _, _, busy = kernel_times(q[..., 0], q[..., 1], q[..., 2], q[..., 3], self._peaks["context"], self.vector,
                                  self.bandwidth)
        return base + busy.sum(axis=1)

    def _fixed_seconds(self, plan: Graphed | None, tokens: int, emitting: int) -> float:
        """A step's seconds but its context leaves' busy time (none of the per-block overhead of
        the leaves a graph replays; the per-token leaves at its padded rows)."""
        overhead = self.overhead_s
        if plan is not None:  # the per-token leaves (and a whole-forward graph's context leaves) in a graph
            overhead -= self._overheads["tokens"] + (self._overheads["context"] if plan.context else 0.0)
            tokens = plan.tokens
        seconds = overhead + self._per_token_group("tokens", tokens)
        if emitting:
            seconds += self._per_token_group("head", emitting)
        return seconds + self.communication_seconds(tokens)

    def seconds(self, query: Any, context: Any, emitting: int | None = None) -> float:
        """One step's seconds: query and context are integer arrays, one entry per sequence."""
        import numpy as np

        query = np.asarray(query, dtype=np.int64)
        context = np.asarray(context, dtype=np.int64)
        emitting = len(query) if emitting is None else emitting
        seconds = self._fixed_seconds(self.graphs.plan(query, context), int(query.sum()), emitting)
        if self._sizes["context"]:
            seconds += self._busy(np.asarray(self.context_sums(query, context)))
        return seconds
