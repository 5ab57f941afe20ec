"""config.json readers of more mixture-of-experts decoders whose blocks exist here under other
names: GraniteMoE (granitemoe: Granite's layers and multipliers with Mixtral's sparse layers and a
top-k-then-softmax router), GraniteMoE-shared (granitemoeshared: the same with an ungated shared
MLP beside the experts), GraniteMoeSWA (granitemoe_swa: GraniteMoE-shared's layers with GraniteSWA's
windows, sinks and per-layer RoPE bases), FlexOlmo (flex_olmo: OLMo 2's layers with OLMoE's experts), ERNIE 4.5
MoE (ernie4_5_moe: ERNIE 4.5's layers with experts on a start/end/interval pattern), PhiMoE
(phimoe: Mixtral's layers with LayerNorms, biases and the sparsemixer router), DBRX (dbrx: its
own nested fields, a fused clamped Wqkv, a router in the model's dtype, the experts as a loop)
and Sarvam MoE (sarvam_moe: GLM-4.5's class under its own defaults). Most read Llama's fields
through hf_llama.py's Llama reader (with their own defaults) and then set what their code does
otherwise; costmodel/hf.py dispatches on model_type. Defaults are those of transformers 5.24's
configuration classes (models/<model_type>/configuration_<model_type>.py)."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import check_int
from .hf_fields import LLAMA_NAMES, Fields
from .hf_llama_variants import LlamaReader, granite_swa_attention, without_windows
from .hf_moe_more import MOE_MORE_BUILDERS

#: transformers 5.24's defaults for the Llama fields each family reads (its configuration class).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "granitemoe": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "granitemoeshared": dict(max_position_embeddings=2048, hidden_act="silu",
                             tie_word_embeddings=False),
    "flex_olmo": dict(max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False),
    "phimoe": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                   num_key_value_heads=8),
    "ernie4_5_moe": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=True,
                         num_key_value_heads=4),
    "aria_text": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
}


def _silu(f: Fields, family: str) -> None:
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {family}.")


def _granitemoe(f: Fields, name: str, llama: LlamaReader, family: str = "granitemoe") -> ModelConfig:
    """GraniteMoE (GraniteMoeForCausalLM): Granite's attention (attention_bias on q, k, v and o,
    the scores times attention_multiplier), its embedding, residual and logits multipliers
    (hf.py's Granite reader), and in every layer top num_experts_per_tok of num_local_experts
    SwiGLU experts of intermediate_size (one gate_up weight, no biases) chosen by
    GraniteMoeTopKRouter: a linear d -> E without bias in the model's dtype, its logits cast to
    fp32, their top k, a softmax over those k cast back to the model's dtype (no renormalising:
    they sum to 1). mlp_bias is not read by the class."""
    _silu(f, family)
    data = {k: v for k, v in f.data.items() if k != "mlp_bias"}  # GraniteMoeConfig has none
    base = llama.read(Fields(data, f.source), name, "granite", _DEFAULTS[family])
    experts = f.get("num_local_experts", 8, minimum=1)
    top_k = f.get("num_experts_per_tok", 2, minimum=1)
    if top_k > experts:
        raise ConfigError(f"{f.source}: num_experts_per_tok ({top_k}) is more than "
                          f"num_local_experts ({experts}), which torch.topk cannot choose.")
    return base.replace(family=family, ffn_bias=False, n_experts=experts, top_k=top_k,
                        router="topk_softmax", renormalize_top_k=False)


def _granitemoeshared(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GraniteMoE-shared (GraniteMoeSharedForCausalLM): GraniteMoE's layers (see _granitemoe)
    with, where shared_intermediate_size is not 0, a shared SwiGLU MLP of that width beside the
    experts (GraniteMoeSharedMLP: one d -> 2 s input_linear and an s -> d output_linear, no biases,
    no gate of its own), its output added to the experts'."""
    shared = f.get("shared_intermediate_size", 0)
    check_int(f.source, "shared_intermediate_size", shared, minimum=0)
    base = _granitemoe(f, name, llama, "granitemoeshared")
    return base.replace(d_shared=shared)


