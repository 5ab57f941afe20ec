"""config.json writer for costmodel/hf_gpt_neox_japanese.py's family: what costmodel.hf reads back as the
same ModelConfig, so that validate builds GPTNeoXJapaneseForCausalLM for it."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_pytorch_tanh"}


def _gpt_neox_japanese(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """GPTNeoXJapaneseConfig's names: the MLP as a multiple of hidden_size, the rotary fraction, the two
    dropout probabilities."""
    if cfg.d_ff % cfg.d_model:
        raise ValueError(f"model {cfg.name!r}: Hugging Face gpt_neox_japanese's MLP is a whole multiple of hidden_size.")
    return dict(model_type="gpt_neox_japanese", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_attention_heads=cfg.n_heads, num_hidden_layers=cfg.n_decoder_layers,
                intermediate_multiple_size=cfg.d_ff // cfg.d_model, max_position_embeddings=cfg.max_positions,
                hidden_act=_ACTIVATIONS.get(cfg.activation, cfg.activation),
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                 "partial_rotary_factor": (cfg.rotary_dim or cfg.d_head) / cfg.d_head},
                tie_word_embeddings=cfg.tie_embeddings, hidden_dropout=cfg.dropout,
                attention_dropout=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout,
                bos_token_id=None, eos_token_id=None, pad_token_id=None)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
GPT_NEOX_JAPANESE_DICTS = {"gpt_neox_japanese": _gpt_neox_japanese}
