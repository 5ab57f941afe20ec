"""The config.json of a ModelConfig of costmodel/hf_gemma4.py's family (gemma4_text): what
costmodel.hf reads back as the same ModelConfig (validate/hf_config_dict.py's config_dict checks that),
so that validate builds Gemma4ForCausalLM for it. Registered beside validate/hf_llama_variants.py's
writers (the same signature: the ModelConfig and hf_config_dict's Llama fields)."""

from __future__ import annotations

from typing import Any, Callable

from costmodel.config import ModelConfig


def _gemma4_text(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Gemma 4's text config.json: hidden_activation, the layer kinds, the full-attention head
    width (global_head_dim), the per-layer inputs' width and table rows (0: none)."""
    data = {k: v for k, v in llama.items() if k != "hidden_act"}
    layers = cfg.n_decoder_layers
    return dict(data, hidden_activation=llama["hidden_act"], attention_bias=cfg.qkv_bias,
                final_logit_softcapping=cfg.logit_softcap, sliding_window=cfg.sliding_window or 512,
                layer_types=["sliding_attention" if cfg.layer_slides(i) else "full_attention"
                             for i in range(layers)],
                global_head_dim=cfg.global_head_dim or cfg.d_head, hidden_size_per_layer_input=cfg.per_layer_input or 0,
                per_layer_config={str(i): {"head_dim": cfg.global_head_dim or cfg.d_head,
                                           "num_key_value_heads": cfg.global_kv_heads or cfg.n_kv_heads}
                                  for i in range(layers) if not cfg.layer_slides(i)},
                attention_k_eq_v=cfg.keys_as_values, num_kv_shared_layers=cfg.kv_shared_layers,
                use_double_wide_mlp=cfg.double_wide_shared,
                **({"vocab_size_per_layer_input": cfg.per_layer_vocab} if cfg.per_layer_input else {}))


def _gemma4_unified_text(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Gemma 4 unified's text config.json: Gemma 4's without the per-layer inputs' fields (its class
    builds none)."""
    data = _gemma4_text(cfg, llama)
    data.pop("hidden_size_per_layer_input")
    return data


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict, via LLAMA_VARIANT_DICTS).
GEMMA4_DICTS: dict[str, Callable[[ModelConfig, dict[str, Any]], dict[str, Any]]] = {
    "gemma4_text": _gemma4_text, "gemma4_unified_text": _gemma4_unified_text}
