"""config.json readers of Zyphra's Zamba (model_type "zamba", ZambaForCausalLM) and Zamba2 ("zamba2",
Zamba2ForCausalLM), transformers 5.24.

Each of num_hidden_layers decoder layers (layers_block_type) is a Mamba layer ("linear_attention",
legacy "mamba": an RMSNorm, the mixer, a residual add) or a "hybrid" one: a use of a shared
attention-and-MLP block, then the Mamba layer, whose norm reads its input plus the use's output
(costmodel/shared_block.py). The tree holds a hybrid layer as two one-mixer layers, "shared" then
the mixer. zamba's mixer is Mamba-1 (ZambaMambaMixer: its x_proj and dt_proj split into
n_mamba_heads, run as bmm: MambaMixer's parameters and FLOPs, and the heads' own copies kept for
backward, ModelConfig.mamba1_heads, blocks/mamba1.py head_split_bytes); zamba2's is
Mamba-2 (Zamba2MambaMixer, blocks/mamba.py; its conv1d always has a bias). zamba's hybrid layers
all share one block; zamba2's use num_mem_blocks in turn and each use adds LoRA adapters of
adapter_rank (blocks/shared.py), and RoPE on q and k where use_mem_rope. The blocks are shared only
where tie_word_embeddings is true: transformers 5.24 (PreTrainedModel.get_expanded_tied_weights_keys)
ties nothing otherwise, so each use then holds a copy of its own (measured: tests/test_hf_zamba.py).

Refused in one line: an attention_hidden_size other than 2 x hidden_size (the concatenation is
that wide), an MLP activation other than gelu, gelu_pytorch_tanh or silu, a Mamba activation other
than silu, heads that do not tile the Mamba width, use_shared_attention_adapter with fewer KV heads
than heads (the k and v adapters are 2 x hidden_size wide: the class builds, its forward fails on a
shape), zamba2 untied (tie_word_embeddings false) with fewer num_mem_blocks than hybrid layers
(each copy would hold idle adapters of the other uses), a layers_block_type entry other than hybrid
or linear_attention (mamba).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields

#: hidden_act of the shared block's gated MLP (act(gate) * up) -> ModelConfig.activation.
_MLP_ACTIVATIONS = {"gelu": "geglu", "gelu_pytorch_tanh": "geglu_tanh", "silu": "swiglu"}
#: layers_block_type's names, legacy and current (PreTrainedConfig's remap_legacy_layer_types).
_MAMBA, _HYBRID = ("linear_attention", "mamba"), ("hybrid",)


def _layer_types(f: Fields, n_layers: int, default: list[str]) -> list[bool]:
    """Whether each decoder layer is hybrid: layers_block_type, else the class's own rule."""
    types = f.data.get("layers_block_type")
    given = "layers_block_type" if types is not None else "the class's default layers_block_type"
    types = default if types is None else types
    if not isinstance(types, list) or any(t not in _MAMBA + _HYBRID for t in types):
        raise ConfigError(f"{f.source}: layers_block_type must list hybrid or linear_attention (mamba), "
                          f"got {show(types)}.")
    if len(types) != n_layers:
        raise ConfigError(f"{f.source}: {given} has {len(types)} layers, num_hidden_layers {n_layers} "
                          "(the class requires them equal).")
    return [t in _HYBRID for t in types]


