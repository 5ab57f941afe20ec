"""FSDP2 under torch's pipelining (costmodel/layout/fsdp_pipeline.py): the gathers and reduce-
scatters of a step as torch 2.13's pipeline runtime issues them.
The UNSHARD counts are torch's own: ScheduleInterleaved1F1B._calculate_single_rank_operations
lowered by _add_unshard_reshard (max_active_stages 3), counted per local stage (/tmp script of
session 28, and test_the_lowering_equals_torchs below where torch is installed): DeepSeek-V3's
1,024-GPU AutoModel row (pp 4, 8 local stages, 32 micro-batches) rank 0 gathers its stages
10, 10, 16, 9, 9, 9, 16, 8 times (87), rank 3 85; Kimi K2's (pp 8, 4 local stages, 16 micro-batches)
rank 0 4, 3, 3, 1 (11), rank 7 3, 3, 1, 2 (9); torchtitan's 405B interleaved row (pp 8, 2 local
stages, 16 micro-batches) once each.
By hand for TINY (tests/distributed_cases.py; vocab 99, d 48, 2 layers of 11,568 parameters, 11,664
padded at dp 2) at dp 2, pp 2, 4 micro-batches, bf16 gathered, fp32 reduced: stage 0 holds the
embedding (99 -> 100 rows x 48 = 4,800 padded) and a layer, 16,464 padded elements over its 2 ranks;
--zero 2 gathers them once a step (32,928 bytes) and reduce-scatters them once (65,856), where the
per-micro-batch rule charged 4 x each; --zero 3 gathers 4 x 2 x (16,464 + 11,664) = 225,024.
"""
from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.fsdp_pipeline import interleaved_order, unshards
from tests.distributed_cases import TINY

BF16 = Workload(seq_len=8, batch=2, dtype="bf16", impl="reference", precision="pure")


def stage0(**layout) -> dict[str, int]:
    estimate = ParallelEstimate(TINY, BF16, Layout(**{"dp": 2, "pp": 2, "microbatches": 4, "framework": "fsdp2",
                                                      "device": "cpu", **layout}))
    return estimate.communication(estimate.stages[0])["dp"]


def test_the_unshard_counts():
    assert unshards(interleaved_order(4, 8, 32, 0), 8) == [10, 10, 16, 9, 9, 9, 16, 8]
    assert sum(unshards(interleaved_order(4, 8, 32, 3), 8)) == 85
    assert unshards(interleaved_order(8, 4, 16, 0), 4) == [4, 3, 3, 1]
    assert unshards(interleaved_order(8, 4, 16, 7), 4) == [3, 3, 1, 2]
    assert unshards(interleaved_order(8, 2, 16, 5), 2) == [1, 1]


def test_the_payloads_by_hand():
    assert stage0(zero=2) == {"all_gather": 32_928, "reduce_scatter": 65_856}
    assert stage0(zero=2, schedule="interleaved", virtual_stages=1) == {"all_gather": 32_928, "reduce_scatter": 65_856}
    assert stage0(zero=3) == {"all_gather": 225_024, "reduce_scatter": 65_856}
    # schedules whose torch code is not read here stay per micro-batch
    assert stage0(zero=2, schedule="zb-h1")["reduce_scatter"] == 4 * 65_856


def test_the_lowering_equals_torchs():
    schedules = pytest.importorskip("torch.distributed.pipelining.schedules")
    for pp, local, m in [(4, 8, 32), (4, 8, 8), (8, 4, 16), (2, 5, 6), (4, 3, 12), (2, 4, 3)]:
        for rank in range(pp):
            sch = schedules.ScheduleInterleaved1F1B.__new__(schedules.ScheduleInterleaved1F1B)
            sch.pp_group_size, sch.n_local_stages, sch._n_microbatches = pp, local, m
            sch.number_of_rounds = max(1, m // pp)
            sch.microbatches_per_round = m // sch.number_of_rounds
            lowered = schedules._add_unshard_reshard(sch._calculate_single_rank_operations(rank))
            theirs = [sum(1 for a in lowered if a is not None and a.computation_type == schedules.UNSHARD
                          and a.stage_index == s * pp + rank) for s in range(local)]
            assert unshards(interleaved_order(pp, local, m, rank), local) == theirs


@pytest.mark.slow
def test_torchs_pipelining_issues_them():
    """validate/distributed/fsdp_pipeline.py on 4 gloo ranks (pp 2 x dp 2, 2 units a local stage, 4
    micro-batches): Schedule1F1B gathers and reduce-scatters each unit once a step (2 and 2; the
    per-micro-batch rule 8 and 8); ScheduleInterleaved1F1B with 4 local stages gathers 2 units x the
    UNSHARD counts (pp rank 0: 11, pp rank 1: 9) and reduce-scatters 4 x 2 = 8."""
    import ast
    import subprocess
    import sys

    pytest.importorskip("torch.distributed.pipelining")
    for local, expected in ((1, {0: (2, 2), 1: (2, 2)}), (4, {0: (22, 8), 1: (18, 8)})):
        run = subprocess.run([sys.executable, "validate/distributed/fsdp_pipeline.py", str(local), "4"],
                             capture_output=True, text=True, timeout=300, check=True)
        rows = [ast.literal_eval(line) for line in run.stdout.splitlines() if line.startswith("(")]
        assert len(rows) == 4
        for rank, _, _, counts in rows:
            assert (counts["all_gather_copy_in"], counts["chunk_cat"]) == expected[rank // 2]
        if local > 1:
            assert [2 * sum(unshards(interleaved_order(2, local, 4, r), local)) for r in (0, 1)] == [22, 18]
