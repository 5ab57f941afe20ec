"""A context-parallel ring's attention calls step by step (costmodel/layout/ring_steps.py): one
causal call of the rank's n / cp tokens and cp - 1 unmasked half-block calls (Transformer Engine
v1.4 AttnFuncWithCP: "no_mask" at every step after the first), the latter at the kernel's published
unmasked figures where its entry has them (cuDNN 9.1.0: cudnn-frontend b740542
benchmark/benchmark_results.csv, causal False, 16 heads, head 128)."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, KernelTimer
from costmodel.layout import Layout, ParallelEstimate

PEAK = 989.4  # the H100 / H200 dense BF16 peak the figures are taken against
UNMASKED_FORWARD = {4096: 654.153, 8192: 668.704, 16384: 641.909, 32768: 612.559, 65536: 602.152}
UNMASKED_BACKWARD = {4096: 517.253, 8192: 530.366, 16384: 538.46, 32768: 536.234, 65536: 535.411}


def test_the_two_half_block_shapes():
    """A rank's causal call of 16,384 tokens (cp chunks of 8,192): all queries against the first
    half of the keys, the second half of the queries against all the keys, unmasked."""
    from costmodel.layout.ring_steps import half_calls

    call = AttentionCall(1, 16, 16384, 16384, 128, causal=True)
    first, second = half_calls(call, 4)
    assert (first.n_q, first.n_kv, first.causal) == (16384, 8192, False)
    assert (second.n_q, second.n_kv, second.causal) == (8192, 16384, False)
    assert first.dense_flops() == second.dense_flops() == 2 * 16384 * 8192 * 16 * 256


def test_only_a_kernel_with_unmasked_figures_has_them():
    from costmodel.layout.ring_steps import unmasked_points

    forward, backward = unmasked_points("cudnn-9.1", "hopper")
    assert forward == tuple((n, tf / PEAK) for n, tf in UNMASKED_FORWARD.items())
    assert backward == tuple((n, tf / PEAK) for n, tf in UNMASKED_BACKWARD.items())
    # cuDNN 9.19.1 on an H200 (cudnn-frontend df73764, the llama3.1 file's no_mask rows, 64 heads)
    assert unmasked_points("cudnn", "hopper") == (
        tuple((n, tf / PEAK) for n, tf in zip((2048, 4096, 8192, 16384, 32768), (633, 671, 691, 702, 693))),
        tuple((n, tf / PEAK) for n, tf in zip((2048, 4096, 8192, 16384, 32768), (504, 560, 594, 612, 572))))
    # the B200 file prints causal rows only; FlashAttention-2's figures are causal
    assert unmasked_points("cudnn", "blackwell") is None and unmasked_points("flash2", "hopper") is None


def test_the_rings_steps_by_hand():
    """cp 4, the rank's causal call 1 x 16 heads x 16,384 x 16,384 x 128 on an H100 (boost clock):
    the half-blocks execute 2 x 16,384 x 8,192 x 16 x 256 = 1.10e12 FLOPs forward (5/2 of it
    backward); the first shape at the unmasked figure at 8,192 keys (668.704 / 530.366 TFLOP/s),
    the second at 16,384 (641.909 / 538.46): forward the second is slower, backward the first.
    Each step after the first replaces one causal call: 3 x (slower - causal)."""
    from costmodel.layout.ring_steps import ring_step_delta, unmasked_points

    h100 = load_hardware("h100-sxm")
    timer = KernelTimer(h100, "bf16", "flash", attention_kernel="cudnn-9.1")
    assert timer.attention_clock == 1.0 and timer.peak == PEAK * 1e12
    call = AttentionCall(1, 16, 16384, 16384, 128, causal=True)
    flops = 2 * 16384 * 8192 * 16 * 256
    start = h100.dram_kernel_startup_s
    forward = start + flops / (641.909e12)
    backward = start + 2.5 * flops / (530.366e12)
    delta = ring_step_delta(call, 4, timer, unmasked_points("cudnn-9.1", "hopper"))
    expected = (3 * (forward - timer.attention_seconds(call)), 3 * (backward - timer.attention_seconds(call, True)))
    assert delta == pytest.approx(expected, rel=1e-9)
    # the causal call at 16k (586.815 / 497.68 TFLOP/s over its block-quantized pairs) is slower:
    # the unmasked steps take less
    assert delta[0] < 0 and delta[1] < 0
    assert ring_step_delta(call, 1, timer, unmasked_points("cudnn-9.1", "hopper")) == (0.0, 0.0)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_the_kernel_model_adds_the_steps_to_the_attention_part(monkeypatch, recompute):
    """Llama 2 7B at tp 2 cp 4 on 16,384 tokens (the rank's causal call 1 x 16 x 4,096 x 4,096):
    the layer's part under cudnn-9.1 is its part without the unmasked figures plus the steps'
    delta, the forward's twice when the layer is recomputed."""
    import costmodel.layout.ring_steps as ring_steps
    from costmodel.layout.kernel_step import KernelStepTime
    from costmodel.presets import load_preset

    cfg, h100 = load_preset("llama2-7b"), load_hardware("h100-sxm")
    workload = Workload(seq_len=16384, batch=1, attention="flash", recompute=recompute)
    estimate = ParallelEstimate(cfg, workload, Layout(tp=2, sp=True, cp=4, dp=2, framework="megatron",
                                                      cp_rotate="ring"))
    stepped = KernelStepTime(estimate, h100, attention_kernel="cudnn-9.1")
    with_steps = stepped.part_seconds["layer.decoder"][0]
    points = ring_steps.unmasked_points("cudnn-9.1", "hopper")
    monkeypatch.setattr(ring_steps, "unmasked_points", lambda *args: None)
    plain = KernelStepTime(estimate, h100, attention_kernel="cudnn-9.1")
    without = plain.part_seconds["layer.decoder"][0]
    call = AttentionCall(1, 16, 4096, 4096, 128, causal=True, value_dim=128, kv_heads=16)
    forward, backward = ring_steps.ring_step_delta(call, 4, stepped.timer, points)
    assert forward < 0 and backward < 0
    delta = forward * (2 if recompute == "full" else 1) + backward
    assert with_steps - without == pytest.approx(delta, rel=1e-9)
    # the attention the ring's sends hide under (layout/time.py) is the steps' too
    hidden_under = stepped.attention_seconds["layer.decoder"] - plain.attention_seconds["layer.decoder"]
    assert hidden_under == pytest.approx(delta, rel=1e-9)