def _common(f: Fields, family: str, defaults: dict[str, Any], mixer: str, hybrid: list[bool]) -> dict[str, Any]:
    """The fields both types share: sizes, the shared block's attention and MLP, the pattern."""
    d_model = f.get("hidden_size", defaults["hidden_size"], minimum=1)
    n_heads = f.get("num_attention_heads", defaults["num_attention_heads"], minimum=1)
    width = f.data.get("attention_hidden_size")
    if width is not None and width != 2 * d_model:
        raise ConfigError(f"{f.source}: attention_hidden_size {show(width)} is not modelled for {family}: its shared "
                          f"block reads the layer's input and the embeddings concatenated, 2 x hidden_size wide.")
    act = f.get("hidden_act", "gelu", str)
    if act not in _MLP_ACTIVATIONS:
        raise ConfigError(f"{f.source}: hidden_act {show(act)} is not modelled for {family} (only "
                          f"{', '.join(_MLP_ACTIVATIONS)}).")
    pattern = tuple(kind for shared in hybrid for kind in (("shared", mixer) if shared else (mixer,)))
    return dict(
        family=family, vocab_size=f.get("vocab_size", 32000, minimum=1), d_model=d_model, n_heads=n_heads,
        n_kv_heads=f.get("num_key_value_heads", defaults["num_key_value_heads"] or n_heads, minimum=1),
        n_decoder_layers=len(pattern), max_positions=f.get("max_position_embeddings", 4096),
        norm="rmsnorm", norm_position="pre", activation=_MLP_ACTIVATIONS[act], qkv_bias=False, out_bias=False,
        lm_head_bias=False, head="lm", tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)), mixer_layers=True, layer_pattern=pattern)


