"""Overlap.ep: Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm, Megatron-Bridge's
moe_a2a_overlap) as a stated share of each micro-batch's expert all-to-all hidden behind compute (issue 18),
and its refusals where Megatron-Core's TransformerConfig asserts it cannot run."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.time import Overlap, StepTime
from costmodel.presets import load_preset


def qwen3_30b(**layout) -> ParallelEstimate:
    """Qwen3 30B A3B on 16 H100s, EP 16 over two nodes (the Megatron-Bridge rows' layout)."""
    return ParallelEstimate(load_preset("qwen3-30b-a3b"), Workload(seq_len=4096, attention="flash", impl="megatron"),
                            Layout(**{"dp": 16, "ep": 16, "zero": 1, "microbatches": 4, "framework": "megatron",
                                      **layout}))


def test_the_exposed_expert_all_to_all_falls_by_the_stated_fraction():
    estimate, h100 = qwen3_30b(), load_hardware("h100-sxm")
    stage, m = estimate.stages[0], 4
    exposed = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0))
    all_to_all = exposed.collective("ep", "all_to_all", estimate.communication(stage)["ep"]["all_to_all"] / m)
    times = exposed.stage(stage)
    assert times["ep"] == all_to_all and times["hidden"] == 0.0  # 0 by default: all exposed
    # Two nodes' all-to-all outlasts the micro-batch's compute here: half of it hides, all of it cannot.
    assert times["compute"] / 2 < all_to_all / 2 < times["compute"] < all_to_all
    # No pipeline: the first forward and the last backward run alone (combined_1f1b.py), so the
    # stated fraction applies to the (m - 1) / m = 3/4 that runs in paired steps. In a paired step
    # the 48 MoE layers run as paired layers (combined_1f1b.paired_layers_seconds): the exchanges
    # outlast each layer's compute, so every compute phase of the layers runs beside one and the
    # layers' compute is what hides (48 x the layer's seconds), not the head's or the embedding's,
    # which run outside the paired layers.
    paired, layers = 3 / 4, 48 * exposed.part_seconds["layer.decoder"][0]
    assert exposed.part_runs(stage)["layer.decoder"] == 48 and layers < times["compute"]
    assert exposed.ep_paired_hidden(stage, all_to_all) == pytest.approx((layers, layers), rel=1e-12)
    half = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0, ep=0.5))
    assert half.stage(stage)["ep"] == pytest.approx(all_to_all - 0.5 * paired * layers, rel=1e-12)
    assert half.stage(stage)["hidden"] == pytest.approx(0.5 * paired * layers, rel=1e-12)
    # pp 1, no bubble: the step falls by m micro-batches of what hides, exactly what the ep entry loses
    step, step_half = exposed.step(), half.step()
    assert step["exposed_communication_seconds"]["ep"] - step_half["exposed_communication_seconds"]["ep"] \
        == pytest.approx(m * 0.5 * paired * layers, rel=1e-12)
    assert step["seconds"] - step_half["seconds"] == pytest.approx(m * 0.5 * paired * layers, rel=1e-12)
    full = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0, ep=1.0)).stage(stage)
    assert full["ep"] == pytest.approx(all_to_all - paired * layers, rel=1e-12)
    # The all-to-all dispatcher's NCCL kernels slow the compute beside them at 1 / (1 + slowdown):
    # the paired layers take longer and hide less, and that is their whole cost (no contention
    # charged again on what they hide).
    slowed = StepTime(estimate, h100, overlap=Overlap(slowdown=0.25, ep=1.0))
    net, beside = slowed.ep_paired_hidden(stage, all_to_all)
    assert slowed.stage(stage)["contention"] == 0.0
    assert slowed.stage(stage)["hidden"] == pytest.approx(paired * net, rel=1e-12)
    # some compute now outlasts the exchange it pairs with and runs on alone, at full speed
    assert 0.9 * layers < net < layers and layers < beside < 1.25 * layers


