"""cuDNN's fused attention timed at GPT-OSS's own sliding-window shape (head width 64, window 128)
from NVIDIA's measurement of that shape (kernel_facts.json "attention_shape_efficiency"), in place
of the kernel's figures by length alone, which are measured at head width 128 with no window
(validate/FINDINGS.md, "gpt-oss-120b training rows", session 23)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, KernelTimer

#: NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/gpt_oss/gb200/gpt_oss_20260424_100011.csv
#: (fb682ce): batch 2, 128 query and KV heads, head dim 64, top_left with sliding_window_size 128,
#: bfloat16, cudnn: (length, forward time_ms, forward tflops, non-deterministic backward tflops).
GB200_ROWS = ((2048, 0.109, 153.0, 176.0), (4096, 0.210, 161.0, 182.0), (8192, 0.414, 165.0, 187.0),
              (16384, 0.822, 167.0, 188.0), (32768, 2.634, 104.0, 186.0))


def test_the_window_flops_are_the_benchmarks_count():
    """benchmark_single_sdpa.py flops(): W(W+1)/2 + (S - W) W unmasked pairs a head, times 2 x batch x
    heads x (64 + 64). At 4096: (8,256 + 507,904) x 2 x 2 x 128 x 128 = 33,827,061,760 FLOPs, and the
    file's 0.210 ms at its 161 TFLOP/s (the convention is the file's own: time x rate = FLOPs)."""
    call = AttentionCall(2, 128, 4096, 4096, 64, causal=True, window=128, value_dim=64)
    assert call.window_flops() == 33_827_061_760 == (128 * 129 // 2 + (4096 - 128) * 128) * 2 * 2 * 128 * 128
    for n, ms, tflops, _ in GB200_ROWS:
        flops = AttentionCall(2, 128, n, n, 64, window=128).window_flops()
        assert flops / (ms * 1e-3) / 1e12 == pytest.approx(tflops, abs=1.0)  # the file rounds to 3 digits
    # a decode step (one query at position 4,096) sees 128 keys; 100 queries at the start, 1..100 each
    assert AttentionCall(1, 1, 1, 4096, 64, window=128).window_flops() == 2 * 128 * 128
    assert AttentionCall(1, 1, 100, 100, 64, window=128).window_flops() == 2 * 5050 * 128


def test_a_gpt_oss_sliding_call_on_blackwell_runs_at_the_measured_rates():
    """A GB200 timer with cuDNN (burst clock: not a training step) times the measured shape at the
    file's own rates over its FLOPs: forward at 161, backward 5/2 of them at 182 TFLOP/s (at 4096)."""
    gb200 = load_hardware("gb200")
    timer = KernelTimer(gb200, "bf16", "flash", attention_kernel="cudnn")
    startup = gb200.dram_kernel_startup_s
    for n, _, forward, backward in GB200_ROWS:
        call = AttentionCall(4, 64, n, n, 64, window=128, value_dim=64, kv_heads=8)
        flops = call.window_flops()
        assert timer.attention_seconds(call) - startup == pytest.approx(flops / (forward * 1e12), rel=1e-12)
        assert timer.attention_seconds(call, backward=True) - startup == \
            pytest.approx(2.5 * flops / (backward * 1e12), rel=1e-12)


def test_other_shapes_and_kernels_keep_the_figures_by_length():
    """Another window, head width or kernel, a full-attention call, or a Hopper GPU (no entry): the
    executed blocks at the kernel's figures by length, as before."""
    gb200, h100 = load_hardware("gb200"), load_hardware("h100-sxm")
    cudnn = KernelTimer(gb200, "bf16", "flash", attention_kernel="cudnn")
    flash2 = KernelTimer(gb200, "bf16", "flash")
    hopper = KernelTimer(h100, "bf16", "flash", attention_kernel="cudnn")
    sliding = AttentionCall(4, 64, 4096, 4096, 64, window=128, kv_heads=8)
    others = [(cudnn, AttentionCall(4, 64, 4096, 4096, 64, window=256, kv_heads=8)),
              (cudnn, AttentionCall(4, 64, 4096, 4096, 128, window=128, kv_heads=8)),
              (cudnn, AttentionCall(4, 64, 4096, 4096, 64, kv_heads=8)),
              (flash2, sliding), (hopper, sliding)]
    for timer, call in others:
        expected = call.executed_flops(128) / (timer.peak * timer.attention_efficiency(call.n_kv))
        assert timer.attention_terms(call)[0] == pytest.approx(expected, rel=1e-12)
    # The measured shape's forward at 4096 takes 2.95x what the figures by length gave it: half the
    # FLOPs (its unmasked pairs, not the two 128-blocks a query block executes) at 161 of 2,500
    # TFLOP/s where the by-length entry (B200, head width 128, no window) has 855.678 of 2,250.
    by_length = sliding.executed_flops(128) / (cudnn.peak * cudnn.attention_efficiency(4096))
    assert sliding.window_flops() / sliding.executed_flops(128) == pytest.approx(0.5, abs=0.01)
    assert cudnn.attention_terms(sliding)[0] / by_length == pytest.approx(
        sliding.window_flops() / sliding.executed_flops(128) * (855.678 / 2250) / (161 / 2500), rel=1e-12)
    assert cudnn.attention_terms(sliding)[0] / by_length == pytest.approx(2.95, abs=0.01)


@pytest.mark.slow
def test_the_gpt_oss_gb200_row_moves_with_the_measured_shape(monkeypatch):
    """`python cli.py published`'s 26.04 GPT-OSS 120B GB200 row: 23,118.1 tokens/s a GPU (23,102.5 before session 43) with the
    measured shape, 23,397.4 (23,381.5) without it (the entry dropped: the figures by length alone); 23,515.6 and 23,804.7
    before session 41's HybridEP at its README's measured GB200 rates (layout/hybridep_rates.py); 23,540.1 and 23,829.8
    before session 33's embedding dense gradient (costmodel/embedding_grad.py); 23,639.0 and
    23,931.2 before session 31's loss traffic (blocks/head.py fused_loss_bytes); 26,498.7 and 26,866.4
    before session 31's eager clamp and rotary embedding (layout/gpt_oss_eager.py); 26,646.3 and
    27,018.1 before session 27's in-node all-to-all ceiling (NVLink 5: 640 GB/s); 26,792.9
    and 27,168.9 before session 25's paired layers walked phase by phase (compute beside HybridEP on
    the SMs it leaves), 27,345.5 and 27,737.2 before session 24's combined-1F1B exposure."""
    import costmodel.kernel_time as kernel_time
    from costmodel.hardware import Hardware
    from costmodel.layout.timing import step_time
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "megatron-bridge-moe 26.04 gpt-oss-120b bf16 64xgb200")
    estimate, hardware, options = train_setup(run, data["sources"]["megatron-bridge-moe"])
    measured = step_time(estimate, hardware, time_model="kernels", **options)
    assert measured.step()["tokens_per_second"] / run["gpus"] == pytest.approx(23_094.6, abs=0.05)  # 23_118.1 before wt46_mgsoftmax (rerun launches); 23_102.5 before session 43
    monkeypatch.setattr(kernel_time, "shape_points", lambda *args: {})
    fresh = Hardware.from_dict(hardware.to_dict(), "gb200")  # a new hardware object: new timers (one per object)
    by_length = step_time(estimate, fresh, time_model="kernels", **options)
    assert by_length.step()["tokens_per_second"] / run["gpus"] == pytest.approx(23_373.4, abs=0.05)  # 23_397.4 before wt46_mgsoftmax; 23_381.5 before session 43
