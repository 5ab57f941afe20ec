"""torch's context-parallel all-gather (FSDP2's rows: _AllGatherRotater) overlaps the ring's first, causal
call: _templated_ring_attention issues ft_c.all_gather_single at i = 0 before that call and waits for it at
i = 1 (torch 2.13 torch/distributed/tensor/experimental/_context_parallel/_attention.py), so it hides
under 1 / cp of the ring's attention; the key and value gradients' sends under the rest (layout/time.py)."""

from __future__ import annotations

import pytest

from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, train_setup


def _stage(row: str):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == row)
    estimate, hardware, options = train_setup(run, data["sources"]["torchtitan"])
    timer = step_time(estimate, hardware, time_model="kernels", **options)
    stage = estimate.stages[0]
    return estimate, timer, stage


def test_the_8b_ring_on_8_gpus_hides_its_all_gather_under_the_causal_call():
    """Llama 3.1 8B at 262,144 tokens, CP 8: the micro-batch's all-gathers (forward, recomputed forward,
    backward) fit under the causal calls, nothing of the exchange exposed: 43.844 s -> 43.038 s a step."""
    _, timer, stage = _stage("torchtitan llama3.1-8b fsdp1 cp8 262144 compile float8 8 GPUs")
    assert timer.stage(stage)["cp"] == 0.0
    assert timer.step()["seconds"] == pytest.approx(43.038, abs=1e-3)


def test_the_405b_ring_exposes_what_exceeds_an_eighth_of_its_attention():
    """Llama 3.1 405B, TP 8 CP 8 PP 8 at 262,144 tokens: a micro-batch's all-gathers take 2.3167 s over the
    network, its attention calls 9.0781 s; 1 / 8 of them (1.1348 s) hides the gather, 1.1820 s stays exposed
    (the sends, 1.7651 s, hide under the rest)."""
    estimate, timer, stage = _stage("torchtitan llama3.1-405b fsdp1 cp8 tp8 pp8 262144 1f1b compile float8 512 GPUs")
    exposed, m = timer.stage(stage)["cp"], estimate.layout.microbatches  # stage() times the attention calls first
    gathered = timer.collective("cp", "all_gather", estimate.communication(stage)["cp"]["all_gather"] / m)
    attention = sum(count * timer.attention_seconds.get(key, 0.0) for key, count in timer.part_runs(stage).items())
    assert gathered == pytest.approx(2.3167, abs=1e-4) and attention == pytest.approx(9.0781, abs=1e-4)
    assert exposed == pytest.approx(gathered - attention / 8, rel=1e-9)
    assert exposed == pytest.approx(1.1820, abs=1e-4)
