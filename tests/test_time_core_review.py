"""The time model's core worked by hand (wt43_review, session 43; validate/FINDINGS.md "Review of the time
model's core"): three cases end to end from the hardware files and kernel_facts.json, each figure written out
here from the rule docs/time.md states, not from the code, and Megatron's Q, K and V as the one GEMM its code runs.

The GEMM rule (docs/time.md "GEMM: tile and wave quantization"): each of kernel_facts.json's eight tiles gives
ceil(tiles / SMs) waves of one tile's FLOPs at the SM's share of the large-GEMM rate (a training step: the
file's sustained_matmul_efficiency), the fastest tile wins; on Hopper divided by OpenXLA's share at the inner
width K (and a routed expert's by Transformer Engine's grouped share at its rows); never faster than its bytes
(input, output, weight) at the file's GEMV rate; plus dram_kernel_startup_s. A training step's GEMM runs its
forward, its input gradient (M, K, N) and its weight gradient (K, N, M), and its forward again where recomputed.
"""

from __future__ import annotations

import math

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_shapes import Gemm
from costmodel.kernel_time import kernels_seconds
from costmodel.layout import ParallelEstimate
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels

TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))
HOPPER_K = ((256, 0.573), (512, 0.755), (1024, 0.858), (2048, 0.946), (4096, 1.0))  # OpenXLA sm_90 bf16
GROUPED = ((2048, 0.7547), (4096, 0.8555))  # TE PR #2045, H100 BF16, rows an expert


def _log_linear(points, x):
    if x <= points[0][0]:
        return points[0][1]
    for (x0, e0), (x1, e1) in zip(points, points[1:]):
        if x <= x1:
            return e0 + (e1 - e0) * math.log(x / x0) / math.log(x1 / x0)
    return points[-1][1]


def _gemm(m, n, k, count=1, *, sms, rate, gemv, start, k_points=None, rows=None, copy=None):
    """One GEMM's seconds by the stated rule (every GEMM here fills at least one wave: no split-K); its bytes at
    the Dot (gemv) where it reads at least what it writes, else at the copy stream's rate (session 45), where the
    hardware file measures one."""
    per_sm = rate / sms
    compute = min(math.ceil(math.ceil(m / a) * math.ceil(n / b) * count / sms) * 2 * a * b * k / per_sm
                  for a, b in TILES)
    compute /= _log_linear(k_points, k) if k_points else 1.0
    compute /= _log_linear(GROUPED, rows) if rows else 1.0
    read, written = count * 2 * (m * k + k * n), count * 2 * m * n
    return start + max(compute, (read + written) / (copy if copy and written > read else gemv))


def _trained(m, n, k, count=1, rerun=False, **rates):
    return (2 if rerun else 1) * _gemm(m, n, k, count, **rates) + _gemm(m, k, n, count, **rates) \
        + _gemm(k, n, m, count, **rates)


A100_FP16_TRAIN = dict(sms=108, rate=312e12 * 0.806, gemv=1586.905948e9, start=1.96e-6, copy=1709.3608e9)
H100_BF16_TRAIN = dict(sms=132, rate=989.4e12 * 0.716, gemv=3016.544e9, start=1.955e-6, k_points=HOPPER_K)


def _narayanan_1_7b():
    from reports.published_runs import narayanan_runs

    _, cfg, workload, layout, overlap = narayanan_runs()[0]
    return ParallelEstimate(cfg, workload, layout), overlap


def _qwen3_30b_h100():
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    run_id = "megatron-bridge-cards qwen3-30b-a3b pretrain bf16 16xh100"
    run = next(r for r in data["runs"] if r["id"] == run_id)
    estimate, hardware, _ = train_setup(run, data["sources"][run_id.split()[0]])
    return estimate, hardware


def _leaf_kernels(estimate, step, suffix):
    timer = step.timer
    for (key, rerun, _, kernels), work in zip(rank_kernels(estimate, timer.fused_attention, timer.compiled,
                                                           fused_qkv=step.fused_qkv), estimate.structure["work"]):
        if work["path"].endswith(suffix):
            return kernels, rerun
    raise AssertionError(suffix)


def test_megatrons_qkv_is_one_gemm_in_narayanans_step():
    # Megatron-LM cbad126 ParallelAttention.query_key_value: one ColumnParallelLinear(h, 3 h); before this
    # round the kernel model ran q, k and v as three 32768 x 2304 x 2304 GEMMs
    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap)
    kernels, rerun = _leaf_kernels(estimate, step, "self_attention.qkv")
    gemms = [(g.m, g.n, g.k, g.count) for g in kernels if isinstance(g, Gemm)]
    assert gemms == [(16 * 2048, 3 * 2304, 2304, 1)]
    # its forward, recomputed forward, input and weight gradients: 4.152 + 4.152 + 4.160 + 4.152 ms a layer
    hand = _trained(32768, 6912, 2304, rerun=True, **A100_FP16_TRAIN)
    assert hand == pytest.approx(0.016617031653368964, rel=1e-12)
    # its GEMMs alone: the bias, split and copy passes beside them (session 44) are tests/test_megatron_dense_passes.py's
    seconds = kernels_seconds([g for g in kernels if isinstance(g, Gemm)], step.timer, training=True) + \
        kernels_seconds([g for g in rerun if isinstance(g, Gemm)], step.timer)
    assert seconds == pytest.approx(hand, rel=1e-12)


