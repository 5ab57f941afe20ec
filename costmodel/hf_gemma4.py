"""config.json reader of Gemma 4's language model (model_type gemma4_text, Gemma4ForCausalLM; the
multimodal gemma4 wrapper is read as its text_config by costmodel/hf_multimodal.py).

transformers 5.24's models/gemma4/modeling_gemma4.py, read against Gemma 3's: the same layer
(pre- and post-sublayer RMSNorms, a GeGLU MLP, per-head query and key RMSNorms, embeddings times
sqrt(hidden_size), a tied head, optional final soft cap, sliding_attention / full_attention layers
with one RoPE table per kind), but the norms multiply by w (not 1 + w, the facts' rmsnorm rows),
the scores are scaled by 1.0 (no query_pre_attn_scalar), each value head goes through a weightless
RMSNorm too (the value_rmsnorm fact), each layer ends by multiplying by a one-element buffer
(layer_scalar, the layer_scalar_buffer fact), and the last layer is always full_attention.

Read beside Gemma 3's layer: per-layer inputs (hidden_size_per_layer_input, on by default: 256;
costmodel/blocks/per_layer.py), the full-attention layers' own head width and KV heads
(global_head_dim, 512 by default, and num_global_key_value_heads under attention_k_eq_v, or
per_layer_config's; the d_hg and h_kvg symbols), keys as values on the full layers (attention_k_eq_v,
no v_proj there) and the last layers reusing their kind's last own layer's K and V
(num_kv_shared_layers: no k/v projections, k/v norms or cache; generate's prefill runs them on the
last position; use_double_wide_mlp: their MLPs 2 d_ff wide). Gemma 4's other features are refused in
one sentence each: K/V sharing without per-layer inputs (transformers cannot run it) or without a
layer of each kind of its own, the MoE block beside the MLP (enable_moe_block), per_layer_config
giving sliding layers other widths or KV heads, bidirectional attention ("all") and RoPE types other
than default and proportional. Defaults are Gemma4TextConfig's (transformers 5.24
configuration_gemma4.py)."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader

#: Gemma4TextConfig's defaults for the Llama fields (hidden_activation read as hidden_act).
_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=131072, hidden_act="gelu_pytorch_tanh",
                                 tie_word_embeddings=True, num_key_value_heads=4, head_dim=256)
#: hidden_activation values measured here (tests/test_hf_gemma4.py): the GeGLU MLP with the tanh
#: GELU (the default) or the exact one (ACT2FN["gelu"]).
_ACTIVATIONS = ("gelu_pytorch_tanh", "gelu")
#: Gemma4TextConfig's other defaults this reader checks.
_SLIDING_WINDOW, _GLOBAL_HEAD_DIM, _PER_LAYER_INPUT, _PER_LAYER_VOCAB, _PATTERN = 512, 512, 256, 262_144, 6
#: Gemma4UnifiedTextConfig's own defaults (modular_gemma4_unified.py): its window and positions.
_UNIFIED_DEFAULTS: dict[str, Any] = dict(_DEFAULTS, max_position_embeddings=262_144)
#: Gemma4UnifiedTextConfig's sizes (Gemma4TextConfig's), read where the config.json leaves them out.
_UNIFIED_SIZES: dict[str, Any] = dict(vocab_size=262_144, hidden_size=2304, intermediate_size=9216,
                                      num_hidden_layers=30, num_attention_heads=8)
_UNIFIED_WINDOW = 1024
#: RoPE types whose tables span the whole head (proportional: zeros past partial_rotary_factor,
#: transformers 5.24 modeling_rope_utils._compute_proportional_rope_parameters), as the
#: elementwise rotation does (apply_rotary_pos_emb over all of head_dim).
_ROPE_TYPES = ("default", "proportional")
_KINDS = ("sliding_attention", "full_attention")


def _refuse_unmodelled(f: Fields, unified: bool) -> None:
    """One sentence for each Gemma 4 feature the blocks here do not express (Gemma4UnifiedTextModel
    builds neither per-layer inputs nor the MoE block, whatever the config says, and runs K/V sharing
    without them)."""
    shared = f.get("num_kv_shared_layers", 0, minimum=0)
    if shared and not unified and not f.get("hidden_size_per_layer_input", _PER_LAYER_INPUT):
        raise ConfigError(f"{f.source}: num_kv_shared_layers without per-layer inputs (hidden_size_per_layer_input "
                          "0) is not modelled: transformers 5.24's Gemma4TextModel cannot run it.")
    if not unified and f.get("enable_moe_block", False, bool):
        raise ConfigError(f"{f.source}: enable_moe_block (Gemma 4's experts beside the MLP, with "
                          "their own router and norms) is not modelled.")
    bidirectional = f.data.get("use_bidirectional_attention")
    if bidirectional == "all":
        raise ConfigError(f"{f.source}: use_bidirectional_attention \"all\" (an encoder, not a "
                          "causal LM) is not modelled for gemma4_text.")
    if bidirectional not in (None, "vision"):  # "vision": image tokens only, the text LM is causal
        raise ConfigError(f"{f.source}: use_bidirectional_attention must be null, \"vision\" or "
                          f"\"all\", got {show(bidirectional)}.")


def _full_layers(f: Fields, types: list[str], head_dim: int, kv_heads: int, heads: int) -> tuple[Any, Any]:
    """The full-attention layers' head width and KV heads where they differ from head_dim and
    num_key_value_heads (None where they do not): per_layer_config's for each layer it names (by
    index, or by kind), or Gemma4TextConfig's default, global_head_dim on every full layer and, with
    attention_k_eq_v, num_global_key_value_heads. One width and one KV-head count for the full
    layers, head_dim and num_key_value_heads on the sliding ones are what the tree expresses."""
    overrides = f.data.get("per_layer_config")
    if overrides is None:  # Gemma4TextConfig builds it from global_head_dim (and, k_eq_v, the KV heads)
        overrides = {"full_attention": {"head_dim": f.get("global_head_dim", _GLOBAL_HEAD_DIM, minimum=1)}}
        if f.get("attention_k_eq_v", False, bool) and f.data.get("num_global_key_value_heads") is not None:
            overrides["full_attention"]["num_key_value_heads"] = f.get("num_global_key_value_heads", minimum=1)
    if not isinstance(overrides, dict) or not all(isinstance(o, dict) for o in overrides.values()):
        raise ConfigError(f"{f.source}: per_layer_config must map layers to objects, got {show(overrides)}.")
    widths, groups = [head_dim] * len(types), [kv_heads] * len(types)
    for key, layer in overrides.items():
        odd = [k for k in layer if k not in ("head_dim", "num_key_value_heads")]
        if odd:
            raise ConfigError(f"{f.source}: per_layer_config's {odd[0]} is not modelled for gemma4_text.")
        indices = [i for i, kind in enumerate(types) if kind == key] if key in _KINDS else \
            [int(key)] if str(key).isdigit() and int(key) < len(types) else None
        if indices is None:
            raise ConfigError(f"{f.source}: per_layer_config key {show(key)} names no layer or layer type.")
        for i in indices:
            widths[i], groups[i] = layer.get("head_dim", head_dim), layer.get("num_key_value_heads", kv_heads)
    out = []
    for name, values, base in (("head widths", widths, head_dim), ("KV heads", groups, kv_heads)):
        sliding = {v for v, kind in zip(values, types) if kind == "sliding_attention"}
        full = {v for v, kind in zip(values, types) if kind == "full_attention"}
        if sliding - {base} or len(full) > 1:
            raise ConfigError(f"{f.source}: per_layer_config {name} {show(sorted(sliding | full))} are not modelled: "
                              f"sliding layers must keep {show(base)}, full layers share one.")
        (value,) = full
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (name == "head widths" and value % 2):
            raise ConfigError(f"{f.source}: the full-attention {name} must be "
                              f"{'an even' if name == 'head widths' else 'a'} positive integer, got {show(value)}.")
        out.append(None if value == base else value)
    if out[1] is not None and heads % out[1]:
        raise ConfigError(f"{f.source}: num_attention_heads ({heads}) is not divisible by the full layers' "
                          f"KV heads ({out[1]}).")
    return out[0], out[1]


def _rope_kinds(f: Fields, kinds: set[str]) -> int:
    """The RoPE tables Gemma4TextRotaryEmbedding builds: one per kind of layer, each of a type
    whose tables span the whole head."""
    rope = f.data.get("rope_parameters")
    if rope is None:
        return len(kinds)
    if not isinstance(rope, dict) or not kinds <= set(rope):
        raise ConfigError(f"{f.source}: rope_parameters must give an object for each layer type "
                          f"({', '.join(sorted(kinds))}), got {show(rope)}.")
    for kind in sorted(kinds):
        params = rope[kind]
        if not isinstance(params, dict):  # Gemma4TextRotaryEmbedding.forward reads each kind's table
            raise ConfigError(f"{f.source}: rope_parameters for {kind} must be an object, got "
                              f"{show(params)}.")
        kind_type = params.get("rope_type", "default")
        if kind_type not in _ROPE_TYPES:
            raise ConfigError(f"{f.source}: rope_type {show(kind_type)} for {kind} is not modelled "
                              f"for gemma4_text; supported: {', '.join(_ROPE_TYPES)}.")
    return len(kinds)


def _gemma4_text(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Gemma 4's language model: Llama's fields (hidden_activation its activation), Gemma 3's
    layer, its own norms, scale 1.0, windows on the sliding_attention layers (the last layer full)."""
    return _read(f, name, llama, "gemma4_text")


