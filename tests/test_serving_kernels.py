"""The serving step with the kernel-level model (costmodel/serving/steptime.py KernelStepTime):
a decode-only step equals the kernel model's decode step of the same batch and context (the decode
tree's leaves through kernel_time.leaves_time, as simulate's KernelSteps times them), the fitted
kernels equal the tree's, a step is monotone in its tokens, tensor parallelism adds the two
all-reduces per layer from costmodel/collectives.py, and the roofline stays an option."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

import costmodel
from costmodel import symbols as S
from costmodel.collectives import collective_seconds
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, KernelTimer, inference_subs, leaf_seconds, leaves_time
from costmodel.layout.split import substitution
from costmodel.tree import CostModel
from costmodel.serving.steptime import KernelStepTime, LeafKernels, RooflineStepTime, StepTime, serving_profile


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


def _decode_step(cfg, hardware, profile, batch, context, dtype="bf16"):
    """The kernel model's decode step (simulate's KernelSteps.decode_curve: the decode tree's
    leaves through leaves_time) at this batch and context, serving's profile."""
    leaves = CostModel(cfg, profile, phase="decode").leaves
    return leaves_time(leaves, inference_subs(cfg, dtype, batch, 1, context=context),
                       KernelTimer(hardware, dtype, profile.attention)).seconds


@pytest.mark.parametrize("model, options", [
    ("llama3-8b", {}),
    ("llama3-8b", {"weight_dtype": "int4"}),
    ("llama3-8b", {"kv_dtype": "fp8", "attention": "sdpa"}),
    ("mixtral-8x7b", {}),
    ("mistral-7b", {}),
])
def test_decode_step_is_the_kernel_models_decode_step(h100, model, options):
    cfg = costmodel.load_model(model)
    profile = serving_profile(cfg, **options)
    step = StepTime(cfg, h100, profile=profile)
    assert isinstance(step, KernelStepTime) and step.time_model == "kernels"
    for batch, context in ((1, 1), (1, 600), (8, 300), (64, 4097)):
        expected = _decode_step(cfg, h100, profile, batch, context)
        assert step.seconds([1] * batch, [context] * batch) == pytest.approx(expected, rel=1e-12)
    # decode_run is seconds() step after step
    keys = np.array([30, 700, 5000])
    assert list(step.decode_run(keys, 4)) == pytest.approx([step.seconds([1] * 3, keys + i) for i in range(4)],
                                                           rel=1e-12)


def test_fitted_kernels_are_the_trees(h100):
    """Each leaf's kernels built from the affine fit equal tree_kernels.leaf_kernels' at points the
    fit was not made or checked at; a leaf that is not affine (the experts touched by n tokens) is
    read from the tree."""
    for model in ("llama3-8b", "mixtral-8x7b"):
        cfg = costmodel.load_model(model)
        step = StepTime(cfg, h100)
        for name, leaves in step.groups.items():
            for kernels, _ in leaves:
                fresh = LeafKernels(kernels.leaf, kernels.subs, kernels.fused, kernels.local)
                for n, c in ((7, 7), (1, 33), (300, 1000), (1000, 1000)):
                    fresh.fit = None
                    assert kernels(n, c) == fresh(n, c), (model, kernels.leaf.path, n, c)
        fits = {kernels.leaf.path: kernels.fit is not None for leaves in step.groups.values() for kernels, _ in leaves}
        if model == "mixtral-8x7b":
            assert fits["decoder.layer.ffn.experts"] is False
        assert fits["decoder.layer.self_attention.weighted_sum"] and fits["head.lm_head"]


def test_step_is_monotone_in_tokens(h100):
    for model in ("llama3-8b", "llama3-70b"):
        for tp in (1, 2):
            step = StepTime(costmodel.load_model(model), h100, tp=tp)
            # tp 2: the leaves (communication aside: NCCL's measured busbw curve is not monotone in
            # the message size, collectives.py)
            leaves = lambda q, c: step.seconds(q, c) - step.communication_seconds(sum(q))  # noqa: E731
            chunks = [leaves([q], [q]) for q in range(1, 2049)]
            decodes = [leaves([1] * b, [500] * b) for b in range(1, 513)]
            mixed = [leaves([q, 1, 1], [q + 100, 300, 700]) for q in range(2, 1025)]
            longer = [leaves([1, 1], [c, 300]) for c in range(1, 5000, 7)]
            for times in (chunks, decodes, mixed, longer):
                if tp == 1:
                    assert np.all(np.diff(times) >= 0)
                else:
                    # kernel_time's split-K: a rank's k/v projection (N 512) at M 64 splits K 16
                    # ways and its fp32 partials cost more than M 65's 8-way split (3.87 vs 3.54 us
                    # on an H100 at its measured GEMV rate, 3.87 vs 3.74 at 0.8 x 3.35 TB/s); the
                    # 8B's step dips by that, 0.29% (0.07% before the GEMV rate shortened the step)
                    assert np.all(np.diff(times) >= -3e-3 * np.asarray(times[1:]))


