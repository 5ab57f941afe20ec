"""config.json reader of JetMoE (model_type "jetmoe": JetMoeForCausalLM, jetmoe/jetmoe-8b; transformers
5.24 models/jetmoe/modeling_jetmoe.py). Defaults are JetMoeConfig's.

Each of num_hidden_layers pre-norm layers (JetMoeRMSNorm, Llama's form) runs
- a mixture of attention heads (JetMoeMoA; blocks/attention_experts.py): the top num_experts_per_tok
  (k) of num_local_experts (E) experts, each a query projection hidden_size -> kv_channels x
  num_key_value_heads and an output projection back, chosen per token by JetMoeTopKGating (a linear
  d -> E, its logits in fp32, their top k, a softmax over those k: the tree's "topk_softmax" router);
  one kv_proj (d -> 2 h_kv kv_channels, no bias) whose keys and values are repeated k times before the
  kernel; RoPE on kv_channels; a d-wide bias after the output projections;
- a mixture of MLP experts (JetMoeMoE): the same E and k with its own router, each expert a SwiGLU of
  intermediate_size (input_linear d -> 2 d_ff, output_linear d_ff -> d) run as JetMoeParallelExperts
  (facts.expert_dispatch "parallel_experts"), and a d-wide bias after the sum.
So num_attention_heads is k x num_key_value_heads (JetMoeConfig.__post_init__ sets it whatever the file
says) of width kv_channels (head_dim in the file maps to it). A final RMSNorm (rms_norm_eps; the layers'
norms use 1e-6), a head tied by default.

Refused in one line: activation_function other than silu (the experts are modelled as SwiGLU),
num_experts_per_tok above num_local_experts (the class refuses it), output_router_logits (the
load-balancing loss: hf_fields.check_router_loss).
"""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields


def _jetmoe(f: Fields, name: str) -> ModelConfig:
    """JetMoE (see the module docstring)."""
    n_layers = f.get("num_hidden_layers", 12)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    act = f.get("activation_function", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for jetmoe "
                          "(its experts are modelled as SwiGLU).")
    experts = f.get("num_local_experts", 8, minimum=1)
    top_k = f.get("num_experts_per_tok", 2, minimum=1)
    if top_k > experts:
        raise ConfigError(f"{f.source}: num_experts_per_tok ({top_k}) is more than num_local_experts "
                          f"({experts}), which JetMoeConfig refuses.")
    kv_heads = f.get("num_key_value_heads", 16, minimum=1)
    head_dim = f.get("kv_channels", f.get("head_dim", 128))
    check_int(f.source, "kv_channels", head_dim)
    return ModelConfig(
        name=name, family="jetmoe", vocab_size=f.get("vocab_size", 32000), d_model=f.get("hidden_size", 2048),
        n_heads=top_k * kv_heads, n_kv_heads=kv_heads, d_head=head_dim, d_ff=f.get("intermediate_size", 5632),
        n_decoder_layers=n_layers, max_positions=f.get("max_position_embeddings", 4096), position="rope",
        norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=False, out_bias=False,
        ffn_bias=False, lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), n_experts=experts, top_k=top_k,
        router="topk_softmax", renormalize_top_k=False, moe_output_bias=True, attention_experts=True,
    )


#: model_type -> its reader.
JETMOE_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"jetmoe": _jetmoe}

#: transformers class -> model_type.
JETMOE_ARCHITECTURES = {"JetMoeForCausalLM": "jetmoe"}

#: The config.json names of ModelConfig's fields (for errors).
JETMOE_NAMES = {"jetmoe": {**LLAMA_NAMES, "d_head": "kv_channels", "n_experts": "num_local_experts",
                           "top_k": "num_experts_per_tok"}}
