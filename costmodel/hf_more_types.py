"""config.json readers of more decoder families whose blocks exist here under other names (issue
18): Solar Open (solar_open: GLM-4.5's model with Llama's attention and experts in every layer),
Youtu-LLM (youtu: DeepSeek-V3's latent attention in dense Llama layers), Mellum (mellum:
Qwen3-MoE's layers with experts where mlp_layer_types says sparse), Sarvam's MLA models (sarvam_mla:
DeepSeek-V3's class with SarvamMLAConfig's defaults), A.X K1 (axk1: DeepSeek-V3's with a norm after its
experts), Emu3 (emu3: Llama's layers with dropout on each sublayer's output, read from text_config).
costmodel/hf.py dispatches on model_type. Defaults are those of transformers 5.24's configuration
classes (models/<model_type>/configuration_<model_type>.py)."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader, exaone4_windows
from .hf_moe_more import MOE_MORE_BUILDERS, dense_layers_first

#: SolarOpenConfig's defaults (transformers 5.24, models/solar_open/configuration_solar_open.py).
_SOLAR_OPEN_DEFAULTS: dict[str, Any] = dict(
    vocab_size=196608, hidden_size=4096, num_hidden_layers=48, num_attention_heads=64,
    num_key_value_heads=8, head_dim=128, max_position_embeddings=131072, moe_intermediate_size=1280,
    num_experts_per_tok=8, n_shared_experts=1, n_routed_experts=128, norm_topk_prob=True,
    tie_word_embeddings=False)

#: GLM-4.5 fields SolarOpenConfig does not have (its class reads none of them).
_SOLAR_OPEN_ABSENT = ("intermediate_size", "first_k_dense_replace", "use_qk_norm",
                      "num_nextn_predict_layers")


def _solar_open(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Solar Open (SolarOpenForCausalLM, upstage/Solar-Open-100B): GLM-4.5's model (its RMSNorm,
    its DeepSeek-V3 MoE: top num_experts_per_tok of n_routed_experts experts of
    moe_intermediate_size behind an fp32 sigmoid router with e_score_correction_bias, beside
    n_shared_experts shared experts as one MLP) in every layer, none dense, with Llama's attention
    (attention_bias on q, k and v, none on o, no q/k norms) and RoPE over the whole head: a
    partial_rotary_factor other than 1 (in rope_parameters, or top-level, which moves there) is
    refused, as Llama's apply_rotary_pos_emb then fails to broadcast its narrower cos. The GLM-4.5
    fields its config lacks (_SOLAR_OPEN_ABSENT) are not read: its class builds no dense MLP, no
    q/k norm and no MTP layer. The rest is costmodel/hf_moe_more.py's glm4_moe reader."""
    data = {**_SOLAR_OPEN_DEFAULTS,
            **{k: v for k, v in f.data.items() if k not in _SOLAR_OPEN_ABSENT}}
    if "num_local_experts" in data:  # SolarOpenConfig.attribute_map: the mapped name wins
        data["n_routed_experts"] = data.pop("num_local_experts")
    rope = data.get("rope_parameters") if isinstance(data.get("rope_parameters"), dict) else {}
    scaling = data.get("rope_scaling") if isinstance(data.get("rope_scaling"), dict) else {}
    factor = next((d["partial_rotary_factor"] for d in (rope, scaling, data)
                   if d.get("partial_rotary_factor") is not None), 1.0)
    if factor != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor {show(factor)} is not what solar_open "
                          "runs: its Llama attention rotates the whole head, and transformers 5.24 "
                          "fails to broadcast a narrower rotary table; set it to 1.")
    data["partial_rotary_factor"] = 1.0
    data.update(first_k_dense_replace=0, use_qk_norm=False, num_nextn_predict_layers=0,
                intermediate_size=data.get("moe_intermediate_size"))  # no dense MLP reads it
    base = MOE_MORE_BUILDERS["glm4_moe"](Fields(data, f.source), name, llama)
    return base.replace(family="solar_open")


