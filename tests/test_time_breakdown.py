"""validate/time_breakdown.py: where the kernel model spends a published decode step (issue 18)."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data
from validate.time_breakdown import decode_step_split


def _run(run_id: str) -> tuple[dict, dict]:
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return run, data["sources"]["gpt-fast"]


def test_batch_one_bf16_decoding_reads_the_weights_at_the_achievable_bandwidth():
    run, source = _run("gpt-fast llama2-7b bf16")
    split = decode_step_split(run, source, context=105)
    # a100-80gb: 2,039 GB/s at the stated memory efficiency 0.8 (the GEMVs' activations, 0.04% of
    # the bytes, move too); CUDA graphs: no launches.
    assert split["weights GB/s"] == pytest.approx(0.8 * 2039, rel=1e-3)
    assert split["weights GB/s"] < 0.8 * 2039
    assert split["launches"] == 0.0
    assert split["weight GEMMs"] > 0.99 * sum(v for k, v in split.items() if k != "weights GB/s")


def test_int4_weights_at_batch_one_are_bound_by_the_tile_not_the_bytes():
    """A 1-row GEMM computes whole 64-row tiles: with int4 weights the tile's tensor-core time
    exceeds the bytes' (the model's reading, FINDINGS "Issue 18": 1.28x of gpt-fast's int4)."""
    run, source = _run("gpt-fast llama2-7b int4 g32")
    split = decode_step_split(run, source, context=105)
    assert split["weights GB/s"] < 0.8 * 2039 * 0.7
