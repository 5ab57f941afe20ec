"""Time from kernel shapes: the cost tree's leaves as the kernels that run them, each timed on a
hardware file (docs/time.md, "The kernel-level model").

A leaf already knows its work; costmodel/tree_kernels.py reads it as kernels with shapes (GEMMs,
fused attention calls, one-pass kernels, memory-bound kernels). A kernel's time:
  - GEMM: tile and wave quantization over the SMs (NVIDIA's matrix-multiplication guide): the output
    is cut into tiles, each SM computes one tile per wave, and a wave takes a whole tile's FLOPs at
    the SM's share of the large-GEMM rate (the hardware's matmul_efficiency, a microbenchmark; in a
    training step its sustained rate (kernel_rates.sustained_efficiency): the GPU runs saturated at
    the clock its power limit allows) x its share at its inner width K (kernel_facts.json
    "gemm_efficiency_by_k": each tile's fixed start and store against a main loop of K); routed experts'
    grouped GEMMs x their kernel's measured share at its rows an expert ("grouped_gemm_efficiency"); no GEMM runs
    faster than its bytes at the bandwidth a read-and-reduce stream reaches (the hardware's gemv_bandwidth, a
    microbenchmark; else the achievable bandwidth), one that writes more than it reads at a copy stream's
    (copy_stream_bandwidth, where measured; KernelTimer.stream_rate); a weight-only quantized GEMM moves its stored bytes at its kernel's
    one-row rate ("weight_only_gemv": a fraction of the GEMV rate, or per SM and clock where the SMs bind, by blocks
    an SM) x its time at M rows over one row's ("weight_only_by_rows", the layout's kernel's: measured, or passes
    from code), at least its FLOPs at the large-GEMM rate; one row with unquantized weights is a GEMV (cuBLAS's
    gemv2T eager, Inductor's reduction compiled): its bytes at the GEMV rate or FLOPs at the vector peak, no tiles; where the hardware file measures a GEMM's efficiency by
    its rows (gemm_efficiency_by_rows, a CPU's), its FLOPs at that fraction of the peak instead of the tiles
    (log-linear between the measured row counts, the end values beyond them); a layout that dequantizes into memory
    (DeepSpeed's int8, quantized_matmul.in_memory_dequant): a memory-bound pass, then the unquantized GEMM;
  - fused attention: the FLOPs the kernel executes (blocks of 128 x 128; a causal mask skips the
    blocks above the diagonal, a window those before it; a head width the kernel is not compiled for
    padded to the next one) at the kernel's published efficiency for the GPU's architecture and the
    sequence length (costmodel/kernel_facts.json); a call of a head width and window the kernel is
    measured at (attention_shape_efficiency: cuDNN at GPT-OSS's window of 128, head width 64), its
    unmasked pairs' FLOPs at those rates; where the hardware file measures the call's efficiency by
    its query rows (attention_efficiency_by_queries, a CPU's torch sdpa), at that fraction of the
    peak instead (log-linear between the measured query counts, the end values beyond them);
    a decode step's single-query call under a decode kernel stated from its code (kernel_facts.json
    "decode_attention_kernels": TensorRT-LLM v0.6.1's masked MHA), its products at the vector peak and
    each KV head's cache loaded once per query head (attention_kernels.decode_terms);
  - memory-bound kernels: the larger of bytes / achievable bandwidth and FLOPs / vector peak; their
    bytes the tree's bytes_other (less torch.compile's fusions), or in an eager training step of a
    measured implementation what its aten ops move (costmodel/eager_ops.py);
  - each GEMM and attention call also pays the hardware's dram_kernel_startup_s (a streaming
    kernel's fixed time beyond its bytes at the bandwidth, measured at DRAM-resident sizes: the
    first bytes' latency and the last wave's drain; 0 where none is published); pointwise kernels do
    not (their operands are the previous kernel's output, in L2 at decode's sizes);
  - each active leaf pays the hardware's launch overhead per block (the CPU's launches); under CUDA
    graphs none, but each kernel the leaf launches pays the GPU-side gap a graph's replay keeps (the
    hardware's graph_kernel_s, a measured empty kernel; 0 where none is published); in eager mode on
    a CPU where the hardware measures an op's time and the leaf's ops are stated
    (KernelTimer.eager_ops, costmodel/eager_ops.py), each of its ops that time instead; an eager
    decoding step on a GPU whose hardware states an op's time, of an implementation whose step's ops
    are counted, takes the longer of its kernels and its ops' host time (host_bound_seconds: the
    host issues ahead). The op's time is Hardware.eager_op_s: the module code's time per op
    (module_s_per_op) where the file measures it, else a bare op's dispatch (dispatch_s_per_op).
`leaves_time` is the one function that gives the time of a set of leaves (a step, a stage). No
torch here, and no sympy until a leaf's shapes are read from the tree (plan's cached kernels need neither).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .attention_kernels import (DEFAULT_KERNEL, attention_points, decode_kernel_entry, decode_terms, kernel_entry,
                                shape_points, shape_rate)
from .exact_eval import float_value
from .config import DTYPE_BYTES, ConfigError, Workload
from .hardware import Efficiency, Hardware
from .kernel_rates import (check_kernel_model, gemm_k_points, k_efficiency, kernel_facts, log_linear,  # noqa: F401
                           sustained_efficiency, unquantized_gemv, w8a8_small_rows_rate, weight_only_rates)
from .kernel_shapes import AttentionCall, Gemm, Kernel, MatmulCompute, PassKernel, Pointwise  # noqa: F401 (re-exported)
from .kernel_subs import inference_subs  # noqa: F401 (re-exported: its readers import it here)
from .tree_kernels import launches_of, leaf_kernels, rerun_kernels

class KernelTimer:
    """Seconds of one kernel on one hardware in one dtype."""

    def __init__(self, hardware: Hardware, dtype: str = "bf16", attention: str = "sdpa",
                 cuda_graphs: bool = False, efficiency: Efficiency | None = None, compiled: bool = False,
                 matmul_dtype: str | None = None, sustained: bool = False,
                 eager_ops: dict[str, int] | None = None, w8a8: bool = False,
                 attention_kernel: str = DEFAULT_KERNEL, fused_qkv: bool = False, decode_kernel: str | None = None,
                 operand_bytes: float | None = None):
        """matmul_dtype: the tensor cores' dtype where it is not the data's (FP8 training: bf16 tensors,
        products at the FP8 peak and its large-GEMM efficiency); None: the data's. w8a8: GEMMs on fp8-stored
        weights (Gemm.weight_dtype "fp8") run W8A8 (inference, quantized_matmul.runs_w8a8 decides): at the FP8 peak
        and its large-GEMM efficiency, their input read in one byte after its per-tensor quantization
        (quantized_matmul.activation_quant_bytes). sustained: the GPU runs saturated for a long time (a training
        step), so its GEMMs run at the hardware's sustained matmul efficiency (MSMF: the clock its power limit
        allows under full load) where one is measured, else at the large-GEMM (burst, MAMF) efficiency.
        eager_ops: ops per run of each block kind (costmodel/eager_ops.py), charged at the hardware's eager_op_s
        (module_s_per_op, else dispatch_s_per_op) in eager mode (not compiled, no CUDA graphs).
        attention_kernel: the fused attention kernel whose published figures time attention calls
        (kernel_facts.json attention_efficiency: "flash2", the default, "flash1", "flash3" or "cudnn"); one
        without figures on this hardware's architecture is refused (attention_kernels.kernel_entry). fused_qkv:
        the code runs Q, K and V as one GEMM (leaf_kernels; kernel_facts_file.fuses_qkv). decode_kernel: the kernel
        that runs a decode step's single-query calls (kernel_facts.json decode_attention_kernels: "trtllm-mmha";
        attention_kernels.decode_terms); None: the fused kernel's figures time them too. operand_bytes: bytes an
        element of a GEMM's inputs and weights where a recipe casts them before the product (FP8 training:
        layout/fp8.py Recipe.gemm_operand_bytes), its output in the data dtype; None: the data's element."""
        self.hardware = hardware
        self.dtype = Workload(dtype=dtype).dtype
        self.element_bytes = DTYPE_BYTES[self.dtype]
        self.operand_bytes = self.element_bytes if operand_bytes is None else operand_bytes
        eff = efficiency or Efficiency(**hardware.efficiency)
        # Each fraction a user gives (Efficiency.given) replaces the file's measured rate for it alone:
        # --compute-efficiency the GEMMs' (MAMF, MSMF, rows table), --memory-efficiency a GEMM's bytes'.
        compute_given = efficiency is not None and "compute" in efficiency.given
        memory_given = efficiency is not None and "memory" in efficiency.given
        matmul = matmul_dtype or self.dtype
        self.peak = hardware.peak(matmul)
        # The measured large-GEMM efficiency, unless an efficiency is given (--compute-efficiency);
        # sustained (training): the power-saturated one; mxfp8, fp4: fp8's unless measured (efficiency_dtype).
        measured_as = hardware.efficiency_dtype(matmul)
        burst = hardware.matmul_efficiency.get(measured_as, eff.compute)
        held_matmul = sustained_efficiency(hardware, measured_as) if sustained else None
        measured = burst if held_matmul is None else held_matmul
        self.matmul_efficiency = eff.compute if compute_given else measured
        self.matmul_rate = self.peak * self.matmul_efficiency  # the large-GEMM FLOP/s (a weight-only kernel's bound)
        self.rows_scale = eff.compute if compute_given else 1.0  # a rows table is relative to the best rate
        self.sustained = sustained
        # The fused attention kernels' published figures are short runs at the boost clock; in a
        # training step they run at the clock the power limit leaves, as the GEMMs do: their rate
        # x the dtype's sustained / burst matmul efficiency, where both are stated (docs/time.md).
        held = sustained_efficiency(hardware, self.dtype) if sustained else None
        self.attention_clock = held / hardware.matmul_efficiency[self.dtype] \
            if held and hardware.matmul_efficiency.get(self.dtype) else 1.0
        self.w8a8 = w8a8
        if w8a8:  # the FP8 tensor cores' rate: their peak and measured large-GEMM efficiency
            fp8 = eff.compute if compute_given else hardware.matmul_efficiency.get("fp8", eff.compute)
            self.fp8_rate = hardware.peak("fp8") * fp8
        self.bandwidth = hardware.bandwidth_bytes_per_s * eff.memory
        # A GEMM's bytes: the measured read-and-reduce rate, unless a memory efficiency is given.
        measured_gemv = not memory_given and hardware.gemv_bandwidth_bytes_per_s > 0
        self.gemv_bandwidth = hardware.gemv_bandwidth_bytes_per_s if measured_gemv else self.bandwidth
        # A GEMM that writes more than it reads: a copy stream's measured rate where the file states one (gemm_bytes_seconds).
        measured_copy = not memory_given and hardware.copy_stream_bandwidth_bytes_per_s > 0
        self.copy_bandwidth = hardware.copy_stream_bandwidth_bytes_per_s if measured_copy else self.gemv_bandwidth
        # A W8A8 GEMM of few rows: its kernel's measured rate (kernel_facts.json "w8a8_small_rows"), (rows, bytes/s).
        self.w8a8_small_rows = w8a8_small_rows_rate(hardware, "fp8", self.gemv_bandwidth) if w8a8 else None
        self.vector = hardware.vector_flops_per_s * eff.compute
        self.sms = hardware.sm_count or 1
        self.fused_attention = attention in ("sdpa", "flash")
        self.fused_qkv = fused_qkv
        self.launch_s = 0.0 if cuda_graphs else hardware.overhead_s_per_block  # per active leaf (eager; graphs: per kernel)
        # A CPU's measured GEMM efficiency by rows (no tiles), and its GEMVs' by their inner width K.
        self.gemm_rows = hardware.gemm_efficiency_by_rows.get(matmul, ())
        self.gemv_inner = hardware.gemv_efficiency_by_inner.get(matmul, ()) if self.gemm_rows else ()
        self.gemm_by_k = gemm_k_points(hardware, matmul)  # a GPU's published share by a GEMM's K; experts' by rows:
        self.grouped_by_rows = gemm_k_points(hardware, matmul, "grouped_gemm_efficiency")
        self.attention_queries = hardware.attention_efficiency_by_queries.get(self.dtype, ())  # a CPU's, by query rows
        op_s = hardware.engine_op_s if eager_ops is not None else hardware.eager_op_s  # the engine's ops: its own
        eager = not (cuda_graphs or compiled) and op_s is not None
        # A CPU runs each op in the thread that dispatches it: a leaf pays its ops' dispatch on
        # top of its kernels (leaf_launch_seconds). A GPU's host issues them ahead of the GPU: a
        # step takes the longer of the two (host_bound_seconds), so no leaf adds them.
        self.eager_ops = eager_ops if eager and not hardware.issues_ahead else None
        self.host_s_per_op = hardware.eager_op_s if eager and hardware.issues_ahead else None
        self.dispatch_s = op_s or 0.0
        self.graph_kernel_s = hardware.graph_kernel_s if cuda_graphs else 0.0
        # What each kernel of an eager GPU step keeps of it: a stream's launch is no cheaper on the GPU's
        # side than a graph's replay (2.1 us against 1.3 us on an H100, graph_kernel_s's source), and the
        # host term stands for the CPU's launches only (host_bound_seconds).
        self.stream_kernel_s = hardware.graph_kernel_s if self.host_s_per_op is not None else 0.0
        # What a kernel reading DRAM (GEMM, attention) takes beyond its bytes, in any launch mode.
        self.dram_startup_s = hardware.dram_kernel_startup_s
        # A copy op's measured cold time by op, (seconds a call, bytes/s): serving/eager_step.py's paged copies.
        self.cold_copies = hardware.cold_copies
        self.compiled = compiled  # torch.compile's fusions (kernel_facts.json "compile")
        facts = kernel_facts()
        self.tiles = [tuple(t) for t in facts["gemm_tiles"]["values"]]
        self.split_k_min_k = int(facts["split_k"]["min_k_per_split"])
        self.block = int(facts["attention_block"]["value"])
        entry = kernel_entry(facts["attention_efficiency"], attention_kernel, hardware.architecture)
        self.backward_factor = float(facts["attention_backward_factor"]["value"])
        self.attention_points, self.attention_backward_points = attention_points(entry, self.backward_factor)
        self.shape_points = shape_points(facts["attention_shape_efficiency"], attention_kernel, hardware.architecture)
        # The head widths the kernel is compiled for, where its figures apply (another width runs the
        # next one up, padded): the entry's own, else FlashAttention-2's; elsewhere the head's own.
        self.attention_head_dims = tuple(entry.get("head_dims", facts["attention_head_dims"]["values"])) \
            if entry else ()
        # Weight-only GEMV kernels' published speed on this architecture, by weight dtype.
        self.weight_only_gemv = weight_only_rates(facts["weight_only_gemv"], hardware, self.gemv_bandwidth)
        # The backward's efficiency over the forward's, where a paper gives both maxima only.
        self.attention_backward_ratio = float(entry.get("backward_ratio", 1.0))
        self.decode_entry = decode_kernel_entry(decode_kernel)  # a decode step's kernel stated from its code, or None
        self.memo: dict[tuple[Any, bool], float] = {}  # (kernel, backward) -> seconds

    def host_seconds(self, ops: int | None) -> float | None:
        """The host's time to issue an eager step's `ops` ops on a GPU (Hardware.eager_op_s each);
        None where the timer has no host term (compiled, CUDA graphs, a CPU, no dispatch time)
        or the ops are not counted."""
        return None if self.host_s_per_op is None or ops is None else ops * self.host_s_per_op

    def stream_seconds(self, kernels: int) -> float:
        """What `kernels` kernels of an eager step whose host term stands for their launches keep on the GPU's
        side (stream_kernel_s each): the one rule, for simulate's steps (leaves_time, host_bound_seconds),
        a layout's (layout/step_parts.py stream_seconds) and serve's eager steps (serving/host_step.py)."""
        return self.stream_kernel_s * kernels

    def launch_seconds(self, launches: int) -> float:
        """The launch term of one pass of a leaf that launches `launches` kernels (launches_of):
        the per-block overhead if it launches any (eager), plus graph_kernel_s for each kernel
        (under CUDA graphs; 0 otherwise)."""
        return self.launch_s * bool(launches) + self.graph_kernel_s * launches

    def waves(self, gemm: Gemm, tile: tuple[int, int]) -> int:
        tiles = math.ceil(gemm.m / tile[0]) * math.ceil(gemm.n / tile[1]) * gemm.count
        return math.ceil(tiles / self.sms)

    def split_k(self, gemm: Gemm, tile: tuple[int, int]) -> int:
        """How many ways a GEMM of less than one wave splits its K dimension over the idle SMs
        (split-K, as cuBLAS does for such shapes; each split at least split_k_min_k deep)."""
        tiles = math.ceil(gemm.m / tile[0]) * math.ceil(gemm.n / tile[1]) * gemm.count
        if tiles >= self.sms:
            return 1
        return max(1, min(self.sms // tiles, gemm.k // self.split_k_min_k))

    def gemm_compute_seconds(self, gemm: Gemm, tile: tuple[int, int] | None = None,
                             rate: float | None = None) -> float:
        """Tile and wave quantization: each wave computes one whole tile per SM at the SM's share
        of the large-GEMM rate; a GEMM of less than a wave splits K over the idle SMs and adds the
        partial sums' fp32 traffic. `tile`: a fixed tile; None: the tile that finishes first.
        rate: the large-GEMM FLOP/s (None: the timer's matmul dtype's). A hardware that measures
        its GEMM efficiency by rows: the FLOPs at that efficiency of its own peak."""
        if self.gemm_rows:  # more rows never take less time than one row of the same weights (a GEMV)
            rows = gemm.flops / (self.peak * self.rows_scale * self.rows_efficiency(gemm.m, gemm.k))
            return rows if gemm.m == 1 or not self.gemv_inner else max(rows, self.gemm_compute_seconds(replace(gemm, m=1)))
        per_sm = (self.peak * self.matmul_efficiency if rate is None else rate) / self.sms
        def seconds(t: tuple[int, int]) -> float:
            split = self.split_k(gemm, t)
            if split == 1:
                return self.waves(gemm, t) * 2 * t[0] * t[1] * gemm.k / per_sm
            partials = 4 * split * gemm.m * gemm.n * gemm.count * 2  # fp32 written, then read to reduce
            return 2 * t[0] * t[1] * math.ceil(gemm.k / split) / per_sm + partials / self.bandwidth
        return seconds(tile) if tile else min(seconds(t) for t in self.tiles)

    def rows_efficiency(self, m: int, k: int | None = None) -> float:
        """A GEMM of m rows' measured efficiency (log-linear in m); one row of width k: the GEMV table's."""
        if m == 1 and k and self.gemv_inner:
            return log_linear(self.gemv_inner, k)
        return log_linear(self.gemm_rows, m)

    def leaf_launch_seconds(self, leaf: Any, kernels: int) -> float:
        """What one run of a leaf of `kernels` kernels pays besides them: in eager mode where its
        ops are stated, those ops at the hardware's dispatch time each; else launch_seconds."""
        ops = None if self.eager_ops is None else self.eager_ops.get(type(leaf.block).__name__)
        if ops is not None:
            return ops * self.dispatch_s
        return self.launch_seconds(launches_of(leaf, kernels, self.compiled))

    def stream_rate(self, read: float, written: float) -> float:
        """The bytes/s a GEMM of `read` bytes read and `written` written streams at: a read-dominated one (a
        GEMV's weights, a training GEMM's operands) at the read-and-reduce rate (gemv_bandwidth: BabelStream's
        Dot, each array read once, nothing written), a write-dominated one (the eager attention's score GEMM,
        its s x s scores written from s x head-width operands) at a copy stream's (copy_bandwidth: the Copy
        measured beside that Dot, one array read and one written), where the file measures one."""
        return self.copy_bandwidth if written > read else self.gemv_bandwidth

    def gemm_seconds(self, gemm: Gemm, tile: tuple[int, int] | None = None) -> float:
        weights = self.operand_bytes * gemm.k * gemm.n if gemm.weight_bytes is None else gemm.weight_bytes
        if self.w8a8 and gemm.weight_dtype == "fp8":
            return self.w8a8_gemm_seconds(gemm, weights, tile)
        read = gemm.count * (self.operand_bytes * gemm.m * gemm.k + weights)
        written = gemm.count * self.element_bytes * gemm.m * gemm.n
        moved, rate = read + written, self.stream_rate(read, written)
        kernel = self.weight_only_gemv.get(gemm.weight_dtype)
        factor = kernel.rows_factor(gemm.weight_kernel, gemm.m) if kernel else None  # its time at m rows over one's
        if factor:  # a published weight-only kernel: its bytes at its one-row rate x that factor, its FLOPs at the least
            return self.dram_startup_s + max(factor * moved / kernel.rate_at(gemm.n, self.sms), gemm.flops / self.matmul_rate)
        if gemm.m == 1 and gemm.weight_dtype is None and not self.gemm_rows:  # a GEMV (gemv2T; compiled: a reduction)
            return self.dram_startup_s + max(moved / rate, gemm.flops / self.vector)
        compute = self.gemm_compute_seconds(gemm, tile) / k_efficiency(self.gemm_by_k, gemm.k) \
            / (k_efficiency(self.grouped_by_rows, gemm.grouped_rows) if gemm.grouped_rows else 1.0)  # experts'
        bound = unquantized_gemv(gemm, bool(self.gemm_rows))  # no published kernel: at most the unquantized GEMV
        return min(self.dram_startup_s + max(compute, moved / rate), self.gemm_seconds(bound) if bound else math.inf)

    def w8a8_gemm_seconds(self, gemm: Gemm, weights: float, tile: tuple[int, int] | None = None) -> float:
        """A W8A8 GEMM: the tile model at the FP8 rate against its bytes (input in one byte, output
        in the data dtype) at the GEMV rate, or at its kernel's measured rate where it has no more rows
        than that measurement (w8a8_small_rows), after its input's quantization pass if it is the first to read it."""
        from .quantized_matmul import activation_quant_bytes

        read, written = gemm.count * (gemm.m * gemm.k + weights), gemm.count * self.element_bytes * gemm.m * gemm.n
        moved = read + written
        quantize = activation_quant_bytes(gemm.count * gemm.m * gemm.k, self.element_bytes) \
            if gemm.quantizes_input else 0
        small = self.w8a8_small_rows
        rate = small[1] if small and gemm.m <= small[0] else self.stream_rate(read, written)
        return self.dram_startup_s + max(self.gemm_compute_seconds(gemm, tile, self.fp8_rate),
                                         moved / rate) + quantize / self.bandwidth

    def attention_efficiency(self, n_kv: int, n_q: int | None = None, backward: bool = False) -> float:
        """A fused attention call's efficiency: where the hardware measures it by query rows, at n_q (log-linear
        between the measured query counts); else the kernel's published efficiency at this length (log-linear
        between the published points; the backward's: its own points where published, else the forward's times
        backward_ratio); the large-GEMM efficiency where none is published."""
        if self.attention_queries and n_q is not None:  # relative to the large-GEMM rate, as the rows table
            return self.rows_scale * log_linear(self.attention_queries, n_q)
        if not self.attention_points:
            return self.matmul_efficiency
        if backward and self.attention_backward_points:
            return log_linear(self.attention_backward_points, n_kv) * self.attention_clock
        return log_linear(self.attention_points, n_kv) * (self.attention_backward_ratio if backward else 1.0) \
            * self.attention_clock

    def padded_head_dim(self, width: int) -> int:
        """The head width the fused kernel computes for a head of `width`: the smallest compiled
        one at least as wide (kernel_facts.json "attention_head_dims"); wider ones as they are."""
        return next((d for d in self.attention_head_dims if d >= width), width)

    def attention_terms(self, call: AttentionCall, backward: bool = False) -> tuple[float, float]:
        """A fused attention call's two terms, in seconds: the FLOPs it executes (its blocks, its head
        widths padded to the compiled ones; at a shape the kernel is measured at, its unmasked pairs',
        shape_rate) at its efficiency, and the bytes it moves (the head's own widths) at the bandwidth.
        The one formula of simulate's kernel model (attention_seconds) and serving/steptime.py's call; a
        single-query call under a decode kernel its own terms (decode_terms)."""
        if self.decode_entry is not None and call.n_q == 1 and not backward:
            return decode_terms(self.decode_entry, call, self.element_bytes, self.vector, self.bandwidth)
        measured = shape_rate(self.shape_points, call, backward, self.backward_factor)  # its own width and window
        if measured is not None:
            flops, efficiency = measured[0], measured[1] * self.attention_clock
        else:
            value_dim = call.value_dim or call.head_dim
            padding = (self.padded_head_dim(call.head_dim) + self.padded_head_dim(value_dim)) / (call.head_dim + value_dim)
            flops = call.executed_flops(self.block) * padding * (self.backward_factor if backward else 1.0)
            efficiency = self.attention_efficiency(call.n_kv, call.n_q, backward)
        return flops / (self.peak * efficiency), call.moved_bytes(self.element_bytes) / self.bandwidth

    def attention_seconds(self, call: AttentionCall, backward: bool = False) -> float:
        """The call's compute or bytes, whichever is longer, after its start from DRAM."""
        return self.dram_startup_s + max(self.attention_terms(call, backward))

    def pointwise_seconds(self, kernel: Pointwise) -> float:
        return max(kernel.bytes / self.bandwidth, kernel.flops / self.vector)

    def pass_seconds(self, kernel: PassKernel) -> float:
        """A one-pass kernel (mamba_ssm's SSD kernels): its products' tiles at the large-GEMM rate
        or its bytes at the bandwidth, whichever is longer (no DRAM start: as a pointwise kernel's)."""
        return max(sum(self.gemm_compute_seconds(g) for g in kernel.products), kernel.bytes / self.bandwidth)

    def seconds(self, kernel: Kernel, backward: bool = False) -> float:
        if isinstance(kernel, PassKernel):  # runs in its own pass only
            return self.pass_seconds(kernel) if kernel.backward == backward else 0.0
        if isinstance(kernel, Gemm):
            return self.gemm_seconds(kernel)
        if isinstance(kernel, AttentionCall):
            return self.attention_seconds(kernel, backward)
        return self.pointwise_seconds(kernel)


@dataclass(frozen=True)
class LeafTime:
    path: str
    count: int
    kernels: int  # kernels per run
    seconds: float  # all runs (count x one run), launches included
    launch_seconds: float = 0.0  # the launches among them


@dataclass(frozen=True)
class LeavesTime:
    seconds: float
    launch_seconds: float
    leaves: list[LeafTime] = field(default_factory=list)
    stream_seconds: float = 0.0  # the kernels' GPU-side launch cost in an eager step (KernelTimer.stream_kernel_s)


def leaf_seconds(leaf: Any, subs: dict, timer: KernelTimer, training: bool = False,
                 local: dict | None = None) -> tuple[float, int]:
    """One run of a leaf: its kernels' seconds (launches aside) and how many kernels. Training adds the
    backward: a GEMM's two products of the same size (input and weight gradients), the fused attention's
    backward (kernel_facts: 5/2 of its forward), the memory-bound traffic's backward (measured where
    Pointwise.backward_bytes states it, else twice the forward's: the tree's stated convention), and what
    recomputation reruns of its forward (rerun_kernels) again."""
    kernels = leaf_kernels(leaf, subs, timer.fused_attention, local, timer.compiled, fused_qkv=timer.fused_qkv)
    seconds = kernels_seconds(kernels, timer, training)
    if training:
        seconds += kernels_seconds(rerun_kernels(leaf, kernels, subs, timer.fused_attention, local, timer.compiled),
                                   timer)
    return seconds, len(kernels)


def kernels_seconds(kernels: Iterable[Any], timer: KernelTimer, training: bool = False) -> float:
    """One run of a leaf's kernels (leaf_seconds' convention); each kernel's seconds computed once
    per timer (KernelTimer.memo: a shape on one hardware in one dtype takes one time)."""
    memo = timer.memo
    def once(kernel: Any, backward: bool) -> float:
        key = (kernel, backward)
        if key not in memo:
            memo[key] = _seconds(timer, kernel, backward)
        return memo[key]
    forward = sum(once(k, False) for k in kernels)
    if not training:
        return forward
    backward = sum(once(k, True) for k in kernels)
    return forward + backward


def leaves_time(leaves: Iterable[Any], subs: dict, timer: KernelTimer, training: bool = False) -> LeavesTime:
    """The time of a set of leaves (a pass, a stage's micro-batch) as their kernels run one
    after another (leaf_seconds), each active leaf paying its launches per pass (leaf_launch_seconds)."""
    total = launches = stream = 0.0
    rows = []
    for leaf in leaves:
        count = int(float_value(leaf.count, subs))
        one_run, kernels = leaf_seconds(leaf, subs, timer, training)
        passes = (3 if training else 1)
        launch = passes * timer.leaf_launch_seconds(leaf, kernels)
        if not (kernels or launch) or not count:
            continue
        seconds = count * (one_run + launch)
        total += seconds
        launches += count * launch
        stream += count * passes * timer.stream_seconds(launches_of(leaf, kernels, timer.compiled))
        rows.append(LeafTime(leaf.path, count, kernels, seconds, count * launch))
    return LeavesTime(total, launches, rows, stream)


def layer_windows_seconds(leaves: Any, subs: dict, timer: Any, layers: int, per_layer: int, step_ops: int,
                          serial_ops: int | None, copies_s: float) -> float:
    """A cached decoding step whose every layer reads the GPU (eager_ops.DecodeStepOps.syncs_per_layer: lit-gpt
    d16f924d's roll check), by the window rule (layout/host_syncs: each window between reads takes the longer of
    its host's ops and its GPU's kernels, the kernels less the launches the host's ops stand for,
    eager_ops.eager_step_seconds): one window a layer (its `per_layer` ops at the timer's op time against the
    layer's kernels and `copies_s` / layers, the code's copies) and one for the rest of the step (its own ops,
    step_ops less the layers', against the embedding's, final norm's and head's kernels and the serial ops'
    host time, as a step without reads takes them). The windows are whole layers: the read falls mid-layer, so
    each window holds the tail of one layer and the head of the next, the same ops and kernels while the
    layers are alike."""
    from .eager_ops import eager_step_seconds

    inside = leaves_time([leaf for leaf in leaves if leaf.path.startswith("decoder.layer")], subs, timer)
    rest = leaves_time([leaf for leaf in leaves if not leaf.path.startswith("decoder.layer")], subs, timer)
    layer_gpu = (inside.seconds + inside.stream_seconds + copies_s) / layers
    window = eager_step_seconds(layer_gpu, inside.launch_seconds / layers, timer.host_seconds(per_layer))
    rest_gpu = rest.seconds + rest.stream_seconds + (timer.host_seconds(serial_ops) or 0.0)
    return layers * window + eager_step_seconds(rest_gpu, rest.launch_seconds,
                                                timer.host_seconds(step_ops - layers * per_layer))


def host_bound_seconds(times: LeavesTime, host_ops: int | None, timer: KernelTimer) -> float:
    """An eager step's seconds on a device its host drives asynchronously (a GPU): the host issues the step's
    `host_ops` ops (eager_ops.step_ops) at the hardware's eager_op_s each while the GPU runs the kernels queued
    so far, so the step takes the longer of the two (the rule: eager_ops.eager_step_seconds, `times` less its
    per-block launches against the ops' time). No synchronisation is charged: gpt-fast's decoding loop has none
    inside a step, and generate's one wait a step (its stopping check) costs a host-bound step only the last
    kernel's tail (kernel_facts.json "eager_step_ops" "runs"). Where the timer has no host term (compiled, CUDA
    graphs, a CPU, no dispatch time) or the ops are not counted: `times` as leaves_time gives it. The kernels keep
    their GPU-side launch cost (times.stream_seconds, each kernel's graph_kernel_s): a CUDA graph removes the host's
    launches, not the GPU's, so a graphed step is never slower than this eager one (benchmarks/sweep_anomalies.py)."""
    from .eager_ops import eager_step_seconds
    host = timer.host_seconds(host_ops)
    return times.seconds if host is None else eager_step_seconds(times.seconds + times.stream_seconds,
                                                                 times.launch_seconds, host)


def _seconds(timer: KernelTimer, kernel: Any, backward: bool = False) -> float:
    if isinstance(kernel, MatmulCompute):
        return (2 if backward else 1) * kernel.flops / (timer.peak * timer.matmul_efficiency)
    if isinstance(kernel, Gemm) and backward:
        return timer.gemm_seconds(Gemm(kernel.m, kernel.k, kernel.n, kernel.count, grouped_rows=kernel.grouped_rows)) + \
            timer.gemm_seconds(Gemm(kernel.k, kernel.n, kernel.m, kernel.count, grouped_rows=kernel.grouped_rows))
    if isinstance(kernel, Pointwise) and backward:
        if kernel.backward_bytes is None:  # the convention: twice the forward's bytes and FLOPs
            return 2 * timer.pointwise_seconds(kernel)
        return timer.pointwise_seconds(Pointwise(kernel.backward_bytes, 2 * kernel.flops))
    return timer.seconds(kernel, backward)
