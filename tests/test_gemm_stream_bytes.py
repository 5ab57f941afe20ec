"""A GEMM's bytes by the stream it is (session 45, the time model review's findings 4 and 5): a GEMM that writes
more than it reads at the copy stream's measured rate, one that reads at least what it writes at the
read-and-reduce (Dot) rate; an FP8 recipe's GEMMs read their operands at the recipe's element. Odd shapes
(3,000 x 2,000 x 16 and its transpose), bytes-bound, so each time is its bytes over one rate plus the DRAM start."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.hardware import Efficiency, load_hardware, schema_problems
from costmodel.kernel_time import Gemm, KernelTimer
from costmodel.layout.fp8 import RECIPES

A100_DOT, A100_COPY, A100_START = 1586.905948e9, 1709.3608e9, 1.96e-6  # a100-80gb.json: BabelStream Dot, Copy
H100_GEMV, H100_START = 3016.544e9, 1.955e-6  # h100-sxm.json: Vidur's GEMV fit, no copy stream measured
WRITES = Gemm(3000, 2000, 16)  # reads 2 x (3,000 x 16 + 16 x 2,000) = 160,000 B, writes 2 x 3,000 x 2,000 = 12,000,000
READS = Gemm(16, 2000, 3000)  # reads 2 x (16 x 3,000 + 3,000 x 2,000) = 12,096,000 B, writes 2 x 16 x 2,000 = 64,000


def test_a_write_dominated_gemm_streams_at_the_copy_rate_a_read_dominated_one_at_the_dot():
    timer = KernelTimer(load_hardware("a100-80gb"), "bf16", sustained=True)
    assert timer.gemm_seconds(WRITES) == pytest.approx(A100_START + 12_160_000 / A100_COPY, rel=1e-12)
    assert timer.gemm_seconds(READS) == pytest.approx(A100_START + 12_160_000 / A100_DOT, rel=1e-12)
    assert timer.stream_rate(1.0, 1.0) == A100_DOT  # as many read as written: the Dot's


def test_without_a_measured_copy_stream_every_gemm_keeps_the_gemv_rate():
    timer = KernelTimer(load_hardware("h100-sxm"), "bf16", sustained=True)
    assert timer.gemm_seconds(WRITES) == pytest.approx(H100_START + 12_160_000 / H100_GEMV, rel=1e-12)
    assert timer.gemm_seconds(READS) == pytest.approx(H100_START + 12_160_000 / H100_GEMV, rel=1e-12)


def test_a_given_memory_efficiency_replaces_both_measured_rates():
    timer = KernelTimer(load_hardware("a100-80gb"), "bf16", efficiency=Efficiency(0.7, 0.5, given=("memory",)))
    for gemm in (WRITES, READS):
        assert timer.gemm_seconds(gemm) == pytest.approx(A100_START + 12_160_000 / (2039e9 * 0.5), rel=1e-12)


def test_fp8_recipes_operand_bytes():
    # one byte an FP8 element; MXFP8 and NVFP4 their data and an E8M0 / E4M3 scale a 32 / 16 elements
    assert {name: recipe.gemm_operand_bytes for name, recipe in RECIPES.items()} == {
        "tensorwise": 1, "rowwise": 1, "current": 1, "delayed": 1, "blockwise": 1, "mxfp8": 1.03125, "nvfp4": 0.5625}


def test_an_fp8_gemm_reads_its_operands_in_one_byte_and_writes_the_data_dtype():
    hardware = load_hardware("h100-sxm")
    fp8 = KernelTimer(hardware, "bf16", matmul_dtype="fp8", sustained=True, operand_bytes=1)
    # 1 x (48,000 + 32,000) read + 2 x 6,000,000 written, where bf16 operands read 160,000
    assert fp8.gemm_seconds(WRITES) == pytest.approx(H100_START + 12_080_000 / H100_GEMV, rel=1e-12)
    unscaled = KernelTimer(hardware, "bf16", matmul_dtype="fp8", sustained=True)
    assert unscaled.gemm_seconds(WRITES) == pytest.approx(H100_START + 12_160_000 / H100_GEMV, rel=1e-12)
    # the transpose: 1 x 6,048,000 read, 2 x 32,000 written; its backward's two GEMMs read the same element
    assert fp8.gemm_seconds(READS) == pytest.approx(H100_START + 6_112_000 / H100_GEMV, rel=1e-12)


MINIMAL = {"name": "x", "flops_per_s": {"bf16": 1e14}, "bandwidth_bytes_per_s": 1e12, "memory_bytes": 2**34}


def test_a_copy_stream_above_the_bandwidth_or_zero_is_refused():
    assert schema_problems(dict(MINIMAL, copy_stream_bandwidth_bytes_per_s=9e11)) == []
    assert schema_problems(dict(MINIMAL, copy_stream_bandwidth_bytes_per_s=1.1e12)) == [
        "copy_stream_bandwidth_bytes_per_s (1.1e+12) must be at most bandwidth_bytes_per_s (1e+12): a copy stream "
        "moves memory at no more than its bandwidth; leave it out (none measured: the GEMV rate) or to this "
        "card's measured rate"]
    assert schema_problems(dict(MINIMAL, copy_stream_bandwidth_bytes_per_s=0)) == [
        "copy_stream_bandwidth_bytes_per_s must be greater than 0, got 0"]


def test_an_edited_copy_of_the_a100_keeping_its_copy_stream_is_one_line(tmp_path, capsys):
    assert cli.main(["hardware", "--show", "a100-80gb"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["copy_stream_bandwidth_bytes_per_s"] == 1_709_360_800_000.0
    data.update(name="a100-slow", bandwidth_bytes_per_s=1.8e12, gemv_bandwidth_bytes_per_s=0.0)
    path = tmp_path / "a100-slow.json"
    path.write_text(json.dumps(data))
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", str(path), "--prompt", "100", "--gen", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "copy_stream_bandwidth_bytes_per_s is still a100-80gb's measured 1.709e+12" in err
    del data["copy_stream_bandwidth_bytes_per_s"]
    path.write_text(json.dumps(data))
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", str(path), "--prompt", "100", "--gen", "2"]) == 0
