"""The config.json writer of costmodel/hf_falcon_h1.py's family (model_type "falcon_h1"): what
costmodel.hf reads back as the same ModelConfig, so that `validate` builds FalconH1ForCausalLM
(validate/hf_config_dict.py config_dict) from a ModelConfig of that family."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

#: The decoder layer's three one-mixer layers (costmodel/hf_falcon_h1.LAYER).
_PER_LAYER = 3


def _falcon_h1(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """FalconH1Config's fields: Llama's (one decoder layer per three mixer layers), the mixer's
    mamba_* ones (its width as mamba_d_ssm), the biases, the gated norm, the two multipliers the
    tree holds (the others are 1.0, FalconH1Config's defaults)."""
    if not cfg.parallel_attention or cfg.n_decoder_layers % _PER_LAYER:
        raise ValueError(f"model {cfg.name!r}: Hugging Face falcon_h1 runs a Mamba-2 mixer and attention in "
                         "parallel in every layer.")
    return dict(
        llama, num_hidden_layers=cfg.n_decoder_layers // _PER_LAYER, mamba_n_heads=cfg.mamba_heads,
        mamba_d_head=cfg.mamba_head_dim, mamba_d_ssm=cfg.mamba_heads * cfg.mamba_head_dim,
        mamba_n_groups=cfg.mamba_groups, mamba_d_state=cfg.ssm_state, mamba_d_conv=cfg.conv_kernel,
        mamba_chunk_size=cfg.chunk_size, mamba_conv_bias=cfg.conv_bias, mamba_proj_bias=cfg.mamba_bias,
        projectors_bias=cfg.mamba_bias if cfg.mamba_out_bias is None else cfg.mamba_out_bias,
        mamba_rms_norm=cfg.mamba_gated_norm, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias,
        embedding_multiplier=cfg.embedding_multiplier or 1.0,
        lm_head_multiplier=1 / cfg.logits_scaling if cfg.logits_scaling else 1.0)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
FALCON_H1_DICTS = {"falcon_h1": _falcon_h1}
