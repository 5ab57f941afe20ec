"""config.json reader of NVIDIA's hybrid Mamba-2 / Transformer models (model_type "nemotron_h":
Nemotron-H, Nemotron Nano 2, Nemotron 3; NemotronHForCausalLM).

A nemotron_h layer (transformers 5.24, models/nemotron_h/modeling_nemotron_h.py, NemotronHBlock) is
one RMSNorm, one mixer and a residual add. The mixer is the layer's type (layers_block_type, or the
legacy hybrid_override_pattern's characters): a Mamba-2 mixer (M, "linear_attention"), attention
without RoPE and without biases (*, "full_attention"), a non-gated squared-ReLU MLP (-, "mlp") or a
mixture of experts (E, "moe": DeepSeek-V3's sigmoid router with groups, non-gated relu2 experts
and one shared relu2 MLP of moe_shared_expert_intermediate_size). Defaults are those of
transformers 5.24's NemotronHConfig. The head is never tied to the embeddings, whatever
tie_word_embeddings says (the class ties no weights). moe_latent_size (Nemotron 3 Super and Ultra's
LatentMoE): the routed experts read and write that width, fc1_latent_proj (d -> latent) before them
and fc2_latent_proj after, the router and the shared expert on d (NemotronHMoE). Refused:
activations other than relu2 (MLP) and silu (Mamba), which the blocks do not model.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS
from .hf_fields import LLAMA_NAMES, Fields

#: NemotronHConfig's defaults (transformers 5.24) for the fields read here.
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=131072, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
    max_position_embeddings=4096, intermediate_size=21504, mlp_hidden_act="relu2", mlp_bias=False,
    ssm_state_size=128, mamba_num_heads=128, mamba_head_dim=64,
    mamba_hidden_act="silu", n_groups=8, conv_kernel=4, chunk_size=128, use_conv_bias=True,
    use_bias=False, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=7688,
    moe_shared_expert_intermediate_size=7688, norm_topk_prob=True,
    layers_block_type=["linear_attention", "moe", "full_attention", "mlp"],
)
#: A layer type (and its legacy names, transformers' remap_legacy_layer_types) -> ModelConfig's mixer.
_MIXERS = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "attention",
           "attention": "attention", "mlp": "mlp", "moe": "moe"}
#: hybrid_override_pattern's characters (NemotronHConfig._pattern_to_list).
_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
#: Fields NemotronHConfig also reads under older names (its __post_init__).
_LEGACY = {"n_groups": "mamba_n_groups", "conv_kernel": "mamba_d_conv", "chunk_size": "mamba_chunk_size",
           "use_conv_bias": "mamba_conv_bias"}


def _layers(f: Fields) -> tuple[str, ...]:
    """Each layer's mixer, as NemotronHConfig resolves it: layers_block_type (or layer_types)
    first, else hybrid_override_pattern, else the class's default four layers; num_hidden_layers
    is ignored (the class derives it from the list)."""
    types = f.data.get("layers_block_type", f.data.get("layer_types"))
    pattern = f.data.get("hybrid_override_pattern")
    if types is None and pattern is not None:
        if not isinstance(pattern, str) or not pattern or set(pattern) - set(_PATTERN):
            raise ConfigError(f"{f.source}: hybrid_override_pattern must be a string of M, *, - and E, "
                              f"got {show(pattern)}.")
        return tuple(_PATTERN[c] for c in pattern)
    types = _DEFAULTS["layers_block_type"] if types is None else types
    if (not isinstance(types, list) or not types or len(types) > MAX_LAYERS
            or any(not isinstance(t, str) or t not in _MIXERS for t in types)):
        raise ConfigError(f"{f.source}: layers_block_type must list mamba/linear_attention, "
                          f"attention/full_attention, mlp or moe for each layer, got {show(types)}.")
    return tuple(_MIXERS[t] for t in types)


def _get(f: Fields, key: str, kind: type = int, minimum: int | None = None) -> Any:
    """A field under its name or NemotronHConfig's older one (the older name wins, as there)."""
    key = _LEGACY[key] if _LEGACY.get(key) in f.data else key
    default = _DEFAULTS[key if key in _DEFAULTS else next(k for k, v in _LEGACY.items() if v == key)]
    return f.get(key, default, kind, minimum) if minimum is not None else f.get(key, default, kind)


