"""config.json readers of the pure Mamba-1 models (model_type "mamba": MambaForCausalLM, the
state-spaces/mamba-* checkpoints; "falcon_mamba": FalconMambaForCausalLM, TII's Falcon Mamba).

Each is num_hidden_layers blocks (transformers 5.24 MambaBlock, FalconMambaBlock): an RMSNorm, the
Mamba-1 mixer (costmodel/blocks/mamba1.py), a residual add; then norm_f and the head. No layer
attends or has an MLP: ModelConfig's attention and FFN sizes, which no leaf reads, are one head of
the mixer's inner width. falcon_mamba's mixer adds weightless RMS norms on dt's input, B and C
(ModelConfig.mamba1_norms); its blocks are Mamba's otherwise. residual_in_fp32 (the residual
stream in fp32, the classes' default) changes no parameter, matmul FLOP or cache byte; in bf16 it
leaves norm_f an fp32 input, 2 b n d bytes more than the tree's (as mamba2's, workload.py warns).

Refused in one line: a hidden_act other than silu (the conv's activation; the gate's silu is
fixed), use_mambapy (mamba.py's parallel scan where that package is installed, another saved-bytes
profile), a time_step_rank that is neither "auto" nor a positive integer.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields


#: The config.json names of the Mamba-1 mixer's sizes: MambaConfig's and FalconMambaConfig's, and
#: JambaConfig's (mamba_*), in the order expand, dt rank, state, conv kernel, use_bias, conv bias.
_MIXER_KEYS = {"mamba": ("expand", "time_step_rank", "state_size", "conv_kernel", "use_bias", "use_conv_bias"),
               "jamba": ("mamba_expand", "mamba_dt_rank", "mamba_d_state", "mamba_d_conv", "mamba_proj_bias",
                         "mamba_conv_bias")}


def mixer_fields(f: Fields, d_model: int, family: str, norms: str, keys: str = "mamba") -> dict[str, Any]:
    """ModelConfig's Mamba-1 fields from a config.json (the classes' defaults: expand 2, dt rank
    "auto" = ceil(hidden_size / 16), state 16, conv 4, no projection bias, a conv bias)."""
    expand, rank_key, state, conv, bias, conv_bias = _MIXER_KEYS[keys]
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for {family} (only silu).")
    if f.get("use_mambapy", False, bool):
        raise ConfigError(f"{f.source}: use_mambapy (mamba.py's parallel scan in training) is not modelled "
                          f"for {family}; the recurrent scan (use_mambapy false) is.")
    rank = f.data.get(rank_key, "auto")
    rank = math.ceil(d_model / 16) if rank == "auto" or rank is None else rank
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ConfigError(f"{f.source}: {rank_key} must be \"auto\" or a positive integer, got {show(rank)}.")
    return dict(mamba1_inner=f.get(expand, 2, minimum=1) * d_model, dt_rank=rank,
                ssm_state=f.get(state, 16, minimum=1), conv_kernel=f.get(conv, 4, minimum=1),
                mamba_bias=f.get(bias, False, bool), conv_bias=f.get(conv_bias, True, bool), mamba1_norms=norms)


def _mamba1(f: Fields, name: str, family: str, norms: str) -> ModelConfig:
    """The fields MambaConfig and FalconMambaConfig share (their defaults are the same, 5.24)."""
    d_model = f.get("hidden_size", 768, minimum=1)
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    mixer = mixer_fields(f, d_model, family, norms)
    inner = mixer["mamba1_inner"]
    return ModelConfig(
        name=name, family=family, vocab_size=f.get("vocab_size", 50280, minimum=1), d_model=d_model,
        n_heads=1, n_kv_heads=1, d_head=inner, d_ff=inner, n_decoder_layers=n_layers,
        # no context length in the configs: max_positions stays ModelConfig's 2048 (no warning: no attention)
        position="none", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=False, out_bias=False, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool), mixer_layers=True,
        layer_pattern=("mamba1",) * n_layers, **mixer)


def _mamba(f: Fields, name: str) -> ModelConfig:
    """mamba (MambaForCausalLM): see the module docstring. Defaults: MambaConfig (5.24)."""
    return _mamba1(f, name, "mamba", norms="none")


def _falcon_mamba(f: Fields, name: str) -> ModelConfig:
    """falcon_mamba (FalconMambaForCausalLM): Mamba's with the mixer's B, C and dt norms."""
    return _mamba1(f, name, "falcon_mamba", norms="weightless")


def _period(f: Fields, what: str, n_layers: int, period_default: int, offset_default: int) -> set[int]:
    """The layers i with i % {what}_layer_period == {what}_layer_offset (JambaConfig's rule)."""
    period = f.get(f"{what}_layer_period", period_default, minimum=1)
    offset = f.get(f"{what}_layer_offset", offset_default, minimum=0)
    if offset >= period:
        raise ConfigError(f"{f.source}: {what}_layer_offset ({offset}) must be smaller than "
                          f"{what}_layer_period ({period}), as JambaConfig requires.")
    return {i for i in range(n_layers) if i % period == offset}


def _jamba(f: Fields, name: str) -> ModelConfig:
    """jamba (JambaForCausalLM): each decoder layer an RMSNorm, attention (every attn_layer_period-th
    from attn_layer_offset; no RoPE, no bias, Llama's eager attention) or a Mamba-1 mixer with
    weighted RMS norms on dt's input, B and C (JambaMambaMixer), a residual add; then an RMSNorm,
    a SwiGLU MLP of intermediate_size or, every expert_layer_period-th from expert_layer_offset
    where num_experts > 1, num_experts SwiGLU experts of that size under a softmax top-k router
    whose weights are not renormalised (JambaTopKRouter), a residual add. As granitemoehybrid's
    (hf_hybrid.py) a layer is two of the tree's one-mixer layers. Defaults: JambaConfig (5.24).
    Refused besides the mixer's: output_router_logits (the router's load-balancing loss)."""
    d_model = f.get("hidden_size", 4096, minimum=1)
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    n_kv = f.get("num_key_value_heads", 8, minimum=1)  # JambaConfig refuses None
    attention = _period(f, "attn", n_layers, 8, 4)
    n_experts = f.get("num_experts", 16, minimum=1)
    experts = _period(f, "expert", n_layers, 2, 1) if n_experts > 1 else set()
    pattern = tuple(kind for i in range(n_layers) for kind in
                    ("attention" if i in attention else "mamba1", "moe" if i in experts else "mlp"))
    d_ff = f.get("intermediate_size", 14336, minimum=1)
    moe = dict(n_experts=n_experts, top_k=f.get("num_experts_per_tok", 2, minimum=1), d_expert=d_ff,
               router="softmax", renormalize_top_k=False) if experts else {}
    mixer = mixer_fields(f, d_model, "jamba", "weighted", keys="jamba") if len(attention) < n_layers else {}
    return ModelConfig(
        name=name, family="jamba", vocab_size=f.get("vocab_size", 65536, minimum=1), d_model=d_model,
        n_heads=n_heads, n_kv_heads=n_kv, d_head=f.get("head_dim", None), d_ff=d_ff,
        n_decoder_layers=len(pattern), max_positions=f.get("max_position_embeddings", 262144),
        position="none", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=False, out_bias=False, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), mixer_layers=True, layer_pattern=pattern,
        **mixer, **moe)


#: model_type -> its reader.
MAMBA1_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "mamba": _mamba, "falcon_mamba": _falcon_mamba, "jamba": _jamba}

#: The transformers class, for a config.json that names `architectures` only.
MAMBA1_ARCHITECTURES: dict[str, str] = {
    "MambaForCausalLM": "mamba", "FalconMambaForCausalLM": "falcon_mamba", "JambaForCausalLM": "jamba"}

_NAMES = {"vocab_size": "vocab_size", "d_model": "hidden_size", "n_decoder_layers": "num_hidden_layers",
          "mamba1_inner": "expand", "dt_rank": "time_step_rank", "ssm_state": "state_size",
          "conv_kernel": "conv_kernel"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
MAMBA1_NAMES: dict[str, dict[str, str]] = {
    "mamba": _NAMES, "falcon_mamba": _NAMES,
    "jamba": {**LLAMA_NAMES, "mamba1_inner": "mamba_expand", "dt_rank": "mamba_dt_rank", "ssm_state": "mamba_d_state",
              "conv_kernel": "mamba_d_conv", "n_experts": "num_experts", "top_k": "num_experts_per_tok",
              "d_expert": "intermediate_size", "layer_pattern": "attn_layer_period"}}