def test_tensor_parallel_step_adds_two_all_reduces_per_layer(h100):
    cfg = costmodel.load_model("llama3-8b")
    profile = serving_profile(cfg)
    step = StepTime(cfg, h100, profile=profile, tp=2)
    timer = KernelTimer(h100, "bf16", "flash")
    leaves = CostModel(cfg, profile, phase="decode").leaves
    for batch, context in ((1, 100), (16, 2000)):
        subs = {**inference_subs(cfg, "bf16", batch, 1, context=context), S.tp: sp.Integer(2)}
        local_leaves = 0.0
        for leaf in leaves:
            local = substitution(leaf.block, sp_on=False, vocabulary="ceil", loss_parallel=False, encoder=False)
            one_run, kernels = leaf_seconds(leaf, subs, timer, local=local)
            if kernels:
                local_leaves += int(leaf.count.xreplace(subs)) * (one_run + timer.launch_s)
        all_reduces = collective_seconds(h100, "all_reduce", 2 * 32 * batch * 4096 * 2, 2, 2, calls=2 * 32)
        assert all_reduces > 0 and step.communication_seconds(batch) == all_reduces
        assert step.seconds([1] * batch, [context] * batch) == pytest.approx(local_leaves + all_reduces, rel=1e-12)
    # each rank's GEMMs are its share: half the heads and FFN columns (launches aside)
    no_launch = dataclasses.replace(h100, overhead_s_per_block=0.0)
    one, two = StepTime(cfg, no_launch, profile=profile), StepTime(cfg, no_launch, profile=profile, tp=2)
    assert two.seconds([1], [100]) - two.communication_seconds(1) < 0.6 * one.seconds([1], [100])


def test_gemm_seconds_by_leaf_are_each_ranks_projections():
    """Per token-count leaf, its GEMMs alone (what Sarathi-Serve's per-operation timers measure):
    at tp 2 a rank's attention output projection is 60 layers of (n x d/2) @ (d/2 x d) and its
    head (n x d) @ (d x V/2), each timed as the kernel model times that GEMM; norms and
    residuals launch no GEMM and are left out."""
    from costmodel.kernel_time import Gemm

    cfg, hardware = costmodel.load_model("yi-34b-200k"), load_hardware("a100-pcie")
    step = StepTime(cfg, hardware, "fp16", tp=2)
    timer = KernelTimer(hardware, "fp16", "flash")
    for tokens in (4, 1021):
        gemms = step.gemm_seconds_by_leaf(tokens)
        assert gemms["decoder.layer.self_attention.out"] == 60 * timer.seconds(Gemm(tokens, 7168, 3584))
        assert gemms["head.lm_head"] == timer.seconds(Gemm(tokens, 32000, 7168))
        assert "decoder.layer.ffn.norm" not in gemms and gemms["decoder.layer.ffn.mlp"] > 0


def test_mixed_step_is_its_parts(h100):
    """A mixed step: the per-token leaves at the step's tokens (one GEMM of all rows), the head at
    the emitting sequences, each sequence's attention in one batched call."""
    cfg = costmodel.load_model("llama3-8b")
    step = StepTime(cfg, h100)
    mixed = step.seconds([512, 1, 1], [1024, 300, 700])
    assert mixed > step.seconds([1, 1], [300, 700]) and mixed > step.seconds([512], [1024])
    assert mixed < step.seconds([1, 1], [300, 700]) + step.seconds([512], [1024])
    assert step.seconds([512], [1024], emitting=0) < step.seconds([512], [1024], emitting=1)


def test_decode_table_fills_only_the_contexts_a_step_asks_for(h100):
    """A leaf read from the tree costs a sympy substitution per context (a sliding window's call
    reads min(c, w) keys, not affine in (n, c); naive latent attention's projections were not
    either before each matrix had its own rows): a step at 32k keys once filled all 32k contexts
    below it (two minutes for DeepSeek-V3's naive form). The rows read are the ones asked, and a
    row is the same whichever order the table was filled in."""
    deepseek = costmodel.load_model("deepseek-v3")
    latent = StepTime(deepseek, h100, profile=serving_profile(deepseek, mla="naive"))
    # The naive projections are GEMMs at their own rows (queries n, keys c): affine, fitted.
    assert all(kernels.fit is not None for kernels, _ in latent.groups["context"])
    cfg = costmodel.load_model("mistral-7b")
    naive = StepTime(cfg, h100)
    assert any(kernels.fit is None for kernels, _ in naive.groups["context"])
    first = naive.seconds([1, 1], [32768, 40])
    assert sorted(np.flatnonzero(naive._known)) == [40, 32768]
    again = StepTime(cfg, h100)
    again.seconds([1], [40])
    assert again.seconds([1, 1], [32768, 40]) == first
    run = naive.decode_run([100, 200], 3)  # contexts 100..102 and 200..202
    assert sorted(np.flatnonzero(naive._known)) == [40, 100, 101, 102, 200, 201, 202, 32768]
    assert list(run) == [naive.seconds([1, 1], [100 + i, 200 + i]) for i in range(3)]


