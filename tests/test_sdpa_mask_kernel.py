"""A mask reaching torch's sdpa makes it compute every block: transformers hands sdpa a mask on a
sliding-window layer once its keys reach the window (kernels.Sdpa, facts sdpa_mask "window"), so the
kernel model times that call over the whole (query, key) matrix with K/V repeated to the query heads,
where flash attention, given the window, skips the blocks outside it (kernel_time._sdpa_mask)."""

from __future__ import annotations

from costmodel.config import Workload
from costmodel.kernel_time import AttentionCall, inference_subs, leaf_kernels
from costmodel.presets import load_preset
from costmodel.tree import CostModel, profile_for


def attention_call(attention: str, n: int) -> list:
    cfg = load_preset("mistral-7b")  # every layer windowed, 4,096 keys; 32 query heads, 8 KV heads
    profile = profile_for(cfg, Workload(attention=attention), dropout=False, kv_cache="static")
    leaf = next(leaf for leaf in CostModel(cfg, profile, phase="prefill").leaves if leaf.name == "weighted_sum")
    return leaf_kernels(leaf, inference_subs(cfg, "bf16", 1, n), fused_attention=True)


def test_sdpa_with_the_windows_mask_computes_every_block():
    assert attention_call("sdpa", 8192) == [AttentionCall(1, 32, 8192, 8192, 128, causal=False, window=None,
                                                          value_dim=128, kv_heads=32)]
    # flash gets the window itself: the causal triangle and the keys before the window are skipped
    assert attention_call("flash", 8192) == [AttentionCall(1, 32, 8192, 8192, 128, causal=True, window=4096,
                                                           value_dim=128, kv_heads=8)]
    # keys short of the window: transformers skips the mask, is_causal does the masking
    assert attention_call("sdpa", 2048) == attention_call("flash", 2048) == [
        AttentionCall(1, 32, 2048, 2048, 128, causal=True, window=4096, value_dim=128, kv_heads=8)]
