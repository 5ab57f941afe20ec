"""config.json writers for costmodel/hf_lfm2.py's families (LFM2, LFM2-MoE): what costmodel.hf reads
back as the same ModelConfig, so that validate/hf_models.py builds Lfm2ForCausalLM and
Lfm2MoeForCausalLM from a ModelConfig (validate's rows, target hf)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

_TYPES = {"shortconv": "conv", "attention": "full_attention"}


def _lfm2(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """LFM2's config.json: each decoder layer's mixer (the pattern's even entries) as layer_types,
    the MLP's width as intermediate_size with the class's auto-adjustment off, the conv's taps and
    biases; the fields Lfm2Config does not have (hidden_act, attention_dropout) left out."""
    pattern = cfg.layer_pattern
    mixers, ffns = pattern[0::2], pattern[1::2]
    if any(m not in _TYPES for m in mixers) or any(f not in ("mlp", "moe") for f in ffns):
        raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} layers are a conv or attention "
                         "mixer each followed by an MLP (or experts).")
    data = {k: v for k, v in llama.items() if k not in ("hidden_act", "attention_dropout")}
    data.update(num_hidden_layers=len(mixers), layer_types=[_TYPES[m] for m in mixers],
                conv_L_cache=cfg.conv_kernel or 3, conv_bias=cfg.conv_bias)
    if cfg.family == "lfm2":
        return dict(data, block_auto_adjust_ff_dim=False)
    return dict(data, num_dense_layers=ffns.count("mlp"), num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                moe_intermediate_size=cfg.d_expert, norm_topk_prob=cfg.renormalize_top_k)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
LFM2_DICTS = {"lfm2": _lfm2, "lfm2_moe": _lfm2}
