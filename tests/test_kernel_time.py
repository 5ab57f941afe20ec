"""The kernel-level time model (issue 18): GEMM tile and wave quantization, the FLOPs a fused
attention kernel executes, the kernels' shapes read from the tree, launch overhead and CUDA graphs."""

from __future__ import annotations

import json
import math

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.hardware import Efficiency, load_hardware
from costmodel.kernel_time import (AttentionCall, Gemm, KernelTimer, Pointwise, inference_subs, sustained_efficiency,
                                   leaf_kernels, leaves_time)
from costmodel.presets import load_preset
from costmodel.tree import CostModel, profile_for


def a100(**options) -> KernelTimer:
    return KernelTimer(load_hardware("a100-80gb"), "bf16", **options)


def test_wave_quantization_of_nvidias_guide():
    # NVIDIA's "Matrix Multiplication Background" guide, "Wave quantization": an A100 has 108 SMs
    # and runs one 256x128 tile per SM per wave, so 108 tiles take one wave and 109 tiles two: 1%
    # more work, about twice the time (its figure: throughput halves just past each multiple of
    # 108 tiles). Its tile-quantization example: 1792 x 1792 is 7 x 14 = 98 tiles, one wave.
    timer, tile = a100(), (256, 128)
    full = Gemm(256 * 12, 128 * 9, 4096)  # 108 tiles
    over = Gemm(256 * 12 + 1, 128 * 9, 4096)  # 13 x 9 = 117 tiles: a second wave
    assert timer.waves(full, tile) == 1 and timer.waves(over, tile) == 2
    assert timer.waves(Gemm(1792, 1792, 4096), tile) == 1
    ratio = timer.gemm_compute_seconds(over, tile) / timer.gemm_compute_seconds(full, tile)
    assert ratio == pytest.approx(2.0, rel=0.10)
    throughput = lambda g: g.flops / timer.gemm_compute_seconds(g, tile)  # noqa: E731
    assert throughput(over) / throughput(full) == pytest.approx(0.5, rel=0.10)
    # A full wave runs at the hardware's large-GEMM rate: 271.2 of 312 TFLOP/s (MAMF, A100 SXM).
    assert throughput(full) == pytest.approx(312e12 * 0.869)


#: BabelStream 5.0's Dot kernel on an A100-SXM4-80GB (Tursa): 1,586,905.948 MB/s (a100-80gb.json).
A100_DOT = 1_586_905.948e6
#: What a kernel streaming from DRAM pays beyond its bytes on an A100 80GB: gpu-benches'
#: gpu-small-kernels/a100_80_graph.txt, T = a + V/b fitted at DRAM-resident sizes (a = 3.300 us),
#: less the run's smallest kernel (64 KiB at 49 GB/s: 1.337 us): 1.96 us (a100-80gb.json).
A100_STARTUP = 1.96e-6


def test_the_dram_startup_is_the_streaming_fits_intercept_less_the_smallest_kernel():
    """gpu-benches' SCALE kernel in a CUDA graph on an A100 80GB (a100_80_graph.txt): at 53 MB and
    986 MB it moves 1,580 and 1,742 GB/s, so T = a + V/b through the two gives a = 3.2 us, within
    0.2 us of the least-squares intercept over every DRAM-resident size (3.300 us); its smallest
    kernel, 4,096 doubles read and written at 49 GB/s, takes 1.337 us."""
    v1, v2 = 3_308_414 * 16, 61_620_009 * 16
    t1, t2 = v1 / 1580e9, v2 / 1742e9
    b = (v2 - v1) / (t2 - t1)
    a = t1 - v1 / b
    smallest = 4096 * 16 / 49e9
    hw = load_hardware("a100-80gb")
    assert hw.graph_kernel_s == pytest.approx(smallest, rel=0.01)
    assert hw.dram_kernel_startup_s == A100_STARTUP
    assert hw.dram_kernel_startup_s == pytest.approx(a - smallest, abs=0.2e-6)
    # Each measured file's gap and start add up to its run's intercept (the H200: Hazy's 1.3 us gap,
    # gpu-benches' h200_graph.txt intercept 3.255 us).
    assert hw.graph_kernel_s + hw.dram_kernel_startup_s == pytest.approx(3.300e-6, abs=0.01e-6)
    h200 = load_hardware("h200")
    assert h200.graph_kernel_s + h200.dram_kernel_startup_s == pytest.approx(3.255e-6, abs=0.01e-6)
    # Only GEMMs and attention calls pay it; a pointwise kernel's bytes alone.
    timer = a100()
    assert timer.pointwise_seconds(Pointwise(1e6, 0.0)) == pytest.approx(1e6 / (2039e9 * hw.efficiency["memory"]))


