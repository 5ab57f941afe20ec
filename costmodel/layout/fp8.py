"""FP8 training recipes as data (--fp8): which matrix products run at the FP8 peak, and what
each recipe keeps beside the bf16 training state. Each row names its source.

What runs in FP8, in every recipe: the layers' linear products, forward and backward (Q/K/V,
attention output, the FFN and the routed experts: costmodel/blocks/' QKVProjection,
AttentionOutput, FeedForward, Experts), at the hardware file's peak the recipe names (Recipe.peak:
flops_per_s["fp8"]; "mxfp8" for MXFP8, "fp4" for NVFP4, which only Blackwell files carry). What stays in
bf16: the embedding, the output head and the loss, the attention core (QK^T and PV), the router,
norms and softmax (torchao's float8 training converts nn.Linear modules and its torchtitan recipe
leaves the output layer out; Transformer Engine's fp8_autocast covers its Linear layers only;
DeepSeek-V3 keeps "the embedding module, the output head, MoE gating modules, normalization
operators, and attention operators" in higher precision, report section 3.3.1). Latent attention's
projections are counted at bf16 here (they run in FP8 in DeepSeek-V3): an understatement.

blockwise also keeps activations in low precision (report section 3.3.3; Profile.fp8_activations):
the gated FFNs' output-matrix input and the routed experts' gathered input in FP8 with an fp32
scale per 1 x 128 tile (terms.tiled_bytes), the experts' SwiGLU input in FP8 and its output
recomputed, the flash kernel's output (the input of the linear after attention) in E5M6 (12 bits).
What stays in the activation dtype: the norms' inputs and outputs (DeepSeek recomputes the norms:
--recompute deepseek), latent attention's latents, the router's input and the experts' down output
(the routing weights' gradient reads it), and an eager kernel's output projection input. Not
modelled: Transformer Engine's FP8 all-gather under sequence parallelism (its bytes: the collectives stay at the activation dtype).
torchao 0.18's tensorwise and rowwise save the bf16 input and weight and cast again in backward:
measured, validate/fp8.py (FINDINGS 22.5); torchao eab345c (the torchtitan rows) saved the FP8 copies.

The casts' own time (CAST_PASSES, `cast_bytes`): the memory-bound passes each recipe runs beside
each FP8 linear, as bytes per element of the linear's input (M x K, once per distinct input: Q, K
and V share theirs), weight (K x N) and output gradient (M x N): an amax (a reduction that reads
the tensor), the cast (reads it, writes one byte an element) and the column-major copy the FP8
GEMM needs for its second operand. The kernel-level model charges them (layout/kernel_step.py);
the roofline does not (it has no operand shapes: docs/time.md). Each pass's source is beside it.

The block-scaled recipes (mxfp8, nvfp4: Transformer Engine's MXFP8BlockScaling and NVFP4BlockScaling,
Megatron-Bridge's fp8_mx and nvfp4) run all three GEMMs of a linear (fprop, dgrad, wgrad) on
Blackwell's block-scaled tensor cores. A scale covers a block of one row (or one column), so the
column-wise copy wgrad and dgrad need is its own quantization, not a transpose: each operand is cast
both ways from bf16 in one kernel (BLOCK_FORMATS). Where the hardware file has no measured efficiency
for the recipe's peak, the GEMMs take the FP8 one's (hardware_schema.EFFICIENCY_STAND_IN: a stated
assumption, not a measurement). The layers and modules a named Megatron-Bridge configuration keeps in
bf16 (Nemotron-3 Super's nvfp4 perf recipe: its last 14 layers, attention and latent projections and MTP
layers) are Layout.mixed_precision's (layout/fp8_layers.py; its Mamba out_proj in MXFP8 is not: that leaf
stays FP4, an overstatement of the speed). Not modelled: the parameters held in MXFP8 under
fp8_param_gather (bf16_with_mxfp8_mixed), nor its all-gathers' bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..spec import DTYPE_BYTES


@dataclass(frozen=True)
class Recipe:
    name: str
    scaling: str
    # bytes per linear-layer parameter of FP8 weight copies (and their scales) kept through the
    # step; 0 where each product casts its weight on the fly
    weight_copy_bytes: float
    # bytes of each AdamW moment, where the recipe changes it (None: the precision policy's)
    moment_bytes: int | None
    source: str
    # the activations kept for backward in low precision (blocks' Profile.fp8_activations)
    caches_activations: bool = False
    # the hardware file's peak (flops_per_s key) the linear layers' GEMMs run at
    peak: str = "fp8"
    # the amaxes each quantizer keeps, one per scale update (delayed scaling; 0: no history)
    amax_history_len: int = 0


RECIPES = {
    "tensorwise": Recipe(
        "tensorwise", "one fp32 scale per tensor, computed from its amax at each cast (dynamic)", 0, None,
        "torchao float8 training (Float8LinearConfig, recipe 'tensorwise'): weights, inputs and output "
        "gradients cast to float8 per product with a dynamic per-tensor scale; no copy is kept"),
    "rowwise": Recipe(
        "rowwise", "one fp32 scale per row of each operand (dynamic)", 0, None,
        "torchao float8 training (recipe 'rowwise'): per-row scales, cast per product; no copy is kept"),
    "current": Recipe(
        "current", "one fp32 scale per tensor, computed from its amax at each cast (current scaling)", 0, None,
        "Transformer Engine's Float8CurrentScaling (Megatron-Bridge's fp8_cs): per-tensor scales from the "
        "tensor's own amax at each cast (transformer_engine/pytorch/csrc/quantizer.cpp, "
        "Float8CurrentScalingQuantizer::quantize_impl, TE v2.9); the FP8 weight and its transpose cached "
        "across a step's micro-batches (not counted here as memory: weight_copy_bytes 0)"),
    "delayed": Recipe(
        "delayed", "one fp32 scale per tensor, from the largest amax in its history of the last 1,024 "
        "scale updates (delayed scaling)", 0, None,
        "Transformer Engine's DelayedScaling (transformer_engine/common/recipe/__init__.py lines 121-206, TE "
        "v2.9: 'Use scale factor from previous iteration and record amax history of amax_history_len "
        "steps', amax_history_len 1024, amax_compute_algo 'max', HYBRID format); NeMo's bf16_with_fp8_mixed "
        "(fp8 'hybrid', fp8_amax_history_len 1024, fp8_amax_compute_algo 'max') and Megatron-LM's default "
        "fp8_recipe 'delayed'; each cast uses the scale of the previous update and records its amax inside "
        "the cast kernel; the FP8 weight and its transpose cached across micro-batches as current's (not "
        "counted as memory); the amax histories and scales (scaling_state_bytes) not counted as memory either",
        amax_history_len=1024),
    "blockwise": Recipe(
        "blockwise", "activations per 1 x 128 tile, weights per 128 x 128 block (fp32 scales)",
        1 + 4 / (128 * 128), 2,
        "DeepSeek-V3 technical report, section 3.3: fine-grained (1 x 128 / 128 x 128) quantization; the "
        "FP8 weights with one fp32 scale a 128 x 128 block; fp32 master weights and gradients; AdamW's "
        "moments in bf16 (3.3.3); activations cached for the linear layers' backward in FP8, the input "
        "of the linear after attention in E5M6, the MoE SwiGLU's input in FP8 and its output "
        "recomputed (3.3.3, Low-Precision Activation)",
        caches_activations=True),
    "mxfp8": Recipe(
        "mxfp8", "one E8M0 (power of two) scale per 1 x 32 block, along rows and, for the column-wise "
        "copy, along columns", 0, None,
        "Transformer Engine's MXFP8BlockScaling (transformer_engine/common/recipe/__init__.py lines "
        "265-300, TE v2.9: 'Each group of 32 consecutive values is scaled together', 'E8M0'; the OCP "
        "Microscaling Formats (MX) v1.0 specification's MXFP8 E4M3), Megatron-Bridge's fp8_mx "
        "(scripts/performance/utils/precision.py, 21d102f5e: bf16_with_mxfp8_mixed); all three GEMMs "
        "block-scaled FP8 on Blackwell's tensor cores; the cached weight copies not counted as memory "
        "(as current's; Megatron-Bridge's fp8_param_gather holds the parameters themselves in MXFP8)",
        peak="mxfp8"),
    "nvfp4": Recipe(
        "nvfp4", "FP4 (E2M1) with one E4M3 scale per 1 x 16 block (16 x 16 for weights) and an fp32 scale "
        "per tensor; random Hadamard transforms on wgrad's operands, stochastic rounding of gradients", 0, None,
        "Transformer Engine's NVFP4BlockScaling (transformer_engine/common/recipe/__init__.py lines "
        "387-470, TE v2.9: 16-element blocks with E4M3 scales and a per-tensor fp32 scale, 16 x 16 "
        "blocks for weights, RHT on the inputs' and gradients' column-wise (wgrad) copies, stochastic "
        "rounding of gradients), Megatron-Bridge's nvfp4 (bf16_with_nvfp4_mixed, 21d102f5e); NVIDIA, "
        "'Pretraining Large Language Models with NVFP4', arXiv:2509.25149; all three GEMMs at the FP4 "
        "peak; the cached weight copies not counted as memory (as current's)",
        peak="fp4"),
}


@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled format's element and scale sizes (the bytes a cast writes per element)."""

    element_bits: int
    block: int  # elements per scale
    scale_bytes: int  # bytes per scale

    @property
    def bytes_per_element(self) -> float:
        """Bytes one quantized copy takes per element: the data and its share of a scale."""
        return self.element_bits / 8 + self.scale_bytes / self.block


