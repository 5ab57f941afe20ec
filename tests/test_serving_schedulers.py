"""The serving simulator's schedulers (costmodel/serving/schedulers.py, vllm_v0.py) on small hand-checked
traces: vLLM v1's chunked prefill and preemption, Orca, vLLM v0 and its multi-step scheduling, Sarathi-Serve
and static batching (split from tests/test_serving.py)."""

from __future__ import annotations

import pytest

import costmodel
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.schedulers import (OrcaScheduler, SarathiScheduler, StaticScheduler, VLLMScheduler,
                                         VLLMV0Scheduler)
from costmodel.serving.workload import Lengths, poisson
from tests.serving_traces import ONE_STEP, requests


def test_vllm_chunks_prefill_within_the_token_budget() -> None:
    """Budget 8: r0's 10-token prompt runs 8 then 2 (its first token), then decodes; r1 (4 tokens)
    joins step 2 beside r0's last chunk."""
    timeline = simulate(requests((0, 10, 3), (0, 4, 2)), VLLMScheduler(BlockPool(100, 4), 8, 8), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [
        [(0, 8)], [(0, 2), (1, 4)], [(0, 1), (1, 1)], [(0, 1)]]
    assert [s.finished for s in timeline.steps] == [[], [], [1], [0]]


def test_vllm_preempts_the_newest_by_recompute() -> None:
    """4 blocks of 2 tokens. Step 1: both 3-token prompts prefill (2 blocks each, 0 free); step 2:
    both decode into their 4th slot. Step 3: r0 needs a 3rd block for its 5th token: r1, the
    newest, is preempted by recompute (its 2 blocks freed; no waiting request joins that step)
    and r0 finishes. Step 4: r1 recomputes its prompt and its 2 tokens (5) and emits its last."""
    timeline = simulate(requests((0, 3, 3), (0, 3, 3)), VLLMScheduler(BlockPool(4, 2), 8, 8), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [[(0, 3), (1, 3)], [(0, 1), (1, 1)], [(0, 1)], [(1, 5)]]
    assert [s.preempted for s in timeline.steps] == [0, 0, 1, 0]
    assert [s.free_blocks for s in timeline.steps] == [0, 0, 1, 1]
    assert [s.finished for s in timeline.steps] == [[], [], [0], [1]]
    assert timeline.sequences[1].preemptions == 1 and timeline.sequences[1].generated == 3


def test_orca_reserves_the_whole_request_and_never_chunks() -> None:
    """Orca admits r1 only when blocks for its prompt and its maximum output are free."""
    timeline = simulate(requests((0, 6, 3), (0, 6, 3)), OrcaScheduler(BlockPool(3, 4), 8, 64), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [[(0, 6)], [(0, 1)], [(0, 1)], [(1, 6)], [(1, 1)], [(1, 1)]]
    assert max(s.preempted for s in timeline.steps) == 0


def test_vllm_v0_runs_whole_prompts_first_and_alone() -> None:
    """Budget 8, 2 sequences: r0's 6-token prompt runs alone (r1's 6 do not fit the 2 left), then
    r1's alone (a waiting prompt that fits goes before any decode), then both decode until both
    end; r2 waits for a free sequence slot and runs its prompt alone."""
    timeline = simulate(requests((0, 6, 3), (0, 6, 3), (0, 6, 2)), VLLMV0Scheduler(BlockPool(100, 4), 2, 8),
                        ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [
        [(0, 6)], [(1, 6)], [(0, 1), (1, 1)], [(0, 1), (1, 1)], [(2, 6)], [(2, 1)]]
    assert [s.finished for s in timeline.steps] == [[], [], [], [0, 1], [], [2]]


def test_vllm_v0_preempts_the_newest_by_recompute_and_refuses_what_it_cannot_run() -> None:
    """4 blocks of 2 tokens: both 3-token prompts fit the budget of 8 together; at r0's 5th token
    r1 (the newest) is preempted, then recomputes its prompt and 2 tokens (5) alone. A prompt
    (and its recompute) past the budget can never run: refused before the simulation starts."""
    timeline = simulate(requests((0, 3, 3), (0, 3, 3)), VLLMV0Scheduler(BlockPool(4, 2), 8, 8), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [[(0, 3), (1, 3)], [(0, 1), (1, 1)], [(0, 1)], [(1, 5)]]
    assert [s.preempted for s in timeline.steps] == [0, 0, 1, 0]
    assert timeline.sequences[1].preemptions == 1 and timeline.sequences[1].generated == 3
    with pytest.raises(ConfigError, match="does not fit --max-batched-tokens 256: vllm-v0 does not chunk"):
        simulate(requests((0, 300, 2)), VLLMV0Scheduler(BlockPool(1000, 16), 8, 256), ONE_STEP, 8192)


def test_vllm_v0_multi_step_decides_once_per_window() -> None:
    """--num-scheduler-steps 4 (vLLM v0.6's multi-step scheduling): the prompts run as one step;
    the decode batch runs 4 steps on one decision, each sequence given blocks for 4 tokens ahead
    (r0 and r1 at 6 + 4 = 10 tokens: 3 blocks each, 94 free where one step's 7 tokens leave 96).
    r0 emits its last token at the window's second step but is computed to the window's end and
    keeps its slot and blocks until then; r2, arriving at 2.5 inside the window, is admitted at its
    end (5). The window's tokens come out at its end (its outputs are processed then). With 1
    step the same trace is today's schedule: r2 admitted at 3, when r0 finishes."""
    chosen = requests((0, 6, 3), (0, 6, 6), (2.5, 4, 2))
    four = simulate(chosen, VLLMV0Scheduler(BlockPool(100, 4), 8, 64, num_scheduler_steps=4), ONE_STEP, 512)
    both, late = [(0, 1), (1, 1)], [(1, 1), (2, 1)]
    assert [s.entries for s in four.steps] == [[(0, 6), (1, 6)], both, both, both, both, [(2, 4)], late, late, late,
                                              late]
    assert [s.free_blocks for s in four.steps] == [96, 94, 94, 94, 94, 96, 94, 94, 94, 94]
    assert [s.finished for s in four.steps] == [[], [], [], [], [0], [], [], [], [], [1, 2]]
    assert [s.token_times for s in four.sequences] == [[1, 5, 5], [1, 5, 5, 5, 5, 10], [6, 10]]
    assert [s.first_scheduled_s for s in four.sequences] == [0, 0, 5]
    one = simulate(chosen, VLLMV0Scheduler(BlockPool(100, 4), 8, 64, num_scheduler_steps=1), ONE_STEP, 512)
    assert [s.entries for s in one.steps] == [[(0, 6), (1, 6)], both, both, [(2, 4)], late, [(1, 1)], [(1, 1)]]
    assert [s.free_blocks for s in one.steps] == [96, 96, 96, 97, 95, 97, 97]
    assert [s.finished for s in one.steps] == [[], [], [0], [], [2], [], [1]]
    assert [s.token_times for s in one.sequences] == [[1, 2, 3], [1, 2, 3, 5, 6, 7], [4, 5]]


def test_vllm_v0_multi_step_lookahead_blocks_can_preempt() -> None:
    """5 blocks of 4 tokens, two prompts of 6 (2 blocks each, 1 left): one step at a time both
    decode to the end in their 2 blocks; with 4 steps each needs 3 blocks for the window, so r1
    (the newest) is preempted by recompute, r0 runs its window alone, and r1 recomputes its prompt
    and first token (7) after it, then runs a window of 4 for its last token."""
    chosen = requests((0, 6, 3), (0, 6, 3))
    one = simulate(chosen, VLLMV0Scheduler(BlockPool(5, 4), 8, 64), ONE_STEP, 512)
    assert [s.entries for s in one.steps] == [[(0, 6), (1, 6)], [(0, 1), (1, 1)], [(0, 1), (1, 1)]]
    assert max(s.preempted for s in one.steps) == 0
    four = simulate(chosen, VLLMV0Scheduler(BlockPool(5, 4), 8, 64, num_scheduler_steps=4), ONE_STEP, 512)
    assert [s.entries for s in four.steps] == [[(0, 6), (1, 6)]] + [[(0, 1)]] * 4 + [[(1, 7)]] + [[(1, 1)]] * 4
    assert [s.preempted for s in four.steps] == [0, 1] + [0] * 8
    assert [s.free_blocks for s in four.steps] == [1, 2, 2, 2, 2, 3, 2, 2, 2, 2]
    assert [s.token_times for s in four.sequences] == [[1, 5, 5], [1, 6, 10]]
    # a request whose last window's lookahead cannot fit the whole cache is refused before the run
    # (6 + 3 tokens: one step at a time at most 8 cached, 2 blocks; the last window, from 7 computed,
    # holds 7 + 4 = 11 tokens, 3 blocks)
    simulate(requests((0, 6, 3)), VLLMV0Scheduler(BlockPool(2, 4), 8, 64), ONE_STEP, 512)
    with pytest.raises(ConfigError, match="needs 3 KV blocks of 4 tokens with 3 lookahead slots; the cache holds 2"):
        simulate(requests((0, 6, 3)), VLLMV0Scheduler(BlockPool(2, 4), 8, 64, num_scheduler_steps=4), ONE_STEP, 512)


def test_vllm_v0_multi_step_one_is_todays_schedule_and_windows_run_whole() -> None:
    """num_scheduler_steps=1 is the scheduler as it was (same steps, blocks, finishes and token
    times on a Poisson trace, with and without the steady-decode shortcut); with 4, a window's
    steps computed together (decode_run) are the steps one at a time."""
    from costmodel.serving.replica import build_replica

    cfg = costmodel.load_model("llama3-8b")
    replica, step, _ = build_replica(cfg, load_hardware("h100-sxm"), scheduler="vllm-v0", num_blocks=4000)
    _, blocks, size, seqs, tokens = replica
    chosen = poisson(20, 300, Lengths.parse("uniform:16:1024"), Lengths.parse("uniform:1:300"), seed=4)
    base = simulate(chosen, VLLMV0Scheduler(BlockPool(blocks, size), seqs, tokens), step.seconds, 8192)
    for run in (simulate(chosen, VLLMV0Scheduler(BlockPool(blocks, size), seqs, tokens, 1), step.seconds, 8192),
                simulate(chosen, VLLMV0Scheduler(BlockPool(blocks, size), seqs, tokens, 1), step.seconds, 8192, True,
                         step.decode_run)):
        assert run.schedule() == base.schedule()
        assert [s.token_times for s in run.sequences] == [s.token_times for s in base.sequences]
    slow = simulate(chosen, VLLMV0Scheduler(BlockPool(blocks, size), seqs, tokens, 4), step.seconds, 8192)
    fast = simulate(chosen, VLLMV0Scheduler(BlockPool(blocks, size), seqs, tokens, 4), step.seconds, 8192, True,
                    step.decode_run)
    assert fast.schedule() == slow.schedule() != base.schedule()
    assert [s.token_times for s in fast.sequences] == [s.token_times for s in slow.sequences]
    assert all(len(s.token_times) == s.output for s in fast.sequences)


def test_serve_num_scheduler_steps_reaches_the_scheduler() -> None:
    """costmodel.serve(num_scheduler_steps=N) runs vllm-v0 with N steps a window (setup says N)."""
    common = dict(rate=float("inf"), requests=20, prompt="64", output="40", scheduler="vllm-v0")
    one = costmodel.serve("llama3-8b", "h100-sxm", **common)
    ten = costmodel.serve("llama3-8b", "h100-sxm", num_scheduler_steps=10, **common)
    assert one.setup["num_scheduler_steps"] == 1 and ten.setup["num_scheduler_steps"] == 10
    # 20 prompts in one step, then 39 decode steps one at a time or 4 windows of 10 (40 steps)
    assert len(one.steps) == 40 and len(ten.steps) == 41


def test_sarathi_puts_decodes_first_and_chunks_the_rest() -> None:
    timeline = simulate(requests((0, 4, 3), (1, 9, 2)), SarathiScheduler(BlockPool(100, 4), 8, 5), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [[(0, 4)], [(0, 1), (1, 4)], [(0, 1), (1, 4)], [(1, 1)], [(1, 1)]]


def test_static_batch_pads_and_runs_in_lockstep() -> None:
    """generate(): the batch of 2 prefills padded to 5 tokens, then decodes until the longest
    output (4 tokens) is done; r2 waits for the next batch."""
    step_shapes = []

    def record(query, keys, emitting):
        step_shapes.append((tuple(query), tuple(keys)))
        return 1.0

    timeline = simulate(requests((0, 5, 4), (0, 2, 2), (0, 3, 1)), StaticScheduler(BlockPool(100, 4), 2), record, 512)
    assert step_shapes[:4] == [((5, 5), (5, 5)), ((1, 1), (6, 6)), ((1, 1), (7, 7)), ((1, 1), (8, 8))]
    assert step_shapes[4:] == [((3,), (3,))]
    assert [s.request.id for s in timeline.sequences if s.token_times[-1] == 2.0] == [1]
    assert timeline.sequences[2].first_scheduled_s == 4.0
