"""config.json reader of XGLM (model_type "xglm": XGLMForCausalLM, facebook/xglm-*).

transformers 5.24's modeling_xglm.py: token embeddings scaled by sqrt(d_model) (scale_embedding),
a fixed sinusoidal table of max_position_embeddings + 2 rows looked up at position + 2 (a
non-persistent buffer in the model dtype), num_layers pre-LayerNorm layers (q/k/v/out with biases,
queries scaled by head_dim**-0.5 before Q K^T, an fc1/fc2 MLP with biases), a final LayerNorm and a
head tied to the embeddings. The class has no sdpa path (XGLMPreTrainedModel does not declare it).

Refused in one line, as not modelled: add_cross_attention (a cross-attention block in every layer
that a causal LM without encoder states never runs), layerdrop (layers skipped at random while
training), activation_dropout (a dropout after the activation), an activation the tree has no leaf
for, and dropout and attention_dropout that differ from the dropout sites the tree holds.
"""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import Fields

#: XGLMConfig's activation_function as ACT2FN runs it -> the tree's activation.
_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


def _xglm(f: Fields, name: str) -> ModelConfig:
    """XGLM (see the module docstring); defaults are XGLMConfig's."""
    n_layers = f.get("num_layers", 24)
    check_int(f.source, "num_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("d_model", 1024)
    n_heads = f.get("attention_heads", 16, minimum=1)
    if d_model % n_heads:
        raise ConfigError(f"{f.source}: d_model ({d_model}) is not divisible by attention_heads ({n_heads}).")
    act = f.get("activation_function", "gelu", str)
    if act not in _ACTIVATIONS:
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for xglm.")
    for key in ("add_cross_attention",):
        if f.get(key, False, bool):
            raise ConfigError(f"{f.source}: {key} is not modelled for xglm (a cross-attention block per layer).")
    for key in ("layerdrop", "activation_dropout"):
        if float(f.get(key, 0.0, (int, float))) != 0.0:
            raise ConfigError(f"{f.source}: a nonzero {key} is not modelled for xglm.")
    return ModelConfig(
        name=name, family="xglm", vocab_size=f.get("vocab_size", 256008), d_model=d_model,
        n_heads=n_heads, d_ff=f.get("ffn_dim", 4096), n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", 2048), position="sinusoidal", position_offset=2,
        norm="layernorm", norm_position="pre", activation=_ACTIVATIONS[act],
        qkv_bias=True, out_bias=True, ffn_bias=True, head="lm",
        scale_embeddings=f.get("scale_embedding", True, bool),
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("dropout", 0.1, (int, float))),
        attention_dropout=float(f.get("attention_dropout", 0.1, (int, float))),
    )


#: model_type -> its reader.
XGLM_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"xglm": _xglm}

#: transformers class -> model_type.
XGLM_ARCHITECTURES = {"XGLMForCausalLM": "xglm"}

#: The config.json names of ModelConfig's fields (for errors).
XGLM_NAMES = {"xglm": {"n_heads": "attention_heads", "d_model": "d_model", "d_ff": "ffn_dim",
                       "n_decoder_layers": "num_layers", "max_positions": "max_position_embeddings"}}
