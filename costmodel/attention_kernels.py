"""The fused attention kernels' published figures (kernel_facts.json "attention_efficiency") as
efficiencies by sequence length, forward and backward, for kernel_time.KernelTimer: stated
points, or the authors' TFLOP/s over the peak they ran at, the backward derived where the forward
and the forward-plus-backward are both published."""

from __future__ import annotations

from typing import Any

Points = tuple[tuple[int, float], ...]


def backward_tflops(forward: float, forward_backward: float, backward_factor: float) -> float:
    """A fused attention kernel's backward TFLOP/s from its published forward and forward-plus-
    backward rates at one length (FLOPs of the forward F, the backward backward_factor F): the
    backward's FLOPs over the forward-plus-backward time less the forward's."""
    return backward_factor / ((1 + backward_factor) / forward_backward - 1 / forward)


def attention_points(entry: dict[str, Any], backward_factor: float) -> tuple[Points | None, Points | None]:
    """One kernel_facts.json attention_efficiency entry as (forward, backward) efficiencies by
    length: its stated points (backward None: the forward's times backward_ratio), or, where it
    states the published TFLOP/s, those over its reference peak, the backward from both figures;
    where only the forward-plus-backward figure is published, that efficiency for both passes
    (what reproduces the figure's time)."""
    if "forward_backward_tflops" not in entry:
        points = entry.get("points")
        return (tuple((int(n), float(e)) for n, e in points) if points else None), None
    peak = float(entry["reference_peak_tflops"])
    both = dict(entry["forward_backward_tflops"])
    if "forward_tflops" not in entry:
        combined = tuple((int(n), tf / peak) for n, tf in entry["forward_backward_tflops"])
        return combined, combined
    forward = tuple((int(n), tf / peak) for n, tf in entry["forward_tflops"])
    backward = tuple((int(n), backward_tflops(tf, both[n], backward_factor) / peak)
                     for n, tf in entry["forward_tflops"])
    return forward, backward
