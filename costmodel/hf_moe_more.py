"""config.json readers of mixture-of-experts families whose blocks exist here under other names:
GLM-4.5/4.6 (glm4_moe: DeepSeek-V3's decoder layers with grouped-query attention in place of
latent attention), dots.llm1 (dots1: the same layers with Qwen3's attention), GLM-4.7-Flash
(glm4_moe_lite: DeepSeek-V3's layers, latent attention included, under its own field defaults),
EXAONE-MoE (exaone_moe: EXAONE 4.0's attention and windows in pre-norm layers with DeepSeek-V3's
MoE) and MiniMax-M2 (minimax_m2: Mixtral's sparse layers with a sigmoid router and OLMo 2's
whole-projection q/k norms). Each reads Llama's fields through hf_llama.py's Llama reader (with its own
defaults) and then sets what its code does otherwise. costmodel/hf.py dispatches on model_type.
Defaults are those of transformers 5.24's configuration classes
(models/glm4_moe/configuration_glm4_moe.py, models/dots1/configuration_dots1.py,
models/glm4_moe_lite/configuration_glm4_moe_lite.py, models/minimax_m2/configuration_minimax_m2.py)"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader, exaone4_windows

#: transformers 5.24's defaults for the Llama fields each family reads (its configuration class).
#: Glm4MoeConfig has no head_dim field: its attention takes the config's head_dim where one is
#: given, else hidden_size // num_attention_heads (Glm4MoeAttention.__init__).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "glm4_moe": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                     num_key_value_heads=8),
    "minimax_m2": dict(max_position_embeddings=196608, hidden_act="silu", tie_word_embeddings=False,
                       num_key_value_heads=8, head_dim=128),
    # Dots1Config: no head_dim field either (Qwen3Attention's getattr falls back to hidden/heads).
    "dots1": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False,
                  num_key_value_heads=32),
    "hunyuan_v1_moe": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    # ExaoneMoeConfig: Exaone4Config's fields (no head_dim: ExaoneMoeAttention's getattr falls back
    # to hidden/heads) and DeepSeek-V3's MoE under its own names.
    "exaone_moe": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False,
                       num_key_value_heads=32),
}

#: Glm4MoeLiteConfig's defaults for the fields DeepSeek-V3's reader (costmodel/hf.py) reads with
#: DeepseekV3Config's own defaults otherwise: a field the config.json leaves out takes these.
_GLM4_MOE_LITE = dict(max_position_embeddings=202752, hidden_act="silu", tie_word_embeddings=False,
                      num_key_value_heads=20, n_shared_experts=1, n_routed_experts=64,
                      moe_intermediate_size=1536, kv_lora_rank=512, q_lora_rank=768,
                      qk_rope_head_dim=64, v_head_dim=256, qk_nope_head_dim=192, n_group=1,
                      topk_group=1, num_experts_per_tok=4, norm_topk_prob=True)


def _silu(f: Fields, family: str) -> None:
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {family}.")


def _no_null_head_dim(f: Fields, family: str) -> None:
    if "head_dim" in f.data and f.data["head_dim"] is None:
        raise ConfigError(f"{f.source}: head_dim null is not modelled for {family} (transformers "
                          "5.24 cannot build it: the attention sizes its projections by "
                          "config.head_dim); give a width or leave the field out.")


def _with_head_dim(f: Fields, family: str = "glm4_moe") -> Fields:
    """The fields with head_dim as the attention reads it: the config's, else hidden_size //
    num_attention_heads (floor division, as transformers computes it)."""
    _no_null_head_dim(f, family)
    if "head_dim" in f.data:
        return f
    heads = f.get("num_attention_heads", minimum=1)
    return Fields(dict(f.data, head_dim=f.get("hidden_size") // heads), f.source)


def partial_rotary_dim(f: Fields, d_head: int, default: float, legacy_rotary_dim: bool) -> int | None:
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
    experts = f.get("num_local_experts", f.get("n_routed_experts", 128))  # the mapped name wins
    changes = _deepseek_experts(f, base.n_decoder_layers, experts, llama, first_dense=1,
                                width=1408, top_k=8, shared=1, renormalize=True)
    return base.replace(family="glm4_moe", qkv_bias=f.get("attention_bias", False, bool),
                        out_bias=False, ffn_bias=False, qk_norm=f.get("use_qk_norm", False, bool),
                        rotary_dim=partial_rotary_dim(f, base.d_head, 0.5, legacy_rotary_dim=False),
                        **changes)


def _deepseek_experts(f: Fields, layers: int, experts: Any, llama: LlamaReader, first_dense: int,
                      width: int, top_k: int | None, shared: int | None,
                      renormalize: bool) -> dict[str, Any]:
    """The ModelConfig fields of DeepSeek-V3's MoE layers (DeepseekV3MoE, TopkRouter and MLP,
    which Glm4Moe* and Dots1* reuse) from the config's fields, each with the family's default:
    the first first_k_dense_replace layers dense MLPs of intermediate_size, the rest top
    num_experts_per_tok of n_routed_experts experts of moe_intermediate_size (an fp32 sigmoid
    router with e_score_correction_bias, group-limited top-k over n_group groups, renormalised
    where norm_topk_prob, times routed_scaling_factor) beside n_shared_experts shared experts
    as one MLP of their summed width. No expert layer: {} (a dense model)."""
    first_dense = min(f.get("first_k_dense_replace", first_dense), layers)
    moe = list(range(first_dense, layers))
    if not moe:
        return {}
    top_k = f.get("num_experts_per_tok", top_k)
    shared = f.get("n_shared_experts", shared)
    for key, value in (("n_routed_experts", experts), ("num_experts_per_tok", top_k),
                       ("n_shared_experts", shared)):
        if value is None:  # Dots1Config's defaults: its MoE layers cannot be built without them
            raise ConfigError(f"{f.source}: {key} is null but layers {first_dense}-{layers - 1} "
                              "have experts, which transformers 5.24 cannot build; give it.")
    check_int(f.source, "n_routed_experts", experts, minimum=1)
    groups = f.get("n_group", 1, minimum=1)
    if experts % groups:
        raise ConfigError(f"{f.source}: n_routed_experts ({experts}) is not divisible by n_group "
                          f"({groups}), which the TopkRouter's group view cannot run.")
    width = f.get("moe_intermediate_size", width)
    return dict(n_experts=experts, top_k=top_k, d_expert=width, d_shared=width * shared,
                router="sigmoid", n_dense_layers=first_dense,
                renormalize_top_k=f.get("norm_topk_prob", renormalize, bool),
                layer_pattern=llama.pattern(layers, [], moe))


def _dots1(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """dots.llm1 (Dots1ForCausalLM): DeepSeek-V3's decoder layers, MoE and MLP (as GLM-4.5's, see
    _deepseek_experts; by default every layer has experts, first_k_dense_replace 0) with Qwen3's
    attention: attention_bias on q, k, v and o, an RMSNorm on each query and key head before RoPE
    on the whole head, head_dim where given, else hidden/heads rounded down. Dots1Config's
    n_routed_experts, num_experts_per_tok and n_shared_experts default to null, which it cannot
    build, and are refused where a layer has experts. A sliding window (by default on the layers
    from max_window_layers on: none of the released 62) is not modelled and is refused."""
    _silu(f, "dots1")
    f = _with_head_dim(f, "dots1")
    base = llama.read(f, name, "llama", _DEFAULTS["dots1"])
    layers = base.n_decoder_layers
    window = f.nullable("sliding_window", 4096)
    types = llama.layer_types(f, layers)
    if types is None:
        first = f.get("max_window_layers", 62)
        types = ["sliding_attention" if window is not None and i >= first else "full_attention"
                 for i in range(layers)]
    if "sliding_attention" in types:
        raise ConfigError(f"{f.source}: sliding-window attention on dots1's layers (layer_types, "
                          "or sliding_window on the layers from max_window_layers on) is not "
                          "modelled; mark every layer full_attention.")
    experts = f.get("num_local_experts", f.get("n_routed_experts", None))  # the mapped name wins
    changes = _deepseek_experts(f, layers, experts, llama, first_dense=0, width=1408, top_k=None,
                                shared=None, renormalize=False)
    bias = f.get("attention_bias", False, bool)
    return base.replace(family="dots1", qkv_bias=bias, out_bias=bias, ffn_bias=False, qk_norm=True,
                        **changes)


def _exaone_moe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """EXAONE-MoE (ExaoneMoeForCausalLM, K-EXAONE): EXAONE 4.0's attention (no biases, an RMSNorm
    on each query and key head before RoPE, its windows and NoPE full layers: exaone4_windows) in
    OLMoE's pre-norm layer (input_layernorm and post_attention_layernorm, not EXAONE 4.0's
    norms after the sublayers), with DeepSeek-V3's MoE (_deepseek_experts) under its own names:
    num_experts (64), num_experts_per_tok (8), moe_intermediate_size (1024), num_shared_experts
    (1), norm_topk_prob (True); the dense layers are mlp_layer_types' "dense" ones, else the
    first first_k_dense_replace (1). Dense layers beside windows on only some layers (the class's
    defaults and K-EXAONE's: layer 0 dense and sliding) take Llama 4 Maverick's kinds (dense, moe
    with a window and RoPE, moe_nope without either); a dense full-attention (NoPE) layer beside
    expert layers is refused in one line, as is a null sliding_window (ExaoneMoeConfig's strict int
    refuses it)."""
    _silu(f, "exaone_moe")
    if "sliding_window" in f.data and f.data["sliding_window"] is None:
        raise ConfigError(f"{f.source}: sliding_window null is refused by transformers 5.24's "
                          "ExaoneMoeConfig (a whole number); give a window.")
    base = llama.read(f, name, "llama", _DEFAULTS["exaone_moe"])
    layers = base.n_decoder_layers
    windows = exaone4_windows(f, layers, llama, "ExaoneMoeModel")
    experts = f.get("num_experts", 64)
    check_int(f.source, "num_experts", experts, minimum=1)
    groups = f.get("n_group", 1, minimum=1)
    if experts % groups:
        raise ConfigError(f"{f.source}: num_experts ({experts}) is not divisible by n_group "
                          f"({groups}), which the TopkRouter's group view cannot run.")
    dense = dense_layers_first(f, layers, "exaone_moe", min(f.get("first_k_dense_replace", 1, minimum=0), layers))
    shared = f.get("num_shared_experts", 1, minimum=1)
    renamed = Fields(dict(f.data, first_k_dense_replace=dense, n_shared_experts=shared), f.source)
    changes = _deepseek_experts(renamed, layers, experts, llama, first_dense=dense, width=1024,
                                top_k=8, shared=shared, renormalize=True)
    if changes.get("n_dense_layers") and windows.get("window_layers"):
        # Llama 4 Maverick's and AFMoE's kinds: dense layers (sliding, RoPE), expert layers with a window
        # and RoPE, expert layers without either (NoPE)
        pattern = windows["layer_pattern"]
        if any(pattern[i] == "full" for i in range(dense)):
            raise ConfigError(f"{f.source}: a full-attention (NoPE) layer among exaone_moe's {dense} dense "
                              "layers (first_k_dense_replace or mlp_layer_types) is not modelled: its NoPE "
                              "layers must have experts.")
        changes["layer_pattern"] = tuple("dense" if i < dense else "moe" if kind == "sliding" else "moe_nope"
                                         for i, kind in enumerate(pattern))
    elif windows.get("layer_pattern") is not None:
        changes["layer_pattern"] = windows["layer_pattern"]
    return base.replace(family="exaone_moe", qkv_bias=False, out_bias=False, ffn_bias=False,
                        qk_norm=True, **{**windows, **changes})


def _glm4_moe_lite(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GLM-4.7-Flash (Glm4MoeLiteForCausalLM): DeepSeek-V3's model (DeepseekV3Attention, latent
    attention with rope_interleave; Glm4Moe's MoE, router and MLP, which are DeepSeek-V3's) read
    by DeepSeek-V3's reader under Glm4MoeLiteConfig's defaults, its mlp_layer_types (by default
    one dense layer, then sparse) as first_k_dense_replace. An mlp_layer_types that is not dense
    layers then sparse ones, and a partial_rotary_factor other than 1 (its rotary table would not
    be qk_rope_head_dim wide), are refused. Its MTP layer (model.layers.47, ignored on load) is
    not built by the class and not counted."""
    _silu(f, "glm4_moe_lite")
    if rotary_fraction(f) != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor {show(rotary_fraction(f))} is not "
                          "modelled for glm4_moe_lite (its latent attention rotates the whole "
                          "qk_rope_head_dim).")
    layers = f.get("num_hidden_layers")
    check_int(f.source, "num_hidden_layers", layers, minimum=1)
    dense = dense_layers_first(f, layers, "glm4_moe_lite", min(1, layers))  # the class's one dense layer
    data = {**_GLM4_MOE_LITE, **{k: v for k, v in f.data.items() if v is not None or k == "q_lora_rank"},
            "first_k_dense_replace": dense}
    if data.pop("head_dim", None) is not None:  # Glm4MoeLiteConfig maps it to qk_rope_head_dim
        data["qk_rope_head_dim"] = f.data["head_dim"]  # the mapped name wins
    base = llama.read(Fields(data, f.source), name, "deepseek_v3", _GLM4_MOE_LITE)
    return base.replace(family="glm4_moe_lite")


