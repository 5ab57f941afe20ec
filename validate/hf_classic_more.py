"""The config.json of each family of costmodel/hf_classic_more.py built from its ModelConfig (the
inverse of the readers there): validate/hf_config_dict.config_dict calls these, then checks that the
dict reads back as the same ModelConfig."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

from .hf_experts import shared_experts


def rotary_factor(cfg: ModelConfig) -> float:
    """A partial_rotary_factor whose int(d_head * factor) is rotary_dim again (also
    validate/hf_models.py's and hf_dense_extra.py's families)."""
    rotary = cfg.rotary_dim or cfg.d_head
    factor = rotary / cfg.d_head
    return factor if int(cfg.d_head * factor) == rotary else (rotary + 0.5) / cfg.d_head


def _stablelm_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="stablelm", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                num_key_value_heads=cfg.n_kv_heads, intermediate_size=cfg.d_ff,
                max_position_embeddings=cfg.max_positions, hidden_act="silu",
                partial_rotary_factor=rotary_factor(cfg), use_qkv_bias=cfg.qkv_bias,
                use_parallel_residual=cfg.parallel_attention, hidden_dropout=0.0,
                attention_dropout=cfg.attention_dropout or 0.0,
                tie_word_embeddings=cfg.tie_embeddings)


def _gpt_bigcode_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="gpt_bigcode", vocab_size=cfg.vocab_size, n_embd=cfg.d_model,
                n_layer=cfg.n_decoder_layers, n_head=cfg.n_heads, n_inner=cfg.d_ff,
                n_positions=cfg.max_positions, multi_query=cfg.n_kv_heads == 1 != cfg.n_heads,
                activation_function={"gelu_tanh": "gelu_pytorch_tanh"}.get(cfg.activation,
                                                                           cfg.activation),
                resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout,
                attn_pdrop=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout,
                tie_word_embeddings=cfg.tie_embeddings)


def _mpt_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="mpt", vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                n_layers=cfg.n_decoder_layers, n_heads=cfg.n_heads, max_seq_len=cfg.max_positions,
                attn_config=dict(attn_pdrop=0, softmax_scale=cfg.attention_scale),
                tie_word_embeddings=cfg.tie_embeddings)


def gptj_dict(cfg: ModelConfig) -> dict[str, Any]:
    """GPTJConfig's fields of a config (CodeGen's config has the same: validate/hf_dense_extra.py)."""
    return dict(model_type="gptj", vocab_size=cfg.vocab_size, n_embd=cfg.d_model,
                n_layer=cfg.n_decoder_layers, n_head=cfg.n_heads, n_inner=cfg.d_ff,
                n_positions=cfg.max_positions, rotary_dim=cfg.rotary_dim or cfg.d_head,
                activation_function={"gelu_tanh": "gelu_new"}.get(cfg.activation, cfg.activation),
                resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout,
                attn_pdrop=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout,
                tie_word_embeddings=cfg.tie_embeddings)


def _gpt_neo_dict(cfg: ModelConfig) -> dict[str, Any]:
    kinds = ["local" if cfg.layer_slides(i) else "global" for i in range(cfg.n_decoder_layers)]
    return dict(model_type="gpt_neo", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_layers=cfg.n_decoder_layers, num_heads=cfg.n_heads, intermediate_size=cfg.d_ff,
                max_position_embeddings=cfg.max_positions,
                attention_types=[[[kind], 1] for kind in kinds],
                window_size=cfg.sliding_window or 256,
                activation_function={"gelu_tanh": "gelu_new"}.get(cfg.activation, cfg.activation),
                resid_dropout=cfg.dropout, embed_dropout=cfg.dropout,
                attention_dropout=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout,
                tie_word_embeddings=cfg.tie_embeddings)


def _cohere_dict(cfg: ModelConfig) -> dict[str, Any]:
    return dict(model_type="cohere", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_attention_heads=cfg.n_heads,
                num_key_value_heads=cfg.n_kv_heads, intermediate_size=cfg.d_ff,
                max_position_embeddings=cfg.max_positions, hidden_act="silu",
                attention_bias=cfg.qkv_bias, attention_dropout=cfg.attention_dropout or 0.0,
                logit_scale=1 / (cfg.logits_scaling or 1.0),
                tie_word_embeddings=cfg.tie_embeddings)


def _cohere2_dict(cfg: ModelConfig) -> dict[str, Any]:
    data = dict(_cohere_dict(cfg), model_type="cohere2", sliding_window=cfg.sliding_window,
                layer_types=["sliding_attention" if cfg.layer_slides(i) else "full_attention"
                             for i in range(cfg.n_decoder_layers)])
    return data


def _cohere2_moe_dict(cfg: ModelConfig) -> dict[str, Any]:
    """Cohere2-MoE's: Cohere 2's fields and windows, the head width, experts in every layer,
    shared experts (a whole number of experts) added to the routed ones."""
    shared = shared_experts(cfg, "cohere2_moe")
    return dict(_cohere2_dict(cfg), model_type="cohere2_moe", head_dim=cfg.d_head,
                intermediate_size=cfg.d_expert, num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                num_shared_experts=shared, shared_expert_combination_strategy="sum",
                pad_token_id=None, bos_token_id=None, eos_token_id=None)


#: family -> its config.json builder.
CLASSIC_MORE_DICTS = {"stablelm": _stablelm_dict, "gpt_bigcode": _gpt_bigcode_dict, "mpt": _mpt_dict,
                      "gptj": gptj_dict, "gpt_neo": _gpt_neo_dict,
                      "cohere": _cohere_dict, "cohere2": _cohere2_dict,
                      "cohere2_moe": _cohere2_moe_dict}
