"""The serving simulator (costmodel/serving): the tree's chunk phase, KV sizing, the step time,
queueing sanity and requests. The schedulers on hand-checked traces are in
tests/test_serving_schedulers.py, the `serve` / `plan --serve --rate` commands and their bad input in
tests/test_serving_commands.py. No torch here (tests/test_serving_engine.py compares with the real
engine)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

import costmodel
from costmodel.kernel_time import Gemm
from costmodel import symbols as S
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.serving import serve
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool, cache_sizing
from costmodel.serving.steptime import QUANTITIES, StepTime, serving_profile
from costmodel.serving.workload import Lengths, Request, poisson, read_trace
from costmodel.tree import CostModel, model_values


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
    from costmodel.serving.replica import build_replica

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
    run = costmodel.serve("llama3-8b", rate=0.001, requests=5, prompt="512", output="128", seed=3, cuda_graphs="off",
                          sampling=None)  # the step model's forward alone (its sampler: tests/test_sampler_cost.py)
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
