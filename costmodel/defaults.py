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
"""

from __future__ import annotations

from typing import Any

from .spec import (DEFAULT_ATTENTION, DEFAULT_DTYPE, DEFAULT_HARDWARE, DEFAULT_IMPL,  # noqa: F401 (re-exported)
                   DEFAULT_RECOMPUTE)

#: framework -> (activation profile, attention kernel) it implies, each with its source above.
FRAMEWORK_CODE = {
    "megatron": ("megatron", "flash"),
    "deepspeed": ("hf", "sdpa"),
    "fsdp2": ("hf", "sdpa"),
}


def implied(framework: str | None, impl: str | None = None, attention: str | None = None,
            cfg: Any = None) -> dict[str, str]:
    """impl and attention: the ones given, else the framework's, else the defaults above. The
    framework's sdpa is eager for a model (cfg) whose Hugging Face class has no sdpa path, as
    transformers falls back to it when none is asked for."""
    framework_impl, framework_attention = FRAMEWORK_CODE.get(framework or "", (DEFAULT_IMPL, DEFAULT_ATTENTION))
    impl = impl or framework_impl
    if attention is None and framework_attention == "sdpa" and cfg is not None:
        from .facts import facts_for

        if not facts_for(impl, cfg.family).sdpa_supported:
            framework_attention = "eager"
    return {"impl": impl, "attention": attention or framework_attention}