#: YoutuConfig's defaults for the fields it reads (transformers 5.24, models/youtu); the latent
#: attention's own (q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128,
#: v_head_dim 128) are DeepseekV3Config's, which hf.py's deepseek_v3 reader holds.
_YOUTU_DEFAULTS: dict[str, Any] = dict(
    vocab_size=128256, hidden_size=2048, intermediate_size=6144, num_hidden_layers=32,
    num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=131072,
    hidden_act="silu", tie_word_embeddings=True)

#: DeepSeek-V3 fields YoutuConfig removes (its class reads none of them: no experts, no MTP).
_YOUTU_ABSENT = ("n_shared_experts", "n_routed_experts", "routed_scaling_factor", "n_group",
                 "topk_group", "num_experts_per_tok", "first_k_dense_replace", "norm_topk_prob",
                 "moe_intermediate_size", "num_nextn_predict_layers", "num_local_experts")


def _youtu(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Youtu-LLM (YoutuForCausalLM): Llama's model and decoder layers (fp32 RMSNorms, Llama's
    rotary table over qk_rope_head_dim) with DeepSeek-V3's latent attention (DeepseekV3Attention:
    queries through q_lora_rank or directly where it is null, keys and values from a cached
    kv_lora_rank latent and a qk_rope_head_dim RoPE key, attention_bias on its projections) and a
    dense SwiGLU MLP of intermediate_size (Qwen3's, no biases) in every layer. YoutuConfig removes
    DeepSeek-V3's expert and MTP fields (_YOUTU_ABSENT): they are not read. hf.py's deepseek_v3
    reader with every layer dense. A num_key_value_heads other than num_attention_heads is
    refused: the latent attention's keys have a head per query head already, and repeat_kv by
    their quotient then fails in transformers 5.24."""
    data = {**_YOUTU_DEFAULTS, **{k: v for k, v in f.data.items() if k not in _YOUTU_ABSENT}}
    heads, kv_heads = data.get("num_attention_heads"), data.get("num_key_value_heads")
    if kv_heads is not None and kv_heads != heads:
        raise ConfigError(f"{f.source}: num_key_value_heads ({show(kv_heads)}) is not "
                          f"num_attention_heads ({show(heads)}), which youtu's latent attention "
                          "cannot run (repeat_kv of keys that have a head per query head fails); "
                          "set them equal.")
    data["first_k_dense_replace"] = data.get("num_hidden_layers")  # every layer dense
    base = llama.read(Fields(data, f.source), name, "deepseek_v3", _YOUTU_DEFAULTS)
    return base.replace(family="youtu")


#: MellumConfig's defaults (transformers 5.24, models/mellum; Qwen3MoeConfig's where it has none).
_MELLUM_DEFAULTS: dict[str, Any] = dict(
    vocab_size=98304, hidden_size=2304, intermediate_size=7168, num_hidden_layers=28,
    num_attention_heads=32, num_key_value_heads=4, head_dim=128, max_position_embeddings=131072,
    hidden_act="silu", tie_word_embeddings=False, moe_intermediate_size=896, num_experts_per_tok=8,
    norm_topk_prob=True)


def _kinds(f: Fields, key: str, layers: int, kinds: tuple[str, ...], default: str) -> list[str]:
    """A per-layer list of kinds (Mellum's layer_types, mlp_layer_types; null: every layer
    `default`), checked: one of `kinds` for each layer."""
    value = f.data.get(key)
    if value is None:
        return [default] * layers
    if not isinstance(value, list) or len(value) != layers or any(v not in kinds for v in value):
        raise ConfigError(f"{f.source}: {key} must list {' or '.join(kinds)} for each of the "
                          f"{layers} layers, got {show(value)}.")
    return value


def _mellum(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Mellum (MellumForCausalLM): Qwen3-MoE's attention (an RMSNorm on each query and key head,
    attention_bias), sparse block (a softmax router, top num_experts_per_tok of num_local_experts
    experts of moe_intermediate_size, renormalised where norm_topk_prob) and dense MLP (of
    intermediate_size) in Llama's pre-norm layers, the experts on the layers mlp_layer_types marks
    sparse (null: every layer); RoPE from rope_parameters' entry for the layer's type. Its MTP
    layer is not built by the class (ignored on load). Refused, one sentence each: a
    sliding_attention layer in layer_types (its window and its own rotary table are not modelled
    here) and a rope_parameters partial_rotary_factor other than 1 (Qwen3-MoE's attention rotates
    the whole head). The rest is hf.py's qwen3_moe reader, the dense layers as mlp_only_layers."""
    data = {**_MELLUM_DEFAULTS, **f.data}
    layers = data.get("num_hidden_layers")
    check_int(f.source, "num_hidden_layers", layers, minimum=1)
    fields = Fields(data, f.source)
    if "sliding_attention" in _kinds(fields, "layer_types", layers, ("full_attention", "sliding_attention"),
                                     "full_attention"):
        raise ConfigError(f"{f.source}: layer_types with sliding_attention layers (a window and a "
                          "rotary table of their own) is not modelled for mellum; use full_attention.")
    rope = data.get("rope_parameters")
    full = rope.get("full_attention") if isinstance(rope, dict) else None
    factor = full.get("partial_rotary_factor", 1.0) if isinstance(full, dict) else 1.0
    if factor != 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor {show(factor)} is not what mellum "
                          "runs: its Qwen3-MoE attention rotates the whole head, and transformers "
                          "5.24 fails to broadcast a narrower rotary table; set it to 1.")
    mlp = _kinds(fields, "mlp_layer_types", layers, ("dense", "sparse"), "sparse")
    experts = data.get("num_experts", data.get("num_local_experts", 64))  # MellumConfig.attribute_map
    read = {k: v for k, v in data.items() if k not in ("rope_parameters", "layer_types", "mlp_layer_types",
                                                      "use_sliding_window", "decoder_sparse_step")}
    read.update(num_experts=experts, mlp_only_layers=[i for i, kind in enumerate(mlp) if kind == "dense"])
    base = llama.read(Fields(read, f.source), name, "qwen3_moe", _MELLUM_DEFAULTS)
    return base.replace(family="mellum")


