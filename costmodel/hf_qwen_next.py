"""config.json readers of the Qwen3-Next family: Qwen3-Next (model_type "qwen3_next",
Qwen3NextForCausalLM), Qwen3.5 MoE and Qwen3.5 (their text configs "qwen3_5_moe_text" and
"qwen3_5_text", Qwen3_5MoeForCausalLM and Qwen3_5ForCausalLM; the multimodal "qwen3_5_moe" and
"qwen3_5" configs are read as their text_config by hf_multimodal.py), transformers 5.24: hybrids
of Gated DeltaNet linear-attention layers (blocks/deltanet.py) and gated full-attention layers.

A decoder layer is two of nemotron_h's one-mixer layers (ModelConfig.mixer_layers, as
hf_hybrid.py's Granite and Bamba): its input norm, the Gated DeltaNet mixer or the attention, a
residual add; then its post-attention norm, the FFN, a residual add. Full attention every
full_attention_interval-th layer (4) unless layer_types says which. The attention
(Qwen3NextAttention, Qwen3_5Attention): q_proj of 2 h d_h (the query and a sigmoid gate on the
output, attention_output_gate), RMSNorms on each query and key head, RoPE on partial_rotary_factor
(0.25 by default) of each head (Qwen3.5's interleaved multimodal sections rotate the same widths:
the same matmuls). The RMSNorms scale by 1 + weight, the same parameters and FLOPs as a weight.
The FFN: qwen3_next experts (a softmax over num_experts logits, the top num_experts_per_tok,
renormalised where norm_topk_prob) with a shared expert times sigmoid(shared_expert_gate(x)), or
Qwen's SwiGLU MLP on mlp_only_layers and off the decoder_sparse_step; qwen3_5_moe the same experts
in every layer, always renormalised; qwen3_5 the MLP in every layer. Qwen3.5's mixer builds its
input projections as four linears (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a): the same
parameters and FLOPs as qwen3_next's two, modelled (and timed) as those two.

Refused in one sentence each: activations other than silu (the MLPs and the mixer's conv share
hidden_act), output_router_logits (the load-balancing loss in the training loss), layer types other
than linear_attention and full_attention, value heads that key heads do not divide.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, mixer_kinds, rotary_fraction

_MIXERS = {"linear_attention": "deltanet", "full_attention": "attention"}
#: torch_chunk_gated_delta_rule's chunk_size default, which Qwen3NextGatedDeltaNet does not pass.
RULE_CHUNK = 64


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    """layer_types, else Qwen3NextConfig's rule: full attention every full_attention_interval-th
    layer (4 by default), the others linear attention."""
    types = f.data.get("layer_types")
    if types is None:
        every = f.get("full_attention_interval", 4, minimum=1)
        return ["deltanet" if (i + 1) % every else "attention" for i in range(n_layers)]
    return mixer_kinds(f, types, n_layers, _MIXERS, "linear_attention or full_attention")


def _ffns(f: Fields, n_layers: int, experts: int) -> list[str]:
    """Each layer's FFN, as Qwen3NextDecoderLayer chooses: experts where the layer is not in
    mlp_only_layers, num_experts > 0 and (i + 1) % decoder_sparse_step == 0, else the MLP."""
    step = f.get("decoder_sparse_step", 1, minimum=1)
    dense = f.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense):
        raise ConfigError(f"{f.source}: mlp_only_layers must be a list of layer indices, got {show(dense)}.")
    return ["moe" if i not in dense and experts > 0 and (i + 1) % step == 0 else "mlp" for i in range(n_layers)]


#: Each type's configuration class defaults (transformers 5.24: Qwen3NextConfig, Qwen3_5MoeTextConfig,
#: Qwen3_5TextConfig); experts None where the type has none (every layer the MLP).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen3_next": dict(vocab_size=151936, hidden_size=2048, intermediate_size=5632, num_hidden_layers=48,
                       num_key_value_heads=2, num_experts=512, num_experts_per_tok=10),
    "qwen3_5_moe_text": dict(vocab_size=248320, hidden_size=2048, intermediate_size=None, num_hidden_layers=40,
                             num_key_value_heads=2, num_experts=256, num_experts_per_tok=8),
    "qwen3_5_text": dict(vocab_size=248320, hidden_size=4096, intermediate_size=12288, num_hidden_layers=32,
                         num_key_value_heads=4, num_experts=None),
}


def _ffn_kinds(f: Fields, family: str, n_layers: int) -> tuple[list[str], dict[str, Any]]:
    """Each layer's FFN and the expert fields: qwen3_next's rule (_ffns), qwen3_5_moe's experts in
    every layer (its router always renormalises the top k), qwen3_5's MLP in every layer."""
    defaults = _DEFAULTS[family]
    if defaults["num_experts"] is None:
        return ["mlp"] * n_layers, {}
    experts = f.get("num_experts", defaults["num_experts"])
    check_int(f.source, "num_experts", experts, minimum=0 if family == "qwen3_next" else 1)
    ffns = _ffns(f, n_layers, experts) if family == "qwen3_next" else ["moe"] * n_layers
    fields = dict(n_experts=experts, top_k=f.get("num_experts_per_tok", defaults["num_experts_per_tok"], minimum=1),
                  d_expert=f.get("moe_intermediate_size", 512, minimum=1),
                  d_shared=f.get("shared_expert_intermediate_size", 512, minimum=1), shared_expert_gate=True,
                  router="softmax", renormalize_top_k=(f.get("norm_topk_prob", True, bool)
                                                       if family == "qwen3_next" else True))
    return ffns, (fields if "moe" in ffns else {})


