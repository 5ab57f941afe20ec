"""config.json readers of the models built from nemotron_h's Mamba-2 mixer (model_type
"granitemoehybrid": IBM Granite 4.0-H, GraniteMoeHybridForCausalLM; "bamba": IBM's Bamba,
BambaForCausalLM; "mamba2": Mamba2ForCausalLM, the pure state-space model).

Their Mamba-2 mixers (transformers 5.24: GraniteMoeHybridMambaLayer, BambaMixer, Mamba2Mixer) are
NemotronHMamba2Mixer's code line for line (the same torch_forward, the same gated RMSNorm over
n_groups groups, conv over x, B and C, D, dt_bias, chunked scan), with an inner width of
expand x hidden_size that the heads tile. A Granite or Bamba layer is two of nemotron_h's
one-mixer layers (ModelConfig.mixer_layers): its norm, a Mamba-2 mixer or attention, a residual
add; then its second norm, the FFN, a residual add. So the pattern lists two mixers a decoder
layer (the FFN's "mlp" or "moe" after each), and n_decoder_layers is twice the model's.
- granitemoehybrid: the FFN is a SwiGLU shared MLP of shared_intermediate_size (input_linear
  d -> 2 d_s, output_linear), beside num_local_experts SwiGLU experts of intermediate_size under a
  bias-free softmax top-k router where num_local_experts > 0; Granite's four multipliers (the
  embeddings times embedding_multiplier, the scores times attention_multiplier, each sublayer's
  output times residual_multiplier, the logits over logits_scaling); RoPE only where
  position_embedding_type is "rope".
- bamba: the FFN is Llama's SwiGLU MLP (gate_proj, up_proj, down_proj, mlp_bias); attention on
  attn_layer_indices, RoPE on half of each head (BambaConfig hard-codes partial_rotary_factor 0.5).
- mamba2: one mixer layer a block, no attention and no MLP.
The classes' defaults have no attention layer (every layer Mamba-2): modelled, with no crossover
n*. Refused in one line: activations other than silu (the MLP and the Mamba mixer share
hidden_act), z_loss_coefficient > 0 and output_router_logits (losses the tree does not hold),
layer types other than Mamba-2 and full attention, heads that do not tile the inner width.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, mixer_kinds

#: transformers' layer-type names (remap_legacy_layer_types: the legacy "mamba", "attention").
_MIXERS = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "attention",
           "attention": "attention"}
#: Granite's scalar multipliers (GraniteMoeHybridConfig's fields, 1.0 by default) -> ModelConfig's.
_MULTIPLIERS = {"embedding_multiplier": "embedding_multiplier", "attention_multiplier": "attention_scale",
                "residual_multiplier": "residual_multiplier", "logits_scaling": "logits_scaling"}


def mamba_sizes(f: Fields, d_model: int, n_heads_default: int, groups_default: int, state_default: int,
                chunk_default: int, inner: int | None = None,
                width: str = "mamba_expand x hidden_size") -> dict[str, Any]:
    """The Mamba-2 mixer's sizes under the mamba_* names GraniteMoeHybridConfig, BambaConfig and
    FalconH1Config share; the mixer's width is `inner` where the config gives it (Falcon-H1's
    mamba_d_ssm), else mamba_expand * hidden_size; mamba_d_head "auto" is that width //
    mamba_n_heads, and the classes refuse heads that do not tile it (validate_architecture)."""
    heads = f.get("mamba_n_heads", n_heads_default, minimum=1)
    if inner is None:
        inner = f.get("mamba_expand", 2, minimum=1) * d_model
    head_dim = f.data.get("mamba_d_head", "auto")
    if head_dim == "auto" or head_dim is None:
        head_dim = inner // heads
    check_int(f.source, "mamba_d_head", head_dim, minimum=1)
    if heads * head_dim != inner:
        raise ConfigError(f"{f.source}: mamba_n_heads ({heads}) x mamba_d_head ({head_dim}) must equal "
                          f"{width} ({inner}), as the class requires.")
    return dict(mamba_heads=heads, mamba_head_dim=head_dim,
                ssm_state=f.get("mamba_d_state", state_default, minimum=1),
                mamba_groups=f.get("mamba_n_groups", groups_default, minimum=1),
                conv_kernel=f.get("mamba_d_conv", 4, minimum=1),
                chunk_size=f.get("mamba_chunk_size", chunk_default, minimum=1),
                conv_bias=f.get("mamba_conv_bias", True, bool), mamba_bias=f.get("mamba_proj_bias", False, bool))


def _silu(f: Fields, family: str) -> None:
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for {family} (only silu, "
                          "which its MLP and its Mamba-2 mixer both run).")


def _interleave(mixers: list[str], ffn: str) -> tuple[str, ...]:
    """Each decoder layer as two one-mixer layers: its mixer, then its FFN."""
    return tuple(kind for mixer in mixers for kind in (mixer, ffn))


def _common(f: Fields, name: str, family: str, mixers: list[str], ffn: str, n_kv_default: int | None,
            defaults: dict[str, Any]) -> dict[str, Any]:
    """The fields both readers share: sizes, attention, the mixer layers."""
    d_model = f.get("hidden_size", defaults["hidden_size"], minimum=1)
    n_heads = f.get("num_attention_heads", defaults["num_attention_heads"], minimum=1)
    n_kv = n_heads if n_kv_default is None else n_kv_default
    n_kv = n_heads if "num_key_value_heads" in f.data and f.data["num_key_value_heads"] is None else \
        f.get("num_key_value_heads", n_kv, minimum=1)
    pattern = _interleave(mixers, ffn)
    mamba = "mamba" in pattern
    sizes = mamba_sizes(f, d_model, 128, 1, 256, 256) if mamba else {}
    bias = f.get("attention_bias", False, bool)
    return dict(
        name=name, family=family, vocab_size=f.get("vocab_size", defaults["vocab_size"], minimum=1),
        d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv,
        d_head=f.get("head_dim", None),  # the classes' getattr(config, "head_dim", d // heads)
        n_decoder_layers=len(pattern), max_positions=f.get("max_position_embeddings",
                                                           defaults["max_position_embeddings"]),
        norm="rmsnorm", norm_position="pre", activation="swiglu", qkv_bias=bias, out_bias=bias,
        lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)),
        mixer_layers=True, layer_pattern=pattern,
        **sizes, **({} if mamba else dict(mamba_bias=False, conv_bias=False)))


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    """GraniteMoeHybridConfig's layer_types (or layers_block_type): each a Mamba-2 mixer or full
    attention; absent, every layer a Mamba-2 mixer (the class's default)."""
    types = f.data.get("layer_types", f.data.get("layers_block_type"))
    if types is None:
        return ["mamba"] * n_layers
    return mixer_kinds(f, types, n_layers, _MIXERS, "mamba/linear_attention or attention/full_attention")


def _granitemoehybrid(f: Fields, name: str) -> ModelConfig:
    """granitemoehybrid: see the module docstring. Defaults: GraniteMoeHybridConfig (5.24)."""
    _silu(f, "granitemoehybrid")
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    n_experts = f.get("num_local_experts", 8)
    check_int(f.source, "num_local_experts", n_experts, minimum=0)
    position = f.get("position_embedding_type", "nope", str)
    if position not in ("rope", "nope"):
        raise ConfigError(f"{f.source}: position_embedding_type must be \"rope\", \"nope\" or null, "
                          f"got {show(position)}.")
    fields = _common(f, name, "granitemoehybrid", _layer_types(f, n_layers), "moe" if n_experts else "mlp",
                     None, dict(hidden_size=4096, num_attention_heads=32, vocab_size=32000,
                                max_position_embeddings=2048))
    shared = f.get("shared_intermediate_size", 1024, minimum=1)
    for key, field in _MULTIPLIERS.items():
        value = f.get(key, 1.0, float)
        if not 0 < value < float("inf"):
            raise ConfigError(f"{f.source}: {key} must be a positive number, got {show(value)}.")
        fields[field] = float(value)
    if not n_experts:  # the class builds no MoE block and reads neither field (IBM's dense
        # granite-4.0-h-micro ships num_experts_per_tok 0)
        return ModelConfig(**fields, position="rope" if position == "rope" else "none", d_ff=shared, ffn_bias=False)
    experts = dict(n_experts=n_experts, top_k=f.get("num_experts_per_tok", 2, minimum=1),
                   d_expert=f.get("intermediate_size", 11008, minimum=1), d_shared=shared,
                   router="softmax", renormalize_top_k=True)  # softmax over the top-k logits
    return ModelConfig(**fields, position="rope" if position == "rope" else "none", d_ff=shared,
                       ffn_bias=False, **experts)


def _bamba(f: Fields, name: str) -> ModelConfig:
    """bamba: see the module docstring. Defaults: BambaConfig (5.24)."""
    _silu(f, "bamba")
    if f.get("z_loss_coefficient", 0.0, float) > 0:
        raise ConfigError(f"{f.source}: z_loss_coefficient > 0 (a logsumexp loss over the logits beside "
                          "the cross-entropy) is not modelled for bamba.")
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    indices = f.data.get("attn_layer_indices") or []
    if not isinstance(indices, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in indices):
        raise ConfigError(f"{f.source}: attn_layer_indices must list layer numbers, got {show(indices)}.")
    mixers = ["attention" if i in indices else "mamba" for i in range(n_layers)]
    fields = _common(f, name, "bamba", mixers, "mlp", 8,
                     dict(hidden_size=4096, num_attention_heads=32, vocab_size=128000,
                          max_position_embeddings=262144))
    d_head = fields["d_head"] or fields["d_model"] // fields["n_heads"]
    return ModelConfig(**fields, position="rope", rotary_dim=int(d_head * 0.5),  # BambaConfig's 0.5
                       d_ff=f.get("intermediate_size", 14336, minimum=1), ffn_bias=f.get("mlp_bias", False, bool))


def _mamba2(f: Fields, name: str) -> ModelConfig:
    """mamba2 (Mamba2ForCausalLM): num_hidden_layers Mamba2Blocks (a norm, the mixer, a residual
    add), norm_f and the head, nothing else. Defaults: Mamba2Config (5.24). No layer attends or
    has an MLP: ModelConfig's attention and FFN sizes, which no leaf reads, are the mixer's heads,
    head width and inner width (expand x hidden_size), so that a layout divides what the mixer
    divides. residual_in_fp32 (the residual stream in fp32 between blocks) changes no parameter,
    matmul FLOP or cache byte; the activations are proven in fp32 only."""
    _silu(f, "mamba2")
    d_model = f.get("hidden_size", 4096, minimum=1)
    n_layers = f.get("num_hidden_layers", 64, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    heads, head_dim = f.get("num_heads", 128, minimum=1), f.get("head_dim", 64, minimum=1)
    expand = f.get("expand", 2, minimum=1)
    if heads * head_dim != expand * d_model:
        raise ConfigError(f"{f.source}: num_heads ({heads}) x head_dim ({head_dim}) must equal expand x "
                          f"hidden_size ({expand * d_model}), as Mamba2Config requires.")
    return ModelConfig(
        name=name, family="mamba2", vocab_size=f.get("vocab_size", 32768, minimum=1), d_model=d_model,
        n_heads=heads, n_kv_heads=heads, d_head=head_dim, d_ff=heads * head_dim, n_decoder_layers=n_layers,
        # no context length in Mamba2Config: max_positions stays ModelConfig's 2048 (past it: a warning)
        position="none", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=False, out_bias=False, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool), mixer_layers=True,
        layer_pattern=("mamba",) * n_layers, mamba_heads=heads, mamba_head_dim=head_dim,
        ssm_state=f.get("state_size", 128, minimum=1), mamba_groups=f.get("n_groups", 8, minimum=1),
        conv_kernel=f.get("conv_kernel", 4, minimum=1), chunk_size=f.get("chunk_size", 256, minimum=1),
        mamba_bias=f.get("use_bias", False, bool), conv_bias=f.get("use_conv_bias", True, bool))


#: model_type -> its reader.
HYBRID_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "granitemoehybrid": _granitemoehybrid, "bamba": _bamba, "mamba2": _mamba2}

