"""The config.json of a newer family's ModelConfig (config_dict): the dict costmodel.hf reads back as
this very ModelConfig, from which validate/hf_families.py builds the family's transformers config. The
Llama-like fields every such family shares (the writers of hf_llama_variants.py, hf_extra_dicts.py and
the other validate/hf_*.py modules start from them), the writers of the families kept here, and the check
that the dict reads back field for field. validate/hf_models.py builds the classes from it.
"""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

from .hf_classic_more import CLASSIC_MORE_DICTS, rotary_factor
from .hf_dense_extra import DENSE_EXTRA_DICTS
from .hf_llama_variants import LLAMA_VARIANT_DICTS
from .hf_extra_dicts import EXTRA_DICTS

#: ModelConfig.activation -> the activation string of the Llama-like families' configs.
LLAMA_ACTS = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_pytorch_tanh"}


def require(cfg: ModelConfig, condition: bool, what: str) -> None:
    """A ValueError naming what the family's Hugging Face class cannot build, unless `condition` holds."""
    if not condition:
        raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} cannot build {what}.")


def qwen_window(cfg: ModelConfig) -> dict[str, Any]:
    """Qwen2/Qwen3's window fields: use_sliding_window, and layer_types from the config's
    per-layer pattern (max_window_layers as the class's own rule would place that many)."""
    if cfg.sliding_window is None:
        return {}
    return dict(use_sliding_window=True, sliding_window=cfg.sliding_window,
                max_window_layers=cfg.n_decoder_layers - cfg.n_window_layers, layer_types=_layer_types(cfg))


def _llama_dict(cfg: ModelConfig, model_type: str) -> dict[str, Any]:
    """The fields every Llama-like family of issue 14 shares."""
    return dict(
        model_type=model_type, vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
        num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads, head_dim=cfg.d_head,
        max_position_embeddings=cfg.max_positions, tie_word_embeddings=cfg.tie_embeddings,
        attention_dropout=cfg.dropout, hidden_act=LLAMA_ACTS.get(cfg.activation, cfg.activation),
    )


def _layer_types(cfg: ModelConfig) -> list[str]:
    """transformers' layer_types of the config's per-layer pattern (ModelConfig.layer_pattern)."""
    return ["sliding_attention" if cfg.layer_slides(i) else "full_attention"
            for i in range(cfg.n_decoder_layers)]


def _qwen3_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "qwen3"), attention_bias=cfg.qkv_bias, **qwen_window(cfg))


def _gemma_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "gemma"), attention_bias=cfg.qkv_bias)


def _ministral_dict(cfg: ModelConfig, model_type: str = "ministral") -> dict[str, Any]:
    """Ministral's config.json; CWM's has the same fields (its window rule differs)."""
    return dict(_llama_dict(cfg, model_type), sliding_window=cfg.sliding_window,
                layer_types=_layer_types(cfg))


def _gemma2_dict(cfg: ModelConfig, model_type: str = "gemma2") -> dict[str, Any]:
    """Gemma 2's config.json; Gemma 3's text model (gemma3_text) has the same fields."""
    data = dict(_llama_dict(cfg, model_type), attention_bias=cfg.qkv_bias,
                hidden_activation=LLAMA_ACTS.get(cfg.activation, cfg.activation),
                attn_logit_softcapping=cfg.attention_softcap,
                final_logit_softcapping=cfg.logit_softcap,
                query_pre_attn_scalar=_pre_attn_scalar(cfg), sliding_window=cfg.sliding_window)
    if cfg.sliding_window is not None:
        data["layer_types"] = _layer_types(cfg)
    elif model_type == "gemma3_text":  # no window: layer_types still sets its RoPE sets (rotary_sets)
        layers = cfg.n_decoder_layers
        data["layer_types"] = (["full_attention"] * layers if (cfg.rotary_sets or 1) == 1
                               else ["sliding_attention"] + ["full_attention"] * (layers - 1))
    return data


def _pre_attn_scalar(cfg: ModelConfig) -> float:
    """Gemma 2's query_pre_attn_scalar of an attention scale (scale = scalar**-0.5), as the
    whole number it usually is when that reads back exactly."""
    scale = cfg.attention_scale or cfg.d_head**-0.5
    scalar = scale**-2
    return round(scalar) if round(scalar) ** -0.5 == scale else scalar