def test_narayanans_1_7b_gemms_by_hand():
    # the step's other GEMMs (24 layers, micro-batch 16 x 2,048 tokens, one micro-batch, full recomputation
    # of the layers, not of the head): the tool's `validate/time_breakdown.py --training` rows
    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap)
    out, rerun = _leaf_kernels(estimate, step, "self_attention.out")
    gemms = [g for g in out if isinstance(g, Gemm)]
    assert [(g.m, g.n, g.k) for g in gemms] == [(32768, 2304, 2304)]
    seconds = kernels_seconds(gemms, step.timer, training=True) + kernels_seconds(
        [g for g in rerun if isinstance(g, Gemm)], step.timer)
    assert seconds == pytest.approx(_trained(32768, 2304, 2304, rerun=True, **A100_FP16_TRAIN), rel=1e-12)
    fc1 = _trained(32768, 4 * 2304, 2304, rerun=True, **A100_FP16_TRAIN)
    assert 24 * fc1 == pytest.approx(0.5318119888894828, rel=1e-12)  # h -> 4h: 32768 x 9216 x 2304
    scores = 24 * _trained(2048, 2048, 96, 16 * 24, rerun=True, **A100_FP16_TRAIN)
    # bound by the 2048 x 2048 scores' bytes: the forward (run twice) writes them, at the copy stream's 1,709.4 GB/s
    # (0.21332535000566755 before session 45, every GEMM's bytes at the Dot's 1,586.9)
    assert scores == pytest.approx(0.20569101000622453, rel=1e-12)
    score_leaf, score_rerun = _leaf_kernels(estimate, step, "self_attention.scores")
    tool = kernels_seconds([g for g in score_leaf if isinstance(g, Gemm)], step.timer, training=True) + \
        kernels_seconds([g for g in score_rerun if isinstance(g, Gemm)], step.timer)
    assert 24 * tool == pytest.approx(scores, rel=1e-12)
    head = _trained(32768, 51200, 2304, **A100_FP16_TRAIN)  # not recomputed
    assert head == pytest.approx(0.09233590895514411, rel=1e-9)


def test_qwen3_30b_moe_step_gemms_by_hand():
    estimate, hardware = _qwen3_30b_h100()
    step = KernelStepTime(estimate, hardware)
    qkv, _ = _leaf_kernels(estimate, step, "self_attention.qkv")
    # Megatron-Core's linear_qkv: 32 query heads and 2 x 4 KV heads of 128 from 2,048: one 4096 x 5120 GEMM
    assert [(g.m, g.n, g.k) for g in qkv if isinstance(g, Gemm)] == [(4096, 5120, 2048)]
    hand = _trained(4096, 5120, 2048, **H100_BF16_TRAIN)
    assert hand == pytest.approx(0.00038483553660578144, rel=1e-12)
    assert kernels_seconds(qkv, step.timer, training=True) == pytest.approx(hand, rel=1e-12)
    # the routed experts: 8 a rank (EP 16 of 128), 4,096 rows each (4,096 tokens x top-8 / 8 ranks' worth)
    gate_up = 48 * 64 * _trained(4096, 1536, 2048, 8, rows=4096, **H100_BF16_TRAIN)
    down = 48 * 64 * _trained(4096, 2048, 768, 8, rows=4096, **H100_BF16_TRAIN)
    assert (round(gate_up, 4), round(down, 4)) == (3.3458, 1.76)


def test_qwen3_30b_hybridep_exchange_by_hand():
    # HybridEP's H100 figures at 2 nodes (kernel_facts.json hybridep_measured): dispatch 54.47, combine
    # 53.35 GB/s over a token's distinct nodes, its own included: 2 (1 - C(64, 8) / C(128, 8)) of 2 nodes
    estimate, hardware = _qwen3_30b_h100()
    step = KernelStepTime(estimate, hardware)
    nodes = 2 * (1 - math.comb(64, 8) / math.comb(128, 8))
    token = 4096 * 2048 * 2  # one micro-batch's tokens, bf16, each once
    per_microbatch = 48 * 2 * token * nodes * (1 / 54.47e9 + 1 / 53.35e9) + hardware.collective_latency_s
    flex = estimate.communication(estimate.stages[0])["ep"]["flex"] / 64
    assert flex == 48 * 2 * 2 * token  # forward and backward, a dispatch and a combine each
    assert step.flex_dispatch(flex) == pytest.approx(per_microbatch, rel=1e-12)
    assert per_microbatch * 64 == pytest.approx(7.626029372088602, rel=1e-12)


