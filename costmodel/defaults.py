"""What a framework implies for the code it runs, over the one set of defaults (costmodel/spec.py).

estimate, simulate, plan and sweep used to default differently (plan to sdpa and the H100, the
others to eager and the A100). They now read spec.py's:

  hardware   h100-sxm: the GPU the runs people plan today are on (plan's default already)
  dtype      bf16
  impl       hf, the code the activation profile was measured on (validate/FINDINGS.md) ...
  attention  eager, ... with its kernel, for one device and no framework
  recompute  none

A framework implies the code it runs (issue 22, defect 4): Megatron-LM runs its own layers (the
"megatron" activation profile: Korthikanti et al. 2022's accounting, a fused SwiGLU) with a fused
attention kernel (Transformer Engine's or flash, never an n x n matrix); DeepSpeed and FSDP2 run
the Hugging Face model they are given, whose default kernel in transformers 5.24 is sdpa
(PreTrainedModel._check_and_adjust_attn_implementation picks sdpa when torch has it, and eager for a
class without an sdpa path: gpt-oss, MPT, GPT-Neo, facts.json's sdpa_supported). An --impl or
--attention the user gives always wins.

Not every Hugging Face class runs every kernel (facts.json, from each class's attributes in
transformers 5.24: sdpa_supported is _supports_sdpa, False for Gemma 2, gpt-oss, BLOOM, MPT and
GPT-Neo; flash_supported is _supports_flash_attn, False for BLOOM, MPT, T5 and Llama 4). Asked for
none, transformers picks sdpa and falls back to eager where the class has none
(modeling_utils.py get_correct_attn_implementation, _sdpa_can_dispatch), so a framework's default
the class cannot run becomes sdpa, else eager, and the output says so (fallback_note): DeepSpeed's
and FSDP2's sdpa is eager for Gemma 2, Megatron's flash under --impl hf is sdpa for T5. A typed
--attention sdpa the class refuses is refused (tree.CostModel); a typed flash is not (facts.py
flash_supported). The flags are the transformers class's: under --impl megatron (Megatron-Core
and Transformer Engine run their own attention) they do not apply.
"""

from __future__ import annotations

from typing import Any

from .facts import facts_for
from .spec import (DEFAULT_ATTENTION, DEFAULT_DTYPE, DEFAULT_HARDWARE, DEFAULT_IMPL,  # noqa: F401 (re-exported)
                   DEFAULT_PRECISION, DEFAULT_RECOMPUTE, DEFAULT_SERVE_ATTENTION)

#: framework -> (activation profile, attention kernel) it implies, each with its source above.
FRAMEWORK_CODE = {
    "megatron": ("megatron", "flash"),
    "deepspeed": ("hf", "sdpa"),
    "fsdp2": ("hf", "sdpa"),
}


def implied(framework: str | None, impl: str | None = None, attention: str | None = None,
            family: str | None = None, flash: bool = True) -> dict[str, str]:
    """impl and attention: the ones given, else the framework's, else the defaults above; a default
    attention the family's code cannot run is the one that code falls back to (class_attention).
    flash False (the GPU runs no FlashAttention: Hardware.runs_flash, Volta and Turing): Megatron's
    default flash is eager, Transformer Engine's unfused attention there (kernel_facts.json
    "flash_attention_missing", transformer_engine)."""
    framework_impl, framework_attention = FRAMEWORK_CODE.get(framework or "", (DEFAULT_IMPL, DEFAULT_ATTENTION))
    if not flash and framework_attention == "flash":
        framework_attention = "eager"
    chosen = {"impl": impl or framework_impl, "attention": attention or framework_attention}
    if attention is None and family is not None:
        chosen["attention"] = class_attention(chosen["impl"], family, chosen["attention"])
    return chosen


