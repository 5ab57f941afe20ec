"""Async TP under torchao's rowwise float8 (costmodel/layout/async_tp.py GATHER_THEN_CAST_RECIPES): torchtitan
gathers the sequence-parallel activations in bf16 and casts them after the gather, so torch's micro-pipeline
pass fuses none of the tensor-parallel all-gathers; the forward's row-parallel reduce-scatters (straight from
torch._scaled_mm) stay fused. tensorwise (Float8ColwiseParallel's FP8 gather) and bf16 keep the share."""

from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel.layout import ParallelEstimate, async_tp
from reports.published_runs import other_runs_data, train_setup

ROWWISE = "torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile asynctp float8 rowwise 64 GPUs"
BF16 = "torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile asynctp 64 GPUs"


def _setup(row):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == row)
    return train_setup(run, data["sources"]["torchtitan-asynctp"])


def test_the_8b_rowwise_row_fuses_only_the_forward_reduce_scatters():
    """Llama 3.1 8B, TP 8, local batch 12 x 8,192 tokens x 4,096 x 2 B = 805,306,368 bytes a collective.
    A micro-batch reduce-scatters 130 times (64 row outputs, the embedding's, 65 gradients of the gathers:
    the layers' 64 and the head's) and all-gathers 130 times, torchtitan's op policy 64 more (the
    reduce-scatters' outputs are kept, the gathers rerun), the loss 1,179,648 bytes: 324 x 805,306,368 +
    1,179,648. Fused under rowwise: the 64 forward reduce-scatters of wo's and w2's outputs; not the 194
    all-gathers, nor the 64 backward reduce-scatters of summed dgrads, the embedding's and the head's."""
    estimate, _, options = _setup(ROWWISE)
    x = 805_306_368
    assert estimate.numbers["boundary"] == 12 * 8192 * 4096 * 2 == x
    assert estimate.layout.fp8 == "rowwise"
    share = 64 * x / (324 * x + 1_179_648)
    assert async_tp.fused_share(estimate) == pytest.approx(share, rel=1e-12)
    assert options["overlap"].tp == pytest.approx(share, rel=1e-12)
    assert round(share, 4) == 0.1975


def test_bf16_and_tensorwise_keep_the_gathers_fused():
    """The same layout in bf16 or tensorwise: 256 of the 324 collectives fused (all but the 64 summed-dgrad
    reduce-scatters and the embedding's and head's two each)."""
    estimate, _, options = _setup(BF16)
    x = 805_306_368
    share = 256 * x / (324 * x + 1_179_648)
    assert async_tp.fused_share(estimate) == pytest.approx(share, rel=1e-12)
    tensorwise = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, fp8="tensorwise"))
    assert async_tp.fused_share(tensorwise) == pytest.approx(share, rel=1e-12)
    rowwise = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, fp8="rowwise"))
    assert async_tp.fused_share(rowwise) == pytest.approx(64 * x / (324 * x + 1_179_648), rel=1e-12)