def _gemma4_unified_text(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Gemma 4 unified's language model (Gemma4UnifiedForCausalLM, transformers 5.24
    models/gemma4_unified/modular_gemma4_unified.py): Gemma4TextAttention and Gemma4TextMLP in
    Gemma 4's decoder layer without per-layer inputs or the MoE block (Gemma4UnifiedTextDecoderLayer
    builds neither; hidden_size_per_layer_input and enable_moe_block are not read), K/V sharing
    without per-layer inputs (which Gemma4TextModel cannot run), and Gemma4UnifiedTextConfig's
    defaults: a window of 1,024 and 262,144 positions."""
    return _read(f, name, llama, "gemma4_unified_text")


def _read(f: Fields, name: str, llama: LlamaReader, family: str) -> ModelConfig:
    """gemma4_text's reader; family gemma4_unified_text reads Gemma4UnifiedTextConfig's defaults
    and no per-layer inputs."""
    unified = family == "gemma4_unified_text"
    defaults = _UNIFIED_DEFAULTS if unified else _DEFAULTS
    if unified:
        f = Fields({**f.data, **{k: v for k, v in _UNIFIED_SIZES.items() if f.data.get(k) is None}}, f.source)
    data = {k: v for k, v in f.data.items() if k not in ("mlp_bias", "hidden_act", "sliding_window")}
    act = f.get("hidden_activation", _DEFAULTS["hidden_act"], str)
    if act not in _ACTIVATIONS:
        raise ConfigError(f"{f.source}: unsupported hidden_activation {show(act)} for {family}; "
                          f"supported: {', '.join(_ACTIVATIONS)}.")
    data["hidden_act"] = act
    heads = f.get("num_attention_heads", minimum=1)
    if "num_key_value_heads" not in f.data and heads % _DEFAULTS["num_key_value_heads"]:
        raise ConfigError(f"{f.source}: num_attention_heads ({heads}) is not divisible by "
                          f"num_key_value_heads ({_DEFAULTS['num_key_value_heads']}, "
                          "Gemma4TextConfig's default when the field is missing); give num_key_value_heads.")
    base = llama.read(Fields(data, f.source), name, "llama", defaults)
    _refuse_unmodelled(f, unified)
    layers = base.n_decoder_layers
    types = list(llama.layer_types(f, layers) or [
        "sliding_attention" if (i + 1) % _PATTERN else "full_attention" for i in range(layers)])
    types[-1] = "full_attention"  # Gemma4TextConfig.__post_init__ forces it
    if "sliding_window" in f.data and f.data["sliding_window"] is None:
        raise ConfigError(f"{f.source}: sliding_window null is not modelled for {family}: its "
                          f"config takes an integer ({_UNIFIED_WINDOW if unified else _SLIDING_WINDOW:,} by default).")
    window = f.get("sliding_window", _UNIFIED_WINDOW if unified else _SLIDING_WINDOW, minimum=1)
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    cap = f.nullable("final_logit_softcapping", None, float)
    width, groups = _full_layers(f, types, base.d_head, base.n_kv_heads, heads)
    per_layer = 0 if unified else f.get("hidden_size_per_layer_input", _PER_LAYER_INPUT, minimum=0)  # 0: none
    return base.replace(
        per_layer_input=per_layer or None, global_head_dim=width, global_kv_heads=groups,
        keys_as_values=f.get("attention_k_eq_v", False, bool),  # the full layers' values: their keys' projection
        kv_shared_layers=f.get("num_kv_shared_layers", 0),
        double_wide_shared=f.get("use_double_wide_mlp", False, bool) and f.get("num_kv_shared_layers", 0) > 0,
        per_layer_vocab=f.get("vocab_size_per_layer_input", _PER_LAYER_VOCAB, minimum=1) if per_layer else None,
        family=family, qk_norm=True, scale_embeddings=True, post_sublayer_norm=True,
        attention_scale=1.0, rotary_sets=_rope_kinds(f, set(types)),
        logit_softcap=None if cap is None else float(cap),
        sliding_window=window if sliding else None, window_layers=len(sliding) or None,
        layer_pattern=llama.pattern(layers, sliding, None))


#: model_type -> its reader (hf.py passes its LlamaReader).
GEMMA4_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "gemma4_text": _gemma4_text, "gemma4_unified_text": _gemma4_unified_text}
#: The transformers class, for a config.json that names `architectures` only.
GEMMA4_ARCHITECTURES: dict[str, str] = {"Gemma4ForCausalLM": "gemma4_text",
                                        "Gemma4UnifiedForCausalLM": "gemma4_unified_text"}
_NAMES = {**LLAMA_NAMES, "kv_shared_layers": "num_kv_shared_layers", "per_layer_input": "hidden_size_per_layer_input",
          "per_layer_vocab": "vocab_size_per_layer_input", "keys_as_values": "attention_k_eq_v"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
GEMMA4_NAMES: dict[str, dict[str, str]] = {"gemma4_text": _NAMES, "gemma4_unified_text": _NAMES}
