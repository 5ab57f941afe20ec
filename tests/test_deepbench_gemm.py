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


def test_deepbench_sheets_typed_as_published():
    from validate.gemm_microbenchmarks import table

    tables = table()["deepbench_train"]["tables"]
    assert {name: len(rows) for name, rows in tables.items()} == {
        "v100-sxm2-32gb fp16": 136, "v100-sxm2-32gb fp32": 136, "t4 fp16": 136, "t4 fp32": 136}
    assert [4096, 7000, 4096, "NN", FP16[0]] in tables["v100-sxm2-32gb fp16"]
    assert [4096, 7000, 4096, "NN", FP32[0]] in tables["v100-sxm2-32gb fp32"]
    assert [4096, 7000, 4096, "TN", T4_FP16[1]] in tables["t4 fp16"]
    assert [1024, 48000, 2048, "TN", T4_FP32[1]] in tables["t4 fp32"]


# DeepBench's V100 sweep of one output shape, M 5124 x N 9124, A not transposed and transposed: ms at each K
SWEEP = {"fp16": {1760: (1.744, 1.733), 2048: (1.993, 1.955), 2560: (2.478, 2.598), 4096: (3.702, 3.678)},
         "fp32": {1760: (13.004, 12.147), 2048: (14.924, 14.039), 2560: (18.587, 17.542), 4096: (29.61, 27.882)}}


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_volta_rate_by_k_is_the_sweeps_layout_mean_over_k_4096(dtype):
    from costmodel.kernel_rates import gemm_k_points
    from validate.gemm_microbenchmarks import table

    rows = table()["deepbench_train"]["tables"][f"v100-sxm2-32gb {dtype}"]
    for k, times in SWEEP[dtype].items():
        assert [[5124, 9124, k, "NN", times[0]], [5124, 9124, k, "TN", times[1]]] == \
            [r for r in rows if r[:3] == [5124, 9124, k]]

    def rate(k: int) -> float:
        return sum(2 * 5124 * 9124 * k / (ms * 1e-3) for ms in SWEEP[dtype][k]) / 2

    expected = tuple((k, round(rate(k) / rate(4096), 3)) for k in SWEEP[dtype])
    assert gemm_k_points(load_hardware("v100-sxm2-32gb"), dtype) == expected
    assert gemm_k_points(load_hardware("v100-pcie-32gb"), dtype) == expected  # by architecture: the same SMs
    assert gemm_k_points(load_hardware("t4"), dtype) == ()  # its sweep is not monotonic in K


def test_deepbench_v100_large_gemms_within_fifteen_percent():
    """The V100 sheet's 62 GEMMs of 8M outputs and more and K 1024 and more: the model at its burst rate
    (0.898, the best row) with the rate by K, model over published; without the rate by K the median
    was 1.114 (1.10-1.19x at K 1530-2816, 1.02x at K 4096)."""
    from validate.gemm_microbenchmarks import deepbench_points, spread

    count, median, low, high = spread([p.ratio for p in deepbench_points("v100-sxm2-32gb fp16") if p.large])
    assert count == 62 and median == pytest.approx(1.032, abs=0.002) and low > 0.93 and high < 1.14