def test_a_decode_gemv_is_bound_by_its_bytes():
    timer = a100()
    gemv = Gemm(1, 4096, 4096)
    bytes_moved = 2 * (4096 + 4096 * 4096 + 4096)
    # Its bytes at the read-and-reduce rate BabelStream's Dot measures: 33,570,816 B in 21.155 us,
    # after the 1.96 us a kernel streaming from DRAM starts with.
    assert timer.gemm_seconds(gemv) == pytest.approx(A100_STARTUP + bytes_moved / A100_DOT)
    assert timer.gemm_seconds(gemv) == pytest.approx((1.96 + 21.1549) * 1e-6, rel=1e-5)
    # An efficiency given (--memory-efficiency) is the bandwidth x memory efficiency, as before.
    given = a100(efficiency=Efficiency(compute=0.7, memory=0.8))
    assert given.gemm_seconds(gemv) == pytest.approx(A100_STARTUP + bytes_moved / (2039e9 * 0.8))


def test_a_one_row_fp32_product_is_a_gemv_not_a_tile_of_the_fp32_peak():
    """cuBLAS runs a one-row product as a matrix-vector kernel (gemv2T_kernel_val in PyTorch
    profiles of batch-1 decoding), not as 128-row tiles: in fp32 the tiles would charge 128x the
    FLOPs at the 19.5 TFLOP/s non-tensor peak (about 220 us for 4,096 x 4,096), where the GEMV moves
    its 67,141,632 bytes at the Dot rate (42.3 us) and runs its 33.6 MFLOP in 2.5 us."""
    timer = KernelTimer(load_hardware("a100-80gb"), "fp32")
    gemv = Gemm(1, 4096, 4096)
    moved = 4 * (4096 + 4096 * 4096 + 4096)
    assert moved == 67_141_632
    assert timer.gemm_seconds(gemv) == pytest.approx(A100_STARTUP + moved / A100_DOT)
    assert timer.gemm_compute_seconds(gemv) > 4 * moved / A100_DOT  # what the tiles would have charged
    # Two rows are a GEMM again: its tiles at the peak.
    assert timer.gemm_seconds(Gemm(2, 4096, 4096)) == pytest.approx(
        A100_STARTUP + timer.gemm_compute_seconds(Gemm(2, 4096, 4096)))


def test_a_llama_ffn_gemv_takes_its_bytes_at_the_dot_rate():
    # Llama-2-7B's down projection at one token: 11,008 inputs -> 4,096 outputs in bf16 moves
    # 2 x (11,008 + 11,008 x 4,096 + 4,096) = 90,207,744 B: 56.845 us at 1,586.9 GB/s.
    seconds = a100().gemm_seconds(Gemm(1, 4096, 11008))
    assert 2 * (11008 + 11008 * 4096 + 4096) == 90_207_744
    assert seconds == pytest.approx(A100_STARTUP + 90_207_744 / A100_DOT)
    assert seconds == pytest.approx((1.96 + 56.8445) * 1e-6, rel=1e-5)
    # A hardware file without a measured GEMV rate keeps bandwidth x memory efficiency (H200; its
    # DRAM startup 1.955 us, gpu-benches h200_graph.txt's intercept less Hazy's 1.3 us gap).
    h200 = KernelTimer(load_hardware("h200"), "bf16")
    assert h200.gemm_seconds(Gemm(1, 4096, 11008)) == pytest.approx(1.955e-6 + 90_207_744 / (4.8e12 * 0.8))
    # The H100 SXM's is Vidur's one-row streaming rate, 3,016.544 GB/s (validate/vidur_profiles.py
    # --gemv), its DRAM startup the H200's (the same GH100 chip).
    h100 = KernelTimer(load_hardware("h100-sxm"), "bf16")
    assert h100.gemm_seconds(Gemm(1, 4096, 11008)) == pytest.approx(1.955e-6 + 90_207_744 / 3016.544e9)


