"""A mask reaching torch's sdpa makes it compute every block: transformers hands sdpa a mask on a
sliding-window layer once its keys reach the window (kernels.Sdpa, facts sdpa_mask "window"), so the
kernel model times that call over the whole (query, key) matrix with K/V repeated to the query heads
by repeat_kv's two clones, where flash attention, given the window, skips the blocks outside it
(tree_kernels._sdpa_mask). A decode step's single query is packed instead (pack_gqa): h_kv heads, no
copy. Measured against transformers 5.24's MistralForCausalLM on the CPU (the call's arguments and
the clones' bytes under a TorchDispatchMode)."""

from __future__ import annotations

import math

import pytest

from costmodel.config import Workload
from costmodel.hf import from_hf_config
from costmodel.kernel_time import AttentionCall, Pointwise, inference_subs, leaf_kernels
from costmodel.presets import load_preset
from costmodel.tree import CostModel, profile_for

MISTRAL_7B_COPY = 2 * 1 * 8192 * (8 + 32) * 128  # bf16, 8,192 keys, 8 KV heads repeated to 32, d_h 128


def attention_call(attention: str, n: int, cfg=None, phase: str = "prefill", batch: int = 1,
                   context: int | None = None, dtype: str = "bf16") -> list:
    cfg = cfg or load_preset("mistral-7b")  # every layer windowed, 4,096 keys; 32 query heads, 8 KV heads
    profile = profile_for(cfg, Workload(attention=attention), dropout=False, kv_cache="static")
    leaf = next(leaf for leaf in CostModel(cfg, profile, phase=phase).leaves if leaf.name == "weighted_sum")
    return leaf_kernels(leaf, inference_subs(cfg, dtype, batch, n, context=context), fused_attention=True)


def test_sdpa_with_the_windows_mask_computes_every_block():
    copy = Pointwise(MISTRAL_7B_COPY, 0.0, MISTRAL_7B_COPY)  # repeat_kv's clone of K, then of V
    assert attention_call("sdpa", 8192) == [AttentionCall(1, 32, 8192, 8192, 128, causal=False, window=None,
                                                          value_dim=128, kv_heads=32), copy, copy]
    # flash gets the window itself: the causal triangle and the keys before the window are skipped
    assert attention_call("flash", 8192) == [AttentionCall(1, 32, 8192, 8192, 128, causal=True, window=4096,
                                                           value_dim=128, kv_heads=8)]
    # keys short of the window: transformers skips the mask, is_causal does the masking
    assert attention_call("sdpa", 2048) == attention_call("flash", 2048) == [
        AttentionCall(1, 32, 2048, 2048, 128, causal=True, window=4096, value_dim=128, kv_heads=8)]


def test_a_decode_step_past_the_window_reads_the_kv_heads_without_a_copy():
    # 8 sequences at 8,192 tokens: 4,096 keys of the 8 KV heads, as flash reads them
    assert attention_call("sdpa", 1, phase="decode", batch=8, context=8192) == \
        attention_call("flash", 1, phase="decode", batch=8, context=8192) == [
            AttentionCall(8, 32, 1, 4096, 128, causal=True, window=None, value_dim=128, kv_heads=8)]


# An odd Mistral: 6 query heads, 2 (or 1) KV heads of 8, a window of 5 keys, one layer.
def tiny_mistral(kv_heads: int) -> dict:
    return {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "vocab_size": 32, "hidden_size": 48,
            "intermediate_size": 37, "num_hidden_layers": 1, "num_attention_heads": 6, "num_key_value_heads": kv_heads,
            "head_dim": 8, "sliding_window": 5, "max_position_embeddings": 64, "tie_word_embeddings": False}


