"""config.json reader of DeepSeek-V4 (deepseek_v4, DeepseekV4ForCausalLM), read as transformers 5.24's
configuration class reads it (models/deepseek_v4/configuration_deepseek_v4.py: its defaults are
V4-Flash's shapes; layer_types from compress_ratios or the default of two HCA layers then CSA and
HCA alternating; mlp_layer_types' hash_moe layers cost what moe layers do: the same gate matmul, the
expert choice a frozen buffer). The layers are costmodel/blocks/deepseek_v4.py's."""

from __future__ import annotations

import math
from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import Fields
from .model_choices import SINKHORN_ITERS

#: DeepseekV4Config's attention kinds and their legacy compress_ratios (0, 4, 128).
_SLIDING, _CSA, _HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
_RATIO_TYPES = {0: _SLIDING, 4: _CSA, 128: _HCA}


def _layer_types(f: Fields, layers: int) -> list[str]:
    """DeepseekV4Config.__post_init__'s layer_types: given, else from compress_ratios, else two
    HCA layers then HCA and CSA alternating (HCA first); cut to the layer count."""
    types = f.data.get("layer_types")
    ratios = f.data.get("compress_ratios")
    if types is None and ratios is not None:
        if not isinstance(ratios, list) or any(not isinstance(r, int) or r not in _RATIO_TYPES for r in ratios):
            raise ConfigError(f"{f.source}: compress_ratios must be a list of 0, 4 and 128, got {show(ratios)}.")
        types = [_RATIO_TYPES[r] for r in ratios]
    if types is None:
        types = [_HCA] * min(layers, 2) + [_CSA if i % 2 else _HCA for i in range(max(layers - 2, 0))]
    if not isinstance(types, list) or len(types) < layers or any(t not in (_SLIDING, _CSA, _HCA) for t in types):
        raise ConfigError(f"{f.source}: layer_types must list one of {_SLIDING}, {_CSA} or {_HCA} for each of the "
                          f"{layers} layers, got {show(types)}.")
    return types[:layers]


def _rates(f: Fields) -> tuple[int, int]:
    """compress_rates (CSA's, HCA's), the legacy compress_rate_csa / compress_rate_hca winning."""
    rates = f.data.get("compress_rates") or {}
    if not isinstance(rates, dict):
        raise ConfigError(f"{f.source}: compress_rates must be a dict by layer type, got {show(rates)}.")
    csa = f.data.get("compress_rate_csa", rates.get(_CSA, 4))
    hca = f.data.get("compress_rate_hca", rates.get(_HCA, 128))
    for key, value in (("compress_rates' " + _CSA, csa), ("compress_rates' " + _HCA, hca)):
        check_int(f.source, key, value, minimum=1)
    return csa, hca


