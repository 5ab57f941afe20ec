"""FLOPs and bytes become seconds: roofline times for prefill, decode and training on a hardware preset.

Pure analytic (no torch), and no formulas: it divides the cost tree's leaves by the hardware's rates
(costmodel/hardware.py). A block runs two kinds of kernels one after the other: its matrix
products, on the matmul units (tensor cores; a CPU's fused multiply-add pipelines), and its other
ops (norms, softmax, activations, adds), on the vector units. Each kind takes its own roofline time,
max(FLOPs / (peak x compute efficiency), bytes moved / (bandwidth x memory efficiency)), with the
matmul peak of the dtype for the products and the vector peak for the rest; a block adds a fixed
overhead (kernel launches, or the interpreter's dispatch of its few ops on a CPU). A pass is the sum
over blocks, and each figure says which resource bounds it.

Phases are the tree's: the prefill (a forward over the prompt: for an encoder-decoder, the encoder
over the source and the decoder over its prompt), a decode step (one token attending to its
context, and to the source in cross-attention), and a training step (forward, backward, reruns
under recomputation, then the optimizer leaf's pass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import sympy as sp

from . import symbols as S
from .config import DTYPE_BYTES, KV_CACHES, ConfigError, ModelConfig, Workload, require_decoder, show
from .decode_sums import NoClosedForm, Rates, StepSums
from .evaluate import Sweep, values
from .hardware import Efficiency, Hardware, kernel_times, time_model_for
from .memory import inference_phases, memory
from . import blocks as B
from .leaves import Leaf
from .model_flops import model_flops
from .tree import CostModel, model_values, profile_for

KERNEL_QUANTITIES = ("flops_matmul", "bytes_matmul", "flops_other", "bytes_other")  # per block


@dataclass(frozen=True)
class Timing:
    """A roofline time: compute time, memory time, the time the kernels take (each kernel the
    larger of its two), the fixed overhead, and which resource is busy longer."""

    flops: float
    bytes: float
    compute_s: float
    memory_s: float
    busy_s: float  # sum over kernels of max(compute, memory)
    overhead_s: float = 0.0  # fixed launch/dispatch time of the blocks' ops

    @classmethod
    def of(cls, matmul: tuple[float, float], other: tuple[float, float], peak: float, vector: float,
           bandwidth: float, overhead_s: float = 0.0) -> "Timing":
        """The matrix products' (FLOPs, bytes) at the matmul peak, then the other ops' at the
        vector peak: two kernels one after the other, each at its own roofline time."""
        parts = kernel_times(*matmul, *other, peak, vector, bandwidth)
        return cls(matmul[0] + other[0], matmul[1] + other[1], *(float(x) for x in parts), overhead_s)

    @property
    def seconds(self) -> float:
        return self.busy_s + self.overhead_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else math.inf

    def __add__(self, other: "Timing") -> "Timing":
        return Timing(
            self.flops + other.flops, self.bytes + other.bytes,
            self.compute_s + other.compute_s, self.memory_s + other.memory_s,
            self.busy_s + other.busy_s, self.overhead_s + other.overhead_s,
        )


@dataclass(frozen=True)
class BlockTiming:
    path: str
    timing: Timing
    seconds: float  # the block's own roofline time and overhead


class Roofline:
    """Roofline times of one model on one machine, block by block."""

    def __init__(self, cfg: ModelConfig, hardware: Hardware, dtype: str = "bf16",
                 efficiency: Efficiency | None = None, attention: str = "eager",
                 kv_cache: str = "dynamic", cuda_graphs: bool = False,
                 quantization: dict[str, Any] | None = None, mla: str = "naive"):
        self.cfg = cfg
        self.hardware = hardware
        self.attention, self.kv_cache = attention, kv_cache
        self.dtype = Workload(dtype=dtype).dtype
        eff = efficiency or Efficiency(**hardware.efficiency)
        self.efficiency = eff
        self.efficiency_given = efficiency  # None: the hardware's (the kernel model's own defaults)
        self.flops_per_s = hardware.peak(self.dtype) * eff.compute
        self.vector_flops_per_s = hardware.vector_flops_per_s * eff.compute
        self.bytes_per_s = hardware.bandwidth_bytes_per_s * eff.memory
        self.overhead_s = hardware.overhead_s_per_block
        # CUDA graphs replay a captured decode step: no launch per kernel (the prefill runs eagerly).
        self.decode_overhead_s = 0.0 if cuda_graphs else self.overhead_s
        if kv_cache not in KV_CACHES:
            raise ConfigError(f"kv_cache must be one of {', '.join(KV_CACHES)}, got {show(kv_cache)}.")
        self.workload = Workload(attention=attention, dtype=self.dtype, mla=mla, **(quantization or {}))
        # Quantized weights or KV cache change the bytes the closed-form sums do not model.
        self.quantized = any(v is not None for v in (quantization or {}).values())
        profile = profile_for(cfg, self.workload, dropout=False, kv_cache=kv_cache)
        self.prefill_model = CostModel(cfg, profile, phase="prefill")
        self.decode_model = CostModel(cfg, profile, phase="decode") if cfg.n_decoder_layers else None
        self.encoder_decoder = cfg.architecture == "encoder-decoder"

    def _values(self, batch: int, seq_len: int, source_len: int | None = None,
                context: int | None = None) -> dict:
        subs = {**model_values(self.cfg), S.b: batch, S.n: seq_len, S.T: 0,
                S.s: seq_len if source_len is None else source_len,
                S.c: seq_len if context is None else context, S.e: DTYPE_BYTES[self.dtype]}
        return {k: sp.Integer(v) for k, v in subs.items()}

    def _sweep(self, model: CostModel, leaves: tuple[Leaf, ...] | None = None
               ) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        """One lambdified function for every leaf's FLOPs and bytes moved, matmul and other, and
        how many times each leaf runs (its layers) and whether it runs any op."""
        runs, expressions = {}, {}
        fixed = {k: sp.Integer(v) for k, v in model_values(model.cfg).items()}
        for leaf in model.leaves if leaves is None else leaves:
            runs[leaf.path] = (int(leaf.count.xreplace(fixed)), leaf.cost.is_active())
            for quantity in KERNEL_QUANTITIES:
                expressions[f"{leaf.path}|{quantity}"] = (matmul_traffic(leaf) if quantity == "bytes_matmul"
                                                          else leaf.total(quantity))
        return runs, Sweep(model, expressions)

    @cached_property
    def _prefill_sweep(self) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        return self._sweep(self.prefill_model)

    @cached_property
    def _rerun_sweep(self) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        """A generation step without a KV cache reruns the decoder side over every token so far;
        an encoder-decoder keeps its encoder's output."""
        return self._sweep(self.prefill_model, self.prefill_model.select(stack="decoder"))

    @cached_property
    def _decode_sweep(self) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        return self._sweep(self.decoder_tree())

    def decoder_tree(self) -> CostModel:
        require_decoder(self.cfg)
        return self.decode_model

    def _times(self, sweep: tuple[dict[str, tuple[int, bool]], Sweep], decode: bool = False,
               **workload) -> tuple[list[BlockTiming], Any]:
        """Per-block timings at the first point and the roofline seconds at every point."""
        import numpy as np

        runs, function = sweep
        out = function(e=DTYPE_BYTES[self.dtype], **workload)
        seconds = 0.0
        blocks = []
        for path, (count, active) in runs.items():
            f_mm, b_mm, f_o, b_o = (np.asarray(out[f"{path}|{q}"]) for q in KERNEL_QUANTITIES)
            overhead = (self.decode_overhead_s if decode else self.overhead_s) * count if active else 0.0
            _, _, busy = kernel_times(f_mm, b_mm, f_o, b_o, self.flops_per_s,
                                      self.vector_flops_per_s, self.bytes_per_s)
            seconds = seconds + busy + overhead
            first = Timing.of((float(f_mm.flat[0]), float(b_mm.flat[0])),
                              (float(f_o.flat[0]), float(b_o.flat[0])), self.flops_per_s,
                              self.vector_flops_per_s, self.bytes_per_s, overhead)
            blocks.append(BlockTiming(path, first, first.seconds))
        return blocks, seconds

    def prefill(self, batch: int, seq_len: Any, source_len: Any = None
                ) -> tuple[Timing, Any, list[BlockTiming]]:
        """A forward over the prompt (no loss): totals at the first length, roofline seconds at
        every length given (an int or an array), and the blocks at the first length. seq_len is
        the decoder's prompt; an encoder-decoder's encoder runs over source_len tokens."""
        source = seq_len if source_len is None else source_len
        blocks, seconds = self._times(self._prefill_sweep, n=seq_len, s=source, b=batch)
        return self._sum(blocks), seconds, blocks

    def rerun(self, batch: int, context: Any, source_len: Any = 1) -> tuple[Timing, Any, list[BlockTiming]]:
        """A generation step without a cache: the decoder side over `context` tokens."""
        blocks, seconds = self._times(self._rerun_sweep, n=context, s=source_len, b=batch)
        return self._sum(blocks), seconds, blocks

    def decode(self, batch: int, context: Any, source_len: int = 1) -> tuple[Timing, Any, list[BlockTiming]]:
        """Cached decode steps of `batch` sequences attending to `context` keys (int or array)."""
        blocks, seconds = self._times(self._decode_sweep, decode=True, n=1, b=batch, s=source_len, c=context)
        return self._sum(blocks), seconds, blocks

    @staticmethod
    def _sum(blocks: list[BlockTiming]) -> Timing:
        """Totals: the blocks' compute, memory, busy and overhead times summed."""
        total = Timing(0.0, 0.0, 0.0, 0.0, 0.0)
        for block in blocks:
            total = total + block.timing
        return total

    def decode_crossover_batch(self, context: int | None = None, source_len: int = 1) -> float:
        """The batch at which a decode step's matrix products turn from memory- to compute-bound.

        Their FLOPs are linear in b, F = f*b; their bytes piecewise linear, B = B0 + B1*b on each
        piece (B0: weights; B1: each sequence's activations and KV cache at `context`). A mixture
        of experts reads an expert's weights once per step if any token routes to it: min(E, b k)
        experts, so its bytes grow with b up to b = E/k and are all E experts' beyond. On each
        piece compute time equals memory time at b* = B0*P / (f*W - B1*P) (P peak FLOP/s, W
        bandwidth; both with efficiencies); the crossover is the first piece whose b* lies in it.
        context=None drops the per-sequence traffic (B1 = 0): the classic weights-only figure,
        peak/bandwidth x (bytes per parameter) / (2 FLOPs per parameter).
        """
        model = self.decoder_tree()
        flops = model.total("flops_matmul")
        moved = sp.Add(*(matmul_traffic(leaf) for leaf in model.leaves))  # quantized weights as stored
        subs = self._values(1, 1, source_len, context if context is not None else 1)
        subs.pop(S.b)
        f = float(sp.expand(flops.xreplace(subs)).coeff(S.b, 1))
        moved_b = moved.xreplace(subs)
        for lower, upper, piece in _linear_pieces(moved_b, S.b):
            line = sp.expand(piece)
            b0, b1 = float(line.coeff(S.b, 0)), float(line.coeff(S.b, 1))
            if context is None:
                b1 = 0.0
            denominator = f * self.bytes_per_s - b1 * self.flops_per_s
            batch = math.inf if denominator <= 0 else b0 * self.flops_per_s / denominator
            if lower <= batch <= upper:
                return batch
        return math.inf

    def fits(self, batch: int, context: int, source_len: int = 1,
             prompt: int | None = None) -> dict[str, Any]:
        """Inference memory (costmodel.memory: each phase's weights, buffers, ids, logits and KV
        cache) at this batch: a decode step at `context` keys and, if a prompt is given, its
        prefill; whether it fits; the largest batch at this context and the longest context at
        this batch (both phases fitting)."""
        self.decoder_tree()
        phases = inference_phases(self.cfg, self.prefill_model.profile)
        subs = self._values(batch, prompt or 1, source_len)
        decode = phases["decode"].xreplace({S.T: S.c - S.n})
        capacity = self.hardware.serving_memory_bytes

        def linear(expr: sp.Expr, variable: sp.Symbol, at: dict) -> tuple[int, int]:
            line = sp.expand(expr.xreplace({k: v for k, v in at.items() if k != variable}))
            return int(line.coeff(variable, 0)), int(line.coeff(variable, 1))

        at_context = {**subs, S.c: sp.Integer(context)}
        needed = {"decode": int(decode.xreplace(at_context))}
        fixed, per_sequence = linear(decode, S.b, at_context)
        max_batch = (capacity - fixed) // per_sequence
        max_context = longest_context(decode.xreplace({k: v for k, v in subs.items() if k != S.c}),
                                      capacity)
        if prompt is not None:
            needed["prefill"] = int(phases["prefill"].xreplace(subs))
            fixed_p, per_prompt = linear(phases["prefill"], S.b, subs)
            max_batch = min(max_batch, (capacity - fixed_p) // per_prompt)
            if needed["prefill"] > capacity:
                max_context = 0
        total = max(needed.values())
        kv = sp.expand(self.decode_model.total("kv_cache_bytes").xreplace(
            {k: v for k, v in at_context.items() if k not in (S.b, S.c)}))
        below_windows = kv.replace(sp.Min, lambda *args: S.c if S.c in args else sp.Min(*args))
        return {
            "weights": int(self.prefill_model.total("weight_bytes").xreplace(subs)),
            "kv_bytes_per_token": int(sp.expand(below_windows).coeff(S.b, 1).coeff(S.c, 1)),
            "bytes": total,
            "bytes_by_phase": needed,
            "fits": total <= capacity,
            "prefill_fits": needed.get("prefill", 0) <= capacity,
            "max_batch": max(max_batch, 0),
            "max_context": max(max_context, 0),
        }


def matmul_traffic(leaf: Leaf) -> sp.Expr:
    """A leaf's matrix-product traffic with its weights as stored: a quantized leaf reads its
    quantized matrices (data, scales, zeros, tables) instead of e bytes per weight. The
    dequantisation runs in the GEMM's registers (weight-only kernels: gpt-fast, Marlin, bitsandbytes):
    no traffic of its own, a stated convention. Routed experts (only some of their weights read)
    keep the unquantized traffic."""
    moved = leaf.total("bytes_matmul")
    if leaf.weight_format is None or not leaf.cost.matrices or leaf.cost.inactive_params != 0:
        return moved
    stored = leaf.count * sp.Add(*B.quantized_bytes(leaf.cost.matrices, leaf.weight_format).values())
    return moved - leaf.count * S.e * leaf.cost.matrix_params + stored
def _linear_pieces(expr: sp.Expr, variable: sp.Symbol) -> list[tuple[float, float, sp.Expr]]:
    """A piecewise-linear expression in `variable` >= 0 whose only kinks are Min/Max of linear
    terms, as (lower, upper, the linear expression there), pieces in increasing order."""
    kinks = [a for a in expr.atoms(sp.Min, sp.Max) if variable in a.free_symbols]
    points = sorted({float(x) for kink in kinks for i, p in enumerate(kink.args) for q in kink.args[i + 1:]
                     for x in sp.solve(sp.Eq(p, q), variable) if x.is_real and x > 0})
    edges = [0.0, *points, math.inf]
    pieces = []
    for lower, upper in zip(edges, edges[1:]):
        inside = sp.Float(lower + 1 if upper == math.inf else (lower + upper) / 2)
        chosen = {kink: min(kink.args, key=lambda a: float(a.xreplace({variable: inside})))
                  if isinstance(kink, sp.Min) else
                  max(kink.args, key=lambda a: float(a.xreplace({variable: inside})))
                  for kink in kinks}
        pieces.append((lower, upper, expr.xreplace(chosen)))
    return pieces


def longest_context(needed: sp.Expr, capacity: int) -> int | float:
    """The most keys c at which `needed` (bytes, nondecreasing in c: a cache that grows by a key
    each step, or stops at a sliding window) stays within capacity; math.inf where it never
    passes it (every layer windowed), 0 where one key does not fit. Exact: the integer search
    evaluates the expression itself, so the windows' Min(c, w) need no special case."""
    def at(keys: int) -> int:
        return int(needed.xreplace({S.c: sp.Integer(keys)}))

    beyond = 2**62  # more keys than any context; fitting there means fitting at any length
    if at(1) > capacity:
        return 0
    if at(beyond) <= capacity:
        return math.inf
    fits, fails = 1, beyond
    while fails - fits > 1:
        middle = (fits + fails) // 2
        fits, fails = (middle, fails) if at(middle) <= capacity else (fits, middle)
    return fits


def block_runs(model: CostModel) -> int:
    """How many blocks one pass runs (each leaf times its layers), counting those that compute or
    move anything: what the per-block overhead is paid for."""
    fixed = {k: sp.Integer(v) for k, v in model_values(model.cfg).items()}
    return sum(int(leaf.count.xreplace(fixed)) for leaf in model.leaves if leaf.cost.is_active())


def training_step(cfg: ModelConfig, workload: Workload, hardware: Hardware,
                  efficiency: Efficiency | None = None, flops_convention: str = "dense") -> dict[str, Any]:
    """Roofline time of one training step: forward + backward (+ recomputation) + optimizer.

    Block by block, as in inference, each block's two kernels at their own roofs, with the
    backward's FLOPs and traffic the tree's (blocks.Cost: backward matmul FLOPs; backward traffic
    and other ops twice the forward's, a stated convention). A block that recomputation reruns
    (every block under full recomputation, the attention core under selective) runs its forward
    once more. Then the optimizer leaf's pass: a memory-bound pass of its own, as a fused
    optimizer makes it (PyTorch's default, unfused AdamW makes about 20 passes over parameter-
    sized tensors; validate/FINDINGS.md section 9). Overhead: the per-block overhead for 3x the
    forward's blocks (backward runs about twice the forward's ops).
    """
    eff = efficiency or Efficiency(**hardware.efficiency)
    peak = hardware.peak(workload.dtype) * eff.compute
    vector = hardware.vector_flops_per_s * eff.compute
    bandwidth = hardware.bandwidth_bytes_per_s * eff.memory
    model = CostModel(cfg, profile_for(cfg, workload))
    subs = {k: sp.Integer(v) for k, v in values(cfg, workload).items()}
    n = lambda expr: float(expr.xreplace(subs))  # noqa: E731
    timing = Timing(0.0, 0.0, 0.0, 0.0, 0.0)
    for leaf in model.leaves:
        forwards = 2 if leaf.recomputed else 1
        q = lambda quantity: n(leaf.total(quantity))  # noqa: E731
        matmul = (forwards * q("flops_matmul") + q("flops_matmul_backward"),
                  forwards * q("bytes_matmul") + q("bytes_matmul_backward"))
        others = (forwards * q("flops_other") + q("flops_other_backward"),
                  forwards * q("bytes_other") + q("bytes_other_backward") + q("bytes_optimizer"))
        timing = timing + Timing.of(matmul, others, peak, vector, bandwidth)
    overhead = 3 * block_runs(model) * hardware.overhead_s_per_block
    timing = timing + Timing(0.0, 0.0, 0.0, 0.0, 0.0, overhead)
    mem = memory(cfg, workload, model)
    tokens = workload.batch * workload.dimensions(cfg)["n"]
    memory_numbers = {k: int(getattr(mem, k).xreplace(subs)) for k in
                      ("weights", "gradients", "optimizer", "activations")}
    memory_numbers["total"] = int(mem.training_total.xreplace(subs))
    return {
        "timing": timing,
        "model_flops": n(model_flops(model.leaves, flops_convention)),
        "flops_convention": flops_convention,
        "tokens": tokens,
        "memory": memory_numbers,
        "fits": memory_numbers["total"] <= hardware.training_memory_bytes,
        "peak_flops_per_s": hardware.peak(workload.dtype),
    }


def mfu(model_flops: float, step_seconds: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilisation: the step's model FLOPs per second over the peak."""
    return model_flops / (step_seconds * peak_flops_per_s)


def _timing_dict(timing: Timing, seconds: float) -> dict[str, Any]:
    """A figure with its bound: compute and memory time, and the fraction of the roofline time
    each resource is busy (at most 1: the kernels run one after another)."""
    return {
        "seconds": seconds,
        "flops": timing.flops,
        "bytes": timing.bytes,
        "compute_seconds": timing.compute_s,
        "memory_seconds": timing.memory_s,
        "bound": timing.bound,
        "intensity_flops_per_byte": timing.intensity,
        "compute_busy_fraction": timing.compute_s / seconds if seconds else 0.0,
        "memory_busy_fraction": timing.memory_s / seconds if seconds else 0.0,
    }




class KernelSteps:
    """The kernel-level model's prefill and decode-step times for simulate_inference: the
    Roofline's trees, timed leaf by leaf (costmodel.kernel_time.leaves_time). Decode steps are
    timed at the shown contexts (up to 8) and interpolated linearly in between (the step time is
    linear in the context but for the attention kernel's block steps)."""

    def __init__(self, roof: Roofline, cuda_graphs: bool, compiled: bool = False):
        from .kernel_time import KernelTimer, check_kernel_model

        check_kernel_model(roof.hardware)
        self.roof = roof
        self.timer = KernelTimer(roof.hardware, roof.dtype, roof.workload.attention,
                                 efficiency=roof.efficiency_given, compiled=compiled)
        self.decode_timer = KernelTimer(roof.hardware, roof.dtype, roof.workload.attention,
                                        cuda_graphs=cuda_graphs, efficiency=roof.efficiency_given, compiled=compiled)

    def prefill(self, batch: int, prompt: int, source: int) -> float:
        from .kernel_time import inference_subs, leaves_time

        subs = inference_subs(self.roof.cfg, self.roof.dtype, batch, prompt, source_len=source)
        return leaves_time(self.roof.prefill_model.leaves, subs, self.timer).seconds

    def decode_curve(self, batch: int, contexts: Any, source: int) -> tuple[list[int], list[float]]:
        """The decode step's seconds at each of `contexts` (sorted): the points linear_sum and
        np.interp take."""
        from .kernel_time import inference_subs, leaves_time

        sampled = sorted({int(c) for c in contexts})
        leaves = self.roof.decoder_tree().leaves
        times = [leaves_time(leaves, inference_subs(self.roof.cfg, self.roof.dtype, batch, 1, context=c,
                                                    source_len=source), self.decode_timer).seconds
                 for c in sampled]
        return sampled, times


def linear_sum(curve: tuple[list[int], list[float]], lo: int, hi: int) -> float:
    """The sum over the integers c = lo..hi of the piecewise-linear curve through the points
    (xs, ys) (np.interp's: constant beyond its ends), in closed form: on each piece, n
    consecutive integers sum to n times the line's value at their middle."""
    xs, ys = curve
    total = max(0, min(hi, xs[0]) - lo + 1) * ys[0]  # c <= xs[0]
    total += max(0, hi - max(lo, xs[-1] + 1) + 1) * ys[-1]  # c > xs[-1]
    for k in range(len(xs) - 1):  # xs[k] < c <= xs[k + 1]
        a, b = max(lo, xs[k] + 1), min(hi, xs[k + 1])
        if a <= b:
            slope = (ys[k + 1] - ys[k]) / (xs[k + 1] - xs[k])
            total += (b - a + 1) * (ys[k] + slope * ((a + b) / 2 - xs[k]))
    return total


#: Steps evaluated at once by the step-by-step path: a million steps take about 100 MB.
DECODE_CHUNK = 1 << 18


def stepwise_generation_seconds(roof: "Roofline", batch: int, lo: int, hi: int,
                                source_len: int = 1) -> tuple[float, float]:
    """Roofline seconds of the generation steps at contexts lo..hi, with and without a KV cache,
    evaluated step by step in chunks (time linear in the steps). simulate_inference sums them in
    closed form (costmodel/decode_sums.py); this path is what tests check that sum against."""
    import numpy as np

    with_total = without_total = 0.0
    for start in range(lo, hi + 1, DECODE_CHUNK):
        contexts = np.arange(start, min(start + DECODE_CHUNK, hi + 1))
        _, with_cache, _ = roof.decode(batch, contexts, source_len=source_len)
        _, without_cache, _ = roof.rerun(batch, contexts, source_len=source_len)
        with_total += float(np.broadcast_to(with_cache, contexts.shape).sum())
        without_total += float(np.broadcast_to(without_cache, contexts.shape).sum())
    return with_total, without_total


def generation_seconds(roof: "Roofline", batch: int, lo: int, hi: int, source_len: int = 1
                       ) -> tuple[float, float]:
    """Roofline seconds of the generation steps at contexts lo..hi, with a KV cache (decode steps;
    no launches under CUDA graphs) and without one (every step reruns the decoder over its prefix;
    an encoder-decoder keeps the encoder's output): summed in closed form
    (costmodel/decode_sums.py), at once for any number of steps; step by step where a cost is not
    piecewise polynomial in the context, or where quantized weights or KV change the bytes the
    closed form does not model."""
    if roof.quantized:
        return stepwise_generation_seconds(roof, batch, lo, hi, source_len)
    rates = (roof.flops_per_s, roof.vector_flops_per_s, roof.bytes_per_s)
    workload = {"batch": batch, "source_len": source_len, "bytes_per_element": DTYPE_BYTES[roof.dtype]}
    mla = roof.workload.mla
    try:
        cached = StepSums(roof.cfg, "decode", roof.attention, roof.kv_cache, mla)
        rerun = StepSums(roof.cfg, "rerun", roof.attention, roof.kv_cache, mla)
        return (cached.seconds(lo, hi, Rates(*rates, roof.decode_overhead_s), **workload),
                rerun.seconds(lo, hi, Rates(*rates, roof.overhead_s), **workload))
    except NoClosedForm:
        return stepwise_generation_seconds(roof, batch, lo, hi, source_len)


def _steps(gen: int, rows: int = 8) -> list[int]:
    """Up to `rows` decode steps spread over 1..gen, always with the first and the last."""
    if gen <= rows:
        return list(range(1, gen + 1))
    return sorted({1 + round(i * (gen - 1) / (rows - 1)) for i in range(rows)})


def simulate_inference(cfg: ModelConfig, hardware: Hardware, *, prompt: int, gen: int, batch: int,
                       dtype: str = "bf16", efficiency: Efficiency | None = None,
                       attention: str = "eager", kv_cache: str = "dynamic",
                       decoder_prompt: int = 1, cuda_graphs: bool = False,
                       quantization: dict[str, Any] | None = None,
                       time_model: str | None = None, compiled: bool = False,
                       mla: str = "naive") -> dict[str, Any]:
    """Prefill latency, time per output token as the context grows, tokens/s, the decode
    crossover batch, what fits in memory, and a step table with and without a KV cache.

    time_model "roofline" times each block's two kernels at the efficiencies' roofs;
    "kernels" times the leaves' kernels by their shapes (costmodel/kernel_time.py) for the
    prefill and the cached decode steps (the table's uncached reruns stay the roofline's).
    cuda_graphs: decode steps replayed from a CUDA graph, with no launch overhead.

    An encoder-decoder's prompt is its source: the prefill runs the encoder over it and the
    decoder over its own prompt (decoder_prompt tokens, the start token by default); each decode
    step attends to the source and to the decoder's tokens so far."""
    import numpy as np

    time_model = time_model_for(hardware, time_model)
    if compiled and time_model != "kernels":
        raise ConfigError("--compile is modelled by the kernel-level time model only; add --time-model kernels.")
    roof = Roofline(cfg, hardware, dtype, efficiency, attention, kv_cache, cuda_graphs, quantization, mla)
    encoder_decoder = cfg.architecture == "encoder-decoder"
    source = prompt if encoder_decoder else 1
    decoder_prompt = decoder_prompt if encoder_decoder else prompt
    prefill_total, prefill_s, prefill_blocks = roof.prefill(batch, decoder_prompt, source_len=source)
    prefill_s = float(prefill_s)
    kernels = KernelSteps(roof, cuda_graphs, compiled) if time_model == "kernels" else None
    if kernels:
        prefill_s = kernels.prefill(batch, decoder_prompt, source)
    first = last = None
    table: list[dict[str, Any]] = []
    generate_seconds = 0.0
    if gen:
        first, first_s, _ = roof.decode(batch, decoder_prompt + 1, source_len=source)
        last, last_s, _ = roof.decode(batch, decoder_prompt + gen, source_len=source)
        first_s, last_s = float(first_s), float(last_s)
        shown = _steps(gen)
        contexts = decoder_prompt + np.asarray(shown)
        _, with_cache, _ = roof.decode(batch, contexts, source_len=source)
        _, without_cache, _ = roof.rerun(batch, contexts, source_len=source)
        with_cache = np.broadcast_to(with_cache, contexts.shape)
        without_cache = np.broadcast_to(without_cache, contexts.shape)
        curve = kernels.decode_curve(batch, contexts, source) if kernels else None
        if curve is not None:  # the kernel model's decode steps (the reruns stay the roofline's)
            with_cache = np.asarray(curve[1])
            first_s, last_s = float(with_cache[0]), float(with_cache[-1])
        with_total = without_total = 0.0
        previous = 0
        for i, step in enumerate(shown):
            lo, hi = decoder_prompt + previous + 1, decoder_prompt + step
            with_steps, without_steps = generation_seconds(roof, batch, lo, hi, source)
            if curve is not None:  # the kernel model's steps: its curve, linear between the shown steps
                with_steps = linear_sum(curve, lo, hi)
            with_total, without_total = with_total + with_steps, without_total + without_steps
            previous = step
            table.append({
                "step": step, "context": int(contexts[i]),
                "with_cache_seconds": float(with_cache[i]),
                "without_cache_seconds": float(without_cache[i]),
                "with_cache_cumulative": prefill_s + with_total,
                "without_cache_cumulative": prefill_s + without_total,
            })
        generate_seconds = float(with_total)
    result: dict[str, Any] = {
        "inputs": {"model": cfg.name, "hardware": hardware.name, "dtype": roof.dtype,
                   "prompt": prompt, "decoder_prompt": decoder_prompt if encoder_decoder else None,
                   "gen": gen, "batch": batch, "attention": attention,
                   "kv_cache": kv_cache, "cuda_graphs": cuda_graphs, "time_model": time_model,
                   "compiled": compiled,
                   **{k: v for k, v in (quantization or {}).items() if v is not None},
                   "compute_efficiency": roof.efficiency.compute,
                   "memory_efficiency": roof.efficiency.memory},
        "hardware": {"peak_flops_per_s": hardware.peak(roof.dtype),
                     "vector_flops_per_s": hardware.vector_flops_per_s,
                     "bandwidth_bytes_per_s": hardware.bandwidth_bytes_per_s,
                     "ridge_flops_per_byte": roof.flops_per_s / roof.bytes_per_s,
                     "memory_bytes": hardware.memory_bytes,
                     "serving_memory_bytes": hardware.serving_memory_bytes, "source": hardware.source},
        "prefill": _timing_dict(prefill_total, prefill_s),
        "prefill_blocks": [{"path": b.path, "seconds": b.seconds, "bound": b.timing.bound}
                           for b in prefill_blocks],
    }
    if first is not None:
        result["decode"] = {
            "first_token": _timing_dict(first, first_s),
            "last_token": _timing_dict(last, last_s),
            "generate_seconds": generate_seconds,
            "tokens_per_second": batch * gen / generate_seconds,
            "end_to_end_seconds": prefill_s + generate_seconds,
            "crossover_batch_weights_only": roof.decode_crossover_batch(),
            "crossover_batch_at_context": roof.decode_crossover_batch(decoder_prompt + gen, source),
        }
        result["memory"] = roof.fits(batch, decoder_prompt + gen, source_len=source,
                                     prompt=decoder_prompt)
        result["generation_table"] = table
    return result


def simulate_training(cfg: ModelConfig, workload: Workload, hardware: Hardware, *,
                      tokens: float | None = None, step_seconds: float | None = None,
                      efficiency: Efficiency | None = None, flops_convention: str = "dense",
                      price: float | None = None) -> dict[str, Any]:
    """Step time, tokens/s, MFU (predicted, and for a measured step time; model FLOPs of the
    named convention, costmodel/model_flops.py), time to train on `tokens` tokens with its
    GPU-hours, FLOPs and (at `price` per GPU-hour, or the hardware's) dollars, and the memory
    that must fit."""
    from .cost import training_cost

    step = training_step(cfg, workload, hardware, efficiency, flops_convention)
    timing: Timing = step["timing"]
    seconds = timing.seconds
    tokens_per_second = step["tokens"] / seconds
    result = {
        "inputs": {"model": cfg.name, "hardware": hardware.name, "dtype": workload.dtype,
                   "seq_len": workload.seq_len, "batch": workload.batch,
                   "recompute": workload.recompute, "attention": workload.attention,
                   "impl": workload.impl, "tokens": tokens,
                   "time_model": "roofline"},  # the only model of one GPU's training without a layout
        "step": _timing_dict(timing, seconds),
        "tokens_per_second": tokens_per_second,
        "mfu_predicted": mfu(step["model_flops"], seconds, step["peak_flops_per_s"]),
        "flops_convention": flops_convention,
        "memory": step["memory"],
        "fits": step["fits"],
        "memory_capacity": hardware.training_memory_bytes,
    }
    if step_seconds is not None:
        result["mfu_measured"] = mfu(step["model_flops"], step_seconds, step["peak_flops_per_s"])
    if tokens is not None:
        result["cost"] = training_cost(tokens, tokens_per_second, 1, step["model_flops"], step["tokens"],
                                       hardware.price_per_gpu_hour if price is None else price)
        result["train_seconds"] = result["cost"]["train_seconds"]
    return result
