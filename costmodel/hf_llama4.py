"""config.json reader of Llama 4's language model: model_type llama4_text (transformers 5.24's
Llama4TextConfig, run as Llama4ForCausalLM). costmodel/hf.py dispatches on model_type.

What it reads (models/llama4/configuration_llama4.py and modeling_llama4.py):
- grouped-query attention with RoPE, except on the layers whose no_rope_layers entry is 0 (every
  no_rope_layer_interval-th by default); the RoPE layers attend in chunks of attention_chunk_size
  ("chunked_attention"), the NoPE layers to every key. transformers' DynamicCache keeps a chunked
  layer's keys and values as a sliding window of attention_chunk_size (cache_utils.py: "sliding
  and chunked are the same in how they should behave, only the mask differs"), and eager attention
  computes every score and masks: a window on the RoPE layers (ModelConfig.sliding_window).
- use_qk_norm: an L2 norm without weights over each query and key head after RoPE, on the RoPE
  layers only (ModelConfig.qk_l2_norm); attn_temperature_tuning: the NoPE layers' queries times
  log1p(floor((position + 1) / floor_scale)) * attn_scale + 1 (ModelConfig.nope_temperature).
- a mixture of experts on the moe_layers (every interleave_moe_layer_step-th, counting from 1, by
  default): num_local_experts SwiGLU experts of intermediate_size, the top num_experts_per_tok of
  the router's logits through a sigmoid (router "sigmoid_topk", no renormalisation), and a shared
  expert of intermediate_size; the other layers a dense SwiGLU MLP of intermediate_size_mlp.
Defaults are Llama4TextConfig's.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, attention_layer_types

#: Llama4TextConfig's defaults for the fields read here (transformers 5.24).
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=202048, hidden_size=5120, intermediate_size=8192, intermediate_size_mlp=16384,
    num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8, head_dim=128,
    hidden_act="silu", max_position_embeddings=4096 * 32, tie_word_embeddings=False,
    num_experts_per_tok=1, num_local_experts=16, interleave_moe_layer_step=1, use_qk_norm=True,
    no_rope_layer_interval=4, attention_chunk_size=8192, attn_temperature_tuning=True,
    attention_bias=False,
)


def _flags(f: Fields, n_layers: int) -> list[int]:
    """no_rope_layers as Llama4TextConfig resolves it: the config's list (an empty one, or none,
    is every no_rope_layer_interval-th layer without RoPE); 1 RoPE, 0 none. The attention reads
    entry layer_idx, so a longer list is read up to num_hidden_layers."""
    flags = f.data.get("no_rope_layers")
    if not flags:
        every = f.get("no_rope_layer_interval", _DEFAULTS["no_rope_layer_interval"], minimum=1)
        return [int((i + 1) % every != 0) for i in range(n_layers)]
    if (not isinstance(flags, list) or len(flags) < n_layers
            or any(isinstance(x, bool) or x not in (0, 1) for x in flags)):
        raise ConfigError(f"{f.source}: no_rope_layers must give 1 (RoPE) or 0 (none) for each of "
                          f"the {n_layers} layers.")
    return flags[:n_layers]


def _moe_layers(f: Fields, n_layers: int) -> list[int]:
    """The layers with experts: moe_layers where the config lists them, else every
    interleave_moe_layer_step-th layer from layer step - 1."""
    listed = f.data.get("moe_layers")
    if listed is None:
        step = f.get("interleave_moe_layer_step", _DEFAULTS["interleave_moe_layer_step"], minimum=1)
        return list(range(step - 1, n_layers, step))
    if not isinstance(listed, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in listed):
        raise ConfigError(f"{f.source}: moe_layers must be a list of layer indices.")
    chosen = set(listed)
    return [i for i in range(n_layers) if i in chosen]


def _chunked(f: Fields, flags: list[int]) -> tuple[int | None, list[int]]:
    """(attention_chunk_size, the chunked layers): layer_types where the config gives it, else
    Llama4TextConfig's rule, chunked on the RoPE layers when attention_chunk_size is set."""
    chunk = f.nullable("attention_chunk_size", _DEFAULTS["attention_chunk_size"])
    if chunk is not None:
        check_int(f.source, "attention_chunk_size", chunk)
    types = f.data.get("layer_types")
    if types is None:
        types = ["chunked_attention" if rope and chunk is not None else "full_attention" for rope in flags]
    else:
        types = attention_layer_types(f, types, len(flags), ("chunked_attention", "full_attention"))
    chunked = [i for i, t in enumerate(types) if t == "chunked_attention"]
    if chunked and chunk is None:
        raise ConfigError(f"{f.source}: layer_types lists chunked_attention layers but "
                          "attention_chunk_size is null.")
    rope = [i for i, x in enumerate(flags) if x]
    if chunked and chunked != rope and len(chunked) != len(flags):
        raise ConfigError(f"{f.source}: chunked attention on layers other than the RoPE layers (or "
                          "all of them) is not modelled.")
    return (chunk, chunked) if chunked else (None, [])


