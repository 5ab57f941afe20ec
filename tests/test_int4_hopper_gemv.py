"""The Hopper int4 GEMV rate (kernel_facts.json "weight_only_gemv", int4, hopper), fitted by
validate/int4_hopper_gemv.py from the repository's three H200 measurements."""

from __future__ import annotations

import pytest

from costmodel.kernel_time import kernel_facts
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
