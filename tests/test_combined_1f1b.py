"""Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): the chunk passes that run
alone, their all-to-all exposed, counted from its code's formulas (Megatron-LM at d98e8a64d,
pipeline_parallel/schedules.py get_pp_rank_microbatches and get_schedule_table,
pipeline_parallel/combined_1f1b.py), and the share Overlap.ep hides (costmodel/layout/combined_1f1b.py)."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.combined_1f1b import (alone_passes, paired_layers_seconds, paired_share, schedule_table,
                                              warmup_forwards)
from costmodel.layout.time import Overlap, StepTime
from costmodel.presets import load_preset


def test_the_schedule_table_is_megatrons_example():
    # schedules.py's own comment: "the tunable schedule table for PP2 N3M5 with VP2"
    table = schedule_table(5, 2, 3)
    assert [microbatch for microbatch, _ in table] == [0, 1, 2, 0, 1, 2, 3, 4, 3, 4]
    assert [chunk for _, chunk in table] == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]


@pytest.mark.parametrize("pp, chunks, microbatches, rank, warmup, alone", [
    # no pipeline: the first forward and the last backward run alone (combined_1f1b.py)
    (1, 1, 4, 0, 1, ((1, 1),)),
    (1, 1, 1, 0, 1, ((1, 1),)),
    # PP 2 VP 2, m 4: rank 0 W = 2(2 - 0 - 1) + (2 - 1) 2 + 1 = 5 of 8; rank 1 W = 0 + 2 + 1 = 3
    (2, 2, 4, 0, 5, ((3, 3), (2, 2))),
    (2, 2, 4, 1, 3, ((2, 2), (1, 1))),
    # the model zoo's Qwen3 235B row, PP 8 VP 4, m = 2048 / 16 = 128 (512 chunk passes):
    # rank 0 W = 14 + 24 + 1 = 39 = 4 x 8 + 7 of chunk 0; rank 7 W = 0 + 24 + 1 = 25
    (8, 4, 128, 0, 39, ((15, 15), (8, 8), (8, 8), (8, 8))),
    (8, 4, 128, 7, 25, ((8, 8), (8, 8), (8, 8), (1, 1))),
    # PP 4 VP 2, m 4: W = 6 + 4 + 1 = 11 > 8 passes: every pass runs alone, none paired
    (4, 2, 4, 0, 8, ((4, 4), (4, 4))),
])
def test_the_passes_that_run_alone_are_the_codes_warmup_and_cooldown(pp, chunks, microbatches, rank, warmup, alone):
    assert warmup_forwards(pp, chunks, microbatches, rank) == warmup
    assert alone_passes(pp, chunks, microbatches, rank) == alone
    assert sum(f for f, _ in alone) == sum(b for _, b in alone) == warmup


def test_the_paired_share_is_one_less_the_alone_passes_over_all():
    assert paired_share(((1, 1),), [1.0], 4) == 1 - 2 / 8  # 3/4
    # the model zoo row's rank 0, equal chunks: 1 - 2 x 39 / (2 x 512) = 473/512
    assert paired_share(alone_passes(8, 4, 128, 0), [1.0] * 4, 128) == 473 / 512
    # chunks weighted: DeepSeek-V3's rank 0 chunk 0 holds 3 dense layers and 1 MoE layer, chunk 1 4 MoE
    assert paired_share(((15, 15), (8, 8)), [1.0, 4.0], 16) == 1 - (30 * 1 + 16 * 4) / (2 * 16 * 5)
    assert paired_share(alone_passes(4, 2, 4, 0), [1.0, 1.0], 4) == 0.0


def qwen3_30b_interleaved() -> ParallelEstimate:
    """Qwen3 30B A3B (48 MoE layers, 12 a virtual stage) on 16 H100s, PP 2 VP 2, EP 8, m 4."""
    return ParallelEstimate(load_preset("qwen3-30b-a3b"), Workload(seq_len=4096, attention="flash", impl="megatron"),
                            Layout(dp=8, ep=8, pp=2, schedule="interleaved", virtual_stages=2, microbatches=4,
                                   zero=1, framework="megatron"))


def test_step_time_hides_only_the_paired_steps_all_to_all():
    estimate, h100 = qwen3_30b_interleaved(), load_hardware("h100-sxm")
    exposed = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0))
    hidden = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0, ep=1.0))
    # rank 0 pairs 3 of its 8 chunk passes each way (W = 5), rank 1 5 of 8 (W = 3); the chunks'
    # routed slots are equal (12 MoE layers each), so those are the all-to-all's shares
    shares = {stage.rank: hidden.ep_paired_shares(stage)[0] for stage in estimate.stages}
    assert shares == {0: 3 / 8, 1: 5 / 8}
    for stage in estimate.stages:
        before, after = exposed.stage(stage), hidden.stage(stage)
        compute_share = hidden.ep_paired_shares(stage)[1]
        assert shares[stage.rank] * before["ep"] < compute_share * after["compute"]  # not capped by the compute
        assert after["hidden"] == pytest.approx(shares[stage.rank] * before["ep"], rel=1e-12)
        assert after["ep"] == pytest.approx((1 - shares[stage.rank]) * before["ep"], rel=1e-12)


def test_the_bubble_runs_alone_its_all_to_all_exposed():
    """The bubble's passes are the pipeline's fill and drain, the warm-up forwards and cool-down
    backwards, which the combined 1F1B runs alone: (p - 1) / v = 1/2 micro-batch of the slowest
    rank with its all-to-all exposed whole, what hides in the paired steps added back."""
    estimate, h100 = qwen3_30b_interleaved(), load_hardware("h100-sxm")
    exposed = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0)).step()
    timing = StepTime(estimate, h100, overlap=Overlap(slowdown=0.0, ep=1.0))
    step = timing.step()
    slowest = timing.stage(estimate.stages[step["slowest_stage"]])
    parts = ("compute", "tp", "ep", "cp", "pp", "contention", "accumulation_microbatch")
    per_microbatch = sum(slowest[k] for k in parts)
    assert step["bubble_seconds"] == pytest.approx((2 - 1) / 2 * (per_microbatch + slowest["hidden_ep"]), rel=1e-12)
    # the same rank (1, the last) is the slowest either way, and its bubble is the exposed schedule's
    assert step["slowest_stage"] == exposed["slowest_stage"] == 1
    assert step["bubble_seconds"] == pytest.approx(exposed["bubble_seconds"], rel=1e-12)


PHASES = {"pre_dispatch_fwd": 1.0, "mlp_bwd": 1.0, "mlp_bwd_dw": 1.0, "mlp_fwd": 1.0, "pre_dispatch_bwd": 2.0}


def exchanges(seconds: float) -> dict[str, float]:
    return {name: seconds for name in ("combine_bwd", "dispatch_fwd", "dispatch_bwd", "combine_fwd")}


def test_paired_layers_walked_by_hand_when_the_compute_is_longer():
    """TransformerLayerSchedulePlan.run's two streams, walked by hand: compute 1, 1, 1, 1, 2 (6),
    four exchanges of 1. comm CB 0-1 | DF 1-2 (after PF) | DB 2-3 (after MB) | CF 4-5 (after MF);
    comp PF 0-1 | MB 1-2 (after CB) | MW 2-3 | MF 3-4 (after DF) | PB 4-6 (after DB): 6 s, every
    exchange beside compute (4 s); the next layer's CB waits on PB (6), its PF on CF (5): 12 s."""
    phases = {**PHASES, **exchanges(1.0)}
    assert paired_layers_seconds(1, phases, 1.0) == (6.0, 4.0)
    assert paired_layers_seconds(2, phases, 1.0) == (12.0, 8.0)
    # at half speed beside an exchange: PF 0-1.5 (0.5 done by 1), MB 1.5-3, DF 1.5-2.5, MW 3-4.5,
    # DB 3-4, MF 4.5-5.5 (CF waits on it), CF 5.5-6.5 beside PB 5.5-8 (1 s at half speed, 1.5 alone)
    assert paired_layers_seconds(1, phases, 0.5) == (8.0, 4.0)
    assert paired_layers_seconds(0, phases, 0.5) == (0.0, 0.0)


