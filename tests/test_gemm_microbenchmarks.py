"""The kernel model's GEMM time against published matmul microbenchmarks (validate/gemm_microbenchmarks.py,
its data and sources in validate/gemm_microbenchmarks.json; wt30_gemm, session 30). Each bound is the
spread measured when the comparison was built (validate/FINDINGS.md, "GEMM rates against published
matmul microbenchmarks"); a ratio is model TFLOP/s over published TFLOP/s."""

from __future__ import annotations

import pytest

from validate.gemm_microbenchmarks import (a100_square_points, a100_square_shape, main, mamf_points, randn_points,
                                           spread, table, xla_points)


def test_the_data_holds_the_published_figures_as_typed():
    data = table()
    assert ["a100-80gb", "bf16", 271.2, 1024, 10240, 5120] == data["mamf"]["rows"][0][:6]
    assert len(data["mamf"]["rows"]) == 16
    assert dict(data["a100_cublas_square"]["rows"])[4096] == 258.0
    assert len(data["a100_cublas_square"]["rows"]) == 32
    tables = data["xla_matmul_table"]["tables"]
    assert {name: len(rows) for name, rows in tables.items()} == {
        "h100-sxm bf16": 375, "b200 bf16": 375, "b200 fp8": 375, "mi300x bf16": 375}
    assert [4, 4096, 2048, 4096, 804.7] in tables["h100-sxm bf16"]  # the H100 table's best rate


def test_mamf_best_shapes_within_six_percent_below_and_none_above():
    """matmul_efficiency is each file's MAMF over its peak, so at the MAMF's own shape the model gives
    it back less its tile and K quantization: 0.948 (H200 FP8) to 1.001 (MI325X)."""
    ratios = {(p.hardware, p.dtype): p.ratio for p in mamf_points()}
    assert len(ratios) == 16
    assert all(0.94 <= r <= 1.005 for r in ratios.values()), ratios
    assert ratios[("a100-pcie", "bf16")] == pytest.approx(0.984, abs=0.002)  # 0.850 at the generic 0.7


def test_a100_randn_8192_at_the_sustained_rate():
    (point,) = randn_points()
    assert point.ratio == pytest.approx(0.998, abs=0.002)


def test_the_a100_curve_dips_where_the_model_stays_flat():
    """A disagreement found, not fixed in the model: from 3,840 up cuBLAS's curve dips and recovers (4,352:
    0.84 of its 8,192 point; 4,608: 0.94; 5,120-5,376: 0.89; 5,632: 0.96) where the model, filling waves
    with 64-wide tiles at one rate, stays at 0.98-1.00. wt30_gemm explained the dips by 256 x 128 tiles'
    wave breaks on 108 SMs, but that tile rule put Korthikanti et al.'s 22B rows (A100, Megatron) 9% slow,
    past the issue's 5% on every row, so it stays on its branch until a GPU's GEMM grid at LLM shapes
    settles which tiles cuBLAS picks (validate/FINDINGS.md, "Merging session 30's branches")."""
    shape = {s: (published, model) for s, published, model in a100_square_shape()}
    assert shape[4352][0] == pytest.approx(0.841, abs=0.001) and shape[4352][1] == pytest.approx(0.995, abs=0.002)
    assert shape[4608][1] == pytest.approx(1.0, abs=0.002)
    assert shape[5376][0] < shape[5632][0] - 0.07 and abs(shape[5376][1] - shape[5632][1]) < 0.01
    ratios = [model / published for s, (published, model) in shape.items() if s >= 3840]
    count, median, low, high = spread(ratios)
    assert count == 18 and median == pytest.approx(1.048, abs=0.002) and low >= 0.999 and high < 1.19


def test_the_a100_curve_values_from_2048():
    count, median, low, high = spread([p.ratio for p in a100_square_points() if p.m >= 2048])
    assert count == 25 and median == pytest.approx(1.008, abs=0.002) and low > 0.92 and high < 1.28


def test_xla_h100_large_gemms_within_eight_percent():
    count, median, low, high = spread([p.ratio for p in xla_points("h100-sxm bf16") if p.large])
    assert count == 57 and median == pytest.approx(0.983, abs=0.002) and low > 0.92 and high < 1.05


@pytest.mark.parametrize("name, median", [("b200 bf16", 1.352), ("b200 fp8", 1.401), ("mi300x bf16", 1.218)])
def test_xla_b200_and_mi300x_large_gemms_the_model_is_fast(name, median):
    """Found, and on the MI300X narrowed (wt33_bwgemm): its short-K loss is now the gfx942 table's rate by K
    (kernel_facts.json gemm_efficiency_by_k, cdna3; 1.307 before), the rest a level XLA's ROCm kernels
    measure 0.85-0.9 of hipBLASLt's (Bekman's MAMF, AMD's MAF at K 32,896). The B200 stays: XLA's sm_100
    kernels pay an output store that does not overlap the main loop (test_gemm_rates_by_source.py), which
    cuBLAS's best shapes at K 1,024-3,072 show it does not pay. Pinned so a change that moves it says so."""
    count, got, low, _ = spread([p.ratio for p in xla_points(name) if p.large])
    assert count == 57 and got == pytest.approx(median, abs=0.002) and low > 1.03


def test_cli_prints_the_summary_and_refuses_other_arguments(capsys):
    assert main([]) == 0
    assert "MAMF (best shape, burst)" in capsys.readouterr().out
    assert main(["--fit"]) == 0
    assert "b200 bf16" in capsys.readouterr().out
    assert main(["--bogus"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
