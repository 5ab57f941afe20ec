"""FSDP2 issues its data-parallel collectives unit by unit (a fully_shard unit per layer and the
root), so a micro-batch pays each call's latency that many times: across nodes NCCL's ring
steps (nccl_facts.json inter_node_latency; costmodel/layout/communication.py data_parallel_calls)."""

from __future__ import annotations

import pytest

from costmodel.collectives import collective_seconds
from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset


def _calls(**layout) -> dict[tuple[str, str], int]:
    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=2048, attention="sdpa"), Layout(**layout))
    stage = estimate.stages[0]
    return {(group, kind): estimate.data_parallel_calls(stage, group, kind)
            for group, kinds in estimate.communication(stage).items() if group.startswith("dp")
            for kind in kinds}


def test_fsdp2_gathers_each_of_32_layers_twice_and_the_root_once():
    # Llama-2-7B, 32 layers and the root (embeddings, final norm, head): forward 33 all-gathers,
    # backward 32 (the root is not resharded after forward), 33 reduce-scatters.
    assert _calls(dp=16, zero=3, framework="fsdp2") == {("dp", "all_gather"): 65, ("dp", "reduce_scatter"): 33}
    # reshard_after_forward True: the root gathered again too; --zero 2: never again.
    assert _calls(dp=16, zero=3, framework="fsdp2", reshard_after_forward=True)[("dp", "all_gather")] == 66
    assert _calls(dp=16, zero=2, framework="fsdp2")[("dp", "all_gather")] == 33


def test_hsdp_all_reduces_each_units_shard_over_the_replicas():
    assert _calls(dp=64, dp_shard=8, zero=3, framework="fsdp2") == {
        ("dp", "all_gather"): 65, ("dp", "reduce_scatter"): 33, ("dp_replicate", "all_reduce"): 33}


def test_flat_sharding_keeps_one_call_a_micro_batch():
    # DeepSpeed's ZeRO-3 buckets are not counted (stated): one call, as before.
    assert set(_calls(dp=16, zero=3, framework="deepspeed").values()) == {1}


def test_a_7b_fsdp2_micro_batch_on_64_h100_nodes_pays_65_ring_latencies():
    # 512 H100s, 64 nodes of 8: each all-gather's crossing pays NCCL's ring steps in its fastest
    # protocol. A latency-bound 1 KiB call runs LL: 63 x (7 x 1.0 + 2.7) us = 611.1 us (Simple's
    # 63 x 37.8 = 2,381.4 us). Each of the 65 gathers of Llama-2-7B's bf16 weights (both passes,
    # 414.6 MB a call, 51.8 MB a GPU's share) runs LL128: 63 x 17.3 = 1,089.9 us of steps, its
    # bytes at .92 of the NIC's 36.5 GB/s; Simple would take 2,381.4 us and the bytes at 36.5.
    h100 = load_hardware("h100-sxm")
    inter = 50e9 * 0.73
    tiny = collective_seconds(h100, "all_gather", 1024, 512, 512, calls=1)  # latency-bound
    inside = collective_seconds(h100, "all_gather", 1024, 8, 8, calls=1)
    assert round((tiny - inside - 1024 / 8 * 63 / 64 / (0.5 * inter)) * 1e7) == 6111  # 611.1 us
    payload = 2 * 6_738_415_616 * 2
    share = payload / 65 / 8
    ll128 = 63 * 17.3e-6 + share * 63 / 64 / (0.92 * inter)
    simple = 63 * 37.8e-6 + share * 63 / 64 / inter
    assert (round(ll128 * 1e5), round(simple * 1e5)) == (261, 378)  # 2.61 ms against 3.78 ms a call
    inside = collective_seconds(h100, "all_gather", payload / 65, 8, 8, calls=1)
    assert collective_seconds(h100, "all_gather", payload, 512, 512, calls=65) \
        == pytest.approx(65 * (inside + ll128), rel=1e-12)


def test_the_step_charges_the_micro_batchs_collectives_call_by_call():
    from costmodel.layout.time import Overlap, StepTime

    h100 = load_hardware("h100-sxm")
    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=2048, batch=2, attention="sdpa"),
                                Layout(dp=512, zero=3, framework="fsdp2", microbatches=2))
    stage = estimate.stages[0]
    talk = estimate.communication(stage)["dp"]
    expected = sum(collective_seconds(h100, kind, value / 2, 512, 512, calls) for kind, value, calls
                   in (("all_gather", talk["all_gather"], 65), ("reduce_scatter", talk["reduce_scatter"], 33)))
    timer = StepTime(estimate, h100, overlap=Overlap(prefetch=False))
    exposed, hidden = timer.data_parallel_split(stage, compute=1.0)
    assert hidden == 0.0
    assert exposed == pytest.approx(2 * expected, rel=1e-12)
    # 98 calls a micro-batch, each paying at least its 63 LL network steps of 9.7 us: 59.9 ms of
    # ring steps a micro-batch where one call a kind paid 1.2 ms.
    assert exposed > 2 * 98 * 63 * 9.7e-6