def _granite_dict(cfg: ModelConfig) -> dict[str, Any]:
    """Granite's config.json: Llama's fields and its four multipliers (1.0 where the ModelConfig
    has none, which reads back as a multiply by 1.0 and so is refused by config_dict)."""
    def one(value: float | None) -> float:
        return 1.0 if value is None else value

    return dict(_llama_dict(cfg, "granite"), attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias,
                embedding_multiplier=one(cfg.embedding_multiplier),
                attention_multiplier=one(cfg.attention_scale),
                residual_multiplier=one(cfg.residual_multiplier),
                logits_scaling=one(cfg.logits_scaling))


def _smollm3_dict(cfg: ModelConfig) -> dict[str, Any]:
    """SmolLM3's config.json: Llama's fields and its no_rope_layers (0 on the NoPE layers)."""
    require(cfg, cfg.sliding_window is None, "a sliding window (on its NoPE layers)")
    return dict(_llama_dict(cfg, "smollm3"), attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias,
                pad_token_id=None,  # its default, 128004, is past a small vocabulary
                no_rope_layers=[int(cfg.layer_kind_at("decoder", i) != "nope")
                                for i in range(cfg.n_decoder_layers)])


def _llama4_dict(cfg: ModelConfig) -> dict[str, Any]:
    """Llama 4's language model (llama4_text): the layers with experts, the NoPE layers, and the
    chunked layers (its window) listed layer by layer."""
    kinds = [cfg.layer_kind_at("decoder", i) for i in range(cfg.n_decoder_layers)]
    moe = [i for i, kind in enumerate(kinds) if cfg.moe and kind != "dense"]
    window = dict(attention_chunk_size=cfg.sliding_window)
    if cfg.sliding_window is not None:
        window["layer_types"] = ["chunked_attention" if cfg.layer_slides(i) else "full_attention"
                                 for i in range(cfg.n_decoder_layers)]
    return dict(_llama_dict(cfg, "llama4_text"), intermediate_size=cfg.d_expert,
                intermediate_size_mlp=cfg.d_ff, num_local_experts=max(cfg.n_experts, 1),
                num_experts_per_tok=max(cfg.top_k, 1), moe_layers=moe,
                no_rope_layers=[0 if kind is not None and (kind.endswith("nope") or (
                    kind == "full" and cfg.nope_full_layers)) else 1 for kind in kinds],
                use_qk_norm=cfg.qk_l2_norm, attn_temperature_tuning=cfg.nope_temperature,
                attention_bias=cfg.qkv_bias, pad_token_id=None, **window)


def _olmo2_dict(cfg: ModelConfig) -> dict[str, Any]:
    """OLMo 2's config.json: Llama's fields (attention_bias on q, k, v and o; its MLP has none)."""
    return dict(_llama_dict(cfg, "olmo2"), attention_bias=cfg.qkv_bias, pad_token_id=None)


def _phi3_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "phi3"), sliding_window=cfg.sliding_window, pad_token_id=None,
                resid_pdrop=cfg.dropout, attention_dropout=cfg.attention_dropout or 0.0,
                partial_rotary_factor=rotary_factor(cfg))


def _mixtral_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "mixtral"), num_local_experts=cfg.n_experts,
                num_experts_per_tok=cfg.top_k, sliding_window=cfg.sliding_window,
                router_jitter_noise=cfg.moe_input_noise or 0.0)


def _qwen_moe_experts(cfg: ModelConfig) -> dict[str, Any]:
    """The expert fields Qwen2-MoE and Qwen3-MoE share."""
    return dict(num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                moe_intermediate_size=cfg.d_expert, norm_topk_prob=cfg.renormalize_top_k,
                mlp_only_layers=[i for i in range(cfg.n_decoder_layers)
                                 if cfg.layer_kind_at("decoder", i) == "dense"])


def _qwen2_moe_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "qwen2_moe"), **_qwen_moe_experts(cfg),
                shared_expert_intermediate_size=cfg.d_shared, qkv_bias=cfg.qkv_bias)


def _qwen3_moe_dict(cfg: ModelConfig) -> dict[str, Any]:
    window = (dict(use_sliding_window=True, sliding_window=cfg.sliding_window)
              if cfg.sliding_window is not None else {})
    return dict(_llama_dict(cfg, "qwen3_moe"), **_qwen_moe_experts(cfg),
                attention_bias=cfg.qkv_bias, **window)


