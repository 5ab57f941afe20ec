"""config.json writer for costmodel/hf_deepseek_v4.py's family (DeepSeek-V4): what costmodel.hf reads
back as the same ModelConfig, so that validate/hf_models.py builds DeepseekV4ForCausalLM from a
ModelConfig (validate's rows, target hf)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

#: ModelConfig.layer_pattern's kinds -> DeepseekV4Config's layer_types.
_LAYER_TYPES = {"sliding": "sliding_attention", "csa": "compressed_sparse_attention",
                "hca": "heavily_compressed_attention"}


def _deepseek_v4(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """DeepseekV4Config's names (llama unused): the sizes, the layer types in order, both rates, the
    rotary width as partial_rotary_factor, no token ids (the tiny vocabularies of the tests)."""
    return dict(model_type="deepseek_v4", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                moe_intermediate_size=cfg.d_expert, num_hidden_layers=cfg.n_decoder_layers,
                num_attention_heads=cfg.n_heads, head_dim=cfg.d_head, q_lora_rank=cfg.q_lora_rank,
                partial_rotary_factor=cfg.rotary_dim / cfg.d_head, num_experts_per_tok=cfg.top_k,
                n_routed_experts=cfg.n_experts, n_shared_experts=1, max_position_embeddings=cfg.max_positions,
                sliding_window=cfg.sliding_window, hc_mult=cfg.hyper_streams, o_groups=cfg.output_groups,
                o_lora_rank=cfg.output_rank, index_n_heads=cfg.index_n_heads, index_head_dim=cfg.index_head_dim,
                compress_rates={"compressed_sparse_attention": cfg.csa_rate,
                                "heavily_compressed_attention": cfg.hca_rate},
                layer_types=[_LAYER_TYPES[kind] for kind in cfg.layer_pattern],
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.attention_dropout or 0.0,
                pad_token_id=None, bos_token_id=None, eos_token_id=None)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
DEEPSEEK_V4_DICTS = {"deepseek_v4": _deepseek_v4}
