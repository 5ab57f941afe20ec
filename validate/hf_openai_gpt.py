"""config.json writer for costmodel/hf_openai_gpt.py's family (OpenAI GPT, GPT-1): what
costmodel.hf reads back as the same ModelConfig, so that validate/hf_models.py builds
OpenAIGPTLMHeadModel from a ModelConfig (validate's rows, target hf)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

_ACTIVATIONS = {"gelu_tanh": "gelu", "relu": "relu"}


def _openai_gpt(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """OpenAIGPTConfig's names (llama unused: GPT-1 names none of its fields as Llama does); its
    MLP is 4 n_embd wide whatever d_ff says, which config_dict's read-back checks."""
    return dict(model_type="openai-gpt", vocab_size=cfg.vocab_size, n_embd=cfg.d_model, n_head=cfg.n_heads,
                n_layer=cfg.n_decoder_layers, n_positions=cfg.max_positions,
                afn=_ACTIVATIONS.get(cfg.activation, cfg.activation), tie_word_embeddings=cfg.tie_embeddings,
                resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
OPENAI_GPT_DICTS = {"openai_gpt": _openai_gpt}
