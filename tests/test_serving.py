"""The serving simulator (costmodel/serving): the tree's chunk phase, KV sizing, the schedulers
on small hand-checked traces, queueing sanity, and the `serve` / `plan --serve --rate` commands
with their bad input. No torch here (tests/test_serving_engine.py compares with the real engine)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

import costmodel
from costmodel.kernel_time import Gemm
from cli import main
from costmodel import symbols as S
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.serving import serve
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool, cache_sizing
from costmodel.serving.schedulers import (OrcaScheduler, SarathiScheduler, StaticScheduler, VLLMScheduler,
                                         VLLMV0Scheduler)
from costmodel.serving.steptime import QUANTITIES, StepTime, serving_profile
from costmodel.serving.workload import Lengths, Request, poisson, read_trace
from costmodel.tree import CostModel, model_values

ONE_STEP = lambda query, keys, emitting: 1.0  # noqa: E731  (time counted in steps)


def requests(*rows: tuple[float, int, int]) -> list[Request]:
    return [Request(i, float(a), p, o) for i, (a, p, o) in enumerate(rows)]


# --- the cost tree's chunk phase --------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama3-8b", "mistral-7b"])
def test_chunk_phase_of_one_token_is_the_decode_step(name: str) -> None:
    """phase "chunk" at n = 1 is phase "decode", leaf by leaf (the serving step reuses the tree)."""
    cfg = costmodel.load_model(name)
    profile = serving_profile(cfg)
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    decode, chunk = CostModel(cfg, profile, "decode"), CostModel(cfg, profile, "chunk")
    assert [leaf.path for leaf in decode.leaves] == [leaf.path for leaf in chunk.leaves]
    for a, b in zip(decode.leaves, chunk.leaves):
        for quantity in (*QUANTITIES, "kv_cache_bytes"):
            assert sp.expand(a.total(quantity).xreplace(fixed)) == \
                sp.expand(b.total(quantity).xreplace(fixed).xreplace({S.n: 1})), (a.path, quantity)


def test_chunk_scores_are_queries_times_keys() -> None:
    """A chunk of n tokens attending to c keys: the scores' matmul FLOPs are 2 n c h d_h per layer."""
    cfg = costmodel.load_model("llama3-8b")
    chunk = CostModel(cfg, serving_profile(cfg), "chunk")
    scores = next(leaf for leaf in chunk.leaves if leaf.path.endswith("scores"))
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    value = scores.total("flops_matmul").xreplace(fixed).xreplace({S.b: 1, S.n: 7, S.c: 100})
    assert value == 32 * 2 * 7 * 100 * 32 * 128  # layers x 2 x n x c x heads x head_dim


# --- KV sizing ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kv_dtype, per_token", [
    ("llama3-8b", None, 2 * 32 * 8 * 128 * 2),   # K and V x layers x KV heads x head_dim x bf16
    ("llama3-8b", "fp8", 2 * 32 * 8 * 128 * 1),
    ("deepseek-v3", None, 61 * (512 + 64) * 2),  # MLA: the latent and the rotary key per layer
    ("llama3-70b", None, 2 * 80 * 8 * 128 * 2),
])
def test_kv_bytes_per_token(name: str, kv_dtype: str | None, per_token: int) -> None:
    cfg = costmodel.load_model(name)
    sizing = cache_sizing(cfg, serving_profile(cfg, kv_dtype=kv_dtype), 2, 80 * 2**30, 0.9, 512 * 2**20, 16, 8192)
    assert sizing.kv_bytes_per_token == per_token


