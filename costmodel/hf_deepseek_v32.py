"""config.json reader of DeepSeek-V3.2 (deepseek_v32): DeepSeek-V3's layers (latent attention with a
query rank, its experts) plus DeepSeek Sparse Attention's lightning indexer in every layer
(costmodel/blocks/indexer.py). Read through hf.py's Llama reader as deepseek_v3 with
DeepseekV32Config's defaults (transformers 5.24, models/deepseek_v32/configuration_deepseek_v32.py);
costmodel/hf.py dispatches on model_type."""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader
from .hf_moe_more import dense_layers_first, rotary_fraction

#: DeepseekV32Config's defaults for the fields DeepSeek-V3's reader (costmodel/hf.py) reads with
#: DeepseekV3Config's otherwise, and the indexer's (index_topk is read and checked; HF's eager and
#: sdpa attention cost the same whatever it is).
_DEFAULTS = dict(max_position_embeddings=163840, hidden_act="silu", tie_word_embeddings=False,
                 n_shared_experts=1, n_routed_experts=256, moe_intermediate_size=2048,
                 kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128,
                 qk_nope_head_dim=128, n_group=8, topk_group=4, num_experts_per_tok=8,
                 norm_topk_prob=True, first_k_dense_replace=3, index_topk=2048, index_head_dim=128,
                 index_n_heads=64)


def _deepseek_v32(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """DeepSeek-V3.2 (DeepseekV32ForCausalLM): AXK1Attention's latent attention, always with a
    query rank (q_lora_rank null is refused: the class cannot build it), caching the r_kv latent
    and the RoPE key; the indexer (index_n_heads heads of index_head_dim) beside it; the dense
    MLPs first, then DeepSeek-V3's experts. Its MTP layer (model.layers.61, ignored on load) is not
    built and not counted; mlp_bias is not read by its MLPs. A partial_rotary_factor, layer_types
    other than indexed_attention, an indexer head narrower than qk_rope_head_dim, or
    num_attention_heads // num_key_value_heads other than 1 (its eager attention then repeats the
    expanded keys) are refused."""
    if f.get("hidden_act", "silu", str) != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(f.data['hidden_act'])} for deepseek_v32.")
    if rotary_fraction(f) != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor {show(rotary_fraction(f))} is not "
                          "modelled for deepseek_v32 (its latent attention and indexer rotate the "
                          "whole qk_rope_head_dim).")
    if f.data.get("q_lora_rank", 1536) is None:
        raise ConfigError(f"{f.source}: q_lora_rank null is not modelled for deepseek_v32 (its "
                          "attention always projects queries through a rank, which the indexer reads).")
    heads, kv_heads = f.get("num_attention_heads", 128, minimum=1), f.get("num_key_value_heads", 128, minimum=1)
    if heads // kv_heads != 1:
        raise ConfigError(f"{f.source}: num_attention_heads // num_key_value_heads is {heads // kv_heads}, "
                          "which transformers 5.24 cannot run for deepseek_v32 (eager attention repeats "
                          "the keys of every head that many times); give num_key_value_heads equal to "
                          "num_attention_heads.")
    layers = f.get("num_hidden_layers", 61)
    check_int(f.source, "num_hidden_layers", layers, minimum=1)
    types = f.data.get("layer_types")
    if types is not None and types != ["indexed_attention"] * layers:
        raise ConfigError(f"{f.source}: layer_types other than indexed_attention on each of the "
                          f"{layers} layers are not modelled for deepseek_v32.")
    dense = dense_layers_first(f, layers, "deepseek_v32", min(f.get("first_k_dense_replace", 3, minimum=0), layers))
    data = {**_DEFAULTS, **{k: v for k, v in f.data.items() if v is not None},
            "first_k_dense_replace": dense, "num_hidden_layers": layers}
    for key in ("head_dim", "layer_types", "mlp_layer_types"):  # head_dim: set to qk_rope_head_dim by the class
        data.pop(key, None)
    read = Fields(data, f.source)
    index_heads, width = read.get("index_n_heads", minimum=1), read.get("index_head_dim", minimum=1)
    read.get("index_topk", minimum=1)
    rope = read.get("qk_rope_head_dim")
    if width < rope:
        raise ConfigError(f"{f.source}: index_head_dim ({width}) is narrower than qk_rope_head_dim "
                          f"({rope}), the part of each indexer head RoPE rotates.")
    base = llama.read(read, name, "deepseek_v3", _DEFAULTS)
    return base.replace(family="deepseek_v32", index_n_heads=index_heads, index_head_dim=width)


#: model_type -> its reader (hf.py passes its LlamaReader).
DEEPSEEK_V32_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "deepseek_v32": _deepseek_v32}

#: The transformers class, for a config.json that names `architectures` only.
DEEPSEEK_V32_ARCHITECTURES: dict[str, str] = {"DeepseekV32ForCausalLM": "deepseek_v32"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
DEEPSEEK_V32_NAMES: dict[str, dict[str, str]] = {
    "deepseek_v32": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                     "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"}}