def test_an_int4_gemv_moves_its_bytes_at_the_published_fraction_of_the_dense_rate():
    # gpt-fast's int4 (groups of 32) at one token on the A100, Llama-2-7B's down projection (N =
    # 4,096, K = 11,008): gemlite's A100 figures put PyTorch's int4 kernel at 0.730 of the GEMV rate
    # for a 32,768-wide weight and 0.833 of that at 512 thread blocks (N / 8), the 4,096-wide one
    # (kernel_facts.json, validate/int4_ampere_gemv.py): the stored bytes move at 0.730 x 0.833 x
    # 1,586.9 GB/s, whatever the tile model's 64-row tiles would say.
    timer = a100()
    stored = 4096 * 11008 // 2 + 4096 * (11008 // 32) * (2 + 0.5)  # 4-bit values, scale + zero per group
    moved = 2 * (11008 + 4096) + stored
    gemv = Gemm(1, 4096, 11008, weight_bytes=stored, weight_dtype="int4")
    assert timer.gemm_seconds(gemv) == pytest.approx(A100_STARTUP + moved / (A100_DOT * 0.730 * 0.833))
    assert timer.gemm_seconds(gemv) == pytest.approx((1.96 + 27.0442) * 1e-6, rel=1e-5)  # 26,097,152 B
    # The up projection (N = 11,008: 1,376 blocks) reads log-linear between 1,024 (0.876) and 2,048
    # (0.978): 0.876 + 0.102 x log2(1,376 / 1,024) = 0.9195 of 0.730.
    fraction = 0.730 * (0.876 + (0.978 - 0.876) * math.log2(1376 / 1024))
    assert fraction == pytest.approx(0.67122, rel=1e-4)
    assert timer.weight_only_gemv["int4"].rate_at(11008, 108) == pytest.approx(A100_DOT * fraction)
    # Without the kernel's figure (an unknown format, or three tokens: past the figure's batches
    # 1 and 2) the GEMM is the tile model's, here compute-bound: M = 3 padded to a 64-row tile.
    for other in (Gemm(1, 4096, 11008, weight_bytes=stored, weight_dtype="fp8"),
                  Gemm(3, 4096, 11008, weight_bytes=stored, weight_dtype="int4")):
        assert timer.gemm_seconds(other) == pytest.approx(A100_STARTUP + timer.gemm_compute_seconds(other))
        # 26.0-26.1 us: below the int4 kernel's measured 29.0 at one token. The tile model knows no
        # dequantisation; gemlite's figures for batches 4 and up are not modelled (validate/FINDINGS.md).
        assert timer.gemm_seconds(other) < timer.gemm_seconds(gemv)
    # The A100 entry names its die (108 Ampere SMs): the other Ampere GPUs keep the A10's Marlin figure (0.928, no
    # blocks), and a Hopper GPU has its own (measured on an H200, below).
    a10 = KernelTimer(load_hardware("a10"), "bf16")
    assert a10.weight_only_gemv["int4"].rate == pytest.approx(a10.gemv_bandwidth * 0.928)
    assert a10.weight_only_gemv["int4"].rate_at(4096, a10.sms) == a10.weight_only_gemv["int4"].rate
    assert KernelTimer(load_hardware("a100-40gb"), "bf16").weight_only_gemv["int4"].by_blocks[0] == (512.0, 0.833)
    assert KernelTimer(load_hardware("h100-sxm"), "bf16").weight_only_gemv["int4"].rate != A100_DOT * 0.730


