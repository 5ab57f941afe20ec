"""config.json readers of LiquidAI's LFM2 (model_type "lfm2", Lfm2ForCausalLM, transformers 5.24
models/lfm2) and LFM2-MoE ("lfm2_moe", Lfm2MoeForCausalLM, models/lfm2_moe): hybrids of gated
short convolutions (blocks/shortconv.py) and full-attention layers.

A decoder layer (Lfm2DecoderLayer) is two of nemotron_h's one-mixer layers (ModelConfig.mixer_layers,
as hf_qwen_next.py's): its operator_norm, the short convolution ("conv" in layer_types) or the
attention, a residual add; then its ffn_norm, a SwiGLU MLP (w1, w3, w2, no bias), a residual add.
layer_types, else full_attn_idxs, else every layer attention (Lfm2Config.__post_init__). The
attention (Lfm2Attention): GQA without biases, RMSNorms on each query and key head before RoPE
over the whole head (Qwen3's). The MLP's width (Lfm2MLP): intermediate_size (block_ff_dim, where
given, wins), and where block_auto_adjust_ff_dim int(2 x it / 3), then where
int(block_ffn_dim_multiplier x it) rounded up to block_multiple_of. The
final norm is the class's embedding_norm; the head is tied unless tie_word_embeddings (or
tie_embedding, which wins) says not. conv_bias gives the conv, in_proj and out_proj biases.

lfm2_moe (Lfm2MoeDecoderLayer): the same layers, the MLP (intermediate_size wide, no adjustment) in
the first num_dense_layers and, after them, num_experts SwiGLU experts of moe_intermediate_size
under a sigmoid router (Lfm2MoeTopKRouter: a d -> E linear without bias in the model's dtype, the
top num_experts_per_tok of the scores plus an fp32 expert_bias buffer of E, the chosen scores
renormalised where norm_topk_prob, times routed_scaling_factor), no shared expert;
output_router_logits only returns the logits (Lfm2MoeForCausalLM adds no load-balancing loss).

Refused in one line: layer types other than conv and full_attention (the class's mask mapping has
no other key); for lfm2_moe a missing layer_types (Lfm2MoeConfig sets no default: the class
cannot build) and use_expert_bias false (no bias buffer: not modelled).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, mixer_kinds

_MIXERS = {"conv": "shortconv", "full_attention": "attention"}


def _mixers(f: Fields, n_layers: int) -> list[str]:
    """Each layer's mixer: layer_types, else full_attn_idxs (attention at those indices, the short
    convolution elsewhere), else attention everywhere (Lfm2Config.__post_init__)."""
    types = f.data.get("layer_types")
    if types is None:
        indices = f.data.get("full_attn_idxs")
        if indices is None:
            return ["attention"] * n_layers
        if not isinstance(indices, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in indices):
            raise ConfigError(f"{f.source}: full_attn_idxs must be a list of layer indices, got {show(indices)}.")
        return ["attention" if i in indices else "shortconv" for i in range(n_layers)]
    return mixer_kinds(f, types, n_layers, _MIXERS, "conv or full_attention")


def mlp_width(f: Fields, default: int) -> int:
    """Lfm2MLP's intermediate width from intermediate_size (block_ff_dim where given)."""
    width = f.get("block_ff_dim", f.get("intermediate_size", default, minimum=1), minimum=1)
    if not f.get("block_auto_adjust_ff_dim", True, bool):
        return width
    width = int(2 * width / 3)
    # Lfm2MLP skips the multiplier where it is None, which Lfm2Config (a strict float) refuses:
    # a null here reads as the default
    multiple = f.get("block_multiple_of", 256, minimum=1)
    width = int(f.get("block_ffn_dim_multiplier", 1.0, float) * width)
    width = multiple * ((width + multiple - 1) // multiple)
    if width < 1:
        raise ConfigError(f"{f.source}: the adjusted MLP width (block_auto_adjust_ff_dim) is {width}; "
                          "it must be at least 1.")
    return width


def _experts(f: Fields, n_layers: int) -> tuple[list[str], dict[str, Any]]:
    """lfm2_moe's FFN of each layer (the MLP below num_dense_layers, experts from there) and the
    expert fields (Lfm2MoeConfig's defaults, 5.24)."""
    if not f.get("use_expert_bias", True, bool):
        raise ConfigError(f"{f.source}: use_expert_bias false (a sigmoid router without its expert_bias "
                          "buffer) is not modelled for lfm2_moe.")
    dense = f.get("num_dense_layers", 2, minimum=0)
    ffns = ["mlp" if i < dense else "moe" for i in range(n_layers)]
    experts = dict(n_experts=f.get("num_experts", 32, minimum=1), top_k=f.get("num_experts_per_tok", 4, minimum=1),
                   d_expert=f.get("moe_intermediate_size", 1792, minimum=1), router="sigmoid",
                   renormalize_top_k=f.get("norm_topk_prob", True, bool))
    return ffns, (experts if "moe" in ffns else {})


def _read(f: Fields, name: str, family: str) -> ModelConfig:
    """lfm2 (Lfm2ForCausalLM) and lfm2_moe (Lfm2MoeForCausalLM): see the module docstring.
    Defaults: Lfm2Config and Lfm2MoeConfig (5.24)."""
    moe = family == "lfm2_moe"
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    if moe and f.data.get("layer_types") is None:
        raise ConfigError(f"{f.source}: lfm2_moe needs layer_types (conv or full_attention for each layer); "
                          "Lfm2MoeConfig has no default for it, so the class cannot build without it.")
    mixers = _mixers(f, n_layers)
    ffns, experts = _experts(f, n_layers) if moe else (["mlp"] * n_layers, {})
    pattern = tuple(kind for pair in zip(mixers, ffns) for kind in pair)
    d_model = f.get("hidden_size", 2048 if moe else 2560, minimum=1)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    d_head = f.get("head_dim", d_model // n_heads, minimum=1)  # Lfm2Attention's getattr
    conv = dict(conv_kernel=f.get("conv_L_cache", 3, minimum=1)) if "shortconv" in mixers else {}
    tie = f.get("tie_embedding", f.get("tie_word_embeddings", True, bool), bool)
    return ModelConfig(
        name=name, family=family, vocab_size=f.get("vocab_size", 65536, minimum=1), d_model=d_model,
        n_heads=n_heads, n_kv_heads=f.get("num_key_value_heads", 8, minimum=1), d_head=d_head,
        d_ff=f.get("intermediate_size", 7168, minimum=1) if moe else mlp_width(f, 12288), n_decoder_layers=len(pattern),
        max_positions=f.get("max_position_embeddings", 128000, minimum=1), position="rope", rotary_dim=d_head,
        norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=False, out_bias=False,
        ffn_bias=False, lm_head_bias=False, head="lm", tie_embeddings=tie, qk_norm=True, mixer_layers=True,
        layer_pattern=pattern, mamba_bias=False, conv_bias=f.get("conv_bias", False, bool), **conv, **experts)


#: model_type -> its reader.
LFM2_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    family: (lambda f, name, family=family: _read(f, name, family)) for family in ("lfm2", "lfm2_moe")}

#: The transformers class, for a config.json that names `architectures` only.
LFM2_ARCHITECTURES: dict[str, str] = {"Lfm2ForCausalLM": "lfm2", "Lfm2MoeForCausalLM": "lfm2_moe"}

_NAMES = {**LLAMA_NAMES, "conv_kernel": "conv_L_cache", "layer_pattern": "layer_types"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
LFM2_NAMES: dict[str, dict[str, Any]] = {
    "lfm2": _NAMES, "lfm2_moe": {**_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
                                 "d_expert": "moe_intermediate_size"}}
