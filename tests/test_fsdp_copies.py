"""FSDP2's copies on the compute stream (costmodel/layout/fsdp_copies.py): formula == the bytes
torch 2.13's own fully_shard runs through fsdp.split_with_sizes_copy and fsdp.chunk_cat on gloo
(validate/distributed/fsdp_copies.py), and what they add to a published row's step.

By hand for TINY (tests/distributed_cases.py) on 2 ranks: the root holds 2 x 99 x 48 + 48 = 9,552
parameters (9,648 padded: 100 rows a matrix), each layer 11,568 (11,664 padded: d_ff 37 -> 38 rows),
so the rank's 32,688 parameters are 32,976 padded elements. In bf16 (MixedPrecisionPolicy bf16 /
fp32) the forward gathers all three units (65,952 bytes), the backward the two layers again
(46,656); each copy-out reads and writes them (112,608 each way); the reduce-scatter copy-in reads
the 32,688 bf16 gradients (65,376 bytes) and writes 32,976 fp32 (131,904).
"""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.fsdp_copies import copy_bytes
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


def test_no_copies_outside_fsdp2():
    assert tiny("bf16", framework="deepspeed") == {}
    assert tiny("bf16", dp=1, zero=3) == {}


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