def test_the_ep_overlap_is_refused_where_megatron_core_asserts_it_cannot_run():
    h100 = load_hardware("h100-sxm")
    refusals = (({"ep": 1}, "has none"),  # expert_model_parallel_size > 1
                ({"dp": 8, "ep": 8, "pp": 2}, "interleaved schedule"),  # pp > 1 needs virtual stages
                ({"framework": "deepspeed"}, "framework megatron"))
    for layout, why in refusals:
        with pytest.raises(ConfigError, match=why):
            StepTime(qwen3_30b(**layout), h100, overlap=Overlap(ep=1.0))
    interleaved = qwen3_30b(dp=8, ep=8, pp=2, schedule="interleaved", virtual_stages=2)
    StepTime(interleaved, h100, overlap=Overlap(ep=1.0))  # the Megatron-Bridge 25.11 Qwen3 30B layout's kind
    full = ParallelEstimate(load_preset("qwen3-30b-a3b"),
                            Workload(seq_len=4096, attention="flash", impl="megatron", recompute="full"),
                            Layout(dp=16, ep=16, zero=1, microbatches=4, framework="megatron"))
    with pytest.raises(ConfigError, match="full recomputation"):
        StepTime(full, h100, overlap=Overlap(ep=1.0))
    with pytest.raises(ConfigError, match="overlap ep"):
        Overlap(ep=1.5)
    base = ["simulate", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
            "--framework", "megatron", "--zero", "1"]
    assert cli.main(base + ["--dp", "16", "--ep-overlap", "1"]) == 2  # no --ep: nothing to hide
    assert cli.main(base + ["--ep-overlap", "1"]) == 2  # no layout
    assert cli.main(base + ["--dp", "16", "--ep", "16", "--dtype", "fp32", "--ep-overlap", "1"]) == 2  # bf16/fp16 only
    assert cli.main(base + ["--dp", "16", "--ep", "16", "--ep-overlap", "1"]) == 0


def test_the_flex_dispatchers_sms_slow_the_paired_compute_and_an_unknown_count_takes_the_average():
    """Beside a DeepEP exchange a compute phase runs on the SMs its 20 kernels leave: on an H100's
    132, 112 / 132 of its speed, which is the all-to-all dispatcher's 1 / (1 + s) at s = 20 / 112.
    A hardware file with no sm_count takes the all-to-all dispatcher's measured average
    (overlap_compute_slowdown); one with no SMs beyond the dispatcher's is refused (it ran at full
    speed before)."""
    from dataclasses import replace

    h100 = load_hardware("h100-sxm")
    assert h100.sm_count == 132
    deepep, alltoall = qwen3_30b(ep_dispatcher="deepep"), qwen3_30b()
    stage = alltoall.stages[0]
    all_to_all = 0.05  # seconds of the micro-batch's exchanges, the same for both
    held = StepTime(deepep, h100, overlap=Overlap(slowdown=0.25, ep=1.0)).ep_paired_hidden(stage, all_to_all)
    same = StepTime(alltoall, h100, overlap=Overlap(slowdown=20 / 112, ep=1.0)).ep_paired_hidden(stage, all_to_all)
    assert held == pytest.approx(same, rel=1e-12)
    unknown = StepTime(deepep, replace(h100, sm_count=0), overlap=Overlap(slowdown=0.25, ep=1.0))
    average = StepTime(alltoall, h100, overlap=Overlap(slowdown=0.25, ep=1.0))
    assert unknown.ep_paired_hidden(stage, all_to_all) == pytest.approx(average.ep_paired_hidden(stage, all_to_all),
                                                                       rel=1e-12)
    assert held != pytest.approx(average.ep_paired_hidden(stage, all_to_all), rel=1e-6)
    few = StepTime(deepep, replace(h100, sm_count=20), overlap=Overlap(ep=1.0))
    with pytest.raises(ConfigError, match="its kernels hold 20 SMs .* has 20, none left"):
        few.ep_paired_hidden(stage, all_to_all)
