"""config.json reader of AI2's OLMo Hybrid (model_type "olmo_hybrid", OlmoHybridForCausalLM,
transformers 5.24 models/olmo_hybrid): OLMo 3's attention layers beside Gated DeltaNet layers
(blocks/deltanet.py), each decoder layer followed by a SwiGLU MLP.

A decoder layer is two of nemotron_h's one-mixer layers (ModelConfig.mixer_layers). A
"linear_attention" layer (OlmoHybridLinearAttentionDecoderLayer) is pre-norm: input_layernorm, the
Gated DeltaNet, a residual add; post_attention_layernorm, the MLP, a residual add. Its mixer
(OlmoHybridGatedDeltaNet) has separate q, k, v, a, b, g and o projections, no biases
(ModelConfig.deltanet_split_projections: q, k and v concatenated before the depthwise conv, as
Qwen3-Next's fused projection feeds it; beta = sigmoid(b), doubled where linear_allow_neg_eigval,
an elementwise product the mixer's other FLOPs leave out with the rest of its elementwise work).
A "full_attention" layer (OlmoHybridAttentionDecoderLayer) is OLMo 3's: no norm before the
attention or the MLP, a norm after each (ModelConfig.post_norm_mixers), RMSNorms over the whole
query and key projections (qk_norm_whole), RoPE with fp32 cos and sin (OlmoHybridRotaryEmbedding),
none where rope_parameters' rope_theta is null (OlmoHybridModel builds no rotary embedding then).
layer_types, else OlmoHybridConfig's rule: full attention where i % 4 == 3, the last layer if none.

Proven (tests/test_hf_olmo_hybrid.py): the parameters (the class's defaults and odd configs on
the meta device), the training forward's, a prefill's and a decode step's matmul FLOPs, the cache after a
prefill, and the bytes saved for backward by the attention layer and by a pre-norm MLP (by
module, fp32 and bf16). Not compared: the Gated DeltaNet mixer's saved bytes and other FLOPs (not
modelled; the workload warns, as for Qwen3-Next), hence the whole model's.

Refused in one sentence each: activations other than silu (the MLP and the mixer's conv share
hidden_act), rope types other than default, value heads that key heads do not divide, layer types
other than the class's, and a layer_types without a layer of each kind (the class refuses those).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, mixer_kinds
from .hf_qwen_next import RULE_CHUNK

_MIXERS = {"linear_attention": "deltanet", "full_attention": "attention"}


def _mixers(f: Fields, n_layers: int) -> list[str]:
    """layer_types, else OlmoHybridConfig.__post_init__'s rule; at least one layer of each kind
    (OlmoHybridConfig.validate_architecture)."""
    types = f.data.get("layer_types")
    if types is None:
        mixers = ["attention" if i % 4 == 3 else "deltanet" for i in range(n_layers)]
        if "attention" not in mixers:
            mixers[-1] = "attention"
    else:
        mixers = mixer_kinds(f, types, n_layers, _MIXERS, "linear_attention or full_attention")
    if len(set(mixers)) != 2:
        raise ConfigError(f"{f.source}: layer_types must hold at least one linear_attention and one "
                          "full_attention layer, as OlmoHybridConfig requires.")
    return mixers


def _rope(f: Fields) -> bool:
    """True where the model rotates (rope_parameters' rope_theta set), False for NoPE; rope types
    other than the default refused."""
    rope = f.get("rope_parameters", {}, dict)
    if f.data.get("rope_theta", 0) is None or ("rope_theta" in rope and rope["rope_theta"] is None):
        return False
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":
        raise ConfigError(f"{f.source}: rope_type {show(kind)} is not modelled for olmo_hybrid (only default).")
    return True


def _read(f: Fields, name: str) -> ModelConfig:
    """olmo_hybrid (OlmoHybridForCausalLM): see the module docstring. Defaults: OlmoHybridConfig (5.24)."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for olmo_hybrid (only silu, "
                          "which its MLPs and its Gated DeltaNet conv both run).")
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    mixers = _mixers(f, n_layers)
    pattern = tuple(kind for mixer in mixers for kind in (mixer, "mlp"))
    d_model = f.get("hidden_size", 3840, minimum=1)
    n_heads = f.get("num_attention_heads", 30, minimum=1)
    k_heads = f.get("linear_num_key_heads", n_heads, minimum=1)
    v_heads = f.get("linear_num_value_heads", n_heads, minimum=1)
    if v_heads % k_heads:
        raise ConfigError(f"{f.source}: linear_num_value_heads ({v_heads}) must be a multiple of "
                          f"linear_num_key_heads ({k_heads}), as the rule's head grouping requires.")
    k_dim = f.get("linear_key_head_dim", int(0.75 * d_model / k_heads), minimum=1)
    bias = f.get("attention_bias", False, bool)
    rope = _rope(f)
    return ModelConfig(
        name=name, family="olmo_hybrid", vocab_size=f.get("vocab_size", 100352, minimum=1), d_model=d_model,
        n_heads=n_heads, n_kv_heads=f.get("num_key_value_heads", n_heads, minimum=1),
        d_head=f.get("head_dim", d_model // n_heads, minimum=1), d_ff=f.get("intermediate_size", 11008, minimum=1),
        n_decoder_layers=len(pattern), max_positions=f.get("max_position_embeddings", 65536, minimum=1),
        position="rope" if rope else "none", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=bias, out_bias=bias, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), qk_norm=True, qk_norm_whole=True,
        mixer_layers=True, layer_pattern=pattern, post_norm_mixers=("attention",), mamba_bias=False,
        conv_bias=False, deltanet_split_projections=True, deltanet_k_heads=k_heads, deltanet_v_heads=v_heads,
        deltanet_k_dim=k_dim, deltanet_v_dim=f.get("linear_value_head_dim", 2 * k_dim, minimum=1),
        conv_kernel=f.get("linear_conv_kernel_dim", 4, minimum=1), chunk_size=RULE_CHUNK)


#: model_type -> its reader.
OLMO_HYBRID_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"olmo_hybrid": _read}

#: The transformers class, for a config.json that names `architectures` only.
OLMO_HYBRID_ARCHITECTURES: dict[str, str] = {"OlmoHybridForCausalLM": "olmo_hybrid"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
OLMO_HYBRID_NAMES: dict[str, dict[str, Any]] = {"olmo_hybrid": {
    **LLAMA_NAMES, "deltanet_k_heads": "linear_num_key_heads", "deltanet_v_heads": "linear_num_value_heads",
    "deltanet_k_dim": "linear_key_head_dim", "deltanet_v_dim": "linear_value_head_dim",
    "conv_kernel": "linear_conv_kernel_dim", "layer_pattern": "layer_types"}}
