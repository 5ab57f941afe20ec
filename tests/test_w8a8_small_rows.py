"""The W8A8 FP8 GEMM at few rows on Hopper (kernel_facts.json "w8a8_small_rows", wt39_machete): vLLM's
cutlass_scaled_mm microbenchmark on an H100 (PR #5144) fitted to the kernel model's form, which GPUs take
its rate, and the time it gives a decode step's GEMM."""

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_rates import w8a8_small_rows_rate
from costmodel.kernel_time import Gemm, KernelTimer
from costmodel.quantized_matmul import activation_quant_bytes
from validate import w8a8_small_rows as fit_module

H100_GEMV = 3016544000000.0  # h100-sxm.json gemv_bandwidth_bytes_per_s (Vidur's profiles)


def test_fit_reproduces_the_entry():
    """Least squares over PR #5144's eight calls (Llama-2-7B's projections at M = 1 and 16): a start of
    2.25 us and 2.581 TB/s, 0.856 of the H100 SXM's GEMV rate: the entry's fraction."""
    start, rate = fit_module.fit(fit_module.published())
    assert round(start * 1e6, 2) == 2.25
    assert round(rate / 1e12, 3) == 2.581
    assert round(fit_module.fraction(rate), 3) == 0.856
    # each call's own rate (its bytes over its time): 2.05-2.45 TB/s, flat in M
    rates = [fit_module.call_bytes(*s) / (us * 1e-6) for s, us in
             zip(fit_module.published()["shapes_mkn"], fit_module.published()["microseconds"])]
    assert 2.04e12 < min(rates) and max(rates) < 2.46e12


@pytest.mark.parametrize("name, expected", [
    ("h100-sxm", (16, 0.856 * H100_GEMV)),
    ("h800", (16, 0.856 * H100_GEMV)),  # 132 SMs, the H100 SXM's GEMV rate
    ("h100-pcie", None),  # 114 SMs: not the measured part's count
    ("h20", None),  # 78 SMs
    ("a100-80gb", None),  # Ampere: no FP8 W8A8 figure
])
def test_which_gpus_take_the_rate(name, expected):
    hardware = load_hardware(name)
    assert w8a8_small_rows_rate(hardware, "fp8", H100_GEMV) == expected
    assert w8a8_small_rows_rate(hardware, "int8", H100_GEMV) is None  # fp8 only
    if expected:  # the timer of a W8A8 decode reads the same
        assert KernelTimer(hardware, "bf16", cuda_graphs=True, w8a8=True).w8a8_small_rows == expected


def test_h200_takes_the_fraction_of_its_own_rate():
    """The H200's file states no GEMV rate: the fraction of its achievable bandwidth."""
    timer = KernelTimer(load_hardware("h200"), "bf16", cuda_graphs=True, w8a8=True)
    assert timer.w8a8_small_rows == (16, 0.856 * timer.bandwidth)


def test_a_decode_gemm_on_the_h100():
    """Llama-2-7B's QKV at one row on an H100 SXM: 1.955 us + its bytes at 0.856 of 3,016.5 GB/s + the
    input's quantization; at 17 rows (beyond the measurement) its bytes at the GEMV rate, as before."""
    timer = KernelTimer(load_hardware("h100-sxm"), "bf16", cuda_graphs=True, w8a8=True)
    gemm = Gemm(m=1, n=12288, k=4096, weight_dtype="fp8", quantizes_input=True, weight_bytes=12288 * 4096)
    moved = 4096 + 2 * 12288 + 12288 * 4096
    quantize = activation_quant_bytes(4096, 2) / timer.bandwidth
    assert timer.gemm_seconds(gemm) == pytest.approx(1.955e-6 + moved / (0.856 * H100_GEMV) + quantize, rel=1e-12)
    assert timer.gemm_seconds(gemm) * 1e6 == pytest.approx(21.46, abs=0.01)  # PR #5144: 21.6 us for this call (the quantization beside it)
    wide = Gemm(m=17, n=12288, k=4096, weight_dtype="fp8", quantizes_input=True, weight_bytes=12288 * 4096)
    moved17 = 17 * 4096 + 2 * 17 * 12288 + 12288 * 4096
    assert timer.gemm_seconds(wide) == pytest.approx(
        1.955e-6 + moved17 / H100_GEMV + activation_quant_bytes(17 * 4096, 2) / timer.bandwidth, rel=1e-12)