#: The block-scaled recipes' formats (TE v2.9 pytorch/csrc/quantizer.cpp lines 47-48: MXFP8_BLOCK_SIZE 32, with one
#: E8M0 byte a block; NVFP4_BLOCK_SIZE 16 with one E4M3 byte a block; the NVFP4 per-tensor fp32 scale
#: (4 bytes a tensor) is left out of the per-element bytes). A 16 x 16 weight block's scale is
#: written for each of its rows (the scale_inv tensor has the 1 x 16 shape, NVFP4Quantizer::
#: get_scale_shape, pytorch/csrc/quantizer.cpp lines 1671-1700), so weights take 1 byte a 16 too.
BLOCK_FORMATS = {"mxfp8": BlockFormat(8, 32, 1), "nvfp4": BlockFormat(4, 16, 1)}


#: GPUs whose FP8 GEMMs take operands in any layout: Transformer Engine makes no column-major copy
#: there (transformer_engine/pytorch/utils.py is_non_tn_fp8_gemm_supported, TE v2.9 lines 490-495:
#: compute capability 10.x, 11.x and >= 13.0; quantizer.cpp: `with_transpose = columnwise_usage &&
#: !nvte_is_non_tn_fp8_gemm_supported()`), by the hardware files' architecture.
NON_TN_FP8_ARCHITECTURES = ("blackwell",)


