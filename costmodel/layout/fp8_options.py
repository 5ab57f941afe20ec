"""The FP8 options' checks (Layout.__post_init__): which framework runs which recipe option
(--fp8-param-gather, --tp-only-amax-red, --fp8 delayed). Kept apart from layout/spec.py, which
holds the layout's fields and the other checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, show
from .fp8_layers import check_mixed_precision


def check_fp8_options(layout: Any) -> None:
    """Megatron-Core's FP8 parameters (--fp8-param-gather) and delayed scaling's amax group
    (--tp-only-amax-red): on Megatron-Core, the first under its distributed optimizer with a
    per-tensor Transformer Engine recipe (layout/fp8.py FP8_PARAM_RECIPES), the second with delayed
    scaling."""
    for name in ("fp8_param_gather", "tp_only_amax_red"):
        if not isinstance(getattr(layout, name), bool):
            raise ConfigError(f"layout: {name} must be true or false, got {show(getattr(layout, name))}.")
    if layout.fp8_param_gather:
        from .fp8 import FP8_PARAM_RECIPES

        if layout.fp8 not in FP8_PARAM_RECIPES and layout.framework != "fsdp2":
            raise ConfigError(f"layout: FP8 parameters (--fp8-param-gather) are modelled with --fp8 "
                              f"{' or '.join(FP8_PARAM_RECIPES)} (Transformer Engine's per-tensor Float8Tensor); "
                              f"here {'--fp8 ' + str(layout.fp8) if layout.fp8 else 'no --fp8'}.")
        if layout.framework == "fsdp2":
            check_fsdp_float8_all_gather(layout)
        elif layout.framework != "megatron" or layout.zero not in (1, 2):
            raise ConfigError("layout: --fp8-param-gather is Megatron-Core's, on its distributed optimizer "
                              "(--framework megatron --zero 1), and torchao's FSDP2 float8 all-gather "
                              f"(--framework fsdp2 --fp8 tensorwise); here {layout.framework} with --zero {layout.zero}.")
    if layout.tp_only_amax_red and (layout.fp8 != "delayed" or layout.framework != "megatron"):
        raise ConfigError("layout: --tp-only-amax-red is Megatron-Core's amax reduction group of delayed "
                          "scaling (--framework megatron --fp8 delayed).")
    if layout.fp8_autocast is not None or (layout.fp8 == "delayed" and layout.framework != "megatron"):
        check_fp8_autocast(layout)
    check_mixed_precision(layout)
    if layout.framework == "deepspeed" and layout.fp8 in TE_ONLY_RECIPES:
        # DeepSpeed with Transformer Engine (accelerate's deepspeed plugin): no source read here, as for delayed
        # (check_fp8_autocast); the casts would have been Megatron-Core's, unsaid
        raise ConfigError(f"layout: --fp8 {layout.fp8} is Transformer Engine's recipe as Megatron-Core runs it"
                          + (" (and torchao's MXLinear under --framework fsdp2)" if layout.fp8 == "mxfp8" else "")
                          + "; DeepSpeed running Transformer Engine is not modelled: use --framework megatron, or "
                          "--fp8 tensorwise or rowwise (torchao's Float8Linear, on any model's linear layers).")


#: Recipes only Transformer Engine runs (layout/fp8.py RECIPES' current, blockwise, mxfp8, nvfp4; delayed has
#: its own check): modelled as Megatron-Core's (and mxfp8 as torchao's under fsdp2), not under DeepSpeed.
TE_ONLY_RECIPES = ("current", "blockwise", "mxfp8", "nvfp4")


#: torchao's FSDP2 float8 all-gather (torchtitan's [float8] enable_fsdp_float8_all_gather and
#: precompute_float8_dynamic_scale_for_fsdp; --fp8-param-gather under --framework fsdp2). torchao
#: c0b0731d8 (the last change to the file before torchtitan 3faaa1a0d's 2024-08-23 tables)
#: torchao/float8/fsdp_utils.py: each Float8Linear weight is a WeightWithDynamicFloat8CastTensor
#: whose fsdp_pre_all_gather casts the rank's shard to float8 with the precomputed scale
#: (hp_tensor_and_scale_to_float8, lines 203-220) and hands FSDP2 `(float8_tensor._data,)` to gather,
#: the scale as metadata (not gathered); fsdp_post_all_gather wraps the gathered bytes as a Float8Tensor
#: (lines 222-253), so the layer's forward runs on it with no weight cast (float8_linear.py lines 278-316,
#: cast_weight_to_float8: "if isinstance(self.weight, Float8Tensor):  # cast by FSDP").
#: precompute_float8_dynamic_scale_for_fsdp (lines 30-72), once a step after the optimizer: one torch._foreach_norm(ord=inf) over every float8
#: weight's shard and one all-reduce of the stacked amaxes (4 bytes a weight), not charged (small).
#: torchtitan 3faaa1a0d torchtitan/float8.py: on only where FSDP is (dp_enabled and dp_type 'fsdp'),
#: every nn.Linear but 'output' converted. So: the layers' linear weights are all-gathered at
#: FP8_PARAM_BYTES an element (layout/communication.py _data_parallel), their forward casts do not run
#: (the backward's column-major copy does: layout/fp8_casts.py _charged). Not charged: the shard's cast
#: (1/dp of the weight, every gather) and the gathered layer's buffer at one byte (rank.py buffers
#: keeps the bf16 one: an overstatement; fsdp_copies.edge_seconds times the first layer's gather at the
#: dtype's bytes, as before); the sharded parameters stay as FSDP2 holds them (no
#: Megatron-style saving). Without precomputed scales each weight's gather would all-reduce its own
#: amax: not modelled (the rows that set one set both).
FSDP_FLOAT8_RECIPES = ("tensorwise",)  # torchao's WeightWithDynamicFloat8CastTensor: dynamic tensorwise only


def check_fsdp_float8_all_gather(layout: Any) -> None:
    """--fp8-param-gather under --framework fsdp2: torchao's float8 all-gather (FSDP_FLOAT8_RECIPES),
    under FSDP, without expert parallelism (the experts' own group is not modelled with it)."""
    if layout.fp8 not in FSDP_FLOAT8_RECIPES:
        raise ConfigError("layout: --fp8-param-gather under --framework fsdp2 is torchao's float8 all-gather "
                          f"(enable_fsdp_float8_all_gather), for --fp8 {' or '.join(FSDP_FLOAT8_RECIPES)}; "
                          f"here {'--fp8 ' + str(layout.fp8) if layout.fp8 else 'no --fp8'}.")
    if layout.ep > 1:
        raise ConfigError("layout: torchao's FSDP2 float8 all-gather (--fp8-param-gather) is modelled without "
                          f"expert parallelism (the experts' own group); here --ep {layout.ep}.")


def fp8_parameters_held(layout: Any) -> bool:
    """Whether the layers' linear weights reach their GEMMs in FP8 (no forward weight cast): Megatron-Core's
    FP8 parameters, or torchao's FSDP2 float8 all-gather where FSDP shards over more than one rank
    (torchtitan 3faaa1a0d torchtitan/float8.py turns it on only where dp_enabled and dp_type is 'fsdp')."""
    return layout.fp8_param_gather and (layout.framework != "fsdp2" or layout.shard_ranks > 1)


def check_fp8_autocast(layout: Any) -> None:
    """--fp8-autocast: the training script's fp8_autocast scope (FP8_AUTOCASTS), the one way to
    run --fp8 delayed outside Megatron-Core (which opens its own a model chunk), on FSDP2 at PP 1."""
    from ..spec import FP8_AUTOCASTS as CHOICES

    scope = layout.fp8_autocast
    if scope is not None and scope not in FP8_AUTOCASTS:
        raise ConfigError(f"layout: fp8_autocast must be {CHOICES.listed()}, got {show(scope)}.")
    if scope is not None and (layout.fp8 != "delayed" or layout.framework == "megatron"):
        raise ConfigError("layout: --fp8-autocast is where the training script opens Transformer Engine's "
                          "fp8_autocast for delayed scaling (--fp8 delayed) outside Megatron-Core, which opens "
                          f"one a model chunk itself; here --framework {layout.framework} with "
                          f"{'--fp8 ' + str(layout.fp8) if layout.fp8 else 'no --fp8'}.")
    if layout.framework != "fsdp2":
        # DeepSpeed with Transformer Engine (accelerate's deepspeed plugin): no source read here.
        raise ConfigError(f"layout: --fp8 delayed is modelled under Megatron-Core (an fp8_autocast a model chunk) "
                          f"and under --framework fsdp2 with --fp8-autocast; under {layout.framework} it is not "
                          "modelled; use --fp8 tensorwise or rowwise, or --framework megatron.")
    if scope is None:
        # accelerate's apply_fp8_autowrap (utils/transformer_engine.py, 0fade1b) opens one autocast
        # around the forward, but its convert_model turns every nn.Linear whose sizes are multiples of
        # 16 into te.Linear, the output head included: a head in FP8, not modelled.
        raise ConfigError("layout: --fp8 delayed under fsdp2 runs under the training script's fp8_autocast; "
                          f"state where with --fp8-autocast ({CHOICES.listed()}); accelerate's (one "
                          "autocast over the forward, the head in FP8 too) is not modelled.")
    if layout.pp > 1:
        raise ConfigError("layout: --fp8-autocast is one autocast over the whole model's forward; it is "
                          f"modelled at --pp 1 (here {layout.pp}).")
    if FP8_AUTOCASTS[scope].tp_one and layout.tp > 1:
        raise ConfigError(f"layout: --fp8-autocast {scope} is Transformer Engine's TransformerLayer built with no "
                          f"tensor-parallel group; it is modelled at --tp 1 (here {layout.tp}).")


@dataclass(frozen=True)
class AutocastScope:
    """How a training script's fp8_autocast runs delayed scaling outside Megatron-Core."""

    # delayed scaling's all-reduces of the forward amaxes a micro-batch (one at each autocast exit
    # with gradients enabled), and of the backward amaxes (one, in the first FP8 module's backward)
    forward_reductions: int
    backward_reductions: int
    # each te.Linear's input norm apart from it (not Transformer Engine's fused LayerNormLinear)
    fused_norm: bool
    # the weights cast once a step (is_first_microbatch passed) or every micro-batch
    weight_once_per_step: bool
    source: str
    # the output head a Transformer Engine module under the autocast: its GEMMs in FP8, its input the final
    # norm's output written in FP8 by the module (fused_norm), its weight cast every micro-batch unless
    # head_weight_once_per_step (the script passes the head no is_first_microbatch)
    head_fp8: bool = False
    head_weight_once_per_step: bool = False
    # the FFN's down projection reads the activation's output in FP8, written by the activation's own kernel
    # (Transformer Engine's LayerNormMLP), not cast apart
    fused_activation: bool = False
    # the layers' modules built without a tensor-parallel group: modelled at --tp 1 only
    tp_one: bool = False


FP8_AUTOCASTS = {
    "forward-and-loss": AutocastScope(
        2, 1, False, False,
        "mosaicml/composer v0.17.2 (llm-foundry 5e85bd62d's setup.py: mosaicml>=0.17.2,<0.18) "
        "trainer/trainer.py _train_microbatch: `with _get_precision_context(...)` around "
        "`self.state.outputs = self.state.model(self.state.batch)` (lines 2415-2417) and again around "
        "`self.state.loss = self._original_model.loss(...)` (2438-2440), backward outside; "
        "core/precision.py get_precision_context: amp_fp8 is `te.fp8_autocast(enabled=True, "
        "fp8_recipe=DelayedScaling(HYBRID, amax_history_len 16, 'max'))`, no fp8_group, so the amaxes "
        "are all-reduced over the default group, every rank. Transformer Engine (d0067d0 "
        "quantization.py) keeps the forward amaxes in a static buffer (add_fp8_tensors_to_global_buffer, "
        "each module once) and autocast_exit runs reduce_and_update_fp8_tensors(forward=True) at every "
        "outermost exit with gradients enabled, the loss's included: two all-reduces of the forward "
        "amaxes a micro-batch (TE v0.10, llm-foundry's install: the same, _amax_forward_global_reduce_func "
        "is kept set and called at each autocast exit, fp8.py lines 309-313), and one of the backward "
        "amaxes (the first module's backward, base.py lines 114-121). llm-foundry 5e85bd62d fc.py: "
        "fc_type 'te' is te.Linear for Wqkv, out_proj, up_proj and down_proj, the norms "
        "(low_precision_layernorm) apart, the tied head an F.linear in bf16 (modeling_mpt.py); "
        "attention.py and ffn.py call them with no is_first_microbatch, so Transformer Engine casts "
        "each weight at every forward (TE v0.10 base.py prepare_forward: update_weight_scale_inv "
        "'is_first_microbatch is None or is_first_microbatch')"),
    "te-transformer-layer": AutocastScope(
        1, 1, True, True,
        "AMD-AIG-AIMA/pytorch-training-benchmark c295aaee train_fsdp.py: one `with torch.amp.autocast('cuda', "
        "torch.bfloat16), te.fp8_autocast(enabled, fp8_recipe=DelayedScaling(Format.HYBRID, amax_history_len=16, "
        "amax_compute_algo='max'), fp8_group=all_worker)` around `logits = model(input, is_first_microbatch="
        "step_idx % grad_accumlate_pre_steps == 0)` and the cross-entropy, backward outside: one forward amax "
        "all-reduce a micro-batch (the autocast's exit) and one backward (the first FP8 module's); llama.py "
        "Fp8LLaMA / mistral.py Fp8Mistral: each block a te.TransformerLayer (fuse_qkv_params, RMSNorm, swiglu, "
        "bias False, no tp_group) given is_first_microbatch, the head te.LayerNormLinear(d, V, "
        "normalization='RMSNorm') called as `self.norm_lm_head(x)` with none. Transformer Engine 1.11 (the "
        "rocm/pytorch-training v25.2 container's; ROCm/TransformerEngine branch ifu_release_v1.11, 8f717dc2): "
        "TransformerLayer builds its attention's QKV as a LayerNormLinear and its projection as a Linear, its "
        "FFN a LayerNormMLP (transformer.py line 399, attention.py lines 8449 and 8537); fp8_autocast_exit "
        "reduces the forward amaxes at the outermost exit with gradients enabled (fp8.py lines 437-444); LayerNormLinear and LayerNormMLP launch the norm "
        "writing FP8 itself (_apply_normalization with an FP8 output, module/layernorm_linear.py line 137, "
        "layernorm_mlp.py line 158) and make its transpose in backward (tex.fp8_transpose, layernorm_linear.py line "
        "591, layernorm_mlp.py line 937); LayerNormMLP's swiglu writes FC2's input in FP8 (activation_func with the GEMM2_INPUT meta, "
        "layernorm_mlp.py line 269), transposed in backward (line 667); the weight cast + transpose into "
        "a workspace when is_first_microbatch is None or True, cached under 'weight' otherwise "
        "(layernorm_linear.py lines 1183-1188: update_workspace, cache_name; layernorm_mlp.py line 1485); the output gradient cast + "
        "transposed (grad_output_preprocess); dgrad and wgrad FP8 GEMMs (override_linear_precision's "
        "default (False, False, False)); the attention core (DotProductAttention), softmax, RoPE and the "
        "loss outside TE's FP8 (bf16, the loss as torch autocast runs cross_entropy)",
        head_fp8=True, fused_activation=True, tp_one=True),
}


def head_in_fp8(layout: Any) -> bool:
    """Whether the layout's training script runs the output head's GEMMs in FP8 (FP8_AUTOCASTS' head_fp8)."""
    return layout.fp8_autocast is not None and FP8_AUTOCASTS[layout.fp8_autocast].head_fp8