def test_time_model_option(h100):
    cfg = costmodel.load_model("llama3-8b")
    roofline = StepTime(cfg, h100, time_model="roofline")
    assert isinstance(roofline, RooflineStepTime) and roofline.time_model == "roofline"
    no_sms = dataclasses.replace(h100, sm_count=0)  # the kernel model needs tiles per wave
    assert isinstance(StepTime(cfg, no_sms), RooflineStepTime)
    with pytest.raises(ConfigError, match="sm_count"):
        StepTime(cfg, no_sms, time_model="kernels")
    with pytest.raises(ConfigError, match="time model must be one of"):
        StepTime(cfg, h100, time_model="exact")
    run = costmodel.serving.serve("llama3-8b", "h100-sxm", rate=5, requests=20, prompt="64", output="8")
    assert run.setup["time_model"] == "kernels"
    run = costmodel.serving.serve("llama3-8b", "h100-sxm", rate=5, requests=20, prompt="64", output="8",
                                  time_model="roofline")
    assert run.setup["time_model"] == "roofline"


def test_serve_command_takes_time_model():
    from cli import main

    args = ["serve", "-m", "llama3-8b", "--rate", "5", "--requests", "10", "--prompt", "32", "--output", "4", "--json"]
    assert main([*args, "--time-model", "roofline"]) == 0
    assert main([*args, "--time-model", "exact"]) == 2


@pytest.mark.slow
def test_cpu_microbenchmarks_for_the_kernel_model():
    """validate/calibrate.py's few-row GEMM grid and per-op dispatch (benchmarks/bench_serve_steps.py):
    a product of 64 rows does 64x a row's work in far less than 64x its time (one row streams the
    weights); one tiny op takes more than nothing and less than a millisecond."""
    import torch

    from validate.calibrate import dispatch_s_per_op, gemm_rows_flops_per_s

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rates = gemm_rows_flops_per_s(rows=(1, 64), repeats=1)
        assert set(rates) == {1, 64} and rates[64] > 4 * rates[1] > 0
        assert 0 < dispatch_s_per_op(repeats=101) < 1e-3
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("hardware, d_head, padded", [("a100-80gb", 80, 96), ("h100-sxm", 80, 96),
                                                      ("h100-sxm", 112, 128)])
def test_a_serving_steps_attention_pads_the_head_as_simulate_does(hardware, d_head, padded):
    """A head width FlashAttention-2 is not compiled for runs the next one up (kernel_facts.json
    "attention_head_dims"), in a serving step as in simulate's kernel model: the step's attention
    (its context leaves: under flash one fused call per layer) is what KernelTimer gives for the
    same call, and compute-bound at 4096 queries it is padded/d_head of the unpadded FLOPs' time."""
    hw = load_hardware(hardware)
    base = costmodel.load_model("llama3-8b")
    cfg = base.replace(name=f"odd-head-{d_head}", d_head=d_head)
    step = StepTime(cfg, hw)
    n = 4096
    context = float(step._finish(step._chunk_rows(np.array([n]), np.array([n]))))
    timer = KernelTimer(hw, "bf16", "flash")
    call = AttentionCall(batch=1, heads=cfg.n_heads, n_q=n, n_kv=n, head_dim=d_head, causal=True,
                         value_dim=d_head, kv_heads=cfg.n_kv_heads)
    layers = cfg.n_decoder_layers
    assert context == pytest.approx(layers * (timer.attention_seconds(call) + timer.launch_seconds(1)), rel=1e-12)
    # The same leaf in simulate's prefill tree, through leaf_seconds.
    leaf = next(leaf for leaf in CostModel(cfg, serving_profile(cfg), phase="prefill").leaves
                if leaf.path == "decoder.layer.self_attention.weighted_sum")
    simulate, kernels = leaf_seconds(leaf, inference_subs(cfg, "bf16", 1, n), timer)
    assert context == pytest.approx(layers * (simulate + timer.launch_seconds(kernels)), rel=1e-12)
    # Compute-bound: the executed FLOPs padded to the compiled width, not the head's own (after
    # the call's start from DRAM, hardware.dram_kernel_startup_s).
    flops = 2 * call.executed_pairs(timer.block) * 2 * padded
    assert timer.attention_seconds(call) == pytest.approx(
        hw.dram_kernel_startup_s + flops / (hw.peak("bf16") * timer.attention_efficiency(n, n)), rel=1e-12)


