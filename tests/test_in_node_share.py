"""KempnerForge's in-node share (nccl_facts.json cluster_busbw "kempner-h200" "in_node", collectives.in_node_fraction)
is the node's, not the TP group's: NCCL picks a call's algorithm, protocol and channels from the collective, its
bytes and the communicator's topology-derived bandwidth and latency tables alone (NVIDIA/nccl 5067397c
src/enqueue.cc topoGetAlgoInfo line 2028: the cheapest of collCostTable[algorithm][protocol]; src/graph/tuning.cc
ncclTopoGetAlgoTime line 630: comm->bandwidths[coll][algorithm][protocol] and comm->latencies, nBytes), so FSDP2's
4-rank all-gather inside one of those nodes runs as DTensor's of the same bytes. The profile itself shows both
callers' all-gathers launched as the same NCCL kernel (ncclDevKernel_AllGather_RING_LL, 11,320 calls = DTensor's
9,679 + FSDP2's 1,640 + 1; 13b_24gpu_profiling.md at a7f83461)."""

from __future__ import annotations

import pytest

from costmodel.collectives import busbw_curve, interpolated_busbw
from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, train_setup

FSDP4 = "kempnerforge-mfu 04 7b fsdp4 4xh200"
TP4 = "kempnerforge-mfu 05 7b tp4 4xh200"
PAYLOAD = 2 * 4_096 * 4_096 * 2 * 12  # any size: the curve's shape carries the share to every size


def timing(run_id: str):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    estimate, hardware, options = train_setup(run, data["sources"]["kempnerforge-mfu"])
    return step_time(estimate, hardware, time_model="kernels", **options), hardware


def test_fsdp_and_tp_groups_of_four_share_the_node():
    """The FSDP 4 row's data-parallel all-gather and reduce-scatter of P bytes take the TP 4 row's tensor-parallel
    time for P: 0.75 P at the measured share (0.5433 all-gather, 0.4594 reduce-scatter) of the NVSwitch curve."""
    fsdp, hardware = timing(FSDP4)
    tp, _ = timing(TP4)
    assert fsdp.worlds["dp"] == tp.worlds["tp"] == 4 and fsdp.spans["dp"] == tp.spans["tp"] == 4
    for kind, share in (("all_gather", 0.5433), ("reduce_scatter", 0.4594)):
        seconds = fsdp.collective("dp", kind, PAYLOAD)
        assert seconds == tp.collective("tp", kind, PAYLOAD)
        busbw = 0.75 * PAYLOAD / seconds
        assert busbw / interpolated_busbw(busbw_curve(hardware, kind), PAYLOAD) == pytest.approx(share, abs=1e-4)
