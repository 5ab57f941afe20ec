"""Prefix caching (vLLM's automatic prefix caching): a shared prefix's full blocks computed once
are held by later requests of that id, whose prefill of them is skipped; schedules checked by hand
(time counted in steps)."""

from __future__ import annotations

import json

import pytest

import costmodel
from cli import main
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.schedulers import VLLMScheduler
from costmodel.serving.workload import Request, read_trace

ONE_STEP = lambda query, keys, emitting: 1.0  # noqa: E731


def run(rows, caching: bool, blocks: int = 64):
    requests = [Request(i, a, p, o, "sys", prefix_tokens=k) for i, (a, p, o, k) in enumerate(rows)]
    scheduler = VLLMScheduler(BlockPool(blocks, 16), 256, 8192, prefix_caching=caching)
    timeline = simulate(requests, scheduler, ONE_STEP, 4096)
    return timeline, scheduler


def test_second_request_skips_the_cached_prefix():
    rows = [(0.0, 100, 10, 64), (0.5, 100, 10, 64)]
    timeline, scheduler = run(rows, caching=True)
    # step 2: request 0 decodes; request 1 finds 64 tokens (4 blocks) cached, runs the other 36 and
    # takes 3 blocks of its own: 7 + 3 used of 64.
    assert timeline.schedule()[:2] == [(((0, 100),), 57, ()), (((0, 1), (1, 36)), 54, ())]
    assert [s.cached_tokens for s in timeline.sequences] == [0, 64]
    # nothing leaks: every block is free, the prefix's 4 still cached (evictable) for a later request
    assert scheduler.pool.free == 64 and scheduler.prefixes == {"sys": [4, 0]}
    assert scheduler.pool.evictable == {"sys": 4}
    plain, _ = run(rows, caching=False)
    assert plain.schedule()[1] == (((0, 1), (1, 100)), 50, ())


def test_the_last_prompt_token_always_runs():
    # A prompt that is all prefix: at most (64 - 1) // 16 = 3 blocks hit, 16 tokens run.
    timeline, _ = run([(0.0, 64, 5, 64), (0.5, 64, 5, 64)], caching=True)
    assert timeline.schedule()[1][0] == ((0, 1), (1, 16))


def test_a_freed_prefix_stays_cached_until_its_blocks_are_taken():
    """vLLM keeps a freed prefix's blocks cached (evictable) until an allocation needs them.
    Request 0 finishes (step 2) before request 1 arrives: request 1 still finds the 64 tokens
    and runs 36 (this simulator once dropped them with their last holder and ran all 100: a new
    user's trace at 4 req/s, 0.5% of the cache in use, missed 44 of 200 prefixes)."""
    timeline, _ = run([(0.0, 100, 2, 64), (5.0, 100, 2, 64)], caching=True)
    assert timeline.schedule()[2][0] == ((1, 36),)
    # On 10 blocks, request 1 (150 tokens, no prefix) takes all 10: the cached prefix is evicted,
    # and request 2 of that prefix recomputes it in full.
    requests = [Request(0, 0.0, 100, 2, "sys", prefix_tokens=64), Request(1, 5.0, 150, 2),
                Request(2, 10.0, 100, 2, "sys", prefix_tokens=64)]
    scheduler = VLLMScheduler(BlockPool(10, 16), 256, 8192, prefix_caching=True)
    timeline = simulate(requests, scheduler, ONE_STEP, 4096)
    assert [entries for entries, _, _ in timeline.schedule()[::2]] == [((0, 100),), ((1, 150),), ((2, 100),)]
    assert [s.cached_tokens for s in timeline.sequences] == [0, 0, 0]
    assert scheduler.prefixes == {"sys": [4, 0]} and scheduler.pool.evictable == {"sys": 4}  # request 2's


def test_trace_prefix_tokens_and_bad_lines(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    lines = [{"arrival": 0, "prompt_tokens": 600, "output_tokens": 20, "prefix": "sys", "prefix_tokens": 512}] * 2
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert read_trace(path)[1] == Request(1, 0.0, 600, 20, "sys", prefix_tokens=512)
    on = costmodel.serve("llama3-8b", trace=str(path), max_batched_tokens=600)  # the 2nd waits a step, then hits
    off = costmodel.serve("llama3-8b", trace=str(path), max_batched_tokens=600, prefix_caching=False)
    assert on.requests["cached_tokens"].tolist() == [0, 512] and off.requests["cached_tokens"].tolist() == [0, 0]
    assert on.requests["ttft_s"][1] < off.requests["ttft_s"][1]
    path.write_text(json.dumps({"arrival": 0, "prompt_tokens": 6, "output_tokens": 2, "prefix": "a",
                                "prefix_tokens": 7}) + "\n")
    assert main(["serve", "--model", "llama3-8b", "--trace", str(path)]) == 2
    assert "t.jsonl:1: prefix_tokens must be an integer from 0 to prompt_tokens, got 7." in capsys.readouterr().err
    assert main(["serve", "--model", "llama3-8b", "--rate", "1", "--scheduler", "orca", "--prefix-caching"]) == 2
    assert "--prefix-caching is modelled for vLLM's scheduler only" in capsys.readouterr().err


def test_serve_says_whether_prefix_caching_is_on(capsys):
    """The text named prefix caching only when it was off (a group-paged model); vLLM's scheduler
    runs it by default, so it now says so, and nothing where the scheduler has none."""
    assert main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "20"]) == 0
    assert "prefix caching: on (blocks of a shared prefix computed once, reused while cached)" in capsys.readouterr().out
    assert main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "20", "--scheduler", "orca"]) == 0
    assert "prefix caching" not in capsys.readouterr().out
