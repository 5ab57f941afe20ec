"""config.json reader of OpenAI's GPT (model_type "openai-gpt": OpenAIGPTLMHeadModel, GPT-1,
openai-community/openai-gpt).

transformers 5.24's modeling_openai.py: a token table and a learned position table of n_positions
rows looked up by a slice of the position_ids buffer, dropout on their sum, n_layer post-LayerNorm
blocks (`ln_1(x + attn(x))`, `ln_2(n + mlp(n))`, no final LayerNorm), a fused Conv1D c_attn and a
Conv1D c_proj with biases, scores divided by sqrt(d_head) and masked as `w * b + -1e4 * (1 - b)` with
a (1, 1, P, P) lower-triangular buffer in the model dtype held by every layer, an MLP of 4 d (c_fc,
c_proj with biases) and a head tied to the token table. The class runs eager attention only.

The class has no KV cache: OpenAIGPTLMHeadModel.forward takes no past key values, so generation
reruns the whole prefix for every token (costmodel/facts.json kv_cache_held false for the family).

Refused in one line: an activation (afn) the tree has no leaf for, and dropout probabilities that
differ (one dropout probability a model)."""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import Fields, head_width

#: OpenAIGPTConfig's afn as modeling_openai.ACT_FNS runs it -> the tree's activation ("gelu" is
#: transformers' gelu_new, the tanh approximation written in Python).
_ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu"}

_DROPOUTS = ("resid_pdrop", "embd_pdrop", "attn_pdrop")


def _openai_gpt(f: Fields, name: str) -> ModelConfig:
    """OpenAI GPT (see the module docstring); defaults are OpenAIGPTConfig's."""
    n_layers = f.get("n_layer", 12)
    check_int(f.source, "n_layer", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("n_embd", 768)
    n_heads = f.get("n_head", 12, minimum=1)
    head_width(f, d_model, n_heads, "n_head", "n_embd")
    act = f.get("afn", "gelu", str)
    if act not in _ACTIVATIONS:
        raise ConfigError(f"{f.source}: unsupported afn {show(act)} for openai-gpt (gelu and relu are modelled).")
    dropouts = {key: float(f.get(key, 0.1, (int, float))) for key in _DROPOUTS}
    if len(set(dropouts.values())) > 1:
        raise ConfigError(f"{f.source}: resid_pdrop, embd_pdrop and attn_pdrop differ "
                          f"({', '.join(f'{k} {v}' for k, v in dropouts.items())}); one dropout "
                          "probability a model is modelled for openai-gpt.")
    return ModelConfig(
        name=name, family="openai_gpt", vocab_size=f.get("vocab_size", 40478), d_model=d_model,
        n_heads=n_heads, d_ff=4 * d_model, n_decoder_layers=n_layers,
        max_positions=f.get("n_positions", 512), position="learned",
        norm="layernorm", norm_position="post", activation=_ACTIVATIONS[act],
        qkv_bias=True, out_bias=True, ffn_bias=True, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=dropouts["resid_pdrop"],
    )


#: model_type -> its reader.
OPENAI_GPT_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"openai-gpt": _openai_gpt}

#: transformers class -> model_type.
OPENAI_GPT_ARCHITECTURES = {"OpenAIGPTLMHeadModel": "openai-gpt", "OpenAIGPTModel": "openai-gpt"}

#: The config.json names of ModelConfig's fields (for errors).
OPENAI_GPT_NAMES = {"openai_gpt": {"n_heads": "n_head", "d_model": "n_embd", "n_decoder_layers": "n_layer",
                                   "max_positions": "n_positions"}}
