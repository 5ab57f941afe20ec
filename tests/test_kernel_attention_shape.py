"""The kernel model's fused attention call has the shape the tree's core leaves state (the
weighted-sum leaf, the core's last product): its KV heads (grouped-query: h_kv; multi-query: one;
absorbed latent attention: one shared latent head of r_kv + d_r), its value width, and whether the
values are the keys themselves (absorbed: not read again). Its bytes are the tree's fused scores and
weighted sum, so the kernel model and the roofline agree on what a decode step reads."""

import sys
from pathlib import Path

import pytest
import sympy as sp

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.hf import from_hf_config
from costmodel.kernel_time import AttentionCall, KernelTimer, inference_subs, leaf_kernels
from costmodel.tree import CostModel, profile_for

sys.path.insert(0, str(Path(__file__).parent))
from family_configs import FAMILY_CONFIGS  # noqa: E402
from family_odd_configs import _deepseek_v3  # noqa: E402

# The odd DeepSeek-V3 (tests/family_odd_configs.py): h 6, r_kv 12, d_r 4, qk_nope 6, d_v 7.
H, RKV, DR, NOPE, DV = 6, 12, 4, 6, 7
B, C, E = 3, 37, 2  # sequences, keys in the cache, bf16 bytes


def core_call(cfg, phase: str, batch: int, n: int, context: int | None, mla: str | None = None):
    """The one fused call of the first layer's attention core and the tree's bytes for the core."""
    changes = {} if mla is None else {"mla": mla}
    profile = profile_for(cfg, Workload(attention="sdpa"), dropout=False, kv_cache="static", **changes)
    tree = CostModel(cfg, profile, phase=phase)
    subs = inference_subs(cfg, "bf16", batch, n, context=context)
    core = [leaf for leaf in tree.leaves if leaf.name in ("scores", "softmax", "weighted_sum")][:3]
    calls = [k for leaf in core for k in leaf_kernels(leaf, subs, fused_attention=True)]
    assert len(calls) == 1 and leaf_kernels(core[2], subs, True) == calls  # the weighted sum's
    tree_bytes = sum(int(sp.sympify(leaf.cost.bytes_matmul).xreplace(subs)) for leaf in core)
    return calls[0], tree_bytes


@pytest.fixture(scope="module")
def deepseek():
    return from_hf_config(_deepseek_v3()[0], "odd-deepseek-v3")


def test_absorbed_decode_call_is_one_shared_latent_head(deepseek):
    call, tree_bytes = core_call(deepseek, "decode", B, 1, C, mla="absorbed")
    # One KV head of r_kv + d_r = 16 (the cached latent and its rotary key); values the latent's
    # first r_kv = 12, not read again.
    assert call == AttentionCall(B, H, 1, C, RKV + DR, causal=True, window=None, value_dim=RKV,
                                 kv_heads=1, values_are_keys=True)
    # Queries (16) and output (12) of 6 heads, then 37 keys of 16: 2 x 3 x (6 x 28 + 37 x 16).
    assert call.moved_bytes(E) == tree_bytes == E * B * (H * (RKV + DR + RKV) + C * (RKV + DR)) == 4560
    # FLOPs: scores in r_kv + d_r, values in r_kv, over all 6 x 37 pairs of each sequence.
    assert call.dense_flops() == 2 * B * H * C * (RKV + DR + RKV) == 37296


def test_naive_decode_call_is_h_heads_of_keys_and_values(deepseek):
    call, tree_bytes = core_call(deepseek, "decode", B, 1, C, mla="naive")
    assert call == AttentionCall(B, H, 1, C, NOPE + DR, causal=True, window=None, value_dim=DV,
                                 kv_heads=H, values_are_keys=False)
    # Queries (10) and output (7) of 6 heads; 6 heads of 37 keys (10) and values (7).
    assert call.moved_bytes(E) == tree_bytes == E * B * H * (NOPE + DR + DV) * (1 + C) == 23256


@pytest.mark.parametrize("family,kv_heads", [("llama3", 2), ("gemma_mqa", 1), ("qwen2.5", 2)])
@pytest.mark.parametrize("phase,n,context", [("prefill", 5, None), ("decode", 1, 9)])
def test_grouped_and_multi_query_calls_read_h_kv_heads(family, kv_heads, phase, n, context):
    cfg = from_hf_config(FAMILY_CONFIGS[family], family)
    call, tree_bytes = core_call(cfg, phase, 2, n, context)
    keys = n if context is None else context
    head = 10 if family != "qwen2.5" else 8  # head_dim as the config states it, or 48 / 6
    assert call == AttentionCall(2, 6, n, keys, head, causal=True, window=None, value_dim=head,
                                 kv_heads=kv_heads)
    assert call.moved_bytes(E) == tree_bytes == E * 2 * head * 2 * (6 * n + kv_heads * keys)


def test_absorbed_decode_is_faster_than_naive_under_the_kernel_model():
    # The odd config at a long context (tests/test_mla_absorbed.py): 16 heads, r_kv 256, 32,768
    # keys, 8 sequences on an H100. Absorbed reads 8 x 32,768 x 260 x 2 bytes a layer (136 MB),
    # naive 8 x 16 x 32,768 x 17 x 2 (143 MB) and up-projects every cached latent besides.
    from costmodel.layout.plan import plan_serving

    long = from_hf_config(dict(_deepseek_v3()[0], max_position_embeddings=65536, kv_lora_rank=256,
                               num_attention_heads=16), "odd-deepseek-v3-long")
    hardware = load_hardware("h100-sxm")
    calls = {form: core_call(long, "decode", 8, 1, 32768, mla=form)[0] for form in ("naive", "absorbed")}
    assert calls["absorbed"].kv_heads == 1 and calls["absorbed"].head_dim == 256 + 4
    assert calls["absorbed"].moved_bytes(E) == E * 8 * (16 * (260 + 256) + 32768 * 260)
    timer = KernelTimer(hardware, "bf16", "sdpa")
    assert timer.attention_seconds(calls["absorbed"]) < timer.attention_seconds(calls["naive"])
    token = {form: plan_serving(long, hardware, 1, 4, 32768, 8, "bf16", mla=form, time_model="kernels")
             ["feasible"][0]["time_per_output_token"] for form in ("naive", "absorbed")}
    assert token["absorbed"] < token["naive"]
