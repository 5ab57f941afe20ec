"""The fused attention kernels on a B200 (session 27, wt27_b200attn): FlashAttention-2's Blackwell
figures (kernel_facts.json flash2/blackwell: PyTorch's sdpa FLASH_ATTENTION backend in NVIDIA's
cudnn-frontend B200 file, commit 0b1577c) and the torchao B200 rows' kernel, cuDNN's, as the
torchtitan commit they ran (6fc499f) picks it on compute capability 10.0."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, KernelTimer
from reports.published_runs import other_runs_data, train_setup

#: Llama 3 8B's attention call at the torchao rows' shape: local batch 1, 32 query heads (torchtitan
#: repeats the 8 KV heads before its sdpa call), 8,192 tokens, head 128, causal.
LLAMA3_8B_CALL = AttentionCall(1, 32, 8192, 8192, 128, causal=True)


def _rate(timer: KernelTimer, call: AttentionCall, backward: bool) -> float:
    """The call's FLOP/s as the timer times it: its executed FLOPs (5/2 of them backward) over its
    seconds less the DRAM start."""
    flops = call.executed_flops(128) * (2.5 if backward else 1.0)
    return flops / (timer.attention_seconds(call, backward) - timer.dram_startup_s)


def test_flash2_on_a_b200_runs_at_the_files_pyt_flash_attention_rows():
    """At 8k, uncapped and not held at the power limit (a microbenchmark's burst), Llama 3 8B's
    call runs at the file's 373.392 TFLOP/s forward and 298.867 backward: 16.6% and 13.3% of the
    2,250 dense peak, where it ran at the large-GEMM efficiency (77.6%) before."""
    timer = KernelTimer(load_hardware("b200"), "bf16", "flash")
    assert _rate(timer, LLAMA3_8B_CALL, backward=False) == pytest.approx(373.392e12, rel=1e-12)
    assert _rate(timer, LLAMA3_8B_CALL, backward=True) == pytest.approx(298.867e12, rel=1e-12)
    assert timer.attention_efficiency(8192) == 373.392 / 2250.0
    assert timer.matmul_efficiency == 0.776
    # Between 8k and 16k log-linear: at 11,585 (log-midway) the mean of 373.392 and 394.495.
    assert timer.attention_efficiency(11585) == pytest.approx((373.392 + 394.495) / 2 / 2250.0, rel=1e-4)


def test_the_torchao_b200_rows_call_cudnn_and_the_h100_rows_flash2():
    """torchtitan 6fc499f (torchtitan/models/attention.py) puts CUDNN_ATTENTION first under
    sdpa_kernel(set_priority=True) where the compute capability is at least 10.0: the B200 rows
    time cuDNN's figures; the H100 rows (torchtitan 0.0.2, plain sdpa) the default FlashAttention-2."""
    data = other_runs_data()
    for run in data["runs"]:
        source = run["id"].split()[0]
        if source not in ("torchao-mx-b200", "torchao-float8-h100"):
            continue
        _, _, options = train_setup(run, data["sources"][source])
        assert options.get("attention_kernel") == ("cudnn" if source == "torchao-mx-b200" else None)


def test_the_b200_rows_attention_call_runs_at_cudnns_figure_at_the_held_clock():
    """The bf16 row's call at 8k: cuDNN's 1,171.278 TFLOP/s forward and 942.509 backward (the B200
    file's pyt_cudnn rows), x the 750 W cap's cube root (0.75^(1/3)) on the peak, x the B200's
    sustained / burst matmul efficiency (0.647 / 0.776) that a training step holds."""
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "torchao-mx-b200 llama3-8b fsdp compile bf16 8xb200")
    _, hardware, options = train_setup(run, data["sources"]["torchao-mx-b200"])
    timer = KernelTimer(hardware, "bf16", "flash", compiled=True, sustained=True,
                        attention_kernel=options["attention_kernel"])
    held = 0.75 ** (1 / 3) * 0.647 / 0.776
    assert _rate(timer, LLAMA3_8B_CALL, backward=False) == pytest.approx(1171.278e12 * held, rel=1e-12)
    assert _rate(timer, LLAMA3_8B_CALL, backward=True) == pytest.approx(942.509e12 * held, rel=1e-12)
