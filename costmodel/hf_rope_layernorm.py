"""config.json readers of the families with RoPE and LayerNorms: StarCoder2 (Mistral's attention
with biases, LayerNorms, a GELU MLP) and Phi (Phi-1/1.5/2: one LayerNorm feeding attention and MLP
in parallel, partial rotary, a biased head). costmodel/hf.py dispatches on model_type.
Defaults are those of transformers 5.24's configuration classes."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, head_width, rotary_fraction, same_dropout


def _heads(f: Fields, n_heads_default: int, kv_default: int | None) -> tuple[int, int]:
    """(num_attention_heads, num_key_value_heads), the KV default when the field is missing."""
    n_heads = f.get("num_attention_heads", n_heads_default, minimum=1)
    n_kv = f.get("num_key_value_heads", n_heads if kv_default is None else kv_default, minimum=1)
    if "num_key_value_heads" not in f.data and n_heads % n_kv:
        raise ConfigError(f"{f.source}: num_attention_heads ({n_heads}) is not divisible by "
                          f"num_key_value_heads ({n_kv}, transformers' default when the field is "
                          "missing); give num_key_value_heads.")
    return n_heads, n_kv


def _starcoder2(f: Fields, name: str) -> ModelConfig:
    """StarCoder2: Mistral's attention (grouped KV heads, RoPE on every dimension, a window on
    every layer when sliding_window is set) with use_bias on q/k/v/o, LayerNorms with biases, an
    MLP c_fc -> act -> c_proj (biases per use_bias), residual_dropout after each sublayer and
    embedding_dropout after the embeddings, the head tied by default."""
    n_layers = f.get("num_hidden_layers", 30)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    n_heads, n_kv = _heads(f, 24, 2)
    act = f.get("hidden_act", "gelu_pytorch_tanh", str)
    acts = {"gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for starcoder2.")
    bias = f.get("use_bias", True, bool)
    window = f.nullable("sliding_window", None)
    return ModelConfig(
        name=name, family="starcoder2", vocab_size=f.get("vocab_size", 49152),
        d_model=f.get("hidden_size", 3072), n_heads=n_heads, n_kv_heads=n_kv,
        d_head=f.get("head_dim", None), d_ff=f.get("intermediate_size", 12288),
        n_decoder_layers=n_layers, max_positions=f.get("max_position_embeddings", 4096),
        position="rope", norm="layernorm", norm_position="pre", activation=acts[act],
        qkv_bias=bias, out_bias=bias, ffn_bias=bias, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=same_dropout(f, ("residual_dropout", "embedding_dropout"), "starcoder2"),
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
        sliding_window=window or None,
    )


def _phi(f: Fields, name: str) -> ModelConfig:
    """Phi (phi-1, phi-1.5, phi-2): one input LayerNorm feeding attention and the MLP, whose
    outputs (each after resid_pdrop) add to the residual; q/k/v/dense and fc1/fc2 with biases;
    RoPE on partial_rotary_factor of each head (0.5 by default); a final LayerNorm and an lm_head
    with a bias, untied by default. qk_layernorm (LayerNorms on queries and keys) and a nonzero
    embd_pdrop are refused."""
    n_layers = f.get("num_hidden_layers", 24)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    n_heads, n_kv = _heads(f, 32, None)
    d_model = f.get("hidden_size", 2048)
    if f.get("embd_pdrop", 0.0, float):
        raise ConfigError(f"{f.source}: embd_pdrop (dropout on Phi's embeddings) is not modelled; "
                          "the released Phi models have 0.")
    if f.get("qk_layernorm", False, bool):
        raise ConfigError(f"{f.source}: qk_layernorm (LayerNorms on Phi's queries and keys) is not "
                          "modelled.")
    act = f.get("hidden_act", "gelu_new", str)
    acts = {"gelu_new": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for phi.")
    head_dim = f.get("head_dim", None)
    if head_dim is None:
        head_dim = head_width(f, d_model, n_heads, "num_attention_heads")
    rotary = int(head_dim * rotary_fraction(f, "partial_rotary_factor", 0.5))
    if rotary < 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions "
                          "per head.")
    return ModelConfig(
        name=name, family="phi", vocab_size=f.get("vocab_size", 51200), d_model=d_model,
        n_heads=n_heads, n_kv_heads=n_kv, d_head=head_dim, d_ff=f.get("intermediate_size", 8192),
        n_decoder_layers=n_layers, max_positions=f.get("max_position_embeddings", 2048),
        position="rope", rotary_dim=None if rotary == head_dim else rotary, norm="layernorm",
        norm_position="pre", activation=acts[act], qkv_bias=True, out_bias=True, ffn_bias=True,
        lm_head_bias=True, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        parallel_attention=True, parallel_norms=1,
        dropout=float(f.get("resid_pdrop", 0.0, float)),
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


#: model_type -> its reader.
ROPE_LAYERNORM_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "starcoder2": _starcoder2, "phi": _phi,
}

#: The transformers class of each, for a config.json that names `architectures` only.
ROPE_LAYERNORM_ARCHITECTURES: dict[str, str] = {
    "Starcoder2ForCausalLM": "starcoder2", "PhiForCausalLM": "phi",
}

_NAMES: dict[str, str] = LLAMA_NAMES
#: The config.json names of ModelConfig's fields (the ones its errors may name).
ROPE_LAYERNORM_NAMES: dict[str, dict[str, Any]] = {family: _NAMES for family in ROPE_LAYERNORM_BUILDERS}
