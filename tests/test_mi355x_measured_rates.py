"""The MI355X's measured kernel rates (session 37, wt37_mi355x): its FP8 GEMMs at hipBLASLt's measured
share of peak (costmodel/hardware/mi355x.json) and its fused attention at AMD's AITER forward as
HipKittens measured it (kernel_facts.json attention_efficiency "flash2" "cdna4"); the CDNA 3 parts keep
their large-GEMM rate for attention (no figures found)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_facts_file import kernel_facts
from costmodel.kernel_time import KernelTimer

BF16_PEAK = 2400e6 * 512 * 2 * 1024 / 1e12  # TFLOP/s: 2,400 MHz x 512 FMAs x 2 x 1,024 Matrix Cores

# HipKittens analysis/attn/fwd/mi350x/mi355x_mha_causal_fwd.json (salykova/HipKittens 68f7004), tflops_ref:
# aiter.flash_attn_func, BF16, causal, batch 16, 16 heads, head dim 128
AITER_CAUSAL_TFLOPS = {1024: 567.4199132266542, 2048: 873.9890638420345, 4096: 1085.384611246998,
                       8192: 1179.4686691674308, 16384: 1243.6895426201363}


def test_the_cdna4_attention_points_are_aiters_tflops_over_the_bf16_peak():
    entry = next(e for e in kernel_facts()["attention_efficiency"]
                 if e["kernel"] == "flash2" and e["architecture"] == "cdna4")
    assert entry["reference_peak_tflops"] == pytest.approx(BF16_PEAK)
    assert entry["points"] == [[n, round(tf / BF16_PEAK, 3)] for n, tf in AITER_CAUSAL_TFLOPS.items()]
    assert [p[1] for p in entry["points"]] == [0.225, 0.347, 0.431, 0.469, 0.494]


def test_the_mi355x_times_fused_attention_at_those_points_and_its_fp8_gemms_at_hipblaslts_rate():
    mi = load_hardware("mi355x")
    timer = KernelTimer(mi, matmul_dtype="fp8")
    assert timer.matmul_efficiency == 0.622  # 3,130.21 of 5,033.2 TFLOP/s (ROCm blog cdna4-gemm-kernels, Table 5)
    plain = KernelTimer(mi)
    assert plain.attention_efficiency(8192) == pytest.approx(0.469)
    assert plain.attention_efficiency(8192, backward=True) == pytest.approx(0.469)  # assumed: the forward's
    assert plain.attention_efficiency(2896) == pytest.approx(0.347 + (0.431 - 0.347) * 0.5, abs=1e-3)  # log-linear
    assert plain.attention_efficiency(512) == pytest.approx(0.225)  # the first point below it
    # before session 37 the large-GEMM efficiency timed it: 0.622, 1.33x the measured rate at 8,192
    assert plain.matmul_efficiency == 0.622 and round(0.622 / 0.469, 2) == 1.33


@pytest.mark.parametrize("name, gemm", [("mi300x", 0.514), ("mi325x", 0.604)])
def test_the_cdna3_parts_have_no_attention_figures(name, gemm):
    timer = KernelTimer(load_hardware(name))
    assert timer.attention_efficiency(8192) == gemm == timer.matmul_efficiency
