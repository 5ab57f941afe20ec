"""The Roofline: one model's passes on one machine, block by block, FLOPs and bytes turned into seconds.

Pure analytic (no torch), and no formulas: it divides the cost tree's leaves by the hardware's rates
(costmodel/hardware.py). A block runs two kinds of kernels one after the other: its matrix
products, on the matmul units (tensor cores; a CPU's fused multiply-add pipelines), and its other
ops (norms, softmax, activations, adds), on the vector units. Each kind takes its own roofline time,
max(FLOPs / (peak x compute efficiency), bytes moved / (bandwidth x memory efficiency)), with the
matmul peak of the dtype for the products (fp8 weights' projections, where they run W8A8: the FP8
peak, quantized_matmul.runs_w8a8) and the vector peak for the rest; a block adds a fixed
overhead (kernel launches, or the interpreter's dispatch of its few ops on a CPU). A pass is the sum
over blocks, and each figure says which resource bounds it.

The passes are the tree's: the prefill (a forward over the prompt: for an encoder-decoder, the
encoder over the source and the decoder over its prompt), a generation step without a KV cache
(the decoder over every token so far) and a cached decode step (one token attending to its
context, and to the source in cross-attention). Beside them: the batch at which a decode step
turns compute-bound, and what fits in inference memory. costmodel/roofline.py strings the passes
into a generation's timelines, costmodel/roofline_training.py into a training step's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import sympy as sp

from . import symbols as S
from .config import DTYPE_BYTES, KV_CACHES, ConfigError, ModelConfig, Workload, require_decoder, show
from .defaults import has_attention
from .layer_pattern import states_context
from .evaluate import Sweep
from .hardware import Efficiency, Hardware, kernel_times
from .memory import decode_phase_bytes, inference_phases
from .leaf import Leaf
from .quantized_matmul import blended_peak, runs_w8a8, w8a8_leaf_adjustment, w8a8_peak
from .tree import CostModel, generate_logits_to_keep, model_values, profile_for, shared_model
from .workload import logits_kept

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


def timing_dict(timing: Timing, seconds: float, roofline_seconds: float | None = None) -> dict[str, Any]:
    """A figure with its bound: compute and memory time, and the fraction of the roofline time
    (roofline_seconds; `seconds` when it is the roofline's) each resource is busy (at most 1: the
    kernels run one after another). Where the kernel-level model gives `seconds`, the shares stay
    the roofline's, as the report says: the roofline's compute time over the kernel model's
    shorter step read 114% busy."""
    busy_of = seconds if roofline_seconds is None else roofline_seconds
    return {
        "seconds": seconds,
        "flops": timing.flops,
        "bytes": timing.bytes,
        "compute_seconds": timing.compute_s,
        "memory_seconds": timing.memory_s,
        "bound": timing.bound,
        "intensity_flops_per_byte": timing.intensity,
        "compute_busy_fraction": timing.compute_s / busy_of if busy_of else 0.0,
        "memory_busy_fraction": timing.memory_s / busy_of if busy_of else 0.0,
    }


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
                 quantization: dict[str, Any] | None = None, mla: str = "naive",
                 decode_code: str = "transformers"):
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
        # decode_code: the code that decodes (costmodel/decode_codes.py): its KV cache's heads and
        # how its attention reads a quantized cache, in the memory and the passes alike
        self.workload = Workload(attention=attention, dtype=self.dtype, mla=mla, decode_code=decode_code,
                                 **(quantization or {}))
        # Quantized weights or KV cache change the bytes the closed-form sums do not model.
        self.quantized = any(v is not None for v in (quantization or {}).values())
        # HF generate: its prefill (and an uncached rerun) computes the last position's logits only.
        profile = profile_for(cfg, self.workload, dropout=False, kv_cache=kv_cache,
                              logits_to_keep=generate_logits_to_keep(cfg, self.workload.impl))
        # FP8 weights on FP8 tensor cores (quantized_matmul.runs_w8a8): the quantized projections at
        # the FP8 peak, their inputs read in one byte after a quantization pass (w8a8_leaf_bytes).
        self.w8a8 = runs_w8a8(profile.weight_format, hardware)
        self.fp8_flops_per_s = w8a8_peak(hardware, eff) if self.w8a8 else None
        self.prefill_model = shared_model(cfg, profile, phase="prefill")
        # A class without a KV cache (OpenAI GPT's) reruns the decoder over the prefix at every step.
        self.cacheless = bool(cfg.n_decoder_layers) and not profile.facts.kv_cache_held
        self.decode_model = (shared_model(cfg, profile, phase="decode")
                             if cfg.n_decoder_layers and not self.cacheless else None)
        self.encoder_decoder = cfg.architecture == "encoder-decoder"

    def _values(self, batch: int, seq_len: int, source_len: int | None = None,
                context: int | None = None) -> dict:
        subs = {**model_values(self.cfg), S.b: batch, S.n: seq_len, S.T: 0,
                S.s: seq_len if source_len is None else source_len,
                S.c: seq_len if context is None else context, S.e: DTYPE_BYTES[self.dtype]}
        return {k: sp.Integer(v) for k, v in subs.items()}

    def _sweep(self, model: CostModel, decoder_only: bool = False) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        """One lambdified function for every leaf's FLOPs and bytes moved, matmul and other, and
        how many times each leaf runs (its layers) and whether it runs any op (shared_sweep's)."""
        return shared_sweep(model, decoder_only, self.w8a8, self.flops_per_s, self.fp8_flops_per_s)

    @cached_property
    def _prefill_sweep(self) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        return self._sweep(self.prefill_model)

    @cached_property
    def _rerun_sweep(self) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        """A generation step without a KV cache reruns the decoder side over every token so far;
        an encoder-decoder keeps its encoder's output."""
        return self._sweep(self.prefill_model, decoder_only=True)

    @cached_property
    def _decode_sweep(self) -> tuple[dict[str, tuple[int, bool]], Sweep]:
        return self._sweep(self.decoder_tree())

    def decoder_tree(self) -> CostModel:
        require_decoder(self.cfg)
        return self.decode_model

    def step_leaves(self) -> tuple[tuple[Leaf, ...], bool]:
        """The leaves of one generation step and whether they run over the whole prefix: the cached
        decode tree's (one new token, n = 1), or for a class without a cache the decoder side of the
        prefill tree (the rerun's: n is the context)."""
        if self.cacheless:
            return tuple(self.prefill_model.select(stack="decoder")), True
        return self.decoder_tree().leaves, False

    def _times(self, sweep: tuple[dict[str, tuple[int, bool]], Sweep], decode: bool = False,
               **workload) -> tuple[list[BlockTiming], Any]:
        """Per-block timings at the first point and the roofline seconds at every point."""
        import numpy as np

        runs, function = sweep
        out = function(e=DTYPE_BYTES[self.dtype], **workload)
        seconds = 0.0
        blocks = []
        for path, (count, active, peak) in runs.items():
            f_mm, b_mm, f_o, b_o = (np.asarray(out[f"{path}|{q}"]) for q in KERNEL_QUANTITIES)
            overhead = (self.decode_overhead_s if decode else self.overhead_s) * count if active else 0.0
            _, _, busy = kernel_times(f_mm, b_mm, f_o, b_o, peak, self.vector_flops_per_s, self.bytes_per_s)
            seconds = seconds + busy + overhead
            first = Timing.of((float(f_mm.flat[0]), float(b_mm.flat[0])),
                              (float(f_o.flat[0]), float(b_o.flat[0])), peak,
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
        """Cached decode steps of `batch` sequences attending to `context` keys (int or array); a
        class without a cache reruns its decoder over the `context` tokens (rerun)."""
        if self.cacheless:
            return self.rerun(batch, context, source_len)
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

        Their FLOPs are linear in b, F = f*b; their bytes B = W(b) + B1*b (B1: each sequence's
        activations and KV cache at `context`; W: the weights read). A dense model reads all its
        weights whatever b; a mixture of experts reads an expert's weights once per step if any
        token routes to it, blocks/experts.py experts_touched: k experts at b = 1, towards all E as b k
        grows, so W is nondecreasing and concave in b. Compute time equals memory time where
        g(b) = f*b/P - B(b)/W_bw = 0 (P peak FLOP/s, W_bw bandwidth; both with efficiencies): g is
        convex and negative at b = 0 (the weights), so it crosses zero once, found by bisection to
        double precision; math.inf where it never does. context=None drops the per-sequence
        traffic (B1 = 0): the classic weights-only figure, peak/bandwidth x (bytes per parameter) /
        (2 FLOPs per parameter).
        """
        _, rerun = self.step_leaves()
        at = context if context is not None else 1
        subs = self._values(1, at if rerun else 1, source_len, at)
        subs.pop(S.b)
        f, per_sequence, moved_at = crossover_terms(self.prefill_model if rerun else self.decode_model, rerun,
                                                    frozenset(subs.items()))
        drop = per_sequence if context is None else 0.0

        def excess(b: float) -> float:  # compute time minus memory time
            return f * b / self.flops_per_s - (moved_at(b) - drop * b) / self.bytes_per_s

        return first_crossing(excess)

    def fits(self, batch: int, context: int, source_len: int = 1,
             prompt: int | None = None) -> dict[str, Any]:
        """Inference memory (costmodel.memory: each phase's weights, buffers, ids, logits and KV
        cache) at this batch: a decode step at `context` keys and, if a prompt is given, its
        prefill; whether it fits; the largest batch at this context and the longest context at
        this batch (both phases fitting)."""
        self.decoder_tree()
        phases = inference_phases(self.cfg, self.prefill_model.profile)
        subs = self._values(batch, prompt or 1, source_len)
        decode = decode_phase_bytes(self.cfg, self.prefill_model.profile)
        capacity = self.hardware.serving_memory_bytes

        def linear(expr: sp.Expr, variable: sp.Symbol, at: dict) -> tuple[int, int]:
            line = sp.expand(expr.xreplace({k: v for k, v in at.items() if k != variable}))
            return int(line.coeff(variable, 0)), int(line.coeff(variable, 1))

        at_context = {**subs, S.c: sp.Integer(context)}
        needed = {"decode": int(decode.xreplace(at_context))}
        fixed, per_sequence = linear(decode, S.b, at_context)
        max_batch = (capacity - fixed) // per_sequence
        one_sequence = fixed + per_sequence  # batch 1's bytes, the larger phase's (max_batch 0: over capacity)
        max_context = longest_context(decode.xreplace({k: v for k, v in subs.items() if k != S.c}),
                                      capacity)
        if prompt is not None:
            needed["prefill"] = int(phases["prefill"].xreplace(subs))
            fixed_p, per_prompt = linear(phases["prefill"], S.b, subs)
            max_batch = min(max_batch, (capacity - fixed_p) // per_prompt)
            one_sequence = max(one_sequence, fixed_p + per_prompt)
            if needed["prefill"] > capacity:
                max_context = 0
        total = max(needed.values())
        kv = sp.expand((self.decode_model or self.prefill_model).total("kv_cache_bytes").xreplace(
            {k: v for k, v in at_context.items() if k not in (S.b, S.c)}))
        below_windows = kv.replace(sp.Min, lambda *args: S.c if S.c in args else sp.Min(*args))
        # past every window (min(c, w) = w): what each further token adds, the unwindowed layers' cache
        past = kv.replace(sp.Min, lambda *args: sp.Min(*(a for a in args if a != S.c)) if S.c in args else sp.Min(*args))
        per_token = int(sp.expand(below_windows).coeff(S.b, 1).coeff(S.c, 1))
        past_windows = int(sp.expand(past).coeff(S.b, 1).coeff(S.c, 1))
        return {
            "weights": int(self.prefill_model.total("weight_bytes").xreplace(subs)),
            "kv_bytes_per_token": per_token,
            "kv_bytes_per_token_past_windows": past_windows,  # every model (a stable key): = per token without windows
            "bytes": total,
            "bytes_by_phase": needed,
            "fits": total <= capacity,
            "prefill_fits": needed.get("prefill", 0) <= capacity,
            "max_batch": max(max_batch, 0),
            # what one sequence needs beyond the capacity (0 where one fits): "fits batch <= 0" said nothing of it
            "one_sequence_over_bytes": max(one_sequence - capacity, 0),
            "max_context": max(max_context, 0),
            # max_context is memory's; the model stops here (none stated by a model without attention:
            # Mamba's configs give no context length, each sequence's cache a fixed recurrent state)
            "model_context": self.cfg.max_positions if states_context(self.cfg) else None,
            "fixed_state": not has_attention(self.cfg),
            "logits": logits_kept(self.prefill_model.profile.logits_to_keep),  # the prefill's, in "bytes"
        }


@lru_cache(maxsize=64)
def shared_sweep(model: CostModel, decoder_only: bool, w8a8: bool, peak: float, fp8_peak: float | None
                 ) -> tuple[dict[str, tuple[int, bool, float]], Sweep]:
    """Per leaf of the model (of its decoder side where decoder_only: a rerun's), its runs, whether
    it runs an op and its matmul rate (blended_peak: `peak`, and `fp8_peak` for its W8A8 share),
    and one Sweep of its four kernel quantities. Built once per model (tree.shared_model's, one a
    frozen config, profile and phase) and rates, for the Rooflines that only read them: a warm
    `simulate` rebuilt the sympy sums and their substitution on every call (a third of a second
    for DeepSeek-V3). Callers must not change the dict."""
    runs, expressions = {}, {}
    fixed = {k: sp.Integer(v) for k, v in model_values(model.cfg).items()}
    for leaf in model.select(stack="decoder") if decoder_only else model.leaves:
        fp8_flops, read, quantize = w8a8_leaf_adjustment(leaf, w8a8, S.e)
        rate = blended_peak(leaf.total("flops_matmul"), fp8_flops, peak, fp8_peak, fixed, leaf.path)
        runs[leaf.path] = (int(leaf.count.xreplace(fixed)), leaf.cost.is_active(), rate)
        for quantity in KERNEL_QUANTITIES:
            expressions[f"{leaf.path}|{quantity}"] = (matmul_traffic(leaf) + read if quantity == "bytes_matmul"
                                                      else leaf.total(quantity) + quantize
                                                      if quantity == "bytes_other" else leaf.total(quantity))
    return runs, Sweep(model, expressions)


@lru_cache(maxsize=512)
def crossover_terms(model: CostModel, rerun: bool, subs: frozenset) -> tuple[float, float, Any]:
    """Roofline.decode_crossover_batch's terms of one step's matrix products, every symbol but b
    substituted (subs: the (symbol, value) pairs): the FLOPs per sequence f, the bytes per sequence B1
    and the bytes moved as a function of b (B(b), a "math" lambdify). The step's leaves are the model's
    (a cached decode tree) or, where `rerun`, its decoder side (a class without a cache reruns the prefix).
    Built once per model (tree.shared_model's: a frozen config, profile and phase) and substitution: a
    table of decode rows asks for the same model's weights-only crossover on every row, and the sympy
    expansion and lambdify were a tenth of `published`'s decoding time. Callers must not call moved_at's
    function with anything but a float b."""
    leaves = tuple(model.select(stack="decoder")) if rerun else model.leaves
    values = dict(subs)
    flops = sp.Add(*(leaf.total("flops_matmul") for leaf in leaves))
    moved = sp.Add(*(matmul_traffic(leaf) for leaf in leaves))  # quantized weights as stored
    f = float(sp.expand(flops.xreplace(values)).coeff(S.b, 1))
    moved_b = moved.xreplace(values)
    # B1: the part linear in b, the experts' (1 - k/E)^b held aside (never expanded: a float
    # 31.0**b overflows where (31/32)**b does not)
    powers = {power: sp.Dummy() for power in moved_b.atoms(sp.Pow) if S.b in power.exp.free_symbols}
    per_sequence = float(sp.expand(moved_b.xreplace(powers)).coeff(S.b, 1))
    return f, per_sequence, sp.lambdify(S.b, moved_b, "math")


def matmul_traffic(leaf: Leaf) -> sp.Expr:
    """A leaf's matrix-product traffic over all its runs, its weights as stored
    (Leaf.matmul_bytes_as_stored)."""
    return leaf.count * leaf.matmul_bytes_as_stored()


def first_crossing(excess: Any, beyond: float = 2.0**64) -> float:
    """The b > 0 where a convex function of b, negative at 0, turns nonnegative (bisection to
    double precision); math.inf where it stays negative up to `beyond`."""
    low, high = 0.0, 1.0
    while excess(high) < 0:
        low, high = high, 2 * high
        if high > beyond:
            return math.inf
    while True:
        middle = (low + high) / 2
        if not low < middle < high:
            return high
        low, high = (middle, high) if excess(middle) < 0 else (low, middle)


def longest_context(needed: sp.Expr, capacity: int) -> int | float:
    """The most keys c at which `needed` (bytes, nondecreasing in c: a cache that grows by a key
    each step, or stops at a sliding window) stays within capacity; math.inf where it never
    passes it (every layer windowed), 0 where one key does not fit. Exact: the integer search
    evaluates the expression itself (as exact Python closures, built once: exact_eval.exact_value), so
    the windows' Min(c, w) need no special case."""
    from .exact_eval import exact_value

    def at(keys: int) -> int:
        subs = {S.c: sp.Integer(keys)}
        value = exact_value(needed, subs)
        return int(needed.xreplace(subs) if value is None else value)

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
