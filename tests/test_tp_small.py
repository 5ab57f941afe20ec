"""Tensor parallelism on small models (session 32, wt32_tpsmall): the TP collectives KempnerForge's own
profile measured inside one of its 4x H200 nodes (nccl_facts.json cluster_busbw "kempner-h200",
collectives.in_node_fraction) and DTensor's copy around each sequence-sharded collective
(costmodel/layout/dtensor_copies.py)."""

from __future__ import annotations

import pytest

from costmodel.collectives import (busbw_curve, cluster_busbw, collective_seconds, in_node_fraction, interpolated_busbw,
                                   nccl_facts, within_node)
from costmodel.hardware import load_hardware
from costmodel.layout.dtensor_copies import copy_bytes
from reports.published_runs import other_runs_data, run_hardware, train_setup

CALL = 2 * 4_096 * 5_120 * 2  # the profiled run's [batch 2, 4,096, 5,120] bf16 activation: 83,886,080 bytes


def source(name: str = "kempnerforge-mfu") -> dict:
    return other_runs_data()["sources"][name]


def test_the_profile_s_figures_are_its_calls_over_its_time():
    """benchmarks/profiling/13b_24gpu_profiling.md at a7f83461: reduce-scatters 2,532.3 ms over 6,420
    calls, all-gathers 3,389.8 ms over 9,679 (9,659 of the activation, 20 of the logits)."""
    point = nccl_facts()["cluster_busbw"]["kempner-h200"]["in_node"]
    assert point["payload_bytes"] == CALL == 83_886_080
    assert round(0.75 * 6_420 * CALL / 2.5323 / 1e9, 1) == point["reduce_scatter"] == 159.5
    logits = 2 * 4_096 * 128_256 * 2
    assert round(0.75 * (9_659 * CALL + 20 * logits) / 3.3898 / 1e9, 1) == point["all_gather"] == 188.6
    # the code's counts: 5 steps of 4 micro-batches, 40 layers; q, k, v, gate and up each gather
    assert 20 * (40 * 8 + 1) == 6_420 and 20 * (40 * 12 + 3) == 9_660


def test_a_measured_call_takes_the_measured_time_and_other_groups_the_curve():
    kempner, h200 = run_hardware(source()), load_hardware("h200")
    assert kempner.cluster == "kempner-h200" and kempner.gpus_per_node == 4
    # one profiled reduce-scatter: 0.75 x 83,886,080 B at 159.5 GB/s = 0.394 ms (the profile: 2,532.3 / 6,420)
    assert collective_seconds(kempner, "reduce_scatter", CALL, 4, 4) == pytest.approx(0.75 * CALL / 159.5e9, rel=1e-12)
    assert collective_seconds(kempner, "all_gather", CALL, 4, 4) == pytest.approx(0.75 * CALL / 188.6e9, rel=1e-12)
    curve = interpolated_busbw(busbw_curve(h200, "all_gather"), CALL)
    assert round(curve / 1e9, 1) == 347.1 and round(in_node_fraction(kempner, "all_gather", 4), 4) == 0.5433
    # twice the bytes: the curve's rate there at the measured share (the rows' 134 MB calls)
    assert collective_seconds(kempner, "all_gather", 2 * CALL, 4, 4) == pytest.approx(
        0.75 * 2 * CALL / (0.5433448786662523 * interpolated_busbw(busbw_curve(h200, "all_gather"), 2 * CALL)),
        rel=1e-9)
    # pairs (TP 2), all-reduces and the preset without the cluster keep the NVSwitch curve
    assert in_node_fraction(kempner, "all_gather", 2) == in_node_fraction(kempner, "all_reduce", 4) == 1.0
    assert collective_seconds(kempner, "all_gather", CALL, 2, 2) == collective_seconds(h200, "all_gather", CALL, 2, 2)
    assert in_node_fraction(h200, "all_gather", 4) == 1.0
    # across nodes: no node-count points, so no floor on the crossing; the in-node step of 4 ranks a
    # node runs at the measured share
    plain = run_hardware(dict(source(), hardware_overrides={k: v for k, v in source()["hardware_overrides"].items()
                                                            if k != "cluster"}))
    assert cluster_busbw(kempner, "all_gather", 8, 4, CALL) == float("inf")
    assert collective_seconds(kempner, "all_gather", CALL, 8, 8) - collective_seconds(plain, "all_gather", CALL, 8, 8) \
        == pytest.approx(within_node(kempner, "all_gather", CALL, 4) - within_node(plain, "all_gather", CALL, 4), rel=1e-9)


