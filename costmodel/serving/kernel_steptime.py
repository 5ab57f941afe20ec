"""The kernel-level time model of a serving step (KernelStepTime; steptime.py's docstring for what
both models share).

The kernel-level model (KernelStepTime; costmodel/kernel_time.py, docs/time.md):
- each leaf's kernels are tree_kernels.leaf_kernels' at the step's shapes: the per-token leaves'
  GEMMs (M = the step's tokens, N, K) timed with tile and wave quantization at the measured
  large-GEMM efficiency (on a hardware with gemm_efficiency_by_rows: at the measured efficiency
  for M; one row at the measured GEMV efficiency for its K, gemv_efficiency_by_inner), memory-bound kernels at the bandwidth, each active leaf paying the hardware's launch
  overhead once per step (kernels_seconds, memoised per shape); on a hardware with
  an op's time (Hardware.engine_op_s: engine_s_per_op, else module_s_per_op, else dispatch_s_per_op), a leaf of a model whose eager ops are counted (costmodel/eager_ops.py:
  transformers' Llama under the engine's paged sdpa path) pays its ops at that time instead; and
  the step what its mix makes that implementation do beyond the leaves (eager_step.py: the
  sequences packed into one attention call, the attention module's case, and the copies that path
  makes: the paged cache's gather of every key and repeat_kv's copies per query head,
  kernel_facts.json "eager_ops" "copies", each call at Hardware.cold_copies, else at the bandwidth);
- the attention of the step's sequences is one batched (varlen) call: each sequence's executed
  FLOPs (128 x 128 blocks, causal; a head width FlashAttention-2 is not compiled for padded to
  the next one, KernelTimer.attention_terms) at FlashAttention-2's published efficiency at its context
  (on a hardware with attention_efficiency_by_queries: at the measured efficiency for its query
  tokens), summed, against the sequences' bytes summed; memory-bound context kernels add their bytes and
  FLOPs; eager attention's batched GEMMs are timed per sequence. A decode-only step of b sequences
  at one context is then the kernel model's decode step at batch b (leaves_time over the decode
  tree, what simulate sums) to rounding;
- quantized weights: each GEMM reads its weight matrix as the tree stores it (Gemm.weight_bytes);
  fp8 weights on a hardware file with an FP8 peak run W8A8 (quantized_matmul.runs_w8a8: the GEMMs at
  the FP8 peak, inputs in one byte after their quantization pass; KernelTimer's w8a8);
- tensor parallelism (tp > 1): each leaf's kernels at one rank's shapes (layout/split.py's
  substitution: h / tp heads, kv_heads_per_rank, d_ff / tp columns, ceil(V / tp) rows), plus two
  all-reduces of the step's activations per layer (Megatron's row-parallel outputs) from
  costmodel/collectives.py;
- pipeline parallelism (pp > 1): the whole model's leaves (the stages in sequence) plus pp - 1
  sends of the step's hidden states from costmodel/collectives.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sympy as sp

from .. import symbols as S
from ..config import DTYPE_BYTES, ModelConfig, Workload
from ..blocks import AttentionScores, WeightedSum
from ..hardware import Efficiency, Hardware
from ..eager_ops import eager_implementation, eager_op_counts
from ..kernel_facts_file import fuses_qkv
from ..kernel_time import (AttentionCall, Gemm, KernelTimer, MatmulCompute, Pointwise, check_kernel_model,
                           kernels_seconds)
from ..layout.split import substitution
from ..quantized_matmul import runs_w8a8
from ..tree_kernels import launches_of
from ..tree import CostModel, model_values
from .graphs import Graphed
from .eager_step import EagerStep
from .leaf_kernels import LeafKernels
from .profile import serving_profile
from .step_base import QUANTITIES, StepTime


class KernelStepTime(StepTime):
    """The kernel-level model of a step (the module's docstring, "The kernel-level model")."""

    time_model = "kernels"

    def __init__(self, cfg: ModelConfig, hardware: Hardware, dtype: str = "bf16",
                 efficiency: Efficiency | None = None, profile: Any = None, tp: int = 1, pp: int = 1,
                 time_model: str | None = None, timer: KernelTimer | None = None, attention_kernel: str = "flash2",
                 decode_kernel: str | None = None, stream: bool = False, all_reduce: str = "nccl"):
        """timer: a KernelTimer (default: this hardware's, dtype's, attention and decode kernels', code's fuses_qkv).
        stream: the step of an eager code whose host issues its ops (host_step.HostBound, built on a hardware without
        per-block launches, which the host term stands for): each eager leaf's kernels keep their GPU-side launch cost
        (KernelTimer.stream_seconds, the rule simulate's eager steps take). all_reduce: whose code runs the
        tensor-parallel all-reduces (spec.ALL_REDUCES; the engine's, collectives.engine_all_reduce)."""
        import numpy as np

        check_kernel_model(hardware)
        self.cfg, self.hardware, self.tp, self.pp, self.all_reduce = cfg, hardware, tp, pp, all_reduce
        self.dtype = Workload(dtype=dtype).dtype
        self.e = DTYPE_BYTES[self.dtype]
        model = CostModel(cfg, profile or serving_profile(cfg), phase="chunk")
        weight_format = getattr(model.profile, "weight_format", None)
        eager = eager_implementation(cfg, model.profile.attention, weight_format)
        self.timer = timer or KernelTimer(hardware, self.dtype, model.profile.attention, efficiency=efficiency,
                                          eager_ops=eager_op_counts(cfg, model.profile.attention, weight_format),
                                          w8a8=runs_w8a8(weight_format, hardware), attention_kernel=attention_kernel,
                                          decode_kernel=decode_kernel, fused_qkv=fuses_qkv(model.profile.decode_code))
        eager = eager if self.timer.eager_ops is not None else None  # its copies go with its eager ops (transformers')
        self.stream = stream
        # The launches of the leaves a CUDA graph replays (graphs.py): graph_kernel_s per kernel.
        self.graph_timer = KernelTimer(hardware, self.dtype, model.profile.attention, cuda_graphs=True, efficiency=efficiency,
                                       w8a8=runs_w8a8(weight_format, hardware), fused_qkv=self.timer.fused_qkv)
        subs = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: sp.Integer(1), S.s: sp.Integer(1),
                S.T: sp.Integer(0), S.e: sp.Integer(self.e), S.tp: sp.Integer(tp)}
        quantized = getattr(model.profile, "weight_format", None) is not None
        # Per group: (leaf's kernels, runs per step, launches) for each leaf.
        self.groups: dict[str, list] = {"context": [], "head": [], "tokens": []}
        self._weights: list[float] = []  # a context leaf's weight bytes per run (read once per step)
        for leaf in model.leaves:
            count = int(leaf.count.xreplace(subs))
            if not count:
                continue
            totals = [leaf.total(q) for q in QUANTITIES]
            group = ("context" if any(S.c in t.free_symbols for t in totals)
                     else "head" if leaf.path.startswith("head") else "tokens")
            split = substitution(leaf.block, sp_on=False, vocabulary="ceil", loss_parallel=False,
                                 encoder=False) if tp > 1 else None
            kernels = LeafKernels(leaf, subs, self.timer.fused_attention, split, self.timer.fused_qkv)
            self.groups[group].append((kernels, count))
            if group == "context":
                weights = leaf.total("weight_bytes") if quantized else S.e * leaf.total("params")
                self._weights.append(float(weights.xreplace(subs)) / count / tp)
        # What the counted implementation's step does beyond the leaves (eager_step.py: the packed
        # attention call, the attention module's case by the step's mix, the paged path's copies).
        self.eager_step = EagerStep(eager, self.groups["context"], self.timer, subs, tp)
        self._token_seconds: dict[tuple[str, int], float] = {}
        self._layout = self._context_layout()
        self._decode_table, self._known = np.zeros((0, self._layout[1])), np.zeros(0, dtype=bool)  # rows (NaN: not
        # filled yet, _decode_sum), contexts held
        self._chunks: dict[tuple[int, int], Any] = {}

    def stream_seconds(self, leaf: Any, kernels: int) -> float:
        """Under `stream` (the constructor's), what one eager run of a leaf of `kernels` kernels keeps on the GPU's
        side (KernelTimer.stream_seconds of its launches, launches_of); else 0."""
        return self.timer.stream_seconds(launches_of(leaf, kernels, self.timer.compiled)) if self.stream else 0.0

    # -- the leaves that depend on the token count only ------------------------------------------

    def _per_token_group(self, name: str, tokens: int, graphed: bool = False) -> float:
        """Seconds of a group's leaves at `tokens` tokens, launches (replayed from a CUDA graph if
        `graphed`) and (for "tokens") the step's tensor- and pipeline-parallel communication
        included; kept by token count."""
        key = (name, tokens, graphed)
        if key not in self._token_seconds:
            seconds = 0.0
            timer = self.graph_timer if graphed else self.timer
            if tokens:
                for kernels, count in self.groups[name]:
                    run = kernels(tokens, tokens)
                    launch = timer.leaf_launch_seconds(kernels.leaf, len(run)) + (
                        0.0 if graphed else self.stream_seconds(kernels.leaf, len(run)))
                    if run or launch:
                        seconds += count * (kernels_seconds(run, self.timer) + launch)
                if name == "tokens":
                    seconds += self.communication_seconds(tokens)
            self._token_seconds[key] = seconds
        return self._token_seconds[key]

    def gemm_seconds_by_leaf(self, tokens: int) -> dict[str, float]:
        """Per leaf whose work depends on the token count only, the seconds of its GEMMs in a step
        of `tokens` tokens (all layers; launches, pointwise kernels and communication left out):
        what an engine's per-operation timers around its projections measure."""
        seconds: dict[str, float] = {}
        for name in ("tokens", "head"):
            for kernels, count in self.groups[name]:
                gemms = [k for k in kernels(tokens, tokens) if isinstance(k, Gemm)]
                if gemms:
                    seconds[kernels.leaf.path] = count * kernels_seconds(gemms, self.timer)
        return seconds

    def communication_seconds(self, tokens: int) -> float:
        """tp > 1: two all-reduces of the step's activations per layer (Megatron's row-parallel
        outputs: attention and FFN), by the engine's code (self.all_reduce); pp > 1: pp - 1 sends of
        its hidden states between stages; both from costmodel/collectives.py."""
        from ..collectives import collective_seconds

        activations = tokens * self.cfg.d_model * self.e
        layers = self.cfg.n_decoder_layers
        seconds = collective_seconds(self.hardware, "all_reduce", 2 * layers * activations, self.tp, self.tp,
                                     calls=2 * layers, all_reduce=self.all_reduce, dtype=self.dtype) \
            if self.tp > 1 else 0.0
        if self.pp > 1:
            seconds += (self.pp - 1) * collective_seconds(self.hardware, "send", activations, 2, self.tp * self.pp)
        return seconds

    # -- the leaves that depend on each sequence's context ---------------------------------------

    def _context_layout(self) -> tuple[list, int]:
        """How a sequence's context kernels add up in one batched call, per kernel slot: its
        columns in a sequence's row and how the step's sums become seconds (_finish); per leaf,
        its slots (self._leaf_slots)."""
        slots, width = [], 0
        self._leaf_slots: list[list] = []
        for (kernels, count), weights in zip(self.groups["context"], self._weights):
            run, mine = kernels(2, 3), []
            for i, kernel in enumerate(run):
                if isinstance(kernel, Gemm):
                    core = isinstance(kernels.leaf.block, (AttentionScores, WeightedSum))
                    mine.append(("sum" if core else "gemm", width, count, kernel, 0.0))
                    width += 1
                elif isinstance(kernel, MatmulCompute):
                    mine.append(("sum", width, count, kernel, 0.0))
                    width += 1
                else:  # an attention call or a memory-bound kernel: (compute, memory) seconds
                    # a leaf's weights (naive MLA's up-projection) are read once per step, not per
                    # sequence: the matmul's bytes (the kernel before its MatmulCompute) less them
                    once = weights if weights and i + 1 < len(run) and isinstance(run[i + 1], MatmulCompute) else 0.0
                    mine.append(("max", width, count, kernel, once))
                    width += 2
            self._leaf_slots.append(mine)
            slots += mine
            launch = self.timer.leaf_launch_seconds(kernels.leaf, len(run)) + self.stream_seconds(kernels.leaf, len(run))
            graphed = self.graph_timer.leaf_launch_seconds(kernels.leaf, len(run))
            if launch or graphed:  # once per step: the sequences' attention is one call
                slots.append(("launch", None, count, None, (launch, graphed)))
        return slots, width

    def _row(self, n: int, c: int) -> list[float]:
        """One sequence's columns: n query tokens against c keys."""
        timer, row = self.timer, []
        for (kernels, _), slots in zip(self.groups["context"], self._leaf_slots):
            run = kernels(n, c)
            if len(run) != len(slots):
                run = self._as_one_product(run, kernels.leaf.path, n, c, len(slots))
            for kernel, (kind, _, _, _, once) in zip(run, slots):
                if isinstance(kernel, AttentionCall):
                    row += self._attention_terms(kernel)
                elif isinstance(kernel, Pointwise):
                    row += [kernel.flops / timer.vector, (kernel.bytes - once) / timer.bandwidth]
                elif isinstance(kernel, MatmulCompute):
                    row.append(kernel.flops / (timer.peak * timer.matmul_efficiency))
                elif kind == "gemm":
                    row.append(kernel.m)
                else:  # a batched GEMM of the core: its start from DRAM once per step (_finish)
                    row.append(kernels_seconds([kernel], timer) - timer.dram_startup_s)
        return row

    def _as_one_product(self, run: list, path: str, n: int, c: int, slots: int) -> list:
        """A leaf's GEMMs as the kernel model's one memory-or-compute product (their bytes, then
        their FLOPs), as leaf_kernels gives them where its matrices' rows differ: a latent
        attention's projections read n queries but up-project c keys, so only where the two
        happen to divide evenly does leaf_kernels give GEMMs. Each sequence's row must have one
        layout."""
        gemms = [k for k in run if isinstance(k, Gemm)]
        e = self.timer.element_bytes
        moved = sum(g.count * (e * (g.m * g.k + g.m * g.n) + (e * g.k * g.n if g.weight_bytes is None
                                                                else g.weight_bytes)) for g in gemms)
        first = run.index(gemms[0]) if gemms else 0
        merged = run[:first] + [Pointwise(float(moved), 0.0), MatmulCompute(float(sum(g.flops for g in gemms)))] + \
            [k for k in run[first:] if not isinstance(k, Gemm)]
        if len(merged) != slots:
            raise AssertionError(f"{path}: {len(run)} kernels at n={n}, c={c}, {slots} at n=2, c=3.")
        return merged

    def _finish(self, sums: Any, graphed: Any = False) -> Any:
        """Seconds of the context leaves from the sums of their sequences' rows (..., width);
        graphed: launched from a CUDA graph (a bool, or one per row of sums). One step's sums
        (1-D) are added up as Python floats (the same IEEE operations, without numpy's cost per
        scalar: seconds() runs once a step) and give a float."""
        import numpy as np

        timer = self.timer
        one = np.ndim(sums) == 1
        if one:
            row, graphed = sums.tolist(), bool(graphed)
            column_of, maximum = row.__getitem__, max
            pick = lambda graph, eager: graph if graphed else eager  # noqa: E731
            seconds: Any = 0.0
        else:
            column_of, maximum = (lambda column: sums[..., column]), np.maximum
            pick = lambda graph, eager: np.where(graphed, graph, eager)  # noqa: E731
            seconds = np.zeros(sums.shape[:-1])
        for kind, column, count, kernel, once in self._layout[0]:
            if kind == "launch":  # `once` holds the leaf's launch seconds: (eager, from a graph)
                seconds = seconds + count * pick(once[1], once[0])
            elif kind == "sum":  # a core GEMM: one batched call a layer, one start from DRAM
                seconds = seconds + count * (column_of(column) + timer.dram_startup_s * isinstance(kernel, Gemm))
            elif kind == "max":  # an attention call: one a layer, one start from DRAM
                busy = maximum(column_of(column), column_of(column + 1) + once / timer.bandwidth)
                seconds = seconds + count * (busy + timer.dram_startup_s * isinstance(kernel, AttentionCall))
            else:  # one GEMM over the step's rows (the sequences' rows concatenated)
                gemm = lambda m, kernel=kernel: kernels_seconds([replace(kernel, m=int(m))], timer)  # noqa: E731
                seconds = seconds + count * (gemm(column_of(column)) if one else np.vectorize(gemm)(column_of(column)))
        return seconds

    def _decode_rows(self, contexts: Any) -> Any:
        """Rows of decode sequences (n = 1) at each context, from a table over c filled at the
        contexts asked for (a leaf read from the tree at each c costs a sympy substitution, so a
        step at 32k keys must not fill the 32k below it)."""
        import numpy as np

        top = int(contexts.max())
        if top >= len(self._decode_table):
            grow = max(top + 1, 2 * len(self._decode_table), 1024) - len(self._decode_table)
            self._decode_table = np.concatenate([self._decode_table, np.full((grow, self._layout[1]), np.nan)])
            self._known = np.concatenate([self._known, np.zeros(grow, dtype=bool)])
        known = self._known[contexts]
        if not known.all():
            missing = np.unique(contexts[~known])
            rows = [self._row(1, max(int(c), 1)) for c in missing]
            self._decode_table[missing] = np.array(rows).reshape(len(missing), -1)
            self._known[missing] = True
        return self._decode_table[contexts]

    def _decode_sum(self, contexts: Any) -> Any:
        """_decode_rows(contexts).sum(axis=0), the table read once: a row not filled yet reads NaN
        (the table is grown with NaN), and a sum with a NaN (or a context past the table) is made
        again through _decode_rows, which fills the rows. The same rows in the same order: the
        same floats."""
        import numpy as np

        try:  # (take: numpy's fancy indexing's rows, at half its cost on a few dozen rows)
            total = np.add.reduce(self._decode_table.take(contexts, axis=0), axis=0)
            if (total[0] == total[0]) if total.ndim == 1 else not np.isnan(total[:, 0]).any():
                return total
        except IndexError:
            pass
        return self._decode_rows(contexts).sum(axis=0)

    def _chunk_rows(self, query: Any, context: Any) -> Any:
        """Rows of prefill chunks, kept by (query tokens, keys)."""
        import numpy as np

        rows = []
        for pair in zip(query.tolist(), context.tolist()):
            if pair not in self._chunks:
                self._chunks[pair] = np.array(self._row(*pair))
            rows.append(self._chunks[pair])
        if len(rows) == 1:  # one chunk (most mixed steps): its row is the sum (the caller adds it to a new array)
            return rows[0]
        return np.sum(rows, axis=0)

    def packing_seconds(self, query: Any, context: Any) -> float:
        """What packing a masked step's sequences into one attention call per layer adds
        (EagerStep.packing_seconds; 0 where the implementation packs nothing)."""
        return self.eager_step.packing_seconds(query, context)

    def _attention_terms(self, call: AttentionCall) -> list[float]:
        """An attention call's two columns of a sequence's row: its compute and its bytes, in
        seconds, as KernelTimer.attention_terms gives them (padded head widths included)."""
        return list(self.timer.attention_terms(call))

    def decode_run(self, keys: Any, steps: int) -> Any:
        """Seconds of `steps` consecutive decode-only steps of the same sequences, the first with
        `keys` keys each (one more per step): seconds() of each, vectorised over the steps."""
        import numpy as np

        keys = np.asarray(keys, dtype=np.int64)
        count = len(keys)
        plans, base = self._run_plans(keys, steps)
        if not self.groups["context"]:
            return np.full(steps, base)
        graphed = np.array([plan is not None and plan.context for plan in plans])
        rows = self._decode_sum(keys[:, None] + np.arange(steps))  # (steps, width)
        seconds = base + self._finish(rows, graphed)
        if self.eager_step.layers:
            ones = np.ones(count, dtype=np.int64)
            seconds = seconds + np.array([self.eager_step.seconds(ones, keys + i) for i in range(steps)])
        return seconds

    def seconds(self, query: Any, context: Any, emitting: int | None = None) -> float:
        """One step's seconds: query and context are integer arrays, one entry per sequence."""
        import numpy as np

        query = np.asarray(query, dtype=np.int64)
        context = np.asarray(context, dtype=np.int64)
        emitting = len(query) if emitting is None else emitting
        sizes = query.tolist()  # (a step's few dozen sequences: Python's sum and max beat numpy's calls)
        tokens = sum(sizes)
        plan = self.graphs.plan(query, context, tokens)
        seconds = self._fixed_seconds(plan, tokens, emitting) + self._context_seconds(query, context, plan, sizes)
        # (without a counted implementation EagerStep adds 0.0: not asked, the same float)
        return seconds + self.eager_step.seconds(query, context) if self.eager_step.layers else seconds

    def context_seconds(self, query: Any, context: Any) -> float:
        """The part of seconds() that the sequences' contexts make: the context leaves (each layer's attention
        call and the kernels beside it), launched as the step's graph plan launches them."""
        import numpy as np

        query = np.asarray(query, dtype=np.int64)
        context = np.asarray(context, dtype=np.int64)
        return self._context_seconds(query, context, self.graphs.plan(query, context))

    def _context_seconds(self, query: Any, context: Any, plan: Graphed | None, sizes: list | None = None) -> float:
        """context_seconds under a given graph plan (sizes: query as a list, where the caller has it)."""
        import numpy as np

        if not self.groups["context"]:
            return 0.0
        return self._finish(np.asarray(self.context_sums(query, context, sizes)), plan is not None and plan.context)

    def _fixed_seconds(self, plan: Graphed | None, tokens: int, emitting: int) -> float:
        """A step's per-token leaves (from a graph at its padded rows where `plan` says) and head."""
        if plan is None:
            return self._per_token_group("tokens", tokens) + self._per_token_group("head", emitting)
        return self._per_token_group("tokens", plan.tokens, True) + self._per_token_group("head", emitting)
