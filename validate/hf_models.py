"""Hugging Face models built from a ModelConfig, with no weights downloaded.

hf_config() is the inverse of costmodel.hf.from_hf_config: it returns the transformers config object
whose config.json reads back as the same ModelConfig. build_hf_model() instantiates the class a user
trains (LlamaForCausalLM, GPT2LMHeadModel, BertModel with its pooler, T5ForConditionalGeneration...),
randomly initialised. Full-size models are built and run without memory inside fake_mode(); the dtype
is chosen with default_dtype() because `.to(dtype)` fails under FakeTensorMode. make_inputs() gives
deterministic forward kwargs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from costmodel.config import ModelConfig

from .hf_classic_more import CLASSIC_MORE_DICTS, rotary_factor
from .hf_dense_extra import DENSE_EXTRA_DICTS
from .hf_llama_variants import LLAMA_VARIANT_DICTS
from .hf_moe_extra import MOE_EXTRA_DICTS
from .hf_extra_dicts import EXTRA_DICTS, NEWER_DICTS
from .torch_modes import default_dtype, fake_mode  # noqa: F401 (fake_mode: re-exported)

#: costmodel/hf_llama_variants.py's and hf_moe_extra.py's families (their config.json: validate/'s modules).
LLAMA_VARIANT_FAMILIES, MOE_EXTRA_FAMILIES = tuple(LLAMA_VARIANT_DICTS), tuple(MOE_EXTRA_DICTS)

#: Families built through a config.json dict (config_dict below) and AutoModelForCausalLM.
DICT_FAMILIES = ("qwen3", "gemma", "gemma2", "phi3", "gpt_neox", "falcon", "falcon_new",
                 "falcon_rw", "opt", "bloom", "mixtral", "qwen2_moe", "deepseek_v3", "ministral",
                 "gemma3_text", "qwen3_moe", "deepseek_v2", "cwm", "starcoder2", "phi", "granite", "smollm3",
                 "olmo2", "gpt_oss", "llama4_text", "glm4_moe_lite", "axk1", "deepseek_v32", *LLAMA_VARIANT_FAMILIES,
                 *CLASSIC_MORE_DICTS, *MOE_EXTRA_FAMILIES, *DENSE_EXTRA_DICTS, "glm_moe_dsa",
                 *NEWER_DICTS)
HF_FAMILIES = ("llama", "mistral", "qwen2", "gpt2", "bert", "t5", *DICT_FAMILIES)
ATTN_IMPLEMENTATIONS = ("eager", "sdpa")

# ModelConfig.activation -> the activation string of each family's config.
_LLAMA_ACTS = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_pytorch_tanh"}
_GPT2_ACTS = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}
_BERT_ACTS = {"gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_new"}
_T5_ACTS = {"relu": "relu", "geglu_tanh": "gated-gelu", "gelu": "gelu"}


def _require(cfg: ModelConfig, condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} cannot build {what}.")


def _check_common(cfg: ModelConfig, position: str, norm: str, norm_position: str,
                  attention_scale: float | None = None) -> None:
    """What every family's class fixes: positions, norms, no embedding or head scaling, and the
    attention scale (None: 1/sqrt(d_head); T5: 1.0, unscaled)."""
    _require(cfg, cfg.position == position, f"position {cfg.position!r} (it uses {position!r})")
    _require(cfg, cfg.norm == norm, f"norm {cfg.norm!r} (it uses {norm!r})")
    _require(
        cfg, cfg.norm_position == norm_position,
        f"{cfg.norm_position}-norm layers (it uses {norm_position}-norm)",
    )
    _require(cfg, not cfg.scale_embeddings, "scaled embeddings")
    _require(cfg, cfg.norm_bias, "LayerNorms without biases")
    _require(cfg, not cfg.lm_head_bias, "a bias on the output projection")
    _require(cfg, cfg.attention_scale == attention_scale,
             f"attention_scale {cfg.attention_scale!r} (it uses {attention_scale!r})")


def _classic_linears(cfg: ModelConfig) -> None:
    """GPT-2 and BERT: every linear has a bias, h heads of d/h for queries, keys and values."""
    _require(cfg, cfg.qkv_bias and cfg.out_bias and cfg.ffn_bias, "linears without biases")
    _require(cfg, cfg.n_kv_heads == cfg.n_heads, "grouped-query attention")
    _require(cfg, cfg.d_head * cfg.n_heads == cfg.d_model, "a head dimension other than d/h")


def _decoder_only(cfg: ModelConfig) -> None:
    _require(cfg, cfg.n_encoder_layers == 0, "encoder layers (it is decoder-only)")
    _require(cfg, not cfg.scale_lm_head_input, "a scaled input to the output projection")
    _require(cfg, cfg.head == "lm", f"head {cfg.head!r} (its class has an lm head)")
    _require(cfg, cfg.token_types == 0, "token-type embeddings")
    _require(cfg, not cfg.embedding_norm, "a norm after the embeddings")


def _llama_like(cfg: ModelConfig, attn: str) -> Any:
    from transformers import LlamaConfig, MistralConfig, Qwen2Config

    _check_common(cfg, "rope", "rmsnorm", "pre")
    _decoder_only(cfg)
    _require(cfg, cfg.activation in _LLAMA_ACTS, f"activation {cfg.activation!r} (gated only)")
    common = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_decoder_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.d_head,
        hidden_act=_LLAMA_ACTS[cfg.activation],
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=cfg.tie_embeddings,
        attention_dropout=cfg.dropout,
        attn_implementation=attn,
    )
    _require(cfg, cfg.d_model % cfg.n_heads == 0, "d_model not divisible by n_heads (its check)")
    _require(cfg, _only_llama_fields(cfg), "fields of the newer families (see config_dict)")
    if cfg.family == "llama":
        _require(cfg, cfg.sliding_window is None, "a sliding window")
        _require(cfg, cfg.qkv_bias == cfg.out_bias, "different q/k/v and output-projection biases")
        return LlamaConfig(**common, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias)
    if cfg.family == "mistral":
        _require(cfg, not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias), "biases")
        _require(cfg, cfg.window_layers is None, "a window on some layers only")
        return MistralConfig(**common, sliding_window=cfg.sliding_window)
    _require(
        cfg, cfg.qkv_bias and not cfg.out_bias and not cfg.ffn_bias,
        "biases other than on q/k/v (fixed in its code)",
    )
    return Qwen2Config(**common, **_qwen_window(cfg))


#: ModelConfig fields that only the dict-built families set.
_NEWER_FIELDS = ("qk_norm", "post_sublayer_norm", "attention_softcap", "logit_softcap", "rotary_dim",
                 "parallel_attention", "parallel_norms", "position_offset", "embedding_dim",
                 "n_experts", "kv_lora_rank", "attention_dropout", "embedding_multiplier",
                 "residual_multiplier", "logits_scaling", "nope_layers", "norm_affine", "clip_qkv",
                 "qk_l2_norm", "nope_temperature", "chunked_window", "rope_query_scale")


def _only_llama_fields(cfg: ModelConfig) -> bool:
    """No field of the newer families is set (Mistral's and Qwen2's windows are theirs)."""
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.init}
    return all(getattr(cfg, name) == defaults[name] for name in _NEWER_FIELDS)


def _qwen_window(cfg: ModelConfig) -> dict[str, Any]:
    """Qwen2/Qwen3's window fields: use_sliding_window, and layer_types from the config's
    per-layer pattern (max_window_layers as the class's own rule would place that many)."""
    if cfg.sliding_window is None:
        return {}
    return dict(use_sliding_window=True, sliding_window=cfg.sliding_window,
                max_window_layers=cfg.n_decoder_layers - cfg.n_window_layers, layer_types=_layer_types(cfg))


def _gpt2(cfg: ModelConfig, attn: str) -> Any:
    from transformers import GPT2Config

    _check_common(cfg, "learned", "layernorm", "pre")
    _decoder_only(cfg)
    _require(cfg, cfg.activation in _GPT2_ACTS, f"activation {cfg.activation!r}")
    _classic_linears(cfg)
    return GPT2Config(
        vocab_size=cfg.vocab_size,
        n_positions=cfg.max_positions,
        n_embd=cfg.d_model,
        n_layer=cfg.n_decoder_layers,
        n_head=cfg.n_heads,
        n_inner=cfg.d_ff,
        activation_function=_GPT2_ACTS[cfg.activation],
        resid_pdrop=cfg.dropout,
        embd_pdrop=cfg.dropout,
        attn_pdrop=cfg.dropout,
        tie_word_embeddings=cfg.tie_embeddings,
        attn_implementation=attn,
    )


def _bert(cfg: ModelConfig, attn: str) -> Any:
    from transformers import BertConfig

    _check_common(cfg, "learned", "layernorm", "post")
    _require(cfg, cfg.n_decoder_layers == 0, "decoder layers (BertModel is an encoder)")
    _require(cfg, cfg.head == "pooler", f"head {cfg.head!r} (BertModel has the pooler)")
    _require(cfg, cfg.embedding_norm, "embeddings without their LayerNorm")
    _require(cfg, not cfg.tie_embeddings, "tied embeddings (BertModel has no output projection)")
    _require(cfg, cfg.token_types >= 1, "zero token types (it always has a token-type embedding)")
    _require(cfg, cfg.activation in _BERT_ACTS, f"activation {cfg.activation!r}")
    _classic_linears(cfg)
    return BertConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_encoder_layers,
        num_attention_heads=cfg.n_heads,
        intermediate_size=cfg.d_ff,
        hidden_act=_BERT_ACTS[cfg.activation],
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.dropout,
        max_position_embeddings=cfg.max_positions,
        type_vocab_size=cfg.token_types,
        attn_implementation=attn,
    )