def _granitemoe_swa(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GraniteMoeSWA (GraniteMoeSWAForCausalLM): GraniteMoE-shared's layers (shared experts where
    shared_intermediate_size, 0 by default, is not 0) with GraniteSWA's attention: windows, sinks
    and per-layer RoPE bases (hf_llama_variants.granite_swa_attention)."""
    _silu(f, "granitemoe_swa")
    base = _granitemoeshared(without_windows(f), name, llama)
    if base.n_experts is None:
        raise ConfigError(f"{f.source}: granitemoe_swa without experts is not modelled.")
    if base.layer_pattern is not None:
        raise ConfigError(f"{f.source}: granitemoe_swa with layers that differ in their MLP is not "
                          "modelled.")
    return base.replace(family="granitemoe_swa", **granite_swa_attention(f, base.n_decoder_layers, llama))


def _flex_olmo(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """FlexOlmo (FlexOlmoForCausalLM): OLMo 2's layers (Olmo2Attention: an RMSNorm over the whole
    query and the whole key projection, attention_bias on q, k, v and o; a norm after each
    sublayer and none before; RoPE tables left in fp32; hf.py's OLMo 2 reader) in which every MLP
    is OLMoE's sparse block: top num_experts_per_tok of num_experts SwiGLU experts of
    intermediate_size behind OlmoeTopKRouter (an fp32 softmax over every expert, the top-k
    weights renormalised where norm_topk_prob, cast back to the model's dtype)."""
    _silu(f, "flex_olmo")
    experts = f.get("num_local_experts", f.get("num_experts", 7))  # the mapped name wins
    check_int(f.source, "num_experts", experts, minimum=1)
    top_k = f.get("num_experts_per_tok", 5, minimum=1)
    if top_k > experts:
        raise ConfigError(f"{f.source}: num_experts_per_tok ({top_k}) is more than num_experts "
                          f"({experts}), which torch.topk cannot choose.")
    base = llama.read(f, name, "olmo2", _DEFAULTS["flex_olmo"])
    return base.replace(family="flex_olmo", n_experts=experts, top_k=top_k,
                        renormalize_top_k=f.get("norm_topk_prob", False, bool))


def _ernie_moe_layers(f: Fields, layers: int) -> list[int]:
    """The layers with experts: Ernie4_5_MoeDecoderLayer's rule, (i + 1) %
    moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last
    layer, Ernie4_5_MoeConfig.__post_init__)."""
    start = f.get("moe_layer_start_index", 1)
    end = f.get("moe_layer_end_index", -1)
    every = f.get("moe_layer_interval", 1, minimum=1)
    end = layers - 1 if end == -1 else end
    return [i for i in range(layers) if (i + 1) % every == 0 and start <= i <= end]


def _ernie4_5_moe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """ERNIE 4.5 MoE (Ernie4_5_MoeForCausalLM): ERNIE 4.5's layers (Llama's, use_bias on q, k, v,
    o, the dense and shared MLPs and the head; no attention dropout; RoPE in fp32, interleaved in
    each layer) in which the layers _ernie_moe_layers picks route each token to moe_k of
    moe_num_experts SwiGLU experts of moe_intermediate_size (no biases) beside
    moe_num_shared_experts shared experts as one MLP of their summed width.
    Ernie4_5_MoeTopKRouter runs in fp32 (an fp32 weight and input), softmaxes over every expert,
    chooses with e_score_correction_bias added (a frozen fp32 nn.Parameter of E that parameters()
    counts), and divides the chosen weights by their sum clamped below at moe_norm_min."""
    _silu(f, "ernie4_5_moe")
    bias = f.get("use_bias", False, bool)
    base = llama.read(f, name, "llama", _DEFAULTS["ernie4_5_moe"])
    layers = base.n_decoder_layers
    moe = _ernie_moe_layers(f, layers)
    common = dict(family="ernie4_5_moe", qkv_bias=bias, out_bias=bias, ffn_bias=bias,
                  lm_head_bias=bias, dropout=0.0)
    if not moe:
        return base.replace(**common)
    experts = f.get("num_experts", f.get("moe_num_experts", 64))  # the mapped name wins
    check_int(f.source, "moe_num_experts", experts, minimum=1)
    top_k = f.get("num_experts_per_tok", f.get("moe_k", 6))
    check_int(f.source, "moe_k", top_k, minimum=1)
    if top_k > experts:
        raise ConfigError(f"{f.source}: moe_k ({top_k}) is more than moe_num_experts ({experts}), "
                          "which torch.topk cannot choose.")
    width = f.get("moe_intermediate_size", 1536)
    shared = f.get("moe_num_shared_experts", 2)
    check_int(f.source, "moe_num_shared_experts", shared, minimum=0)
    return base.replace(**common, n_experts=experts, top_k=top_k, d_expert=width,
                        d_shared=width * shared, router="softmax", renormalize_top_k=True,
                        n_dense_layers=layers - len(moe),
                        layer_pattern=llama.pattern(layers, [], moe))


def _phimoe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """PhiMoE (PhimoeForCausalLM, Phi-3.5-MoE): Mixtral's layers (hf.py's Mixtral reader: top 2
    of num_local_experts SwiGLU experts of intermediate_size in every layer, the window of
    sliding_window on every layer where set) with LayerNorms (weight and bias, eps
    rms_norm_eps), attention_bias on q, k, v and o, lm_head_bias on the head, and the
    sparsemixer router: two rounds of a masked softmax over the logits, each choosing one expert
    (sampled while training), so num_experts_per_tok must be 2. A positive input_jitter_noise
    multiplies the MoE input in place by uniform noise in training, twice (PhimoeSparseMoeBlock,
    then PhimoeTopKRouter on the same tensor: facts.moe_input_noise_multiplies)."""
    _silu(f, "phimoe")
    jitter = f.get("input_jitter_noise", 0.0, float)
    top_k = f.get("num_experts_per_tok", 2)
    if top_k != 2:
        raise ConfigError(f"{f.source}: num_experts_per_tok {show(top_k)} is not what phimoe "
                          "runs: its sparsemixer router always chooses 2 experts; set it to 2.")
    experts = f.get("num_local_experts", 16, minimum=2)
    bias = f.get("attention_bias", False, bool)
    data = dict(f.data, num_local_experts=experts, num_experts_per_tok=2)
    data.pop("num_experts", None)
    base = llama.read(Fields(data, f.source), name, "mixtral", _DEFAULTS["phimoe"])
    return base.replace(family="phimoe", norm="layernorm", norm_bias=True, qkv_bias=bias,
                        out_bias=bias, ffn_bias=False,
                        lm_head_bias=f.get("lm_head_bias", False, bool), router="sparsemixer",
                        renormalize_top_k=False, moe_input_noise=float(jitter) if jitter > 0 else None)


def _sub(f: Fields, key: str) -> Fields:
    """DBRX's nested attn_config or ffn_config (a dict; missing or null: the class's defaults)."""
    value = f.data.get(key)
    if value is None:
        return Fields({}, f"{f.source} ({key})")
    if not isinstance(value, dict):
        raise ConfigError(f"{f.source}: {key} must be an object, got {show(value)}.")
    return Fields(value, f"{f.source} ({key})")


def _dbrx(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """DBRX (DbrxForCausalLM): pre-norm layers with LayerNorms without bias; attention through one
    fused Wqkv (no biases) clamped to [-clip_qkv, clip_qkv] (out of place), RoPE on every
    dimension, kv_n_heads key/value heads of d_model / n_heads; in every layer top moe_top_k of
    moe_num_experts SwiGLU experts of ffn_hidden_size, chosen by a softmax over the logits in the
    model's dtype, the chosen weights divided by their moe_normalize_expert_weights-norm (null:
    not divided); an untied head without bias; a moe_jitter_eps that is not null multiplies the
    MoE input in place by uniform noise in training (DbrxRouter, once). A null clip_qkv (the
    class's default: its clamp(min=None, max=None) fails), a missing rope_theta in attn_config
    (the class reads it), a nonzero resid_pdrop, a tied head (DbrxConfig refuses it) and an
    activation other than silu are refused."""
    attn, ffn = _sub(f, "attn_config"), _sub(f, "ffn_config")
    clip = attn.nullable("clip_qkv", None, float)
    if clip is None:
        raise ConfigError(f"{f.source}: attn_config.clip_qkv is null, and transformers 5.24's "
                          "DbrxAttention then calls clamp(min=None, max=None), which fails; give "
                          "the bound (8 in DBRX's released config).")
    if not 0 < clip < float("inf"):
        raise ConfigError(f"{f.source}: clip_qkv must be a positive number, got {show(clip)}.")
    if attn.data.get("rope_theta") is None:
        raise ConfigError(f"{f.source}: attn_config has no rope_theta, which transformers 5.24's "
                          "DbrxAttention reads (500000 in DBRX's released config); give it.")
    act = (ffn.data.get("ffn_act_fn") or {}).get("name", "silu")
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported ffn_act_fn {show(act)} for dbrx.")
    jitter = ffn.nullable("moe_jitter_eps", None, float)
    if jitter is not None and jitter < 0:
        raise ConfigError(f"{f.source}: moe_jitter_eps must be null or at least 0 (torch's "
                          f"uniform_(1 - eps, 1 + eps) needs from <= to), got {show(jitter)}.")
    if f.get("resid_pdrop", 0.0, float):
        raise ConfigError(f"{f.source}: resid_pdrop (dropout on each sublayer's output) is not "
                          "modelled for dbrx; set it to 0.")
    if f.get("tie_word_embeddings", False, bool):
        raise ConfigError(f"{f.source}: tie_word_embeddings is not supported for DBRX models "
                          "(DbrxConfig refuses it).")
    experts = ffn.get("moe_num_experts", 4, minimum=1)
    top_k = ffn.get("moe_top_k", 1, minimum=1)
    if top_k > experts:
        raise ConfigError(f"{f.source}: moe_top_k ({top_k}) is more than moe_num_experts "
                          f"({experts}), which torch.topk cannot choose.")
    normalize = ffn.nullable("moe_normalize_expert_weights", 1.0, float)
    width = ffn.get("ffn_hidden_size", 3584)
    return ModelConfig(
        name=name, family="dbrx", vocab_size=f.get("vocab_size", 32000),
        d_model=f.get("d_model", 2048), n_heads=f.get("n_heads", 16, minimum=1),
        n_kv_heads=attn.get("kv_n_heads", 1, minimum=1), d_ff=width,
        n_decoder_layers=f.get("n_layers", 24), max_positions=f.get("max_seq_len", 2048),
        position="rope", norm="layernorm", norm_bias=False, activation="swiglu", qkv_bias=False,
        out_bias=False, ffn_bias=False, head="lm", tie_embeddings=False,
        dropout=float(attn.get("attn_pdrop", 0.0, float)), clip_qkv=float(clip),
        n_experts=experts, top_k=top_k, router="softmax", renormalize_top_k=normalize is not None,
        moe_input_noise=None if jitter is None else float(jitter))


#: SarvamMoEConfig's defaults where they differ from Glm4MoeConfig's, and Glm4MoeConfig's for the
#: fields hf_llama.py's Llama reader requires (transformers 5.24, models/sarvam_moe and glm4_moe).
_SARVAM_DEFAULTS: dict[str, Any] = dict(
    vocab_size=262144, hidden_size=4096, intermediate_size=8192, num_hidden_layers=19,
    num_attention_heads=64, num_key_value_heads=4, head_dim=64, moe_intermediate_size=1024,
    num_experts_per_tok=6, use_qk_norm=True)

#: SarvamMoEConfig.attribute_map: the released sarvamai/sarvam-30b names -> Glm4MoeConfig's.
_SARVAM_NAMES = {"num_experts": "n_routed_experts", "num_local_experts": "n_routed_experts",
                 "num_shared_experts": "n_shared_experts", "use_qkv_bias": "attention_bias",
                 "num_mtp_layers": "num_nextn_predict_layers"}


def _sarvam_moe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Sarvam MoE (sarvam_moe): transformers 5.24 runs it as Glm4MoeForCausalLM (its
    AutoModelForCausalLM mapping) under SarvamMoEConfig, whose defaults differ (19 layers, 64
    heads of 64, 4 KV heads, 128 experts of 1024, top 6, per-head q/k norms) and whose RoPE covers
    the whole head (partial_rotary_factor 1.0 unless the config gives one); its
    attribute_map's names (num_experts, num_shared_experts, use_qkv_bias, num_mtp_layers) are read
    as GLM-4.5's. The rest is costmodel/hf_moe_more.py's glm4_moe reader: the family is glm4_moe
    (its facts, its class)."""
    data = dict(f.data)
    for alias, field in _SARVAM_NAMES.items():
        if alias in data:  # the mapped name wins
            data[field] = data.pop(alias)
    data = {**_SARVAM_DEFAULTS, **data}
    rope = data.get("rope_parameters") if isinstance(data.get("rope_parameters"), dict) else {}
    scaling = data.get("rope_scaling") if isinstance(data.get("rope_scaling"), dict) else {}
    if all(d.get("partial_rotary_factor") is None for d in (rope, scaling, data)):
        data["partial_rotary_factor"] = 1.0
    return MOE_MORE_BUILDERS["glm4_moe"](Fields(data, f.source), name, llama)


def _aria_text(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Aria's language model (AriaTextForCausalLM): Llama's attention and, in every layer,
    AriaTextMoELayer: AriaTextTopKRouter (a d -> E weight without bias; the top moe_topk of the raw
    logits, a softmax over those k in the model's dtype, no renormalising), moe_num_experts SwiGLU
    experts of intermediate_size (AriaExperts: one gate_up and one down weight an expert, no biases)
    and, added to them, AriaSharedExpertsMLP: a SwiGLU MLP of intermediate_size x
    moe_num_shared_experts with mlp_bias's biases and no gate of its own."""
    _silu(f, "aria_text")
    base = llama.read(Fields({k: v for k, v in f.data.items() if k != "mlp_bias"}, f.source), name, "llama",
                      _DEFAULTS["aria_text"])
    experts = f.get("moe_num_experts", 8, minimum=1)
    top_k = f.get("moe_topk", 2, minimum=1)
    shared = f.get("moe_num_shared_experts", 2)
    check_int(f.source, "moe_num_shared_experts", shared, minimum=0)
    if top_k > experts:
        raise ConfigError(f"{f.source}: moe_topk ({top_k}) is more than moe_num_experts ({experts}), "
                          "which torch.topk cannot choose.")
    bias = f.get("mlp_bias", False, bool)  # the shared MLP's only
    if bias and not shared:
        raise ConfigError(f"{f.source}: mlp_bias with moe_num_shared_experts 0 is not modelled for aria_text "
                          "(its zero-width shared MLP still adds down_proj's bias, d values a layer).")
    return base.replace(family="aria_text", ffn_bias=bias, n_experts=experts,
                        top_k=top_k, d_shared=base.d_ff * shared, router="topk_softmax",
                        renormalize_top_k=False)


#: model_type -> its reader (hf.py passes its LlamaReader).
MOE_EXTRA_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "granitemoe": _granitemoe, "granitemoeshared": _granitemoeshared, "flex_olmo": _flex_olmo,
    "granitemoe_swa": _granitemoe_swa,
    "ernie4_5_moe": _ernie4_5_moe, "phimoe": _phimoe, "dbrx": _dbrx,
    "sarvam_moe": _sarvam_moe, "aria_text": _aria_text,
}

#: The transformers class of each, for a config.json that names `architectures` only.
MOE_EXTRA_ARCHITECTURES: dict[str, str] = {
    "GraniteMoeForCausalLM": "granitemoe", "GraniteMoeSharedForCausalLM": "granitemoeshared",
    "GraniteMoeSWAForCausalLM": "granitemoe_swa",
    "FlexOlmoForCausalLM": "flex_olmo", "Ernie4_5_MoeForCausalLM": "ernie4_5_moe",
    "PhimoeForCausalLM": "phimoe", "DbrxForCausalLM": "dbrx", "AriaTextForCausalLM": "aria_text",
}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
MOE_EXTRA_NAMES: dict[str, dict[str, str]] = {
    "granitemoe": {**LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok",
                   "attention_scale": "attention_multiplier"},
    "granitemoeshared": {**LLAMA_NAMES, "n_experts": "num_local_experts",
                         "top_k": "num_experts_per_tok", "attention_scale": "attention_multiplier",
                         "d_shared": "shared_intermediate_size"},
    "flex_olmo": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok"},
    "ernie4_5_moe": {**LLAMA_NAMES, "n_experts": "moe_num_experts", "top_k": "moe_k",
                     "d_expert": "moe_intermediate_size"},
    "phimoe": {**LLAMA_NAMES, "n_experts": "num_local_experts", "top_k": "num_experts_per_tok"},
    "dbrx": {"n_heads": "n_heads", "d_model": "d_model", "n_decoder_layers": "n_layers",
             "max_positions": "max_seq_len", "n_kv_heads": "kv_n_heads", "d_ff": "ffn_hidden_size",
             "n_experts": "moe_num_experts", "top_k": "moe_top_k"},
    "aria_text": {**LLAMA_NAMES, "n_experts": "moe_num_experts", "top_k": "moe_topk"},
    "sarvam_moe": {**LLAMA_NAMES, "n_experts": "n_routed_experts", "top_k": "num_experts_per_tok",
                   "d_expert": "moe_intermediate_size", "n_dense_layers": "first_k_dense_replace"},
}
