"""Whether a fine-tuning step fits a GPU, and what would make it fit (finetune_verdict): the single
changes verdict.py offers, an 8-bit optimizer, the optimizer on the host, QLoRA's nf4 base, and where
none fits alone, QLoRA's recipe with full recomputation together. Each figure is costmodel/finetune.py's
finetune_memory.
"""

from __future__ import annotations

from typing import Any

from .config import ConfigError, ModelConfig, Workload
from .finetune import finetune_memory
from .lora_adapters import FineTune


def finetune_verdict(cfg: ModelConfig, workload: Workload, tune: FineTune, capacity: int,
                     flash: bool | None = None) -> dict[str, Any]:
    """Whether a fine-tuning step fits in `capacity` bytes, and what would make it fit: fused
    attention, recomputation, then (cheapest first) an 8-bit optimizer, the optimizer on the host,
    QLoRA's nf4 base, a smaller batch or a shorter sequence (costmodel/verdict.py); flash False: the
    GPU runs no FlashAttention-2, which is then not offered (None: a hardware's own, else True). capacity:
    bytes, or a hardware preset's name, which means what `finetune --hardware` holds a step to."""
    import dataclasses

    from .flash_support import runs_flash
    from .verdict import api_inputs, hardware_of, verdict

    hardware = hardware_of(capacity)  # "rtx-4090": finetune --hardware's capacity and FlashAttention support
    flash = (runs_flash(hardware) if hardware is not None else True) if flash is None else flash
    cfg, capacity, _ = api_inputs(cfg, capacity)  # a preset's name; np.int64(24 * 2**30) as the int it holds

    def memory_with(change: dict[str, Any]) -> int | None:
        try:
            return finetune_memory(cfg, workload, dataclasses.replace(tune, **change)).total
        except ConfigError:
            return None

    extra = []
    if tune.optimizer in ("adamw", "paged_adamw"):
        extra.append(("--optimizer adamw8bit", memory_with({"optimizer": "adamw8bit"}),
                      "8-bit moments (bitsandbytes): about the same loss curve"))
    if not tune.offload_optimizer:
        extra.append(("--offload-optimizer", memory_with({"offload_optimizer": True}),
                      "the update runs on the host: PCIe traffic each step"))
    if tune.method == "lora":
        extra.append(("--method qlora", memory_with({"method": "qlora"}),
                      "nf4 base weights: dequantized each matmul, slower, slightly less exact"))
    result = verdict(cfg, workload, None, capacity, 1, "finetune",
                     lambda c, w, _layout: finetune_memory(c, w, tune).total, tuple(extra), flash=flash)
    if not result["fits"] and all(any(shrink in o["change"] for shrink in SHRINKS) for o in result["options"]):
        # no change that keeps the workload fits (a shorter sequence or batch trains something else):
        # QLoRA's own recipe first, on a T4 Llama 3.1 8B at 2,048 tokens, not only --seq-len 78
        result["options"] = _combined_options(cfg, workload, tune, capacity) + result["options"]
    if not result["fits"] and not result["options"]:  # "no change makes it fit" said nothing of what would
        result["least"] = _least(cfg, workload, tune)
    return result


def _least(cfg: ModelConfig, workload: Workload, tune: FineTune) -> dict[str, Any] | None:
    """The least one GPU holds for this model: the nf4 base with full recomputation at a 1-token sequence
    (a GPU with less cannot fine-tune it here, whatever else changes; finetune does not shard). A mixture
    of experts, whose --recompute full is refused, keeps its recomputation as given (it had no least: the
    verdict ended "makes it fit." with nothing to go by)."""
    import dataclasses

    for recompute in dict.fromkeys(("full", workload.recompute)):
        change = " ".join(([] if tune.method == "qlora" else ["--method qlora"])
                          + ([] if workload.recompute == recompute else [f"--recompute {recompute}"]) + ["--seq-len 1"])
        try:
            memory = finetune_memory(cfg, dataclasses.replace(workload, recompute=recompute, seq_len=1),
                                     dataclasses.replace(tune, method="qlora")).total
        except ConfigError:
            continue
        return {"change": change, "memory": memory, "recompute": recompute}
    return None


#: The verdict's options that shrink what a step trains (verdict.options' last resort, alone or beside full
#: recomputation), not how.
SHRINKS = ("--batch ", "--seq-len ")


def _combined_options(cfg: ModelConfig, workload: Workload, tune: FineTune, capacity: int) -> list[dict[str, Any]]:
    """Where no single change fits: QLoRA's recipe, the nf4 base with full recomputation, together
    (the attention kernel as asked: sdpa alone was tried, and a window shorter than the sequence
    refuses it); if that is still too much, with the longest sequence that fits. Each figure is
    finetune_memory's. Empty when neither fits, or when only one of the two is a change. Offered
    where no change but a smaller batch or a shorter sequence fits alone."""
    import dataclasses

    from .verdict import Option

    if tune.method != "lora" or workload.recompute == "full":  # one change or none: tried already
        return []
    change = "--method qlora --recompute full"
    lean_tune = dataclasses.replace(tune, method="qlora")
    lean = dataclasses.replace(workload, recompute="full")

    def needed(seq_len: int) -> int:
        try:
            return finetune_memory(cfg, dataclasses.replace(lean, seq_len=seq_len), lean_tune).total
        except ConfigError:  # a setup the model refuses at this length: it does not fit
            return capacity + 1

    cost = "together: nf4 base weights, each layer's forward rerun in backward"
    if needed(workload.seq_len) <= capacity:
        return [Option(change, needed(workload.seq_len), True, cost).to_dict()]
    low, high = 1, workload.seq_len  # the longest sequence that fits with them, if any
    if needed(low) > capacity:
        return []
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if needed(middle) <= capacity else (low, middle)
    return [Option(f"{change} --seq-len {low}", needed(low), True, cost + ", shorter sequences").to_dict()]
