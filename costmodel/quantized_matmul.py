"""How quantized weights multiply: which GEMMs run W8A8 on FP8 tensor cores and what that costs, and
the engines that dequantize a matrix into memory before an unquantized GEMM.

What a quantized matrix stores (its formats and layouts, WeightFormat) is costmodel/quantization.py's;
this module reads a format and a leaf and says how both time models run its products (the roofline,
roofline_model.py and serving/roofline_steptime.py; the kernel model, tree_kernels.py, expert_kernels.py
and kernel_time.py; the layouts' ranks, layout/parts.py and layout/time.py).

In-memory dequantization (QuantLayout.in_memory_dequant and dequant_rows: DeepSpeed-Inference's int8,
vLLM's RTN before PR #26051, AutoGPTQ's exllama and cuda-old kernels from their row thresholds; their
sources in quantization.py's docstring): the GEMM becomes a memory-bound pass that reads the stored
matrix and writes it in the activations' dtype (dequant_bytes), then the unquantized GEMM on that copy
(in_memory_dequant).

How an FP8 checkpoint multiplies (--fp8-gemm, spec.FP8_GEMMS; runs_w8a8 is the rule):
  - vLLM's fp8 ("FP8 W8A8", docs.vllm.ai/en/stable/features/quantization/fp8/): "FP8 computation
    is supported on NVIDIA GPUs with compute capability >= 8.9 (Ada Lovelace, Hopper). FP8 models
    will run on compute capability >= 7.5 (Turing) as weight-only W8A16, utilizing FP8 Marlin";
    every Linear but the lm_head quantized, the activations' scale "calculated dynamically on each
    forward pass" (docs v0.5.4, "Quick Start with Online Dynamic Quantization"). TensorRT-LLM's FP8
    checkpoints run W8A8 on Hopper as well. So on a hardware file with an FP8 peak
    (flops_per_s["fp8"]) the quantized projections' GEMMs run at that peak and its large-GEMM
    efficiency (matmul_efficiency["fp8"], Bekman's MAMF table where present), reading their input
    in one byte; where the file has none, weight-only (the data dtype's peak, as before).
  - Each W8A8 GEMM's input is first quantized with a dynamic per-tensor scale: vLLM's
    dynamic_scaled_fp8_quant (csrc/quantization/fp8/common.cu, commit 0794945f) launches
    segmented_max_reduction (reads the input: the amax) then scaled_fp8_quant_kernel (reads it
    again, writes one byte per element): (2 e + 1) bytes per element, memory-bound
    (activation_quant_bytes). GEMMs of a leaf reading the same input (Q, K and V; gate and up:
    one fused GEMM in vLLM, QKVParallelLinear and MergedColumnParallelLinear) quantize it once:
    one pass per distinct (rows, inner width) of a leaf's GEMMs. For routed experts that is one
    expert's rows, not the whole batch (vLLM's fused MoE quantizes the hidden states once and the
    intermediate once): an understatement of a pass that is small beside the GEMMs.
  - The attention core stays in the data dtype (an FP8 KV cache changes its bytes only), and so do
    the embedding, the head and the norms.
  - Latent attention (runs_quantized is the rule, both time models read it): q_a_proj,
    kv_a_proj_with_mqa (vLLM fuses the two) and q_b_proj are quantized Linear layers, W8A8 like
    any other, each at its own rows (Cost.matrix_tokens: the queries, the new latents). kv_b_proj
    is a Linear where the naive form up-projects the keys' latents (vLLM's prefill path,
    `kv_nope = self.kv_b_proj(kv_c_normed)[0]`), W8A8 at the keys' rows; absorbed, vLLM
    dequantizes it into 16-bit W_UK and W_UV and multiplies them as bmm's in the activations'
    dtype ("we currently do not have quantized bmm's which are needed for `W_UV` and `W_UK_T`, we
    just store fp16/bf16 copies and perform the bmm's in 16-bit": MLACommonImpl
    .process_weights_after_loading, vllm/v1/attention/backends/mla/common.py, commit 37fa5c0), so
    those products run at the data dtype's peak with no quantization pass. (Their weights are still
    read as the tree stores them, fp8: vLLM's 16-bit copies are not modelled.)
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError
from .quantization import WeightFormat


#: Architectures without an FP8 peak where FP8 weights still run, weight-only: vLLM's FP8 Marlin
#: needs compute capability >= 7.5 (Turing, Ampere; docs.vllm.ai features/quantization/fp8: "FP8
#: models will run on compute capability >= 7.5 (Turing) as weight-only W8A16, utilizing FP8
#: Marlin"). Volta (7.0) and CDNA 2 (MI250X: ROCm's FP8 needs MI300) have neither path; a hardware
#: file with no architecture, or a CPU, is not refused.
FP8_WEIGHT_ONLY_ARCHITECTURES = ("turing", "ampere")
FP8_REFUSED_ARCHITECTURES = ("volta", "cdna2")


def runs_w8a8(fmt: WeightFormat | None, hardware: Any) -> bool:
    """Whether the GEMMs on weights of this format run W8A8 at the FP8 peak on this hardware (the
    module's docstring): fp8 weights, not asked to run weight-only, on a hardware file with an FP8
    peak; asked for w8a8 where the file has none, or fp8 weights on a GPU that runs neither path
    (FP8_REFUSED_ARCHITECTURES): an error."""
    if fmt is None or fmt.dtype != "fp8":
        return False
    has_peak = "fp8" in hardware.flops_per_s
    architecture = getattr(hardware, "architecture", None)
    if not has_peak and architecture in FP8_REFUSED_ARCHITECTURES:
        raise ConfigError(f"hardware {hardware.name}: fp8 weights run W8A8 on an FP8 peak (compute capability >= "
                          f"8.9) or weight-only with vLLM's FP8 Marlin (>= 7.5: "
                          f"{', '.join(FP8_WEIGHT_ONLY_ARCHITECTURES)}); {architecture} has neither: use "
                          f"--weight-dtype none (the --dtype's bytes), int8 or int4.")
    if fmt.gemm == "w8a16":
        return False
    if fmt.gemm == "w8a8" and not has_peak:
        raise ConfigError(f"hardware {hardware.name}: no FP8 peak (flops_per_s[\"fp8\"]) for --fp8-gemm w8a8; "
                          "use w8a16 (weight-only) or auto.")
    return has_peak


def w8a8_peak(hardware: Any, efficiency: Any) -> float:
    """FLOP/s of a W8A8 GEMM: the hardware's FP8 peak at the efficiency's compute fraction."""
    return hardware.peak("fp8") * efficiency.compute


def gemm_rows(flops: Any, weights: Any) -> Any:
    """Rows (tokens) per GEMM of a projection leaf: its matmul FLOPs over 2 x its weights."""
    return flops / (2 * weights)


def quantizing_inputs(widths: Any) -> list[bool]:
    """Whether each W8A8 GEMM, by its input's shape in order ((rows, inner width), or the inner
    width where the rows are the leaf's), quantizes its input: one dynamic FP8 quantization pass
    per distinct input (GEMMs of one input share one quantized copy)."""
    seen: set = set()
    first = []
    for width in widths:
        first.append(width not in seen)
        seen.add(width)
    return first


def runs_quantized(leaf: Any) -> list[bool]:
    """Which of a leaf's weight matrices (Cost.matrices, in order) multiply in the quantized
    format's kernel (W8A8 where runs_w8a8, else its weight-only kernel): all of them but those its
    block says an engine multiplies dequantized (Block.dequantized_matrices: absorbed latent
    attention's kv_b_proj, vLLM's 16-bit W_UK and W_UV; the module's docstring, "Latent
    attention"). The one rule both time models read."""
    dequantized = leaf.block.dequantized_matrices()
    return [index not in dequantized for index in range(len(leaf.cost.matrices))]


def matrix_rows(cost: Any) -> list[Any]:
    """The rows each of a cost's weight matrices multiplies: its matrix_tokens where it states
    them; else its forward matmul FLOPs over 2 x its weights, the same for every matrix."""
    if cost.matrix_tokens:
        return list(cost.matrix_tokens)
    weights = sum(rows * cols * count for rows, cols, count in cost.matrices)
    return [gemm_rows(cost.flops_matmul, weights)] * len(cost.matrices)


def w8a8_leaf(leaf: Any, w8a8: bool) -> bool:
    """Whether any of a leaf's GEMMs run W8A8: the model runs it (runs_w8a8) and the leaf has
    quantized weight matrices."""
    return w8a8 and leaf.weight_format is not None and bool(leaf.cost.matrices)


def w8a8_flops(leaf: Any) -> Any:
    """Forward FLOPs of one run of a W8A8 leaf's products that run at the FP8 peak (runs_quantized);
    the rest of its matmul FLOPs run at the data dtype's."""
    return sum(2 * rows * out * inner * count for (out, inner, count), rows, fp8
               in zip(leaf.cost.matrices, matrix_rows(leaf.cost), runs_quantized(leaf)) if fp8)


def w8a8_leaf_adjustment(leaf: Any, w8a8: bool, element_bytes: Any) -> tuple[Any, Any, Any]:
    """(the leaf's matmul FLOPs at the FP8 peak, all its runs; the change in its matmul bytes; its
    quantization bytes) as w8a8_flops and w8a8_leaf_bytes give them; zeros for a leaf that does
    not run W8A8. blended_peak turns the first into the leaf's matmul rate."""
    if not w8a8_leaf(leaf, w8a8):
        return 0, 0, 0
    read, quantize = w8a8_leaf_bytes(leaf, element_bytes)
    return leaf.count * w8a8_flops(leaf), read, quantize


def blended_peak(flops: Any, fp8_flops: Any, peak: float, fp8_peak: float, values: dict, path: str = "") -> float:
    """The one matmul rate of a leaf whose fp8_flops of flops run at fp8_peak and the rest at
    peak (the roofline's one kernel per leaf): flops / (fp8_flops / fp8_peak + rest / peak). The
    share must not depend on the workload: a leaf's weight products scale together, but a leaf that
    also multiplies two activations (DeepSeek-V4's compressor: its indexer's scores against the n / m
    compressed entries beside its projections) has a share that moves with n, refused in one line (path: the
    leaf's, named there); values: the model's sizes."""
    import sympy as sp

    if fp8_flops == 0:
        return peak
    share = sp.cancel(sp.sympify(fp8_flops) / flops).xreplace(values)
    if share.free_symbols:
        raise ConfigError(f"workload: FP8 weights on FP8 tensor cores (W8A8) are not modelled for {path or 'a leaf'}, "
                          f"whose FP8 share of its matmul FLOPs depends on the workload ({share}: weight products "
                          "beside a product of two activations); use --fp8-gemm w8a16.")
    share = float(share)
    return 1.0 / (share / fp8_peak + (1 - share) / peak)


def activation_quant_bytes(elements: Any, element_bytes: Any) -> Any:
    """Bytes of one dynamic per-tensor FP8 quantization of `elements` activations of
    `element_bytes` each: the amax pass reads them, the cast reads them again and writes one byte
    each (vLLM's dynamic_scaled_fp8_quant; the module's docstring)."""
    return (2 * element_bytes + 1) * elements


def w8a8_leaf_bytes(leaf: Any, element_bytes: Any) -> tuple[Any, Any]:
    """A W8A8 leaf's traffic beside the tree's, over all its runs (w8a8_run_bytes times its runs)."""
    read, quantize = w8a8_run_bytes(leaf, element_bytes)
    return leaf.count * read, leaf.count * quantize


def w8a8_run_bytes(leaf: Any, element_bytes: Any) -> tuple[Any, Any]:
    """One run of a W8A8 leaf's traffic beside the tree's, as expressions: (the change in its
    matmul bytes: each W8A8 GEMM (runs_quantized) reads its input in one byte, not element_bytes;
    the bytes of its inputs' quantization, one pass per distinct (rows, inner width)). Rows per
    GEMM: matrix_rows, as kernel_time reads them. At a tensor-parallel rank's substitution
    (layout/split.py): the rank's GEMMs."""
    if not leaf.cost.matrices:
        return 0, 0
    products = [(rows, cols, count) for (_, cols, count), rows, fp8
                in zip(leaf.cost.matrices, matrix_rows(leaf.cost), runs_quantized(leaf)) if fp8]
    inputs = sum(rows * cols * count for rows, cols, count in products)
    shapes = [(rows, cols) for rows, cols, _ in products]
    distinct = sum(rows * cols for (rows, cols), first in zip(shapes, quantizing_inputs(shapes)) if first)
    return (1 - element_bytes) * inputs, activation_quant_bytes(distinct, element_bytes)


def dequant_bytes(stored: Any, values: Any, element_bytes: Any) -> Any:
    """Bytes of one in-memory dequantization of a matrix (QuantLayout.in_memory_dequant: DeepSpeed's
    launch_dequantize, quantization.py's docstring): it reads the matrix as stored (`stored`: values and
    scales) and writes its `values` in the activations' dtype (`element_bytes` each). The GEMM after it
    reads that copy as an unquantized weight. The one rule both time models read."""
    return stored + element_bytes * values


def in_memory_dequant(fmt: WeightFormat | None, kernels: list[Any], element_bytes: float) -> list[Any]:
    """A leaf's kernels where its format's engine dequantizes into memory (QuantLayout.in_memory_dequant,
    or a product of at least QuantLayout.dequant_rows rows): each such quantized GEMM (Gemm.weight_dtype set) becomes a memory-bound pass of dequant_bytes (count
    matrices of its stored weight_bytes) and the unquantized GEMM on the copy (e bytes a weight, the
    timer's GEMM rule for unquantized weights); other kernels and formats as they are."""
    if fmt is None or not (fmt.storage.in_memory_dequant or fmt.storage.dequant_rows):
        return kernels
    from dataclasses import replace

    from .kernel_shapes import Gemm, Pointwise

    out: list[Any] = []
    for kernel in kernels:
        if isinstance(kernel, Gemm) and kernel.weight_dtype is not None and (
                fmt.storage.in_memory_dequant or kernel.m >= fmt.storage.dequant_rows):
            moved = kernel.count * dequant_bytes(kernel.weight_bytes, kernel.k * kernel.n, element_bytes)
            out += [Pointwise(moved, 0.0), replace(kernel, weight_bytes=None, weight_dtype=None)]
        else:
            out.append(kernel)
    return out
