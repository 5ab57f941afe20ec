"""Which linear layers a named mixed-precision configuration keeps out of its low-precision recipe
(session 44, wt44_moetrain): a Megatron-Bridge MixedPrecisionConfig's first_last_layers_bf16 with
num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16, and a Transformer Engine quantization recipe
file's bf16 matchers. Each leaf whose products the --fp8 recipe runs (roofline_parts.runs_fp8) runs
low_precision_share of its layers' runs in the recipe and the rest at the activation dtype's rate, with no
recipe casts (layout/kernel_step.py and roofline_parts.py blend the two). Layout.mixed_precision names the
configuration (None: every linear leaf in the recipe, as before); it is refused on a model without a hybrid
layer pattern (check_mixed_precision_model) and under async TP or TE's userbuffers ops (async_tp.stage_passes: one
GEMM timer a leaf).

Megatron-Core decides per layer (megatron/core/fp8_utils.py is_first_last_bf16_layer: a layer number below
num_layers_at_start_in_bf16 or at or above num_layers - num_layers_at_end_in_bf16 builds its linears without
the FP8/FP4 context); a hybrid model's layers are numbered along its pattern (hybrid_override_pattern, one
Mamba, attention or MoE layer a character), so the end layers are the pattern's last characters. Not
modelled: a matcher that moves a module to another block-scaled recipe (Nemotron 3 Super's Mamba out_proj
in MXFP8 under NVFP4: the mixer's in_proj and out_proj are one leaf here, left in the layout's recipe, an
overstatement of the speed), and the weights' bytes (memory keeps the layout's recipe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, show


@dataclass(frozen=True)
class MixedPrecision:
    """One named configuration: its recipe (layout/fp8.py RECIPES), the decoder layers kept in bf16 at
    the start and the end of the stack, the leaf names (a path's last two parts) kept in bf16 in every
    layer, the path prefixes kept in bf16 whole, and the source."""

    recipe: str
    first_layers: int
    last_layers: int
    bf16_leaves: tuple[str, ...]
    bf16_prefixes: tuple[str, ...]
    source: str


MIXED_PRECISION = {
    "nemotron_3_super_bf16_with_nvfp4_mixed": MixedPrecision(
        "nvfp4", 0, 14, ("attention.qkv", "attention.out", "moe.latent_in", "moe.latent_out"), ("mtp.",),
        "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/mixed_precision.py "
        "nemotron_3_super_bf16_with_nvfp4_mixed (bf16_with_nvfp4_mixed; first_last_layers_bf16 True, "
        "num_layers_at_end_in_bf16 14; the same at 21d102f5e, 26.04-alpha.rc1 and 067f987d), set on Nemotron 3 "
        "Super's nvfp4 perf recipes with the recipe file te_quant.cfg (scripts/performance/configs/nemotronh/ at "
        "21d102f5e, added by 8625e4a38 2026-04-07; src/megatron/bridge/perf_recipes/nemotronh/ at 067f987d): "
        "matchers attn_qkv_bf16 '*.linear_qkv', attn_proj_bf16 '*.linear_proj', latent_bf16 "
        "'*mlp.fc[12]_latent_proj', mtp_bf16 'mtp.*' (config bf16), mamba_outproj_mxfp8 '*mixer.out_proj' "
        "(config mxfp8: not modelled, see the module's note)"),
}


def check_mixed_precision(layout: Any) -> None:
    """A named configuration must be known, run under its own recipe, and (its end layers being the
    last stage's) without pipeline stages."""
    name = layout.mixed_precision
    if name is None:
        return
    if not isinstance(name, str) or name not in MIXED_PRECISION:
        raise ConfigError(f"layout: mixed_precision must be one of {', '.join(MIXED_PRECISION)}; got {show(name)}.")
    recipe = MIXED_PRECISION[name].recipe
    if layout.fp8 != recipe:
        raise ConfigError(f"layout: mixed_precision {name} is a --fp8 {recipe} configuration; here "
                          f"{'--fp8 ' + str(layout.fp8) if layout.fp8 else 'no --fp8'}.")
    if layout.pp > 1:
        raise ConfigError(f"layout: mixed_precision {name} keeps the stack's end layers in bf16, modelled "
                          f"without pipeline parallelism (pp 1); here pp {layout.pp}.")


def check_mixed_precision_model(cfg: Any, layout: Any) -> None:
    """A named configuration's layers are numbered along a hybrid layer pattern (Nemotron-H's Mamba, attention
    and MoE layers: low_precision_share reads the leaves 'layer.decoder.<kind>'): a model without one (a dense or
    MoE decoder, whose leaves are 'layer.decoder' and 'self_attention.*') is refused, not run wholly in the recipe."""
    if layout.mixed_precision is not None and not cfg.layer_pattern:
        raise ConfigError(f"layout: mixed_precision {layout.mixed_precision} is modelled on a hybrid layer pattern "
                          f"(Nemotron-H's Mamba, attention and MoE layers); {cfg.name} has none.")


def low_precision_share(leaf: dict[str, Any], estimate: Any, runs_fp8: bool) -> float:
    """The share of a leaf's runs in the layout's --fp8 recipe: 0 where it runs none (runs_fp8 False),
    1 without a mixed-precision configuration; else 0 for a leaf the configuration keeps in bf16, and
    for a decoder layer's leaf its layers outside the kept first and last layers over all of its layers."""
    if not runs_fp8:
        return 0.0
    name = estimate.layout.mixed_precision
    if name is None:
        return 1.0
    check_mixed_precision_model(estimate.cfg, estimate.layout)  # an estimate built without Layout.check
    mixed = MIXED_PRECISION[name]
    path = leaf["path"]
    if path.startswith(mixed.bf16_prefixes) or ".".join(path.split(".")[-2:]) in mixed.bf16_leaves:
        return 0.0
    key = leaf["key"]
    if not key.startswith("layer.decoder."):
        return 1.0
    pattern = estimate.cfg.layer_pattern  # check_mixed_precision_model: a hybrid model's
    kind = key.split(".")[-1]
    layers = [i for i, k in enumerate(pattern) if k == kind]
    if not layers:
        raise ConfigError(f"layout: mixed_precision {name}: the model's layer pattern has no {kind!r} layer.")
    end = len(pattern) - mixed.last_layers
    kept = sum(i < mixed.first_layers or i >= end for i in layers)
    return (len(layers) - kept) / len(layers)
