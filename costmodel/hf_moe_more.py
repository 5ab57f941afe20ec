"""config.json readers of two mixture-of-experts families whose blocks exist here under other names:
GLM-4.5/4.6 (glm4_moe: DeepSeek-V3's decoder layers with grouped-query attention in place of
latent attention) and MiniMax-M2 (minimax_m2: Mixtral's sparse layers with a sigmoid router and
OLMo 2's whole-projection q/k norms). Each reads Llama's fields through hf.py's Llama reader
(with its own defaults) and then sets what its code does otherwise. costmodel/hf.py dispatches on
model_type. Defaults are those of transformers 5.24's configuration classes
(models/glm4_moe/configuration_glm4_moe.py, models/minimax_m2/configuration_minimax_m2.py)."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader

#: transformers 5.24's defaults for the Llama fields each family reads (its configuration class).
#: Glm4MoeConfig has no head_dim field: its attention takes the config's head_dim where one is
#: given, else hidden_size // num_attention_heads (Glm4MoeAttention.__init__).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "glm4_moe": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                     num_key_value_heads=8),
    "minimax_m2": dict(max_position_embeddings=196608, hidden_act="silu", tie_word_embeddings=False,
                       num_key_value_heads=8, head_dim=128),
}


def _silu(f: Fields, family: str) -> None:
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {family}.")


def _no_null_head_dim(f: Fields, family: str) -> None:
    if "head_dim" in f.data and f.data["head_dim"] is None:
        raise ConfigError(f"{f.source}: head_dim null is not modelled for {family} (transformers "
                          "5.24 cannot build it: the attention sizes its projections by "
                          "config.head_dim); give a width or leave the field out.")


def _with_head_dim(f: Fields) -> Fields:
    """The fields with head_dim as the attention reads it: the config's, else hidden_size //
    num_attention_heads (floor division, as transformers computes it)."""
    _no_null_head_dim(f, "glm4_moe")
    if "head_dim" in f.data:
        return f
    heads = f.get("num_attention_heads", minimum=1)
    return Fields(dict(f.data, head_dim=f.get("hidden_size") // heads), f.source)


def _rotary_dim(f: Fields, d_head: int, default: float, legacy_rotary_dim: bool) -> int | None:
    """The dimensions of each head RoPE rotates (None: all of them). The factor as transformers
    5.24 resolves it: rope_parameters (or the legacy rope_scaling) first, the top-level
    partial_rotary_factor, then (MiniMax-M2's released files) rotary_dim / head_dim, then the
    family's default. compute_default_rope_parameters builds int(head_dim * factor) = r and
    arange(0, r, 2): ceil(r / 2) frequencies, whose cos and sin (each frequency twice) rotate
    the first 2 ceil(r / 2) dimensions; an odd r rotates one more."""
    factor: Any = None
    for key in ("rope_parameters", "rope_scaling"):
        rope = f.data.get(key)
        if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
            factor = rope["partial_rotary_factor"]
            break
    else:
        if f.data.get("partial_rotary_factor") is not None:
            factor = f.data["partial_rotary_factor"]
        elif legacy_rotary_dim and f.data.get("rotary_dim") is not None:
            rotary_dim = f.get("rotary_dim", minimum=1)
            if rotary_dim > d_head:
                raise ConfigError(f"{f.source}: rotary_dim ({rotary_dim}) is wider than head_dim "
                                  f"({d_head}), which RoPE cannot rotate.")
            factor = rotary_dim / d_head
        else:
            factor = default
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor must be in (0, 1], got {show(factor)}.")
    rotary = int(d_head * factor)
    rotary += rotary % 2
    if rotary < 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor {show(factor)} of head_dim {d_head} "
                          "leaves no dimension to rotate, which is not modelled.")
    return None if rotary >= d_head else rotary


def _glm4_moe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GLM-4.5/4.6 (Glm4MoeForCausalLM): DeepSeek-V3's decoder layers (DeepseekV3DecoderLayer,
    its MLP, TopkRouter and MoE) with Cohere-style attention: attention_bias on q, k and v (o has
    none), an RMSNorm on each query and key head where use_qk_norm, and RoPE (rotate_half) on
    partial_rotary_factor of each head (0.5 by default). The first first_k_dense_replace layers
    are dense MLPs of intermediate_size; the rest route each token to num_experts_per_tok of
    n_routed_experts experts of moe_intermediate_size (an fp32 sigmoid router with
    e_score_correction_bias, group-limited top-k, renormalised where norm_topk_prob, times
    routed_scaling_factor) beside n_shared_experts shared experts as one MLP of their summed
    width. num_nextn_predict_layers (its multi-token-prediction layer) is not built by the class:
    transformers 5.24 loads it apart, as MtpModel, only for generate(use_mtp=True), and
    Glm4MoePreTrainedModel ignores its weights (model.layers.92 / 46) when loading, so it is not
    counted."""
    _silu(f, "glm4_moe")
    f = _with_head_dim(f)
    base = llama.read(f, name, "llama", _DEFAULTS["glm4_moe"])
    layers = base.n_decoder_layers
    experts = f.get("num_local_experts", f.get("n_routed_experts", 128))  # the mapped name wins
    check_int(f.source, "n_routed_experts", experts, minimum=1)
    groups = f.get("n_group", 1, minimum=1)
    if experts % groups:
        raise ConfigError(f"{f.source}: n_routed_experts ({experts}) is not divisible by n_group "
                          f"({groups}), which Glm4MoeTopkRouter's group view cannot run.")
    first_dense = min(f.get("first_k_dense_replace", 1), layers)
    moe = list(range(first_dense, layers))
    changes: dict[str, Any] = dict(
        family="glm4_moe", qkv_bias=f.get("attention_bias", False, bool), out_bias=False,
        ffn_bias=False, qk_norm=f.get("use_qk_norm", False, bool),
        rotary_dim=_rotary_dim(f, base.d_head, 0.5, legacy_rotary_dim=False))
    if moe:
        width = f.get("moe_intermediate_size", 1408)
        changes.update(n_experts=experts, top_k=f.get("num_experts_per_tok", 8), d_expert=width,
                       d_shared=width * f.get("n_shared_experts", 1), router="sigmoid",
                       n_dense_layers=first_dense,
                       renormalize_top_k=f.get("norm_topk_prob", True, bool),
                       layer_pattern=llama.pattern(layers, [], moe))
    return base.replace(**changes)


def _minimax_m2(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """MiniMax-M2 (MiniMaxM2ForCausalLM): Mixtral's layers in which every MLP is top
    num_experts_per_tok of num_local_experts SwiGLU experts of intermediate_size, chosen by a
    sigmoid router (a linear in the model's dtype, sigmoid in fp32, e_score_correction_bias, a
    buffer in the model's dtype, added for the choice only, the chosen weights always
    renormalised); attention without biases (attention_bias is not read), an RMSNorm over the
    whole query and the whole key projection before RoPE (OLMo 2's, whatever use_qk_norm says:
    the class always builds them), RoPE (rotate_half) on rotary_dim of each head_dim (released
    files) or partial_rotary_factor (all by default), and no sliding window."""
    _silu(f, "minimax_m2")
    jitter = f.get("router_jitter_noise", 0.0, float)
    if jitter:
        raise ConfigError(f"{f.source}: router_jitter_noise {show(jitter)} (the MoE input "
                          "multiplied in place by uniform noise in training) is not modelled; "
                          "set it to 0.")
    _no_null_head_dim(f, "minimax_m2")
    experts = f.get("num_experts", f.get("num_local_experts", 256))  # the mapped name wins
    check_int(f.source, "num_local_experts", experts, minimum=1)
    base = llama.read(f, name, "llama", _DEFAULTS["minimax_m2"])
    return base.replace(
        family="minimax_m2", qkv_bias=False, out_bias=False, ffn_bias=False, qk_norm=True,
        qk_norm_whole=True, rotary_dim=_rotary_dim(f, base.d_head, 1.0, legacy_rotary_dim=True),
        n_experts=experts,
        top_k=f.get("num_experts_per_tok", 8), router="sigmoid", renormalize_top_k=True)


#: model_type -> its reader (hf.py passes its LlamaReader).
MOE_MORE_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "glm4_moe": _glm4_moe, "minimax_m2": _minimax_m2,
}

#: The transformers class of each, for a config.json that names `architectures` only.
MOE_MORE_ARCHITECTURES: dict[str, str] = {
    "Glm4MoeForCausalLM": "glm4_moe", "MiniMaxM2ForCausalLM": "minimax_m2",
}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
MOE_MORE_NAMES: dict[str, dict[str, str]] = {
    "glm4_moe": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                 "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"},
    "minimax_m2": {**LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok"},
}
