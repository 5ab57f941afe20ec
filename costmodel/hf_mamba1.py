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
from typing import Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import Fields


def _mamba1(f: Fields, name: str, family: str, norms: bool) -> ModelConfig:
    """The fields MambaConfig and FalconMambaConfig share (their defaults are the same, 5.24)."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for {family} (only silu).")
    if f.get("use_mambapy", False, bool):
        raise ConfigError(f"{f.source}: use_mambapy (mamba.py's parallel scan in training) is not modelled "
                          f"for {family}; the recurrent scan (use_mambapy false) is.")
    d_model = f.get("hidden_size", 768, minimum=1)
    n_layers = f.get("num_hidden_layers", 32, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    inner = f.get("expand", 2, minimum=1) * d_model  # MambaConfig: int(expand * hidden_size)
    rank = f.data.get("time_step_rank", "auto")
    rank = math.ceil(d_model / 16) if rank == "auto" else rank
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ConfigError(f"{f.source}: time_step_rank must be \"auto\" or a positive integer, got {show(rank)}.")
    return ModelConfig(
        name=name, family=family, vocab_size=f.get("vocab_size", 50280, minimum=1), d_model=d_model,
        n_heads=1, n_kv_heads=1, d_head=inner, d_ff=inner, n_decoder_layers=n_layers,
        # no context length in the configs: max_positions stays ModelConfig's 2048 (no warning: no attention)
        position="none", norm="rmsnorm", norm_position="pre", activation="swiglu",
        qkv_bias=False, out_bias=False, ffn_bias=False, lm_head_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool), mixer_layers=True,
        layer_pattern=("mamba1",) * n_layers, mamba1_inner=inner, dt_rank=rank,
        ssm_state=f.get("state_size", 16, minimum=1), conv_kernel=f.get("conv_kernel", 4, minimum=1),
        mamba_bias=f.get("use_bias", False, bool), conv_bias=f.get("use_conv_bias", True, bool),
        mamba1_norms=norms)


def _mamba(f: Fields, name: str) -> ModelConfig:
    """mamba (MambaForCausalLM): see the module docstring. Defaults: MambaConfig (5.24)."""
    return _mamba1(f, name, "mamba", norms=False)


def _falcon_mamba(f: Fields, name: str) -> ModelConfig:
    """falcon_mamba (FalconMambaForCausalLM): Mamba's with the mixer's B, C and dt norms."""
    return _mamba1(f, name, "falcon_mamba", norms=True)


#: model_type -> its reader.
MAMBA1_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "mamba": _mamba, "falcon_mamba": _falcon_mamba}

#: The transformers class, for a config.json that names `architectures` only.
MAMBA1_ARCHITECTURES: dict[str, str] = {
    "MambaForCausalLM": "mamba", "FalconMambaForCausalLM": "falcon_mamba"}

_NAMES = {"vocab_size": "vocab_size", "d_model": "hidden_size", "n_decoder_layers": "num_hidden_layers",
          "mamba1_inner": "expand", "dt_rank": "time_step_rank", "ssm_state": "state_size",
          "conv_kernel": "conv_kernel"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
MAMBA1_NAMES: dict[str, dict[str, str]] = {"mamba": _NAMES, "falcon_mamba": _NAMES}