def test_paired_layers_walked_by_hand_when_the_exchanges_are_longer():
    """Exchanges of 3 (12 a layer) beside 6 of compute: comm CB 0-3 | DF 3-6 | DB 6-9 | CF 9-12 runs
    without a gap, comp PF 0-1 | MB 3-4 | MW 4-5 | MF 6-7 | PB 9-11: 12 s a layer, all 6 of compute
    beside it. At half speed: PF 0-2, MB 3-5, MW 5-7, MF 7-9, PB 9-12.5 (3 s beside CF, 0.5 alone):
    12.5 s, 11 of them with both streams busy."""
    phases = {**PHASES, **exchanges(3.0)}
    assert paired_layers_seconds(1, phases, 1.0) == (12.0, 6.0)
    assert paired_layers_seconds(2, phases, 1.0) == (24.0, 12.0)
    assert paired_layers_seconds(1, phases, 0.5) == (12.5, 11.0)
    with pytest.raises(ValueError, match="rate"):
        paired_layers_seconds(1, phases, 0.0)


def test_the_dispatchers_sms_are_the_recipes():
    """nccl_facts.json ep_dispatcher_sms: Megatron-Bridge's perf recipes set moe_hybridep_num_sms 32;
    Megatron-Core's DeepEP default 20. On an H100 (132 SMs) the compute beside HybridEP runs at
    100/132, beside DeepEP at 112/132."""
    from costmodel.collectives import nccl_facts

    sms = nccl_facts()["ep_dispatcher_sms"]
    assert (sms["hybridep"], sms["deepep"]) == (32, 20)
    assert load_hardware("h100-sxm").sm_count == 132
