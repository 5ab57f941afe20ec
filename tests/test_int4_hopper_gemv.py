"""The Hopper int4 GEMV rate (kernel_facts.json "weight_only_gemv", int4, hopper), fitted by
validate/int4_hopper_gemv.py from the repository's three H200 measurements."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer, kernel_facts
from validate.int4_hopper_gemv import FULL_SHAPES, fit, int4_fraction, shapes, shard_rates


def test_the_fit_is_least_squares_of_a_start_and_a_rate():
    # Three points on t = 2 us + bytes / 1 TB/s give back both terms.
    a, rate = fit([(1e6, 2e-6 + 1e-6), (2e6, 2e-6 + 2e-6), (5e6, 2e-6 + 5e-6)])
    assert a == pytest.approx(2e-6) and rate == pytest.approx(1e12)


def test_the_three_h200_runs_give_the_stored_rate():
    stored = shapes()
    assert len(stored) == 33 and {s["device"] for s in stored} == {"NVIDIA H200"}
    assert len([s for s in stored if (s["n"], s["k"]) in FULL_SHAPES]) == 21
    terms = int4_fraction(stored)
    assert terms["int4_rate"] == pytest.approx(1.941e12, rel=1e-3)
    assert terms["bf16_rate"] == pytest.approx(4.444e12, rel=1e-3)
    assert terms["fraction"] == pytest.approx(0.437, abs=1e-3)
    # Each group alone within 1.5% of the pooled figure: the time follows the stored bytes.
    for group in ("32", "64", "128"):
        assert terms[f"fraction_g{group}"] == pytest.approx(terms["fraction"], rel=0.015)
    (entry,) = [e for e in kernel_facts()["weight_only_gemv"] if e["architecture"] == "hopper"]
    assert entry["weight_dtype"] == "int4" and entry["tokens"] == 1
    assert entry["bytes_per_s"] == pytest.approx(terms["int4_rate"], rel=1e-3)
    assert (entry["measured_sms"], entry["measured_clock_mhz"]) == (132, 1980)


def test_the_70b_tp8_shards_with_few_blocks_run_slower():
    # N / 8 thread blocks at one token: 160 (N = 1,280) and 448 (3,584) against 132 SMs.
    rates = shard_rates()
    assert rates[(1280, 8192)] == pytest.approx(0.53, abs=0.01)
    assert rates[(3584, 8192)] == pytest.approx(0.90, abs=0.01)
    assert rates[(8192, 1024)] > 1.0 and rates[(8192, 3584)] > 0.95
    # The facts carry them by blocks (N / 8) on the measured 132 SMs; 512 blocks, the fitted
    # shapes' fewest, at the fitted rate.
    (entry,) = [e for e in kernel_facts()["weight_only_gemv"] if e["architecture"] == "hopper"]
    assert entry["block_columns"] == 8
    assert entry["by_blocks"] == {"160": pytest.approx(rates[(1280, 8192)], abs=0.005),
                                  "448": pytest.approx(rates[(3584, 8192)], abs=0.005), "512": 1.0}


def test_an_int4_gemv_on_hopper_moves_its_bytes_at_the_h200_measured_rate_per_sm_and_clock():
    # The repository's H200 measurements (validate/int4_hopper_gemv.py, three runs of hardware
    # --measure): _weight_int4pack_mm at one token moves its stored bytes at 1.941 TB/s, 0.437 of
    # the bf16 GEMV's rate measured alike, the SMs binding (132 at 1,980 MHz). The H100 SXM has the
    # same SMs and clock and a faster GEMV rate (3,016.5 GB/s): the same 1.941 TB/s.
    stored = 4096 * 11008 // 2 + 4096 * (11008 // 64) * 4  # 4-bit values, a bf16 scale and zero per group of 64
    moved = 2 * (11008 + 4096) + stored
    gemv = Gemm(1, 4096, 11008, weight_bytes=stored, weight_dtype="int4")
    h100 = KernelTimer(load_hardware("h100-sxm"), "bf16")
    kernel = h100.weight_only_gemv["int4"]
    assert list(h100.weight_only_gemv) == ["int4"] and (kernel.tokens, kernel.rate) == (1, 1.941e12)
    assert h100.gemm_seconds(gemv) == pytest.approx(1.955e-6 + moved / 1.941e12)
    assert h100.gemm_seconds(gemv) == pytest.approx((1.955 + 13.0822) * 1e-6, rel=1e-5)  # 25,362,432 B stored
    # The H100 PCIe: 114 SMs at 1,755 MHz, its GEMV rate (2.0 TB/s x 0.8) above that: per SM and clock;
    # its 160 blocks are 185.3 on 132 SMs (log-linear between the points).
    pcie = load_hardware("h100-pcie")
    at_pcie = 0.53 + (0.895 - 0.53) * math.log(160 * 132 / 114 / 160) / math.log(448 / 160)
    assert KernelTimer(pcie, "bf16").weight_only_gemv["int4"].rate_at(1280, 114) == pytest.approx(
        at_pcie * 1.941e12 * 114 * 1755 / (132 * 1980))
    assert (pcie.sm_count, pcie.clock_mhz) == (114, 1755)
    assert KernelTimer(pcie, "bf16").weight_only_gemv["int4"].rate == pytest.approx(1.941e12 * 114 * 1755 / (132 * 1980))
    # A GPU whose GEMV rate is below the SMs' rate: the DRAM binds (torchao's H100 of 2.4 TB/s, no
    # measured GEMV rate: 0.8 x 2.4 = 1.92 TB/s).
    slow = replace(load_hardware("h100-sxm"), bandwidth_bytes_per_s=2.4e12, gemv_bandwidth_bytes_per_s=0.0)
    slow_kernel = KernelTimer(slow, "bf16").weight_only_gemv["int4"]
    assert (slow_kernel.rate, slow_kernel.cap) == (1.941e12, pytest.approx(1.92e12))
    assert slow_kernel.rate_at(4096, 132) == pytest.approx(1.92e12)
    # ... and where few blocks slow the SMs below it, they bind: 0.53 x 1.941 TB/s at 160 blocks.
    assert slow_kernel.rate_at(1280, 132) == pytest.approx(0.53 * 1.941e12)
    # Fewer thread blocks (N / 8 at one token, int4mm.cu) than the fitted shapes' 512 on 132 SMs: the
    # measured shards' points, log-linear between them. Llama-2-70B's tp 8 wqkv shard, N = 1,280: 160
    # blocks, 0.53 of the rate; N = 2,048 (256 blocks) between 0.53 (160) and 0.895 (448).
    assert kernel.rate_at(1280, 132) == pytest.approx(0.53 * 1.941e12)
    assert kernel.rate_at(4096, 132) == kernel.rate_at(14336, 132) == 1.941e12
    between = 0.53 + (0.895 - 0.53) * math.log(256 / 160) / math.log(448 / 160)
    assert kernel.rate_at(2048, 132) == pytest.approx(between * 1.941e12)
    assert kernel.rate_at(640, 132) == pytest.approx(0.53 * 1.941e12)  # below the points: the end value
    shard = Gemm(1, 1280, 8192, weight_bytes=1280 * 8192 // 2 + 1280 * (8192 // 64) * 4, weight_dtype="int4")
    assert h100.gemm_seconds(shard) == pytest.approx(
        1.955e-6 + (2 * (8192 + 1280) + 1280 * 8192 // 2 + 1280 * 128 * 4) / (0.53 * 1.941e12))
    # Two tokens are past the measurement's one: the tile model.
    two = Gemm(2, 4096, 11008, weight_bytes=stored, weight_dtype="int4")
    assert h100.gemm_seconds(two) == pytest.approx(
        1.955e-6 + max(h100.gemm_compute_seconds(two), (2 * 2 * (11008 + 4096) + stored) / 3016.544e9))