#: SarvamMLAConfig's defaults where they are not DeepseekV3Config's (transformers 5.24,
#: models/sarvam_mla/modular_sarvam_mla.py, sarvamai/sarvam-105b's shapes); hf.py's deepseek_v3
#: reader holds the rest (kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim
#: 128, moe_intermediate_size 2048, one shared expert, top 8, routed_scaling_factor 2.5).
_SARVAM_MLA_DEFAULTS: dict[str, Any] = dict(
    vocab_size=262144, hidden_size=4096, intermediate_size=16384, num_hidden_layers=32,
    num_attention_heads=64, n_routed_experts=128, q_lora_rank=None, n_group=1, topk_group=1,
    first_k_dense_replace=1, max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False)

#: SarvamMLAConfig.attribute_map's names of the original sarvam-105b config.json -> DeepSeek-V3's
#: (the mapped name wins, as the configuration class sets the attribute it maps to).
_SARVAM_MLA_NAMES = {"num_experts": "n_routed_experts", "num_shared_experts": "n_shared_experts",
                     "num_local_experts": "n_routed_experts"}


def _sarvam_mla(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Sarvam's MLA models (sarvam_mla): transformers 5.24 builds DeepseekV3ForCausalLM from a
    SarvamMLAConfig (models/auto/modeling_auto.py), so this is hf.py's deepseek_v3 reader with
    SarvamMLAConfig's defaults (_SARVAM_MLA_DEFAULTS: queries without a low rank, one expert group,
    the first layer dense) and its original config's names (_SARVAM_MLA_NAMES) read as the class
    reads them. A legacy head_dim (kv_lora_rank + qk_rope_head_dim, for vLLM) is dropped as the
    class drops it. The ModelConfig's family is deepseek_v3: the same code runs."""
    data = {**_SARVAM_MLA_DEFAULTS, **f.data}
    for original, mapped in _SARVAM_MLA_NAMES.items():
        if original in data:
            data[mapped] = data.pop(original)
    for key in ("head_dim", "q_head_dim"):  # derived by DeepseekV3Config
        data.pop(key, None)
    return llama.read(Fields(data, f.source), name, "deepseek_v3", _SARVAM_MLA_DEFAULTS)


