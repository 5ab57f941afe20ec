"""config.json readers of mixture-of-experts families new in transformers 5.24 whose blocks exist
here under other names: Hy3 (hy_v3, tencent/Hy3-preview: Apertus' attention, DeepSeek-V3's dense
and sparse layers with a sigmoid router and a shared expert). Each reads Llama's fields through
hf.py's Llama reader (with its own defaults) and then sets what its code does otherwise;
costmodel/hf.py dispatches on model_type. Defaults are those of transformers 5.24's configuration
classes (models/hy_v3/configuration_hy_v3.py).

Not read here, each for one reason (validate/FINDINGS.md, issue 18): mimo_v2_flash (its sliding
layers have twice the KV heads of its full ones, one ModelConfig field for all layers here),
longcat_flash (zero-compute identity experts: a layer's FLOPs depend on how many tokens the
router sends to them), afmoe (RoPE on the sliding layers only, NoPE on the full ones, with
experts: no layer kind here is all three), laguna (a softplus output gate per head, no block
here), hy_v4 (not read in the time this issue had)."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields, rotary_fraction
from .hf_llama_variants import LlamaReader

#: HYV3Config's defaults (transformers 5.24) for the Llama fields its reader reads.
_HY_V3 = dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
              num_key_value_heads=8, head_dim=128)


def _sparse_layers(f: Fields, layers: int) -> list[int]:
    """The layers whose MLP has experts: mlp_layer_types' "sparse" ones (HYV3Config's default:
    the first layer dense, the rest sparse)."""
    kinds = f.data.get("mlp_layer_types")
    if kinds is None:
        return list(range(min(1, layers), layers))
    if (not isinstance(kinds, list) or len(kinds) != layers
            or any(kind not in ("dense", "sparse") for kind in kinds)):
        raise ConfigError(f"{f.source}: mlp_layer_types must list dense or sparse for each of the "
                          f"{layers} layers.")
    return [i for i, kind in enumerate(kinds) if kind == "sparse"]


def _hy_v3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Hy3 (HYV3ForCausalLM): Apertus' attention (Llama's with attention_bias on q, k, v and o and
    an RMSNorm on each query and key head before RoPE on the whole head); each layer's MLP a
    SwiGLU of intermediate_size where mlp_layer_types says dense, else top num_experts_per_tok of
    num_experts SwiGLU experts of moe_intermediate_size chosen by an fp32 sigmoid router (an
    fp32 weight, e_score_correction_bias, an fp32 buffer, added for the choice only, the chosen
    weights always renormalised, times router_scaling_factor) beside one shared MLP of
    moe_intermediate_size * num_shared_experts (HYV3MLP takes `width or intermediate_size`, so a
    width of 0 is intermediate_size), the two added in fp32 where enable_moe_fp32_combine (casts
    that keep nothing for backward). mlp_bias (biases on the dense and shared MLPs, not the
    experts) and a partial rotary factor (Llama's rotation of the whole head cannot run it) are
    refused. The layers the checkpoint holds beyond num_hidden_layers (its MTP layer,
    model.layers.80, ignored on load) are not built and not counted."""
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for hy_v3.")
    if f.get("mlp_bias", False, bool):
        raise ConfigError(f"{f.source}: mlp_bias (biases on hy_v3's dense and shared MLPs, not its "
                          "routed experts) is not modelled.")
    if rotary_fraction(f, "partial_rotary_factor", 1.0) != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor is not modelled for hy_v3 (its "
                          "apply_rotary_pos_emb rotates the whole head).")
    if f.data.get("head_dim", 1) is None:
        raise ConfigError(f"{f.source}: head_dim null is not modelled for hy_v3 (HYV3Attention "
                          "sizes its projections by config.head_dim); give a width.")
    base = llama.read(f, name, "llama", _HY_V3)
    layers = base.n_decoder_layers
    sparse = _sparse_layers(f, layers)
    base = base.replace(family="hy_v3", qk_norm=True)
    if not sparse:
        return base
    experts = (f.nullable("num_local_experts", 192) if "num_local_experts" in f.data  # the mapped
               else f.nullable("num_experts", 192))  # name wins
    top_k = f.nullable("num_experts_per_tok", 8)
    shared = f.nullable("num_shared_experts", 1)
    for key, value in (("num_experts", experts), ("num_experts_per_tok", top_k),
                       ("num_shared_experts", shared)):
        if value is None:
            raise ConfigError(f"{f.source}: {key} is null but {len(sparse)} layers have experts, "
                              "which transformers 5.24 cannot build; give it.")
    check_int(f.source, "num_experts", experts, minimum=1)
    check_int(f.source, "num_shared_experts", shared, minimum=0)
    width = f.get("moe_intermediate_size", 1536, minimum=1)
    return base.replace(n_experts=experts, top_k=top_k, d_expert=width,
                        d_shared=width * shared or base.d_ff, router="sigmoid",
                        renormalize_top_k=True, n_dense_layers=layers - len(sparse),
                        layer_pattern=llama.pattern(layers, [], sparse))


#: model_type -> its reader (hf.py passes its LlamaReader).
NEW_MOE_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "hy_v3": _hy_v3,
}

#: The transformers class of each, for a config.json that names `architectures` only.
NEW_MOE_ARCHITECTURES: dict[str, str] = {"HYV3ForCausalLM": "hy_v3"}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
NEW_MOE_NAMES: dict[str, dict[str, Any]] = {
    "hy_v3": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
              "d_expert": "moe_intermediate_size"},
}
