"""config.json reader of Qwen3-Next (model_type "qwen3_next", Qwen3NextForCausalLM, transformers
5.24's models/qwen3_next): a hybrid of Gated DeltaNet linear-attention layers (blocks/deltanet.py)
and gated full-attention layers, each decoder layer's FFN a mixture of experts with a gated shared
expert (or Qwen's SwiGLU MLP on mlp_only_layers and off the decoder_sparse_step).

A decoder layer is two of nemotron_h's one-mixer layers (ModelConfig.mixer_layers, as
hf_hybrid.py's Granite and Bamba): its input norm, the Gated DeltaNet mixer or the attention, a
residual add; then its post-attention norm, the FFN, a residual add. The attention (Qwen3NextAttention):
q_proj of 2 h d_h (the query and a sigmoid gate on the output, attention_output_gate), RMSNorms on
each query and key head, RoPE on partial_rotary_factor (0.25 by default) of each head. The RMSNorms
scale by 1 + weight (zero-initialised), the same parameters and FLOPs as a weight. The experts:
a softmax over num_experts logits, the top num_experts_per_tok, renormalised where norm_topk_prob;
the shared expert (shared_expert_intermediate_size) times sigmoid(shared_expert_gate(x)).

Refused in one sentence each: activations other than silu (the MLPs and the mixer's conv share
hidden_act), output_router_logits (the load-balancing loss in the training loss), layer types other
than linear_attention and full_attention, value heads that key heads do not divide.
qwen3_5 and qwen3_5_moe (the same mixer with in_proj_qkv, in_proj_z, in_proj_b and in_proj_a as
four linears, and multimodal RoPE sections) are not read yet.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, rotary_fraction

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
    if (not isinstance(types, list) or len(types) != n_layers
            or any(not isinstance(t, str) or t not in _MIXERS for t in types)):
        raise ConfigError(f"{f.source}: layer_types must give linear_attention or full_attention for each "
                          f"of the {n_layers} layers, got {show(types)}.")
    return [_MIXERS[t] for t in types]


def _ffns(f: Fields, n_layers: int, experts: int) -> list[str]:
    """Each layer's FFN, as Qwen3NextDecoderLayer chooses: experts where the layer is not in
    mlp_only_layers, num_experts > 0 and (i + 1) % decoder_sparse_step == 0, else the MLP."""
    step = f.get("decoder_sparse_step", 1, minimum=1)
    dense = f.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense):
        raise ConfigError(f"{f.source}: mlp_only_layers must be a list of layer indices, got {show(dense)}.")
    return ["moe" if i not in dense and experts > 0 and (i + 1) % step == 0 else "mlp" for i in range(n_layers)]


def _qwen3_next(f: Fields, name: str) -> ModelConfig:
    """qwen3_next: see the module docstring. Defaults: Qwen3NextConfig (5.24)."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for qwen3_next (only silu, "
                          "which its MLPs and its Gated DeltaNet conv both run).")
    if f.get("output_router_logits", False, bool):
        raise ConfigError(f"{f.source}: output_router_logits (the router's load-balancing loss in the "
                          "training loss) is not modelled for qwen3_next.")
    n_layers = f.get("num_hidden_layers", 48, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    experts = f.get("num_experts", 512)
    check_int(f.source, "num_experts", experts, minimum=0)
    mixers, ffns = _layer_types(f, n_layers), _ffns(f, n_layers, experts)
    pattern = tuple(kind for pair in zip(mixers, ffns) for kind in pair)
    k_heads = f.get("linear_num_key_heads", 16, minimum=1)
    v_heads = f.get("linear_num_value_heads", 32, minimum=1)
    if v_heads % k_heads:
        raise ConfigError(f"{f.source}: linear_num_value_heads ({v_heads}) must be a multiple of "
                          f"linear_num_key_heads ({k_heads}), as the class's head grouping requires.")
    deltanet = "deltanet" in pattern
    sizes = dict(deltanet_k_heads=k_heads, deltanet_v_heads=v_heads,
                 deltanet_k_dim=f.get("linear_key_head_dim", 128, minimum=1),
                 deltanet_v_dim=f.get("linear_value_head_dim", 128, minimum=1),
                 conv_kernel=f.get("linear_conv_kernel_dim", 4, minimum=1), chunk_size=RULE_CHUNK)
    n_heads = f.get("num_attention_heads", 16, minimum=1)
    d_head = f.get("head_dim", 256, minimum=1)
    bias = f.get("attention_bias", False, bool)
    moe = "moe" in pattern
    experts_fields = dict(n_experts=experts, top_k=f.get("num_experts_per_tok", 10, minimum=1),
                          d_expert=f.get("moe_intermediate_size", 512, minimum=1),
                          d_shared=f.get("shared_expert_intermediate_size", 512, minimum=1),
                          shared_expert_gate=True, router="softmax",
                          renormalize_top_k=f.get("norm_topk_prob", True, bool))
    return ModelConfig(
        name=name, family="qwen3_next", vocab_size=f.get("vocab_size", 151936, minimum=1),
        d_model=f.get("hidden_size", 2048, minimum=1), n_heads=n_heads,
        n_kv_heads=f.get("num_key_value_heads", 2, minimum=1), d_head=d_head,
        d_ff=f.get("intermediate_size", 5632, minimum=1), n_decoder_layers=len(pattern),
        max_positions=f.get("max_position_embeddings", 32768), position="rope",
        rotary_dim=int(d_head * rotary_fraction(f, "partial_rotary_factor", 0.25)),
        norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=bias, out_bias=bias,
        ffn_bias=False, lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), qk_norm=True, attention_output_gate=True,
        mixer_layers=True, layer_pattern=pattern, mamba_bias=False, conv_bias=False,
        **(sizes if deltanet else {}), **(experts_fields if moe else {}))


#: model_type -> its reader.
QWEN_NEXT_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"qwen3_next": _qwen3_next}

#: The transformers class, for a config.json that names `architectures` only.
QWEN_NEXT_ARCHITECTURES: dict[str, str] = {"Qwen3NextForCausalLM": "qwen3_next"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
QWEN_NEXT_NAMES: dict[str, dict[str, Any]] = {
    "qwen3_next": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
                   "d_expert": "moe_intermediate_size", "d_shared": "shared_expert_intermediate_size",
                   "deltanet_k_heads": "linear_num_key_heads", "deltanet_v_heads": "linear_num_value_heads",
                   "deltanet_k_dim": "linear_key_head_dim", "deltanet_v_dim": "linear_value_head_dim",
                   "conv_kernel": "linear_conv_kernel_dim", "layer_pattern": "layer_types"},
}