@dataclass(frozen=True)
class CastPass:
    """One memory-bound pass of a recipe beside an FP8 linear: which tensor, in which pass of the
    step, what it does, and the bytes it moves per element of that tensor."""

    tensor: str  # "input", "normed_input" (an input a norm writes: Q/K/V's, the FFN's first), "weight", "grad",
    # "grad_input" (dgrad's output, M x K, one per GEMM), "grad_weight" (wgrad's output, K x N)
    phase: str  # "forward" (also rerun by recomputation) or "backward"
    what: str  # "amax", "scale" (the scale from the amax: no bytes an element), "cast", "transpose" (the
    # column-major copy; skipped where TN is not needed),
    # "scales" (a block-scaled cast's scale bytes, written by the cast's own kernel), "rescale" (a
    # GEMM's output multiplied by its operands' scales after the GEMM, in a kernel of its own)
    bytes_per_element: float
    # "always"; "sp" / "no_sp": only with / without sequence parallelism over tp > 1 (TE all-gathers a
    # norm's output in FP8: quantized on the rank's 1 / tp of the tokens, transposed after the gather)
    when: str = "always"
    # a kernel launch of its own (False: written by another pass's kernel, e.g. TE's cast + transpose)
    kernel: bool = True


#: torchao float8 at eab345c (2024-12-26; the torchtitan rows), tensorwise: Float8Linear.forward
#: (torchao/float8/float8_linear.py lines 355-388) casts the input and the weight with dynamic scales
#: (float8_scaling_utils.py hp_tensor_to_float8_dynamic: tensor_to_scale, whose tensor_to_amax is
#: torch.max(torch.abs(x)), float8_utils.py line 100, then hp_tensor_and_scale_to_float8: two passes,
#: the scale needing the whole reduction), saves the two FP8 tensors
#: (manual_float8_matmul_with_args_in_float8.forward, ctx.save_for_backward(input_fp8, weight_fp8_t),
#: line 49), and casts the output gradient in backward (NoopFwToFloat8BwDynamic,
#: float8_scaling_utils.py lines 246-270). torch._scaled_mm takes its first operand row-major and its
#: second column-major: float8_ops.py preprocess_addmm (lines 250-253) copies `a.contiguous()` and
#: `b.t().contiguous().t()` where they are not, which in backward is the weight (dgrad's second
#: operand), the output gradient transposed (wgrad's first) and the saved input (wgrad's second):
#: each one FP8 read and one FP8 write. torchtitan 9dec370 leaves enable_fsdp_float8_all_gather off
#: unless asked (torchtitan/config_manager.py line 542, store_true), so the whole weight is cast in
#: each forward; train_configs/llama3_405b.toml turns it on (line 59 at 9dec370, 58 at 3faaa1a0d):
#: there the weight arrives in FP8 (--fp8-param-gather, layout/fp8_options.py). Under torch.compile (the rows are compiled) no
#: pass is credited as fused: the amax must finish before its cast, and no source shows the amax in
#: its producer's kernel (a norm's is a row reduction, the amax a whole-tensor one) or the backward's
#: copies in the casts' kernels.
_TORCHAO_TENSORWISE = (
    CastPass("input", "forward", "amax", 2), CastPass("input", "forward", "cast", 3),
    CastPass("normed_input", "forward", "amax", 2), CastPass("normed_input", "forward", "cast", 3),
    CastPass("weight", "forward", "amax", 2), CastPass("weight", "forward", "cast", 3),
    CastPass("grad", "backward", "amax", 2), CastPass("grad", "backward", "cast", 3),
    CastPass("input", "backward", "transpose", 2), CastPass("normed_input", "backward", "transpose", 2),
    CastPass("weight", "backward", "transpose", 2), CastPass("grad", "backward", "transpose", 2),
)