def test_eager_attentions_batched_gemms_start_from_dram_once_a_step():
    """Under eager attention a step's sequences run the core's two batched GEMMs as one call a
    layer each, so the step pays their start from DRAM (hardware.dram_kernel_startup_s) once, not
    once per sequence: the start's share of a decode step is the same at 1, 8 and 64 sequences,
    as simulate's kernel model charges it (the review's item 1)."""
    cfg = costmodel.load_model("llama2-7b")
    a100 = load_hardware("a100-80gb")
    no_start = a100.__class__.from_dict(dict(a100.to_dict(), dram_kernel_startup_s=0.0), "no-start")
    profile = serving_profile(cfg, "eager")
    with_start, without = StepTime(cfg, a100, profile=profile), StepTime(cfg, no_start, profile=profile)
    shares = [with_start.seconds([1] * b, [1024] * b) - without.seconds([1] * b, [1024] * b) for b in (1, 8, 64)]
    # per layer: q, k, v, o, gate, up, down and the two batched attention products; and the head
    assert shares == pytest.approx([(32 * 9 + 1) * 1.96e-6] * 3, rel=1e-9)


def test_a_quantized_cache_is_read_as_stored_by_an_engines_fused_kernel():
    # one byte per key and value element where a paged engine keeps an FP8 (or int8) cache and its
    # fused kernel attends on it (vLLM docs, features/quantization/quantized_kvcache.md: FlashAttention-3
    # runs attention in FP8 on an FP8 cache); the activation dtype's bytes where transformers'
    # QuantizedCache hands the kernel a dequantized cache (kv_cache "dynamic") or a dense kernel runs
    from costmodel.blocks import AttentionScores, WeightedSum
    from costmodel.blocks.base import Profile

    for block in (AttentionScores, WeightedSum):
        engine = block(q_len=1, k_len=S.c,
                       profile=Profile(attention="flash", kv_cache="static", kv_dtype="fp8", decode_code="vllm"))
        assert engine.cache_element_bytes == 1
        for profile in (Profile(attention="flash", kv_cache="dynamic", kv_dtype="fp8"),
                        Profile(attention="flash", kv_cache="static"),
                        # generate's static cache (simulate --kv-cache static): torch's sdpa takes no FP8
                        Profile(attention="sdpa", kv_cache="static", kv_dtype="fp8"),
                        Profile(attention="eager", kv_cache="static", kv_dtype="fp8", decode_code="vllm")):
            assert block(q_len=1, k_len=S.c, profile=profile).cache_element_bytes == S.e
    # the kernel model's call: the keys and values at the cache's bytes, the queries and output not
    call = AttentionCall(batch=4, heads=64, n_q=1, n_kv=5000, head_dim=128, kv_heads=8)
    queries_and_output = 2 * 4 * 64 * 1 * 2 * 128
    keys_and_values = 2 * 4 * 8 * 5000 * 2 * 128
    assert call.moved_bytes(2) == queries_and_output + keys_and_values
    assert dataclasses.replace(call, kv_element_bytes=1).moved_bytes(2) == queries_and_output + keys_and_values // 2


def test_an_fp8_cache_halves_the_decode_steps_context_time(h100):
    # llama3-70b, tp 2: 88 decodes at 5,250 keys read 37.8 GB of FP8 cache per GPU (80 layers x 8 KV heads
    # x 128 x 2 x 88 x 5,250 / 2); the step's context-dependent part halves against a bf16 cache's
    cfg = costmodel.load_model("llama3-70b")
    parts = {}
    for kv_dtype in ("fp8", None):
        step = StepTime(cfg, h100, profile=serving_profile(cfg, weight_dtype="fp8", kv_dtype=kv_dtype), tp=2)
        ones = [1] * 88
        parts[kv_dtype] = step.seconds(ones, [5250] * 88) - step.seconds(ones, [1] * 88)
    assert parts["fp8"] / parts[None] == pytest.approx(0.5, abs=0.02)
    assert 37.8e9 / h100.bandwidth_bytes_per_s < parts["fp8"] < 2 * 37.8e9 / h100.bandwidth_bytes_per_s


def test_transformers_continuous_batching_refuses_a_quantized_cache():
    """transformers 5.24's continuous batching keeps its paged cache in the model's dtype: a
    quantized KV cache there is refused, not read at one byte as vLLM's kernels read theirs."""
    from costmodel.config import ConfigError
    from costmodel.serving.api import serve

    for scheduler in ("hf-fifo", "hf-prefill-first"):
        with pytest.raises(ConfigError, match="keeps its paged cache in the model's dtype"):
            serve("llama3-8b", "h100-sxm", rate=1.0, requests=4, scheduler=scheduler, kv_dtype="fp8")
