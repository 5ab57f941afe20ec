"""The kernel-level time model under expert parallelism, context parallelism and FP8 training:
the roofline's three rules (costmodel/layout/roofline_parts.py: leaf_factor, runs_fp8) applied to a rank's
kernels (costmodel/layout/kernel_step.py), each checked against kernels timed here by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, Gemm, kernels_seconds
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.fp8_casts import CAST_PASSES, cast_bytes
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
from costmodel.presets import load_preset


def kernel_time(name: str, workload: Workload, hardware: str, **layout) -> KernelStepTime:
    return KernelStepTime(ParallelEstimate(load_preset(name), workload, Layout(**layout)), load_hardware(hardware))


def test_fp8_gemms_run_at_the_fp8_peak_and_its_large_gemm_efficiency():
    """llama2-7b, n = 4096 on an H800: under --fp8 the linear layers' GEMMs (forward and both
    backward products) take bf16's time x (989.4 T x 0.716) / (1978.9 T x 0.651), the hardware
    file's peaks and sustained (MSMF) efficiencies, which a training step runs at (the burst,
    MAMF, ratio 0.803 / 0.709 was the figure before training steps took the sustained rate); the
    head, the norms, attention and the activation's memory-bound kernel keep their bf16 times; the
    recipe's casts are added beside the FP8 leaves, memory-bound at the bandwidth."""
    workload, h800 = Workload(seq_len=4096, attention="flash"), load_hardware("h800")
    bf16 = kernel_time("llama2-7b", workload, "h800", pp=2, microbatches=4)
    fp8 = kernel_time("llama2-7b", workload, "h800", pp=2, microbatches=4, fp8="rowwise")
    burst = (h800.flops_per_s["bf16"] * h800.matmul_efficiency["bf16"]
             / (h800.flops_per_s["fp8"] * h800.matmul_efficiency["fp8"]))
    assert burst == pytest.approx(0.5663, abs=1e-4)
    ratio = (h800.flops_per_s["bf16"] * h800.sustained_matmul_efficiency["bf16"]
             / (h800.flops_per_s["fp8"] * h800.sustained_matmul_efficiency["fp8"]))
    assert ratio == pytest.approx(0.5499, abs=1e-4)
    assert bf16.timer.matmul_efficiency == 0.716 and fp8.fp8_timer.matmul_efficiency == 0.651
    entries = rank_kernels(fp8.estimate, True, False)
    flags = fp8.estimate.structure["work"]
    gemms = [k for (_, _, _, kernels), w in zip(entries, flags) if w["fp8"] for k in kernels if isinstance(k, Gemm)]
    assert len(gemms) == 7  # Q, K, V, O; gate, up, down
    on_bf16 = kernels_seconds(gemms, bf16.timer, training=True)
    on_fp8 = kernels_seconds(gemms, fp8.fp8_timer, training=True)
    # large GEMMs: compute-bound, same tiles; each of the 7 GEMMs' 3 products (forward, two
    # backward) also starts with the H800's DRAM startup, the same on either tensor cores
    startup = 21 * h800.dram_kernel_startup_s
    assert h800.dram_kernel_startup_s == 1.955e-6
    assert on_fp8 - startup == pytest.approx(ratio * (on_bf16 - startup), rel=1e-12)
    layer = next(k for k in bf16.part_seconds if k.startswith("layer"))
    # ... beside them, rowwise's casts (layout/fp8.py CAST_PASSES), per leaf, at the bandwidth
    leaves = [[k for k in kernels if isinstance(k, Gemm)] for (key, _, _, kernels), w in zip(entries, flags)
              if w["fp8"] and key == layer]
    assert [len(g) for g in leaves] == [3, 1, 3]
    # a norm writes the input of Q, K, V and of gate and up (layout/fp8.py: TE fuses its amax there)
    assert [[g.normed_input for g in gemms] for gemms in leaves] == [[True] * 3, [False], [True, True, False]]
    casts = sum(sum(cast_bytes(g, CAST_PASSES["rowwise"], needs_tn=True)) for g in leaves) / bf16.timer.bandwidth
    assert casts > 0
    assert bf16.part_seconds[layer][0] - fp8.part_seconds[layer][0] == pytest.approx(on_bf16 - on_fp8 - casts,
                                                                                      rel=1e-9)
    assert fp8.part_seconds["head"] == bf16.part_seconds["head"]  # the output layer stays bf16
    assert fp8.step()["seconds"] < bf16.step()["seconds"]


def test_context_parallel_attention_is_cp_times_the_rank_trees_kernel():
    """llama2-7b at n = 8192 with cp = 2: a rank's kernels are those of n = 4096 (its tokens),
    and its attention core runs 4096 queries against all 8192 keys: 2 x the causal flash call of
    the rank's tree (4096 x 4096, the causal skip over the whole sequence), what a ring's sends
    overlap. Every other leaf is the n = 4096 rank's."""
    workload = Workload(seq_len=8192, attention="flash")
    cp = kernel_time("llama2-7b", workload, "h100-sxm", cp=2, framework="megatron")
    short = kernel_time("llama2-7b", workload.replace(seq_len=4096), "h100-sxm", framework="megatron")
    whole = kernel_time("llama2-7b", workload, "h100-sxm", framework="megatron")
    assert rank_kernels(cp.estimate, True, False) == rank_kernels(short.estimate, True, False)
    assert rank_kernels(cp.estimate, True, False) != rank_kernels(whole.estimate, True, False)
    call = AttentionCall(batch=1, heads=32, n_q=4096, n_kv=4096, head_dim=128, causal=True, value_dim=128)
    one = kernels_seconds([call], cp.timer, training=True)
    layer = next(k for k in cp.part_seconds if k.startswith("layer"))
    assert cp.attention_seconds == {layer: pytest.approx(2 * one, rel=1e-12)}
    assert cp.part_seconds[layer][0] - short.part_seconds[layer][0] == pytest.approx(one, rel=1e-9)
    assert cp.part_seconds["head"] == short.part_seconds["head"]


def test_the_most_loaded_expert_parallel_rank_runs_its_experts_load_factor_times_longer():
    """mixtral-8x7b, ep = 8, expert 0 given 3 of the 10 shares: its rank's experts run 12/5 of the
    balanced rank's; attention, norms and the router do not change."""
    skewed = Workload(seq_len=512, attention="flash", expert_load=(3, 1, 1, 1, 1, 1, 1, 1))
    hot = kernel_time("mixtral-8x7b", skewed, "h100-sxm", dp=8, ep=8, zero=1, framework="megatron")
    even = kernel_time("mixtral-8x7b", skewed.replace(expert_load=None), "h100-sxm", dp=8, ep=8, zero=1,
                       framework="megatron")
    assert hot.estimate.load.factor == Fraction(12, 5)
    flags = hot.estimate.structure["work"]
    experts = {}
    for (key, rerun, _, kernels), w in zip(rank_kernels(hot.estimate, True, False), flags):
        if w["experts"]:
            experts[key] = experts.get(key, 0.0) + kernels_seconds(kernels, hot.timer, True) + \
                kernels_seconds(rerun, hot.timer)
    assert experts  # every layer of mixtral has its experts
    for key, seconds in experts.items():
        extra = hot.part_seconds[key][0] - even.part_seconds[key][0]
        assert extra == pytest.approx((12 / 5 - 1) * seconds, rel=1e-9)
    assert hot.step()["seconds"] > even.step()["seconds"]