def test_an_int8_gemv_moves_its_bytes_at_the_inductor_kernels_derived_fraction():
    # gpt-fast's int8 at one token, Llama-2-7B's output projection (4,096 x 4,096, a bf16 scale a
    # row): PyTorch's gpt-fast micro-benchmarks put Inductor's int8 GEMV at 0.946 of its bf16 one
    # (kernel_facts.json, validate/inductor_gemv.py), so the 16,801,792 B move at 0.946 x 1,586.9 GB/s.
    timer = a100()
    stored = 4096 * 4096 + 2 * 4096
    moved = 2 * (4096 + 4096) + stored
    gemv = Gemm(1, 4096, 4096, weight_bytes=stored, weight_dtype="int8")
    assert timer.gemm_seconds(gemv) == pytest.approx(A100_STARTUP + moved / (A100_DOT * 0.946))
    assert timer.gemm_seconds(gemv) == pytest.approx((1.96 + 11.1921) * 1e-6, rel=1e-5)
    # Two tokens are past the benchmark's one: the tile model against the bytes at the whole rate.
    two = Gemm(2, 4096, 4096, weight_bytes=stored, weight_dtype="int8")
    bytes_two = 2 * (2 * 4096 + 2 * 4096) + stored
    assert timer.gemm_seconds(two) == pytest.approx(
        A100_STARTUP + max(timer.gemm_compute_seconds(two), bytes_two / A100_DOT))
    kernel = timer.weight_only_gemv["int8"]
    assert (kernel.tokens, kernel.rate, kernel.by_blocks) == (1, pytest.approx(A100_DOT * 0.946), ())
    assert "int8" not in KernelTimer(load_hardware("h100-sxm"), "bf16").weight_only_gemv


def test_kernel_shapes_come_from_the_tree():
    cfg = load_preset("llama2-7b")
    profile = profile_for(cfg, Workload(attention="sdpa"), dropout=False, kv_cache="static")
    prefill = CostModel(cfg, profile, phase="prefill")
    subs = inference_subs(cfg, "bf16", 2, 1024)
    kernels = {leaf.name: leaf_kernels(leaf, subs, fused_attention=True) for leaf in prefill.leaves}
    assert kernels["qkv"] == [Gemm(2048, 4096, 4096)] * 3  # b*n tokens, q, k and v
    assert kernels["mlp"][:3] == [Gemm(2048, 11008, 4096), Gemm(2048, 11008, 4096), Gemm(2048, 4096, 11008)]
    # SiLU reads and writes 2048 x 11008 (2 x 2 bytes), the gate product reads two (3 x 2 bytes).
    assert kernels["mlp"][3] == Pointwise(10 * 2048 * 11008, 2 * 2048 * 11008)
    # One fused call, read from the weighted-sum leaf (the core's last product; Llama 2 7B: 32 KV heads).
    assert kernels["weighted_sum"] == [AttentionCall(2, 32, 1024, 1024, 128, causal=True, window=None,
                                                     value_dim=128, kv_heads=32)]
    assert kernels["scores"] == kernels["softmax"] == []
    assert kernels["lm_head"] == [Gemm(2048, 32000, 4096)]
    assert all(isinstance(k, Pointwise) for k in kernels["norm"])


def test_cuda_graphs_remove_the_launch_overhead():
    cfg = load_preset("llama2-7b")
    profile = profile_for(cfg, Workload(attention="sdpa"), dropout=False, kv_cache="static")
    decode = CostModel(cfg, profile, phase="decode")
    subs = inference_subs(cfg, "bf16", 1, 1, context=205)
    eager = leaves_time(decode.leaves, subs, a100())
    graphed = leaves_time(decode.leaves, subs, a100(cuda_graphs=True))
    # Under graphs each kernel keeps the A100's per-kernel floor, 1.34 us (gpu-benches): the 451
    # kernels of test_cuda_graphs_keep_each_kernels_gpu_side_launch, none of the per-block launches.
    assert load_hardware("a100-80gb").graph_kernel_s == 1.34e-6
    assert graphed.launch_seconds == pytest.approx(451 * 1.34e-6) and eager.launch_seconds > 0
    assert eager.seconds - graphed.seconds == pytest.approx(eager.launch_seconds - graphed.launch_seconds)
    # Per active block, 10 us: 32 layers x 9 blocks + embedding, final norm and head.
    assert eager.launch_seconds == pytest.approx((32 * 9 + 3) * 1e-5)


