"""The config.json writers of costmodel/hf_zamba.py's families (model types "zamba", "zamba2"): what
costmodel.hf reads back as the same ModelConfig, so that `validate` builds ZambaForCausalLM and
Zamba2ForCausalLM (validate/hf_config_dict.py config_dict) from a ModelConfig of either family."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

#: ModelConfig.activation -> hidden_act of the shared block's MLP (hf_zamba's reading, inverted).
_ACTS = {"geglu": "gelu", "geglu_tanh": "gelu_pytorch_tanh", "swiglu": "silu"}


def _layers_block_type(cfg: ModelConfig) -> list[str]:
    """A decoder layer per mixer layer, "hybrid" where a "shared" layer comes before it."""
    pattern = cfg.layer_pattern
    return ["hybrid" if i and pattern[i - 1] == "shared" else "linear_attention"
            for i, kind in enumerate(pattern) if kind != "shared"]


def _shared(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """The fields both share: Llama's (a decoder layer per mixer layer), the pattern, the activation."""
    if not cfg.mixer_layers or cfg.layer_pattern.count("shared") == 0:
        raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} runs shared blocks in hybrid layers.")
    types = _layers_block_type(cfg)
    data = dict(llama, num_hidden_layers=len(types), layers_block_type=types, hidden_act=_ACTS[cfg.activation])
    data.pop("head_dim")
    return data


def _zamba(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """ZambaConfig's fields: the Mamba-1 mixer's mamba_* sizes and its heads (ModelConfig.mamba1_heads:
    ZambaMambaMixer's n_mamba_heads, which changes no parameter or FLOP, only the bytes saved)."""
    return dict(_shared(cfg, llama), attention_head_dim=cfg.d_head, n_mamba_heads=cfg.mamba1_heads,
                mamba_expand=cfg.mamba1_inner // cfg.d_model, mamba_dt_rank=cfg.dt_rank, mamba_d_state=cfg.ssm_state,
                mamba_d_conv=cfg.conv_kernel, mamba_proj_bias=cfg.mamba_bias, mamba_conv_bias=cfg.conv_bias)


def _zamba2(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Zamba2Config's fields: the Mamba-2 mixer's, the blocks, the adapters, RoPE."""
    return dict(_shared(cfg, llama), n_mamba_heads=cfg.mamba_heads,
                mamba_expand=cfg.mamba_heads * cfg.mamba_head_dim // cfg.d_model, mamba_d_state=cfg.ssm_state,
                mamba_ngroups=cfg.mamba_groups, mamba_d_conv=cfg.conv_kernel, chunk_size=cfg.chunk_size,
                add_bias_linear=cfg.mamba_bias, num_mem_blocks=cfg.shared_blocks, adapter_rank=cfg.shared_adapter_rank,
                use_shared_attention_adapter=cfg.shared_attention_adapters, use_mem_rope=cfg.rope)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
ZAMBA_DICTS = {"zamba": _zamba, "zamba2": _zamba2}