def _t5(cfg: ModelConfig, attn: str) -> Any:
    from transformers import T5Config

    _check_common(cfg, "relative", "rmsnorm", "pre", attention_scale=1.0)
    _require(cfg, cfg.n_encoder_layers > 0 and cfg.n_decoder_layers > 0, "a single stack")
    _require(cfg, cfg.head == "lm", f"head {cfg.head!r}")
    _require(cfg, cfg.activation in _T5_ACTS, f"activation {cfg.activation!r}")
    _require(cfg, not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias), "biases")
    _require(cfg, cfg.n_kv_heads == cfg.n_heads, "grouped-query attention")
    _require(cfg, cfg.tie_embeddings, "an untied lm head (transformers 5 always ties T5's)")
    _require(cfg, cfg.share_embeddings, "separate source and target embeddings")
    _require(cfg, cfg.token_types == 0 and not cfg.embedding_norm, "BERT-style embeddings")
    return T5Config(
        vocab_size=cfg.vocab_size,
        d_model=cfg.d_model,
        d_kv=cfg.d_head,
        d_ff=cfg.d_ff,
        num_layers=cfg.n_encoder_layers,
        num_decoder_layers=cfg.n_decoder_layers,
        num_heads=cfg.n_heads,
        relative_attention_num_buckets=cfg.relative_buckets,
        dropout_rate=cfg.dropout,
        feed_forward_proj=_T5_ACTS[cfg.activation],
        n_positions=cfg.max_positions,
        tie_word_embeddings=cfg.scale_lm_head_input,  # tied whatever it says; it switches the scale
        attn_implementation=attn,
    )