#: torchao eab345c, rowwise (axiswise scaling): manual_float8_matmul_with_args_in_hp (float8_linear.py
#: lines 106-254) saves the bf16 input and weight and casts each operand for each GEMM: forward the
#: input and the weight; backward the output gradient twice (along each dimension, lines 169-231),
#: the weight again (lines 183-199) and the input again (lines 233-245); each cast an amax along a
#: dimension and a cast; the same column-major copies as tensorwise (preprocess_addmm).
#: The two backward GEMMs' rescale: the rowwise recipe runs dgrad and wgrad without fast
#: accumulation (config.py, Float8LinearConfig's gemm_config_grad_input and gemm_config_grad_weight
#: default Float8GemmConfig(use_fast_accum=False); only gemm_config_output sets it True, torchao
#: eab345c and 6243040, the async-TP benchmark's), and addmm_float8_unwrapped (float8_ops.py,
#: 6243040 lines 41-76; added by pytorch/ao PR 1325) then runs "the tensorwise cuBLAS-based kernel"
#: with unit scales, "the rowwise CUTLASS-based kernel is so slow without fast-accum", and applies
#: the row and column scales afterwards (`output *= post_inverse_scale`): one read and one write of
#: each bf16 output. "With torch.compile this unfortunately requires inductor to codegen at least one
#: extra triton kernel *per GEMM* ... just for the rescaling" (pytorch/ao issue 2184, 2025-05-08).
#: dgrad's output is M x K for each GEMM (Q, K and V each their own: grad_input, no sharing), wgrad's
#: K x N. Tensorwise needs no rescale: its scales are scalars that cuBLAS applies.
_TORCHAO_ROWWISE = _TORCHAO_TENSORWISE + (
    CastPass("input", "backward", "amax", 2), CastPass("input", "backward", "cast", 3),
    CastPass("normed_input", "backward", "amax", 2), CastPass("normed_input", "backward", "cast", 3),
    CastPass("weight", "backward", "amax", 2), CastPass("weight", "backward", "cast", 3),
    CastPass("grad", "backward", "amax", 2), CastPass("grad", "backward", "cast", 3),
    CastPass("grad_input", "backward", "rescale", 4), CastPass("grad_weight", "backward", "rescale", 4),
)

#: Transformer Engine v2.9 Float8CurrentScaling (Megatron-Bridge fp8_cs; Megatron-Core's GPT layer
#: spec builds linear_qkv and linear_fc1 as TE's LayerNormLinear, megatron/core/models/gpt/
#: gpt_layer_specs.py line 145 at Megatron-LM d98e8a64): quantize_impl (csrc/quantizer.cpp lines
#: 497-536) runs nvte_compute_amax, the scale, then nvte_quantize_v2, which writes the row-major
#: data and, where the GPU needs it (NON_TN_FP8_ARCHITECTURES), the transpose in the same kernel
#: (cast + transpose: one byte more an element). A norm's output: the amax inside the norm kernel
#: (csrc/extensions/normalization.cpp lines 116-120, FUSED_NORM_AMAX_FP8), then the cast
#: (quantize_with_amax); under sequence parallelism the norm's output is quantized row-major only on
#: the rank's tokens and all-gathered in FP8 (module/layernorm_linear.py lines 255-266), its
#: transpose made in backward after the gather ("we compute FP8 transposes manually", line 659).
#: The input is saved quantized (its column-major copy). The weight is quantized with its
#: transpose once a step and cached across micro-batches (layernorm_linear.py lines 288-296,
#: cache_name "weight", updated when is_first_microbatch; Megatron-Core passes it,
#: megatron/core/extensions/transformer_engine.py lines 1338-1344, set by
#: pipeline_parallel/schedules.py line 497). The output gradient: amax, cast + transpose.
#: Between the amax and the cast, nvte_compute_scale_from_amax: a kernel of its own that reads the
#: amax and writes the scale ("scale", no bytes an element).
_TE_CURRENT = (
    CastPass("input", "forward", "amax", 2), CastPass("input", "forward", "scale", 0),
    CastPass("input", "forward", "cast", 3), CastPass("input", "forward", "transpose", 1, kernel=False),
    CastPass("normed_input", "forward", "scale", 0), CastPass("normed_input", "forward", "cast", 3),
    CastPass("normed_input", "forward", "transpose", 1, when="no_sp", kernel=False),
    CastPass("normed_input", "backward", "transpose", 2, when="sp"),
    CastPass("weight", "forward", "amax", 2), CastPass("weight", "forward", "scale", 0),
    CastPass("weight", "forward", "cast", 3), CastPass("weight", "forward", "transpose", 1, kernel=False),
    CastPass("grad", "backward", "amax", 2), CastPass("grad", "backward", "scale", 0),
    CastPass("grad", "backward", "cast", 3), CastPass("grad", "backward", "transpose", 1, kernel=False),
)

