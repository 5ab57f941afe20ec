"""The Blackwell and CDNA3 files' GEMM rates against the sources they are read from (wt33_bwgemm,
session 33): each file's large-GEMM efficiency is its source's measured rate over its datasheet peak;
CDNA3's rate by inner width K is OpenXLA's gfx942 table read as Hopper's sm_90 one; Blackwell has
none, because cuBLAS's measured best shapes refute the short-K loss XLA's sm_100 table shows
(kernel_facts.json "gemm_efficiency_by_k", its source; validate/gemm_microbenchmarks.py --fit)."""

from __future__ import annotations

from statistics import median

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_rates import gemm_k_points
from validate.gemm_microbenchmarks import fixed_and_marginal, mamf_points, table

#: (preset, dtype): "measured TFLOP/s of peak" as each file's source states it.
MEASURED = {
    ("b200", "bf16"): "1745.0 of 2250", ("b200", "fp8"): "3432.5 of 4500",  # Bekman MAMF
    ("gb200", "bf16"): "1822.0 of 2500", ("gb200", "fp8"): "3615.6 of 5000",  # Bekman MAMF, the GB200 rows
    ("b300", "bf16"): "1769.0 of 2250", ("b300", "fp8"): "3353.3 of 4500",  # Bekman MAMF
    ("mi300x", "bf16"): "668.4 of 1300", ("mi300x", "fp8"): "1273 of 2614.9",  # MAMF (TunableOp); AMD MAF Table 1
    ("mi325x", "bf16"): "784.9 of 1300", ("mi325x", "fp8"): "1519 of 2614.9",  # MAMF (TunableOp); AMD MAF Table 1
}


@pytest.mark.parametrize("preset, dtype", sorted(MEASURED))
def test_each_files_large_gemm_efficiency_is_its_sources_rate_over_the_peak(preset, dtype):
    stated = MEASURED[preset, dtype]
    rate, peak = (float(x) for x in stated.split(" of "))
    hardware = load_hardware(preset)
    assert stated in hardware.source
    assert hardware.matmul_efficiency[dtype] == round(rate / peak, 3)
    if dtype == "bf16":
        assert hardware.matmul_efficiency["fp16"] == hardware.matmul_efficiency["bf16"]
        mamf = {(r[0], r[1]): r[2] for r in table()["mamf"]["rows"]}
        assert mamf[preset, "bf16"] == rate  # the comparison table holds the same row


def test_gb300_has_no_measured_rate_and_gb200_no_sustained_one():
    """No MAMF row for the GB300: its GEMMs run at the generic efficiency.compute, stated in its file;
    the GB200's training steps hold its MAMF x the B200's MSMF / MAMF (no GB200 MSMF row)."""
    gb300, gb200 = load_hardware("gb300"), load_hardware("gb200")
    assert gb300.matmul_efficiency == {} and "no matmul_efficiency" in gb300.source
    assert gb200.sustained_matmul_efficiency == {} and "no sustained (MSMF) row for the GB200" in gb200.source


def test_cdna3s_rate_by_k_is_the_gfx942_tables_median_at_its_largest_outputs():
    largest = [(4, 4096, 4096), (4, 4096, 2048), (2, 4096, 4096), (4, 2048, 4096)]
    rates = {(b, m, n, k): r for b, m, n, k, r in table()["xla_matmul_table"]["tables"]["mi300x bf16"]}
    at_4096 = median(rates[s + (4096,)] for s in largest)
    assert at_4096 == 569.5
    expected = tuple((k, round(median(rates[s + (k,)] for s in largest) / at_4096, 3))
                     for k in (256, 512, 1024, 2048, 4096))
    assert expected == ((256, 0.591), (512, 0.754), (1024, 0.885), (2048, 0.958), (4096, 1.0))
    for preset in ("mi300x", "mi325x"):  # the same gfx942 die
        for dtype in ("bf16", "fp16", "fp8"):  # fp8 borrowed, as Hopper's
            assert gemm_k_points(load_hardware(preset), dtype) == expected
    assert gemm_k_points(load_hardware("mi355x"), "bf16") == ()  # CDNA4: no sweep


def test_xlas_b200_time_is_a_fixed_part_growing_with_the_outputs_plus_flops_at_the_mamf_rate():
    """Fit time = fixed + K x slope at K 1,024-4,096: the B200's fixed part grows with the outputs
    (an output store that does not overlap the main loop), its marginal rate 0.91-1.04 of its MAMF."""
    fits = {outputs >> 20: (shapes, round(fixed, 1), round(marginal, 1))
            for outputs, shapes, fixed, marginal in fixed_and_marginal("b200 bf16")}
    assert fits == {8: (9, 8.0, 1591.0), 16: (6, 10.5, 1587.5), 32: (3, 16.6, 1608.3), 64: (1, 26.5, 1815.4)}
    assert 0.90 < min(m for _, _, m in fits.values()) / 1745.0 and max(m for _, _, m in fits.values()) / 1745.0 < 1.05


def test_blackwell_keeps_the_large_gemm_rate_at_short_k_as_cublass_best_shapes_show():
    """Bekman's MAMF best shapes on Blackwell sit at K 1,024-3,072 (B300 BF16 at K 1,024); with XLA's B200
    K sweep (K 1,024: 0.793 of K 4,096) the model would give the B300's back at 0.79."""
    for preset in ("b200", "gb200", "b300", "gb300"):
        assert gemm_k_points(load_hardware(preset), "bf16") == ()
    ratios = {(p.hardware, p.dtype): (p.k, p.ratio) for p in mamf_points()}
    short = {key: v for key, v in ratios.items() if key[0] in ("b200", "gb200", "b300") and v[0] <= 3072}
    assert sorted(short) == [("b200", "bf16"), ("b200", "fp8"), ("b300", "bf16"), ("gb200", "bf16"), ("gb200", "fp8")]
    assert all(r > 0.99 for _, r in short.values())
    hopper_and_cdna = [k for (hw, _), (k, _) in ratios.items() if hw.startswith(("h1", "h2", "gh", "mi"))]
    assert min(hopper_and_cdna) == 4096  # their best shapes all at K 4,096 and more