def _deepseek_v3_dict(cfg: ModelConfig, model_type: str = "deepseek_v3") -> dict[str, Any]:
    """DeepSeek-V3's config.json; DeepSeek-V2's differs in its routing (softmax, no groups)."""
    shared, rest = divmod(cfg.d_shared, cfg.d_expert) if cfg.d_expert else (0, 0)
    require(cfg, rest == 0, "a shared width that is not a whole number of experts")
    data = _llama_dict(cfg, model_type)
    del data["head_dim"]  # DeepseekV3Config sets it to qk_rope_head_dim (the rotary width)
    grouped = model_type in ("deepseek_v3", "glm4_moe_lite", "axk1")
    require(cfg, grouped or cfg.expert_groups == 1, "group-limited routing (expert_groups)")
    groups = dict(n_group=cfg.expert_groups, topk_group=cfg.expert_groups_per_token) if grouped else {}
    return dict(data, q_lora_rank=cfg.q_lora_rank,
                kv_lora_rank=cfg.kv_lora_rank, qk_rope_head_dim=cfg.rotary_dim,
                qk_nope_head_dim=cfg.d_head - (cfg.rotary_dim or 0), v_head_dim=cfg.v_head_dim,
                n_routed_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                moe_intermediate_size=cfg.d_expert, n_shared_experts=shared,
                first_k_dense_replace=cfg.n_dense_layers, norm_topk_prob=cfg.renormalize_top_k,
                attention_bias=cfg.qkv_bias, **groups)


def _gpt_neox_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="gpt_neox", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                hidden_act={"gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh"}.get(cfg.activation, cfg.activation),
                rotary_pct=rotary_factor(cfg), use_parallel_residual=cfg.parallel_attention,
                attention_bias=cfg.qkv_bias, hidden_dropout=cfg.dropout,
                attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings)


def _falcon_dict(cfg: ModelConfig) -> dict[str, Any]:
    new = cfg.family == "falcon_new"
    layout = (dict(new_decoder_architecture=True, num_kv_heads=cfg.n_kv_heads,
                   num_ln_in_parallel_attn=cfg.parallel_norms, parallel_attn=True) if new else
              dict(new_decoder_architecture=False, multi_query=cfg.family == "falcon",
                   parallel_attn=cfg.parallel_attention))
    return dict(model_type="falcon", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                ffn_hidden_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                alibi=cfg.family == "falcon_rw",
                bias=cfg.qkv_bias, activation=cfg.activation, hidden_dropout=cfg.dropout,
                tie_word_embeddings=cfg.tie_embeddings, **layout)


def _opt_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="opt", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                ffn_dim=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                word_embed_proj_dim=cfg.embedding_dim or cfg.d_model,
                do_layer_norm_before=cfg.norm_position == "pre", enable_bias=cfg.qkv_bias,
                activation_function=cfg.activation, dropout=cfg.dropout,
                attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings)


def _bloom_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="bloom", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                n_layer=cfg.n_decoder_layers, n_head=cfg.n_heads, seq_length=cfg.max_positions,
                hidden_dropout=cfg.dropout, attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings)


def _starcoder2_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="starcoder2", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                num_key_value_heads=cfg.n_kv_heads, head_dim=cfg.d_head,
                intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                hidden_act={"gelu_tanh": "gelu_pytorch_tanh"}.get(cfg.activation, cfg.activation),
                use_bias=cfg.qkv_bias, sliding_window=cfg.sliding_window,
                residual_dropout=cfg.dropout, embedding_dropout=cfg.dropout,
                attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings)


def _phi_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="phi", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                num_key_value_heads=cfg.n_kv_heads, head_dim=cfg.d_head,
                intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                hidden_act={"gelu_tanh": "gelu_new"}.get(cfg.activation, cfg.activation),
                partial_rotary_factor=rotary_factor(cfg), resid_pdrop=cfg.dropout,
                embd_pdrop=0.0, attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings)


def _glm4_moe_lite_dict(cfg: ModelConfig) -> dict[str, Any]:
    """GLM-4.7-Flash's config.json: DeepSeek-V3's, first_k_dense_replace as mlp_layer_types."""
    data = _deepseek_v3_dict(cfg, "glm4_moe_lite" if cfg.family != "axk1" else "axk1")
    dense = min(data.pop("first_k_dense_replace") or 0, cfg.n_decoder_layers)
    return dict(data, mlp_layer_types=["dense"] * dense + ["sparse"] * (cfg.n_decoder_layers - dense))