def measure_sdpa(config: dict, batch: int, prompt: int) -> dict:
    """The sdpa calls transformers makes in a prefill of `prompt` tokens and the decode step after it
    (query, key and value shapes, whether a mask and enable_gqa are passed), and the aten clones
    outside those calls: (bytes written, unique bytes read: the expanded input's non-broadcast elements)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from torch.utils._python_dispatch import TorchDispatchMode

    torch.manual_seed(0)
    model = transformers.MistralForCausalLM(transformers.MistralConfig(**config, attn_implementation="sdpa")).eval()
    state = {"inside": False, "calls": [], "clones": []}
    original = torch.nn.functional.scaled_dot_product_attention

    def recorded(query, key, value, attn_mask=None, **kwargs):
        state["calls"].append({"query": tuple(query.shape), "key": tuple(key.shape), "value": tuple(value.shape),
                               "key_elements": unique(key), "mask": attn_mask is not None,
                               "enable_gqa": bool(kwargs.get("enable_gqa"))})
        state["inside"] = True
        try:
            return original(query, key, value, attn_mask=attn_mask, **kwargs)
        finally:
            state["inside"] = False

    def unique(tensor) -> int:
        """Elements a tensor holds apart from its broadcast (stride 0) dimensions."""
        return math.prod(size for size, stride in zip(tensor.shape, tensor.stride()) if stride)

    class Clones(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is torch.ops.aten.clone.default and not state["inside"]:
                state["clones"].append((out.nbytes, unique(args[0]) * args[0].element_size()))
            return out

    steps = {}
    ids = torch.arange(batch * prompt).view(batch, prompt) % config["vocab_size"]
    torch.nn.functional.scaled_dot_product_attention = recorded
    try:
        with torch.no_grad():
            cache = transformers.DynamicCache(config=model.config)
            for name, tokens in (("prefill", ids), ("decode", ids[:, -1:])):
                state["calls"], state["clones"] = [], []
                with Clones():
                    model(tokens, cache=cache, use_cache=True)
                steps[name] = {"calls": state["calls"], "clones": state["clones"]}
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
    return steps


@pytest.mark.parametrize("kv_heads", [2, 1])
@pytest.mark.parametrize("prompt", [7, 4])
def test_the_kernel_model_follows_transformers_sdpa_call(kv_heads, prompt):
    config, batch = tiny_mistral(kv_heads), 2
    cfg = from_hf_config(config, "odd-mistral")
    measured = measure_sdpa(config, batch, prompt)
    e = 4  # fp32
    # The prefill: past the window (7 >= 5) a mask, K/V repeated to the 6 heads by two clones
    # (grouped heads) or a view (one KV head); short of it (4) no mask, sdpa's own grouped heads.
    (call,) = measured["prefill"]["calls"]
    past = prompt >= 5
    assert (call["mask"], call["enable_gqa"]) == (past, not past)
    repeated = past and kv_heads > 1
    assert call["key"] == call["value"] == (batch, 6 if past else kv_heads, prompt, 8)
    # the heads the kernel reads: one KV head's repeat is a view of it (a broadcast, stride 0)
    heads_read = call["key_elements"] // (batch * prompt * 8)
    assert heads_read == (6 if repeated else kv_heads)
    written = batch * 6 * prompt * 8 * e
    read = batch * kv_heads * prompt * 8 * e
    assert measured["prefill"]["clones"] == ([(written, read)] * 2 if repeated else [])
    kernels = attention_call("sdpa", prompt, cfg, batch=batch, dtype="fp32")
    assert kernels[0] == AttentionCall(batch, 6, prompt, prompt, 8, causal=not past, window=None if past else 5,
                                       value_dim=8, kv_heads=heads_read)
    assert kernels[1:] == ([Pointwise(written + read, 0.0, written + read)] * 2 if repeated else [])
    # The decode step after it: at most the window's 5 keys (the sliding cache keeps 4), a mask once
    # they reach it, the single query packed to (b, h_kv, 6 / h_kv, d): no copy, h_kv heads.
    (step,) = measured["decode"]["calls"]
    keys = min(prompt + 1, 5)
    assert step["mask"] == (keys >= 5) and measured["decode"]["clones"] == []
    assert step["key"] == step["value"] == (batch, kv_heads, keys, 8)
    assert step["query"] == ((batch, kv_heads, 6 // kv_heads, 8) if keys >= 5 else (batch, 6, 1, 8))
    (decode,) = attention_call("sdpa", 1, cfg, phase="decode", batch=batch, context=prompt + 1, dtype="fp32")
    assert (decode.kv_heads, decode.n_kv) == (kv_heads, keys)
    # the same work as the packed call: every query row against every key, and the bytes it reads
    rows = step["query"][1] * step["query"][2]
    assert decode.dense_flops() == 2 * batch * rows * keys * (8 + 8)
    assert decode.moved_bytes(e) == e * (2 * batch * rows * 8 + 2 * math.prod(step["key"]))