def _nemotron_h(f: Fields, name: str) -> ModelConfig:
    """nemotron_h: see the module docstring. n_routed_experts' mapped name num_local_experts wins."""
    layers = _layers(f)
    for key, allowed in (("mlp_hidden_act", "relu2"), ("mamba_hidden_act", "silu")):
        if f.get(key, _DEFAULTS[key], str) != allowed:
            raise ConfigError(f"{f.source}: {key} {show(f.data[key])} is not modelled for nemotron_h "
                              f"(only {allowed}).")
    mamba = "mamba" in layers
    experts = "moe" in layers
    n_experts = f.get("num_local_experts", _get(f, "n_routed_experts"), minimum=1)
    return ModelConfig(
        name=name, family="nemotron_h", vocab_size=f.get("vocab_size", _DEFAULTS["vocab_size"]),
        d_model=_get(f, "hidden_size", minimum=1), n_heads=_get(f, "num_attention_heads", minimum=1),
        # absent: the class's 8; null: every query head (NemotronHConfig.__post_init__)
        n_kv_heads=(_get(f, "num_attention_heads") if f.data.get("num_key_value_heads", 0) is None
                    else _get(f, "num_key_value_heads", minimum=1)),
        d_head=_get(f, "head_dim"), d_ff=_get(f, "intermediate_size"),
        n_decoder_layers=len(layers), max_positions=_get(f, "max_position_embeddings"),
        position="none", norm="rmsnorm", norm_position="pre", activation="relu2",
        qkv_bias=False, out_bias=False, ffn_bias=_get(f, "mlp_bias", bool), lm_head_bias=False,
        head="lm", tie_embeddings=False,  # NemotronHForCausalLM._tied_weights_keys = {}: never tied
        n_experts=n_experts if experts else 0,
        top_k=_get(f, "num_experts_per_tok", minimum=1) if experts else 0,
        d_expert=_get(f, "moe_intermediate_size") if experts else None,
        d_shared=_get(f, "moe_shared_expert_intermediate_size") if experts else 0,
        d_latent=f.nullable("moe_latent_size", None) if experts else None,  # the class's None: no latent
        router="sigmoid" if experts else "softmax",
        renormalize_top_k=_get(f, "norm_topk_prob", bool) if experts else True,
        mixer_layers=True, layer_pattern=layers,
        mamba_heads=_get(f, "mamba_num_heads") if mamba else None,
        mamba_head_dim=_get(f, "mamba_head_dim") if mamba else None,
        ssm_state=_get(f, "ssm_state_size") if mamba else None,
        mamba_groups=_get(f, "n_groups") if mamba else None,
        conv_kernel=_get(f, "conv_kernel") if mamba else None,
        chunk_size=_get(f, "chunk_size") if mamba else None,
        mamba_bias=_get(f, "use_bias", bool), conv_bias=_get(f, "use_conv_bias", bool),
        mtp_pattern=_mtp_pattern(f), mtp_repeated_layer=f.get("mtp_use_repeated_layer", False, bool),
    )


def _mtp_pattern(f: Fields) -> tuple[str, ...] | None:
    """The multi-token-prediction layer's mixers (mtp_hybrid_override_pattern, as Megatron-Bridge's
    NemotronHBridge reads it from a config.json: nemotron_h_bridge.py at 067f987d); used only
    where training sets mtp_layers (`--mtp`)."""
    pattern = f.data.get("mtp_hybrid_override_pattern")
    if pattern is None:
        return None
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(_PATTERN):
        raise ConfigError(f"{f.source}: mtp_hybrid_override_pattern must be a string of M, *, - and E, "
                          f"got {show(pattern)}.")
    return tuple(_PATTERN[c] for c in pattern)


#: model_type -> its reader.
NEMOTRON_H_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"nemotron_h": _nemotron_h}

#: The transformers class, for a config.json that names `architectures` only.
NEMOTRON_H_ARCHITECTURES: dict[str, str] = {"NemotronHForCausalLM": "nemotron_h"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
NEMOTRON_H_NAMES: dict[str, dict[str, Any]] = {"nemotron_h": {
    **LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
    "d_expert": "moe_intermediate_size", "d_shared": "moe_shared_expert_intermediate_size",
    "d_latent": "moe_latent_size",
    "mamba_heads": "mamba_num_heads", "ssm_state": "ssm_state_size", "mamba_groups": "n_groups",
    "layer_pattern": "layers_block_type"}}
