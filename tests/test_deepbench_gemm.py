"""The V100 SXM2 and T4 presets' large-GEMM efficiency (matmul_efficiency) is DeepBench's measured rate
(baidu-research/DeepBench, results/train/DeepBench_NV_V100.xlsx and DeepBench_NV_T4.xlsx at commit
30c5115, CUDA 10.1): the best of each sheet's training GEMMs over the datasheet peak; the V100 PCIe
boards, which it did not measure, keep efficiency.compute (validate/FINDINGS.md, wt32_v100).
"""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_time import KernelTimer

# DeepBench's V100 sheet, its best row on each precision's sheet: (M, N, K), milliseconds, its TFLOP/s column.
SHAPE = (4096, 7000, 4096)
FP16 = (2.092, 112.2758240917782)  # 'Results - FP16 ip, Mixed math'
FP32 = (15.894, 14.77796803825343)  # 'Results FP32'


def _tflops(ms: float) -> float:
    m, n, k = SHAPE
    return 2 * m * n * k / (ms * 1e-3) / 1e12


@pytest.mark.parametrize("name", ["v100-sxm2-16gb", "v100-sxm2-32gb"])
def test_sxm2_matmul_efficiency_is_deepbench_best_gemm(name):
    v100 = load_hardware(name)
    # the sheet's TFLOP/s column is 2 M N K over its time: the figure read is the one it prints
    assert _tflops(FP16[0]) == pytest.approx(FP16[1], rel=1e-12)
    assert _tflops(FP32[0]) == pytest.approx(FP32[1], rel=1e-12)
    assert v100.matmul_efficiency == {"fp16": round(FP16[1] * 1e12 / v100.flops_per_s["fp16"], 3),
                                      "fp32": round(FP32[1] * 1e12 / v100.flops_per_s["fp32"], 3)}
    assert v100.matmul_efficiency == {"fp16": 0.898, "fp32": 0.941}
    assert v100.sustained_matmul_efficiency == {}


@pytest.mark.parametrize("name", ["v100-pcie-16gb", "v100-pcie-32gb"])
def test_pcie_boards_are_not_measured(name):
    # 250 W and a 1380 MHz boost: DeepBench's DGX-1 figure is not theirs, so efficiency.compute stays
    v100 = load_hardware(name)
    assert v100.matmul_efficiency == {} and v100.efficiency["compute"] == 0.7
    assert KernelTimer(v100, "fp16").matmul_efficiency == 0.7


def test_a_training_step_runs_at_the_burst_rate():
    # Volta has no measured MSMF / MAMF (kernel_facts.json sustained_over_burst): sustained is the burst rate
    v100 = load_hardware("v100-sxm2-32gb")
    assert KernelTimer(v100, "fp16", sustained=True).matmul_efficiency == 0.898
    assert KernelTimer(v100, "fp16").matmul_efficiency == 0.898
    assert KernelTimer(v100, "fp32").matmul_efficiency == 0.941


# DeepBench's T4 sheet (the same commit and harness): its best row on each sheet, (M, N, K), ms, TFLOP/s column
T4_FP16 = ((4096, 7000, 4096), 5.049, 46.520305803129325)  # A transposed
T4_FP32 = ((1024, 48000, 2048), 43.086, 4.672668430580699)  # A transposed


def test_t4_matmul_efficiency_is_deepbench_best_gemm():
    t4 = load_hardware("t4")
    for (m, n, k), ms, tflops in (T4_FP16, T4_FP32):
        assert 2 * m * n * k / (ms * 1e-3) / 1e12 == pytest.approx(tflops, rel=1e-12)
    assert t4.matmul_efficiency == {"fp16": round(T4_FP16[2] * 1e12 / t4.flops_per_s["fp16"], 3),
                                    "fp32": round(T4_FP32[2] * 1e12 / t4.flops_per_s["fp32"], 3)}
    assert t4.matmul_efficiency == {"fp16": 0.716, "fp32": 0.577}
    assert KernelTimer(t4, "fp16", sustained=True).matmul_efficiency == 0.716