def test_cuda_graphs_keep_each_kernels_gpu_side_launch():
    """A graph removes the CPU's per-block launches; each kernel still takes the GPU-side gap of
    an empty kernel replayed from a graph: 1.3 us on an H100 (Hazy Research, 'Look Ma, No
    Bubbles!', 2025), 0.8 us on a B200 (Mirage Persistent Kernel, arXiv:2512.22219, 6.6)."""
    cfg = load_preset("llama2-7b")
    profile = profile_for(cfg, Workload(attention="sdpa"), dropout=False, kv_cache="static")
    decode = CostModel(cfg, profile, phase="decode")
    subs = inference_subs(cfg, "bf16", 1, 1, context=205)
    h100 = load_hardware("h100-sxm")
    assert h100.graph_kernel_s == 1.3e-6 and load_hardware("b200").graph_kernel_s == 0.8e-6
    eager = leaves_time(decode.leaves, subs, KernelTimer(h100, "bf16"))
    graphed = leaves_time(decode.leaves, subs, KernelTimer(h100, "bf16", cuda_graphs=True))
    # Eager: the per-block overhead only, as on the A100 (no per-kernel term outside a graph).
    assert eager.launch_seconds == pytest.approx((32 * 9 + 3) * 1e-5)
    # Kernels a layer launches: two norms, three QKV GEMMs, RoPE, the fused attention call, the
    # output GEMM, two residual adds, the MLP's three GEMMs and its activation (14); then the
    # embedding, the final norm and the head: 32 x 14 + 3 = 451 kernels.
    assert graphed.launch_seconds == pytest.approx(451 * 1.3e-6)
    assert eager.seconds - graphed.seconds == pytest.approx((32 * 9 + 3) * 1e-5 - 451 * 1.3e-6)
    # torch.compile: a layer's two norms run inside the residual adds' kernels, 12 a layer.
    compiled = leaves_time(decode.leaves, subs, KernelTimer(h100, "bf16", cuda_graphs=True, compiled=True))
    assert compiled.launch_seconds == pytest.approx((32 * 12 + 3) * 1.3e-6)
    # The prefill runs eagerly (roofline.KernelSteps' prefill timer): no per-kernel term there.
    assert KernelTimer(h100, "bf16").graph_kernel_s == 0


def test_a_gemm_of_less_than_a_wave_splits_k_over_the_idle_sms():
    # A tensor-parallel decode GEMM: 1 token x 512 outputs of 4096 inputs is 8 tiles of 64 x 64 on
    # 108 SMs. Split 13 ways (108 // 8) along K it is bound by its 4 MiB of weights, not by the
    # 8 tiles' full-depth compute (13.4 us at 1/108 of 271 TFLOP/s each).
    timer, gemv = a100(), Gemm(1, 512, 4096)
    assert timer.split_k(gemv, (64, 64)) == 13
    assert timer.gemm_compute_seconds(gemv) < timer.gemm_seconds(gemv)
    assert timer.gemm_seconds(gemv) == pytest.approx(A100_STARTUP + 2 * (4096 + 512 * 4096 + 512) / A100_DOT)
    assert timer.split_k(Gemm(4096, 4096, 4096), (128, 128)) == 1  # 1,024 tiles: whole waves


