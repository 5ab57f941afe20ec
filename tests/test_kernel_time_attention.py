"""The kernel-level time model's attention kernels (costmodel/kernel_time.py AttentionCall and
KernelTimer.attention_*): the FLOPs a causal flash kernel executes, the head widths each kernel is
compiled for, and FlashAttention (v1, 2, 3) and cuDNN at their published rates by length and pass
(kernel_facts.json). Split from tests/test_kernel_time.py (session 39), which was at 578 of its 600 lines."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, KernelTimer
from tests.test_kernel_time import a100


def test_causal_flash_executes_about_half_of_dense_at_long_n():
    dense = AttentionCall(1, 32, 16384, 16384, 128, causal=False)
    causal = AttentionCall(1, 32, 16384, 16384, 128, causal=True)
    assert dense.executed_flops(128) == dense.dense_flops() == 4 * 32 * 16384**2 * 128
    # 128 blocks a side: the diagonal's 128 blocks are computed whole, 129/256 of the pairs.
    assert causal.executed_flops(128) / dense.dense_flops() == pytest.approx(129 / 256)
    # A 4,096-key window computes ~33 key blocks per query block instead of up to 128.
    windowed = AttentionCall(1, 32, 16384, 16384, 128, causal=True, window=4096)
    assert 0.2 < windowed.executed_flops(128) / dense.dense_flops() < 0.26
    # One decoding query sees every key in the cache; a short prompt is dearer per pair.
    decode = AttentionCall(8, 32, 1, 4000, 128, causal=True)
    assert decode.executed_pairs(128) == 8 * 32 * 4000
    # 130 queries: the first block of 128 sees its 128 keys, the last 2 queries two blocks (130).
    assert AttentionCall(1, 1, 130, 130, 64).executed_pairs(128) == 128 * 128 + 2 * 130


def test_a_head_width_the_flash_kernel_is_not_compiled_for_runs_the_next_one_padded():
    # FlashAttention-2 is compiled for heads of 32, 64, 96, 128, 192 and 256 (kernel_facts.json):
    # GPT3-2.7B's head of 80 runs the 96 kernel, 6/5 of its own FLOPs, compute-bound at 4k keys.
    timer = a100()
    assert [timer.padded_head_dim(d) for d in (64, 80, 96, 112, 128, 160, 256, 320)] == \
        [64, 96, 96, 128, 128, 192, 256, 320]
    eighty, ninety_six = AttentionCall(1, 32, 4096, 4096, 80), AttentionCall(1, 32, 4096, 4096, 96)
    assert timer.attention_seconds(eighty) == pytest.approx(timer.attention_seconds(ninety_six), rel=1e-12)
    assert timer.attention_seconds(eighty, backward=True) == \
        pytest.approx(timer.attention_seconds(ninety_six, backward=True), rel=1e-12)
    # Where FlashAttention-2's figures do not apply (an MI300X), the head runs at its own width.
    other = KernelTimer(load_hardware("mi300x"), "bf16", "flash")
    assert other.padded_head_dim(80) == 80
    assert other.attention_seconds(eighty) == pytest.approx(
        other.attention_seconds(ninety_six) * 80 / 96, rel=1e-12)


def test_the_flash_kernel_speeds_up_with_length_on_an_a100():
    # FlashAttention-2's published range, 50% of peak at 512 to 73% at 16k (kernel_facts.json):
    # time per executed FLOP falls with n, where one efficiency for every kernel could not.
    timer = a100()
    assert timer.attention_efficiency(512) == 0.50 and timer.attention_efficiency(16384) == 0.73
    per_flop = [timer.attention_seconds(AttentionCall(1, 32, n, n, 128)) /
                AttentionCall(1, 32, n, n, 128).executed_flops(128) for n in (1024, 4096, 8192)]
    assert per_flop[0] > per_flop[1] > per_flop[2]


def test_the_flash_backward_takes_the_a100_figures_forward_plus_backward_time():
    # FlashAttention-2's A100 figure, panel (d) (causal, head 128): forward plus backward at 99, 133,
    # 155, 173, 182, 189 TFLOP/s at 512 to 16k; the forward is the abstract's 50-73% range, so the
    # backward (5/2 of the forward's FLOPs) takes the sum's time less the forward's at each length.
    timer = a100()
    for n, both in ((512, 99), (1024, 133), (2048, 155), (4096, 173), (8192, 182), (16384, 189)):
        forward, backward = timer.attention_efficiency(n), timer.attention_efficiency(n, backward=True)
        assert 3.5 / (1 / forward + 2.5 / backward) * 312 == pytest.approx(both, rel=1e-12)
    # at 8k: forward 0.684 of the peak (the abstract's range at 8k), backward 0.5509 (was 0.863 x 0.684 = 0.5903)
    assert round(timer.attention_efficiency(8192), 4) == 0.684
    assert round(timer.attention_efficiency(8192, backward=True), 4) == 0.5509
    hopper = KernelTimer(load_hardware("h100-sxm"))  # FlashAttention-2 on the H100: its own backward figures
    assert hopper.attention_backward_ratio == 1.0


#: FlashAttention-2 on the H100 SXM5, causal, head dim 128, TFLOP/s at 512 to 16k tokens: forward
#: (FlashAttention-3 paper, Figure "Forward, with causal mask, head dim 128") and forward plus
#: backward (FlashAttention-2 paper, H100 figure, panel (d)); kernel_facts.json.
FA2_H100_FORWARD = [[512, 191], [1024, 260], [2048, 298], [4096, 319], [8192, 333], [16384, 335]]
FA2_H100_BOTH = [[512, 163], [1024, 221], [2048, 265], [4096, 294], [8192, 308], [16384, 328]]


def test_flash2_on_the_h100_runs_at_its_published_rates_by_length():
    from costmodel.attention_kernels import backward_tflops
    from costmodel.kernel_time import kernel_facts

    entry = next(e for e in kernel_facts()["attention_efficiency"]
                 if e["kernel"] == "flash2" and e["architecture"] == "hopper")
    assert entry["forward_tflops"] == FA2_H100_FORWARD and entry["forward_backward_tflops"] == FA2_H100_BOTH
    assert entry["reference_peak_tflops"] == 989.4
    # The backward from the two: 5/2 F of FLOPs in (7/2 F / 265 - F / 298) at 2k: 253.8 TFLOP/s.
    assert backward_tflops(298, 265, 2.5) == pytest.approx(2.5 / (3.5 / 265 - 1 / 298), rel=1e-12)
    assert backward_tflops(298, 265, 2.5) == pytest.approx(253.76, abs=0.01)
    timer = KernelTimer(load_hardware("h100-sxm"), "bf16", "flash")
    assert timer.attention_efficiency(2048) == pytest.approx(298 / 989.4, rel=1e-12)
    assert timer.attention_efficiency(2048, backward=True) == pytest.approx(253.76 / 989.4, abs=1e-5)
    # The backward is the slower pass at every published length: 0.81 of the forward at 512, 0.85
    # at 2k, 0.97 at 16k (kernel_facts.json's source text).
    ratios = [timer.attention_efficiency(n, backward=True) / timer.attention_efficiency(n) for n, _ in FA2_H100_FORWARD]
    assert all(r < 1 for r in ratios)
    assert [round(ratios[i], 2) for i in (0, 2, 5)] == [0.81, 0.85, 0.97]
    # Log-linear between the points, the end values outside them.
    assert timer.attention_efficiency(1448) == pytest.approx((260 + (298 - 260) * 0.5) / 989.4, rel=1e-3)
    assert timer.attention_efficiency(32768) == timer.attention_efficiency(16384) == pytest.approx(335 / 989.4)
    # A training call's forward plus backward time is the FlashAttention-2 paper's figure at 2k.
    call = AttentionCall(4, 32, 2048, 2048, 128, causal=True)
    startup = load_hardware("h100-sxm").dram_kernel_startup_s
    total = timer.attention_seconds(call) + timer.attention_seconds(call, backward=True) - 2 * startup
    assert call.executed_flops(128) * 3.5 / total == pytest.approx(265e12, rel=1e-9)


#: FlashAttention (v1), causal, head dim 128, forward plus backward TFLOP/s at 512 to 16k tokens
#: (FlashAttention-2 paper, A100 and H100 figures, panel (d), the FlashAttention bars).
FA1_A100_BOTH = [[512, 55], [1024, 62], [2048, 69], [4096, 76], [8192, 80], [16384, 83]]
FA1_H100_BOTH = [[512, 98], [1024, 109], [2048, 108], [4096, 126], [8192, 135], [16384, 137]]


def test_flash1_runs_both_passes_at_its_published_forward_plus_backward_rate():
    from costmodel.kernel_time import kernel_facts

    entries = {e["architecture"]: e for e in kernel_facts()["attention_efficiency"] if e["kernel"] == "flash1"}
    assert entries["ampere"]["forward_backward_tflops"] == FA1_A100_BOTH and entries["ampere"]["reference_peak_tflops"] == 312.0
    assert entries["hopper"]["forward_backward_tflops"] == FA1_H100_BOTH and entries["hopper"]["reference_peak_tflops"] == 989.4
    assert "forward_tflops" not in entries["hopper"]  # only the sum is published: one efficiency for both
    h100 = KernelTimer(load_hardware("h100-sxm"), "bf16", "flash", attention_kernel="flash1")
    assert h100.attention_efficiency(2048) == h100.attention_efficiency(2048, backward=True) == 108 / 989.4
    assert a100(attention="flash", attention_kernel="flash1").attention_efficiency(16384) == 83 / 312.0
    # A training call's forward plus backward time is the figure's: 108 TFLOP/s at 2k on the H100,
    # a third of FlashAttention-2's 265 there.
    call = AttentionCall(4, 32, 2048, 2048, 128, causal=True)
    startup = load_hardware("h100-sxm").dram_kernel_startup_s
    total = h100.attention_seconds(call) + h100.attention_seconds(call, backward=True) - 2 * startup
    assert call.executed_flops(128) * 3.5 / total == pytest.approx(108e12, rel=1e-9)
    # Its kernels are compiled for heads of 32, 64 and 128 (v1.0.9's fmha_api.cpp): 112 runs 128,
    # 80 runs 128 (FlashAttention-2 has a 96 kernel for it).
    assert (h100.padded_head_dim(112), h100.padded_head_dim(80), h100.padded_head_dim(48)) == (128, 128, 64)
    assert KernelTimer(load_hardware("h100-sxm"), "bf16", "flash").padded_head_dim(80) == 96
    with pytest.raises(ConfigError, match="attention kernel 'flash4' has no published figures; "
                                          "known: cudnn, cudnn-9.1, flash1, flash2, flash3."):
        KernelTimer(load_hardware("h100-sxm"), "bf16", "flash", attention_kernel="flash4")


#: cuDNN's fused attention, causal, head 128, BF16, forward and backward TFLOP/s by length, as
#: NVIDIA's cudnn-frontend benchmark files print them (kernel_facts.json): the H200 at cuDNN 9.19.1
#: (results/h200_919_only_cudnn/llama3.1_20260227_034703.csv) and the B200 at cuDNN 9.13.1
#: (artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv, commit 0b1577c), 2k and longer.
CUDNN_HOPPER_FORWARD = [[2048, 484], [4096, 591], [8192, 644], [16384, 673], [32768, 688]]
CUDNN_HOPPER_BACKWARD = [[2048, 370], [4096, 474], [8192, 541], [16384, 579], [32768, 581]]
CUDNN_B200_FORWARD = [[2048, 478.921], [4096, 855.678], [8192, 1171.278], [16384, 1332.415], [32768, 1419.0],
                      [65536, 1382.33], [131072, 1355.418]]
CUDNN_B200_BACKWARD = [[2048, 371.486], [4096, 701.265], [8192, 942.509], [16384, 1074.776], [32768, 1108.688],
                       [65536, 1073.059], [131072, 1047.843]]
#: cuDNN 9.1.0 on an H200 (cudnn-frontend b740542, benchmark/benchmark_results.csv, causal, head 128,
#: 16 heads), 4k-64k: the release of spring 2024.
CUDNN91_HOPPER_FORWARD = [[4096, 542.318], [8192, 572.863], [16384, 586.815], [32768, 577.348], [65536, 567.022]]
CUDNN91_HOPPER_BACKWARD = [[4096, 443.603], [8192, 463.541], [16384, 497.68], [32768, 499.664], [65536, 503.807]]
#: FlashAttention-2 as PyTorch's sdpa FLASH_ATTENTION backend runs it on a B200 (the same B200 file's
#: pyt_flash_attention rows, torch 2.9.0a0 nv25.09), 2k and longer.
FA2_B200_FORWARD = [[2048, 242.386], [4096, 324.899], [8192, 373.392], [16384, 394.495], [32768, 403.739],
                    [65536, 408.739], [131072, 410.988]]
FA2_B200_BACKWARD = [[2048, 186.284], [4096, 256.427], [8192, 298.867], [16384, 319.979], [32768, 330.801],
                     [65536, 335.402], [131072, 336.043]]
#: FlashAttention-3 on the H100, head 128: the paper's causal forward figure and its (unmasked)
#: backward figure, the FlashAttention-3 bars.
FA3_H100_FORWARD = [[512, 292], [1024, 423], [2048, 521], [4096, 579], [8192, 602], [16384, 616]]
FA3_H100_BACKWARD = [[512, 316], [1024, 424], [2048, 501], [4096, 542], [8192, 559], [16384, 561]]


@pytest.mark.parametrize("kernel, architecture, hardware, peak, forward, backward", [
    ("cudnn", "hopper", "h100-sxm", 989.4, CUDNN_HOPPER_FORWARD, CUDNN_HOPPER_BACKWARD),
    ("cudnn", "hopper", "h200", 989.4, CUDNN_HOPPER_FORWARD, CUDNN_HOPPER_BACKWARD),
    ("cudnn-9.1", "hopper", "h100-sxm", 989.4, CUDNN91_HOPPER_FORWARD, CUDNN91_HOPPER_BACKWARD),
    ("cudnn", "blackwell", "b200", 2250.0, CUDNN_B200_FORWARD, CUDNN_B200_BACKWARD),
    ("flash2", "blackwell", "b200", 2250.0, FA2_B200_FORWARD, FA2_B200_BACKWARD),
    ("flash3", "hopper", "h100-sxm", 989.4, FA3_H100_FORWARD, FA3_H100_BACKWARD),
])
def test_a_kernel_with_both_passes_published_runs_each_at_its_figure(kernel, architecture, hardware, peak,
                                                                     forward, backward):
    """Where both passes are measured (cuDNN's files, FlashAttention-2's B200 rows in cuDNN's B200
    file, FlashAttention-3's figures) the timer reads
    each at its own published TFLOP/s over the peak the figures were taken against: exactly at
    the points, log-linear between them, the end values outside; nothing derived."""
    from costmodel.kernel_time import kernel_facts

    entry = next(e for e in kernel_facts()["attention_efficiency"]
                 if e["kernel"] == kernel and e["architecture"] == architecture)
    assert (entry["forward_tflops"], entry["backward_tflops"], entry["reference_peak_tflops"]) == (forward, backward, peak)
    timer = KernelTimer(load_hardware(hardware), "bf16", "flash", attention_kernel=kernel)
    assert timer.peak == peak * 1e12
    for (n, fwd), (m, bwd) in zip(forward, backward):
        assert n == m
        assert timer.attention_efficiency(n) == fwd / peak
        assert timer.attention_efficiency(n, backward=True) == bwd / peak
    (first, f0), (last, f1) = forward[0], forward[-1]
    assert timer.attention_efficiency(first // 2) == f0 / peak and timer.attention_efficiency(2 * last) == f1 / peak
    mid = int((forward[1][0] * forward[2][0]) ** 0.5)  # log-midway between two points
    assert timer.attention_efficiency(mid) == pytest.approx((forward[1][1] + forward[2][1]) / 2 / peak, rel=1e-3)
    # A training call's time is its forward FLOPs at the forward figure plus 5/2 of them at the backward's.
    call = AttentionCall(2, 32, 8192, 8192, 128, causal=True)
    startup = load_hardware(hardware).dram_kernel_startup_s
    flops = call.executed_flops(128)
    seconds = timer.attention_seconds(call) + timer.attention_seconds(call, backward=True) - 2 * startup
    at_8k = dict(forward)[8192], dict(backward)[8192]
    assert seconds == pytest.approx(flops / (at_8k[0] * 1e12) + 2.5 * flops / (at_8k[1] * 1e12), rel=1e-9)


def test_cudnn_times_the_heads_own_width_and_flash3_pads_to_its_compiled_ones():
    """No compiled-width table is published for cuDNN: a head of 80 runs 80. FlashAttention-3's
    kernels are compiled for 64, 96, 128, 192 and 256 (hopper/setup.py): 80 runs 96, 112 runs 128."""
    h100 = load_hardware("h100-sxm")
    cudnn = KernelTimer(h100, "bf16", "flash", attention_kernel="cudnn")
    flash3 = KernelTimer(h100, "bf16", "flash", attention_kernel="flash3")
    assert (cudnn.padded_head_dim(80), cudnn.padded_head_dim(112)) == (80, 112)
    assert (flash3.padded_head_dim(80), flash3.padded_head_dim(112), flash3.padded_head_dim(48)) == (96, 128, 64)


def test_a_named_kernel_without_figures_on_the_architecture_is_refused():
    """cuDNN has no published figure here for the A100, FlashAttention-3 runs on Hopper only, and
    FlashAttention (v1) has none for Blackwell: naming them there is an error, not a silent fall
    back to the large-GEMM rate, which only the default kernel (FlashAttention-2) takes where it
    has no figures."""
    for kernel, hardware, where in (("cudnn", "a100-80gb", "blackwell, hopper"), ("flash3", "b200", "hopper"),
                                    ("flash1", "b200", "ampere, hopper")):
        architecture = load_hardware(hardware).architecture
        with pytest.raises(ConfigError, match=f"attention kernel '{kernel}' has no published figures on "
                                              f"{architecture}; it has on: {where}."):
            KernelTimer(load_hardware(hardware), "bf16", "flash", attention_kernel=kernel)
    l40s = KernelTimer(load_hardware("l40s"), "bf16", "flash")  # flash2, no Ada figure
    assert l40s.attention_efficiency(8192) == l40s.matmul_efficiency
