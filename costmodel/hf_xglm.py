"""config.json readers of XGLM (model_type "xglm": XGLMForCausalLM, facebook/xglm-*) and of CTRL
(model_type "ctrl": CTRLLMHeadModel, Salesforce/ctrl; `_ctrl`), sinusoidal-position decoders.

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
from .hf_fields import Fields, head_width, same_dropout

#: XGLMConfig's activation_function as ACT2FN runs it -> the tree's activation.
_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


def _xglm(f: Fields, name: str) -> ModelConfig:
    """XGLM (see the module docstring); defaults are XGLMConfig's."""
    n_layers = f.get("num_layers", 24)
    check_int(f.source, "num_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("d_model", 1024)
    n_heads = f.get("attention_heads", 16, minimum=1)
    head_width(f, d_model, n_heads, "attention_heads", "d_model")
    act = f.get("activation_function", "gelu", str)
    if act not in _ACTIVATIONS:
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for xglm.")
    for key in ("add_cross_attention",):
        if f.get(key, False, bool):
            raise ConfigError(f"{f.source}: {key} is not modelled for xglm (a cross-attention block per layer).")
    for key in ("layerdrop", "activation_dropout"):
        if float(f.get(key, 0.0, float)) != 0.0:
            raise ConfigError(f"{f.source}: a nonzero {key} is not modelled for xglm.")
    return ModelConfig(
        name=name, family="xglm", vocab_size=f.get("vocab_size", 256008), d_model=d_model,
        n_heads=n_heads, d_ff=f.get("ffn_dim", 4096), n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", 2048), position="sinusoidal", position_offset=2,
        norm="layernorm", norm_position="pre", activation=_ACTIVATIONS[act],
        qkv_bias=True, out_bias=True, ffn_bias=True, head="lm",
        scale_embeddings=f.get("scale_embedding", True, bool),
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("dropout", 0.1, float)),
        attention_dropout=float(f.get("attention_dropout", 0.1, float)),
    )


def _ctrl(f: Fields, name: str) -> ModelConfig:
    """Salesforce's CTRL (model_type "ctrl": CTRLLMHeadModel, transformers 5.24 modeling_ctrl.py):
    XGLM's layout without its offset: token embeddings times sqrt(n_embd), a fixed sinusoidal table
    of n_positions rows (a non-persistent fp32 buffer), n_layer pre-LayerNorm layers (Wq, Wk, Wv and
    dense with biases, Bert's eager attention, which transformers also runs under sdpa and flash; an
    n_embd -> dff -> n_embd ReLU MLP with biases), a final LayerNorm, and a head tied to the
    embeddings with a bias of its own. resid_pdrop drops each sublayer's output, embd_pdrop the
    embeddings' sum; the attention probabilities are never dropped (dropout=0.0 in
    MultiHeadAttention). Defaults are CTRLConfig's; embd_pdrop unlike resid_pdrop is refused
    (hf_fields.same_dropout: the tree has one dropout probability outside the attention)."""
    n_layers = f.get("n_layer", 48)
    check_int(f.source, "n_layer", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("n_embd", 1280)
    n_heads = f.get("n_head", 16, minimum=1)
    head_width(f, d_model, n_heads, "n_head", "n_embd")
    dropout = same_dropout(f, ("resid_pdrop", "embd_pdrop"), "ctrl", 0.1)
    return ModelConfig(
        name=name, family="ctrl", vocab_size=f.get("vocab_size", 246534), d_model=d_model,
        n_heads=n_heads, d_ff=f.get("dff", 8192), n_decoder_layers=n_layers,
        max_positions=f.get("n_positions", 256), position="sinusoidal",
        norm="layernorm", norm_position="pre", activation="relu",
        qkv_bias=True, out_bias=True, ffn_bias=True, head="lm", lm_head_bias=True, scale_embeddings=True,
        tie_embeddings=f.get("tie_word_embeddings", True, bool), dropout=dropout, attention_dropout=0.0,
    )


#: model_type -> its reader.
XGLM_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"xglm": _xglm, "ctrl": _ctrl}

#: transformers class -> model_type.
XGLM_ARCHITECTURES = {"XGLMForCausalLM": "xglm", "CTRLLMHeadModel": "ctrl"}

#: The config.json names of ModelConfig's fields (for errors).
XGLM_NAMES = {"xglm": {"n_heads": "attention_heads", "d_model": "d_model", "d_ff": "ffn_dim",
                       "n_decoder_layers": "num_layers", "max_positions": "max_position_embeddings"},
              "ctrl": {"n_heads": "n_head", "d_model": "n_embd", "d_ff": "dff", "n_decoder_layers": "n_layer",
                       "max_positions": "n_positions"}}
