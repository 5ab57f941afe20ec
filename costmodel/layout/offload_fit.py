"""What a training plan with no layout that fits still has on the GPUs given: DeepSpeed's ZeRO-Offload
(the optimizer state and its step on the host) or ZeRO-Infinity (the weights too), which `plan` does not
time (the host's update is not modelled) and so never ranks, but which `estimate --hardware` offers on
the same GPUs (costmodel/verdict.py), so that "no layout fits" is not read as "more GPUs are needed".

The two answer different questions on purpose, and each output says which: this line, the first of
ZeRO-Offload and ZeRO-Infinity that fits in the leanest DeepSpeed layout (ZeRO 3, full recomputation,
micro-batch 1, unless the plan fixes them), as plan's other lines name its leanest layout; estimate's
verdict, changes to the run as the user typed it, each changing only what it names (its recomputation and
batch kept unless named), so the two may name different layouts on the same GPUs (Llama 3 8B at 2,048 tokens
on 2 x RTX 4090: plan --offload optimizer --recompute full 10.22 GiB; estimate at its default recompute
--zero 3 --offload params 14.11 GiB). Both size a layout with the same per-rank estimate
(ParallelEstimate), so the plan's printed options give its figure in `estimate`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..config import ConfigError, ModelConfig, Workload
from ..defaults import implied
from ..flash_support import runs_flash
from ..hardware import Hardware
from .rank import ParallelEstimate
from .spec import Layout


def offload_fit(cfg: ModelConfig, workload: Workload, hardware: Hardware, gpus: int, seq_len: int,
                fixed: dict[str, Any]) -> dict[str, Any] | None:
    """The first of ZeRO-Offload and ZeRO-Infinity (ZeRO 3, data parallel over the GPUs, DeepSpeed's
    attention and implementation unless fixed, full recomputation and micro-batch 1 unless fixed) whose
    most loaded rank fits in what a training run can use of the hardware: {"offload", "layout",
    "per_rank"}; None where neither fits, where the plan's fixed sizes or framework leave DeepSpeed's
    data-parallel layout out, or where the hardware file states no bandwidth for its data-parallel group
    (plan refuses such layouts as unsupported)."""
    if any(fixed.get(size) not in (None, 1) for size in ("tp", "pp", "ep", "cp")) \
            or fixed.get("framework") not in (None, "deepspeed") or fixed.get("zero") not in (None, 3) \
            or fixed.get("dp") not in (None, gpus) or fixed.get("fp8"):  # (FP8 training is not DeepSpeed's here)
        return None
    try:
        if gpus > 1:
            hardware.link(gpus)  # the gradients' and weights' collectives over the data-parallel group
    except ConfigError:
        return None
    batch, recompute = fixed.get("batch") or 1, fixed.get("recompute") or "full"
    code = implied("deepspeed", fixed.get("impl"), fixed.get("attention"), cfg.family, runs_flash(hardware))
    lean = replace(workload.for_training(), seq_len=seq_len, batch=batch, recompute=recompute, **code)
    for offload in ("optimizer", "params"):
        layout = Layout(dp=gpus, zero=3, framework="deepspeed", offload=offload)
        try:
            needed = ParallelEstimate(cfg, lean, layout).per_rank["total"]
        except ConfigError:
            return None
        if needed <= hardware.training_memory_bytes:
            return {"offload": offload, "layout": {"dp": gpus, "zero": 3, "framework": "deepspeed", "batch": batch,
                                                   "recompute": recompute, **code}, "per_rank": needed}
    return None
