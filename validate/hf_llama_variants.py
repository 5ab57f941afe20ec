"""The config.json of a ModelConfig of costmodel/hf_llama_variants.py's and hf_moe_more.py's families
(and, from validate/hf_gemma4.py, costmodel/hf_gemma4.py's): what costmodel.hf
reads back as the same ModelConfig (validate/hf_config_dict.py's config_dict checks that), so that
validate builds the class transformers runs for it. Each writer gets the ModelConfig and the
Llama fields every Llama-like family shares (hf_config_dict's Llama dict, which config_dict passes in:
it imports this module) and adds its family's own."""

from __future__ import annotations

from typing import Any, Callable

from costmodel.config import ModelConfig

from .hf_experts import shared_experts
from .hf_gemma4 import GEMMA4_DICTS


def _layer_types(cfg: ModelConfig) -> list[str]:
    """transformers' layer_types of the config's per-layer pattern."""
    return ["sliding_attention" if cfg.layer_slides(i) else "full_attention"
            for i in range(cfg.n_decoder_layers)]


def _olmo(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None, clip_qkv=cfg.clip_qkv)


def _olmo3(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """OLMo 3's config.json: OLMo 2's fields, the window and layer_types (where no layer slides,
    all full_attention and its default window, which its class needs and no layer uses)."""
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None,
                sliding_window=cfg.sliding_window or 4096, layer_types=_layer_types(cfg))


def _olmoe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None, intermediate_size=cfg.d_expert,
                num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                norm_topk_prob=cfg.renormalize_top_k, clip_qkv=cfg.clip_qkv)


def _seed_oss(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias,
                attention_out_bias=cfg.out_bias, mlp_bias=cfg.ffn_bias, pad_token_id=None,
                residual_dropout=cfg.dropout,
                attention_dropout=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout)


def _arcee(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias)


def _bitnet(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """BitNet's config.json: Llama's fields, relu2 for the gated squared ReLU, no quantization_config
    (from_config builds plain nn.Linear layers)."""
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None, bos_token_id=None, eos_token_id=None,
                hidden_act="relu2" if cfg.activation == "relu2_glu" else "silu")


