"""The serving simulator's transformers schedulers against transformers 5.24's own continuous
batching engine, run here on the CPU (validate/serving_engine.py records it step by step): for the
same requests and budgets the schedules are equal, step for step: which requests run, how many
query tokens each, the free KV blocks when the forward runs, and which requests finish."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers")

from costmodel.serving.engine import simulate  # noqa: E402
from costmodel.serving.kvcache import BlockPool  # noqa: E402
from costmodel.serving.schedulers import PrefillFirstScheduler, TransformersScheduler  # noqa: E402
from costmodel.serving.workload import Request  # noqa: E402


def _traces() -> dict[str, tuple[list[tuple[int, int, int]], dict]]:
    """(arrival step, prompt tokens, output tokens) per request, and the engine's budgets."""
    rng = random.Random(1)
    return {
        # everyone at once, prompts of 3..28 tokens: splits, and a soft reset when blocks run out
        "burst": ([(0, 3 + 5 * i, 4 + i) for i in range(6)],
                  dict(num_blocks=16, max_batch_tokens=16, max_requests=8)),
        # one request every other step, mixed lengths, at most 4 per batch
        "staggered": ([(2 * i, rng.randint(2, 20), rng.randint(1, 9)) for i in range(8)],
                      dict(num_blocks=24, max_batch_tokens=12, max_requests=4)),
        # a cache too small for the load: the safety margin, starvation and soft resets matter
        "small_cache": ([(i // 3, rng.randint(5, 20), rng.randint(5, 15)) for i in range(10)],
                        dict(num_blocks=12, max_batch_tokens=32, max_requests=8)),
        # an idle gap between two groups (the engine idles; the simulator jumps)
        "gap": ([(0, 10, 5), (1, 7, 3), (30, 12, 4), (31, 3, 8)],
                dict(num_blocks=16, max_batch_tokens=8, max_requests=8)),
        # mixed long and one-token prompts, single-token outputs, a tight request budget
        "mixed": ([(0, 1, 1), (0, 30, 2), (1, 2, 12), (1, 17, 1), (3, 9, 6), (3, 1, 9), (6, 25, 3)],
                  dict(num_blocks=20, max_batch_tokens=10, max_requests=3)),
    }


TRACES = _traces()


def simulated(requests, scheduler: str, num_blocks: int, max_batch_tokens: int, max_requests: int):
    cls = TransformersScheduler if scheduler == "fifo" else PrefillFirstScheduler
    chosen = cls(BlockPool(num_blocks, 4), max_requests, max_batch_tokens)
    one_step = lambda query, keys, emitting: 1.0  # noqa: E731  (time in steps, as the engine's clock)
    timeline = simulate([Request(i, float(a), p, o) for i, (a, p, o) in enumerate(requests)], chosen,
                        one_step, 512)
    return timeline


@pytest.mark.parametrize("scheduler", ["fifo", pytest.param("prefill_first", marks=pytest.mark.slow)])
@pytest.mark.parametrize("trace", list(TRACES))
def test_schedule_equals_transformers_engine(trace: str, scheduler: str) -> None:
    from validate.serving_engine import run_engine

    requests, budgets = TRACES[trace]
    engine = run_engine(requests, scheduler=scheduler, block_size=4, **budgets)
    timeline = simulated(requests, scheduler, engine.num_blocks, engine.max_batch_tokens, budgets["max_requests"])
    assert engine.num_blocks == budgets["num_blocks"]  # 1 KiB blocks: a whole sector each
    assert timeline.schedule() == engine.schedule
    finish_order = [i for _, _, finished in engine.schedule for i in finished]
    assert sorted(finish_order) == list(range(len(requests)))


def test_small_cache_exercises_soft_resets() -> None:
    """The small-cache trace is not trivially easy: the simulator preempts (soft resets) in it,
    and the engine's schedule, equal to it, therefore does too."""
    requests, budgets = TRACES["small_cache"]
    timeline = simulated(requests, "fifo", budgets["num_blocks"], budgets["max_batch_tokens"], budgets["max_requests"])
    assert sum(step.preempted for step in timeline.steps) > 0
    assert min(step.free_blocks for step in timeline.steps) == 0


@pytest.mark.parametrize("trace", ["staggered", "gap", "mixed"])
def test_step_features_match_the_simulator(trace: str) -> None:
    """What validate/serving_engine.step_features reads off an engine run (each step's query
    tokens, keys per sequence, and the sequences whose logits the engine keeps) is what the
    simulator passes its step time for the same schedule; and the features that tell a step's
    misses apart (bench_serve_steps.py) are counted right."""
    from validate.serving_engine import run_engine, step_features

    requests, budgets = TRACES[trace]
    engine = run_engine(requests, scheduler="fifo", block_size=4, **budgets)
    asked = []

    def one_step(query, keys, emitting):
        asked.append((query.tolist(), keys.tolist(), emitting))
        return 1.0
    timeline = simulate([Request(i, float(a), p, o) for i, (a, p, o) in enumerate(requests)],
                        TransformersScheduler(BlockPool(engine.num_blocks, 4), budgets["max_requests"],
                                              engine.max_batch_tokens), one_step, 512)
    assert timeline.schedule() == engine.schedule
    features = step_features(engine, requests, 4)
    assert [(f["queries"], f["keys"], f["emitting"]) for f in features] == asked
    assert len(engine.faults) == len(engine.seconds) == len(features)
    assert all(f >= 0 for f in engine.faults)
    assert [f["first"] for f in features] == [True] + [False] * (len(features) - 1)
    for index, (entries, _, _) in enumerate(engine.schedule):
        f = features[index]
        assert f["kind"] == ("decode" if all(q == 1 for _, q in entries) else "mixed")
        assert f["alone"] == (len(entries) == 1 and entries[0][1] == 1)
        assert f["after_finish"] == (index > 0 and bool(engine.schedule[index - 1][2]))
        joined = any(r not in {r2 for e, _, _ in engine.schedule[:index] for r2, _ in e} for r, _ in entries)
        assert f["joined"] == joined
    # blocks opened: over the run, every request's tokens fill ceil(tokens / 4) blocks once
    assert sum(f["blocks"] for f in features) == sum(-(-(p + o - 1) // 4) for _, p, o in requests)


def test_step_features_refuse_a_preempted_run() -> None:
    from validate.serving_engine import run_engine, step_features

    requests, budgets = TRACES["small_cache"]
    engine = run_engine(requests, scheduler="fifo", block_size=4, **budgets)
    with pytest.raises(ValueError, match="preempted"):
        step_features(engine, requests, 4)
