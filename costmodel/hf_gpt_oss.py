"""config.json reader of OpenAI's gpt-oss (model_type "gpt_oss"; GptOssForCausalLM).

A gpt-oss layer (transformers 5.24, models/gpt_oss/modeling_gpt_oss.py): RMSNorms before
attention and the MoE; q/k/v/o with biases (attention_bias); a learned sink logit per query head
joining every softmax row; a sliding window on the layers layer_types marks (every other layer
from layer 0 by default); YaRN RoPE (rope_parameters: the rotation costs what RoPE costs); a
mixture of experts on every layer: a router with a bias whose softmax runs over the top-k logits,
top-k of num_local_experts experts with gate_up and down biases and a clamped SwiGLU
(swiglu_alpha, swiglu_limit), no shared expert. costmodel/hf.py dispatches on model_type.
Defaults are those of transformers 5.24's GptOssConfig (the 120b shape).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, attention_layer_types

#: GptOssConfig's defaults (transformers 5.24) for the fields read here.
_DEFAULTS: dict[str, Any] = dict(
    num_hidden_layers=36, num_local_experts=128, vocab_size=201088, hidden_size=2880,
    intermediate_size=2880, head_dim=64, num_attention_heads=64, num_key_value_heads=8,
    sliding_window=128, tie_word_embeddings=False, max_position_embeddings=131072,
    attention_dropout=0.0, num_experts_per_tok=4, swiglu_alpha=1.702, swiglu_limit=7.0,
    attention_bias=True,
)


def _sliding_layers(f: Fields, n_layers: int) -> list[int]:
    """The layers layer_types marks sliding_attention; GptOssConfig's default when it has none:
    every other layer from layer 0 ((i + 1) % 2)."""
    types = f.data.get("layer_types")
    if types is None:
        return [i for i in range(n_layers) if (i + 1) % 2]
    types = attention_layer_types(f, types, n_layers)
    return [i for i, t in enumerate(types) if t == "sliding_attention"]


def _gpt_oss(f: Fields, name: str) -> ModelConfig:
    """gpt-oss: see the module docstring. num_experts is GptOssConfig's attribute_map name for
    num_local_experts (the mapped name wins). layer_types all full_attention: no window."""
    d = _DEFAULTS
    n_layers = f.get("num_hidden_layers", d["num_hidden_layers"])
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    n_heads = f.get("num_attention_heads", d["num_attention_heads"], minimum=1)
    bias = f.get("attention_bias", d["attention_bias"], bool)
    window = f.get("sliding_window", d["sliding_window"], minimum=1)
    if f.data.get("sliding_window", 0) is None:
        raise ConfigError(f"{f.source}: sliding_window null is not modelled for gpt_oss "
                          "(transformers' GptOssModel builds its sliding-window mask whatever "
                          "layer_types says, and fails without one); mark every layer "
                          "full_attention in layer_types for a model without windows.")
    sliding = _sliding_layers(f, n_layers)
    limit = f.get("swiglu_limit", d["swiglu_limit"], float)
    alpha = f.get("swiglu_alpha", d["swiglu_alpha"], float)
    slide = set(sliding)
    pattern = (tuple("sliding" if i in slide else "full" for i in range(n_layers))
               if 0 < len(sliding) < n_layers else None)
    return ModelConfig(
        name=name, family="gpt_oss", vocab_size=f.get("vocab_size", d["vocab_size"]),
        d_model=f.get("hidden_size", d["hidden_size"]), n_heads=n_heads,
        n_kv_heads=f.get("num_key_value_heads", d["num_key_value_heads"], minimum=1),
        d_head=f.get("head_dim", d["head_dim"]), d_ff=f.get("intermediate_size", d["intermediate_size"]),
        n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", d["max_position_embeddings"]),
        position="rope", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=bias, out_bias=bias, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", d["tie_word_embeddings"], bool),
        dropout=float(f.get("attention_dropout", d["attention_dropout"], float)),
        sliding_window=window if sliding else None,
        window_layers=None if len(sliding) in (0, n_layers) else len(sliding),
        n_experts=f.get("num_experts", f.get("num_local_experts", d["num_local_experts"])),
        top_k=f.get("num_experts_per_tok", d["num_experts_per_tok"]),
        router="topk_softmax", renormalize_top_k=False, router_bias=True, expert_bias=True,
        swiglu_limit=float(limit), swiglu_alpha=float(alpha), attention_sinks=True,
        layer_pattern=pattern,
    )


#: model_type -> its reader.
GPT_OSS_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"gpt_oss": _gpt_oss}

#: The transformers class, for a config.json that names `architectures` only.
GPT_OSS_ARCHITECTURES: dict[str, str] = {"GptOssForCausalLM": "gpt_oss"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
GPT_OSS_NAMES: dict[str, dict[str, Any]] = {"gpt_oss": {
    **LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok"}}