def test_llama2_7b_batch_1_decode_step_by_hand():
    # lmdeploy v0.1.0's Llama-2-7B fp16 row on an A100 80GB (TensorRT-LLM's fused qkv, CUDA graphs, flash,
    # static cache) at context 65, split as `validate/time_breakdown.py --row` prints it
    from reports.published_runs import other_runs_data
    from validate.time_breakdown import decode_step_split

    data = other_runs_data()
    run_id = "lmdeploy-v0.1.0 llama2-7b fp16 tp1 batch 1 1/128 a100"
    run = next(r for r in data["runs"] if r["id"] == run_id)
    split = decode_step_split(run, data["sources"]["lmdeploy-v0.1.0"], context=65)
    layers, d, ffn, vocabulary = 32, 4096, 11008, 32000
    weights = 2 * (layers * (4 * d * d + 3 * d * ffn) + vocabulary * d)  # 13,214,154,752 bytes
    # each GEMM's one-row input and output: wqkv d -> 3d, wo, gate and up d -> ffn, down, the head
    rows = 2 * (layers * (4 * d + 2 * d + 2 * (d + ffn) + (ffn + d)) + d + vocabulary)
    assert (weights, rows) == (13_214_154_752, 4_545_024)
    assert split["weight GEMMs"] == pytest.approx((weights + rows) / 1586.905948e9, rel=1e-12)  # BabelStream Dot
    # a layer's 6 GEMMs and attention calls (wqkv, the call, wo, gate, up, down) and the head; 12 kernels a layer
    # (norm, wqkv, rope, call, wo, add, norm, gate, up, silu-mul, down, add), the embedding, final norm and head
    assert split["DRAM startups"] == pytest.approx((6 * layers + 1) * 1.96e-6, rel=1e-12)
    assert split["launches"] == pytest.approx((12 * layers + 3) * 1.34e-6, rel=1e-12)
    # the call reads 65 keys and values and the query, writes its output, at bandwidth x 0.8
    attention = 2 * layers * (2 * 65 * d + 2 * d)
    assert split["attention"] == pytest.approx(attention / (2039e9 * 0.8), rel=1e-12)


def test_megatrons_fused_scale_mask_softmax_and_dropout_bytes():
    # Megatron-LM cbad126 ParallelAttention: baddbmm(..., alpha=1 / norm_factor) (the scale in the GEMM),
    # FusedScaleMaskSoftmax (the causal mask in the softmax kernel), attention_dropout (p 0.1) on the
    # probabilities. Before: the scale and mask as two read-write passes (8 bytes a score), the softmax 4
    # and twice that backward, no dropout traffic; now the scores leaf none, the softmax leaf 3 + 5 forward,
    # 4 + 5 backward (16-bit scores, a 1-byte dropout mask): the causal kernel loads a row to its diagonal in
    # 4-element vectors ((s + 4) / 2s of the scores) and stores it whole (wt46_mgsoftmax; 4 + 5 and 6 + 5 before)
    from costmodel.kernel_shapes import Pointwise

    estimate, overlap = _narayanan_1_7b()
    step = KernelStepTime(estimate, load_hardware("a100-80gb"), overlap=overlap)
    pairs = 16 * 24 * 2048 * 2048  # micro-batch x heads x queries x keys, a layer
    scores, _ = _leaf_kernels(estimate, step, "self_attention.scores")
    softmax, rerun = _leaf_kernels(estimate, step, "self_attention.softmax")
    assert [k.bytes for k in scores if isinstance(k, Pointwise)] in ([], [0.0])
    moved = [(k.bytes, k.backward_bytes) for k in softmax if isinstance(k, Pointwise)]
    loaded = pairs * (2048 + 4) // (2 * 2048)
    # was [(9 * pairs, 11 * pairs)] == [(14_495_514_624, 17_716_740_096)] before wt46_mgsoftmax
    assert moved == [(2 * (loaded + pairs) + 5 * pairs, 2 * (2 * loaded + pairs) + 5 * pairs)] \
        == [(12_888_047_616, 14_501_806_080)]
    # forward, backward and the recomputed forward at bandwidth x 0.8: 25.0 bytes a score (29 before wt46_mgsoftmax)
    seconds = kernels_seconds(softmax, step.timer, training=True) + kernels_seconds(rerun, step.timer)
    assert seconds == pytest.approx((2 * 12_888_047_616 + 14_501_806_080) / (2039e9 * 0.8), rel=1e-12)
    assert (2 * 12_888_047_616 + 14_501_806_080) / pairs == pytest.approx(25.0078, abs=1e-4)
