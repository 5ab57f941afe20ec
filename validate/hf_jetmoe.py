"""config.json writer for costmodel/hf_jetmoe.py's family (JetMoE): what costmodel.hf reads back as
the same ModelConfig, so that validate/hf_models.py builds JetMoeForCausalLM from a ModelConfig
(validate's rows, target hf; on the CPU's real tensors: its routing's `expert_size.tolist()` is
data-dependent, which FakeTensorMode cannot run)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig


def _jetmoe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """JetMoeConfig's names: num_attention_heads follows from top_k x num_key_value_heads, head_dim is
    kv_channels (llama unused: the reader takes none of Llama's fields as such)."""
    return dict(model_type="jetmoe", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_hidden_layers=cfg.n_decoder_layers, num_key_value_heads=cfg.n_kv_heads,
                kv_channels=cfg.d_head, intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
                num_local_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.dropout,
                bos_token_id=None, eos_token_id=None, pad_token_id=None)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
JETMOE_DICTS = {"jetmoe": _jetmoe}