def test_blocks_from_memory_left() -> None:
    """Llama-3-8B on 80 GiB at 0.9 less the 512 MiB reserve, its weights (8,030,261,248 x 2 B) and
    an 8192-token step's activations; blocks: (77,309,411,328 - 536,870,912 - 16,060,522,496 - 2,101,412,352)
    // 2,097,152 = 27,947. At tp 2 the 65 RMSNorms (532,480 B) stay whole a GPU (kvcache.rank_weight_bytes)."""
    cfg = costmodel.load_model("llama3-8b")
    sizing = cache_sizing(cfg, serving_profile(cfg), 2, 80 * 2**30, 0.9, 512 * 2**20, 16, 8192)
    assert sizing.weight_bytes == 2 * 8_030_261_248
    assert sizing.activation_bytes == 2_101_412_352
    assert sizing.num_blocks == (int(80 * 2**30 * 0.9) - 512 * 2**20 - sizing.weight_bytes - sizing.activation_bytes) // (16 * 131072)
    assert sizing.num_blocks == 27947
    half = cache_sizing(cfg, serving_profile(cfg), 2, 80 * 2**30, 0.9, 512 * 2**20, 16, 8192, tp=2)
    assert (half.weight_bytes, half.kv_bytes_per_token) == ((2 * 8_030_261_248 - 532_480) // 2 + 532_480, 65536)


@pytest.mark.parametrize("name, tp, per_gpu", [
    ("deepseek-v3", 8, 61 * (512 + 64) * 2),        # MLA: one latent a token, kept whole on every rank
    ("deepseek-v2-lite", 2, 27 * (512 + 64) * 2),
    ("llama3-70b", 8, 2 * 80 * 8 * 128 * 2 // 8),   # GQA: one KV head a rank
    ("mixtral-8x7b", 2, 2 * 32 * 8 * 128 * 2 // 2),
])
def test_kv_bytes_per_token_per_gpu_under_tensor_parallelism(name: str, tp: int, per_gpu: int) -> None:
    """vLLM keeps the whole MLA latent on each tensor-parallel rank (ModelConfig.get_num_kv_heads:
    1 under MLA) and splits GQA's KV heads; `simulate --tp` (the layout model's split tree) does the
    same. serve once divided the latent by tp too: 8,784 B a token for DeepSeek-V3 at tp 8, 8x
    the KV blocks vLLM has."""
    cfg = costmodel.load_model(name)
    sizing = cache_sizing(cfg, serving_profile(cfg), 2, 141 * 2**30, 0.9, 512 * 2**20, 16, 8192, tp=tp)
    assert sizing.kv_bytes_per_token == per_gpu


def test_block_pool_counts() -> None:
    pool = BlockPool(10, 4)
    assert pool.needed(0, 1) == 1 and pool.needed(0, 4) == 1 and pool.needed(0, 5) == 2 and pool.needed(2, 9) == 1
    with pytest.raises(ConfigError, match="block-size"):
        BlockPool(10, 0)


# --- schedulers on hand-checked traces ----------------------------------------------------------

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
    from costmodel.serving.api import build_replica

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


# --- step time ----------------------------------------------------------------------------------

def test_step_time_adds_context_work_per_sequence() -> None:
    """Decode sequences at different contexts cost their own attention; a sequence alone at
    context c costs the decode step at c; the step grows with the keys read."""
    cfg = costmodel.load_model("llama3-8b")
    step = StepTime(cfg, load_hardware("h100-sxm"))
    one = step.seconds([1], [1000])
    assert step.seconds([1], [1000]) == one
    assert step.seconds([1, 1], [1000, 3000]) > step.seconds([1, 1], [1000, 1000]) > one
    assert step.seconds([512], [512]) > one


@pytest.mark.parametrize("scheduler", ["vllm", "sarathi", "orca", "vllm-v0"])
def test_steady_decoding_advanced_at_once_is_the_same_schedule(scheduler: str) -> None:
    """The event loop's shortcut (several decode-only steps computed together) changes nothing:
    the same steps, entries, free blocks, finishes and token times as one step at a time."""
    from costmodel.serving.api import build_replica

    cfg = costmodel.load_model("llama3-8b")
    replica, step, _ = build_replica(cfg, load_hardware("h100-sxm"), scheduler=scheduler, num_blocks=4000)
    cls, blocks, size, seqs, tokens = replica
    chosen = poisson(20, 300, Lengths.parse("uniform:16:1024"), Lengths.parse("uniform:1:300"), seed=4)
    one = simulate(chosen, cls(BlockPool(blocks, size), seqs, tokens), step.seconds, 8192)
    fast = simulate(chosen, cls(BlockPool(blocks, size), seqs, tokens), step.seconds, 8192, True, step.decode_run)
    assert fast.schedule() == one.schedule()
    assert [s.token_times for s in fast.sequences] == [s.token_times for s in one.sequences]


def test_quantized_weights_are_read_as_stored() -> None:
    """A batch-1 decode step reads the weights: with int4 weights (the tree's stored bytes: half a
    byte per value plus scales) the step's memory traffic falls by the difference, exactly."""
    cfg = costmodel.load_model("llama3-8b")
    hw = load_hardware("h100-sxm")
    # The kernel model's bound is looser: bf16 weights at the H100's GEMV rate (3.0 TB/s, Vidur's), the
    # parts int4 does not shrink a larger share, and int4 at tinygemm's measured 1.941 TB/s (kernel_facts,
    # the H200 runs; 0.643 of that rate): 8.42 -> 5.73 ms, 0.680 (5.06 ms, 0.601, at the GEMV rate before).
    for time_model, bound in (("roofline", 0.6), ("kernels", 0.69)):
        full = StepTime(cfg, hw, profile=serving_profile(cfg), time_model=time_model)
        int4 = StepTime(cfg, hw, profile=serving_profile(cfg, weight_dtype="int4"), time_model=time_model)
        assert int4.seconds([1], [600]) < bound * full.seconds([1], [600])
    full = StepTime(cfg, hw, profile=serving_profile(cfg), time_model="roofline")
    int4 = StepTime(cfg, hw, profile=serving_profile(cfg, weight_dtype="int4"), time_model="roofline")
    model = CostModel(cfg, serving_profile(cfg, weight_dtype="int4"), "chunk")
    fixed = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.e: 2}
    saved = sum(int((2 * leaf.total("params") - leaf.total("weight_bytes")).xreplace(fixed)) for leaf in model.leaves)
    per_token = lambda step: step._evaluate("tokens", 1, 1)[1::4].sum() + step._evaluate("head", 1, 1)[1::4].sum()  # noqa: E731
    assert per_token(full) - per_token(int4) == pytest.approx(saved, rel=1e-12)
    # The kernel model: each GEMM reads its weight matrix as stored, the tree's weight_bytes exactly.
    kernels = StepTime(cfg, hw, profile=serving_profile(cfg, weight_dtype="int4"), time_model="kernels")
    checked = 0
    for name in ("tokens", "head"):
        for leaf, count in kernels.groups[name]:
            gemms = [k for k in leaf(1, 1) if isinstance(k, Gemm)]
            if gemms and leaf.leaf.weight_format is not None:
                stored = int(leaf.leaf.total("weight_bytes").xreplace(fixed))
                read = sum(2 * g.n * g.k if g.weight_bytes is None else g.weight_bytes for g in gemms)
                assert count * read == pytest.approx(stored, rel=1e-12)
                if name == "tokens":
                    assert stored < count * sum(2 * g.n * g.k for g in gemms)
                checked += 1
    assert checked >= 4  # qkv, out, mlp and the LM head
    # the head stays in bf16 as the tree keeps it (transformers' quantizers skip lm_head)
    head = [k for leaf, _ in kernels.groups["head"] for k in leaf(1, 1) if isinstance(k, Gemm)]
    assert [g.weight_bytes for g in head] == [None]


# --- queueing sanity ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama_step() -> StepTime:
    return StepTime(costmodel.load_model("llama3-8b"), load_hardware("h100-sxm"))


def test_vanishing_rate_gives_prefill_and_batch_one_decode(llama_step: StepTime) -> None:
    """Requests 1000 s apart never meet: TTFT is the prefill step of the whole prompt, TPOT the
    mean of the batch-1 decode steps at contexts 513..639 (eager: --cuda-graphs off)."""
    run = costmodel.serve("llama3-8b", rate=0.001, requests=5, prompt="512", output="128", seed=3, cuda_graphs="off")
    prefill = llama_step.seconds([512], [512])
    decode = np.mean([llama_step.seconds([1], [512 + i]) for i in range(1, 128)])
    assert run.requests["ttft_s"].to_numpy() == pytest.approx([prefill] * 5, rel=1e-12)
    assert run.requests["tpot_s"].to_numpy() == pytest.approx([decode] * 5, rel=1e-12)
    assert (run.requests["queueing_s"] == 0).all()


def test_littles_law_on_the_timeline() -> None:
    """The time-average number of requests in the system (integrated over the arrival and finish
    events) equals the arrival rate times the mean time in system, over the run."""
    run = serve("llama3-8b", rate=20, requests=400, prompt="uniform:64:1024", output="uniform:16:256", seed=1)
    frame = run.requests
    events = sorted([(t, 1) for t in frame["arrival_s"]] + [(t, -1) for t in frame["finish_s"]])
    area, inside, last = 0.0, 0, events[0][0]
    for time, change in events:
        area += inside * (time - last)
        inside, last = inside + change, time
    span = last - events[0][0]
    rate = len(frame) / span
    assert area / span == pytest.approx(rate * frame["e2e_s"].mean(), rel=1e-9)
    assert inside == 0


def test_throughput_saturates_at_the_largest_batch_that_fits() -> None:
    """With room for 8 sequences of 512 + 64 tokens, the replica runs at most 8 at once, and its
    output rate stops growing once the offered rate passes what 8 can decode."""
    options = dict(prompt="512", output="64", num_blocks=8 * 36, max_num_seqs=256)
    runs = {rate: serve("llama3-8b", rate=rate, requests=300, seed=2, **options) for rate in (2, 200, 2000)}
    tokens = {rate: run.summary()["throughput"]["output_tokens_per_s"] for rate, run in runs.items()}
    assert max(run.steps["sequences"].max() for run in runs.values()) == 8
    assert tokens[2000] == pytest.approx(tokens[200], rel=0.05)
    assert tokens[2] == pytest.approx(2 * 64, rel=0.2) and tokens[2] < 0.3 * tokens[2000]


def test_twice_the_replicas_at_twice_the_rate_same_latencies(tmp_path) -> None:
    """Every arrival twice, two replicas behind round-robin: each replica serves the original
    trace, so every latency is the same as one replica's."""
    rows = [(0.05 * i, 100 + 37 * (i % 5), 20 + 11 * (i % 3)) for i in range(60)]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text("".join(json.dumps({"arrival": a, "prompt_tokens": p, "output_tokens": o}) + "\n" for a, p, o in rows))
    two.write_text("".join(json.dumps({"arrival": a, "prompt_tokens": p, "output_tokens": o}) + "\n"
                           for a, p, o in rows for _ in range(2)))
    single = serve("llama3-8b", trace=str(one))
    double = serve("llama3-8b", trace=str(two), replicas=2)
    for name in ("ttft_s", "tpot_s", "e2e_s", "queueing_s"):
        once = np.sort(single.requests[name].to_numpy())
        assert np.sort(double.requests[name].to_numpy()) == pytest.approx(np.repeat(once, 2), rel=1e-12)
    assert double.summary()["ttft"]["mean"] == pytest.approx(single.summary()["ttft"]["mean"], rel=1e-12)
    assert double.summary()["throughput"]["requests_per_s"] == \
        pytest.approx(2 * single.summary()["throughput"]["requests_per_s"])


# --- requests -----------------------------------------------------------------------------------

def test_poisson_arrivals_are_seeded_and_at_the_rate() -> None:
    a = poisson(4.0, 4000, Lengths.parse("512"), Lengths.parse("uniform:1:9"), seed=7)
    assert a == poisson(4.0, 4000, Lengths.parse("512"), Lengths.parse("uniform:1:9"), seed=7)
    assert a[-1].arrival_s / 4000 == pytest.approx(0.25, rel=0.05)
    assert {r.output_tokens for r in a} == set(range(1, 10))
    assert Lengths.parse("lognormal:300:0.5:10:2000").sample(np.random.default_rng(0), 5000).max() <= 2000


def test_trace_and_histogram(tmp_path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 1.5, "prompt_tokens": 7, "output_tokens": 2, "prefix": "sys"}\n\n'
                     '{"arrival": 0.5, "prompt_tokens": 3, "output_tokens": 1}\n')
    assert read_trace(trace) == [Request(0, 0.5, 3, 1), Request(1, 1.5, 7, 2, "sys")]
    histogram = tmp_path / "h.json"
    histogram.write_text('{"values": [10, 20], "weights": [0, 1]}')
    assert set(Lengths.parse(f"histogram:{histogram}").sample(np.random.default_rng(0), 50)) == {20}


# --- the commands and their bad input ------------------------------------------------------------

def test_serve_json_answers_the_issue_question(capsys) -> None:
    """p99 TTFT and TPOT at 5 req/s for Llama-3-8B on one H100 with vLLM's scheduler."""
    assert main(["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "5", "--requests", "200",
                 "--scheduler", "vllm", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["requests"] == 200 and summary["setup"]["num_blocks"] == 28431  # test_serving_reserve.py
    assert 0 < summary["ttft"]["p99"] < 1 and 0 < summary["tpot"]["p99"] < 0.1
    assert main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "50"]) == 0
    assert "TTFT" in capsys.readouterr().out


def test_static_batching_says_it_has_no_token_budget(capsys) -> None:
    """generate()'s batch has no token budget; the report printed the sentinel, 4611686018427387904."""
    assert main(["serve", "--model", "llama3-8b", "--rate", "2", "--requests", "10", "--scheduler", "static"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line == "budgets: max-num-seqs 8, max-batched-tokens none (a batch of 8, as one would call generate())"


def test_serve_writes_csvs(tmp_path, capsys) -> None:
    out, steps = tmp_path / "r.csv", tmp_path / "s.csv"
    assert main(["serve", "--model", "llama3-8b", "--rate", "50", "--requests", "30", "--csv", str(out),
                 "--steps-csv", str(steps), "--scheduler", "sarathi"]) == 0
    assert out.read_text().splitlines()[0].startswith("id,replica,arrival_s,prompt_tokens,output_tokens,queueing_s")
    assert "kv_blocks_used" in steps.read_text().splitlines()[0]


def _bad(tmp_path, lines: str) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text(lines)
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["--rate", "0"], "--rate must be a positive"),
    (["--rate", "-3"], "--rate must be a positive"),
    (["--rate", "5", "--prompt", "9000"], "pass the model's context of 8192."),
    # an unbounded draw past the context says which option drew it and how to bound it
    (["--rate", "1", "--prompt", "lognormal:6000:1"], "request 2: prompt 8614 + output 128 tokens pass the "
     "model's context of 8192 (drawn from --prompt lognormal:6000:1 --output 128: bound the distribution "
     "inside it, e.g. lognormal:MEDIAN:SIGMA:LOW:HIGH)."),
    (["--rate", "5", "--block-size", "0"], "--block-size must be a positive"),
    (["--rate", "5", "--num-blocks", "4", "--prompt", "100"], "needs 15 KV blocks of 16 tokens; the cache holds 4"),
    (["--rate", "5", "--max-batched-tokens", "0"], "--max-batched-tokens must be at least 1"),
    (["--rate", "5", "--scheduler", "orca", "--max-batched-tokens", "100", "--prompt", "600"], None),
    (["--rate", "5", "--prompt", "lognormal:x"], "length distribution 'lognormal:x': use N, uniform:LOW:HIGH"),
    (["--rate", "5", "--trace", "x.jsonl"], "exactly one of --rate"),
    (["--rate", "5", "--scheduler", "vllm-v0", "--num-scheduler-steps", "0"], "--num-scheduler-steps must be"),
    (["--rate", "5", "--scheduler", "vllm-v0", "--num-scheduler-steps", "-2"], "--num-scheduler-steps must be"),
    (["--rate", "5", "--num-scheduler-steps", "4"], "modelled for the vllm-v0 scheduler only, not vllm"),
    (["--rate", "5", "--scheduler", "sarathi", "--num-scheduler-steps", "2"], "vllm-v0 scheduler only, not sarathi"),
])
def test_serve_bad_input(args, message, capsys) -> None:
    code = main(["serve", "--model", "llama3-8b", "--requests", "3", *args])
    err = capsys.readouterr().err
    if message is None:  # Orca runs a prompt past its budget alone: not an error
        assert code == 0
        return
    assert code == 2 and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize("content, message", [
    ('{"arrival": 0, "prompt_tokens": 5, "output_tokens": 2}\n{"arrival": 1, "prompt_tokens": 5\n', "bad.jsonl:2: not a JSON object"),
    ('{"arrival": 0, "prompt_tokens": 5}\n', "bad.jsonl:1: missing output_tokens"),
    ('\n{"arrival": -1, "prompt_tokens": 5, "output_tokens": 2}\n', "bad.jsonl:2: arrival must be"),
    ('{"arrival": 0, "prompt_tokens": 0, "output_tokens": 2}\n', "bad.jsonl:1: prompt_tokens must be a positive"),
    ('[1, 2]\n', "bad.jsonl:1: not a JSON object"),
])
def test_serve_malformed_trace_names_the_line(tmp_path, content, message, capsys) -> None:
    assert main(["serve", "--model", "llama3-8b", "--trace", _bad(tmp_path, content)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_vllm_without_chunking_rejects_a_prompt_past_the_budget() -> None:
    """Without chunked prefill a 300-token prompt can never run in a 256-token step: refused before
    the simulation starts, in the sentence the CLI prints."""
    scheduler = VLLMScheduler(BlockPool(1000, 16), 8, 256, chunked_prefill=False)
    with pytest.raises(ConfigError, match="does not fit --max-batched-tokens 256 without chunked prefill"):
        simulate(requests((0, 300, 2)), scheduler, ONE_STEP, 8192)
    chunked = simulate(requests((0, 300, 2)), VLLMScheduler(BlockPool(1000, 16), 8, 256), ONE_STEP, 8192)
    assert [s.entries for s in chunked.steps] == [[(0, 256)], [(0, 44)], [(0, 1)]]


def test_plan_serve_rate_ranks_by_gpus(capsys) -> None:
    assert main(["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4",
                 "--slo-ttft", "1", "--slo-tpot", "0.05", "--requests", "40", "--tp", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["configurations"] == 9 and result["feasible"]
    gpus = [row["gpus"] for row in result["feasible"]]
    assert gpus == sorted(gpus) and gpus[0] == 1
    assert all(row["p99_ttft_s"] <= 1 and row["p99_tpot_s"] <= 0.05 for row in result["feasible"])


@pytest.mark.parametrize("args, message", [
    (["--rate", "4", "--slo-ttft", "1"], "needs --slo-ttft and --slo-tpot"),
    (["--rate", "0", "--slo-ttft", "1", "--slo-tpot", "1"], "--rate must be a positive"),
])
def test_plan_serve_bad_input(args, message, capsys) -> None:
    assert main(["plan", "--serve", "--model", "llama3-8b", *args]) == 2
    assert message in capsys.readouterr().err
    assert main(["plan", "--model", "llama3-8b", "--rate", "3"]) == 2
    assert "add --serve" in capsys.readouterr().err


def test_serve_figures_and_rate_sweep(tmp_path, capsys) -> None:
    timeline, latency = tmp_path / "timeline.png", tmp_path / "latency.svg"
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--requests", "40", "--plot", str(timeline)]) == 0
    assert timeline.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["serve", "--model", "llama3-8b", "--rates", "1,50", "--requests", "40", "--plot", str(latency),
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rates"]
    assert [r["rate"] for r in rows] == [1.0, 50.0] and rows[1]["ttft"]["p99"] > rows[0]["ttft"]["p99"]
    assert latency.read_text().lstrip().startswith("<?xml")
    assert main(["serve", "--model", "llama3-8b", "--rates", "1,x"]) == 2
    assert main(["serve", "--model", "llama3-8b", "--rates", "1,50", "--requests", "40", "--output", "1",
                 "--slo-ttft", "0.05"]) == 0
    text = capsys.readouterr().out
    # the deployment is named as `serve --rate` names it; one output token reads "token", its TPOT a dash
    assert text.startswith("llama3-8b on 1 replica(s) (round-robin) of 1 x h100-sxm (bf16), scheduler vllm")
    assert "requests: 40 at each rate, Poisson (seed 0); prompt 512, output 1 token\n" in text
    row_1 = [line for line in text.splitlines() if line.startswith("      1 ")][0].split()
    assert row_1[3:5] == ["-", "-"] and row_1[-1].endswith("%") and "goodput" in text
    assert main(["serve", "--model", "llama3-8b", "--rate", "1", "--plot", str(tmp_path / "a.txt")]) == 2


def test_least_outstanding_router_sends_work_to_the_idle_replica(tmp_path, capsys) -> None:
    """r0 (1,000 tokens to generate) goes to replica 0 and r1 (one token) to replica 1 either way;
    r2 (1,000 tokens) arrives when replica 1 is idle again: round-robin sends it to the busy
    replica 0, least-outstanding to replica 1, where it decodes alone."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 0, "prompt_tokens": 10, "output_tokens": 1000}\n'
                     '{"arrival": 0.01, "prompt_tokens": 10, "output_tokens": 1}\n'
                     '{"arrival": 0.5, "prompt_tokens": 10, "output_tokens": 1000}\n')
    rr = serve("llama3-8b", trace=str(trace), replicas=2)
    lot = serve("llama3-8b", trace=str(trace), replicas=2, router="least-outstanding")
    assert list(rr.requests["replica"]) == [0, 1, 0]
    assert list(lot.requests["replica"]) == [0, 1, 1]
    assert lot.requests["tpot_s"][2] < rr.requests["tpot_s"][2]
    assert main(["serve", "--model", "llama3-8b", "--trace", str(trace), "--replicas", "2", "--router",
                 "least-outstanding", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["router"] == "least-outstanding"


def test_disaggregated_request_alone_pays_the_transfer(capsys) -> None:
    """One request alone on 1 prefill + 1 decode replica: its first token is the prefill step; the
    second comes after its KV cache crossed the link (512 tokens x 131,072 bytes over the H100
    preset's inter-node link, plus its latency) and one decode step at 513 keys."""
    from costmodel.serving.disaggregated import transfer_seconds

    hw = load_hardware("h100-sxm")
    step = StepTime(costmodel.load_model("llama3-8b"), hw)
    run = costmodel.serve("llama3-8b", "h100-sxm", rate=1, requests=1, prompt="512", output="3", disaggregate=(1, 1),
                          cuda_graphs="off")
    row = run.requests.iloc[0]
    transfer = transfer_seconds(hw, 131072, 512)
    assert transfer == 512 * 131072 / hw.inter_node_bandwidth_bytes_per_s + hw.collective_latency_s
    assert row["ttft_s"] == pytest.approx(step.seconds([512], [512]), rel=1e-12)
    second = transfer + step.seconds([1], [513])  # the first token's keys and values join the cache
    third = step.seconds([1], [514])
    assert row["max_itl_s"] == pytest.approx(max(second, third), rel=1e-12)
    assert row["tpot_s"] == pytest.approx((second + third) / 2, rel=1e-12)
    assert set(run.steps["replica"]) == {0, 1}
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--requests", "30", "--disaggregate", "1:2"]) == 0
    assert "1 prefill + 2 decode" in capsys.readouterr().out
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--disaggregate", "1:0"]) == 2
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--disaggregate", "x"]) == 2


def test_a_trace_s_lengths_are_its_own_in_the_text_and_json(tmp_path, capsys) -> None:
    """serve --trace described the requests by --prompt/--output's defaults (512, 128) though the trace
    sets each request's lengths: it now gives the trace's range and mean."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 0, "prompt_tokens": 100, "output_tokens": 20}\n'
                     '{"arrival": 0.5, "prompt_tokens": 300, "output_tokens": 40}\n'
                     '{"arrival": 0.6, "prompt_tokens": 200, "output_tokens": 30}\n')
    assert main(["serve", "--model", "llama3-8b", "--trace", str(trace)]) == 0
    assert "requests: 3 from trace" in (out := capsys.readouterr().out)
    assert "; prompt 100-300 (mean 200), output 20-40 (mean 30) tokens" in out
    assert main(["serve", "--model", "llama3-8b", "--trace", str(trace), "--json"]) == 0
    setup = json.loads(capsys.readouterr().out)["setup"]
    assert (setup["prompt"], setup["output"]) == ("100-300 (mean 200)", "20-40 (mean 30)")