#: Transformer Engine v2.9 DelayedScaling (NeMo 24.07 and 25.02's FP8; Megatron-LM's default
#: fp8_recipe). Float8Quantizer::quantize (csrc/quantizer.cpp lines 276-288) is one nvte_quantize_v2
#: kernel with the scale the last update left: with a column-wise usage cast_transpose
#: (common/util/cast_kernels.cuh lines 2073-2081), whose blocks take the amax as they cast and
#: atomicMaxFloat it into the history's current row (common/transpose/cast_transpose.cu lines
#: 144-208): no amax pass and no scale kernel, where current scaling runs nvte_compute_amax,
#: nvte_compute_scale_from_amax, then the cast (quantize_impl, lines 497-536). A norm's output: the
#: norm kernel writes FP8 itself (csrc/extensions/normalization.cpp lines 108-109 and 332-333,
#: FULLY_FUSED for Float8Quantizer, layernorm and rmsnorm: no cast kernel; the norm writes one byte
#: an element where its leaf is charged the activation dtype's: that byte is not credited, an
#: overstatement), then, where a column-major copy is needed and the tokens are not gathered,
#: nvte_transpose of it (common/normalization/layernorm/ln_api.cpp lines 111-117,
#: rmsnorm/rmsnorm_api.cpp lines 96-103: read 1, write 1); under sequence parallelism row-major only
#: (Float8Quantizer supports only a row-wise all-gather, tensor/float8_tensor.py lines 195-199), the
#: transpose made in backward after the gather as current's. The weight: cast + transpose once a step
#: (is_first_microbatch, as current's). The output gradient: cast + transpose. Beside the casts, once
#: per forward autocast and once per backward (quantization.py reduce_and_update_fp8_tensors, lines
#: 487-538: a torch.cat of the amaxes, an all-reduce (MAX) over the amax reduction group where it
#: has more than one rank, and tex.fused_amax_and_scale_update_after_reduction, which rolls each
#: history and writes the new scales; SCALING_UPDATE), not charged. TE v1.8 (3ec998e9, of
#: NeMo 24.07's time; neither NeMo page prints its container's TE) casts the same tensors in the
#: same kernels but makes a norm output's transpose in backward whatever the parallelism
#: (module/layernorm_linear.py line 584): the same bytes, one pass later.
_TE_DELAYED = (
    CastPass("input", "forward", "cast", 3), CastPass("input", "forward", "transpose", 1, kernel=False),
    CastPass("normed_input", "forward", "transpose", 2, when="no_sp"),
    CastPass("normed_input", "backward", "transpose", 2, when="sp"),
    CastPass("weight", "forward", "cast", 3), CastPass("weight", "forward", "transpose", 1, kernel=False),
    CastPass("grad", "backward", "cast", 3), CastPass("grad", "backward", "transpose", 1, kernel=False),
)


#: What delayed scaling keeps per FP8 GEMM (TE v2.9 module/base.py lines 765-767: "Max. number of
#: fp8 tensors per GEMM = 3 (input, weight, output) for fwd and 2 (grad_output and grad_input) for
#: bwd"; quantization.py DelayedScalingRecipeState lines 1039-1077: per mode an fp32 scale a
#: quantizer and an fp32 amax history of amax_history_len x quantizers).
QUANTIZERS_PER_GEMM = {"forward": 3, "backward": 2}
FP32_BYTES = DTYPE_BYTES["fp32"]

#: What runs once per forward autocast (at its exit, quantization.py autocast_exit lines 590-601) and
#: once per backward (the first FP8 module's, layernorm_linear.py lines 1000-1003, linear.py 960-964):
#: reduce_and_update_fp8_tensors (lines 487-538), kernels in order. The all-reduce only where the amax
#: reduction group has more than one rank (reduce_amax True, the default).
SCALING_UPDATE = ("torch.cat of the amaxes", "all_reduce MAX over the amax reduction group",
                  "fused_amax_and_scale_update_after_reduction (multi-tensor: every history rolled, every scale)")


#: Transformer Engine modules with FP8 GEMMs in one of Megatron-Core's dense transformer layers (its TE
#: layer spec: linear_qkv and linear_fc1 TELayerNormColumnParallelLinear, linear_proj and linear_fc2
#: TERowParallelLinear), one GEMM each, so one set of quantizers each (QUANTIZERS_PER_GEMM).
TE_GEMMS_PER_DENSE_LAYER = 4


def amax_reduction_bytes(gemms: int) -> dict[str, int]:
    """Bytes of the amax buffer delayed scaling all-reduces once per forward autocast ("forward")
    and once per backward ("backward") over `gemms` FP8 GEMMs: one fp32 amax a quantizer
    (TE v2.9 quantization.py reduce_and_update_fp8_tensors lines 487-538: torch.cat of the autocast's
    amax_history[0] rows, then the all-reduce)."""
    return {phase: gemms * quantizers * FP32_BYTES for phase, quantizers in QUANTIZERS_PER_GEMM.items()}


#: Megatron-Core's --fp8-param-gather (fp8_param in TransformerConfig; NeMo's fp8_params,
#: Megatron-Bridge's fp8_param_gather): the layers' linear weights are created as Transformer
#: Engine QuantizedTensors (fp8_utils.py get_fp8_context(is_init=True): fp8_model_init), whose data the
#: distributed optimizer's parameter buffer holds as torch.uint8, one byte a parameter
#: (distributed/param_and_grad_buffer.py group_params_for_buffers: "param_dtype: storage dtype
#: (torch.uint8 for FP8/NVFP4 parameters, else param.dtype)", the parameter remapped onto that buffer:
#: no bf16 copy is kept), so the parameter all-gather moves one byte an FP8 parameter and the
#: embedding, norms and head (bf16 buffers) two; after the step the rank's fp32 main parameters are
#: cast into its shard of the buffer (fp8_utils.py quantize_param_shard: TE's
#: cast_master_weights_to_fp8, which all-reduces the per-tensor amaxes over the data-parallel group:
#: 4 bytes a tensor, not charged) and the forward's weight casts do not run (the weight is FP8 already;
#: Hopper's transpose still does, post_all_gather_processing). Megatron-LM d98e8a64 (2026-08),
#: core_r0.11.0 the same rule (the uint8 param buffer). Modelled for TE's per-tensor Float8Tensor
#: recipes; MXFP8's (its scales, and Megatron-Bridge's reuse_grad_buf_for_mxfp8_param_ag gathering
#: through the gradient buffer) and NVFP4's (two values a byte) are not.
FP8_PARAM_RECIPES = ("current", "delayed")
FP8_PARAM_BYTES = 1


