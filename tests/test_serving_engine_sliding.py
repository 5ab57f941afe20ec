"""The serving simulator's transformers schedulers against transformers 5.24's continuous
batching engine on models with sliding-window layers (validate/serving_engine.py runs the engine on
the CPU): its sliding allocator keeps ceil(min(t, window) / page) blocks per request in a ring
buffer beside the full allocator's ceil(t / page) (costmodel/serving/kv_paging.py). For the same
requests and budgets the schedules are equal, step for step, free sectors included."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from costmodel.hf import from_hf_config  # noqa: E402
from costmodel.serving.engine import simulate  # noqa: E402
from costmodel.serving.kv_paging import kv_paging  # noqa: E402
from costmodel.serving.kvcache import BlockPool  # noqa: E402
from costmodel.serving.schedulers import PrefillFirstScheduler, TransformersScheduler  # noqa: E402
from costmodel.serving.workload import Request  # noqa: E402
from tests.test_serving_engine import TRACES  # noqa: E402

WINDOW, PAGE = 8, 4


def _simulated(model, requests, scheduler: str, run, max_requests: int):
    cfg = from_hf_config(model.config.to_dict(), "tiny-windowed")
    pool = BlockPool(run.num_sectors, PAGE, kv_paging(cfg, "hf-fifo", PAGE))
    cls = TransformersScheduler if scheduler == "fifo" else PrefillFirstScheduler
    one_step = lambda query, keys, emitting: 1.0  # noqa: E731  (time in steps, as the engine's clock)
    return simulate([Request(i, float(a), p, o) for i, (a, p, o) in enumerate(requests)],
                    cls(pool, max_requests, run.max_batch_tokens), one_step, 512)


@pytest.mark.parametrize("scheduler", ["fifo", pytest.param("prefill_first", marks=pytest.mark.slow)])
@pytest.mark.parametrize("hybrid", [True, False], ids=["sliding+full", "all-sliding"])
@pytest.mark.parametrize("trace", list(TRACES))
def test_schedule_equals_engine_with_sliding_layers(trace: str, hybrid: bool, scheduler: str) -> None:
    from validate.serving_engine import run_engine, tiny_windowed_model

    requests, budgets = TRACES[trace]
    model = tiny_windowed_model(WINDOW, hybrid)
    run = run_engine(requests, scheduler=scheduler, block_size=PAGE, model=model, **budgets)
    # a block of one layer per allocator (hybrid) is half a model block: twice the sectors
    assert run.num_sectors == budgets["num_blocks"] * (2 if hybrid else 1)
    timeline = _simulated(model, requests, scheduler, run, budgets["max_requests"])
    assert timeline.schedule() == run.schedule
    if trace == "small_cache" and hybrid:  # soft resets: the per-allocator count of what fits
        assert sum(step.preempted for step in timeline.steps) == 2


def test_burst_first_step_holds_the_window_not_the_prompt() -> None:
    """The burst trace's first step prefills prompts of 3, 8 and 13 tokens (token budget 16): the
    full layer takes 1 + 2 + 4 blocks of 4 tokens, the sliding layer 1 + 2 + 2 (a window of 8
    tokens is 2 blocks): 12 of the 32 sectors, 20 free, in the engine and the simulator."""
    from validate.serving_engine import run_engine, tiny_windowed_model

    requests, budgets = TRACES["burst"]
    model = tiny_windowed_model(WINDOW, hybrid=True)
    run = run_engine(requests[:3], scheduler="fifo", block_size=PAGE, model=model,
                     **{**budgets, "max_batch_tokens": 24})
    entries, free, _ = run.schedule[0]
    assert entries == ((0, 3), (1, 8), (2, 13))
    assert free == 32 - (1 + 2 + 4) - (1 + 2 + 2) == 20
    timeline = _simulated(model, requests[:3], "fifo", run, budgets["max_requests"])
    assert timeline.schedule() == run.schedule
