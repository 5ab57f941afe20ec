"""The roofline's seconds per part of one rank (StepTime.part_seconds), kept with the part numbers
they are read from (PartNumbers.seconds): the layouts of a plan that share a rank's values (tp,
the micro-batch, ...; PartNumbers is one object for them all) and its rates share them, summed
once, not once per layout. The same sums in the same order: the same floats. And the two factors every
time model reads of a leaf's flags in a layout (leaf_factor, runs_fp8: the roofline here, the kernel model in
layout/kernel_step.py)."""

from __future__ import annotations

from typing import Any

from ..hardware import kernel_times

def leaf_factor(leaf: dict[str, Any], estimate: Any) -> float:
    """The factor one run of a leaf's time on one rank's tree takes in this layout, from its work
    entry's flags (layout/parts.py), under every time model:
    - the attention core under context parallelism: the rank's tree has n / cp queries against
      n / cp keys; its queries see all n keys, cp times that work (layout/context.py);
    - the experts under expert parallelism: the most loaded rank's share (layout/experts.py)."""
    factor = 1.0
    if leaf.get("attention_core"):
        factor *= estimate.layout.cp
    if leaf.get("experts") and estimate.load is not None:
        factor *= float(estimate.load.factor)
    return factor


def fp8_share(leaf: dict[str, Any], estimate: Any) -> float:
    """The share of a leaf's runs at the --fp8 recipe's rate: runs_fp8 (below), less the layers and modules
    a named mixed-precision configuration keeps in bf16 (layout/fp8_layers.py); 0.0 or 1.0 without one."""
    from .fp8_layers import low_precision_share

    return low_precision_share(leaf, estimate, runs_fp8(leaf, estimate))


def runs_fp8(leaf: dict[str, Any], estimate: Any) -> bool:
    """Whether a leaf's matrix products run at the FP8 peak (--fp8: the linear layers, layout/fp8.py; the output
    head too where the training script's autocast scope runs it in FP8, layout/fp8_options.py head_fp8)."""
    from .fp8_options import head_in_fp8

    layout = estimate.layout
    return layout.fp8 is not None and (bool(leaf.get("fp8")) or (bool(leaf.get("head")) and head_in_fp8(layout)))


#: part -> (seconds, blocks that run an op); attention cores' and routed experts' seconds by part
Parts = tuple[dict[str, tuple[float, int]], dict[str, float], dict[str, float]]


def roofline_part_seconds(step: Any) -> Parts:
    """Per part (one run of its leaves): its kernels' roofline seconds, and how many run an op
    (the overhead); and the attention cores' (what a ring's sends overlap) and the routed
    experts' (the combined 1F1B's mlp phases) seconds. Read-only: shared by layouts."""
    estimate = step.estimate
    numbers, layout = estimate.numbers, estimate.layout
    fp8 = layout.fp8 is not None
    # everything leaf_factor and fp8_share (above) read of the layout, and the rates
    memo = ("roofline", step.flops_per_s, step.fp8_per_s if fp8 else None, layout.fp8_autocast if fp8 else None,
            layout.mixed_precision if fp8 else None,
            step.w8a8, step.w8a8_per_s,
            step.vector_per_s, step.bytes_per_s, layout.cp,
            None if estimate.load is None else float(estimate.load.factor))
    if memo not in numbers.seconds:
        numbers.seconds[memo] = _sums(step, estimate, numbers)
    return numbers.seconds[memo]


def _sums(step: Any, estimate: Any, numbers: Any) -> Parts:
    out: dict[str, tuple[float, int]] = {}
    attention: dict[str, float] = {}
    experts: dict[str, float] = {}
    for index, leaf in enumerate(estimate.structure["work"]):
        work = [float(numbers[f"work.{index}.{q}"]) for q in ("f_mm", "b_mm", "f_o", "b_o")]
        share = fp8_share(leaf, estimate)  # of the leaf's runs at the FP8 rate, the rest at the dtype's
        rates = [(share, step.fp8_per_s), (1.0 - share, step.flops_per_s)]
        if step.w8a8 and leaf.get("w8a8"):  # inputs in one byte after their quantization pass
            work[1] += float(numbers[f"work.{index}.w8a8_b_mm"])
            work[3] += float(numbers[f"work.{index}.w8a8_b_o"])
            rates = [(1.0, step.w8a8_per_s)]
        busy = sum(part * kernel_times(*work, rate, step.vector_per_s, step.bytes_per_s)[2]
                   for part, rate in rates if part > 0) * leaf_factor(leaf, estimate)
        if leaf.get("attention_core"):
            attention[leaf["key"]] = attention.get(leaf["key"], 0.0) + busy
        if leaf.get("experts"):
            experts[leaf["key"]] = experts.get(leaf["key"], 0.0) + busy
        seconds, active = out.get(leaf["key"], (0.0, 0))
        out[leaf["key"]] = (seconds + busy, active + int(leaf["active"]))
    return out, attention, experts