# ---------------------------------------------------------------------------------------------
# The newer families: a config.json dict, read back by costmodel.hf as the same ModelConfig


def _llama_dict(cfg: ModelConfig, model_type: str) -> dict[str, Any]:
    """The fields every Llama-like family of issue 14 shares."""
    return dict(
        model_type=model_type, vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
        num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads, head_dim=cfg.d_head,
        max_position_embeddings=cfg.max_positions, tie_word_embeddings=cfg.tie_embeddings,
        attention_dropout=cfg.dropout, hidden_act=_LLAMA_ACTS.get(cfg.activation, cfg.activation),
    )


def _layer_types(cfg: ModelConfig) -> list[str]:
    """transformers' layer_types of the config's per-layer pattern (ModelConfig.layer_pattern)."""
    return ["sliding_attention" if cfg.layer_slides(i) else "full_attention"
            for i in range(cfg.n_decoder_layers)]


def _qwen3_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "qwen3"), attention_bias=cfg.qkv_bias, **_qwen_window(cfg))


def _gemma_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_dict(cfg, "gemma"), attention_bias=cfg.qkv_bias)


def _ministral_dict(cfg: ModelConfig, model_type: str = "ministral") -> dict[str, Any]:
    """Ministral's config.json; CWM's has the same fields (its window rule differs)."""
    return dict(_llama_dict(cfg, model_type), sliding_window=cfg.sliding_window,
                layer_types=_layer_types(cfg))