def _read(f: Fields, name: str, family: str) -> ModelConfig:
    """qwen3_next, qwen3_5_moe_text, qwen3_5_text: see the module docstring."""
    defaults = _DEFAULTS[family]
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for {family} (only silu, "
                          "which its MLPs and its Gated DeltaNet conv both run).")
    if f.get("output_router_logits", False, bool):
        raise ConfigError(f"{f.source}: output_router_logits (the router's load-balancing loss in the "
                          f"training loss) is not modelled for {family}.")
    n_layers = f.get("num_hidden_layers", defaults["num_hidden_layers"], minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    mixers = _layer_types(f, n_layers)
    ffns, experts_fields = _ffn_kinds(f, family, n_layers)
    pattern = tuple(kind for pair in zip(mixers, ffns) for kind in pair)
    k_heads = f.get("linear_num_key_heads", 16, minimum=1)
    v_heads = f.get("linear_num_value_heads", 32, minimum=1)
    if v_heads % k_heads:
        raise ConfigError(f"{f.source}: linear_num_value_heads ({v_heads}) must be a multiple of "
                          f"linear_num_key_heads ({k_heads}), as the class's head grouping requires.")
    sizes = dict(deltanet_k_heads=k_heads, deltanet_v_heads=v_heads,
                 deltanet_k_dim=f.get("linear_key_head_dim", 128, minimum=1),
                 deltanet_v_dim=f.get("linear_value_head_dim", 128, minimum=1),
                 conv_kernel=f.get("linear_conv_kernel_dim", 4, minimum=1), chunk_size=RULE_CHUNK)
    d_head = f.get("head_dim", 256, minimum=1)
    bias = f.get("attention_bias", False, bool)
    # qwen3_5_moe has no dense MLP: d_ff (which no leaf reads) is the shared expert's width
    d_ff = (f.get("intermediate_size", defaults["intermediate_size"], minimum=1)
            if defaults["intermediate_size"] else experts_fields.get("d_shared", 1))
    return ModelConfig(
        name=name, family=family, vocab_size=f.get("vocab_size", defaults["vocab_size"], minimum=1),
        d_model=f.get("hidden_size", defaults["hidden_size"], minimum=1),
        n_heads=f.get("num_attention_heads", 16, minimum=1),
        n_kv_heads=f.get("num_key_value_heads", defaults["num_key_value_heads"], minimum=1), d_head=d_head,
        d_ff=d_ff, n_decoder_layers=len(pattern), max_positions=f.get("max_position_embeddings", 32768),
        position="rope", rotary_dim=int(d_head * rotary_fraction(f, "partial_rotary_factor", 0.25)),
        norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=bias, out_bias=bias,
        ffn_bias=False, lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), qk_norm=True, attention_output_gate=True,
        mixer_layers=True, layer_pattern=pattern, mamba_bias=False, conv_bias=False,
        **(sizes if "deltanet" in pattern else {}), **experts_fields)


#: model_type -> its reader.
QWEN_NEXT_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    family: (lambda f, name, family=family: _read(f, name, family)) for family in _DEFAULTS}

#: The transformers class, for a config.json that names `architectures` only.
QWEN_NEXT_ARCHITECTURES: dict[str, str] = {"Qwen3NextForCausalLM": "qwen3_next",
                                           "Qwen3_5MoeForCausalLM": "qwen3_5_moe_text",
                                           "Qwen3_5ForCausalLM": "qwen3_5_text"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
QWEN_NEXT_NAMES: dict[str, dict[str, Any]] = {family: {
    **LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok", "d_expert": "moe_intermediate_size",
    "d_shared": "shared_expert_intermediate_size", "deltanet_k_heads": "linear_num_key_heads",
    "deltanet_v_heads": "linear_num_value_heads", "deltanet_k_dim": "linear_key_head_dim",
    "deltanet_v_dim": "linear_value_head_dim", "conv_kernel": "linear_conv_kernel_dim",
    "layer_pattern": "layer_types"} for family in _DEFAULTS}