def attention_source(framework: str | None, impl: str | None, attention: str | None, family: str | None,
                     flash: bool = True, inference: bool = False) -> str | None:
    """Why simulate times the attention `implied` picks, for its output (None where --attention was typed):
    without a layout, eager, the path the memory and op counts are proven against, where transformers
    itself (and a deepspeed or fsdp2 layout) runs sdpa; with one, its framework's code; a class or a GPU
    that cannot run that default, the kernel it falls back to. The defaults stay two (session 31's choice,
    docs/time.md): a one-GPU simulate is the eager reference, a layout the framework's code. An inference
    layout names no framework (--framework is a training option): its code is transformers' own."""
    if attention is not None:
        return None
    chosen = implied(framework, impl, None, family, flash)["attention"]
    stated = implied(framework, impl, None, None, flash)["attention"]  # before the class's fallback
    if chosen != stated:
        return (f"{chosen} attention: the {family} class runs no {stated} (transformers falls back to {chosen}; "
                f"facts.json)")
    if framework is None and family is not None and not runs_attention(impl or DEFAULT_IMPL, family, "sdpa"):
        code = f"the {family} class" if (impl or DEFAULT_IMPL) == "hf" else f"--impl {impl}'s code"
        return f"eager attention: the default without a layout ({code} runs no sdpa either; facts.json)"
    if framework is None:
        return ("eager attention: the default without a layout (transformers' eager path, which the memory and op "
                "counts are proven against); transformers itself, and a layout, run sdpa: --attention sdpa times it")
    if inference:
        return f"{chosen} attention: an inference layout's default, transformers' own kernel"
    if chosen != FRAMEWORK_CODE[framework][1]:
        return f"{chosen} attention: {framework}'s {FRAMEWORK_CODE[framework][1]} does not run on this GPU"
    return f"{chosen} attention: the {framework} layout's default code"


def layout_precision(layout: Any, dtype: str, typed: str | None = None) -> str:
    """The precision policy (costmodel/precision.py) of estimate's whole-model memory: without a
    layout the typed one, else spec.DEFAULT_PRECISION; with one, the policy its ranks keep, its
    framework's (Framework.precision_for: megatron 2 + 4 + 12 bytes a parameter, deepspeed mixed,
    fsdp2 4 + 4 + 8; pure under the layout's pure_precision), so the model's memory and each rank's count the same bytes. A typed policy
    the framework does not keep is refused: the ranks would keep the framework's whatever was typed."""
    if layout is None:
        return typed or DEFAULT_PRECISION
    from .config import ConfigError
    from .layout.frameworks import FRAMEWORKS

    kept = FRAMEWORKS[layout.framework].precision_for(dtype, layout.grad_reduce_dtype, layout.pure_precision)
    if typed is not None and typed != kept:
        pure = typed == "pure" and FRAMEWORKS[layout.framework].pure_precision  # Layout.pure_precision's
        raise ConfigError(f"--precision {typed}: a {layout.framework} layout keeps {kept} precision in {dtype} "
                          f"(costmodel/layout/frameworks.py); " + ("add --pure-precision for its ranks to keep pure."
                                                                   if pure else f"drop --precision, or drop the layout "
                                                                   f"for the whole model in {typed}."))
    return kept


def has_attention(cfg: Any) -> bool:
    """Whether the model has an attention layer (a pure Mamba-2 stack's mixer pattern names none)."""
    return not (cfg.mixer_layers and "attention" not in (cfg.layer_pattern or ()))


def runs_attention(impl: str, family: str, attention: str) -> bool:
    """Whether impl's code for the family runs the attention (facts sdpa_supported and
    flash_supported: the Hugging Face class's _supports_sdpa and _supports_flash_attn; the megatron
    and reference codes have no such refusal). Eager always runs."""
    facts = facts_for(impl, family)
    return {"sdpa": facts.sdpa_supported, "flash": facts.flash_supported}.get(attention, True)


def sdpa_runs_math(cfg: Any, workload: Any, device: str | None = None) -> bool:
    """Whether torch's sdpa runs its math path for this model's value width on `device` (a layout's
    ranks, Layout.device), else the workload's sdpa_device: on the CPU where latent attention's v_head_dim differs from its q/k width
    (sdp_utils_cpp.cpp check_head_dim_size_cpp: the CPU flash kernel wants one width); on CUDA the
    memory-efficient kernel takes such widths (sdp_utils.cpp check_head_dim_size_mem_efficient: q
    and k equal, v any aligned width) and keeps what the fused kernels keep (kernels.SDPA)."""
    return (device or workload.sdpa_device) == "cpu" and cfg.structure()["layers"]["value_width_differs"]


