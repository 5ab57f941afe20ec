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
    # stated fraction applies to the (m - 1) / m = 3/4 that runs in paired steps.
    paired = 3 / 4
    half = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0, ep=0.5))
    assert half.stage(stage)["ep"] == all_to_all - 0.5 * paired * all_to_all
    assert half.stage(stage)["hidden"] == 0.5 * paired * all_to_all
    # pp 1, no bubble: the step falls by m micro-batches of what hides, exactly what the ep entry loses
    step, step_half = exposed.step(), half.step()
    assert step["exposed_communication_seconds"]["ep"] - step_half["exposed_communication_seconds"]["ep"] \
        == pytest.approx(m * 0.5 * paired * all_to_all, rel=1e-12)
    assert step["seconds"] - step_half["seconds"] == pytest.approx(m * 0.5 * paired * all_to_all, rel=1e-12)
    # 1: never more than the paired steps' compute it runs under
    full = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0, ep=1.0)).stage(stage)
    assert full["ep"] == all_to_all - paired * times["compute"] and full["hidden"] == paired * times["compute"]
    # what hides slows the compute beside it, as the other overlaps' do
    slowed = StepTime(estimate, h100, overlap=Overlap(slowdown=0.25, ep=0.5)).stage(stage)
    assert slowed["contention"] == pytest.approx(0.5 * paired * all_to_all * 0.25 / 1.25, rel=1e-12)

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
