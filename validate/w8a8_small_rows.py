"""The W8A8 FP8 GEMM's rate at few rows on Hopper (kernel_facts.json "w8a8_small_rows"), derived
from vLLM's own published microbenchmark of cutlass_scaled_mm on an H100 (PR #5144).

Each published call (Llama-2-7B's projections at M = 1 and 16) is modelled as the kernel model
times a GEMM's bytes, t = start + bytes / rate, its bytes the fp8 weight N x K, the fp8 input M x K
and the bf16 output M x N; `fit` solves the least squares for start and rate over the calls, and
`fraction` states the rate as a fraction of the h100-sxm file's GEMV rate, the form the entry
carries. Pure arithmetic on published figures; no torch.

    PYTHONPATH=. python validate/w8a8_small_rows.py
"""

from __future__ import annotations

from typing import Any

from costmodel.hardware import load_hardware
from costmodel.kernel_time import kernel_facts
from validate.int4_hopper_gemv import fit as least_squares

OUTPUT_BYTES = 2  # the benchmark's bf16 output, an element


def published(dtype: str = "fp8", architecture: str = "hopper") -> dict[str, Any]:
    """The entry's published calls: shapes (M, K, N) and their times in microseconds."""
    (entry,) = [e for e in kernel_facts()["w8a8_small_rows"]["entries"]
                if e["weight_dtype"] == dtype and e["architecture"] == architecture]
    return entry["published"]


def call_bytes(m: int, k: int, n: int) -> int:
    """A call's bytes as the kernel model counts a W8A8 GEMM's: one-byte weight and input, bf16 output."""
    return n * k + m * k + OUTPUT_BYTES * m * n


def fit(figures: dict[str, Any]) -> tuple[float, float]:
    """(start in seconds, bytes/s): the least-squares line t = start + bytes / rate through the calls (the tinygemm
    Hopper entry's fit, validate/int4_hopper_gemv.fit)."""
    return least_squares([(call_bytes(*shape), us * 1e-6)
                          for shape, us in zip(figures["shapes_mkn"], figures["microseconds"])])


def fraction(rate: float, hardware: str = "h100-sxm") -> float:
    """The rate over the hardware file's GEMV rate (gemv_bandwidth_bytes_per_s)."""
    return rate / load_hardware(hardware).gemv_bandwidth_bytes_per_s


def main() -> None:
    figures = published()
    start, rate = fit(figures)
    for shape, us in zip(figures["shapes_mkn"], figures["microseconds"]):
        print(f"M,K,N = {shape}: {us} us, {call_bytes(*shape) / (us * 1e-6) / 1e9:.0f} GB/s")
    print(f"fit: start {start * 1e6:.2f} us, rate {rate / 1e12:.3f} TB/s, {fraction(rate):.3f} of h100-sxm's GEMV rate")


if __name__ == "__main__":
    main()
