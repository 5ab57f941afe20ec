"""config.json reader of xLSTM (model_type "xlstm", xLSTMForCausalLM, transformers 5.24 models/xlstm:
NX-AI's xLSTM-7b), run by transformers' native PyTorch kernels (the xlstm package not installed).

Each of num_hidden_layers (num_blocks) blocks is norm_mlstm, the mLSTM layer (costmodel/blocks/mlstm.py),
a residual add, norm_ffn, a SwiGLU FFN without biases of round_up(hidden_size x ffn_proj_factor,
ffn_round_up_to_multiple_of), a residual add: two of nemotron_h's one-mixer layers
(ModelConfig.mixer_layers). The mLSTM's num_heads heads have query/key width
int(hidden_size x qk_dim_factor) / num_heads (ModelConfig.d_head) and value width
int(hidden_size x v_dim_factor) / num_heads (ModelConfig.v_head_dim); its kernels' chunk is
chunk_size. RMSNorms with a weight only; out_norm; the logits soft-capped at output_logit_soft_cap;
a head never tied (the class has no _tied_weights_keys, whatever tie_word_embeddings says).

Refused in one line: use_bias (its norms' biases are not modelled), weight_mode other than single,
mode other than inference (the default, which the training forward runs too), add_out_norm false,
embedding_dim other than hidden_size, widths whose cache the class cannot build
(xLSTMCache sizes its state from hidden_size x factor rounded up to 64, the layers from it unrounded).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int, check_number
from .hf_fields import Fields


def _scaled(f: Fields, d_model: int, key: str, default: float) -> float:
    """hidden_size x the factor `key`, a positive number whose product is finite (int() of an
    infinite one was a traceback)."""
    factor = f.get(key, default, float)
    check_number(f.source, key, factor)
    if not math.isfinite(d_model * factor):
        raise ConfigError(f"{f.source}: hidden_size x {key} ({show(factor)}) is not a finite width.")
    return d_model * factor


def _width(f: Fields, d_model: int, key: str, heads: int) -> int:
    """int(hidden_size x factor), the layer's width, checked against the cache's (rounded up to 64)
    and the heads."""
    product = _scaled(f, d_model, key, {"qk_dim_factor": 0.5, "v_dim_factor": 1.0}[key])
    width = int(product)
    if width < 1 or width % 64 or width % heads:
        raise ConfigError(f"{f.source}: hidden_size x {key} ({show(product)}) must be a multiple of 64 "
                          f"(xLSTMCache rounds it up, the layer does not) and of num_heads ({heads}).")
    return width


def _xlstm(f: Fields, name: str) -> ModelConfig:
    """xlstm (xLSTMForCausalLM): see the module docstring. Defaults: xLSTMConfig (5.24): 32 blocks of
    width 4,096, 8 heads, vocabulary 50,304, chunk 64."""
    d_model = f.get("hidden_size", None) or f.get("embedding_dim", 4096, minimum=1)
    check_int(f.source, "hidden_size", d_model)
    n_layers = f.get("num_hidden_layers", None) or f.get("num_blocks", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    for key, allowed in (("use_bias", False), ("weight_mode", "single"), ("mode", "inference"),
                         ("add_out_norm", True), ("embedding_dim", d_model)):
        value = f.data.get(key)
        if value is not None and value != allowed:
            raise ConfigError(f"{f.source}: {key} {show(value)} is not modelled for xlstm (only {show(allowed)}).")
    heads = f.get("num_heads", 8, minimum=1)
    qk, v = _width(f, d_model, "qk_dim_factor", heads), _width(f, d_model, "v_dim_factor", heads)
    multiple = f.get("ffn_round_up_to_multiple_of", 64, minimum=1)
    d_ff = int(((_scaled(f, d_model, "ffn_proj_factor", 2.667) + multiple - 1) // multiple) * multiple)
    return ModelConfig(
        name=name, family="xlstm", vocab_size=f.get("vocab_size", 50304, minimum=1), d_model=d_model,
        n_heads=heads, n_kv_heads=heads, d_head=qk // heads, v_head_dim=v // heads, d_ff=d_ff,
        n_decoder_layers=2 * n_layers, position="none", norm="rmsnorm", norm_position="pre",
        activation="swiglu", qkv_bias=False, out_bias=False, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=False,  # xLSTMForCausalLM names no tied weights: tie_word_embeddings ties nothing
        logit_softcap=f.get("output_logit_soft_cap", 30.0, float), mixer_layers=True,
        layer_pattern=("mlstm", "mlp") * n_layers, chunk_size=f.get("chunk_size", 64, minimum=1))


XLSTM_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"xlstm": _xlstm}
XLSTM_ARCHITECTURES: dict[str, str] = {"xLSTMForCausalLM": "xlstm"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
XLSTM_NAMES: dict[str, dict[str, Any]] = {"xlstm": {
    "vocab_size": "vocab_size", "d_model": "hidden_size", "n_heads": "num_heads", "d_ff": "ffn_proj_factor",
    "n_decoder_layers": "num_hidden_layers", "chunk_size": "chunk_size"}}