def _diffllama(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """DiffLlama's config.json: Llama's fields and attention_bias (no MLP bias, no dropout)."""
    return dict(llama, attention_bias=cfg.qkv_bias, attention_dropout=0.0)


def _doge(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Doge's config.json: Llama's fields, the biases, dense layers, no dropout, no top-k masking."""
    return dict(llama, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias, attention_dropout=0.0,
                keep_window_size=cfg.max_positions, is_moe=False)


def _rotary_factor(cfg: ModelConfig) -> float:
    """A partial_rotary_factor whose int(d_head * factor) is rotary_dim again: half a dimension
    above it, so that rounding cannot fall below."""
    return 1.0 if cfg.rotary_dim is None else (cfg.rotary_dim + 0.5) / cfg.d_head


def _glm4(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None,
                eos_token_id=None, partial_rotary_factor=_rotary_factor(cfg))


def _helium(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias,
                pad_token_id=None, bos_token_id=None, eos_token_id=None)


def _ernie4_5(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, use_bias=cfg.qkv_bias, pad_token_id=None,
                bos_token_id=None, eos_token_id=None)


def exaone4(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    window = (dict(sliding_window=cfg.sliding_window, layer_types=_layer_types(cfg))
              if cfg.sliding_window is not None
              else dict(sliding_window=None, layer_types=["full_attention"] * cfg.n_decoder_layers))
    return dict(llama, pad_token_id=None, bos_token_id=None,
                eos_token_id=None, **window)


def _apertus(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None,
                bos_token_id=None, eos_token_id=None)


def _glm4_moe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """GLM-4.5's config.json (costmodel/hf_moe_more.py): one group of experts (the groups change
    which experts a token gets, not what is computed or kept), shared experts as a whole number
    of experts."""
    layers = cfg.n_decoder_layers
    experts: dict[str, Any] = dict(first_k_dense_replace=layers)
    if cfg.n_experts:
        shared = shared_experts(cfg, "glm4_moe")
        experts = dict(first_k_dense_replace=cfg.n_dense_layers, n_routed_experts=cfg.n_experts,
                       num_experts_per_tok=cfg.top_k, moe_intermediate_size=cfg.d_expert,
                       n_shared_experts=shared, norm_topk_prob=cfg.renormalize_top_k, n_group=1,
                       topk_group=1)
    return dict(llama, attention_bias=cfg.qkv_bias, use_qk_norm=cfg.qk_norm,
                partial_rotary_factor=_rotary_factor(cfg), pad_token_id=None, eos_token_id=None,
                **experts)


def _minimax_m2(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, intermediate_size=cfg.d_expert or cfg.d_ff, num_local_experts=cfg.n_experts,
                num_experts_per_tok=cfg.top_k, partial_rotary_factor=_rotary_factor(cfg),
                pad_token_id=None, bos_token_id=None, eos_token_id=None)


def _hunyuan_v1_dense(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(llama, attention_bias=cfg.qkv_bias, pad_token_id=None, bos_token_id=None,
                eos_token_id=None, eod_token_id=None)


def _hunyuan_v1_moe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    return dict(_hunyuan_v1_dense(cfg, llama), num_experts=cfg.n_experts, moe_topk=cfg.top_k,
                sep_token_id=None)


def _dots1(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """dots.llm1's config.json: GLM-4.5's experts (one group), Qwen3's attention, no window."""
    data = _glm4_moe(cfg, llama)
    for key in ("use_qk_norm", "partial_rotary_factor"):
        del data[key]
    return dict(data, layer_types=["full_attention"] * cfg.n_decoder_layers)


def _exaone_moe(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """EXAONE-MoE's config.json: EXAONE 4.0's windows, GLM-4.5's experts (one group) under
    ExaoneMoeConfig's names; a model without experts has every layer dense."""
    data = exaone4(cfg, llama)
    if not cfg.n_experts:
        return dict(data, first_k_dense_replace=cfg.n_decoder_layers)
    experts = _glm4_moe(cfg, llama)
    return dict(data, first_k_dense_replace=cfg.n_dense_layers, num_experts=cfg.n_experts,
                num_shared_experts=experts["n_shared_experts"], n_group=1, topk_group=1,
                **{key: experts[key] for key in ("num_experts_per_tok", "moe_intermediate_size",
                                                 "norm_topk_prob")})


def _granite_swa(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """GraniteSWA's config.json: Granite's multipliers and granite_swa_fields."""
    return dict(llama, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias, bos_token_id=None,
                eos_token_id=None, embedding_multiplier=cfg.embedding_multiplier or 1.0,
                attention_multiplier=cfg.attention_scale or 1.0,
                residual_multiplier=cfg.residual_multiplier or 1.0, logits_scaling=cfg.logits_scaling or 1.0,
                **granite_swa_fields(cfg))


def granite_swa_fields(cfg: ModelConfig) -> dict[str, Any]:
    """GraniteSWA's (and GraniteMoeSWA's) attention fields: the window and layer_types, and a
    layer_rope_theta with 0 on the NoPE layers and rotary_sets - 1 distinct bases on the others
    (the bases change the tables' values only)."""
    layers = cfg.n_decoder_layers
    pattern = cfg.layer_pattern or ()
    nope = ({i for i, kind in enumerate(pattern) if kind == "nope"} if "nope" in pattern else
            {i for i in range(layers) if not cfg.layer_slides(i)} if cfg.nope_layers else set())
    rope = [i for i in range(layers) if i not in nope]
    thetas = [0.0] * layers
    for j, i in enumerate(rope):
        thetas[i] = 10000.0 * (1 + min(j, (cfg.rotary_sets or 2) - 2))
    return dict(sliding_window=cfg.sliding_window or 128, layer_types=_layer_types(cfg),
                layer_rope_theta=thetas)


#: family -> its config.json, from the ModelConfig and its Llama fields.
LLAMA_VARIANT_DICTS: dict[str, Callable[[ModelConfig, dict[str, Any]], dict[str, Any]]] = {
    "olmo": _olmo, "olmo3": _olmo3, "olmoe": _olmoe, "exaone4": exaone4, "seed_oss": _seed_oss,
    "helium": _helium, "arcee": _arcee, "apertus": _apertus, "glm4": _glm4, "ernie4_5": _ernie4_5,
    "glm4_moe": _glm4_moe, "minimax_m2": _minimax_m2, "dots1": _dots1,
    "hunyuan_v1_dense": _hunyuan_v1_dense, "hunyuan_v1_moe": _hunyuan_v1_moe, "glm": _glm4,
    "exaone_moe": _exaone_moe, "granite_swa": _granite_swa, "bitnet": _bitnet, "diffllama": _diffllama,
    "doge": _doge, **GEMMA4_DICTS,
}
