"""Counts the bytes one eager decoding step of gpt-fast's Transformer moves for each key of its
static cache (torchao/_models/llama/model.py and generate.py at pytorch/ao b4d0768, the code of the
'torchao-kv-long' rows): what kernel_facts.json "eager_step_copies" states for gpt-fast and
costmodel/eager_ops.step_copies reads.

The step attends the whole allocated cache, filled or not: setup_caches (model.py lines 156-185)
allocates cache_size tokens, KVCache.update (lines 89-102) returns the whole cache, Attention.forward
(lines 300-305) repeats it to every query head (repeat_interleave) and calls
F.scaled_dot_product_attention over every key with the causal mask's row, and decode_n_tokens
(generate.py line 69) runs that call on sdpa's math backend. With --kv_cache_quantization,
AffineQuantizedKVCache.update (lines 118-132) returns `k_cache * k_cache_scale`: the int8 cache and
its bf16 scales (one a token and head, the float cache's dtype: lines 112-116, 138-139) read, a bf16
copy of the whole cache written, K's and V's.

The reproduction is validate/gpt_fast_ops.py's (its op count is kernel_facts.json "eager_step_ops");
the int8 cache's update is model.py's, with torchao's quantize_activation_per_token_absmax op for op
(quantize_per_token_absmax: its bytes are the new token's, the same at any cache length; its ops are
what step_ops() counts).
validate/context_bytes.ByteCounter sums each op's tensor bytes (views none; an index_put_ the
values it writes, not its target). Two cache lengths give the bytes a step moves per key; models of
two layers and one give them per layer, by op. Run on the CPU under torch 2.13's math backend, whose
decomposition upcasts bf16 inputs to fp32 (what the published peak memory of the rows also shows:
validate/FINDINGS.md, session 37).

`python -m validate.static_cache_bytes`: the bytes per key and layer, bf16 and int8 caches, by op.
"""

from __future__ import annotations

import collections
from typing import Any

#: Two static cache lengths (setup_caches' max_seq_length) whose steps are compared.
CACHES = (16, 48)


def quantize_per_token_absmax(t: Any) -> tuple[Any, Any]:
    """torchao/quantization/utils.py quantize_activation_per_token_absmax (b4d0768, lines 142-161) on a
    bf16 input, op for op: choose_qparams_affine (quant_primitives.py _choose_qparams_affine, lines
    680-781: SYMMETRIC, int8 in [-127, 127], eps 1e-5, block (1, ..., 1, head_dim); scale and zero
    point in the input's dtype, so their .to() dispatches nothing) and quantize_affine
    (_quantize_affine_no_dtype_cast, lines 266-315, then .to(int8)). The two are custom ops
    registered CompositeImplicitAutograd (torchao/utils.py _register_custom_op line 198): their aten
    ops reach the dispatcher one by one."""
    import torch

    quant_min, quant_max, eps = -127, 127, 1e-5
    shape = list(t.shape)  # block_size[-1] == shape[-1]: no split, reduce over the last dim
    x = t.view(shape)
    min_val = torch.amin(x, dim=[len(shape) - 1], keepdim=False)
    max_val = torch.amax(x, dim=[len(shape) - 1], keepdim=False)
    min_val_neg = torch.min(min_val, torch.zeros_like(min_val))
    max_val_pos = torch.max(max_val, torch.zeros_like(max_val))
    max_val_pos = torch.max(-min_val_neg, max_val_pos)
    scale = max_val_pos / (float(quant_max - quant_min) / 2)
    scale = torch.clamp(scale, min=eps)
    zero_point = torch.full_like(scale, int((quant_max + quant_min + 1) / 2))
    x = t.view(shape)
    reduced = shape[:-1] + [1]
    scale_r, zero_r = scale.view(reduced), zero_point.view(reduced)
    quant = torch.clamp(torch.round(x * (1.0 / scale_r)) + zero_r, quant_min, quant_max)
    return quant.view(t.shape).to(torch.int8), scale


def _int8_update(attention: Any, input_pos: Any, k: Any, v: Any) -> tuple[Any, Any]:
    """model.py AffineQuantizedKVCache.update (lines 118-132) on the reproduction's buffers."""
    outs = []
    for val, cache, scale in ((k, attention.k_q, attention.k_scale), (v, attention.v_q, attention.v_scale)):
        q_val, step_scale = quantize_per_token_absmax(val)
        cache[:, :, input_pos] = q_val
        scale[:, :, input_pos] = step_scale.unsqueeze(-1)
        out = cache * scale  # line 123 (129 for V): the whole cache, dequantized
        out[:, :, input_pos] = val  # line 124 (130)
        outs.append(out)
    return outs[0], outs[1]


def _with_int8_cache(model: Any) -> Any:
    """Each layer's cache as AffineQuantizedKVCache holds it (int8 values, one bf16 scale a token and
    head) and updates it (its update in place of KVCache's)."""
    import types

    import torch

    for layer in model.layers:
        attention = layer.attention
        shape = tuple(attention.k_cache.shape)
        for name in ("k_q", "v_q"):
            attention.register_buffer(name, torch.zeros(shape, dtype=torch.int8))
        for name in ("k_scale", "v_scale"):
            attention.register_buffer(name, torch.ones(shape[:-1] + (1,), dtype=torch.bfloat16))
        attention.update = types.MethodType(_int8_update, attention)
    return model


def step_bytes(layers: int, cache: int, int8: bool) -> tuple[int, collections.Counter]:
    """Bytes of one bf16 decoding step (the forward at one token under the math backend, then
    generate.py's sampling) of a `layers`-layer reproduction with a static cache of `cache` tokens."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from validate import gpt_fast_ops as g
    from validate.context_bytes import ByteCounter

    torch.manual_seed(0)
    model = g.reference_modules()["Transformer"](layers, **{**g.SIZES, "max_len": cache}).to(torch.bfloat16)
    if int8:
        model = _with_int8_cache(model)
    token, input_pos = torch.tensor([[3]], dtype=torch.int), torch.tensor([5], dtype=torch.int)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), ByteCounter() as mode:
        g.decode_step_tail(model(token, input_pos), input_pos)
    return mode.bytes, mode.by_op


def counts(int8: bool = False) -> dict[str, Any]:
    """Bytes a step moves per key of its static cache: per layer, the step's own, and per layer by op."""
    slope, ops = {}, {}
    span = CACHES[1] - CACHES[0]
    for layers in (1, 2):
        (few, few_ops), (many, many_ops) = (step_bytes(layers, cache, int8) for cache in CACHES)
        slope[layers] = (many - few) / span
        ops[layers] = {op: (many_ops[op] - few_ops.get(op, 0)) / span for op in many_ops}
    layer_ops = {op: ops[2].get(op, 0) - ops[1].get(op, 0) for op in set(ops[1]) | set(ops[2])}
    from validate import gpt_fast_ops as g

    return {"cache": "int8" if int8 else "bf16", "sizes": {k: g.SIZES[k] for k in ("dim", "heads", "kv_heads")},
            "per_layer": slope[2] - slope[1], "per_step": 2 * slope[1] - slope[2],
            "per_layer_ops": {op: b for op, b in sorted(layer_ops.items()) if b}}


if __name__ == "__main__":  # python -m validate.static_cache_bytes
    import json

    print(json.dumps([counts(False), counts(True)], indent=1))