def _deepseek_v4(f: Fields, name: str) -> ModelConfig:
    """DeepSeek-V4 (see the module docstring; blocks/deepseek_v4.py). Refused in one line: a
    hidden_act other than silu, mlp_bias (the shared expert's biases), n_shared_experts other than 1
    (DeepseekV4MLP builds one shared expert of moe_intermediate_size whatever it says), o_groups not
    dividing num_attention_heads x head_dim, a rotary width that is odd, hc_sinkhorn_iters other than
    20 (blocks/deepseek_v4.py SINKHORN_ITERS: each iteration's divisions keep their inputs). num_key_value_heads is not
    read (one key = value head always), nor attention_bias (no attention bias is built); the MTP layer
    (num_nextn_predict_layers) is not built by the class and not counted."""
    layers = f.get("num_hidden_layers", 43)
    check_int(f.source, "num_hidden_layers", layers, maximum=MAX_LAYERS)
    if f.get("hidden_act", "silu", str) != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(f.data['hidden_act'])} for deepseek_v4.")
    if f.get("mlp_bias", False, bool):
        raise ConfigError(f"{f.source}: mlp_bias is not modelled for deepseek_v4 (its shared expert's biases).")
    if f.get("hc_sinkhorn_iters", SINKHORN_ITERS) != SINKHORN_ITERS:
        raise ConfigError(f"{f.source}: hc_sinkhorn_iters {show(f.data['hc_sinkhorn_iters'])} is not modelled for "
                          f"deepseek_v4 (its bytes saved for backward assume DeepseekV4Config's {SINKHORN_ITERS}).")
    if f.get("n_shared_experts", 1) != 1:
        raise ConfigError(f"{f.source}: n_shared_experts {show(f.data['n_shared_experts'])} is not modelled for "
                          "deepseek_v4: DeepseekV4MLP builds one shared expert of moe_intermediate_size whatever "
                          "it says.")
    heads, head_dim = f.get("num_attention_heads", 64, minimum=1), f.get("head_dim", 512, minimum=1)
    groups = f.get("o_groups", 8, minimum=1)
    if heads * head_dim % groups:
        raise ConfigError(f"{f.source}: o_groups ({groups}) does not divide num_attention_heads x head_dim "
                          f"({heads * head_dim}).")
    factor = f.get("partial_rotary_factor", None, float)
    if factor is not None and not math.isfinite(factor):
        raise ConfigError(f"{f.source}: partial_rotary_factor must be a finite number, got {show(factor)}.")
    rope = f.get("qk_rope_head_dim", None)
    rotary = int(head_dim * factor) if factor is not None else rope if rope is not None else head_dim * 64 // 512
    if rotary % 2 or not 0 < rotary <= head_dim:
        raise ConfigError(f"{f.source}: the rotary width ({rotary}, head_dim x partial_rotary_factor) must be "
                          f"even and between 2 and head_dim ({head_dim}).")
    types = _layer_types(f, layers)
    csa_rate, hca_rate = _rates(f)
    expert_width = f.get("moe_intermediate_size", 2048, minimum=1)
    return ModelConfig(
        name=name, family="deepseek_v4", vocab_size=f.get("vocab_size", 129280), d_model=f.get("hidden_size", 4096),
        n_heads=heads, n_kv_heads=1, d_head=head_dim, d_ff=expert_width, n_decoder_layers=layers,
        max_positions=f.get("max_position_embeddings", 1048576), position="rope", rotary_dim=rotary,
        norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=False, out_bias=False, ffn_bias=False,
        head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        sliding_window=f.get("sliding_window", 128, minimum=1), q_lora_rank=f.get("q_lora_rank", 1024, minimum=1),
        n_experts=f.get("n_routed_experts", 256, minimum=1), top_k=f.get("num_experts_per_tok", 6, minimum=1),
        d_expert=expert_width, d_shared=expert_width, router="sigmoid",
        renormalize_top_k=True, attention_sinks=True,
        index_n_heads=f.get("index_n_heads", 64, minimum=1), index_head_dim=f.get("index_head_dim", 128, minimum=1),
        hyper_streams=f.get("hc_mult", 4, minimum=1), output_groups=groups,
        output_rank=f.get("o_lora_rank", 1024, minimum=1),
        csa_layers=types.count(_CSA), hca_layers=types.count(_HCA), csa_rate=csa_rate, hca_rate=hca_rate,
        layer_pattern=tuple({_SLIDING: "sliding", _CSA: "csa", _HCA: "hca"}[t] for t in types),
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


#: model_type -> its reader.
DEEPSEEK_V4_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"deepseek_v4": _deepseek_v4}

#: transformers class -> model_type.
DEEPSEEK_V4_ARCHITECTURES: dict[str, str] = {"DeepseekV4ForCausalLM": "deepseek_v4"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
DEEPSEEK_V4_NAMES: dict[str, dict[str, Any]] = {"deepseek_v4": {
    "vocab_size": "vocab_size", "d_model": "hidden_size", "n_heads": "num_attention_heads", "d_head": "head_dim",
    "d_ff": "moe_intermediate_size", "n_decoder_layers": "num_hidden_layers", "sliding_window": "sliding_window",
    "q_lora_rank": "q_lora_rank", "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
    "d_expert": "moe_intermediate_size", "index_n_heads": "index_n_heads", "index_head_dim": "index_head_dim",
    "hyper_streams": "hc_mult", "output_groups": "o_groups", "output_rank": "o_lora_rank",
    "max_positions": "max_position_embeddings"}}