def _per_layer(f: Fields, key: str, default: int, layers: int) -> Any:
    """HunYuanMoEV1Config's moe_topk: one whole number, or a list of one per layer
    (HunYuanMoEV1Gate reads the layer's entry); a list must give every layer the same."""
    value = f.data.get(key, default)
    if isinstance(value, list):
        if len(value) != layers or len(set(map(repr, value))) > 1:
            raise ConfigError(f"{f.source}: {key} differing from layer to layer is not modelled "
                              f"for hunyuan_v1_moe; give one number (got {show(value)}).")
        value = value[0]
    check_int(f.source, key, value, minimum=1)
    return value


def _hunyuan_v1_moe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Hunyuan MoE (HunYuanMoEV1ForCausalLM, Hunyuan-A13B): Hunyuan dense's attention (Llama's,
    attention_bias on q, k, v and o, per-head q/k RMSNorms after RoPE) and in every layer top
    moe_topk of num_experts SwiGLU experts of intermediate_size (Mixtral's experts; the
    released files' moe_intermediate_size is not read by the class) chosen by a softmax over an
    fp32 router, the chosen weights always renormalised, beside a shared MLP of intermediate_size
    without a gate (HunYuanMoEV1MLP, no bias). A missing head_dim (the class's default null,
    which its attention cannot run) is refused."""
    _silu(f, "hunyuan_v1_moe")
    if f.data.get("head_dim") is None:
        raise ConfigError(f"{f.source}: head_dim is missing or null, which transformers 5.24's "
                          "HunYuanMoEV1Attention cannot run (it takes head_dim ** -0.5); give the "
                          "width of a head.")
    base = llama.read(f, name, "llama", _DEFAULTS["hunyuan_v1_moe"])
    layers = base.n_decoder_layers
    experts = f.get("num_experts", 1, minimum=1)  # an int: the class's strict field refuses a list
    top_k = _per_layer(f, "moe_topk", 1, layers)
    return base.replace(family="hunyuan_v1_moe", ffn_bias=False, qk_norm=True, n_experts=experts,
                        top_k=top_k, d_expert=base.d_ff, d_shared=base.d_ff, router="softmax",
                        renormalize_top_k=True)


def dense_layers_first(f: Fields, layers: int, family: str, unset: int) -> int:
    """The dense layers mlp_layer_types names, which must all come before the sparse ones
    (GLM-4.7-Flash's and DeepSeek-V3.2's classes); `unset` where the config has no list."""
    kinds = f.data.get("mlp_layer_types")
    if kinds is None:
        return unset
    if (not isinstance(kinds, list) or len(kinds) != layers
            or any(kind not in ("dense", "sparse") for kind in kinds)):
        raise ConfigError(f"{f.source}: mlp_layer_types must list dense or sparse for each of the "
                          f"{layers} layers.")
    dense = kinds.count("dense")
    if kinds != ["dense"] * dense + ["sparse"] * (layers - dense):
        raise ConfigError(f"{f.source}: mlp_layer_types with a dense layer after a sparse one is "
                          f"not modelled for {family} (dense layers first, then sparse ones).")
    return dense


def rotary_fraction(f: Fields) -> Any:
    """partial_rotary_factor as transformers 5.24 resolves it (rope_parameters first), 1 if none."""
    for key in ("rope_parameters", "rope_scaling"):
        rope = f.data.get(key)
        if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
            return rope["partial_rotary_factor"]
    return 1 if f.data.get("partial_rotary_factor") is None else f.data["partial_rotary_factor"]


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
        qk_norm_whole=True, rotary_dim=partial_rotary_dim(f, base.d_head, 1.0, legacy_rotary_dim=True),
        n_experts=experts,
        top_k=f.get("num_experts_per_tok", 8), router="sigmoid", renormalize_top_k=True)


#: model_type -> its reader (hf.py passes its LlamaReader).
MOE_MORE_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "glm4_moe": _glm4_moe, "minimax_m2": _minimax_m2, "dots1": _dots1,
    "glm4_moe_lite": _glm4_moe_lite, "hunyuan_v1_moe": _hunyuan_v1_moe, "exaone_moe": _exaone_moe,
}

#: The transformers class of each, for a config.json that names `architectures` only.
MOE_MORE_ARCHITECTURES: dict[str, str] = {
    "Glm4MoeForCausalLM": "glm4_moe", "MiniMaxM2ForCausalLM": "minimax_m2",
    "Dots1ForCausalLM": "dots1", "Glm4MoeLiteForCausalLM": "glm4_moe_lite",
    "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe", "ExaoneMoeForCausalLM": "exaone_moe",
}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
MOE_MORE_NAMES: dict[str, dict[str, str]] = {
    "glm4_moe": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                 "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"},
    "minimax_m2": {**LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok"},
    "dots1": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
              "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"},
    "glm4_moe_lite": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                      "d_expert": "moe_intermediate_size"},
    "hunyuan_v1_moe": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "moe_topk"},
    "exaone_moe": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
                   "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"},
}
