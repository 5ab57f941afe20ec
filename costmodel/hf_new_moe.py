"""config.json readers of mixture-of-experts families new in transformers 5.24 whose blocks exist
here under other names: Hy3 (hy_v3, tencent/Hy3-preview: Apertus' attention, DeepSeek-V3's dense
and sparse layers with a sigmoid router and a shared expert), AFMoE (afmoe, Arcee's Trinity:
Llama 4 Maverick's NoPE full layers beside RoPE sliding ones and dense ones, Gemma 2's four norms,
Qwen3-Next's attention output gate, a sigmoid router with a frozen bias), Laguna (laguna: the
same attention with a per-head softplus gate and RoPE per layer type, Hy3's dense and sparse
layers with an ungated shared MLP) and MiMo-V2-Flash (mimo_v2_flash: Qwen2's attention with
narrower values, twice the KV heads and a sink per head on its sliding layers, DeepSeek-V3's MoE
without a shared expert). Each reads Llama's fields through
hf_llama.py's Llama reader (with its own defaults) and then sets what its code does otherwise;
costmodel/hf.py dispatches on model_type. Defaults are those of transformers 5.24's configuration
classes (models/hy_v3, models/afmoe, models/laguna and models/mimo_v2_flash configuration_*.py).

Not read here, each for one reason (validate/FINDINGS.md, issue 18): longcat_flash (zero-compute
identity experts: a layer's FLOPs depend on how many tokens the router sends to them), hy_v4 (DeepSeek-V4's hyper-connections, hc_mult residual streams, have no
block here)."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields, rotary_fraction
from .hf_llama_variants import LlamaReader
from .hf_moe_more import partial_rotary_dim

#: HYV3Config's defaults (transformers 5.24) for the Llama fields its reader reads.
_HY_V3 = dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
              num_key_value_heads=8, head_dim=128)


def _sparse_layers(f: Fields, layers: int) -> list[int]:
    """The layers whose MLP has experts: mlp_layer_types' "sparse" ones (HYV3Config's default:
    the first layer dense, the rest sparse)."""
    kinds = f.data.get("mlp_layer_types")
    if kinds is None:
        return list(range(min(1, layers), layers))
    if (not isinstance(kinds, list) or len(kinds) != layers
            or any(kind not in ("dense", "sparse") for kind in kinds)):
        raise ConfigError(f"{f.source}: mlp_layer_types must list dense or sparse for each of the "
                          f"{layers} layers.")
    return [i for i, kind in enumerate(kinds) if kind == "sparse"]


def _require_expert_fields(f: Fields, sparse: list[int], **values: Any) -> None:
    """A null expert field (by its config.json name) where layers have experts, which the class
    cannot build: one sentence naming the first."""
    for key, value in values.items():
        if value is None:
            raise ConfigError(f"{f.source}: {key} is null but {len(sparse)} layers have experts, "
                              "which transformers 5.24 cannot build; give it.")


def _check_attention_fields(f: Fields, model_type: str, attention: str, whole_head: bool = True) -> None:
    """The refusals the three readers share: an activation other than silu, a null head_dim (the
    attention class sizes its projections by config.head_dim) and, where its RoPE rotates the whole
    head, a partial rotary factor."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {model_type}.")
    if whole_head and rotary_fraction(f, "partial_rotary_factor", 1.0) != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor is not modelled for {model_type} (its "
                          "apply_rotary_pos_emb rotates the whole head).")
    if f.data.get("head_dim", 1) is None:
        raise ConfigError(f"{f.source}: head_dim null is not modelled for {model_type} ({attention} "
                          "sizes its projections by config.head_dim); give a width.")