#: The transformers class, for a config.json that names `architectures` only.
HYBRID_ARCHITECTURES: dict[str, str] = {
    "GraniteMoeHybridForCausalLM": "granitemoehybrid", "BambaForCausalLM": "bamba",
    "Mamba2ForCausalLM": "mamba2"}

_MAMBA_NAMES = {"mamba_heads": "mamba_n_heads", "mamba_head_dim": "mamba_d_head", "ssm_state": "mamba_d_state",
                "mamba_groups": "mamba_n_groups", "conv_kernel": "mamba_d_conv", "chunk_size": "mamba_chunk_size"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
HYBRID_NAMES: dict[str, dict[str, Any]] = {
    "granitemoehybrid": {**LLAMA_NAMES, **_MAMBA_NAMES, "n_experts": "num_local_experts",
                         "top_k": "num_experts_per_tok", "d_expert": "intermediate_size",
                         "d_shared": "shared_intermediate_size", "d_ff": "shared_intermediate_size",
                         "layer_pattern": "layer_types"},
    "bamba": {**LLAMA_NAMES, **_MAMBA_NAMES, "layer_pattern": "attn_layer_indices"},
    "mamba2": {"vocab_size": "vocab_size", "d_model": "hidden_size", "n_decoder_layers": "num_hidden_layers",
               "mamba_heads": "num_heads", "mamba_head_dim": "head_dim", "ssm_state": "state_size",
               "mamba_groups": "n_groups"},
}