def class_attention(impl: str, family: str, attention: str) -> str:
    """The default attention as the code picks it: `attention` where it runs, else what
    transformers picks when none is requested (sdpa if the class runs it, else eager)."""
    if runs_attention(impl, family, attention):
        return attention
    return "sdpa" if runs_attention(impl, family, "sdpa") else "eager"


def serving_attention(attention: str | None, hardware: Any, family: str) -> tuple[str, str | None]:
    """The kernel plan --serve and serve run (their default: flash) and a note where the default gave
    way: on Volta and Turing, where FlashAttention-2 does not run (flash_support.runs_flash), sdpa (its
    memory-efficient kernel), or eager where the family's class has no sdpa path (class_attention:
    Gemma 2's soft-capped scores). A typed flash there is refused (flash_support.require_attention)."""
    from .flash_support import flash_note, require_attention, runs_flash

    require_attention(hardware, attention)
    if attention is not None or runs_flash(hardware):
        return attention or DEFAULT_SERVE_ATTENTION, None
    chosen = class_attention("hf", family, "sdpa")
    note = flash_note(hardware)
    if chosen != "sdpa":
        note = (f"attention {chosen}: FlashAttention-2 runs on Ampere (sm80) and later, and {hardware.name} is not "
                f"one; the fused kernel there is torch's sdpa, which {family}'s Hugging Face class has no path for "
                f"in transformers 5.24, so {chosen}.")
    return chosen, note


def unfused_note(framework: str | None | tuple[str, ...], attention: str | None, flash: bool,
                 attends: bool = True) -> str | None:
    """One sentence where Megatron's default flash is eager on a GPU without FlashAttention
    (implied's flash False), else None."""
    frameworks = framework if isinstance(framework, tuple) else (framework,)
    if attention is not None or not attends or flash or "megatron" not in frameworks:
        return None
    return ("attention eager under megatron: Transformer Engine runs neither FlashAttention nor its cuDNN fused "
            "attention below sm80 (get_attention_backend) and falls back to its unfused attention, the n x n "
            "scores --attention eager counts (memory and time).")


def fallback_note(framework: str | None | tuple[str, ...], impl: str | None, attention: str | None,
                  family: str, attends: bool = True, inference: bool = False) -> str | None:
    """One sentence (for a note) when the default attention is not the framework's (class_attention),
    else None. A tuple of frameworks (plan tries each) is one sentence naming those whose default
    falls back, one clause per default kernel given way. attends False (a model with no attention
    layer: has_attention): nothing to say. inference: a serving layout's default (attention_source's words), not
    the training framework's (`simulate --tp 2` on Gemma 2 said "deepspeed's default sdpa gives way")."""
    if attention is not None or not attends:
        return None
    frameworks = framework if isinstance(framework, tuple) else (framework,)
    falls: dict[tuple[str, str], list[str]] = {}
    for each in frameworks:
        default = implied(each, impl)["attention"]
        chosen = implied(each, impl, None, family)["attention"]
        if chosen != default:
            falls.setdefault((default, chosen), []).append(
                "an inference layout's" if inference and each is not None else f"{each}'s" if each in FRAMEWORK_CODE
                else "the")
    if not falls:
        return None
    clauses = [f"{' and '.join(whose)} default {default} gives way to {chosen}"
               for (default, chosen), whose in falls.items()]
    chosen_all = " and ".join(dict.fromkeys(chosen for _, chosen in falls))
    defaults_all = " or ".join(dict.fromkeys(default for default, _ in falls))
    if (impl or DEFAULT_IMPL) != "hf":  # flash_attn's GPT runs eager or flash (facts sdpa_supported)
        return (f"attention {chosen_all}: --impl {impl}'s code has no {defaults_all} path (facts.json), so "
                f"{', and '.join(clauses)}; --attention picks another.")
    return (f"attention {chosen_all}: {family}'s Hugging Face class has no {defaults_all} path in "
            f"transformers 5.24, so {', and '.join(clauses)}, what transformers picks for it when none is "
            "requested; --attention picks another.")
