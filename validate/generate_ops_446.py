"""Counts the aten ops one decoding step of Qwen2 issues under transformers 4.46.0's
flash_attention_2 path (kernel_facts.json "eager_step_ops", the entry "transformers-4.46"), what
Qwen2.5's speed benchmark ran (transformers 4.46.0, flash-attn 2.5.8).

flash_attn runs on CUDA only, so the count runs the model's own 4.46 code on a CPU with flash_attn's
call stood in: a tiny qwen2 (validate/generate_ops.py's sizes) is built under sdpa, each layer's
attention given the class Qwen2FlashAttention2 (the same parameters) and the config the
implementation "flash_attention_2" (Qwen2Model._update_causal_mask then passes no mask: the prompt's
mask is all ones), and modeling_flash_attention_utils.flash_attn_func replaced by one aten op
(clone of the query: the output's shape). The step's ops are then counted as validate/generate_ops.py
counts 5.24's (generate's steps between 3 and 7 new tokens, per layer the difference between one and
two layers, bf16), at 4 KV heads of 4 and at 2 (repeat_kv's ops); FLASH_CALL_OPS adds what the real
call dispatches beyond the stand-in's one.

transformers 4.46.0 is not installed: unpack its wheel to a folder, blank its dependency check (as
validate/generate_ops_451.py says) and put the folder first: `PYTHONPATH=DIR:$PWD python -m
validate.generate_ops_446`. It refuses another version."""

from __future__ import annotations

from typing import Any

#: flash-attn v2.5.8 csrc/flash_attn/flash_api.cpp mha_fwd at one query a step, as many KV heads as
#: query heads (4.46 repeats them before the call, so no seqlenq_ngroups_swapped reshape): the
#: tensors it allocates through the dispatcher, torch::empty_like (out), torch::empty (softmax_lse,
#: rng_state) and set_params_splitkv's two accumulators (softmax_lse_accum, out_accum: where it
#: splits the keys, as at the rows' contexts); the stand-in's clone counts one of them.
FLASH_CALL_OPS = 5


def per_step(layers: int, kv_heads: int) -> float:
    """Ops per decoding step of the tiny qwen2 on 4.46's FlashAttention2 with the stand-in call."""
    import torch
    import transformers.modeling_flash_attention_utils as flash_utils
    from transformers.models.qwen2 import modeling_qwen2

    from validate import generate_ops as g

    flash_utils.flash_attn_func = lambda q, k, v, *args, **kwargs: torch.ops.aten.clone(q)
    flash_utils._flash_supports_window_size = False  # set at import only where flash_attn is installed
    modeling_qwen2._flash_attention_forward = flash_utils._flash_attention_forward  # likewise
    model = g.tiny_model(layers, kv_heads, "sdpa", "bf16", "qwen2")
    for layer in model.model.layers:
        layer.self_attn.__class__ = modeling_qwen2.Qwen2FlashAttention2
        layer.self_attn._flash_attn_uses_top_left_mask = False  # flash-attn >= 2.1
    model.config._attn_implementation = "flash_attention_2"
    return (g.generate_ops(model, g.K_LONG) - g.generate_ops(model, g.K_SHORT)) / (g.K_LONG - g.K_SHORT)


def counts() -> dict[str, Any]:
    """per_layer (4 KV heads of 4, the real call's ops), grouped_kv_per_layer (2 of 4 less 4 of 4)
    and per_step."""
    import sys

    import transformers

    if transformers.__version__ != "4.46.0":
        print(f"error: transformers 4.46.0 must come first on the path, found {transformers.__version__}.", file=sys.stderr)
        raise SystemExit(2)
    single = {layers: per_step(layers, 4) for layers in (1, 2)}
    grouped = per_step(2, 2) - per_step(1, 2)
    per_layer = single[2] - single[1]
    return {"per_layer": per_layer + FLASH_CALL_OPS - 1, "grouped_kv_per_layer": grouped - per_layer,
            "per_step": single[1] - per_layer}


if __name__ == "__main__":
    import json

    print(json.dumps(counts()))
