"""The kernel model's bf16 GEMMs on an H100 SXM against OpenXLA's measured matmul table
(tensorflow/tensorflow@372d578bb861cc5804e56d37d93aec931a59762c:
third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h, key sm_90, "bf16xbf16->bf16"
FLOP/s of a batched dot [b, m, k] x [b, k, n], the median kernel time of five traced runs;
xla/tools/matmul_perf_table_gen.cc), at its shapes of 16M outputs and more (b x m x n >= 2^24:
four or more waves of 128 x 256 tiles on 132 SMs, where the model's tiles and waves apply), every
K from 256 to 4096.

Stated tolerance: the model's rate within 13% of the table's at each shape. Without the rate by
inner width K (kernel_facts.json "gemm_efficiency_by_k", read from the same table's largest
shapes) the model is 23-31% over the table at K = 512 and 31-51% at K = 256."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer

#: (b, m, n): the table's TFLOP/s at K = 256, 512, 1024, 2048, 4096 (the source's FLOP/s / 1e12,
#: one decimal).
XLA_SM90_BF16 = {
    (1, 4096, 4096): (392.2, 543.1, 677.4, 738.7, 783.3),
    (2, 4096, 2048): (394.5, 546.4, 680.9, 733.3, 783.2),
    (2, 4096, 4096): (464.0, 607.7, 693.0, 763.0, 807.7),
    (4, 2048, 2048): (394.8, 542.3, 674.0, 725.7, 779.1),
    (4, 2048, 4096): (458.9, 607.3, 688.6, 752.5, 801.9),
    (4, 4096, 1024): (393.3, 542.0, 673.8, 720.5, 777.6),
    (4, 4096, 2048): (458.5, 607.5, 687.9, 759.3, 808.7),
    (4, 4096, 4096): (503.9, 619.9, 725.5, 764.6, 793.1),
}
INNER = (256, 512, 1024, 2048, 4096)
SHAPES = [(b, m, n, k, rates[i]) for (b, m, n), rates in XLA_SM90_BF16.items() for i, k in enumerate(INNER)]


def model_tflops(b: int, m: int, n: int, k: int, by_k: bool = True) -> float:
    """The kernel model's rate of the table's dot on the H100 SXM (burst: the table's runs are short)."""
    timer = KernelTimer(load_hardware("h100-sxm"), "bf16")
    if not by_k:
        timer.gemm_by_k = ()
    return 2 * b * m * n * k / timer.gemm_seconds(Gemm(m, n, k, b)) / 1e12


@pytest.mark.parametrize("b, m, n, k, published", SHAPES)
def test_the_kernel_model_is_within_13_percent_of_xlas_h100_table(b, m, n, k, published):
    assert model_tflops(b, m, n, k) == pytest.approx(published, rel=0.13)


def test_without_the_rate_by_k_short_inner_widths_run_a_quarter_too_fast():
    over = [model_tflops(b, m, n, k, by_k=False) / published for b, m, n, k, published in SHAPES if k == 512]
    assert 1.22 < min(over) and max(over) < 1.31


def test_the_rate_by_k_is_the_tables_median_at_its_largest_outputs():
    """kernel_facts.json's points: at each K, the median rate of the four shapes of 32M outputs and
    more over their median at K = 4096."""
    from statistics import median

    from costmodel.kernel_rates import gemm_k_points

    largest = [(4, 4096, 4096), (4, 4096, 2048), (2, 4096, 4096), (4, 2048, 4096)]
    at_4096 = median(XLA_SM90_BF16[s][-1] for s in largest)
    expected = [(k, round(median(XLA_SM90_BF16[s][i] for s in largest) / at_4096, 3)) for i, k in enumerate(INNER)]
    assert gemm_k_points(load_hardware("h100-sxm"), "bf16") == tuple(expected)
    assert gemm_k_points(load_hardware("h100-sxm"), "fp8") == tuple(expected)  # borrowed: no fp8 sweep
    assert gemm_k_points(load_hardware("a100-80gb"), "bf16") == ()  # nor on Ampere


def test_the_8b_at_tp_8s_output_projection_loses_a_quarter_at_k_512():
    """torchtitan's Llama-3.1-8B at TP 8: wo is (98,304 tokens, N 4096, K 512) a rank; the table's
    K = 512 share, 0.755 (607.6 of 804.8 TFLOP/s), divides its tile time."""
    timer = KernelTimer(load_hardware("h100-sxm"), "bf16")
    wo = Gemm(98304, 4096, 512)
    assert timer.gemm_seconds(wo) - timer.dram_startup_s == pytest.approx(
        timer.gemm_compute_seconds(wo) / 0.755, rel=1e-9)
