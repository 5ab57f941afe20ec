"""config.json reader of RWKV-4 (model_type "rwkv", RwkvForCausalLM, transformers 5.24 models/rwkv:
the RWKV/rwkv-4-* and rwkv-raven-* checkpoints).

Each of num_hidden_layers blocks (RwkvBlock) is ln1, the time mix, a residual add, ln2, the channel
mix, a residual add: two of nemotron_h's one-mixer layers (ModelConfig.mixer_layers; the mixers in
costmodel/blocks/rwkv.py). Block 0 first runs pre_ln on the embeddings (ModelConfig.embedding_norm);
ln_out ends the stack; the head has no bias and is tied only where tie_word_embeddings says so (false
by default). Every norm is a LayerNorm with a bias. No layer attends: ModelConfig's attention sizes,
which no leaf reads, are one head of width d. The channel mix's width is intermediate_size (4 d
when null). In eval mode the class halves the hidden state every rescale_every blocks (weights
rescaled in place): no matmul, no parameter. Proven (tests/test_hf_rwkv.py): parameters, the
training, prefill and batch-1 decode matmul FLOPs, the state, the bytes saved for backward (the
CPU loop; fp32, bf16).

Refused in one line: an attention_hidden_size other than hidden_size (RwkvModel's state is
hidden_size wide, so the class cannot cache it).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig
from .errors import MAX_LAYERS, check_int
from .hf_fields import Fields


def _rwkv(f: Fields, name: str) -> ModelConfig:
    """rwkv (RwkvForCausalLM): see the module docstring. Defaults: RwkvConfig (5.24): 32 blocks of
    width 4,096, vocabulary 50,277, an untied head."""
    d_model = f.get("hidden_size", 4096, minimum=1)
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    attention = f.get("attention_hidden_size", d_model, minimum=1)
    if attention != d_model:
        raise ConfigError(f"{f.source}: attention_hidden_size ({attention}) other than hidden_size ({d_model}) is "
                          "not modelled for rwkv (RwkvModel's state is hidden_size wide: the class cannot cache it).")
    return ModelConfig(
        name=name, family="rwkv", vocab_size=f.get("vocab_size", 50277, minimum=1), d_model=d_model,
        n_heads=1, n_kv_heads=1, d_head=d_model, d_ff=f.get("intermediate_size", 4 * d_model, minimum=1),
        n_decoder_layers=2 * n_layers, position="none", norm="layernorm", norm_position="pre",
        embedding_norm=True, activation="gelu", qkv_bias=False, out_bias=False, ffn_bias=False,
        lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        mixer_layers=True, layer_pattern=("rwkv_time", "rwkv_channel") * n_layers)


RWKV_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"rwkv": _rwkv}
RWKV_ARCHITECTURES: dict[str, str] = {"RwkvForCausalLM": "rwkv"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
RWKV_NAMES: dict[str, dict[str, Any]] = {"rwkv": {
    "vocab_size": "vocab_size", "d_model": "hidden_size", "d_ff": "intermediate_size",
    "n_decoder_layers": "num_hidden_layers"}}