def test_compile_fuses_the_residual_add_with_the_next_norm_and_the_gated_activation():
    # Llama-2-7B prefill of 1,024 tokens, one run of each leaf (a layer): two norms stop
    # rereading the residual sum (2 x 1024 x 4096 x 2 bytes) and SwiGLU stops writing and
    # rereading silu's output (2 x 1024 x 11008 x 2 bytes); the 64 norms launch nothing.
    cfg = load_preset("llama2-7b")
    profile = profile_for(cfg, Workload(attention="sdpa"), dropout=False, kv_cache="static")
    prefill = CostModel(cfg, profile, phase="prefill")
    subs = inference_subs(cfg, "bf16", 1, 1024)
    eager, compiled = a100(), a100(compiled=True)
    bytes_of = lambda compile: sum(k.bytes for leaf in prefill.leaves  # noqa: E731
                                   for k in leaf_kernels(leaf, subs, True, compiled=compile) if isinstance(k, Pointwise))
    assert bytes_of(False) - bytes_of(True) == 2 * 1024 * 4096 * 2 + 2 * 1024 * 11008 * 2
    saved = leaves_time(prefill.leaves, subs, eager).launch_seconds - leaves_time(prefill.leaves, subs, compiled).launch_seconds
    assert saved == pytest.approx(64 * 1e-5)


def test_compile_needs_the_kernel_model(capsys):
    import cli

    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--compile", "--time-model",
                     "roofline"]) == 2
    assert "--time-model kernels" in capsys.readouterr().err
    # The kernel model is the default: --compile alone is enough.
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--compile", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["inputs"]["compiled"] is True and result["inputs"]["time_model"] == "kernels"


def test_a_given_efficiency_replaces_only_its_own_measured_rate():
    """--compute-efficiency replaces the GEMMs' measured rate (the A100 80GB's MAMF, 0.869), not
    the read-and-reduce rate a GEMM's bytes move at (BabelStream's Dot, 1,586.9 GB/s); and
    --memory-efficiency the bytes' rate, not the MAMF."""
    a100 = load_hardware("a100-80gb")
    compute = KernelTimer(a100, "bf16", efficiency=Efficiency(0.5, 0.8, given=("compute",)))
    assert compute.matmul_efficiency == 0.5
    assert compute.gemv_bandwidth == a100.gemv_bandwidth_bytes_per_s == pytest.approx(1586.9e9, rel=1e-5)
    memory = KernelTimer(a100, "bf16", efficiency=Efficiency(0.7, 0.6, given=("memory",)))
    assert memory.matmul_efficiency == 0.869
    assert memory.gemv_bandwidth == pytest.approx(0.6 * 2039e9)
    both = KernelTimer(a100, "bf16", efficiency=Efficiency(0.5, 0.6))  # the API's default: both given
    assert (both.matmul_efficiency, both.gemv_bandwidth) == (0.5, pytest.approx(0.6 * 2039e9))
    with pytest.raises(ConfigError, match="given"):
        Efficiency(0.5, 0.6, given=("latency",))


def test_a_training_steps_attention_runs_at_the_sustained_clock():
    """A fused attention call's published efficiency is a short run's at the boost clock; a training
    step (sustained) runs it x the dtype's sustained / burst matmul efficiency: on the H100 SXM
    0.716 / 0.803 (bf16), on the B200 0.647 / 0.776; a file with a burst figure alone (GB200) at
    its architecture's measured MSMF / MAMF (the B200's one run, 1456.3 / 1770.9); a file with
    neither (GB300) keeps the published one."""
    for name, ratio in (("h100-sxm", 0.716 / 0.803), ("b200", 0.647 / 0.776), ("gb200", 1456.3 / 1770.9),
                        ("gb300", 1.0)):
        hardware = load_hardware(name)
        burst = KernelTimer(hardware, "bf16", "flash", attention_kernel="cudnn")
        held = KernelTimer(hardware, "bf16", "flash", attention_kernel="cudnn", sustained=True)
        assert held.attention_clock == pytest.approx(ratio, rel=1e-12)
        for n in (1024, 4096, 16384):
            for backward in (False, True):
                assert held.attention_efficiency(n, backward=backward) == \
                    pytest.approx(ratio * burst.attention_efficiency(n, backward=backward), rel=1e-12)


