"""FSDP2's copies on the compute stream (costmodel/layout/fsdp_copies.py): formula == the bytes
torch 2.13's own fully_shard runs through fsdp.split_with_sizes_copy and fsdp.chunk_cat on gloo
(validate/distributed/fsdp_copies.py), and what they add to a published row's step.

By hand for TINY (tests/distributed_cases.py) on 2 ranks: the root holds 2 x 99 x 48 + 48 = 9,552
parameters (9,648 padded: 100 rows a matrix), each layer 11,568 (11,664 padded: d_ff 37 -> 38 rows),
so the rank's 32,688 parameters are 32,976 padded elements. In bf16 (MixedPrecisionPolicy bf16 /
fp32) the forward gathers all three units (65,952 bytes), the backward the two layers again
(46,656); each copy-out reads and writes them (112,608 each way); the reduce-scatter copy-in reads
the 32,688 bf16 gradients (65,376 bytes) and writes 32,976 fp32 (131,904). The edges
(edge_seconds): the root's 4,824 padded elements a rank and a layer's 5,832, 10,656 x 2 ranks, gathered
in bf16 (42,624 bytes) and reduce-scattered in fp32 (85,248), two calls each.

OLMo-core's 13B row (costmodel/published_runs.json, 8 H100s, micro-batch 1 x 4,096, 256 micro-batches,
13,716,198,400 parameters, 40 layers of 317,214,720, the root 2 x 100,352 x 5,120 + 5,120 =
1,027,609,600; nothing padded at 8): a micro-batch gathers 13,716,198,400 + 40 x 317,214,720 =
26,404,787,200 bf16 elements (copy-out 52,809,574,400 bytes each way), and its copy-in reads
27,432,396,800 bytes and writes 54,864,793,600.
"""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.fsdp_copies import copy_bytes, edge_seconds
from costmodel.layout.timing import step_time
from tests.distributed_cases import TINY

REFERENCE = Workload(seq_len=8, batch=2, dtype="fp32", impl="reference", precision="pure")


def tiny(dtype: str, **layout) -> dict[str, int]:
    estimate = ParallelEstimate(TINY, REFERENCE.replace(dtype=dtype),
                                Layout(**{"dp": 2, "zero": 3, "framework": "fsdp2", "device": "cpu", **layout}))
    return copy_bytes(estimate, estimate.stages[0])


def test_the_copies_by_hand():
    assert tiny("bf16") == {"copy_out_read": 112_608, "copy_out_written": 112_608,
                            "chunk_cat_read": 65_376, "chunk_cat_written": 131_904}
    assert tiny("fp32") == {"copy_out_read": 225_216, "copy_out_written": 225_216,
                            "chunk_cat_read": 130_752, "chunk_cat_written": 131_904}
    # --zero 2 (reshard_after_forward False): no gather in the backward, no copy-out there
    assert tiny("bf16", zero=2)["copy_out_read"] == 65_952


def test_the_edges_by_hand():
    from costmodel.hardware import load_hardware

    estimate = ParallelEstimate(TINY, REFERENCE.replace(dtype="bf16"),
                                Layout(dp=2, zero=3, framework="fsdp2", device="cpu"))
    timer = step_time(estimate, load_hardware("h100-sxm"))
    edge = timer.collective("dp", "all_gather", 42_624, 2) + timer.collective("dp", "reduce_scatter", 85_248, 2)
    assert edge_seconds(timer, estimate.stages[0]) == pytest.approx(edge, rel=1e-12)
    megatron = ParallelEstimate(TINY, REFERENCE.replace(dtype="bf16"),
                                Layout(dp=2, zero=3, framework="megatron", device="cpu"))
    assert edge_seconds(step_time(megatron, load_hardware("h100-sxm")), megatron.stages[0]) == 0.0


@pytest.mark.slow
def test_olmo_core_13b_row():
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "olmo-core olmo2-13b bf16 8xh100")
    estimate, hardware, options = train_setup(run, data["sources"]["olmo-core"])
    timer = step_time(estimate, hardware, time_model="kernels", **options)
    assert estimate.layout.microbatches == 256
    assert copy_bytes(estimate, estimate.stages[0]) == {
        "copy_out_read": 52_809_574_400, "copy_out_written": 52_809_574_400,
        "chunk_cat_read": 27_432_396_800, "chunk_cat_written": 54_864_793_600}
    step = timer.step()
    assert step["fsdp_copy_seconds"] == pytest.approx(256 * 187_916_339_200 / timer.bytes_per_s, rel=1e-12)
    root, layer = 1_027_609_600, 317_214_720
    edge = timer.collective("dp", "all_gather", 2 * (root + layer), 2) \
        + timer.collective("dp", "reduce_scatter", 4 * (root + layer), 2)
    assert edge_seconds(timer, estimate.stages[0]) == pytest.approx(edge, rel=1e-9)
    assert step["exposed_communication_seconds"]["dp"] == pytest.approx(256 * edge, rel=1e-9)


def test_no_copies_outside_fsdp2():
    assert tiny("bf16", framework="deepspeed") == {}
    assert tiny("bf16", dp=1, zero=3) == {}
    # under a pipeline schedule torch's pipelining drives the units (one reduce a step): not this rule
    assert tiny("bf16", pp=2, microbatches=2) == {}


@pytest.mark.slow
def test_copies_equal_fully_shard_on_two_gloo_processes():
    """One training step of torch 2.13's fully_shard (every layer, then the root) on 2 CPU ranks,
    fp32 and bf16 / fp32: the copy ops' calls and bytes, forward and backward."""
    from validate.distributed.fsdp import FsdpCase
    from validate.distributed.fsdp_copies import measure_copies
    from validate.distributed.launch import run_gloo, run_jobs

    jobs = [(measure_copies, FsdpCase(TINY, memory_tracker=False, mixed_precision=mixed)) for mixed in (False, True)]
    by_rank = run_gloo(run_jobs, 2, jobs, timeout_s=300)
    for (fp32, bf16) in by_rank:
        for measured, dtype in ((fp32, "fp32"), (bf16, "bf16")):
            model = tiny(dtype)
            forward, backward = measured["forward"], measured["backward"]
            out = forward["split_with_sizes_copy"], backward["split_with_sizes_copy"]
            assert (out[0]["calls"], out[1]["calls"], backward["chunk_cat"]["calls"]) == (3, 2, 3)
            assert "chunk_cat" not in forward
            assert out[0]["read"] + out[1]["read"] == model["copy_out_read"]
            assert out[0]["written"] + out[1]["written"] == model["copy_out_written"]
            assert backward["chunk_cat"]["read"] == model["chunk_cat_read"]
            assert backward["chunk_cat"]["written"] == model["chunk_cat_written"]
