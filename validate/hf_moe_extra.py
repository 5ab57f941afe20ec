"""The config.json of a ModelConfig of costmodel/hf_moe_extra.py's families: what costmodel.hf
reads back as the same ModelConfig (validate/hf_config_dict.py's config_dict checks that), so that
validate builds the class transformers runs for it. Each writer gets the ModelConfig and the
Llama fields every Llama-like family shares (hf_config_dict's Llama dict, which config_dict passes in:
it imports this module) and adds its family's own."""

from __future__ import annotations

from typing import Any, Callable

from costmodel.config import ModelConfig

from .hf_experts import shared_experts
from .hf_llama_variants import granite_swa_fields


def _one(value: float | None) -> float:
    """Granite's multiplier fields: 1.0 where the ModelConfig has none."""
    return 1.0 if value is None else value


def _granitemoe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """GraniteMoE's config.json: Granite's multipliers, the experts (intermediate_size their width)."""
    return dict(llama, intermediate_size=cfg.d_expert or cfg.d_ff, attention_bias=cfg.qkv_bias,
                num_local_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                embedding_multiplier=_one(cfg.embedding_multiplier),
                attention_multiplier=_one(cfg.attention_scale),
                residual_multiplier=_one(cfg.residual_multiplier),
                logits_scaling=_one(cfg.logits_scaling))


def _granitemoeshared(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(_granitemoe(cfg, llama), shared_intermediate_size=cfg.d_shared)


def _granitemoe_swa(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(_granitemoeshared(cfg, llama), **granite_swa_fields(cfg))


def _flex_olmo(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, num_experts=cfg.n_experts,
                num_experts_per_tok=cfg.top_k, norm_topk_prob=cfg.renormalize_top_k,
                pad_token_id=None, eos_token_id=None)


def _ernie4_5_moe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """ERNIE 4.5 MoE's config.json: the layers with experts as moe_layer_start_index,
    moe_layer_end_index and moe_layer_interval (the first interval that gives them)."""
    data = dict(llama, use_bias=cfg.qkv_bias, pad_token_id=None, bos_token_id=None,
                eos_token_id=None)
    layers = cfg.n_decoder_layers
    if not cfg.n_experts:
        return dict(data, moe_layer_start_index=layers)
    pattern = cfg.layer_pattern or ("moe",) * layers
    moe = [i for i, kind in enumerate(pattern) if kind == "moe"]
    for every in range(1, layers + 1):
        if [i for i in range(moe[0], moe[-1] + 1) if (i + 1) % every == 0] == moe:
            break
    else:
        raise ValueError(f"model {cfg.name!r}: its expert layers are no start, end and interval.")
    return dict(data, moe_num_experts=cfg.n_experts, moe_k=cfg.top_k,
                moe_intermediate_size=cfg.d_expert,
                moe_num_shared_experts=cfg.d_shared // cfg.d_expert, moe_layer_start_index=moe[0],
                moe_layer_end_index=moe[-1], moe_layer_interval=every)


def _phimoe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, lm_head_bias=cfg.lm_head_bias,
                num_local_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                sliding_window=cfg.sliding_window, bos_token_id=None, eos_token_id=None,
                input_jitter_noise=cfg.moe_input_noise or 0.0)


def _dbrx(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """DBRX's config.json: its own names, attention and experts in nested objects."""
    return dict(model_type="dbrx", vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                n_heads=cfg.n_heads, n_layers=cfg.n_decoder_layers, max_seq_len=cfg.max_positions,
                tie_word_embeddings=False,
                attn_config=dict(kv_n_heads=cfg.n_kv_heads, clip_qkv=cfg.clip_qkv,
                                 attn_pdrop=cfg.dropout, rope_theta=10000.0),
                ffn_config=dict(ffn_hidden_size=cfg.d_expert, moe_num_experts=cfg.n_experts,
                                moe_top_k=cfg.top_k,
                                moe_normalize_expert_weights=1.0 if cfg.renormalize_top_k else None,
                                moe_jitter_eps=cfg.moe_input_noise))


def _aria_text(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Aria's language model: the experts' width as intermediate_size, the shared MLP a whole number
    of experts wide (moe_num_shared_experts), its biases as mlp_bias."""
    width = cfg.d_expert or cfg.d_ff
    shared = shared_experts(cfg, "aria_text", width)
    return dict(llama, intermediate_size=width, moe_num_experts=cfg.n_experts, moe_topk=cfg.top_k,
                moe_num_shared_experts=shared, mlp_bias=cfg.ffn_bias)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
MOE_EXTRA_DICTS: dict[str, Callable[[ModelConfig, dict[str, Any]], dict[str, Any]]] = {
    "granitemoe": _granitemoe, "granitemoeshared": _granitemoeshared, "granitemoe_swa": _granitemoe_swa,
    "flex_olmo": _flex_olmo, "ernie4_5_moe": _ernie4_5_moe,
    "phimoe": _phimoe, "dbrx": _dbrx, "aria_text": _aria_text,
}