def fp8_blocks() -> tuple[type, ...]:
    """The cost tree's blocks whose linear weights FP8 recipes convert (Transformer Engine's linear
    layers): attention's projections, the feed-forward and experts' GEMMs, a latent MoE's projections,
    and a Mamba-2 mixer's in_proj and out_proj. Megatron-Core's hybrid stack builds and runs every
    layer, its Mamba layers included, inside the recipe's quantization context
    (NVIDIA/Megatron-LM d98e8a64dd megatron/core/models/hybrid/hybrid_block.py: get_fp8_context /
    get_fp4_context(config, layer, is_init=True) around each layer's build, lines 127-133, and
    get_inner_quant_context around each layer's forward, lines 341-379; ssm/mamba_block.py
    MambaStack the same at core_v0.14.0 and core_v0.15.0, lines 165 and 318-328), and the mixer's
    projections are Transformer Engine modules (hybrid_layer_specs.py line 116: in_proj
    TELayerNormColumnParallelLinear, its pre-mixer norm fused, out_proj TERowParallelLinear;
    ssm/mamba_mixer.py lines 253-257 assert in_proj's width a multiple of 16 "For FP8"). The rest of
    the mixer (conv1d, the SSD scan's Triton kernels, the gated norm: mamba_ssm, no TE module) runs in
    the activations' dtype: the kernel model times its PassKernels at the dtype's rate (kernel_step
    `_parts`) and fp8_weights takes the two matrices alone; the roofline, one rate a leaf, times the
    conv and scan products at the FP8 peak too (7.0% of the mixer's matmul FLOPs at Nemotron 3 Nano's
    8,192 tokens: an overstatement of its speed)."""
    from .. import blocks as B

    return (B.QKVProjection, B.AttentionOutput, B.FeedForward, B.Experts, B.LatentProjection, B.Mamba2Mixer)


def fp8_weights(block: Any, cost: Any) -> tuple[tuple[Any, Any], ...]:
    """(rows, columns) of the weights an FP8 block's recipe holds in FP8 (--fp8-param-gather): a
    Mamba-2 mixer's in_proj and out_proj matrices (Cost.matrices), not its conv1d, gated norm weight,
    dt_bias, A_log or D, which are no Transformer Engine module's (fp8_blocks); every other FP8
    block's tensors whole. The one rule for a rank's count (layout/parts.py) and the model's
    (estimation.py)."""
    from .. import blocks as B

    if isinstance(block, B.Mamba2Mixer):
        return tuple((rows * count, cols) for rows, cols, count in cost.matrices)
    return tuple((t.rows, t.cols) for t in cost.tensors)


def fp8_parameter_saving(weight_bytes: int, fp8_params: int) -> int:
    """Bytes of weights not held under --fp8-param-gather: each of `fp8_params` parameters takes
    FP8_PARAM_BYTES, not the `weight_bytes` of the training dtype (no bf16 copy is kept). The one
    formula: a rank's weights (rank.fp8_parameter_saving) and estimate's whole model (Estimate)."""
    return (weight_bytes - FP8_PARAM_BYTES) * fp8_params


def scaling_state_bytes(recipe: Recipe, gemms: int) -> int:
    """Bytes of the amax histories and scales a recipe keeps for `gemms` FP8 GEMMs (0 but delayed
    scaling's): per quantizer a history of amax_history_len fp32 amaxes and one fp32 scale."""
    if not recipe.amax_history_len:
        return 0
    return gemms * sum(QUANTIZERS_PER_GEMM.values()) * FP32_BYTES * (recipe.amax_history_len + 1)


def _block_scaled(tensors: tuple[tuple[str, str], ...], fmt: BlockFormat, *, amax: bool,
                  copies: int = 2) -> tuple[CastPass, ...]:
    """A block-scaled recipe's casts: per (tensor, phase), an optional amax (a read of the bf16
    tensor) and one cast kernel that reads the bf16 tensor once (2 bytes) and writes `copies`
    quantized copies (row-wise and column-wise), their data as "cast" and their scales as "scales"."""
    passes: list[CastPass] = []
    for tensor, phase in tensors:
        if amax:
            passes.append(CastPass(tensor, phase, "amax", 2))
        passes.append(CastPass(tensor, phase, "cast", 2 + copies * fmt.element_bits / 8))
        passes.append(CastPass(tensor, phase, "scales", copies * fmt.scale_bytes / fmt.block, kernel=False))
    return tuple(passes)