def _hy_v3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Hy3 (HYV3ForCausalLM): Apertus' attention (Llama's with attention_bias on q, k, v and o and
    an RMSNorm on each query and key head before RoPE on the whole head); each layer's MLP a
    SwiGLU of intermediate_size where mlp_layer_types says dense, else top num_experts_per_tok of
    num_experts SwiGLU experts of moe_intermediate_size chosen by an fp32 sigmoid router (an
    fp32 weight, e_score_correction_bias, an fp32 buffer, added for the choice only, the chosen
    weights always renormalised, times router_scaling_factor) beside one shared MLP of
    moe_intermediate_size * num_shared_experts (HYV3MLP takes `width or intermediate_size`, so a
    width of 0 is intermediate_size), the two added in fp32 where enable_moe_fp32_combine (casts
    that keep nothing for backward). mlp_bias (biases on the dense and shared MLPs, not the
    experts) and a partial rotary factor (Llama's rotation of the whole head cannot run it) are
    refused. The layers the checkpoint holds beyond num_hidden_layers (its MTP layer,
    model.layers.80, ignored on load) are not built and not counted."""
    _check_attention_fields(f, "hy_v3", "HYV3Attention")
    if f.get("mlp_bias", False, bool):
        raise ConfigError(f"{f.source}: mlp_bias (biases on hy_v3's dense and shared MLPs, not its "
                          "routed experts) is not modelled.")
    base = llama.read(f, name, "llama", _HY_V3)
    layers = base.n_decoder_layers
    sparse = _sparse_layers(f, layers)
    base = base.replace(family="hy_v3", qk_norm=True)
    if not sparse:
        return base
    experts = (f.nullable("num_local_experts", 192) if "num_local_experts" in f.data  # the mapped
               else f.nullable("num_experts", 192))  # name wins
    top_k = f.nullable("num_experts_per_tok", 8)
    shared = f.nullable("num_shared_experts", 1)
    _require_expert_fields(f, sparse, num_experts=experts, num_experts_per_tok=top_k, num_shared_experts=shared)
    check_int(f.source, "num_experts", experts, minimum=1)
    check_int(f.source, "num_shared_experts", shared, minimum=0)
    width = f.get("moe_intermediate_size", 1536, minimum=1)
    return base.replace(n_experts=experts, top_k=top_k, d_expert=width,
                        d_shared=width * shared or base.d_ff, router="sigmoid",
                        renormalize_top_k=True, n_dense_layers=layers - len(sparse),
                        layer_pattern=llama.pattern(layers, [], sparse))


#: AfmoeConfig's defaults (transformers 5.24) for the Llama fields its reader reads.
_AFMOE = dict(max_position_embeddings=16384, hidden_act="silu", tie_word_embeddings=False, head_dim=128)


def _afmoe_pattern(sliding: list[int], sparse: list[int], layers: int) -> tuple[str, ...] | None:
    """ModelConfig.layer_pattern of AFMoE's layers: "dense"/"moe"/"moe_nope" (Llama 4 Maverick's
    kinds) where dense and expert layers sit beside full (NoPE) ones, "sliding"/"full" where the
    layers are all dense or all experts, "dense"/"moe" where every layer slides."""
    slides, experts = set(sliding), set(sparse)
    full = len(sliding) < layers
    if full and 0 < len(sparse) < layers:
        return tuple("dense" if i not in experts else "moe" if i in slides else "moe_nope"
                     for i in range(layers))
    if full:
        return tuple("sliding" if i in slides else "full" for i in range(layers))
    return tuple("moe" if i in experts else "dense" for i in range(layers)) if 0 < len(sparse) < layers else None


def _afmoe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """AFMoE (AfmoeForCausalLM, Arcee's Trinity): Llama's attention (attention_bias on q, k, v and
    o) with an RMSNorm on each query and key head, RoPE on the sliding-window layers only (the
    full layers are NoPE: layer_types, by default every global_attn_every_n_layers-th layer
    full) and the attention's output times sigmoid(gate_proj(x)) (a d -> heads x head_dim linear
    without a bias) before o_proj; four RMSNorms a layer (before and after each sublayer, Gemma
    2's); the first num_dense_layers MLPs SwiGLUs of intermediate_size, the rest top
    num_experts_per_tok of num_experts SwiGLU experts of moe_intermediate_size by a sigmoid
    router (a linear in the model's dtype cast to fp32, expert_bias, a frozen fp32 parameter
    counted by parameters(), added for the choice only, the chosen weights always renormalised,
    times route_scale) beside a shared MLP of num_shared_experts experts; the embeddings times
    sqrt(hidden_size) where mup_enabled. Refused in one line: attention_bias (q, k, v and o
    would have biases, the gate none), a dense layer that is a full-attention (NoPE) layer
    beside expert layers, no sliding layer (no layer with RoPE), a null window or expert count
    where a layer needs it, a partial rotary factor."""
    _check_attention_fields(f, "afmoe", "AfmoeAttention")
    if f.get("attention_bias", False, bool):
        raise ConfigError(f"{f.source}: attention_bias is not modelled for afmoe (biases on q, k, v "
                          "and o beside an output gate without one).")
    base = llama.read(f, name, "llama", _AFMOE)
    layers = base.n_decoder_layers
    types = llama.layer_types(f, layers)
    if types is None:
        every = f.get("global_attn_every_n_layers", 4, minimum=1)
        types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(layers)]
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    if not sliding:
        raise ConfigError(f"{f.source}: no sliding_attention layer in afmoe's layer_types leaves no "
                          "layer with RoPE, which is not modelled.")
    window = f.nullable("sliding_window", 1024)
    if window is None:
        raise ConfigError(f"{f.source}: sliding_window is null but afmoe's layers {sliding[0]}... "
                          "slide, which transformers 5.24 cannot run; give a window.")
    check_int(f.source, "sliding_window", window, minimum=1)
    dense = f.nullable("num_dense_layers", 1)
    check_int(f.source, "num_dense_layers", dense, minimum=0)
    sparse = list(range(min(dense, layers), layers))
    if sparse and len(sparse) < layers and any(types[i] == "full_attention" for i in range(dense)):
        raise ConfigError(f"{f.source}: a full-attention (NoPE) layer among afmoe's first "
                          f"num_dense_layers ({dense}) dense layers is not modelled (its NoPE layers "
                          "must have experts).")
    changes: dict[str, Any] = dict(
        family="afmoe", qk_norm=True, post_sublayer_norm=True, attention_output_gate=True,
        scale_embeddings=f.get("mup_enabled", False, bool), sliding_window=window,
        window_layers=len(sliding) if len(sliding) < layers else None,
        nope_layers=layers - len(sliding), layer_pattern=_afmoe_pattern(sliding, sparse, layers))
    if sparse:
        experts = f.nullable("num_experts", 64)
        top_k = f.nullable("num_experts_per_tok", 6)
        shared = f.nullable("num_shared_experts", 2)
        _require_expert_fields(f, sparse, num_experts=experts, num_experts_per_tok=top_k,
                               num_shared_experts=shared)
        check_int(f.source, "num_experts", experts, minimum=1)
        check_int(f.source, "num_shared_experts", shared, minimum=0)
        width = f.get("moe_intermediate_size", 1408, minimum=1)
        changes.update(n_experts=experts, top_k=top_k, d_expert=width, d_shared=width * shared,
                       router="sigmoid", renormalize_top_k=True, n_dense_layers=layers - len(sparse))
    return base.replace(**changes)


#: LagunaConfig's defaults (transformers 5.24) for the Llama fields its reader reads.
_LAGUNA = dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
               num_key_value_heads=8, head_dim=128)
#: LagunaConfig's rope_parameters (one per layer type) when the config gives none.
_LAGUNA_ROPE = {"full_attention": 0.5, "sliding_attention": 1.0}


def _rotary_dim_by_type(f: Fields, types: list[str], d_head: int, model_type: str = "laguna",
                        factors: dict[str, float] = _LAGUNA_ROPE, absent: float = 1.0) -> int | None:
    """The rotated width of each head: rope_parameters is keyed by layer type (`factors` where the
    config gives none, `absent` where a type's dict has no factor; LagunaConfig's defaults: half of
    each head on the full layers, all of it on the sliding ones); every layer type present must
    rotate the same width."""
    rope = f.data.get("rope_parameters")
    widths = set()
    for kind in set(types):
        factor = factors[kind]
        if rope is not None:
            if not isinstance(rope, dict) or not isinstance(rope.get(kind), dict):
                raise ConfigError(f"{f.source}: {model_type}'s rope_parameters must hold one dict per layer "
                                  f"type ({kind} missing), as its rotary embedding reads it.")
            factor = rope[kind].get("partial_rotary_factor", absent)
        widths.add(partial_rotary_dim(Fields({"partial_rotary_factor": factor}, f.source), d_head, 1.0,
                                      legacy_rotary_dim=False))
    if len(widths) > 1:
        raise ConfigError(f"{f.source}: a partial_rotary_factor differing between {model_type}'s full and "
                          "sliding layers is not modelled (one rotated width for all layers).")
    return widths.pop()


def _laguna(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Laguna (LagunaForCausalLM): AFMoE's attention (per-head q/k RMSNorms, Llama's here) with RoPE
    (GLM's rotate-and-concatenate, partial_rotary_factor per layer type) on every layer, windows
    on the layer_types that slide (none by default), and the attention's output times
    softplus(g_proj(x)), one value per head (gating true or "per-head"); each layer's MLP a SwiGLU
    of intermediate_size where mlp_layer_types says dense (the first by default), else top
    num_experts_per_tok of num_experts SwiGLU experts of moe_intermediate_size by a sigmoid router
    (a linear in the model's dtype cast to fp32, e_score_correction_bias a frozen parameter
    counted by parameters(), the chosen weights renormalised and cast back), times
    moe_routed_scaling_factor, plus an ungated shared MLP of shared_expert_intermediate_size.
    Refused in one line: attention_bias (q, k, v and o with biases, g_proj without), a per-element
    gate (gating false or "per-element"), num_attention_heads_per_layer differing from
    num_attention_heads, the router's logit soft-capping, rotated widths that differ by layer
    type, a null head_dim or expert count."""
    _check_attention_fields(f, "laguna", "LagunaAttention", whole_head=False)
    if f.get("attention_bias", False, bool):
        raise ConfigError(f"{f.source}: attention_bias is not modelled for laguna (biases on q, k, v "
                          "and o beside a gate projection without one).")
    gating = f.data.get("gating", True)
    if gating is not True and gating != "per-head":
        raise ConfigError(f"{f.source}: gating {show(gating)} (a softplus gate on each channel) is not "
                          "modelled for laguna; the per-head gate (true or \"per-head\") is.")
    if f.get("moe_router_logit_softcapping", 0.0, float):
        raise ConfigError(f"{f.source}: moe_router_logit_softcapping (tanh soft-capping of the router's "
                          "logits) is not modelled for laguna; set it to 0.")
    base = llama.read(f, name, "llama", _LAGUNA)
    layers = base.n_decoder_layers
    heads = f.data.get("num_attention_heads_per_layer")
    if heads is not None and heads != [base.n_heads] * layers:
        raise ConfigError(f"{f.source}: num_attention_heads_per_layer other than num_attention_heads "
                          f"({base.n_heads}) on every layer is not modelled for laguna.")
    types = llama.layer_types(f, layers) or ["full_attention"] * layers
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    window = f.nullable("sliding_window", 512) if sliding else None
    if sliding and window is None:
        raise ConfigError(f"{f.source}: sliding_window is null but laguna's layer {sliding[0]} slides, "
                          "which transformers 5.24 cannot run; give a window.")
    sparse = _sparse_layers(f, layers)
    changes: dict[str, Any] = dict(
        family="laguna", qk_norm=True, attention_output_gate=True,
        rotary_dim=_rotary_dim_by_type(f, types, base.d_head), sliding_window=window,
        window_layers=len(sliding) if 0 < len(sliding) < layers else None,
        rotary_sets=len(set(types)), layer_pattern=llama.pattern(layers, sliding, sparse or None))
    if sparse:
        experts = f.nullable("num_experts", 256)
        top_k = f.nullable("num_experts_per_tok", 8)
        _require_expert_fields(f, sparse, num_experts=experts, num_experts_per_tok=top_k)
        check_int(f.source, "num_experts", experts, minimum=1)
        changes.update(n_experts=experts, top_k=top_k, d_expert=f.get("moe_intermediate_size", 512, minimum=1),
                       d_shared=f.get("shared_expert_intermediate_size", 512, minimum=0),
                       router="sigmoid", renormalize_top_k=True, n_dense_layers=layers - len(sparse))
    return base.replace(**changes)


#: MiMoV2FlashConfig's defaults (transformers 5.24) for the Llama fields its reader reads.
_MIMO = dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
             num_key_value_heads=4, head_dim=192)
