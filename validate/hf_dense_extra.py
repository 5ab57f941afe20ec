"""The config.json of each family of costmodel/hf_dense_extra.py built from its ModelConfig (the
inverse of the readers there): validate/hf_config_dict.config_dict calls these, then checks that the
dict reads back as the same ModelConfig."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

from .hf_classic_more import gptj_dict, rotary_factor


def _nemotron_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="nemotron", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
                head_dim=cfg.d_head, max_position_embeddings=cfg.max_positions,
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.dropout,
                hidden_act="relu2", partial_rotary_factor=rotary_factor(cfg),
                attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias, bos_token_id=None,
                eos_token_id=None)


def _vaultgemma_dict(cfg: ModelConfig) -> dict[str, Any]:
    """VaultGemma's config.json: Gemma 2's fields (window, soft caps, query_pre_attn_scalar)."""
    scale = cfg.attention_scale or cfg.d_head**-0.5
    scalar = round(scale**-2) if round(scale**-2) ** -0.5 == scale else scale**-2
    data = dict(model_type="vaultgemma", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
                head_dim=cfg.d_head, max_position_embeddings=cfg.max_positions,
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.dropout,
                hidden_activation={"geglu_tanh": "gelu_pytorch_tanh", "swiglu": "silu"}.get(
                    cfg.activation, cfg.activation),
                attention_bias=cfg.qkv_bias, attn_logit_softcapping=cfg.attention_softcap,
                final_logit_softcapping=cfg.logit_softcap, query_pre_attn_scalar=scalar,
                sliding_window=cfg.sliding_window)
    # no window: every layer full (Gemma 2's default alternation with a null window is a
    # TypeError in transformers 5.24's DynamicCache, which builds a sliding layer from None)
    data["layer_types"] = ["sliding_attention" if cfg.layer_slides(i) else "full_attention"
                           for i in range(cfg.n_decoder_layers)]
    return data


def _ministral3_dict(cfg: ModelConfig) -> dict[str, Any]:
    """Ministral 3's config.json: Mistral's fields and its default rope_parameters (YaRN, the
    query scale's beta 0.1 over 16384 positions: a scale of exactly 1 below them)."""
    return dict(model_type="ministral3", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
                head_dim=cfg.d_head, max_position_embeddings=cfg.max_positions,
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.dropout,
                hidden_act="silu", sliding_window=cfg.sliding_window, pad_token_id=None,
                bos_token_id=None, eos_token_id=None)


def _llama_fields(cfg: ModelConfig, model_type: str) -> dict[str, Any]:
    return dict(model_type=model_type, vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
                head_dim=cfg.d_head, max_position_embeddings=cfg.max_positions,
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.dropout)


def _jais2_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_fields(cfg, "jais2"), hidden_act="relu2", attention_bias=cfg.qkv_bias,
                mlp_bias=cfg.ffn_bias, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def _hyperclovax_dict(cfg: ModelConfig) -> dict[str, Any]:
    """HyperCLOVA X's config.json: Granite's multipliers, logits_scaling the inverse of the
    ModelConfig's (HyperCLOVAX multiplies where Granite divides)."""
    return dict(_llama_fields(cfg, "hyperclovax"), hidden_act="silu",
                attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias,
                embedding_multiplier=cfg.embedding_multiplier or 1.0,
                attention_multiplier=cfg.attention_scale,
                residual_multiplier=cfg.residual_multiplier or 1.0,
                logits_scaling=1 / (cfg.logits_scaling or 1.0),
                use_post_norm=cfg.post_sublayer_norm, pad_token_id=None, bos_token_id=None,
                eos_token_id=None)


def _codegen_dict(cfg: ModelConfig) -> dict[str, Any]:
    """CodeGenConfig's fields are GPT-J's (GPT-J's layers with a fused qkv_proj), no bos or eos token."""
    return {**gptj_dict(cfg), "model_type": "codegen", "bos_token_id": None, "eos_token_id": None}


def _biogpt_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="biogpt", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                hidden_act={"gelu_tanh": "gelu_new"}.get(cfg.activation, cfg.activation),
                scale_embedding=cfg.scale_embeddings, hidden_dropout_prob=cfg.dropout,
                attention_probs_dropout_prob=(cfg.dropout if cfg.attention_dropout is None
                                              else cfg.attention_dropout),
                activation_dropout=0.0, layerdrop=0.0, tie_word_embeddings=cfg.tie_embeddings,
                pad_token_id=None, bos_token_id=None, eos_token_id=None)


def _minicpm3_dict(cfg: ModelConfig) -> dict[str, Any]:
    """MiniCPM3's config.json: its latent attention and multipliers (scale_depth from the
    residual multiplier, dim_model_base the hidden size: a divide by 1.0 before the head)."""
    return dict(model_type="minicpm3", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_heads,
                max_position_embeddings=cfg.max_positions, tie_word_embeddings=cfg.tie_embeddings,
                attention_dropout=cfg.dropout, hidden_act="silu", attention_bias=cfg.qkv_bias,
                kv_lora_rank=cfg.kv_lora_rank, q_lora_rank=cfg.q_lora_rank,
                qk_nope_head_dim=cfg.d_head - cfg.rotary_dim, qk_rope_head_dim=cfg.rotary_dim,
                v_head_dim=cfg.v_head_dim, scale_emb=cfg.embedding_multiplier,
                scale_depth=cfg.residual_multiplier * cfg.n_decoder_layers ** 0.5,
                dim_model_base=cfg.d_model, pad_token_id=None, bos_token_id=None, eos_token_id=None)


def _nanochat_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(_llama_fields(cfg, "nanochat"),
                hidden_act={"gelu_tanh": "gelu_new"}.get(cfg.activation, cfg.activation),
                attention_bias=cfg.qkv_bias, final_logit_softcapping=cfg.logit_softcap,
                pad_token_id=None, bos_token_id=None, eos_token_id=None)


def _persimmon_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="persimmon", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, max_position_embeddings=cfg.max_positions,
                hidden_act={"gelu_tanh": "gelu_new"}.get(cfg.activation, cfg.activation),
                partial_rotary_factor=rotary_factor(cfg), qk_layernorm=cfg.qk_norm,
                hidden_dropout=0.0, attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings, pad_token_id=None, bos_token_id=None,
                eos_token_id=None)


#: family -> its config.json.
DENSE_EXTRA_DICTS = {"nemotron": _nemotron_dict, "vaultgemma": _vaultgemma_dict,
                     "ministral3": _ministral3_dict, "jais2": _jais2_dict,
                     "hyperclovax": _hyperclovax_dict, "codegen": _codegen_dict,
                     "biogpt": _biogpt_dict, "minicpm3": _minicpm3_dict,
                     "nanochat": _nanochat_dict, "persimmon": _persimmon_dict}
