"""The int8 weight-only GEMV's fraction of the bf16 GEMV's rate (kernel_facts.json
"weight_only_gemv", int8), derived from PyTorch's own gpt-fast micro-benchmarks.

pytorch/pytorch benchmarks/gpt_fast/benchmark.py times TorchInductor's GEMV (`W.to(x.dtype) @ x`,
compiled with coordinate_descent_tuning: the reduction gpt-fast's int8 and bf16 linears compile to)
at four square sizes and publishes one number per dtype: the mean over the sizes of each call's
weight bytes over its time. That mean mixes a fixed time per call with the rate, so the int8
figure over the bf16 one is not the kernels' rate ratio. Here each call is modelled as the kernel
model times a GEMV, t = s + bytes / rate:
- `fit_start_and_rate`: s and the bf16 rate that give both published bf16 means (gemv: one D x D
  weight a call; gather_gemv: two);
- `int8_fraction`: the fraction of that rate the int8 kernel moves its bytes at, given the int8
  mean of one of the two benchmarks.
Pure arithmetic on published figures; no torch.
"""

from __future__ import annotations

from typing import Any, Callable

from costmodel.kernel_time import kernel_facts

#: How many D x D weights each benchmark reads a call (gather_gemv: two experts of eight).
MATRICES = {"gemv": 1, "gather_gemv": 2}
#: Bytes an element of the weight, as the benchmark counts them.
ITEMSIZE = {"bf16": 2, "int8": 1}


def published() -> dict[str, Any]:
    """The benchmark's published means (GB/s) and sizes, as kernel_facts.json's int8 entry states them."""
    (entry,) = [e for e in kernel_facts()["weight_only_gemv"] if e["weight_dtype"] == "int8"]
    return entry["published"]


def benchmark_mean(start_s: float, rate: float, sizes: list[int], bytes_per_size: Callable[[int], float]) -> float:
    """The benchmark's figure under t = start_s + bytes / rate: the mean over `sizes` of each
    call's bytes over its time, in bytes/s."""
    return sum(bytes_per_size(d) / (start_s + bytes_per_size(d) / rate) for d in sizes) / len(sizes)


def weight_bytes(benchmark: str, dtype: str) -> Callable[[int], float]:
    return lambda d: MATRICES[benchmark] * d * d * ITEMSIZE[dtype]


def _solve(function: Callable[[float], float], low: float, high: float) -> float:
    """The root of an increasing function between low and high (bisection)."""
    if not function(low) < 0 < function(high):
        raise ValueError("the published figures have no solution in the searched range")
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if function(middle) < 0 else (low, middle)
    return (low + high) / 2


def rate_for(mean: float, start_s: float, sizes: list[int], bytes_per_size: Callable[[int], float]) -> float:
    """The rate at which the benchmark's mean over `sizes` is `mean`, each call paying start_s."""
    return _solve(lambda rate: benchmark_mean(start_s, rate, sizes, bytes_per_size) - mean, 1e9, 1e14)


def fit_start_and_rate(figures: dict[str, Any]) -> tuple[float, float]:
    """(s, bf16 rate): the fixed seconds a call and the bytes/s that give both bf16 means. A larger
    s costs the smaller gemv calls more than the gather's twice-as-large ones, so the gather's
    modelled mean less its published one increases with s."""
    sizes = figures["sizes"]
    gemv, gather = weight_bytes("gemv", "bf16"), weight_bytes("gather_gemv", "bf16")
    def gather_excess(start_s: float) -> float:
        rate = rate_for(figures["gemv"]["bf16"] * 1e9, start_s, sizes, gemv)
        return benchmark_mean(start_s, rate, sizes, gather) - figures["gather_gemv"]["bf16"] * 1e9
    start_s = _solve(gather_excess, 0.0, 50e-6)
    return start_s, rate_for(figures["gemv"]["bf16"] * 1e9, start_s, sizes, gemv)


def int8_fraction(figures: dict[str, Any], benchmark: str = "gemv") -> float:
    """The int8 kernel's rate over the bf16 one's, both calls paying the fitted s: the rate that
    gives the benchmark's published int8 mean, over the fitted bf16 rate."""
    start_s, bf16_rate = fit_start_and_rate(figures)
    int8_rate = rate_for(figures[benchmark]["int8"] * 1e9, start_s, figures["sizes"], weight_bytes(benchmark, "int8"))
    return int8_rate / bf16_rate
