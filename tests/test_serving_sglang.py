"""serve's SGLang engine (costmodel/serving/sglang.py, kvcache.sglang_pool_bytes) on small cases worked by hand from
SGLang's code: which request PrefillAdder admits (v0.3.0's rule and v0.4.0's ignore_eos rule), which requests
retract_decode retracts and the ratio it leaves, the pool in tokens for a stated GPU, the defaults by tp, and the
one-line refusals."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import costmodel
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool, sglang_pool_bytes
from costmodel.serving.replica import build_replica
from costmodel.serving.scheduler_state import DECODING, Sequence
from costmodel.serving.schedulers import VLLMV0Scheduler
from costmodel.serving.sglang import SGLANG_RELEASES, SGLangScheduler, max_running_requests, mem_fraction_static
from costmodel.serving.workload import Request
from tests.serving_traces import ONE_STEP, requests

THREE = ((0, 30, 20), (0, 30, 20), (0, 10, 5))  # (arrival, prompt, output): r0, r1, r2 at once


def test_v030_reserves_the_running_requests_future_tokens():
    """A pool of 100 tokens, v0.3.0. Step 1 (the loop was idle: new_token_ratio 0.7): r0 needs 30 + 20 = 50 < 100,
    admitted, 50 left; r1's 50 >= 50: refused, and admission stops. Step 2: r0 runs (1 token out), so 19 x 0.7 =
    13.3 are reserved of the 70 free: 56.7 left; r1's 50 < 56.7, admitted (6.7 left); r2's 10 + 5 = 15 >= 6.7.
    From step 3, 2 x (20 - g) x ratio of the 42 - 2g free never leaves r2 its 15 (27 - 2g > (40 - 2g) x 0.7 never
    holds), so r0 and r1 decode their 19 tokens alone and r2 runs only after both end (its prefill alone, then its
    4 decodes)."""
    timeline = simulate(requests(*THREE), SGLangScheduler(BlockPool(100, 1), 64, 8192, "v0.3.0"), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == (
        [[(0, 30)], [(1, 30)]] + [[(0, 1), (1, 1)]] * 19 + [[(2, 10)]] + [[(2, 1)]] * 4)
    assert max(s.preempted for s in timeline.steps) == 0


def test_vllm_v0_admits_by_the_blocks_a_prompt_needs_now():
    """The same pool and requests under vllm-v0: the three prompts (70 tokens) prefill together."""
    timeline = simulate(requests(*THREE), VLLMV0Scheduler(BlockPool(100, 1), 64, 8192), ONE_STEP, 512)
    assert timeline.steps[0].entries == [(0, 30), (1, 30), (2, 10)]


def test_v040_ignore_eos_admission_and_batch_is_full():
    """v0.4.0, ignore_eos and no radix cache: add_one_req_ignore_eos. Step 1: r0 alone: 100 - 30 - 20 x 1 = 50 > 0,
    admitted (70 tokens free after its prompt). r1: the states by tokens left, r1 (20, 30) and r0 (20, 30);
    70 - 30 - 20 x 2 = 0 <= 0: refused, batch_is_full. Steps 2-20: r0 decodes alone (batch_is_full holds admission
    off until the running batch shrinks), and ends. Step 21 (idle before it): r1 as r0 was; r2: states r2 (5, 10),
    r1 (20, 30): 70 - 10 - 20 x 2 = 20 > 0, then 60 + 10 - 20 x 1 = 50 > 0: admitted beside r1. Then 4 decodes of
    both, r2 ends, and r1's last 15 alone."""
    timeline = simulate(requests(*THREE), SGLangScheduler(BlockPool(100, 1), 64, 8192, "v0.4.0"), ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == (
        [[(0, 30)]] + [[(0, 1)]] * 19 + [[(1, 30), (2, 10)]] + [[(1, 1), (2, 1)]] * 4 + [[(1, 1)]] * 15)


def test_v040_without_ignore_eos_refuses_as_v030_then_holds_admission_off():
    """ignore_eos False: add_one_req refuses r1 at step 1 as v0.3 does (50 >= 50), but v0.4's batch_is_full then
    holds admission off until the running batch shrinks: r0 decodes alone (v0.3 admitted r1 at step 2), and after
    it (idle: nothing reserved) r1's 50 < 100 and r2's 15 < 50 both go."""
    scheduler = SGLangScheduler(BlockPool(100, 1), 64, 8192, "v0.4.0", ignore_eos=False)
    timeline = simulate(requests(*THREE), scheduler, ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == (
        [[(0, 30)]] + [[(0, 1)]] * 19 + [[(1, 30), (2, 10)]] + [[(1, 1), (2, 1)]] * 4 + [[(1, 1)]] * 15)


@pytest.mark.parametrize("release", ["v0.3.0", "v0.4.0"])
def test_a_prompt_past_the_chunk_is_carried_in_flight(release):
    """Chunk 8: r0's 10-token prompt is cut to 8 (the new in-flight request; the chunk is spent, admission stops);
    the next prefill takes its last 2 first (add_inflight_req), then r1's 4 in the 6 left; then both decode."""
    scheduler = SGLangScheduler(BlockPool(1000, 1), 64, 8, release)
    timeline = simulate(requests((0, 10, 2), (0, 4, 2)), scheduler, ONE_STEP, 512)
    assert [s.entries for s in timeline.steps] == [[(0, 8)], [(0, 2), (1, 4)], [(0, 1), (1, 1)]]


def _decoding(scheduler: SGLangScheduler, rid: int, prompt: int, generated: int, output: int) -> Sequence:
    """A running request that has emitted `generated` tokens: prompt + generated - 1 tokens cached."""
    sequence = Sequence(Request(rid, 0.0, prompt, output))
    sequence.generated, sequence.known, sequence.computed = generated, prompt + generated, prompt + generated - 1
    assert scheduler.allocate(sequence, sequence.computed)
    sequence.status = DECODING
    scheduler.running.append(sequence)
    return sequence


@pytest.mark.parametrize("release", ["v0.3.0", "v0.4.0"])
def test_retract_decode_frees_the_least_generated_first(release):
    """A pool of 30 tokens, all held: A (prompt 10, 3 out: 12 cached), B (8, 5 out: 12), C (4, 3 out: 6); each asks
    50. check_decode_mem: 0 free < 3 running. retract_decode sorts by (generated, -prompt) and pops the smallest:
    A (3, -10) before C (3, -4) before B (5, -8). A out: 12 free < 2 x 20; C out: 18 free < 1 x 20, but one request
    is left: stop. A and C go to the queue's end in that order, recomputed from scratch; new_token_ratio =
    min(1, (5 + 20 x 1) / 50) = 0.5; B decodes (17 free after)."""
    scheduler = SGLangScheduler(BlockPool(30, 1), 64, 8192, release)
    a, b, c = (_decoding(scheduler, 0, 10, 3, 50), _decoding(scheduler, 1, 8, 5, 50),
               _decoding(scheduler, 2, 4, 3, 50))
    assert scheduler.pool.free == 0
    assert scheduler.schedule() == [(b, 1)]
    assert list(scheduler.waiting) == [a, c] and scheduler.running == [b]
    assert (a.computed, c.computed, a.preemptions, c.preemptions, b.computed) == (0, 0, 1, 1, 12)
    assert scheduler.ratio == 0.5 and scheduler.pool.free == 17 and scheduler.retracted_total == 2


def test_the_ratio_decays_per_decode_step_to_the_release_floor():
    """v0.3.0: 0.001 a decode step to 0.1 (global_config.py); v0.4.0: (0.7 - 0.7 x 0.14) / 600 to 0.098."""
    v03, v04 = SGLANG_RELEASES["v0.3.0"], SGLANG_RELEASES["v0.4.0"]
    assert (v03.init_ratio, v03.min_ratio, v03.decay, v03.start_ratio) == (0.7, 0.1, 0.001, 0.1)
    assert (v04.init_ratio, v04.min_ratio, v04.start_ratio) == (0.7, pytest.approx(0.098), 0.7)
    assert v04.decay == pytest.approx(0.602 / 600)
    scheduler = SGLangScheduler(BlockPool(1000, 1), 64, 8192, "v0.3.0")
    _decoding(scheduler, 0, 10, 1, 900)
    scheduler.ratio = 0.1005
    scheduler.schedule()
    assert scheduler.ratio == 0.1  # max(0.1005 - 0.001, 0.1)


def test_the_pool_of_llama3_8b_on_an_h100():
    """model_runner.profile_max_num_token: the H100 SXM's 81,117 MiB less the 512 MiB reserve = 84,520,468,480 B free
    before the weights; x 0.88 (tp 1's mem_fraction_static) = 74,378,012,262.4, less the 16,060,522,496 B of bf16
    weights = 58,317,489,766 B; / 131,072 B a token = 444,927 tokens. No activation peak held back."""
    assert sglang_pool_bytes(84_520_468_480, 16_060_522_496, 0.88) == 58_317_489_766
    replica, _, setup = build_replica(costmodel.load_model("llama3-8b"), load_hardware("h100-sxm"),
                                      scheduler="sglang", block_size=1)
    _, blocks, block_size, seqs, tokens = replica
    assert (blocks, block_size, tokens) == (444_927, 1, 8192)
    kv = setup["kv_cache"]
    assert (kv["gpu_memory_utilization"], kv["activation_bytes"], kv["weight_bytes"]) == (0.88, 0, 16_060_522_496)
    # max_running_requests: max_num_reqs min(max(int(444,927 / 8,192 x 512), 2048), 4096) = 4,096 (v0.4.0's
    # model_runner.py:506-518), ReqToTokenPool(size=4,097), tp_worker.py:92-99 min(tokens // 2, size) = 4,097
    # (wt42_sglang read min(..., pool - 1) = 4,095 in a later copy; the 0.4.0 wheel has no - 1)
    assert seqs == min(444_927 // 2, 4096 + 1) == 4097
    # v0.3.0: ReqToTokenPool(max_num_reqs = 5,120), tp_worker.py:126-133 min(tokens // 2, size - 1)
    assert max_running_requests(444_927, 8192, SGLANG_RELEASES["v0.3.0"]) == 5119
    assert setup["engine_release"] == "v0.4.0"


def test_mem_fraction_static_by_tp_and_the_70b_pool():
    """server_args.py: 0.88 at tp 1, 0.87 at 2, 0.85 at 4, 0.79 at 16; at 8, 0.83 in the 0.3.0 wheel
    (server_args.py:112-113) and 0.81 in the 0.4.0 wheel (:157-158; wt42_sglang read 0.83 for both). Llama 3.1 70B at
    tp 4 on H100s: SGLang's pool beside vllm-v0's (0.85 of the same memory, less its activation peak)."""
    v03, v04 = SGLANG_RELEASES["v0.3.0"], SGLANG_RELEASES["v0.4.0"]
    assert [mem_fraction_static(tp, v03) for tp in (1, 2, 3, 4, 8, 16)] == [0.88, 0.87, 0.87, 0.85, 0.83, 0.79]
    assert [mem_fraction_static(tp, v04) for tp in (1, 2, 3, 4, 8, 16)] == [0.88, 0.87, 0.87, 0.85, 0.81, 0.79]
    (*_, setup8) = build_replica(costmodel.load_model("llama3.1-70b"), load_hardware("h100-sxm"), scheduler="sglang",
                                 block_size=1, tp=8)
    assert setup8["kv_cache"]["gpu_memory_utilization"] == 0.81
    cfg, h100 = costmodel.load_model("llama3.1-70b"), load_hardware("h100-sxm")
    (_, ours, *_), _, setup = build_replica(cfg, h100, scheduler="sglang", block_size=1, tp=4)
    assert setup["kv_cache"]["gpu_memory_utilization"] == 0.85 and setup["all_reduce"] == "vllm-custom"
    (_, blocks, size, *_), _, _ = build_replica(cfg, h100, scheduler="vllm-v0", tp=4, gpu_memory_utilization=0.85)
    assert ours > blocks * size


def test_refusals_are_one_line():
    """A block of 16, another engine's release, an unknown release: one line each, exit 2."""
    cfg, h100 = costmodel.load_model("llama3-8b"), load_hardware("h100-sxm")
    with pytest.raises(ConfigError, match="--block-size 1"):
        build_replica(cfg, h100, scheduler="sglang", block_size=16)
    with pytest.raises(ConfigError, match="takes none"):
        build_replica(cfg, h100, scheduler="vllm", engine_release="v0.4.0")
    from cli import cli

    for extra in (["--engine-release", "v0.5"], ["--block-size", "16"]):
        result = CliRunner().invoke(cli, ["serve", "--model", "llama3-8b", "--scheduler", "sglang", "--rate", "5",
                                          "--requests", "5", *extra])
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    result = CliRunner().invoke(cli, ["serve", "--model", "llama3-8b", "--scheduler", "sglang", "--rate", "5",
                                      "--requests", "5", "--json"])
    assert result.exit_code == 0, result.output


def _prefilled(sequence: Sequence, tokens: int) -> None:
    """What the engine does after a prefill step of `tokens` (engine.py): cached, and the first token out if the
    prompt is done."""
    sequence.computed += tokens
    if sequence.computed == sequence.known:
        sequence.generated, sequence.known, sequence.status = sequence.generated + 1, sequence.known + 1, DECODING


def test_v040_budget_state_no_token_sets_batch_is_full():
    """v0.4.0 (the 0.4.0 wheel: schedule_policy.py add_one_req_ignore_eos returns budget_state(), NO_TOKEN when
    rem_total_tokens <= 0; scheduler.py:858-860 then sets batch_is_full). A pool of 300: A (prompt 149, 1 out of 6:
    149 cached) and B (9, 1 out of 101: 9 cached) decode; 142 free. r (70, 6) and r2 (1, 1) wait. Step 1: states by
    tokens left A (5, 150), r (6, 70), B (100, 10); 142 - 70 = 72: 72 - 6 x 3 = 54, 72 + 150 - 100 x 2 = 22,
    72 + 220 - 100 > 0: r admitted. rem_total_tokens = 142 - (5 + 100) x 0.7 - (70 + 6) = -7.5 <= 0: NO_TOKEN,
    batch_is_full. Step 2: no prefill until the running batch shrinks: A, B, r decode. (Before this fix the model
    admitted r2 at step 2: its states r2 (1, 1), A (5, 150), r (5, 71), B (100, 10) pass 71 - 20, 72 - 15,
    222 - 200.)"""
    scheduler = SGLangScheduler(BlockPool(300, 1), 64, 8192, "v0.4.0")
    a, b = _decoding(scheduler, 0, 149, 1, 6), _decoding(scheduler, 1, 9, 1, 101)
    r, r2 = Sequence(Request(2, 0.0, 70, 6)), Sequence(Request(3, 0.0, 1, 1))
    scheduler.add(r)
    scheduler.add(r2)
    assert scheduler.pool.free == 142 and scheduler._reserved() == pytest.approx(73.5)
    assert scheduler.schedule() == [(r, 70)] and scheduler.full
    _prefilled(r, 70)
    assert scheduler.schedule() == [(a, 1), (b, 1), (r, 1)] and list(scheduler.waiting) == [r2]


def test_v040_a_chunk_step_clears_batch_is_full():
    """scheduler.py:771-777 (0.4.0 wheel): after a prefill that left a request being chunked, batch_is_full = False.
    Chunk 8: x's 10-token prompt is cut to 8; batch_is_full is set (as an earlier NO_TOKEN would); the next step runs
    x's last 2 and clears it, so y, arriving after, is admitted at once (before: held off until x's batch shrank)."""
    scheduler = SGLangScheduler(BlockPool(1000, 1), 64, 8, "v0.4.0")
    x, y = Sequence(Request(0, 0.0, 10, 3)), Sequence(Request(1, 0.0, 2, 2))
    scheduler.add(x)
    assert scheduler.schedule() == [(x, 8)]
    _prefilled(x, 8)
    scheduler.full = True
    assert scheduler.schedule() == [(x, 2)] and not scheduler.full
    _prefilled(x, 2)
    scheduler.add(y)
    assert scheduler.schedule() == [(y, 2)]


@pytest.mark.parametrize("release", ["v0.3.0", "v0.4.0"])
def test_the_ratio_is_reset_only_after_an_idle_loop(release):
    """tp_worker.py:285-287 (0.3.0) and scheduler.py:391-394 (0.4.0): new_token_ratio = init only when the loop runs
    no batch. THREE under v0.3.0: steps 1-2 prefill r0, r1 (the server idle before: 0.7), 19 decodes to 0.681;
    r2, refused till then, is prefilled at once when they end (no idle loop: the ratio stays), then 4 decodes:
    0.677 (before: reset to 0.7 at r2's prefill, 0.696). Under v0.4.0 batch_is_full held r1 off while r0 decoded, so
    the step that filters r0's ended batch runs nothing (scheduler.py:919-921): reset; r1 and r2 then go together and
    decode 19 steps: 0.7 - 19 x 0.602 / 600."""
    scheduler = SGLangScheduler(BlockPool(100, 1), 64, 8192, release)
    simulate(requests(*THREE), scheduler, ONE_STEP, 512)
    if release == "v0.3.0":
        assert scheduler.ratio == pytest.approx(0.7 - 23 * 0.001)
    else:
        assert scheduler.ratio == pytest.approx(0.7 - 19 * 0.602 / 600)


def test_the_release_constants_are_the_wheels():
    """Each constant as the release's PyPI wheel (the tag's python/sglang) holds it, file and line in the source:
    0.3.0 global_config.py:19-21,29, tp_worker.py:126-133,217-223, model_runner.py:374-385, server_args.py:54-57,
    policy_scheduler.py:32; 0.4.0 global_config.py:17-28, scheduler.py:305-318, tp_worker.py:92-99,
    model_runner.py:506-518, server_args.py:64-66,155-175, schedule_policy.py:31-33."""
    from costmodel.serving import sglang

    v03, v04 = SGLANG_RELEASES["v0.3.0"], SGLANG_RELEASES["v0.4.0"]
    assert (v03.start_ratio, v03.init_ratio, v03.min_ratio, v03.decay) == (0.1, 0.7, 0.1, 0.001)
    assert (v04.start_ratio, v04.init_ratio, v04.min_ratio) == (0.7, 0.7, 0.7 * 0.14)
    assert v04.decay == (0.7 - 0.7 * 0.14) / 600
    assert (v03.request_pool_cap, v03.running_cap_offset, v03.mem_fraction_tp8) == (5120, -1, 0.83)
    assert (v04.request_pool_cap, v04.running_cap_offset, v04.mem_fraction_tp8) == (4096, 1, 0.81)
    assert (sglang.CLIP_MAX_NEW_TOKENS, sglang.RETRACT_DECODE_STEPS) == (4096, 20)
    assert (sglang.CHUNKED_PREFILL_SIZE, sglang.MAX_PREFILL_TOKENS) == (8192, 16384)
    assert "sglang 0.3.0 wheel" in v03.source and "tp_worker.py:126-133" in v03.source
    assert "sglang 0.4.0 wheel" in v04.source and "tp_worker.py:92-99" in v04.source
