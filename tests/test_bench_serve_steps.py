"""The summaries benchmarks/bench_serve_steps.py reports about measured CPU engine steps (the
measurement's own spread, each step pooled over rounds, its misses by what the step was, the same
step across rounds), on made-up rounds whose every figure is known."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_serve_steps as bench  # noqa: E402


def _step(kind: str, measured: float, predicted: float, repeats=None, **features) -> dict:
    base = {"kind": kind, "queries": [1, 1] if kind == "decode" else [1, 7], "keys": [5, 9],
            "joined": False, "after_finish": False, "blocks": 0, "alone": False, "faults": [0, 0, 0]}
    return {**base, **features, "measured_s": measured, "kernels_s": predicted,
            "repeats_s": repeats or [measured] * 3}


def _rounds() -> list[dict]:
    first = [_step("mixed", 9.0, 9.0),  # the first step: left out of every summary
             _step("decode", 1.0, 1.0, repeats=[0.7, 1.0, 1.1]),
             _step("decode", 2.0, 1.0, after_finish=True),
             _step("mixed", 3.0, 2.0, joined=True, faults=[300, 300, 0])]
    second = [_step("mixed", 9.0, 9.0),
              _step("decode", 1.2, 1.0),
              _step("decode", 3.0, 2.0, after_finish=True),
              _step("mixed", 4.0, 3.0, joined=True, faults=[300, 0, 0])]
    third = [_step("mixed", 9.0, 9.0),
             _step("decode", 1.1, 1.0),
             _step("decode", 2.5, 1.5, after_finish=True),
             _step("mixed", 3.5, 2.5, joined=True, faults=[0, 0, 300])]
    return [{"steps": steps} for steps in (first, second, third)]


def test_the_measurements_own_spread():
    rows = _rounds()[0]["steps"][1:]
    # the one decode step with three different repeats: 0.7 is 30% under its median 1.0
    spread = bench.spread(rows, "decode")
    assert spread["repeats_within_25pct_of_their_median"] == pytest.approx(5 / 6)
    assert spread["median_abs_deviation"] == 0.0
    assert bench.within([0.75, 1.25, 0.74, 1.26]) == 0.5


def test_each_step_pooled_over_rounds_and_its_misses_by_feature():
    steps = bench.pooled(_rounds(), "kernels")
    assert [s["step"] for s in steps] == [1, 2, 3]
    # median measured over median predicted: 1.1 / 1.0; 2.5 / 1.5; 3.5 / 2.5
    assert [s["ratio"] for s in steps] == pytest.approx([1.1, 2.5 / 1.5, 3.5 / 2.5])
    assert [s["faults"] for s in steps] == [0, 0, 0]  # the median of all nine repeats' faults
    assert steps[1]["predictions_over_their_median"] == pytest.approx([1.0 / 1.5, 2.0 / 1.5])
    features = bench.by_feature(steps)
    assert features["decode with after_finish"] == {"steps": 1, "median_ratio": pytest.approx(2.5 / 1.5),
                                                    "share_within_25pct": 0.0}
    assert features["decode without after_finish"]["share_within_25pct"] == 1.0
    assert features["mixed with joined"]["steps"] == 1 and "mixed without joined" not in features
    assert features["mixed without faults"]["steps"] == 1  # a median of 0 faults: not faulting


def test_the_same_step_across_rounds():
    across = bench.across_rounds(_rounds())
    # measured: step 1 (1.0, 1.2, 1.1) all within 25% of 1.1; step 2 (2.0, 3.0, 2.5) all within
    # 25% of 2.5; step 3 (3.0, 4.0, 3.5) all within; predicted: step 2 (1.0, 2.0, 1.5) 1.0 and 2.0
    # are 33% off 1.5; step 3 (2.0, 3.0, 2.5) within
    assert across["measured_within_25pct_of_their_median"] == 1.0
    assert across["predicted_within_25pct_of_their_median"] == pytest.approx(7 / 9)
