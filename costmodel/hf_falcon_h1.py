"""config.json reader of TII's Falcon-H1 (model_type "falcon_h1", FalconH1ForCausalLM).

Each decoder layer (transformers 5.24 models/falcon_h1/modeling_falcon_h1.py FalconH1DecoderLayer)
runs a Mamba-2 mixer and attention IN PARALLEL from one input_layernorm and adds both outputs to
the residual stream in one add; then pre_ff_layernorm, Llama's SwiGLU MLP and a second add. The
tree holds it as three one-mixer layers (ModelConfig.mixer_layers): "mamba" (the norm, the mixer,
the add of the two branches), "attention" (no norm of its own under parallel_attention with
parallel_norms 1: it reads the mamba's; the residual add), "mlp" (its norm, the MLP, its add).

The mixer (FalconH1Mixer) is Mamba-2's (blocks/mamba.py) with:
- an inner width of mamba_d_ssm (mamba_expand x hidden_size where null) that the heads tile;
- in_proj's bias mamba_proj_bias, out_proj's projectors_bias (ModelConfig.mamba_out_bias);
- the gated RMSNorm only where mamba_rms_norm (else y * silu(z), no weight: mamba_gated_norm);
- in_proj's output times a non-persistent mup_vector buffer as wide (facts.mamba_mup_vector).
MuP multipliers (scalars, no parameters): the embeddings times embedding_multiplier (ModelConfig's
embedding_multiplier), the logits times lm_head_multiplier (logits_scaling = its inverse); the keys,
the mixers' inputs and outputs and the MLP's gate and output times the rest, pointwise ops the tree
does not list (their bytes saved for backward are not modelled: validate/FINDINGS.md).
Refused in one line: an activation other than silu (the MLP and the mixer share hidden_act), heads
that do not tile the inner width, an mlp_multipliers or ssm_multipliers list of the wrong length.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_hybrid import mamba_sizes

#: The pattern of one Falcon-H1 decoder layer (its parallel mixers, then its MLP).
LAYER = ("mamba", "attention", "mlp")


def _multipliers(f: Fields) -> tuple[float, float]:
    """(embedding_multiplier, lm_head_multiplier), each a positive number; the list multipliers
    (mlp_multipliers: gate, down; ssm_multipliers: z, x, B, C, dt) checked for their lengths."""
    for key, length in (("mlp_multipliers", 2), ("ssm_multipliers", 5)):
        value = f.data.get(key)
        if value is not None and (not isinstance(value, list) or len(value) != length
                                  or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
            raise ConfigError(f"{f.source}: {key} must list {length} numbers, got {show(value)}.")
    scales = []
    for key in ("embedding_multiplier", "lm_head_multiplier"):
        value = f.get(key, 1.0, float)
        if not 0 < value < float("inf"):
            raise ConfigError(f"{f.source}: {key} must be a positive number, got {show(value)}.")
        scales.append(float(value))
    return scales[0], scales[1]


def _mixer_sizes(f: Fields, d_model: int) -> dict[str, Any]:
    """The Mamba-2 mixer's sizes (FalconH1Config's defaults, hf_hybrid.mamba_sizes' rules): its inner
    width mamba_d_ssm, else mamba_expand x hidden_size; and Falcon-H1's out_proj bias and gated norm."""
    if "mamba_d_ssm" in f.data and f.data["mamba_d_ssm"] is None:
        inner = f.get("mamba_expand", 2, minimum=1) * d_model
    else:
        inner = f.get("mamba_d_ssm", 1024, minimum=1)
    return dict(mamba_sizes(f, d_model, 128, 1, 256, 256, inner=inner,
                            width="the mixer's width, mamba_d_ssm or mamba_expand x hidden_size"),
                mamba_out_bias=f.get("projectors_bias", False, bool),
                mamba_gated_norm=f.get("mamba_rms_norm", False, bool))


def _falcon_h1(f: Fields, name: str) -> ModelConfig:
    """falcon_h1: see the module docstring. Defaults: FalconH1Config (5.24)."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for falcon_h1 (only silu, "
                          "which its MLP and its Mamba-2 mixer both run).")
    d_model = f.get("hidden_size", 4096, minimum=1)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 3)
    n_kv = n_heads if "num_key_value_heads" in f.data and f.data["num_key_value_heads"] is None else \
        f.get("num_key_value_heads", 8, minimum=1)
    embedding, lm_head = _multipliers(f)
    bias = f.get("attention_bias", False, bool)
    return ModelConfig(
        name=name, family="falcon_h1", vocab_size=f.get("vocab_size", 128000, minimum=1), d_model=d_model,
        n_heads=n_heads, n_kv_heads=n_kv, d_head=f.get("head_dim", d_model // n_heads, minimum=1),  # attention
        # and RoPE read head_dim where given (getattr), else hidden_size // num_attention_heads
        d_ff=f.get("intermediate_size", 14336, minimum=1), n_decoder_layers=len(LAYER) * n_layers,
        max_positions=f.get("max_position_embeddings", 8192), position="rope", norm="rmsnorm", norm_position="pre",
        activation="swiglu", qkv_bias=bias, out_bias=bias, ffn_bias=f.get("mlp_bias", False, bool),
        lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), mixer_layers=True, layer_pattern=LAYER * n_layers,
        parallel_attention=True, parallel_norms=1, embedding_multiplier=embedding, logits_scaling=1 / lm_head,
        **_mixer_sizes(f, d_model))


#: model_type -> its reader.
FALCON_H1_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"falcon_h1": _falcon_h1}
#: The transformers class, for a config.json that names `architectures` only.
FALCON_H1_ARCHITECTURES: dict[str, str] = {"FalconH1ForCausalLM": "falcon_h1"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
FALCON_H1_NAMES: dict[str, dict[str, Any]] = {"falcon_h1": {
    **LLAMA_NAMES, "mamba_heads": "mamba_n_heads", "mamba_head_dim": "mamba_d_head", "ssm_state": "mamba_d_state",
    "mamba_groups": "mamba_n_groups", "conv_kernel": "mamba_d_conv", "chunk_size": "mamba_chunk_size"}}
