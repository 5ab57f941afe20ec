"""The sampling step after the LM head (costmodel/serving/sampler.py, sampler_passes.json; session 34, wt34_sampler):
each engine's passes over the logits as its code runs them, in exact bytes per logit, and their seconds at one shape."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel
from costmodel.collectives import collective_seconds
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.serving.replica import build_replica
from costmodel.serving.sampler import Sampled, sampler_passes

LLAMA3_VOCAB = 128_256


def test_vllm_v1_passes_from_its_sampler():
    """vllm/v1/sample/sampler.py + ops/topk_topp_sampler.py, bf16 logits (e = 2): random (temperature 1.0, no top-k /
    top-p): cast 2 + 4, temperature div_ 4 + 4, softmax 4 + 4, exponential_ 0 + 4, probs.div_(q) 8 + 4, argmax 4 + 0;
    greedy: the cast and argmax only."""
    random, greedy = sampler_passes("vllm", "random"), sampler_passes("vllm", "greedy")
    assert random.pass_bytes(2) == (6, 8, 8, 4, 12, 4) and random.bytes_per_logit(2) == 42
    assert greedy.pass_bytes(2) == (6, 4) and greedy.bytes_per_logit(2) == 10
    assert random.bytes_per_logit(4) == 44  # fp32 logits: the cast reads 4 bytes
    assert random.gather == "all_gather"  # LogitsProcessor._gather_logits under V1 (use_all_gather)


def test_vllm_v0_passes_from_its_sampler():
    """vllm/model_executor/layers/sampler.py (V0): cast, temperature, softmax and log_softmax always; random: the
    index copy of probs, exponential_, div_, argmax; greedy: the index copy of logprobs and argmax."""
    random, greedy = sampler_passes("vllm-v0", "random"), sampler_passes("vllm-v0", "greedy")
    assert random.pass_bytes(2) == (6, 8, 8, 8, 8, 4, 12, 4) and random.bytes_per_logit(2) == 58
    assert greedy.pass_bytes(2) == (6, 8, 8, 8, 8, 4) and greedy.bytes_per_logit(2) == 42
    assert random.gather == "gather"


def test_engines_not_read_are_not_priced():
    assert sampler_passes("sarathi") is None and sampler_passes("trtllm") is None and sampler_passes("static") is None
    with pytest.raises(ConfigError, match="sampling must be one of random, greedy"):
        sampler_passes("vllm", "top_p")


@pytest.fixture(scope="module")
def llama():
    return costmodel.load_model("llama3.1-8b"), load_hardware("h100-sxm")


def test_seconds_at_256_sequences_on_an_h100(llama):
    """Llama 3.1 8B (128,256 words), 256 sampled rows, V1 random: 42 x 256 x 128,256 = 1,379,008,512 bytes at
    3.35 TB/s x 0.8 (h100-sxm's memory efficiency) = 0.5146 ms, plus one eager launch (10 us): 0.5246 ms; the step
    model's seconds and decode runs grow by exactly that."""
    cfg, hardware = llama
    assert cfg.vocab_size == LLAMA3_VOCAB
    _, step, _ = build_replica(cfg, hardware, scheduler="vllm", dtype="bf16")
    assert isinstance(step, Sampled)
    assert step.cost.pass_seconds(256) == pytest.approx(1_379_008_512 / (3.35e12 * 0.8), rel=1e-12)
    assert step.cost.seconds(256) == pytest.approx(0.00052456, abs=1e-8)
    query, keys = np.ones(256, dtype=np.int64), np.full(256, 1000)
    assert step.seconds(query, keys) - step.step.seconds(query, keys) == pytest.approx(step.cost.seconds(256), rel=1e-9)
    assert step.decode_run(keys, 3) - step.step.decode_run(keys, 3) == pytest.approx([step.cost.seconds(256)] * 3)
    assert step.cost.seconds(0) == 0.0  # a step that emits nothing samples nothing


def test_tensor_parallel_gather_of_the_logits(llama):
    """vLLM V0 at tp 2: each rank's 256 x 64,128 bf16 logits gathered (priced as an all-gather of the 256 x 128,256
    x 2-byte result through collectives.collective_seconds), beside 58 bytes a logit of passes."""
    cfg, hardware = llama
    _, step, _ = build_replica(cfg, hardware, scheduler="vllm-v0", dtype="bf16", tp=2)
    payload = 256 * 2 * 64_128 * 2
    assert step.cost.gather_seconds(256) == collective_seconds(hardware, "all_gather", payload, 2, 2) > 0
    assert step.cost.pass_seconds(256) == pytest.approx(58 * 256 * LLAMA3_VOCAB / (3.35e12 * 0.8), rel=1e-12)


def test_options_that_turn_it_off_or_pick_the_code(llama):
    cfg, hardware = llama
    assert not isinstance(build_replica(cfg, hardware, scheduler="vllm", sampling=None)[1], Sampled)
    assert not isinstance(build_replica(cfg, hardware, scheduler="sarathi")[1], Sampled)
    greedy = build_replica(cfg, hardware, scheduler="vllm", sampler="vllm-v0", sampling="greedy")[1]
    assert greedy.cost.passes.engine == "vllm-v0" and greedy.cost.passes.bytes_per_logit(2) == 42
    with pytest.raises(ConfigError, match="sampling must be one of"):
        build_replica(cfg, hardware, scheduler="vllm", sampling="beam")
    _, first, _ = build_replica(cfg, hardware, scheduler="vllm")
    _, again, _ = build_replica(cfg, hardware, scheduler="vllm", step=first)  # a search passes its step back
    assert isinstance(again, Sampled) and not isinstance(again.step, Sampled)


def test_the_benchmarks_sampling():
    """benchmark_serving's requests ask temperature 0 (the v0.6.0 post's QPS runs, sglang.bench_serving, Lambda's);
    benchmark_throughput's temperature 1.0 (the default: torchao's, AMD's); LMDeploy's TurboMind and NIM's unnamed
    engine price none."""
    from benchmarks.published_lmdeploy import LMDEPLOY, lmdeploy_options
    from benchmarks.serve_published import vllm_options

    assert vllm_options(1)["sampling"] == "greedy"
    assert lmdeploy_options(LMDEPLOY[0])["sampling"] is None
