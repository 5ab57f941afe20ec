"""config.json writer for costmodel/hf_xglm.py's family (XGLM): what costmodel.hf reads back as the
same ModelConfig, so that validate/hf_models.py builds XGLMForCausalLM from a ModelConfig
(validate's rows, target hf)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_new"}


def _xglm(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """XGLMConfig's names for the sizes, the dropouts and the embeddings' scale (llama unused: XGLM
    names none of its fields as Llama does)."""
    return dict(model_type="xglm", vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                attention_heads=cfg.n_heads, ffn_dim=cfg.d_ff, num_layers=cfg.n_decoder_layers,
                max_position_embeddings=cfg.max_positions,
                activation_function=_ACTIVATIONS.get(cfg.activation, cfg.activation),
                scale_embedding=cfg.scale_embeddings, tie_word_embeddings=cfg.tie_embeddings,
                dropout=cfg.dropout,
                attention_dropout=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout)


def _ctrl(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """CTRLConfig's names: one dropout probability for the embeddings and the sublayers' outputs."""
    return dict(model_type="ctrl", vocab_size=cfg.vocab_size, n_embd=cfg.d_model, n_head=cfg.n_heads,
                dff=cfg.d_ff, n_layer=cfg.n_decoder_layers, n_positions=cfg.max_positions,
                tie_word_embeddings=cfg.tie_embeddings, resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
XGLM_DICTS = {"xglm": _xglm, "ctrl": _ctrl}
