"""Transformer Engine's context-parallel ring as Megatron-Core runs it (--framework megatron
--cp-rotate ring): the memory-bound passes beside its attention calls, read at Transformer Engine
v1.4 (transformer_engine/pytorch/attention.py AttnFuncWithCP, FusedAttention, causal), each
counted by hand from the source lines (costmodel/layout/context.py te_ring_bytes)."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.hf import from_hf_config
from costmodel.layout import Layout, ParallelEstimate

# 8 query heads, 4 KV heads of 8: at tp 2 a rank holds 4 query heads and 2 KV heads, so Q and K
# (the rank's query and key elements) differ and cannot be swapped unseen
SMALL_GQA = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=8, num_key_value_heads=4, vocab_size=128, max_position_embeddings=64)


def _bytes(seq_len: int, cp: int) -> tuple[int, int]:
    from costmodel.layout.context import te_ring_bytes

    cfg = from_hf_config(SMALL_GQA, "small-gqa")
    return te_ring_bytes(cfg, Workload(seq_len=seq_len, batch=1, attention="flash"), cp, 2)


def test_cp_2_by_hand():
    """cp 2, 16 tokens: 8 a rank, Q = 8 x 4 heads x 8 = 256, K = 8 x 2 x 8 = 128, 2 bytes.
    Forward, rank 1 (the slower): cat of k and v 4 K, out zeroed Q, step 1 the first half of the
    received k and v 2 K, two full corrections 2 x 3 Q: 6 K + 7 Q = 2,560 elements, 5,120 bytes
    (rank 0: 4 K + Q + Q + 3 Q + 1.5 Q = 4 K + 6.5 Q, less). Backward, rank 0 (c = 1): kv into
    the send buffer 4 K; step 0: q, out, dout halves 3 Q, dq half copied Q, cat 4 K, dkv copied
    4 K; step 1 (the diagonal): dq half copied and half added 2.5 Q, cat 4 K, dkv half added half
    copied 5 K: 21 K + 6.5 Q = 4,352 elements, 8,704 bytes (rank 1: 20 K + 5 Q, less)."""
    assert _bytes(16, 2) == (5120, 8704)


def test_cp_4_by_hand():
    """cp 4, 32 tokens: again Q = 256, K = 128 a rank. Forward, rank 3: 4 K + Q + 3 x 2 K +
    4 x 3 Q = 10 K + 13 Q = 4,608 elements, 9,216 bytes. Backward, rank 0 (c = 3): 4 K; steps
    0-2 each 3 Q of halves, dq Q then 1.5 Q twice, cat 4 K each, dkv 4 K then 6 K twice; step 3
    dq 2.5 Q, cat 4 K, dkv 5 K: 41 K + 15.5 Q = 9,216 elements, 18,432 bytes (ranks 1-3:
    39 K + 14 Q, 36 K + 12.5 Q, 34 K + 11 Q)."""
    assert _bytes(32, 4) == (9216, 18432)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_the_kernel_model_adds_them_under_megatrons_ring(recompute):
    """Under Megatron's p2p ring the layer's attention part gains te_ring_bytes at the timer's
    bandwidth (the forward's twice when recomputed); under its all-gather rotate method (not read
    here) nothing: the difference between the two layouts is exactly the passes."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.context import te_ring_bytes
    from costmodel.layout.kernel_step import KernelStepTime
    from costmodel.presets import load_preset

    cfg, hardware = load_preset("llama2-7b"), load_hardware("h100-sxm")
    workload = Workload(seq_len=16384, batch=1, attention="flash", recompute=recompute)

    def layer(rotate: str) -> tuple[float, float]:
        layout = Layout(tp=2, sp=True, cp=4, dp=2, framework="megatron", cp_rotate=rotate)
        step = KernelStepTime(ParallelEstimate(cfg, workload, layout), hardware)
        return step.part_seconds["layer.decoder"][0], step.timer.bandwidth

    (ring, bandwidth), (gathered, _) = layer("ring"), layer("allgather")
    forward, backward = te_ring_bytes(cfg, workload, 4, 2)
    # 4,096 tokens a rank, 16 heads of 128 (Llama 2 7B, MHA): Q = K = 8,388,608 elements; forward
    # rank 3 10 K + 13 Q, backward rank 0 41 K + 15.5 Q, 2 bytes each
    assert (forward, backward) == (2 * 23 * 8388608, 2 * 56 * 8388608 + 8388608)
    passes = forward * (2 if recompute == "full" else 1) + backward
    assert ring - gathered == pytest.approx(passes / bandwidth, rel=1e-9)


@pytest.mark.parametrize("framework", ["megatron", "fsdp2"])
def test_the_rings_sends_transformer_engines_and_torchs(framework):
    """cp 4, tp 2, 32 tokens (8 a rank), 2 layers, 2 micro-batches: kv = 2 x 1 x 2 KV heads x 8
    tokens x 8 x 2 bytes = 512 a layer. Transformer Engine (Megatron): the forward's cp - 1 sends
    of kv, the backward's cp - 1 of kv and cp - 1 of its bf16 gradient (AttnFuncWithCP.backward:
    kv alone at step 0, the gradient alone at the last): 9 x 512 = 4,608 a layer. torch's ring:
    the same kv sends and cp fp32 gradients (4 x 1,024): 6 x 512 + 4,096 = 7,168."""
    cfg = from_hf_config(SMALL_GQA, "small-gqa")
    zero = 3 if framework == "fsdp2" else 1
    layout = Layout(tp=2, cp=4, microbatches=2, cp_rotate="ring", framework=framework, zero=zero)
    moved = ParallelEstimate(cfg, Workload(seq_len=32, batch=1, attention="flash"), layout).to_dict()
    per_layer = 4608 if framework == "megatron" else 7168
    assert moved["communication"]["cp"] == {"send": 2 * 2 * per_layer}
