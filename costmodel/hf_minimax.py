"""config.json reader of MiniMax's linear-attention hybrids (model_type "minimax",
MiniMaxForCausalLM, transformers 5.24 models/minimax: MiniMax-Text-01, MiniMax-M1): layers of
lightning attention (blocks/lightning.py) and of GQA softmax attention, each followed by a
Mixtral-style mixture of experts.

A decoder layer (MiniMaxDecoderLayer) is two of nemotron_h's one-mixer layers
(ModelConfig.mixer_layers, as hf_qwen_next.py's): its input_layernorm, the lightning attention
("linear_attention" in layer_types) or the attention ("full_attention"), a residual add; then its
post_attention_layernorm, the experts, a residual add. layer_types, else MiniMaxConfig's rule:
full attention on even layers, lightning attention on odd ones. The residual is the normed input,
scaled by the layernorm_*_alpha/beta factors (*_attn_alpha_factor, mlp_beta_factor, ...): no
parameters and no matmuls. The attention (MiniMaxAttention): q, k, v and o projections without
biases over head_dim (hidden_size / num_attention_heads where null), RoPE over the whole head
(MiniMaxRotaryEmbedding's default rope reads no partial factor). The experts (MiniMaxSparseMoeBlock):
a d -> E router without bias, a float32 softmax, the top num_experts_per_tok renormalised, each a
SwiGLU of intermediate_size; no shared expert. The lightning attention's blocks are block_size
tokens (the tree's chunk_size).

Refused in one sentence each: activations other than silu (the experts and the lightning
attention's qkv share hidden_act), a sliding_window (no windowed mixer layers are modelled),
router_jitter_noise in training's input scaling (not measured here), output_router_logits (the
router's load-balancing loss), layer types other than linear_attention and full_attention.

Not modelled: a model with no full-attention layer runs no RoPE, so nothing keeps the rotary cos
and sin for backward; the tree's activations count them (2 e n d_h bytes) all the same.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, mixer_kinds

_MIXERS = {"linear_attention": "lightning", "full_attention": "attention"}


def _mixers(f: Fields, n_layers: int) -> list[str]:
    """layer_types, else MiniMaxConfig.__post_init__'s: full attention where (i + 1) % 2, else linear."""
    types = f.data.get("layer_types")
    if types is None:
        return ["attention" if (i + 1) % 2 else "lightning" for i in range(n_layers)]
    return mixer_kinds(f, types, n_layers, _MIXERS, "linear_attention or full_attention")


def _refuse(f: Fields) -> None:
    """The configurations the tree does not model (module docstring), one sentence each."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for minimax (only silu, which "
                          "its experts and its lightning attention's qkv both run).")
    if f.data.get("sliding_window") is not None:
        raise ConfigError(f"{f.source}: sliding_window {show(f.data['sliding_window'])} is not modelled for "
                          "minimax (its full-attention layers are modelled without a window).")
    if f.get("router_jitter_noise", 0.0, float) > 0:
        raise ConfigError(f"{f.source}: router_jitter_noise (the experts' input scaled by noise in "
                          "training) is not modelled for minimax.")


def _read(f: Fields, name: str) -> ModelConfig:
    """minimax (MiniMaxForCausalLM): see the module docstring. Defaults: MiniMaxConfig (5.24)."""
    _refuse(f)
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    mixers = _mixers(f, n_layers)
    pattern = tuple(kind for mixer in mixers for kind in (mixer, "moe"))
    d_model = f.get("hidden_size", 4096, minimum=1)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    d_head = f.get("head_dim", d_model // n_heads, minimum=1)  # the classes' `getattr(...) or d / h`
    width = f.get("intermediate_size", 14336, minimum=1)
    experts = f.get("num_experts", f.get("num_local_experts", 8, minimum=1), minimum=1)  # attribute_map's name wins
    block = dict(chunk_size=f.get("block_size", 256, minimum=1)) if "lightning" in mixers else {}
    return ModelConfig(
        name=name, family="minimax", vocab_size=f.get("vocab_size", 32000, minimum=1), d_model=d_model,
        n_heads=n_heads, n_kv_heads=f.get("num_key_value_heads", 8, minimum=1), d_head=d_head,
        d_ff=width, n_decoder_layers=len(pattern), max_positions=f.get("max_position_embeddings", 131072, minimum=1),
        position="rope", rotary_dim=d_head, norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=False, out_bias=False, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), mixer_layers=True, layer_pattern=pattern,
        mamba_bias=False, conv_bias=False, n_experts=experts, top_k=f.get("num_experts_per_tok", 2, minimum=1),
        d_expert=width, router="softmax", renormalize_top_k=True, **block)


#: model_type -> its reader.
MINIMAX_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"minimax": _read}

#: The transformers class, for a config.json that names `architectures` only.
MINIMAX_ARCHITECTURES: dict[str, str] = {"MiniMaxForCausalLM": "minimax"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
MINIMAX_NAMES: dict[str, dict[str, Any]] = {"minimax": {
    **LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok",
    "d_expert": "intermediate_size", "chunk_size": "block_size", "layer_pattern": "layer_types"}}