#: Transformer Engine v2.9 MXFP8BlockScaling: MXFP8Quantizer::quantize (csrc/quantizer.cpp lines
#: 1091-1103) is one nvte_quantize_v2 kernel, no amax pass (each block's E8M0 scale comes from the
#: block's own maximum, inside the cast), writing the row-wise and the column-wise copy with their
#: scales when both usages are set (the recipe's docstring: 'both versions are computed from the
#: high precision input'). The input: both (fprop, wgrad); a norm's output: the norm in bf16, then
#: the same cast (csrc/extensions/normalization.cpp lines 107-116: MXFP8 fuses only under
#: NVTE_NORM_FWD_USE_CUDNN), under sequence parallelism on the rank's tokens before an MXFP8
#: all-gather of both copies (module/layernorm_linear.py lines 190-193, 246-259;
#: supports_only_rowwise_all_gather is False for it, tensor/quantized_tensor.py line 304); the
#: weight both (fprop, dgrad) once a step, cached across micro-batches as current's; the output
#: gradient both (dgrad, wgrad). No transposes: the column-wise copy is written by the cast.
_TE_MXFP8 = _block_scaled((("input", "forward"), ("normed_input", "forward"), ("weight", "forward"),
                           ("grad", "backward")), BLOCK_FORMATS["mxfp8"], amax=False)

#: torchao's MX training (torchao/prototype/mx_formats/mx_linear.py at e4e681be6, the torchao of the
#: MX rows; torchtitan's MX converter at 6fc499f, torchtitan/components/quantization/mx.py, applies
#: its MXLinearConfig with config/job_config.py's mxfp8_dim1_cast_kernel_choice default "triton"):
#: mx_mm.forward saves the bf16 input and weight (ctx.save_for_backward(input_hp, weight_hp)) and
#: casts the input and the weight along rows (MXTensor.to_mx: one read of the bf16 tensor, one
#: byte an element and an E8M0 scale per 32 written); backward casts the output gradient along rows
#: and then, each in a kernel of its own (_to_mxfp8_dim1_kernel_wrapper, triton_to_mxfp8_dim1), the
#: weight, the output gradient and the saved input along columns: each operand read twice in bf16
#: where Transformer Engine's one kernel writes both copies (_TE_MXFP8). The weight is cast in each
#: forward (no cache across micro-batches). torchtitan runs torchao's MX (--framework fsdp2 with
#: --fp8 mxfp8: FRAMEWORK_CAST_PASSES).
_MXFP8 = BLOCK_FORMATS["mxfp8"]
_TORCHAO_MXFP8 = (
    _block_scaled((("input", "forward"), ("normed_input", "forward"), ("weight", "forward"), ("grad", "backward")),
                  _MXFP8, amax=False, copies=1)
    + _block_scaled((("input", "backward"), ("normed_input", "backward"), ("weight", "backward"),
                     ("grad", "backward")), _MXFP8, amax=False, copies=1)
)

#: Transformer Engine v2.9 NVFP4BlockScaling: NVFP4Quantizer::quantize_impl (csrc/quantizer.cpp
#: lines 1438-1640) computes the per-tensor amax first (lines 1480-1521: with RHT one kernel,
#: nvte_hadamard_transform_amax, gives the input's and its transform's; else nvte_compute_amax:
#: each one read of the bf16 tensor), then the row-wise copy (nvte_quantize_v2 of the input) and
#: the column-wise one: with RHT (the input's and the gradient's, fp4_quant_fwd_inp and
#: fp4_quant_bwd_grad in recipe/__init__.py lines 452-468) the fused RHT-and-cast kernel
#: (nvte_hadamard_transform_cast_fusion_columnwise, lines 1627-1635, taken for bf16 tensors whose
#: rows are a multiple of 64 and columns of 128; the unfused path writes the transform in bf16
#: first: not modelled), which reads the bf16 tensor again; without (the weight, 2D 16 x 16 blocks)
#: one kernel writes both copies. A norm's output: the norm in bf16, then these casts
#: (normalization.cpp lines 121-130: the post-RHT amax stays in the quantizer), on the rank's tokens
#: under sequence parallelism as MXFP8's. The weight once a step, cached as current's.
_NVFP4 = BLOCK_FORMATS["nvfp4"]
_TE_NVFP4 = (
    _block_scaled((("input", "forward"), ("normed_input", "forward")), _NVFP4, amax=True, copies=1)
    + _block_scaled((("input", "forward"), ("normed_input", "forward")), _NVFP4, amax=False, copies=1)
    + _block_scaled((("weight", "forward"),), _NVFP4, amax=True)
    + _block_scaled((("grad", "backward"),), _NVFP4, amax=True, copies=1)
    + _block_scaled((("grad", "backward"),), _NVFP4, amax=False, copies=1)
)


@dataclass(frozen=True)
class Casts:
    """A recipe's cast passes and the rules that scale them."""

    passes: tuple[CastPass, ...]
    # the column-major copies: "always" (torch._scaled_mm's layout rule) or "tn_only" (TE: only on
    # GPUs outside NON_TN_FP8_ARCHITECTURES)
    transposes: str
    # the weight cast once a step and cached across micro-batches (not rerun by recomputation)
    weight_once_per_step: bool
    # a norm's output quantized by the norm (TE's LayerNormLinear: "normed_input" passes); False:
    # the norm apart (te.Linear after it), its output cast as any input
    fused_norm: bool = True
    # the FFN's down-projection input written in FP8 by the activation's kernel (TE's LayerNormMLP): priced
    # as a norm-written input ("normed_input" passes); False: the activation apart, its output cast as any input
    fused_activation: bool = False


