"""The attention calls of one context-parallel ring, step by step, for the kernel model.

The layout model times a rank's attention core as cp times the tree's causal call at n / cp
(layout/roofline_parts.py leaf_factor): the same FLOPs as the ring's. Under the load-balanced causal split
(each rank two chunks of n / 2cp; layout/context.py) the ring runs one causal (n / cp) x (n / cp)
call (its own keys) and cp - 1 unmasked calls of half the pairs: at a step whose keys come from an
earlier rank the queries (n / cp) against the first half of the keys (n / 2cp), at the others the
second half of the queries (n / 2cp) against all n / cp keys (Transformer Engine v1.4
attention.py AttnFuncWithCP: attn_mask_type "no_mask" at every step i > 0, `kv_inputs[...][:, :,
0, ...]` where i <= rank, `q[:, 1, ...]` after; torch's _templated_ring_attention likewise). A rank
runs r steps of the first shape and cp - 1 - r of the second, so the slowest rank runs cp - 1 of
the slower shape.

An unmasked call runs at its kernel's published unmasked figure where the kernel's entry has one
(kernel_facts.json attention_efficiency "unmasked_forward_tflops" / "unmasked_backward_tflops":
the same benchmark file's no-mask rows), looked up at its key length as every call is
(KernelTimer.attention_efficiency); elsewhere the ring's steps are left as the tree's causal call
cp times (a causal figure at the half-length would time an unmasked call at a causal kernel's
short-sequence efficiency)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..attention_kernels import kernel_entry
from ..kernel_rates import log_linear
from ..kernel_shapes import AttentionCall

Points = tuple[tuple[int, float], ...]


def unmasked_points(kernel: str, architecture: str) -> tuple[Points, Points] | None:
    """(forward, backward) efficiencies by key length of `kernel`'s unmasked calls on
    `architecture`, its published TFLOP/s over its reference peak; None where not published."""
    from ..kernel_time import kernel_facts

    entry = kernel_entry(kernel_facts()["attention_efficiency"], kernel, architecture)
    if "unmasked_forward_tflops" not in entry:
        return None
    peak = float(entry["reference_peak_tflops"])
    return tuple(tuple((int(n), tf / peak) for n, tf in entry[key])  # type: ignore[return-value]
                 for key in ("unmasked_forward_tflops", "unmasked_backward_tflops"))


def half_calls(call: AttentionCall, cp: int) -> tuple[AttentionCall, AttentionCall]:
    """The two shapes of a ring step after the first, from the rank's causal call (n / cp x n / cp):
    all queries against the first half of the keys, the second half of the queries against all."""
    half = call.n_q // 2
    return (replace(call, n_kv=call.n_kv // 2, causal=False), replace(call, n_q=half, causal=False))


def unmasked_seconds(call: AttentionCall, timer: Any, points: tuple[Points, Points], backward: bool) -> float:
    """An unmasked call at its kernel's unmasked figure: the timer's compute term (its executed FLOPs
    at the causal figure) rescaled from the causal to the unmasked efficiency at its key length,
    against its bytes, after the start from DRAM (KernelTimer.attention_seconds' rule)."""
    compute, moved = timer.attention_terms(call, backward)
    causal = timer.attention_efficiency(call.n_kv, call.n_q, backward)
    unmasked = log_linear(points[1 if backward else 0], call.n_kv) * timer.attention_clock
    return timer.dram_startup_s + max(compute * causal / unmasked, moved)


def ring_step_delta(call: AttentionCall, cp: int, timer: Any, points: tuple[Points, Points] | None
                    ) -> tuple[float, float]:
    """Seconds (forward, backward) the ring's steps add to cp runs of the causal call, for one
    layer and micro-batch: cp - 1 times the slower half-block shape less the causal call."""
    if cp == 1 or points is None or not call.causal or call.window is not None:
        return 0.0, 0.0
    out = []
    for backward in (False, True):
        slower = max(unmasked_seconds(half, timer, points, backward) for half in half_calls(call, cp))
        out.append((cp - 1) * (slower - timer.attention_seconds(call, backward)))
    return out[0], out[1]