#: MiMoV2FlashConfig's partial_rotary_factor by layer type (its rope_parameters' default, and
#: MiMoV2FlashRotaryEmbedding's where a type's dict has none).
_MIMO_ROPE = {"full_attention": 0.334, "sliding_attention": 0.334}


def _mimo_types(f: Fields, layers: int, llama: LlamaReader) -> list[str]:
    """layer_types, else MiMoV2FlashConfig's: layer 0 and every sixth full, the rest sliding."""
    return llama.layer_types(f, layers) or ["full_attention" if i == 0 or not (i + 1) % 6 else "sliding_attention"
                                            for i in range(layers)]


def _mimo_v2_flash(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """MiMo-V2-Flash (MiMoV2FlashForCausalLM): Qwen2's attention (attention_bias on q, k and v, o
    without) with head_dim-wide queries and keys, v_head_dim-wide values times
    attention_value_scale (1.0 where null: the product runs), and GLM's partial RoPE (0.334 of
    each head by default, per layer type); its sliding_attention layers hold twice
    num_key_value_heads (ModelConfig's n_kv_heads, the full layers' global_kv_heads) and a learned
    sink per query head, its full_attention layers neither; eager attention only (_supports_sdpa
    False), subtracting each row's maximum on every layer. Each layer's MLP a SwiGLU of
    intermediate_size where mlp_layer_types says dense (the first by default), else DeepSeek-V3's
    MoE without a shared expert: top num_experts_per_tok of n_routed_experts experts of
    moe_intermediate_size by a sigmoid router (an fp32 weight, an fp32 e_score_correction_bias
    buffer, group-limited top-k, renormalised where norm_topk_prob, times routed_scaling_factor).
    sliding_window_size (the released files' name) means a window one wider. Refused in one line:
    a dense layer that slides beside full expert layers, query heads not divisible by the sliding
    layers' KV heads, a null head_dim, v_head_dim or expert count."""
    _check_attention_fields(f, "mimo_v2_flash", "MiMoV2FlashAttention", whole_head=False)
    base = llama.read(f, name, "llama", _MIMO)
    layers, heads, kv = base.n_decoder_layers, base.n_heads, base.n_kv_heads
    types = _mimo_types(f, layers, llama)
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    sparse = _sparse_layers(f, layers)
    for key in ("v_head_dim", "sliding_window_size", "sliding_window"):
        if f.data.get(key, 0) is None and (key == "v_head_dim" or key == "sliding_window" and sliding
                                           and f.data.get("sliding_window_size") is None):
            raise ConfigError(f"{f.source}: {key} null is not modelled for mimo_v2_flash (its attention "
                              "sizes values and windows by it); give it.")
    window = (f.get("sliding_window_size", minimum=1) + 1 if f.data.get("sliding_window_size") is not None
              else f.get("sliding_window", 129, minimum=1))
    if sliding and heads % (2 * kv):
        raise ConfigError(f"{f.source}: num_attention_heads ({heads}) is not divisible by the sliding layers' "
                          f"2 x num_key_value_heads ({2 * kv}), which repeat_kv cannot run.")
    slides, experts = set(sliding), set(sparse)
    if sliding and 0 < len(sparse) < layers and any(i in slides for i in range(layers) if i not in experts):
        raise ConfigError(f"{f.source}: a dense (mlp_layer_types) layer with a sliding window beside "
                          "expert layers is not modelled for mimo_v2_flash (its dense layers must be full).")
    value_width = f.get("v_head_dim", 128, minimum=1)
    mixed = 0 < len(sliding) < layers
    changes: dict[str, Any] = dict(
        family="mimo_v2_flash", qkv_bias=f.get("attention_bias", False, bool), out_bias=False,
        ffn_bias=False, v_head_dim=value_width, value_scale=True,
        rotary_dim=_rotary_dim_by_type(f, types, base.d_head, "mimo_v2_flash", _MIMO_ROPE, 0.334),
        rotary_sets=len(set(types)), sliding_window=window if sliding else None,
        window_layers=len(sliding) if mixed else None, n_kv_heads=2 * kv if sliding else kv,
        global_kv_heads=kv if mixed else None, attention_sinks=bool(sliding), sinks_windowed_only=mixed)
    pattern = (tuple("dense" if i not in experts else "moe" if i in slides else "moe_full" for i in range(layers))
               if mixed and 0 < len(sparse) < layers else llama.pattern(layers, sliding, sparse or None))
    if sparse and len(sparse) < layers and len(sliding) == layers:  # every layer slides: no full kind
        pattern = llama.pattern(layers, [], sparse)
    if sparse:
        experts_n = f.get("num_local_experts", f.get("n_routed_experts", 256))  # the mapped name wins
        top_k = f.nullable("num_experts_per_tok", 8)
        _require_expert_fields(f, sparse, n_routed_experts=experts_n, num_experts_per_tok=top_k)
        check_int(f.source, "n_routed_experts", experts_n, minimum=1)
        groups = f.get("n_group", 1, minimum=1)
        if experts_n % groups:
            raise ConfigError(f"{f.source}: n_routed_experts ({experts_n}) is not divisible by n_group "
                              f"({groups}), which the router's group view cannot run.")
        changes.update(n_experts=experts_n, top_k=top_k, d_expert=f.get("moe_intermediate_size", 2048, minimum=1),
                       d_shared=0, router="sigmoid", renormalize_top_k=f.get("norm_topk_prob", True, bool),
                       n_dense_layers=layers - len(sparse), expert_groups=groups,
                       expert_groups_per_token=f.get("topk_group", 1, minimum=1))
    return base.replace(layer_pattern=pattern, **changes)


#: model_type -> its reader (hf.py passes its LlamaReader).
NEW_MOE_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "hy_v3": _hy_v3, "afmoe": _afmoe, "laguna": _laguna, "mimo_v2_flash": _mimo_v2_flash,
}

#: The transformers class of each, for a config.json that names `architectures` only.
NEW_MOE_ARCHITECTURES: dict[str, str] = {"HYV3ForCausalLM": "hy_v3", "AfmoeForCausalLM": "afmoe",
                                         "LagunaForCausalLM": "laguna",
                                         "MiMoV2FlashForCausalLM": "mimo_v2_flash"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
NEW_MOE_NAMES: dict[str, dict[str, Any]] = {
    "hy_v3": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
              "d_expert": "moe_intermediate_size"},
    "afmoe": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
              "d_expert": "moe_intermediate_size", "n_dense_layers": "num_dense_layers"},
    "laguna": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
               "d_expert": "moe_intermediate_size", "d_shared": "shared_expert_intermediate_size"},
    "mimo_v2_flash": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                      "d_expert": "moe_intermediate_size", "v_head_dim": "v_head_dim"},
}