#: Each recipe's casts (None: not stated by any source found: DeepSeek-V3's kernels are its own).
CAST_PASSES: dict[str, Casts | None] = {
    "tensorwise": Casts(_TORCHAO_TENSORWISE, "always", False),
    "rowwise": Casts(_TORCHAO_ROWWISE, "always", False),
    "current": Casts(_TE_CURRENT, "tn_only", True),
    "delayed": Casts(_TE_DELAYED, "tn_only", True),
    "blockwise": None,
    "mxfp8": Casts(_TE_MXFP8, "tn_only", True),
    "nvfp4": Casts(_TE_NVFP4, "tn_only", True),
}


#: A framework's own casts for a recipe, in place of CAST_PASSES' (the FP8 library the framework
#: runs): FSDP2 (torchtitan) runs MXFP8 as torchao's MXLinear, not Transformer Engine's.
FRAMEWORK_CAST_PASSES: dict[tuple[str, str], Casts] = {
    ("mxfp8", "fsdp2"): Casts(_TORCHAO_MXFP8, "always", False),
}


def _charged(gemms: list, casts: Casts, *, needs_tn: bool, microbatches: int, tp: int, sequence_parallel: bool,
             rerun: bool, fp8_params: bool = False) -> Iterator[tuple[CastPass, float, float]]:
    """Each pass the recipe runs beside one run of a leaf's FP8 GEMMs (kernel_shapes.Gemm, forward
    shapes: the input M x K, the weight K x N, the output M x N), with the elements it covers and how
    many tensors it runs on. Each distinct input (rows, inner width) is cast once (two inputs of one
    shape in a leaf, an FFN with d_ff = d, count once: an understatement); a weight cast once a step is
    spread over the step's micro-batches; rerun: a recomputed forward (no backward, no cached weight's
    cast); fp8_params: FP8 parameters (FP8_PARAM_RECIPES) or FSDP2's float8 all-gather
    (layout/fp8_options.py), whose weight is not cast (its transpose still made)."""
    elements = dict.fromkeys(("input", "normed_input", "weight", "grad", "grad_input", "grad_weight"), 0)
    tensors = dict(elements)
    seen: set = set()
    for gemm in gemms:
        if (gemm.m, gemm.k) not in seen:
            seen.add((gemm.m, gemm.k))
            written = (gemm.normed_input and casts.fused_norm) or (gemm.activated_input and casts.fused_activation)
            name = "normed_input" if written else "input"
            elements[name] += gemm.m * gemm.k * gemm.count
            tensors[name] += gemm.count
        for name, size in (("weight", gemm.k * gemm.n), ("grad", gemm.m * gemm.n), ("grad_input", gemm.m * gemm.k),
                           ("grad_weight", gemm.k * gemm.n)):
            elements[name] += size * gemm.count
            tensors[name] += gemm.count
    sp = sequence_parallel and tp > 1
    for one in casts.passes:
        if one.what == "transpose" and casts.transposes == "tn_only" and not needs_tn:
            continue
        if one.when == ("no_sp" if sp else "sp") or (rerun and one.phase == "backward"):
            continue
        count: float = elements[one.tensor]
        runs: float = tensors[one.tensor]
        if one.tensor == "weight" and fp8_params and one.what != "transpose":
            continue  # FP8 parameters (or FSDP2's float8 all-gather): the weight is FP8 already
        if one.tensor == "weight" and casts.weight_once_per_step:
            if rerun:
                continue
            count /= microbatches
            runs /= microbatches
        if sp and one.tensor == "normed_input" and one.what != "transpose":
            count /= tp  # quantized on the rank's tokens before the FP8 all-gather
        yield one, count, runs


def cast_bytes(gemms: list, casts: Casts, *, needs_tn: bool, microbatches: int = 1, tp: int = 1,
               sequence_parallel: bool = False, rerun: bool = False,
               fp8_params: bool = False) -> tuple[float, float]:
    """(forward, backward) bytes of the recipe's casts beside one run of a leaf's FP8 GEMMs (_charged)."""
    totals = {"forward": 0.0, "backward": 0.0}
    for one, count, _ in _charged(gemms, casts, needs_tn=needs_tn, microbatches=microbatches, tp=tp,
                                  sequence_parallel=sequence_parallel, rerun=rerun, fp8_params=fp8_params):
        totals[one.phase] += one.bytes_per_element * count
    return totals["forward"], totals["backward"]


def cast_kernels(gemms: list, casts: Casts, *, needs_tn: bool, microbatches: int = 1, tp: int = 1,
                 sequence_parallel: bool = False, rerun: bool = False,
                 fp8_params: bool = False) -> tuple[float, float]:
    """(forward, backward) kernel launches of the recipe's casts beside one run of a leaf's FP8
    GEMMs (_charged; a weight cast once a step counts 1 / micro-batches). Not charged as time: the
    kernel model times the casts as one memory-bound kernel a leaf (layout/kernel_step.py)."""
    totals = {"forward": 0.0, "backward": 0.0}
    for one, _, runs in _charged(gemms, casts, needs_tn=needs_tn, microbatches=microbatches, tp=tp,
                                 sequence_parallel=sequence_parallel, rerun=rerun, fp8_params=fp8_params):
        totals[one.phase] += runs if one.kernel else 0
    return totals["forward"], totals["backward"]