def row(run_id: str):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return train_setup(run, data["sources"][run_id.split()[0]])


def test_dtensor_copies_twice_each_sequence_sharded_payload():
    """KempnerForge's 7B at TP 4 (micro-batch 4): per micro-batch 130 reduce-scatters and 130
    all-gathers of the 134,217,728-byte activation (the layers' 64 row outputs and the embedding's, the
    64 column inputs and the head's, and their gradients), full recomputation's 64 and 64 again, and
    the head's logits gathered whole (its ColwiseParallel output_layouts Replicate: loss_parallel
    false): 388 activation copies and one of the logits, each read and written."""
    estimate, _, _ = row("kempnerforge-mfu 05 7b tp4 4xh200")
    x, logits = 4 * 4_096 * 4_096 * 2, 4 * 4_096 * 128_256 * 2
    assert (x, logits) == (134_217_728, 4_202_692_608) and not estimate.layout.loss_parallel
    assert copy_bytes(estimate, estimate.stages[0]) == 2 * (388 * x + logits) == 112_558_342_144
    # torchtitan's 8B at TP 8 (micro-batch 12, loss_parallel; op SAC reruns only the 64 all-gathers)
    titan, _, _ = row("torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile 64 GPUs")
    y = 12 * 8_192 * 4_096 * 2
    assert copy_bytes(titan, titan.stages[0]) == 2 * (130 + 130 + 64) * y == 521_838_526_464


def test_one_sequence_gathers_by_a_view_and_megatron_copies_nothing():
    """torch's _maybe_view_chunk_cat: a sequence gather of a one-sequence micro-batch is a view, so
    only the reduce-scatters copy; Megatron's sequence parallelism gathers on dim 0 (no copy)."""
    from dataclasses import replace

    from costmodel.layout.rank import ParallelEstimate

    estimate, _, _ = row("kempnerforge-mfu 05 7b tp4 4xh200")
    x = 1 * 4_096 * 4_096 * 2
    one = ParallelEstimate(estimate.cfg, replace(estimate.workload, batch=1), estimate.layout)
    # the 194 reduce-scatters, and the logits' gather on their last dim (no view there)
    assert copy_bytes(one, one.stages[0]) == 2 * ((130 + 64) * x + 4_096 * 128_256 * 2)
    megatron = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, framework="megatron", zero=1))
    assert copy_bytes(megatron, megatron.stages[0]) == 0


def test_async_tp_fused_collectives_copy_no_cat():
    """Under Async TP torch's micro-pipeline pass matches each fused collective with its split + cat
    (torch/_inductor/fx_passes/micro_pipeline_tp.py: the non-zero-dim all-gather pattern ends in aten.cat,
    the reduce-scatter's input is the cat of the split; the matched nodes are erased), so only the unfused
    calls keep DTensor's copy. torchtitan's 8B at TP 8 with Async TP: 32 layers x (the forward's gathers into
    Q/K/V and w1/w3, the backward's into wo's and w2's dgrads, op SAC's rerun gathers: 6) = 192 fused all-gathers
    and 32 x 2 (out of wo and w2) = 64 fused reduce-scatters of the 805,306,368-byte activation leave
    521,838,526,464 - 2 x 256 x 805,306,368 = 109,521,666,048 bytes a micro-batch."""
    from costmodel.layout.timing import step_time

    titan, hardware, options = row("torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile asynctp 64 GPUs")
    assert options["overlap"].async_tp
    step = step_time(titan, hardware, time_model="kernels", **options)
    y = 12 * 8_192 * 4_096 * 2
    assert y == 805_306_368
    kept = 521_838_526_464 - 2 * (192 + 64) * y
    assert kept == 109_521_666_048
    m = titan.layout.microbatches
    assert step.step()["dtensor_copy_seconds"] == pytest.approx(m * kept / step.bytes_per_s, rel=1e-12)
