"""config.json readers of DeepSeek Sparse Attention's families: DeepSeek-V3.2 (deepseek_v32) and
GLM-5 (glm_moe_dsa). Both are DeepSeek-V3's layers (latent attention with a query rank, its experts)
plus DeepSeek Sparse Attention's lightning indexer in every layer (costmodel/blocks/indexer.py).
Read through hf_llama.py's Llama reader as deepseek_v3 with each configuration class's defaults
(transformers 5.24, models/deepseek_v32/configuration_deepseek_v32.py and
models/glm_moe_dsa/configuration_glm_moe_dsa.py); costmodel/hf.py dispatches on model_type."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader
from .hf_moe_more import dense_layers_first, rotary_fraction

#: Each configuration class's defaults for the fields DeepSeek-V3's reader (costmodel/hf.py) reads
#: with DeepseekV3Config's otherwise, and the indexer's (index_topk is read and checked; HF's eager
#: and sdpa attention cost the same whatever it is).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v32": dict(max_position_embeddings=163840, hidden_act="silu", tie_word_embeddings=False,
                         n_shared_experts=1, n_routed_experts=256, moe_intermediate_size=2048,
                         kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128,
                         qk_nope_head_dim=128, n_group=8, topk_group=4, num_experts_per_tok=8,
                         norm_topk_prob=True, first_k_dense_replace=3, index_topk=2048,
                         index_head_dim=128, index_n_heads=64, num_attention_heads=128,
                         num_key_value_heads=128, num_hidden_layers=61),
    # GlmMoeDsaConfig (GLM-5's shapes): 78 layers of hidden 6144, 64 heads of 192 + 256, a query
    # rank of 2048, an indexer of 32 heads; one expert group.
    "glm_moe_dsa": dict(vocab_size=154880, hidden_size=6144, intermediate_size=12288,
                        max_position_embeddings=202752, hidden_act="silu", tie_word_embeddings=False,
                        n_shared_experts=1, n_routed_experts=256, moe_intermediate_size=2048,
                        kv_lora_rank=512, q_lora_rank=2048, qk_rope_head_dim=64, v_head_dim=256,
                        qk_nope_head_dim=192, n_group=1, topk_group=1, num_experts_per_tok=8,
                        norm_topk_prob=True, first_k_dense_replace=3, index_topk=2048,
                        index_head_dim=128, index_n_heads=32, num_attention_heads=64,
                        num_key_value_heads=64, num_hidden_layers=78),
}


def _glm_indexer_types(f: Fields, layers: int) -> list[str]:
    """GlmMoeDsaConfig.__post_init__'s indexer_types: the list given, else index_topk_pattern
    ("F" full, "S" shared), else full where max(i - index_skip_topk_offset + 1, 0) is a multiple
    of index_topk_freq."""
    given = f.data.get("indexer_types")
    if given is not None:
        return list(given)
    pattern = f.data.get("index_topk_pattern")
    if pattern is not None:
        return [{"F": "full", "S": "shared"}.get(c, c) for c in pattern] if isinstance(pattern, str) else list(pattern)
    freq, offset = max(f.get("index_topk_freq", 1), 1), f.get("index_skip_topk_offset", 2)
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)]


def _sparse_attention(f: Fields, name: str, llama: LlamaReader, model_type: str) -> ModelConfig:
    """DeepSeek-V3.2 (DeepseekV32ForCausalLM) or GLM-5 (GlmMoeDsaForCausalLM, the same layers but
    interleaved RoPE in the indexer): AXK1Attention's latent attention, always with a query rank
    (q_lora_rank null is refused: the class cannot build it), caching the r_kv latent and the RoPE
    key; the indexer (index_n_heads heads of index_head_dim) beside it; the dense MLPs first, then
    DeepSeek-V3's experts. Their MTP layer (model.layers.61 and .78, ignored on load) is not built
    and not counted; mlp_bias is not read by their MLPs. A partial_rotary_factor, layer_types other
    than indexed_attention, GLM's "shared" indexer layers (they reuse the previous layer's top-k and
    hold no indexer), an indexer head narrower than qk_rope_head_dim, or num_attention_heads //
    num_key_value_heads other than 1 (eager attention then repeats the expanded keys) are refused."""
    defaults = _DEFAULTS[model_type]
    if f.get("hidden_act", "silu", str) != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(f.data['hidden_act'])} for {model_type}.")
    if rotary_fraction(f) != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor {show(rotary_fraction(f))} is not "
                          f"modelled for {model_type} (its latent attention and indexer rotate the "
                          "whole qk_rope_head_dim).")
    if f.data.get("q_lora_rank", defaults["q_lora_rank"]) is None:
        raise ConfigError(f"{f.source}: q_lora_rank null is not modelled for {model_type} (its "
                          "attention always projects queries through a rank, which the indexer reads).")
    heads = f.get("num_attention_heads", defaults["num_attention_heads"], minimum=1)
    kv_heads = f.get("num_key_value_heads", defaults["num_key_value_heads"], minimum=1)
    if heads // kv_heads != 1:
        raise ConfigError(f"{f.source}: num_attention_heads // num_key_value_heads is {heads // kv_heads}, "
                          f"which transformers 5.24 cannot run for {model_type} (eager attention repeats "
                          "the keys of every head that many times); give num_key_value_heads equal to "
                          "num_attention_heads.")
    layers = f.get("num_hidden_layers", defaults["num_hidden_layers"])
    check_int(f.source, "num_hidden_layers", layers, minimum=1)
    types = f.data.get("layer_types")
    if types is not None and types != ["indexed_attention"] * layers:
        raise ConfigError(f"{f.source}: layer_types other than indexed_attention on each of the "
                          f"{layers} layers are not modelled for {model_type}.")
    if model_type == "glm_moe_dsa" and (indexers := _glm_indexer_types(f, layers)) != ["full"] * layers:
        raise ConfigError(f"{f.source}: indexer_types {show(indexers)} are not modelled for glm_moe_dsa "
                          "(only \"full\" on every layer: a \"shared\" layer has no indexer and reuses "
                          "the previous layer's top-k).")
    dense = dense_layers_first(f, layers, model_type,
                               min(f.get("first_k_dense_replace", 3, minimum=0), layers))
    data = {**defaults, **{k: v for k, v in f.data.items() if v is not None},
            "first_k_dense_replace": dense, "num_hidden_layers": layers}
    for key in ("head_dim", "layer_types", "mlp_layer_types", "indexer_types", "index_topk_pattern",
                "index_topk_freq", "index_skip_topk_offset"):  # head_dim: set to qk_rope_head_dim by the class
        data.pop(key, None)
    read = Fields(data, f.source)
    index_heads, width = read.get("index_n_heads", minimum=1), read.get("index_head_dim", minimum=1)
    read.get("index_topk", minimum=1)
    rope = read.get("qk_rope_head_dim")
    if width < rope:
        raise ConfigError(f"{f.source}: index_head_dim ({width}) is narrower than qk_rope_head_dim "
                          f"({rope}), the part of each indexer head RoPE rotates.")
    base = llama.read(read, name, "deepseek_v3", defaults)
    return base.replace(family=model_type, index_n_heads=index_heads, index_head_dim=width)


#: model_type -> its reader (hf.py passes its LlamaReader).
DEEPSEEK_V32_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    model_type: (lambda f, name, llama, model_type=model_type: _sparse_attention(f, name, llama, model_type))
    for model_type in _DEFAULTS}

#: The transformers class, for a config.json that names `architectures` only.
DEEPSEEK_V32_ARCHITECTURES: dict[str, str] = {"DeepseekV32ForCausalLM": "deepseek_v32",
                                              "GlmMoeDsaForCausalLM": "glm_moe_dsa"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
DEEPSEEK_V32_NAMES: dict[str, dict[str, str]] = {
    model_type: {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                 "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"}
    for model_type in _DEFAULTS}

#: Model types of this lineage that transformers 5.24 runs and no block here expresses (deepseek_v4
#: is read by costmodel/hf_deepseek_v4.py since session 24).
UNMODELLED_TYPES: dict[str, str] = {}