def _zamba(f: Fields, name: str) -> ModelConfig:
    """zamba: see the module docstring. Defaults: ZambaConfig (5.24)."""
    n_layers = f.get("num_hidden_layers", 76, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    period, offset = f.get("attn_layer_period", 6, minimum=1), f.get("attn_layer_offset", 4, minimum=0)
    default = (["linear_attention"] * 2 + ["hybrid"]
               + ["hybrid" if i % period == offset else "linear_attention" for i in range(n_layers - 3)])
    hybrid = _layer_types(f, n_layers, default)
    common = _common(f, "zamba", dict(hidden_size=3712, num_attention_heads=16, num_key_value_heads=16),
                     "mamba1", hybrid)
    d_model, n_heads = common["d_model"], common["n_heads"]
    act = f.get("hidden_mamba_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: hidden_mamba_act {show(act)} is not modelled for zamba (only silu).")
    inner = f.get("mamba_expand", 2, minimum=1) * d_model
    mamba_heads = f.get("n_mamba_heads", 2, minimum=1)
    if inner % mamba_heads:
        raise ConfigError(f"{f.source}: n_mamba_heads ({mamba_heads}) must divide mamba_expand x hidden_size "
                          f"({inner}), as ZambaConfig requires.")
    rank = f.data.get("mamba_dt_rank", "auto")
    rank = math.ceil(d_model / 16) if rank == "auto" or rank is None else rank
    check_int(f.source, "mamba_dt_rank", rank)
    return ModelConfig(
        name=name, **common, d_head=f.get("attention_head_dim", 2 * d_model // n_heads, minimum=1),
        d_ff=f.get("intermediate_size", 14848, minimum=1), position="none", ffn_bias=False,
        mamba1_inner=inner, dt_rank=rank, ssm_state=f.get("mamba_d_state", 16, minimum=1),
        conv_kernel=f.get("mamba_d_conv", 4, minimum=1), mamba_bias=f.get("mamba_proj_bias", False, bool),
        conv_bias=f.get("mamba_conv_bias", True, bool), mamba1_heads=mamba_heads,
        shared_blocks=(1 if common["tie_embeddings"] else sum(hybrid)) if any(hybrid) else None)


#: Zamba2Config's layers_block_type where the config gives none (54 layers, whatever num_hidden_layers).
_ZAMBA2_DEFAULT = (["linear_attention"] + (["linear_attention"] * 5 + ["hybrid"]) * 7 + ["linear_attention"] * 4
                   + ["hybrid"] + ["linear_attention"] * 3 + ["hybrid"] + ["linear_attention"] * 2)


def _zamba2(f: Fields, name: str) -> ModelConfig:
    """zamba2: see the module docstring. Defaults: Zamba2Config (5.24)."""
    n_layers = f.get("num_hidden_layers", 54, minimum=1)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS // 2)
    hybrid = _layer_types(f, n_layers, _ZAMBA2_DEFAULT)
    common = _common(f, "zamba2", dict(hidden_size=2560, num_attention_heads=32, num_key_value_heads=None),
                     "mamba", hybrid)
    d_model, n_heads = common["d_model"], common["n_heads"]
    attention_adapters = f.get("use_shared_attention_adapter", False, bool)
    if attention_adapters and common["n_kv_heads"] != n_heads and any(hybrid):
        raise ConfigError(f"{f.source}: use_shared_attention_adapter with num_key_value_heads "
                          f"({common['n_kv_heads']}) below num_attention_heads ({n_heads}) is not modelled: the k "
                          "and v adapters are 2 x hidden_size wide, and Zamba2Attention's forward fails on the shape.")
    inner = f.get("mamba_expand", 2, minimum=1) * d_model
    mamba_heads = f.get("n_mamba_heads", 8, minimum=1)
    if inner % mamba_heads:
        raise ConfigError(f"{f.source}: n_mamba_heads ({mamba_heads}) must divide mamba_expand x hidden_size "
                          f"({inner}), the Mamba-2 mixer's width its heads tile.")
    rope = f.get("use_mem_rope", False, bool)
    positions = 16384 if f.get("use_long_context", False, bool) else f.get("max_position_embeddings", 4096)
    uses, blocks = sum(hybrid), f.get("num_mem_blocks", 1, minimum=1)
    if not common["tie_embeddings"] and blocks < uses:
        raise ConfigError(f"{f.source}: tie_word_embeddings false with num_mem_blocks ({blocks}) below the hybrid "
                          f"layers ({uses}) is not modelled: transformers 5.24 then ties no shared block, and each "
                          "use's copy holds the adapters of every use of its block, most of them never run.")
    bias = f.get("add_bias_linear", False, bool)
    common.update(max_positions=positions)
    return ModelConfig(
        name=name, **common, d_head=2 * d_model // n_heads, position="rope" if rope else "none",
        d_ff=f.get("intermediate_size", 4 * d_model, minimum=1), ffn_bias=bias,
        mamba_heads=mamba_heads, mamba_head_dim=inner // mamba_heads, ssm_state=f.get("mamba_d_state", 64, minimum=1),
        mamba_groups=f.get("mamba_ngroups", 1, minimum=1), conv_kernel=f.get("mamba_d_conv", 4, minimum=1),
        chunk_size=f.get("chunk_size", 256, minimum=1), mamba_bias=bias, conv_bias=True,
        shared_blocks=(min(blocks, uses) if common["tie_embeddings"] else uses) if uses else None,
        shared_adapter_rank=f.get("adapter_rank", 128, minimum=1) if uses else None,
        shared_attention_adapters=attention_adapters and uses > 0)


#: model_type -> its reader.
ZAMBA_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {"zamba": _zamba, "zamba2": _zamba2}
#: The transformers class, for a config.json that names `architectures` only.
ZAMBA_ARCHITECTURES: dict[str, str] = {"ZambaForCausalLM": "zamba", "Zamba2ForCausalLM": "zamba2"}
_SHARED_NAMES = {**LLAMA_NAMES, "ssm_state": "mamba_d_state", "conv_kernel": "mamba_d_conv",
                 "layer_pattern": "layers_block_type", "shared_blocks": "num_mem_blocks",
                 "shared_adapter_rank": "adapter_rank"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
ZAMBA_NAMES: dict[str, dict[str, Any]] = {
    "zamba": {**_SHARED_NAMES, "mamba1_inner": "mamba_expand", "dt_rank": "mamba_dt_rank",
              "d_head": "attention_head_dim"},
    "zamba2": {**_SHARED_NAMES, "mamba_heads": "n_mamba_heads", "mamba_groups": "mamba_ngroups",
               "chunk_size": "chunk_size"}}