#: AXK1Config's defaults (transformers 5.24, models/axk1/modular_axk1.py, skt/A.X-K1's shapes) where
#: hf.py's deepseek_v3 reader's differ or are not read there.
_AXK1_DEFAULTS: dict[str, Any] = dict(
    vocab_size=163840, hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
    num_hidden_layers=61, num_attention_heads=64, num_key_value_heads=64, n_shared_experts=1,
    n_routed_experts=192, routed_scaling_factor=2.5, kv_lora_rank=512, q_lora_rank=1536,
    qk_rope_head_dim=64, v_head_dim=128, qk_nope_head_dim=128, n_group=8, topk_group=4,
    num_experts_per_tok=8, max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=False)


def _axk1(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """SK Telecom's A.X K1 (AXK1ForCausalLM, skt/A.X-K1): DeepSeek-V3's model (latent attention,
    always through a query rank; the grouped sigmoid router, its experts and shared expert) whose
    MoE block ends with post_mlp_layernorm, an RMSNorm on the experts' sum before the residual add
    (moe_output_norm; the dense layers have none). Its layers' kinds are mlp_layer_types, or else
    first_k_dense_replace (1) and moe_layer_freq (1) as AXK1Config derives them: dense layers first,
    then sparse ones, as hf_moe_more.dense_layers_first requires. A null q_lora_rank is refused: the
    class builds q_a_proj of that rank whatever it is. Read by hf.py's deepseek_v3 reader under
    AXK1Config's defaults; the family is axk1 (its facts are DeepSeek-V3's)."""
    if f.data.get("q_lora_rank", 1) is None:
        raise ConfigError(f"{f.source}: q_lora_rank null is not what axk1's class builds (AXK1Attention "
                          "always projects queries through q_a_proj of q_lora_rank).")
    layers = f.get("num_hidden_layers", _AXK1_DEFAULTS["num_hidden_layers"])
    check_int(f.source, "num_hidden_layers", layers, minimum=1)
    first, every = f.get("first_k_dense_replace", 1), f.get("moe_layer_freq", 1, minimum=1)
    check_int(f.source, "first_k_dense_replace", first)
    kinds = ["sparse" if i >= first and i % every == 0 else "dense" for i in range(layers)]
    data = {"mlp_layer_types": kinds, **{k: v for k, v in f.data.items() if v is not None}}
    dense = dense_layers_first(Fields(data, f.source), layers, "axk1", 0)
    data.update(first_k_dense_replace=dense)
    data.pop("head_dim", None)  # AXK1Config sets it to qk_rope_head_dim
    base = llama.read(Fields({**_AXK1_DEFAULTS, **data}, f.source), name, "deepseek_v3", _AXK1_DEFAULTS)
    return base.replace(family="axk1", moe_output_norm=True)


#: Kolibri1Config's defaults (transformers 5.24, models/kolibri1/modular_kolibri1.py; Qwen3MoeConfig's
#: where it keeps them).
_KOLIBRI1_DEFAULTS: dict[str, Any] = dict(
    vocab_size=128000, hidden_size=2560, num_hidden_layers=50, num_attention_heads=48, num_key_value_heads=4,
    head_dim=128, max_position_embeddings=262144, sliding_window=513, hidden_act="silu",
    tie_word_embeddings=False)


def _kolibri1(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Aleph Alpha's Kolibri-1 (Kolibri1ForCausalLM): EXAONE 4.0's attention (no biases, an RMSNorm
    on each query and key head before RoPE; a window on the layers layer_types marks sliding, by
    default all but every fifth, and the full layers NoPE: hf_llama_variants.exaone4_windows) in
    GLM-4's sandwich layer (a norm before and after each sublayer), with experts in every layer:
    the top num_experts_per_tok of num_experts SwiGLU experts of moe_intermediate_size chosen by
    Kolibri1TopKRouter (the top k of the fp32 logits plus e_score_correction_bias, then a sigmoid
    over those k, renormalised where norm_topk_prob; router "topk_then_sigmoid"), no scaling, beside
    one shared SwiGLU of shared_expert_intermediate_size."""
    if f.get("hidden_act", "silu", str) != "silu":
        raise ConfigError(f"{f.source}: hidden_act {show(f.get('hidden_act', 'silu', str))} is not "
                          "modelled for kolibri1 (its experts are SwiGLU: silu).")
    layers = f.get("num_hidden_layers", _KOLIBRI1_DEFAULTS["num_hidden_layers"])
    check_int(f.source, "num_hidden_layers", layers, minimum=1)
    data = {**_KOLIBRI1_DEFAULTS, **f.data}
    data["intermediate_size"] = data.get("moe_intermediate_size", 512)  # no dense MLP: its class has no such field
    if data.get("layer_types") is None:  # Kolibri1Config.__post_init__: every fifth layer full
        data["layer_types"] = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(layers)]
    g = Fields(data, f.source)
    base = llama.read(g, name, "llama", _KOLIBRI1_DEFAULTS)
    windows = exaone4_windows(g, layers, llama, "Kolibri1Model")
    experts = g.get("num_experts", g.get("num_local_experts", 384))
    check_int(f.source, "num_experts", experts, minimum=1)
    experts_fields = dict(
        n_experts=experts, top_k=g.get("num_experts_per_tok", 6), d_expert=g.get("moe_intermediate_size", 512),
        d_shared=g.get("shared_expert_intermediate_size", 512, minimum=1), router="topk_then_sigmoid",
        renormalize_top_k=g.get("norm_topk_prob", False, bool),
        layer_pattern=windows.get("layer_pattern") or llama.pattern(layers, [], list(range(layers))))
    return base.replace(family="kolibri1", qkv_bias=False, out_bias=False, ffn_bias=False, qk_norm=True,
                        post_sublayer_norm=True, **{**windows, **experts_fields})


#: Emu3TextConfig's defaults (transformers 5.24, models/emu3/configuration_emu3.py).
_EMU3_DEFAULTS: dict[str, Any] = dict(
    vocab_size=184622, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=8, hidden_act="silu", max_position_embeddings=9216, tie_word_embeddings=False)


def _emu3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Emu3 (BAAI's Emu3-Chat and Emu3-Gen, model_type emu3): AutoModelForCausalLM builds
    Emu3ForCausalLM from the text_config alone (Emu3TextConfig's defaults where it leaves a field out;
    the VQ-VAE image tokenizer is Emu3ForConditionalGeneration's and is not counted): Llama's layers
    (attention_bias on q, k, v and o, mlp_bias) with attention_dropout (0.1 by default) both on the
    attention probabilities and on each sublayer's output before its residual add (Emu3DecoderLayer's
    own nn.Dropout)."""
    g = _text_config(f, "emu3", _EMU3_DEFAULTS)
    p = float(g.get("attention_dropout", 0.1, float))
    base = llama.read(g, name, "llama", _EMU3_DEFAULTS)
    named = f"{name} (language model)" if "vq_config" in f.data else name  # the Hub's file: a VQ-VAE too
    return base.replace(family="emu3", dropout=p, attention_dropout=p, name=named)


def _text_config(f: Fields, kind: str, defaults: dict[str, Any]) -> Fields:
    """A multimodal file's language model: its text_config (absent: {}) over the text config class's
    defaults; anything but an object is refused in one line."""
    text = f.data.get("text_config")
    if text is None:
        text = {}
    if not isinstance(text, dict):
        raise ConfigError(f"{f.source}: an {kind} config is read as its language model, text_config, which must "
                          f"be an object, got {show(text)}.")
    return Fields({**defaults, **text}, f"{f.source} text_config")


#: MllamaTextConfig's defaults (transformers 5.24, models/mllama/configuration_mllama.py).
_MLLAMA_DEFAULTS: dict[str, Any] = dict(
    vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=40, num_attention_heads=32,
    num_key_value_heads=8, hidden_act="silu", max_position_embeddings=131072, tie_word_embeddings=False)
_MLLAMA_CROSS = [3, 8, 13, 18, 23, 28, 33, 38]  # MllamaTextConfig.__post_init__'s cross_attention_layers
_MLLAMA_IMAGE_ROWS = 8  # MllamaTextModel.embed_tokens: nn.Embedding(vocab_size + 8, ...)


def _mllama(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Llama 3.2 Vision (model_type mllama) on text: AutoModelForCausalLM builds MllamaForCausalLM from
    the text_config (MllamaTextConfig's defaults where it leaves a field out; the vision tower is
    MllamaForConditionalGeneration's and is not counted). Its layers listed in cross_attention_layers
    are cross-attention layers, which MllamaTextModel skips without image states: held (their
    parameters count: blocks/idle.py), not run; the others are Llama's layers. The token table has 8
    rows past vocab_size (image tokens), the head vocab_size; a tied head (which those shapes cannot
    share) is refused in one line. The estimate is of text prompts; a file with a vision_config (the Hub's)
    names it "(language model, text prompts)"."""
    g = _text_config(f, "mllama", _MLLAMA_DEFAULTS)
    layers = g.get("num_hidden_layers", minimum=1)
    cross = g.data.get("cross_attention_layers")
    cross = _MLLAMA_CROSS if cross is None else cross
    if not isinstance(cross, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in cross) \
            or len(set(cross)) != len(cross) or any(not 0 <= i < layers for i in cross) or len(cross) >= layers:
        raise ConfigError(f"{g.source}: cross_attention_layers must list distinct layer indices below "
                          f"num_hidden_layers ({layers}), leaving a self-attention layer; got {show(cross)}.")
    if g.get("tie_word_embeddings", False, bool):
        raise ConfigError(f"{g.source}: tie_word_embeddings is not modelled for mllama: its token table has "
                          f"{_MLLAMA_IMAGE_ROWS} rows past vocab_size that the head has not.")
    heads, width = g.get("num_attention_heads", minimum=1), g.get("hidden_size", minimum=1)
    if g.data.get("head_dim") not in (None, width // heads):
        raise ConfigError(f"{g.source}: head_dim {show(g.data['head_dim'])} is not hidden_size / num_attention_heads "
                          f"({width // heads}), which transformers 5.24's Mllama attention uses while its RoPE "
                          "table takes head_dim: the class cannot run it.")
    if float(g.get("dropout", 0.0, float)):
        raise ConfigError(f"{g.source}: a nonzero dropout is not modelled for mllama.")
    base = llama.read(Fields(dict(g.data, num_hidden_layers=layers - len(cross)), g.source), name, "llama",
                      _MLLAMA_DEFAULTS)
    named = f"{name} (language model, text prompts)" if "vision_config" in f.data else name  # the Hub's file
    return base.replace(family="mllama", idle_cross_layers=len(cross), embedding_extra_rows=_MLLAMA_IMAGE_ROWS,
                        name=named)


#: LongcatFlashConfig's defaults (transformers 5.24, meituan-longcat/LongCat-Flash-Chat's shapes), in the
#: names hf.py's deepseek_v3 reader reads.
_LONGCAT_DEFAULTS: dict[str, Any] = dict(
    vocab_size=131072, hidden_size=6144, num_attention_heads=64, max_position_embeddings=131072, hidden_act="silu",
    tie_word_embeddings=False, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
    v_head_dim=128)
#: LongcatFlashConfig's attribute_map: the names a file may use -> the class's own.
_LONGCAT_NAMES = {"num_local_experts": "n_routed_experts", "num_experts_per_tok": "moe_topk",
                  "intermediate_size": "ffn_hidden_size", "moe_intermediate_size": "expert_ffn_hidden_size"}


def _longcat_flash(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Meituan's LongCat-Flash (LongcatFlashForCausalLM): each of num_layers layers runs two sublayer
    pairs, read as two of the tree's layers: the first a latent attention (DeepSeek-V3's, always through
    q_lora_rank, the query and latent times LoRA scales) and an MLP of ffn_hidden_size beside a shortcut
    MoE that reads the same norm's output (held as its shared expert: its sum is added a sublayer later,
    which costs nothing more); the second a latent attention and an MLP. The MoE: a softmax router over
    n_routed_experts + zero_expert_num choices (fp32 logits of an fp32 classifier, a score-correction
    buffer for the choice, the top moe_topk weights times routed_scaling_factor, not renormalised),
    SwiGLU experts of expert_ffn_hidden_size run as a loop over the experts hit, and zero_expert_num
    identity experts (zero_experts). Counted with every slot on a real expert (none on an identity one):
    the most FLOPs a token can cost. Refused in one line: a null q_lora_rank, a head_dim (RoPE's width)
    other than qk_rope_head_dim, a qk_head_dim other than qk_nope_head_dim + qk_rope_head_dim."""
    data = {k: v for k, v in f.data.items() if v is not None or k == "zero_expert_num"}
    for mapped, own in _LONGCAT_NAMES.items():
        if mapped in data and own not in data:
            data[own] = data.pop(mapped)
    if "q_lora_rank" in f.data and f.data["q_lora_rank"] is None:
        raise ConfigError(f"{f.source}: q_lora_rank null is not what longcat_flash's class builds "
                          "(LongcatFlashMLA always projects queries through q_a_proj).")
    fields = Fields(data, f.source)
    layers = fields.get("num_layers", fields.get("num_hidden_layers", 56) // 2 if "num_hidden_layers" in data else 28)
    check_int(f.source, "num_layers", layers, minimum=1)
    rope, nope = fields.get("qk_rope_head_dim", 64), fields.get("qk_nope_head_dim", 128)
    if fields.get("head_dim", rope) != rope or fields.get("qk_head_dim", rope + nope) != rope + nope:
        raise ConfigError(f"{f.source}: head_dim (RoPE's width) must equal qk_rope_head_dim and qk_head_dim "
                          "qk_nope_head_dim + qk_rope_head_dim, as the class runs them.")
    zero = fields.get("zero_expert_num", 256) or 0
    check_int(f.source, "zero_expert_num", zero, minimum=0)
    ffn = fields.get("ffn_hidden_size", 12288)
    data.update(num_hidden_layers=2 * layers, intermediate_size=ffn, n_routed_experts=fields.get("n_routed_experts", 512),
                num_experts_per_tok=fields.get("moe_topk", 12), first_k_dense_replace=0,
                moe_intermediate_size=fields.get("expert_ffn_hidden_size", 2048), norm_topk_prob=False,
                n_group=1, topk_group=1, num_key_value_heads=fields.get("num_attention_heads", 64))
    for key in ("head_dim", "qk_head_dim", "num_layers"):
        data.pop(key, None)
    base = llama.read(Fields({**_LONGCAT_DEFAULTS, **data}, f.source), name, "deepseek_v3", _LONGCAT_DEFAULTS)
    return base.replace(family="longcat_flash", router="softmax", d_shared=ffn, n_dense_layers=layers,
                        layer_pattern=("moe", "dense") * layers, zero_experts=zero)


#: model_type -> its reader (hf.py passes its LlamaReader).
MORE_TYPES_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "solar_open": _solar_open, "youtu": _youtu, "mellum": _mellum,
    "sarvam_mla": _sarvam_mla, "axk1": _axk1, "kolibri1": _kolibri1, "emu3": _emu3,
    "mllama": _mllama, "longcat_flash": _longcat_flash,
}

#: The transformers class of each, for a config.json that names `architectures` only.
MORE_TYPES_ARCHITECTURES: dict[str, str] = {
    "SolarOpenForCausalLM": "solar_open", "YoutuForCausalLM": "youtu", "MellumForCausalLM": "mellum",
    "AXK1ForCausalLM": "axk1", "Kolibri1ForCausalLM": "kolibri1", "Emu3ForCausalLM": "emu3",
    "Emu3ForConditionalGeneration": "emu3", "MllamaForCausalLM": "mllama", "MllamaForConditionalGeneration": "mllama",
    "LongcatFlashForCausalLM": "longcat_flash",
}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
MORE_TYPES_NAMES: dict[str, dict[str, str]] = {
    "solar_open": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                   "d_expert": "moe_intermediate_size"},
    "youtu": LLAMA_NAMES,
    "mellum": {**LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok",
               "d_expert": "moe_intermediate_size"},
    "sarvam_mla": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                   "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"},
    "axk1": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
             "d_expert": "moe_intermediate_size", "n_dense_layers": "mlp_layer_types"},
    "emu3": LLAMA_NAMES, "mllama": LLAMA_NAMES,
    "longcat_flash": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "moe_topk", "d_ff": "ffn_hidden_size",
                      "d_expert": "expert_ffn_hidden_size", "zero_experts": "zero_expert_num"},
    "kolibri1": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
                 "d_expert": "moe_intermediate_size", "d_shared": "shared_expert_intermediate_size"},
}
