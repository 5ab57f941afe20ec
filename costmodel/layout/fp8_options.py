"""The FP8 options' checks (Layout.__post_init__): which framework runs which recipe option
(--fp8-param-gather, --tp-only-amax-red, --fp8 delayed). Kept apart from layout/spec.py, which
holds the layout's fields and the other checks."""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, show


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

        if layout.fp8 not in FP8_PARAM_RECIPES:
            raise ConfigError(f"layout: FP8 parameters (--fp8-param-gather) are modelled with --fp8 "
                              f"{' or '.join(FP8_PARAM_RECIPES)} (Transformer Engine's per-tensor Float8Tensor); "
                              f"here {'--fp8 ' + str(layout.fp8) if layout.fp8 else 'no --fp8'}.")
        if layout.framework != "megatron" or layout.zero not in (1, 2):
            raise ConfigError("layout: --fp8-param-gather is Megatron-Core's, on its distributed optimizer "
                              f"(--framework megatron --zero 1); here {layout.framework} with --zero {layout.zero}.")
    if layout.tp_only_amax_red and (layout.fp8 != "delayed" or layout.framework != "megatron"):
        raise ConfigError("layout: --tp-only-amax-red is Megatron-Core's amax reduction group of delayed "
                          "scaling (--framework megatron --fp8 delayed).")
    if layout.fp8 == "delayed" and layout.framework != "megatron":
        # Outside Megatron-Core, Transformer Engine's DelayedScaling runs under the training script's
        # fp8_autocast: accelerate's apply_fp8_autowrap (utils/transformer_engine.py, 0fade1b) wraps the
        # whole forward in one, with no fp8_group, so TE all-reduces the amaxes over the default group,
        # every rank (quantization.py reduce_and_update_fp8_tensors, d0067d0), and its convert_model
        # turns every nn.Linear whose sizes are multiples of 16 into te.Linear, the output head included:
        # neither is modelled here.
        raise ConfigError(f"layout: --fp8 delayed is modelled as Megatron-Core runs it (an fp8_autocast a "
                          f"model chunk, amaxes all-reduced over TP x DP x CP); under {layout.framework} "
                          "Transformer Engine's delayed scaling is the training script's (accelerate: one "
                          "autocast over the forward, amaxes over every rank, the head in FP8 too), not "
                          "modelled; use --framework megatron, or --fp8 current or tensorwise.")