def test_a_forward_figure_without_its_forward_plus_backward_figure_is_a_sentence():
    """attention_points derives a backward from the forward and forward-plus-backward figures at
    each length: a length missing from the second is a data error named in one ConfigError, not a
    KeyError."""
    from costmodel.attention_kernels import attention_points

    entry = {"kernel": "flash2", "architecture": "hopper", "reference_peak_tflops": 989.4,
             "forward_tflops": [[512, 191], [1024, 250]], "forward_backward_tflops": [[512, 163]]}
    with pytest.raises(ConfigError, match=r"'flash2' \(hopper\) states a forward figure at \[1024\]"):
        attention_points(entry, 2.5)


def test_a_training_step_holds_the_sustained_rate_its_architecture_measured():
    # b200.json states its MSMF (FP8 2795.7 of 4500); gb200.json only its MAMF (FP8 3615.6 of 5000, 0.723):
    # a GB200 training GEMM holds 0.723 x the B200's one-run MSMF / MAMF, 2795.7 / 3435.2 (kernel_facts.json
    # "sustained_over_burst", ml-engineering fast-mamf 082816f), where it used to run at the burst rate.
    b200, gb200 = load_hardware("b200"), load_hardware("gb200")
    assert sustained_efficiency(b200, "fp8") == 0.621
    assert sustained_efficiency(gb200, "fp8") == pytest.approx(0.723 * 2795.7 / 3435.2, rel=1e-12)
    assert sustained_efficiency(gb200, "bf16") == pytest.approx(0.729 * 1456.3 / 1770.9, rel=1e-12)
    # an architecture with no measured sibling keeps no sustained rate (the burst one is used)
    assert sustained_efficiency(load_hardware("mi300x"), "bf16") is None
    gemm = Gemm(8192, 8192, 8192)
    burst = KernelTimer(gb200, dtype="bf16").seconds(gemm)
    held = KernelTimer(gb200, dtype="bf16", sustained=True).seconds(gemm)
    assert held / burst == pytest.approx(1770.9 / 1456.3, rel=1e-9)


def test_a_one_pass_kernel_runs_in_its_pass_only():
    """kernel_shapes.PassKernel (mamba_ssm's Triton kernels): the longer of its products' tiles at
    the large-GEMM rate and its bytes at the bandwidth, in the forward (backward False) or the
    backward only; a memory-bound one is its bytes, a product-bound one its tiles."""
    from costmodel.kernel_time import PassKernel, kernels_seconds

    timer = a100()
    products = (Gemm(128, 64, 128, 4096),)
    streaming = PassKernel("_chunk_scan_fwd", 1e9, products)
    dense = PassKernel("_bmm_chunk_fwd", 1.0, (Gemm(4096, 4096, 4096, 8),))
    assert timer.pass_seconds(streaming) == 1e9 / timer.bandwidth
    assert timer.pass_seconds(dense) == timer.gemm_compute_seconds(Gemm(4096, 4096, 4096, 8))
    assert dense.flops == 2 * 4096**3 * 8
    assert kernels_seconds([streaming], timer) == 1e9 / timer.bandwidth
    assert kernels_seconds([streaming], timer, training=True) == 1e9 / timer.bandwidth  # no backward
    backward = PassKernel("_chunk_scan_bwd_dz", 2e9, backward=True)
    assert kernels_seconds([backward], timer) == 0.0
    assert kernels_seconds([backward], timer, training=True) == 2e9 / timer.bandwidth


def test_one_pass_kernels_survive_the_disk_cache(tmp_path):
    """layout/rank_kernel_cache.py's cache writes a kernel as its fields (a PassKernel's products as
    dicts) and reads back equal kernels."""
    from costmodel.kernel_time import PassKernel
    from costmodel.layout import rank_kernel_cache

    entries = [("layer.decoder", [], True, [Gemm(8, 16, 32), PassKernel("k", 5.0, (Gemm(2, 3, 4, 5),), True)])]
    path = tmp_path / "kernels.json"
    rank_kernel_cache._write(path, entries)
    assert rank_kernel_cache._read(path) == entries
