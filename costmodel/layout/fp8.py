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

The block-scaled recipes (mxfp8, nvfp4: Transformer Engine's MXFP8BlockScaling and NVFP4BlockScaling,
Megatron-Bridge's fp8_mx and nvfp4) run all three GEMMs of a linear (fprop, dgrad, wgrad) on
Blackwell's block-scaled tensor cores. A scale covers a block of one row (or one column), so the
column-wise copy wgrad and dgrad need is its own quantization, not a transpose: each operand is cast
both ways from bf16 in one kernel (layout/fp8_casts.py BLOCK_FORMATS). Where the hardware file has no measured efficiency
for the recipe's peak, the GEMMs take the FP8 one's (hardware_schema.EFFICIENCY_STAND_IN: a stated
assumption, not a measurement). The layers and modules a named Megatron-Bridge configuration keeps in
bf16 (Nemotron-3 Super's nvfp4 perf recipe: its last 14 layers, attention and latent projections and MTP
layers) are Layout.mixed_precision's (layout/fp8_layers.py; its Mamba out_proj in MXFP8 is not: that leaf
stays FP4, an overstatement of the speed). Not modelled: the parameters held in MXFP8 under
fp8_param_gather (bf16_with_mxfp8_mixed), nor its all-gathers' bytes.
"""

from __future__ import annotations

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

    @property
    def gemm_operand_bytes(self) -> float:
        """Bytes an element of a linear GEMM's operands takes after the recipe's casts (KernelTimer's
        operand_bytes): Transformer Engine's fprop reads the quantized input and weight
        (general_gemm(weightmat, inputmat_total, out_dtype=activation_dtype), module/linear.py line 309 at
        v2.9), dgrad the quantized weight and output gradient (line 712, out_dtype=ctx.activation_dtype),
        wgrad the quantized input and output gradient (line 875); torchao's float8 and DeepSeek's blockwise
        run their products on FP8 operands alike. One byte an FP8 element (its per-tensor, per-row or
        per-tile fp32 scales left out: at most 4 bytes a 128 elements); a block-scaled format's data and
        its share of a scale (layout/fp8_casts.py BLOCK_FORMATS). The output stays in the data dtype."""
        from .fp8_casts import BLOCK_FORMATS

        block = BLOCK_FORMATS.get(self.name)
        return block.bytes_per_element if block else FP8_ELEMENT_BYTES


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


#: What delayed scaling keeps per FP8 GEMM (TE v2.9 module/base.py lines 765-767: "Max. number of
#: fp8 tensors per GEMM = 3 (input, weight, output) for fwd and 2 (grad_output and grad_input) for
#: bwd"; quantization.py DelayedScalingRecipeState lines 1039-1077: per mode an fp32 scale a
#: quantizer and an fp32 amax history of amax_history_len x quantizers).
QUANTIZERS_PER_GEMM = {"forward": 3, "backward": 2}
FP32_BYTES = DTYPE_BYTES["fp32"]
FP8_ELEMENT_BYTES = 1  # E4M3 and E5M2 alike

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
