"""config.json reader of Moonshot's Kimi Linear (model_type "kimi_linear", KimiLinearForCausalLM,
transformers 5.24 models/kimi_linear): layers of Kimi Delta Attention (blocks/kda.py) and of
multi-head latent attention without RoPE, each followed by a dense SwiGLU MLP (the first
first_k_dense_replace layers) or DeepSeek-V3-style experts with a shared expert.

A decoder layer is two of nemotron_h's one-mixer layers (ModelConfig.mixer_layers): its
input_layernorm, the KDA mixer ("linear_attention") or the attention ("full_attention"), a residual
add; its post_attention_layernorm, the MLP or the experts, a residual add. layer_types, else
linear_attn_config's 1-indexed full_attn_layers and kda_layers, else KimiLinearConfig's rule (full
attention on layers 4, 8, ...). mlp_layer_types ("dense", "sparse"), else dense below
first_k_dense_replace (1). The attention (KimiLinearAttention): DeepSeek's MLA (q_proj, or
q_a_proj/q_b_proj through q_lora_rank; kv_a_proj_with_mqa to kv_lora_rank + qk_rope_head_dim,
kv_b_proj, o_proj); KimiLinearModel builds no rotary table. The experts (KimiLinearMoE): num_experts
SwiGLU experts of moe_intermediate_size under a sigmoid router with an fp32 e_score_correction_bias
buffer (the top num_experts_per_token of the best topk_group of n_group groups), n_shared_experts
shared experts as one MLP of their summed width. The head is never tied (KimiLinearForCausalLM's
_tied_weights_keys is empty, whatever tie_word_embeddings says).

Proven so far (tests/test_hf_kimi_linear.py): the parameters, and the training forward's, the
training step's, a prefill's and a decode step's matmul FLOPs, the cache after a prefill, the
bytes saved for backward (fp32; bf16 under eager attention; KDA's PyTorch fallback,
blocks/kda.saved_bytes_torch). Other FLOPs leave the KDA mixer's elementwise work out (the
workload's warning says so). The tree's MLA
needs RoPE on its decoupled key; KimiLinearModel has no rotary embedding (its qk_rope_head_dim key
is used unrotated): facts.rotary_tables "none" drops the tables (buffers exact), but the
rotation's elementwise work is still among the other FLOPs; the matmuls are the same.

Refused in one sentence each: activations other than silu, attention_bias (not measured here),
layer and MLP types other than the class's. output_router_logits is read and changes nothing:
KimiLinearForCausalLM (5.24) returns the router's logits but adds no load-balancing loss (its
forward's loss is the language model's alone; no router_aux_loss_coef in KimiLinearConfig).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, mixer_kinds

_MIXERS = {"linear_attention": "kda", "full_attention": "attention"}
#: chunk_kimi_delta_attention's chunk_size default, which KimiLinearDeltaAttention does not pass.
KDA_CHUNK = 64


def _mixers(f: Fields, n_layers: int, linear: dict[str, Any]) -> list[str]:
    """layer_types, else linear_attn_config's 1-indexed layer lists, else full attention where i % 4
    == 0 but layer 0 (KimiLinearConfig.__post_init__)."""
    types = f.data.get("layer_types")
    if types is None and "full_attn_layers" in linear and "kda_layers" in linear:
        types = [None] * n_layers
        for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
            indices = linear[key]
            if not isinstance(indices, list) or any(isinstance(i, bool) or not isinstance(i, int)
                                                    or not 1 <= i <= n_layers for i in indices):
                raise ConfigError(f"{f.source}: linear_attn_config.{key} must list layers 1 to {n_layers}, "
                                  f"got {show(indices)}.")
            for i in indices:
                types[i - 1] = kind
    if types is None:
        return ["attention" if i and i % 4 == 0 else "kda" for i in range(n_layers)]
    return mixer_kinds(f, types, n_layers, _MIXERS, "linear_attention or full_attention")


def _ffns(f: Fields, n_layers: int) -> list[str]:
    """mlp_layer_types, else dense below first_k_dense_replace (1)."""
    types = f.data.get("mlp_layer_types")
    if types is None:
        dense = f.get("first_k_dense_replace", 1, minimum=0)
        return ["mlp" if i < dense else "moe" for i in range(n_layers)]
    if (not isinstance(types, list) or len(types) != n_layers
            or any(t not in ("dense", "sparse") for t in types)):
        raise ConfigError(f"{f.source}: mlp_layer_types must give dense or sparse for each of the "
                          f"{n_layers} layers, got {show(types)}.")
    return ["mlp" if t == "dense" else "moe" for t in types]


def _refuse(f: Fields) -> None:
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for kimi_linear (only silu).")
    if f.get("attention_bias", False, bool):
        raise ConfigError(f"{f.source}: attention_bias (biases on q_a_proj, kv_a_proj_with_mqa and o_proj) "
                          "is not modelled for kimi_linear.")


def _read(f: Fields, name: str) -> ModelConfig:
    """kimi_linear (KimiLinearForCausalLM): see the module docstring. Defaults: KimiLinearConfig (5.24)."""
    _refuse(f)
    linear = f.get("linear_attn_config", {}, dict)
    n_layers = f.get("num_hidden_layers", 27, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    mixers, ffns = _mixers(f, n_layers, linear), _ffns(f, n_layers)
    pattern = tuple(kind for pair in zip(mixers, ffns) for kind in pair)
    heads = Fields(linear, f"{f.source}: linear_attn_config").get("num_heads", f.get("linear_num_heads", 32),
                                                                   minimum=1)
    width = Fields(linear, f"{f.source}: linear_attn_config").get("head_dim", f.get("linear_head_dim", 128),
                                                                  minimum=1)
    kernel = Fields(linear, f"{f.source}: linear_attn_config").get(
        "short_conv_kernel_size", f.get("linear_conv_kernel_dim", 4), minimum=1)
    kda = (dict(deltanet_k_heads=heads, deltanet_v_heads=heads, deltanet_k_dim=width, deltanet_v_dim=width,
                conv_kernel=kernel, chunk_size=KDA_CHUNK) if "kda" in mixers else {})
    moe_width = f.get("moe_intermediate_size", 1024, minimum=1)
    experts = f.get("num_experts", f.get("num_local_experts", 256), minimum=1)
    expert_fields = dict(
        n_experts=experts, top_k=f.get("num_experts_per_token", f.get("num_experts_per_tok", 8), minimum=1),
        d_expert=moe_width, d_shared=moe_width * f.get("num_shared_experts", f.get("n_shared_experts", 1), minimum=0),
        router="sigmoid", renormalize_top_k=f.get("moe_renormalize", f.get("norm_topk_prob", True, bool), bool),
        expert_groups=f.get("num_expert_group", f.get("n_group", 1), minimum=1),
        expert_groups_per_token=f.get("topk_group", 1, minimum=1)) if "moe" in ffns else {}
    nope, rope = f.get("qk_nope_head_dim", 128, minimum=1), f.get("qk_rope_head_dim", 64, minimum=1)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    return ModelConfig(
        name=name, family="kimi_linear", vocab_size=f.get("vocab_size", 163840, minimum=1),
        d_model=f.get("hidden_size", 2304, minimum=1), n_heads=n_heads, n_kv_heads=n_heads, d_head=nope + rope,
        rotary_dim=rope, kv_lora_rank=f.get("kv_lora_rank", 512, minimum=1),
        q_lora_rank=f.nullable("q_lora_rank", None), v_head_dim=f.get("v_head_dim", 128, minimum=1),
        d_ff=f.get("intermediate_size", 9216, minimum=1), n_decoder_layers=len(pattern),
        max_positions=f.get("model_max_length", f.get("max_position_embeddings", 1048576), minimum=1),
        position="rope", norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=False, out_bias=False,
        ffn_bias=False, lm_head_bias=False, head="lm", tie_embeddings=False,  # _tied_weights_keys = {}: never tied
        mixer_layers=True, layer_pattern=pattern, mamba_bias=False, conv_bias=False, **kda, **expert_fields)


#: model_type -> its reader.
KIMI_LINEAR_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"kimi_linear": _read}

#: The transformers class, for a config.json that names `architectures` only.
KIMI_LINEAR_ARCHITECTURES: dict[str, str] = {"KimiLinearForCausalLM": "kimi_linear"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
KIMI_LINEAR_NAMES: dict[str, dict[str, Any]] = {"kimi_linear": {
    **LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_token", "d_expert": "moe_intermediate_size",
    "deltanet_v_heads": "linear_attn_config.num_heads", "deltanet_v_dim": "linear_attn_config.head_dim",
    "conv_kernel": "linear_attn_config.short_conv_kernel_size", "layer_pattern": "layer_types"}}
