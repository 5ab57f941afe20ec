"""FP8 training recipes as data (--fp8): which matrix products run at the FP8 peak, and what
each recipe keeps beside the bf16 training state. Each row names its source.

What runs in FP8, in every recipe: the layers' linear products, forward and backward (Q/K/V,
attention output, the FFN and the routed experts: costmodel/blocks/' QKVProjection,
AttentionOutput, FeedForward, Experts), at the hardware file's flops_per_s["fp8"]. What stays in
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
modelled: the casts' own time, and FSDP2's FP8 all-gather (torchao enable_fsdp_float8_all_gather). torchao's tensorwise and rowwise save the
bf16 input and weight and cast again in backward: measured, validate/fp8.py (FINDINGS 22.5).
"""

from __future__ import annotations

from dataclasses import dataclass


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


RECIPES = {
    "tensorwise": Recipe(
        "tensorwise", "one fp32 scale per tensor, computed from its amax at each cast (dynamic)", 0, None,
        "torchao float8 training (Float8LinearConfig, recipe 'tensorwise'): weights, inputs and output "
        "gradients cast to float8 per product with a dynamic per-tensor scale; no copy is kept"),
    "rowwise": Recipe(
        "rowwise", "one fp32 scale per row of each operand (dynamic)", 0, None,
        "torchao float8 training (recipe 'rowwise'): per-row scales, cast per product; no copy is kept"),
    "blockwise": Recipe(
        "blockwise", "activations per 1 x 128 tile, weights per 128 x 128 block (fp32 scales)",
        1 + 4 / (128 * 128), 2,
        "DeepSeek-V3 technical report, section 3.3: fine-grained (1 x 128 / 128 x 128) quantization; the "
        "FP8 weights with one fp32 scale a 128 x 128 block; fp32 master weights and gradients; AdamW's "
        "moments in bf16 (3.3.3); activations cached for the linear layers' backward in FP8, the input "
        "of the linear after attention in E5M6, the MoE SwiGLU's input in FP8 and its output "
        "recomputed (3.3.3, Low-Precision Activation)",
        caches_activations=True),
}