def _llama4_text(f: Fields, name: str) -> ModelConfig:
    """Llama 4's language model (Llama4ForCausalLM); see the module's docstring."""
    d = _DEFAULTS
    n_layers = f.get("num_hidden_layers", d["num_hidden_layers"])
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    n_heads = f.get("num_attention_heads", d["num_attention_heads"], minimum=1)
    n_kv = f.get("num_key_value_heads", n_heads if "num_key_value_heads" in f.data
                 else d["num_key_value_heads"], minimum=1)
    # head_dim null: hidden_size // num_attention_heads (ModelConfig derives it)
    head_dim = None if "head_dim" in f.data and f.data["head_dim"] is None else f.get("head_dim", d["head_dim"])
    act = f.get("hidden_act", d["hidden_act"], str)
    if act not in ("silu", "swish"):
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for llama4_text (its "
                          "experts are modelled as SwiGLU).")
    flags = _flags(f, n_layers)
    nope = flags.count(0)
    if nope == n_layers:
        raise ConfigError(f"{f.source}: no_rope_layers leaves no layer with RoPE, which is not modelled.")
    window, chunked = _chunked(f, flags)
    moe = _moe_layers(f, n_layers)
    if moe and len(moe) < n_layers and not {i for i, x in enumerate(flags) if not x} <= set(moe):
        raise ConfigError(f"{f.source}: a NoPE layer without experts beside expert layers is not "
                          "modelled (Llama 4 Maverick's NoPE layers all have experts).")
    tuning = f.data.get("attn_temperature_tuning", d["attn_temperature_tuning"])
    if not isinstance(tuning, (bool, int, float)):  # Scout's config.json says 4: truthy
        raise ConfigError(f"{f.source}: attn_temperature_tuning must be true or false, got {show(tuning)}.")
    bias = f.get("attention_bias", d["attention_bias"], bool)
    fields: dict[str, Any] = dict(
        name=name, family="llama4_text", vocab_size=f.get("vocab_size", d["vocab_size"]),
        d_model=f.get("hidden_size", d["hidden_size"]), n_heads=n_heads, n_kv_heads=n_kv,
        d_head=head_dim, d_ff=f.get("intermediate_size_mlp", d["intermediate_size_mlp"]),
        n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", d["max_position_embeddings"]),
        position="rope", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=bias, out_bias=bias, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", d["tie_word_embeddings"], bool),
        dropout=float(f.get("attention_dropout", 0.0, float)),
        sliding_window=window, window_layers=None if len(chunked) == n_layers else len(chunked) or None,
        chunked_window=window is not None,
        qk_l2_norm=f.get("use_qk_norm", d["use_qk_norm"], bool),
        nope_layers=nope, nope_temperature=bool(tuning) and nope > 0,
    )
    if moe:
        width = f.get("intermediate_size", d["intermediate_size"])
        fields.update(n_experts=f.get("num_local_experts", d["num_local_experts"], minimum=1),
                      top_k=f.get("num_experts_per_tok", d["num_experts_per_tok"], minimum=1),
                      d_expert=width, d_shared=width, router="sigmoid_topk",
                      renormalize_top_k=False, n_dense_layers=n_layers - len(moe))
    return ModelConfig(**fields, layer_pattern=_pattern(flags, moe, len(chunked) not in (0, n_layers)))


def _pattern(flags: list[int], moe: list[int], chunks_on_rope: bool) -> tuple[str, ...] | None:
    """ModelConfig.layer_pattern: "dense"/"moe"/"moe_nope" with NoPE and dense layers
    (Maverick); else "sliding"/"full" where the chunks are on the RoPE layers (nope_full_layers,
    as EXAONE 4's), "rope"/"nope" where no chunk; "dense"/"moe" without NoPE layers."""
    n_layers, experts = len(flags), set(moe)
    nope = [i for i, x in enumerate(flags) if not x]
    dense = 0 < len(moe) < n_layers
    if nope and dense:
        return tuple("dense" if i not in experts else "moe_nope" if not flags[i] else "moe"
                     for i in range(n_layers))
    if nope and chunks_on_rope:
        return tuple("sliding" if x else "full" for x in flags)
    if nope:
        return tuple("rope" if x else "nope" for x in flags)
    if dense:
        return tuple("moe" if i in experts else "dense" for i in range(n_layers))
    return None


#: model_type -> its reader.
LLAMA4_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"llama4_text": _llama4_text}

#: The transformers class, for a config.json that names `architectures` only.
LLAMA4_ARCHITECTURES: dict[str, str] = {"Llama4ForCausalLM": "llama4_text"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
LLAMA4_NAMES: dict[str, dict[str, Any]] = {"llama4_text": {
    **LLAMA_NAMES, "d_ff": "intermediate_size_mlp", "d_expert": "intermediate_size",
    "n_experts": "num_local_experts", "top_k": "num_experts_per_tok"}}
