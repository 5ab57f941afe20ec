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
    # at place 70 of the free queue: behind the 64 blocks it started with and the 3 + 3 the two
    # requests freed of their own before their last holder freed the prefix
    assert scheduler.pool.evictable == {"sys": [4, 70]}
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
    assert scheduler.prefixes == {"sys": [4, 0]} and scheduler.pool.evictable["sys"][0] == 4  # request 2's


def test_trace_prefix_tokens_and_bad_lines(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    lines = [{"arrival": 0, "prompt_tokens": 600, "output_tokens": 20, "prefix": "sys", "prefix_tokens": 512}] * 2
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert read_trace(path)[1] == Request(1, 0.0, 600, 20, "sys", prefix_tokens=512)
    # the 2nd waits a step, then hits
    on = costmodel.serve("llama3-8b", trace=str(path), max_batched_tokens=600, max_num_seqs=256)
    off = costmodel.serve("llama3-8b", trace=str(path), max_batched_tokens=600, max_num_seqs=256,
                          prefix_caching=False)
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


def test_a_freed_prefix_lives_until_the_blocks_ahead_of_it_are_taken():
    """vLLM v1's free queue (vllm/v1/core/block_pool.py FreeKVCacheBlockQueue): freed blocks join
    its tail, allocations take from its head. A sequence took 6 of 10 blocks and freed them: 2 of
    its own, then its prefix's 4 (places 12-15, behind the 6 free blocks ahead of them); then
    another sequence freed 5 more behind the prefix. Taking 6 reaches place 12 and keeps the
    prefix; a 7th is its first block, which evicts it, though 8 free blocks were left and the
    prefix's 4 fit in them (this simulator's first retention kept it there)."""
    pool = BlockPool(10, 16)
    pool.take(6)
    pool.give_back(2)
    pool.keep_cached("sys", 4)
    pool.take(5)  # another sequence: its 5 blocks from the head (places 6-10)
    pool.give_back(5)  # and freed, behind the prefix
    assert (pool.free, pool.evictable, pool.head, pool.tail) == (10, {"sys": [4, 12]}, 11, 21)
    pool.take(1)
    assert pool.evictable == {"sys": [4, 12]}
    pool.take(1)
    assert (pool.free, pool.evictable, pool.evictable_blocks) == (8, {}, 0)
    assert not pool.revive("sys", 3)


def test_reviving_a_prefix_holds_only_the_blocks_its_prompt_hits():
    """A prompt that is all prefix hits (64 - 1) // 16 = 3 of the prefix's 4 cached blocks: reviving
    it took all 4 back, the fourth held by nobody, and on 8 blocks request 1 (64 + 60 tokens, 8
    blocks) then preempted itself, re-admitted, took the 4 again, forever ('the budgets are too
    small'). It now holds 3 and needs 5 of its own: it runs without a preemption."""
    requests = [Request(0, 0.0, 70, 2, "sys", prefix_tokens=64), Request(1, 10.0, 64, 60, "sys", prefix_tokens=64)]
    scheduler = VLLMScheduler(BlockPool(8, 16), 256, 8192, prefix_caching=True)
    timeline = simulate(requests, scheduler, ONE_STEP, 4096)
    assert [s.cached_tokens for s in timeline.sequences] == [0, 48]
    assert [s.preemptions for s in timeline.sequences] == [0, 0]
    assert len(timeline.steps) == 62 and scheduler.pool.free == 8
    assert scheduler.prefixes == {"sys": [3, 0]} and scheduler.pool.evictable["sys"][0] == 3
    pool = BlockPool(10, 16)
    pool.take(6)
    pool.keep_cached("a", 4)  # places 10-13
    pool.keep_cached("b", 2)  # places 14-15
    assert pool.revive("a", 3) and (pool.free, pool.tail, pool.evictable) == (7, 13, {"b": [2, 11]})
