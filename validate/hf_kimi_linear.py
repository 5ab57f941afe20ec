"""config.json writer for costmodel/hf_kimi_linear.py's family (Kimi Linear): what costmodel.hf reads
back as the same ModelConfig, so that validate/hf_models.py builds KimiLinearForCausalLM from a
ModelConfig (validate's rows, target hf)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

_MIXERS = {"kda": "linear_attention", "attention": "full_attention"}
_FFNS = {"mlp": "dense", "moe": "sparse"}


def _kimi_linear(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Kimi Linear's config.json: each decoder layer's mixer (the pattern's even entries) as
    layer_types and its MLP or experts (the odd ones) as mlp_layer_types; KDA's sizes in
    linear_attn_config; the MLA's and the experts' fields under KimiLinearConfig's names."""
    mixers, ffns = cfg.layer_pattern[0::2], cfg.layer_pattern[1::2]
    if any(m not in _MIXERS for m in mixers) or any(f not in _FFNS for f in ffns):
        raise ValueError(f"model {cfg.name!r}: Hugging Face kimi_linear layers are a KDA or MLA mixer each "
                         "followed by an MLP or experts.")
    data = {k: v for k, v in llama.items() if k != "head_dim"}
    linear = (dict(linear_attn_config=dict(num_heads=cfg.deltanet_v_heads, head_dim=cfg.deltanet_v_dim,
                                           short_conv_kernel_size=cfg.conv_kernel)) if "kda" in mixers else {})
    experts = (dict(num_experts=cfg.n_experts, num_experts_per_token=cfg.top_k, moe_intermediate_size=cfg.d_expert,
                    num_shared_experts=cfg.d_shared // cfg.d_expert, moe_renormalize=cfg.renormalize_top_k,
                    num_expert_group=cfg.expert_groups, topk_group=cfg.expert_groups_per_token)
               if "moe" in ffns else {})
    # KimiLinearConfig's token ids (163,839 and others) would lie outside a small vocabulary; none
    # changes a count
    return dict(data, model_type="kimi_linear", num_hidden_layers=len(mixers), tie_word_embeddings=False,
                pad_token_id=None, bos_token_id=None, eos_token_id=None,
                layer_types=[_MIXERS[m] for m in mixers], mlp_layer_types=[_FFNS[f] for f in ffns],
                kv_lora_rank=cfg.kv_lora_rank, q_lora_rank=cfg.q_lora_rank, qk_rope_head_dim=cfg.rotary_dim,
                qk_nope_head_dim=cfg.d_head - cfg.rotary_dim, v_head_dim=cfg.v_head_dim, **linear, **experts)


#: family -> its config.json writer (validate/hf_extra_dicts.py's NEWER_DICTS).
KIMI_LINEAR_DICTS = {"kimi_linear": _kimi_linear}
