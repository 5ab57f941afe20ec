"""config.json reader of GPT-NeoX-Japanese (model_type "gpt_neox_japanese":
GPTNeoXJapaneseForCausalLM, abeja/gpt-neox-japanese-2.7b).

transformers 5.24's modeling_gpt_neox_japanese.py: GPT-NeoX's fused per-head query_key_value and
RoPE over partial_rotary_factor of each head (rotary_pct, 1.0 by default), without biases on
query_key_value, dense or the MLP, in sequential pre-LayerNorm layers (not GPT-NeoX's parallel
residual); an MLP of hidden_size x intermediate_multiple_size (4), gelu; its own eager attention
only (a baddbmm into zeros, the mask added, softmax, attention_dropout on the probabilities);
hidden_dropout on each sublayer's output; a final LayerNorm and a head tied to the embeddings.
The last layer's attention adds a d-wide dense_bias to its output before the dropout
(last_out_bias: one leaf after the layers)."""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, head_width, rotary_fraction

_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_pytorch_tanh": "gelu_tanh"}


def _gpt_neox_japanese(f: Fields, name: str) -> ModelConfig:
    """GPT-NeoX-Japanese (see the module docstring); defaults are GPTNeoXJapaneseConfig's."""
    n_layers = f.get("num_hidden_layers", 32)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", 2560)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    d_head = head_width(f, d_model, n_heads, "num_attention_heads")
    act = f.get("hidden_act", "gelu", str)
    if act not in _ACTIVATIONS:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for gpt_neox_japanese.")
    multiple = f.get("intermediate_multiple_size", 4, minimum=1)
    rotary = int(d_head * rotary_fraction(f, "rotary_pct", 1.0))
    if rotary < 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions per head.")
    return ModelConfig(
        name=name, family="gpt_neox_japanese", vocab_size=f.get("vocab_size", 32000), d_model=d_model,
        n_heads=n_heads, d_ff=d_model * multiple, n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", 2048), position="rope",
        rotary_dim=None if rotary == d_head else rotary, norm="layernorm", norm_position="pre",
        activation=_ACTIVATIONS[act], qkv_bias=False, out_bias=False, ffn_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool), last_out_bias=True,
        dropout=float(f.get("hidden_dropout", 0.0, float)),
        attention_dropout=float(f.get("attention_dropout", 0.1, float)),
    )


GPT_NEOX_JAPANESE_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "gpt_neox_japanese": _gpt_neox_japanese}
GPT_NEOX_JAPANESE_ARCHITECTURES = {"GPTNeoXJapaneseForCausalLM": "gpt_neox_japanese"}
GPT_NEOX_JAPANESE_NAMES = {"gpt_neox_japanese": {**LLAMA_NAMES, "dropout": "hidden_dropout"}}
