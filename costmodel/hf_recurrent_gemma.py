"""config.json reader of Google's RecurrentGemma (model_type "recurrent_gemma",
RecurrentGemmaForCausalLM, transformers 5.24 models/recurrent_gemma): Griffin's residual blocks.

Each of num_hidden_layers blocks (RecurrentGemmaDecoderLayer) is a temporal_pre_norm, a temporal
block, a residual add, a channel_pre_norm, an MLP, a residual add: two of nemotron_h's one-mixer
layers (ModelConfig.mixer_layers). The temporal block of layer i is block_types[i % len] (the
class's layers_block_type: block_types repeated): "recurrent", the RG-LRU recurrent block
(blocks/rglru.py, mixer "rglru"), or "attention", local attention within attention_window_size
(every attention layer slides: ModelConfig.sliding_window) with q, k, v (attention_bias) and an
o_proj that always has a bias, RoPE on partial_rotary_factor of each head (0.5 by default),
head_dim = hidden_size // num_attention_heads. The MLP (RecurrentGemmaMlp): gate and up projections
of intermediate_size // 2 with biases, hidden_activation (gelu_pytorch_tanh) on the gate, a down
projection with a bias. Gemma's (1 + w) RMSNorms in fp32, the embeddings times sqrt(hidden_size)
(a bf16 buffer, `normalizer`), a tied head (tie_word_embeddings), the logits soft-capped at
logits_soft_cap. Each attention layer builds its own rotary embedding (inv_freq and
original_inv_freq buffers).

Proven (tests/test_hf_recurrent_gemma.py): parameters at the class's defaults and at odd sizes,
buffers, the training forward's and step's matmul FLOPs, a prefill's and a cached decode step's,
the states and K/V held after a prefill, the bytes saved for backward (fp32 and bf16). Not
modelled, and said so by the workload's warning: the recurrent blocks' other FLOPs. A prompt or
training sequence of one token is refused (the class runs its decode branch).

Refused in one line: an activation other than gelu_pytorch_tanh or gelu (the tree's GeGLU), a
rope_type other than default (the class refuses it too), block_types other than recurrent and
attention or with no attention (the class fails with a cache), an lru_width not divisible by
num_attention_heads (the gates' blocks), a hidden_size not divisible by num_attention_heads (the
class floors head_dim), attention_dropout (not measured).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, rotary_fraction

#: block_types' names -> the tree's mixer.
_BLOCKS = {"recurrent": "rglru", "attention": "attention"}
#: hidden_activation -> the tree's gated activation (ACT2FN's gelu_pytorch_tanh and gelu).
_ACTIVATIONS = {"gelu_pytorch_tanh": "geglu_tanh", "gelu": "geglu"}


def _pattern(f: Fields, n_layers: int) -> tuple[str, ...]:
    """Two tree layers a block: its temporal mixer, then its MLP (RecurrentGemmaConfig's
    layers_block_type: block_types repeated to num_hidden_layers)."""
    types = f.data.get("block_types", ["recurrent", "recurrent", "attention"])
    if (not isinstance(types, (list, tuple)) or not types
            or any(not isinstance(t, str) or t not in _BLOCKS for t in types)):
        raise ConfigError(f"{f.source}: block_types must be a non-empty list of \"recurrent\" and "
                          f"\"attention\", got {show(types)}.")
    pattern = tuple(kind for i in range(n_layers) for kind in (_BLOCKS[types[i % len(types)]], "mlp"))
    if "attention" not in pattern:
        raise ConfigError(f"{f.source}: block_types give no attention block in {n_layers} blocks; transformers' "
                          "class cannot run those with a cache (DynamicCache.get_seq_length needs an attention "
                          "layer), which is not modelled.")
    return pattern


def _recurrent_gemma(f: Fields, name: str) -> ModelConfig:
    """recurrent_gemma (RecurrentGemmaForCausalLM): see the module docstring. Defaults:
    RecurrentGemmaConfig (5.24): 26 blocks of width 2,560, 10 heads, an MLP of 7,680 // 2."""
    d_model = f.get("hidden_size", 2560, minimum=1)
    n_layers = f.get("num_hidden_layers", 26, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    n_heads = f.get("num_attention_heads", 10, minimum=1)
    if d_model % n_heads:
        raise ConfigError(f"{f.source}: hidden_size ({d_model}) is not divisible by num_attention_heads "
                          f"({n_heads}); RecurrentGemmaConfig floors head_dim, which is not modelled.")
    n_kv = f.get("num_key_value_heads", n_heads, minimum=1)
    act = f.get("hidden_activation", "gelu_pytorch_tanh", str)
    if act not in _ACTIVATIONS:
        raise ConfigError(f"{f.source}: hidden_activation {show(act)} is not modelled for recurrent_gemma "
                          f"(only {' or '.join(_ACTIVATIONS)}).")
    rope = f.data.get("rope_parameters") or f.data.get("rope_scaling") or {}
    if not isinstance(rope, dict) or rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ConfigError(f"{f.source}: rope_parameters' rope_type must be default for recurrent_gemma "
                          "(RecurrentGemmaRotaryEmbedding refuses the others).")
    if float(f.get("attention_dropout", 0.0, float)):
        raise ConfigError(f"{f.source}: attention_dropout is not modelled for recurrent_gemma (not measured).")
    d_head = d_model // n_heads
    rotary = int(d_head * rotary_fraction(f, "partial_rotary_factor", 0.5))
    if rotary % 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor x head_dim ({d_head}) rotates {rotary} dimensions, "
                          "an odd count, which is not modelled (RoPE rotates pairs).")
    intermediate = f.get("intermediate_size", 3 * 2560, minimum=2)
    pattern = _pattern(f, n_layers)
    lru = f.get("lru_width", d_model, minimum=1) if "rglru" in pattern else None
    if lru is not None and lru % n_heads:
        raise ConfigError(f"{f.source}: lru_width ({lru}) is not divisible by num_attention_heads ({n_heads}), "
                          "the RG-LRU's gate blocks.")
    window = f.get("attention_window_size", 2048, minimum=1)
    return ModelConfig(
        name=name, family="recurrent_gemma", vocab_size=f.get("vocab_size", 256000, minimum=1),
        d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv, d_head=d_head, d_ff=intermediate // 2,
        n_decoder_layers=len(pattern), position="rope", rotary_dim=rotary if rotary < d_head else None,
        norm="rmsnorm", norm_position="pre", activation=_ACTIVATIONS[act],
        qkv_bias=f.get("attention_bias", False, bool), out_bias=True, ffn_bias=True, lm_head_bias=False,
        head="lm", tie_embeddings=f.get("tie_word_embeddings", True, bool), scale_embeddings=True,
        logit_softcap=f.get("logits_soft_cap", 30.0, float), sliding_window=window,
        mixer_layers=True, layer_pattern=pattern, lru_width=lru,
        conv_kernel=f.get("conv1d_width", 4, minimum=1) if lru is not None else None, conv_bias=True)


RECURRENT_GEMMA_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"recurrent_gemma": _recurrent_gemma}
RECURRENT_GEMMA_ARCHITECTURES: dict[str, str] = {"RecurrentGemmaForCausalLM": "recurrent_gemma"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
RECURRENT_GEMMA_NAMES: dict[str, dict[str, Any]] = {"recurrent_gemma": {
    **LLAMA_NAMES, "lru_width": "lru_width", "conv_kernel": "conv1d_width", "sliding_window": "attention_window_size",
    "logit_softcap": "logits_soft_cap", "layer_pattern": "block_types"}}