def _gpt_oss_dict(cfg: ModelConfig) -> dict[str, Any]:
    """gpt-oss's config.json: Llama's shape fields, its experts, its clamped SwiGLU and its
    layer_types: every layer full where the ModelConfig has no window, with a window of the
    context all the same (GptOssModel builds its sliding mask whatever the layer types)."""
    layers = cfg.n_decoder_layers
    return dict(_llama_dict(cfg, "gpt_oss"), num_local_experts=cfg.n_experts,
                num_experts_per_tok=cfg.top_k, attention_bias=cfg.qkv_bias,
                swiglu_limit=cfg.swiglu_limit, swiglu_alpha=cfg.swiglu_alpha,
                sliding_window=cfg.sliding_window or cfg.max_positions,
                layer_types=_layer_types(cfg) if cfg.sliding_window else ["full_attention"] * layers)


_DICTS = {
    "qwen3": _qwen3_dict, "gemma": _gemma_dict, "gemma2": _gemma2_dict, "phi3": _phi3_dict,
    "mixtral": _mixtral_dict, "qwen2_moe": _qwen2_moe_dict, "deepseek_v3": _deepseek_v3_dict,
    "gpt_neox": _gpt_neox_dict, "falcon": _falcon_dict, "falcon_new": _falcon_dict, "falcon_rw": _falcon_dict,
    "opt": _opt_dict, "bloom": _bloom_dict, "ministral": _ministral_dict,
    "gemma3_text": lambda cfg: _gemma2_dict(cfg, "gemma3_text"), "qwen3_moe": _qwen3_moe_dict,
    "deepseek_v2": lambda cfg: _deepseek_v3_dict(cfg, "deepseek_v2"), "glm4_moe_lite": _glm4_moe_lite_dict,
    "axk1": _glm4_moe_lite_dict,  # A.X K1: GLM-4.7-Flash's fields under its model_type (its reader refuses the rest)
    "deepseek_v32": lambda cfg: dict(_glm4_moe_lite_dict(cfg), model_type="deepseek_v32",  # top-k: its default
                                     index_n_heads=cfg.index_n_heads, index_head_dim=cfg.index_head_dim),
    "glm_moe_dsa": lambda cfg: dict(_glm4_moe_lite_dict(cfg), model_type="glm_moe_dsa",  # top-k: its default
                                    index_n_heads=cfg.index_n_heads, index_head_dim=cfg.index_head_dim),
    "cwm": lambda cfg: _ministral_dict(cfg, "cwm"),
    "starcoder2": _starcoder2_dict, "phi": _phi_dict, "granite": _granite_dict,
    "smollm3": _smollm3_dict, "olmo2": _olmo2_dict, "gpt_oss": _gpt_oss_dict, "llama4_text": _llama4_dict,
    **CLASSIC_MORE_DICTS, **DENSE_EXTRA_DICTS,
}


def config_dict(cfg: ModelConfig) -> dict[str, Any]:
    """The config.json of a newer family's ModelConfig: what costmodel.hf reads back as this very
    ModelConfig. A ModelConfig the family cannot express (a field its class fixes otherwise) is
    a ValueError naming the first field that would read back differently."""
    from costmodel.config import ConfigError
    from costmodel.hf import from_hf_config

    if cfg.family in LLAMA_VARIANT_DICTS:
        data = LLAMA_VARIANT_DICTS[cfg.family](cfg, _llama_dict(cfg, cfg.family))
    elif (writer := EXTRA_DICTS.get(cfg.family)) is not None:
        data = writer(cfg, _llama_dict(cfg, cfg.family))
    else:
        data = _DICTS[cfg.family](cfg)
    try:
        back = from_hf_config(data, name=cfg.name)
    except ConfigError as error:
        raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} cannot build it ({error})") from None
    mine, theirs = cfg.to_dict(), back.to_dict()
    mine.pop("checkpoint_weights")  # how a checkpoint stores the weights, not the class's config
    for field, value in mine.items():
        if theirs[field] != value and not _same_derived(cfg, back, field):
            raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} cannot build "
                             f"{field} = {value!r} (it reads back as {theirs[field]!r}).")
    return data


def _same_derived(cfg: ModelConfig, back: ModelConfig, field: str) -> bool:
    """A field given on one side and derived on the other, with the same value."""
    return getattr(cfg, field) == getattr(back, field)
