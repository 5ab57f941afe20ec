"""The config.json of each family of costmodel/hf_new_moe.py built from its ModelConfig (the
inverse of the readers there): validate/hf_config_dict.config_dict calls these with the Llama fields
every Llama-like family shares, then checks that the dict reads back as the same ModelConfig."""

from __future__ import annotations

from typing import Any, Callable

from costmodel.config import ModelConfig

from .hf_experts import shared_experts


def _hy_v3(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Hy3's config.json: mlp_layer_types from the layer pattern, the shared MLP as a whole
    number of experts (0 where it is intermediate_size wide: HYV3MLP's `width or
    intermediate_size`)."""
    layers = cfg.n_decoder_layers
    experts: dict[str, Any] = dict(mlp_layer_types=["dense"] * layers)
    if cfg.n_experts:
        shared, rest = divmod(cfg.d_shared, cfg.d_expert)
        if rest or not shared:
            if cfg.d_shared != cfg.d_ff:
                raise ValueError(f"model {cfg.name!r}: Hugging Face hy_v3 cannot build a shared "
                                 "width that is neither a whole number of experts nor intermediate_size.")
            shared = 0
        experts = dict(mlp_layer_types=["dense" if cfg.layer_kind_at("decoder", i) == "dense" else "sparse"
                                        for i in range(layers)],
                       num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                       moe_intermediate_size=cfg.d_expert, num_shared_experts=shared)
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None, bos_token_id=None,
                eos_token_id=None, **experts)


def _afmoe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """AFMoE's config.json: layer_types from the layer pattern (the RoPE layers slide), the
    dense layers first, the shared MLP as a whole number of experts."""
    layers = cfg.n_decoder_layers
    types = ["sliding_attention" if cfg.layer_slides(i) else "full_attention" for i in range(layers)]
    experts: dict[str, Any] = dict(num_dense_layers=layers)
    if cfg.n_experts:
        shared = shared_experts(cfg, "afmoe")
        experts = dict(num_dense_layers=cfg.n_dense_layers, num_experts=cfg.n_experts,
                       num_experts_per_tok=cfg.top_k, moe_intermediate_size=cfg.d_expert,
                       num_shared_experts=shared)
    return dict(llama, sliding_window=cfg.sliding_window, layer_types=types,
                mup_enabled=cfg.scale_embeddings, pad_token_id=None, bos_token_id=None,
                eos_token_id=None, **experts)


def _layers_by_type(cfg: ModelConfig) -> tuple[list[str], dict[str, Any], list[str]]:
    """Laguna's and MiMo-V2-Flash's per-layer fields: layer_types (sliding or full), rope_parameters
    per layer type (one rotated width) and mlp_layer_types (dense, or sparse where the pattern has
    experts; all dense without experts)."""
    layers = range(cfg.n_decoder_layers)
    types = ["sliding_attention" if cfg.layer_slides(i) else "full_attention" for i in layers]
    factor = 1.0 if cfg.rotary_dim is None else (cfg.rotary_dim + 0.5) / cfg.d_head
    rope = {kind: {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": factor}
            for kind in ("full_attention", "sliding_attention")}
    mlp = ["dense" if not cfg.n_experts or cfg.layer_kind_at("decoder", i) == "dense" else "sparse" for i in layers]
    return types, rope, mlp


def _laguna(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Laguna's config.json: layer_types, rope_parameters per layer type (one rotated width),
    mlp_layer_types from the layer pattern, the per-head gate."""
    types, rope, mlp_types = _layers_by_type(cfg)
    experts: dict[str, Any] = dict(mlp_layer_types=mlp_types)
    if cfg.n_experts:
        experts = dict(mlp_layer_types=mlp_types, num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                       moe_intermediate_size=cfg.d_expert, shared_expert_intermediate_size=cfg.d_shared)
    return dict(llama, layer_types=types, sliding_window=cfg.sliding_window or 512, rope_parameters=rope,
                gating=True, pad_token_id=None, bos_token_id=None, eos_token_id=None, **experts)


def _mimo_v2_flash(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """MiMo-V2-Flash's config.json: layer_types and mlp_layer_types from the layer pattern,
    num_key_value_heads the full layers' (half the sliding layers' where every layer slides),
    v_head_dim, rope_parameters per layer type (one rotated width), DeepSeek-V3's router fields."""
    types, rope, mlp_types = _layers_by_type(cfg)
    kv = cfg.global_kv_heads or (cfg.n_kv_heads // 2 if cfg.sliding_window else cfg.n_kv_heads)
    experts: dict[str, Any] = dict(mlp_layer_types=mlp_types)
    if cfg.n_experts:
        experts = dict(mlp_layer_types=mlp_types, n_routed_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                       moe_intermediate_size=cfg.d_expert, norm_topk_prob=cfg.renormalize_top_k,
                       n_group=cfg.expert_groups, topk_group=cfg.expert_groups_per_token)
    return dict(llama, num_key_value_heads=kv, v_head_dim=cfg.v_head_dim, layer_types=types,
                sliding_window=cfg.sliding_window or 129, rope_parameters=rope, attention_bias=cfg.qkv_bias,
                pad_token_id=None, bos_token_id=None, eos_token_id=None, **experts)


#: family -> its config.json, from the ModelConfig and its Llama fields.
NEW_MOE_DICTS: dict[str, Callable[[ModelConfig, dict[str, Any]], dict[str, Any]]] = {
    "hy_v3": _hy_v3, "afmoe": _afmoe, "laguna": _laguna, "mimo_v2_flash": _mimo_v2_flash,
}