def _gemma2_dict(cfg: ModelConfig, model_type: str = "gemma2") -> dict[str, Any]:
    """Gemma 2's config.json; Gemma 3's text model (gemma3_text) has the same fields."""
    data = dict(_llama_dict(cfg, model_type), attention_bias=cfg.qkv_bias,
                hidden_activation=_LLAMA_ACTS.get(cfg.activation, cfg.activation),
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
    _require(cfg, cfg.sliding_window is None, "a sliding window (on its NoPE layers)")
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
    _require(cfg, rest == 0, "a shared width that is not a whole number of experts")
    data = _llama_dict(cfg, model_type)
    del data["head_dim"]  # DeepseekV3Config sets it to qk_rope_head_dim (the rotary width)
    grouped = model_type in ("deepseek_v3", "glm4_moe_lite", "axk1")
    _require(cfg, grouped or cfg.expert_groups == 1, "group-limited routing (expert_groups)")
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


_CONFIGS = {
    "llama": _llama_like, "mistral": _llama_like, "qwen2": _llama_like,
    "gpt2": _gpt2, "bert": _bert, "t5": _t5,
    **{family: (lambda cfg, attn: _from_dict(cfg, attn)) for family in DICT_FAMILIES},
}


def _from_dict(cfg: ModelConfig, attn: str) -> Any:
    from .hf_families import hf_config_from_dict

    return hf_config_from_dict(config_dict(cfg), attn)


def hf_config(cfg: ModelConfig, attn_implementation: str = "eager") -> Any:
    """The transformers config object that reads back (costmodel.hf) as this ModelConfig."""
    if cfg.family not in _CONFIGS:
        raise ValueError(
            f"model {cfg.name!r}: family {cfg.family!r} has no Hugging Face class here; "
            f"supported: {', '.join(HF_FAMILIES)}."
        )
    if attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise ValueError(
            f"attn_implementation must be one of {', '.join(ATTN_IMPLEMENTATIONS)}; "
            f"got {attn_implementation!r}."
        )
    return _CONFIGS[cfg.family](cfg, attn_implementation)


def build_hf_model(
    cfg: ModelConfig, attn_implementation: str = "eager", dtype: torch.dtype | None = None
) -> torch.nn.Module:
    """The randomly initialised class a user trains, built from cfg (in train mode).

    dtype, if given, is set as the default dtype while building (works under fake_mode()).
    """
    import transformers as tr

    config = hf_config(cfg, attn_implementation)
    classes = {
        "llama": tr.LlamaForCausalLM, "mistral": tr.MistralForCausalLM,
        "qwen2": tr.Qwen2ForCausalLM, "gpt2": tr.GPT2LMHeadModel,
        "t5": tr.T5ForConditionalGeneration,
    }
    with default_dtype(dtype):
        if cfg.family == "bert":
            model = tr.BertModel(config, add_pooling_layer=True)
        elif cfg.family in DICT_FAMILIES:
            model = tr.AutoModelForCausalLM.from_config(config)
        else:
            model = classes[cfg.family](config)
    if getattr(model, "loss_type", "") is None:
        # GPT2LMHeadModel's name matches no loss, so transformers warns "`loss_type=None` was set
        # in the config but it is unrecognized" and uses ForCausalLMLoss: name that loss here.
        model.loss_type = "ForCausalLM"
    return model.train()


def _tokens(batch: int, length: int, vocab: int, offset: int) -> torch.Tensor:
    """A fixed (batch, length) int64 token pattern that spreads over the vocabulary."""
    index = torch.arange(batch * length, dtype=torch.long).reshape(batch, length)
    return (index * 7919 + offset) % vocab


def make_inputs(
    cfg: ModelConfig, batch: int, seq_len: int, tgt_len: int | None = None, labels: bool = False
) -> dict[str, torch.Tensor]:
    """Deterministic forward kwargs for build_hf_model(cfg): ids, token types, decoder ids, labels.

    seq_len is the decoder length for decoders and the encoder length for T5, whose decoder gets
    tgt_len tokens (default seq_len). labels=True adds the labels each class's own loss reads
    (BertModel has none). No attention_mask: every token is real, so the models build their
    own causal or empty masks.
    """
    if cfg.family not in HF_FAMILIES:
        raise ValueError(f"model {cfg.name!r}: family {cfg.family!r} has no Hugging Face class here.")
    inputs = {"input_ids": _tokens(batch, seq_len, cfg.vocab_size, 3)}
    if cfg.family == "bert":
        inputs["token_type_ids"] = (
            torch.arange(seq_len, dtype=torch.long).expand(batch, seq_len) * 2 // seq_len
        ) % cfg.token_types
    elif cfg.family == "t5":
        tgt = seq_len if tgt_len is None else tgt_len
        inputs["decoder_input_ids"] = _tokens(batch, tgt, cfg.vocab_size, 5)
        if labels:
            inputs["labels"] = _tokens(batch, tgt, cfg.vocab_size, 11)
    elif labels:
        inputs["labels"] = inputs["input_ids"].clone()
    return inputs
