"""The Llama-like families of a Hugging Face config.json, read into a ModelConfig: Llama, Mistral,
Ministral, CWM, Qwen2 and Qwen3 (and their MoE), Gemma 1-3, Phi-3, Mixtral, DeepSeek-V2 and V3,
Granite, SmolLM3 and OLMo 2, and the model types transformers runs as Llama under a configuration
class of their own (InternLM3, EXAONE, IQuestCoder): each family's defaults, sliding windows, layer
pattern, experts and latent attention. LLAMA_BUILDERS is what costmodel/hf.py dispatches to for
them; LLAMA_READER the reader hf_llama_variants.py's families read their Llama fields with.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import Fields, attention_layer_types, rotary_fraction
from .hf_llama_variants import LlamaReader


#: Activations of the Llama-like families: the gated FFN each runs (aten's gelu with the tanh
#: approximation for gelu_pytorch_tanh; Gemma reads a plain "gelu" as that too).
_GATED = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu", "gelu_pytorch_tanh": "geglu_tanh"}

#: transformers 5.24's defaults for the fields each Llama-like family reads (its configuration
#: class; a field a config.json leaves out takes these values).
_LLAMA_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "mistral": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                    sliding_window=4096),
    "ministral": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                      num_key_value_heads=8, sliding_window=4096),
    "cwm": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                num_key_value_heads=8, head_dim=128, sliding_window=8192),
    "qwen2": dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=False,
                  num_key_value_heads=32, sliding_window=4096, max_window_layers=28),
    "qwen3": dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=False,
                  num_key_value_heads=32, head_dim=128, sliding_window=4096, max_window_layers=28),
    "gemma": dict(max_position_embeddings=8192, hidden_act="gelu_pytorch_tanh",
                  tie_word_embeddings=True, num_key_value_heads=16, head_dim=256),
    "gemma2": dict(max_position_embeddings=8192, hidden_activation="gelu_pytorch_tanh",
                   tie_word_embeddings=True, num_key_value_heads=4, head_dim=256,
                   query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0),
    # sizes too: the Hub's gemma-3-4b/12b/27b text_config leaves vocab_size (4b: heads) to the class
    "gemma3_text": dict(max_position_embeddings=131072, hidden_activation="gelu_pytorch_tanh",
                        tie_word_embeddings=True, num_key_value_heads=4, head_dim=256,
                        query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=None,
                        final_logit_softcapping=None, sliding_window_pattern=6, vocab_size=262208,
                        hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8),
    "phi3": dict(max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False),
    "mixtral": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                    num_key_value_heads=8),
    "qwen2_moe": dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=False,
                      num_key_value_heads=16, sliding_window=4096, max_window_layers=28),
    "qwen3_moe": dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=False,
                      num_key_value_heads=4, sliding_window=4096),
    "deepseek_v2": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "deepseek_v3": dict(max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False),
    "granite": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "smollm3": dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=True,
                    num_key_value_heads=4, no_rope_layer_interval=4),
    "olmo2": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
}


#: Model types transformers runs with LlamaForCausalLM under a configuration class of their own
#: (modular_<type>.py: `class ...Config(LlamaConfig)`, no modeling file; AutoModelForCausalLM maps
#: them to LlamaForCausalLM): that class's defaults, and its attribute_map from the names its
#: config.json may use to Llama's (where both are given, the mapped name wins).
_RUN_AS_LLAMA: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "internlm3": (dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=False,
                       num_key_value_heads=2, head_dim=128),
                  {"qkv_bias": "attention_bias", "bias": "mlp_bias"}),
    "exaone": (dict(max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False,
                    num_key_value_heads=8),
               {"num_layers": "num_hidden_layers", "activation_function": "hidden_act"}),
    "iquestcoder": (dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                         num_key_value_heads=8, head_dim=128), {}),
}


def _as_llama(f: Fields, name: str, model_type: str) -> ModelConfig:
    """A _RUN_AS_LLAMA model type: its fields under Llama's names, its defaults, Llama's blocks."""
    defaults, names = _RUN_AS_LLAMA[model_type]
    data = dict(f.data)
    for alias, field in names.items():
        if alias in data:
            data[field] = data.pop(alias)
    llama = Fields(data, f.source)
    if model_type == "internlm3" and (llama.get("attention_bias", False, bool)
                                      != llama.get("mlp_bias", False, bool)):
        # InternLM3Config.validate_architecture refuses it: Llama's attention_bias puts one
        # setting on q, k, v and o, so qkv_bias cannot differ from bias (the o and MLP biases).
        raise ConfigError(f"{f.source}: InternLM3 with qkv_bias different from bias is not "
                          "supported (transformers runs it as Llama, whose attention_bias sets "
                          "the q, k, v and o biases together).")
    return _llama_like(llama, name, "llama", defaults)


def _window(f: Fields, family: str, n_layers: int) -> tuple[int | None, list[int]]:
    """(sliding_window, the layers that slide) as transformers' DynamicCache reads them: an
    explicit layer_types list, else each family's rule (Gemma 2 every other layer from layer 0;
    Qwen2/Qwen3 with use_sliding_window from layer max_window_layers on; Qwen2-MoE every other
    layer below max_window_layers; Gemma 3 all but every sliding_window_pattern-th; CWM all but
    every fourth from layer 0; Mistral,
    Ministral, Mixtral, Phi-3 and Qwen3-MoE (with use_sliding_window) every layer when
    sliding_window is set). No window: (None, [])."""
    defaults = _LLAMA_DEFAULTS[family]
    window = f.nullable("sliding_window", defaults.get("sliding_window"))
    if family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "smollm3") and not f.get(
            "use_sliding_window", False, bool):
        window = None
    if family in ("llama", "gemma", "deepseek_v2", "deepseek_v3", "olmo2") or not window:
        return None, []
    types = _layer_types(f, n_layers)
    if types is not None:
        sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    elif family == "gemma2":
        sliding = [i for i in range(n_layers) if (i + 1) % 2]
    elif family == "cwm":
        sliding = [i for i in range(n_layers) if i % 4]
    elif family == "gemma3_text":
        sliding = [i for i, t in enumerate(_gemma3_layer_types(f, n_layers)) if t == "sliding_attention"]
    elif family in ("qwen2", "qwen3"):
        first = f.get("max_window_layers", defaults["max_window_layers"])
        sliding = [i for i in range(n_layers) if i >= first]
    elif family == "qwen2_moe":
        last = f.get("max_window_layers", defaults["max_window_layers"])
        sliding = [i for i in range(n_layers) if (i + 1) % 2 and i < last]
    else:
        sliding = list(range(n_layers))
    return (window, sliding) if sliding else (None, [])


def _layer_types(f: Fields, n_layers: int) -> list[str] | None:
    """The config's explicit layer_types list (None where it has none), checked."""
    types = f.data.get("layer_types")
    return None if types is None else attention_layer_types(f, types, n_layers)


def _gemma3_layer_types(f: Fields, n_layers: int) -> list[str]:
    """Gemma3TextConfig's layer_types, with or without a window: the config's list, else all but
    every sliding_window_pattern-th layer slide."""
    types = _layer_types(f, n_layers)
    if types is not None:
        return types
    every = f.get("sliding_window_pattern", _LLAMA_DEFAULTS["gemma3_text"]["sliding_window_pattern"],
                  minimum=1)
    return ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n_layers)]


def _pattern(n_layers: int, sliding: list[int], moe: list[int] | None) -> tuple[str, ...] | None:
    """ModelConfig.layer_pattern: which layers are dense and which have experts, or which slide,
    where the layers differ (None where they are alike). Membership in sets: a list made this
    quadratic, minutes for a config of 100,000 layers."""
    if moe and len(moe) < n_layers:
        experts = set(moe)
        return tuple("moe" if i in experts else "dense" for i in range(n_layers))
    if 0 < len(sliding) < n_layers:
        slide = set(sliding)
        return tuple("sliding" if i in slide else "full" for i in range(n_layers))
    return None



def _llama_like(f: Fields, name: str, family: str,
                defaults: dict[str, Any] | None = None) -> ModelConfig:
    """A Llama-like family's config.json; `defaults` (a model type run as Llama) overrides the
    family's own (_LLAMA_DEFAULTS)."""
    defaults = _LLAMA_DEFAULTS[family] if defaults is None else defaults
    # the head count: a divisor of hidden_size (Phi-3's head_dim)
    n_heads = f.get("num_attention_heads", defaults.get("num_attention_heads", ...), minimum=1)
    d_model = f.get("hidden_size", defaults.get("hidden_size", ...))
    n_layers = f.get("num_hidden_layers", defaults.get("num_hidden_layers", ...))
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)  # before any per-layer list
    head_dim = f.get("head_dim", defaults.get("head_dim"))
    act_key = "hidden_activation" if family in ("gemma2", "gemma3_text") else "hidden_act"
    act = f.get(act_key, defaults[act_key], str)
    if family == "gemma" and act == "gelu":
        act = "gelu_pytorch_tanh"  # GemmaConfig reads the legacy "gelu" as the tanh approximation
    if act not in _GATED:
        raise ConfigError(f"{f.source}: unsupported {act_key} {show(act)} for {family}.")
    # Llama reads attention_bias (all four projections) and mlp_bias; Qwen2 has biases on q/k/v
    # only (Qwen2-MoE: qkv_bias), fixed in its code; Qwen3, Qwen3-MoE, Gemma 1-3 and DeepSeek read
    # attention_bias (q/k/v/o).
    qkv_bias = out_bias = ffn_bias = False
    if family in ("llama", "granite", "smollm3"):
        qkv_bias = out_bias = f.get("attention_bias", False, bool)
        ffn_bias = f.get("mlp_bias", False, bool)
    elif family == "qwen2":
        qkv_bias = True
    elif family == "qwen2_moe":
        qkv_bias = f.get("qkv_bias", True, bool)
    elif family in ("qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "deepseek_v2", "deepseek_v3",
                    "olmo2"):
        qkv_bias = out_bias = f.get("attention_bias", False, bool)
    if family == "deepseek_v2" and f.get("mlp_bias", False, bool):
        raise ConfigError(f"{f.source}: mlp_bias (biases on DeepSeek-V2's dense and shared MLPs, "
                          "not its routed experts) is not modelled.")
    if family == "gemma3_text" and f.get("use_bidirectional_attention", False, bool):
        raise ConfigError(f"{f.source}: use_bidirectional_attention (an encoder, not a causal LM) "
                          "is not modelled for gemma3_text.")
    window, sliding = _window(f, family, n_layers)
    n_kv_heads = f.get("num_key_value_heads", defaults.get("num_key_value_heads", n_heads))
    if "num_key_value_heads" not in f.data and isinstance(n_heads, int) and n_heads % n_kv_heads:
        raise ConfigError(f"{f.source}: num_attention_heads ({n_heads}) is not divisible by "
                          f"num_key_value_heads ({n_kv_heads}, transformers' default for {family} "
                          "when the field is missing); give num_key_value_heads.")
    fields: dict[str, Any] = dict(
        name=name,
        family=family,
        vocab_size=f.get("vocab_size", defaults.get("vocab_size", ...)),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        d_head=head_dim,
        d_ff=f.get("intermediate_size", defaults.get("intermediate_size", ...)),
        n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", defaults["max_position_embeddings"]),
        position="rope",
        norm="rmsnorm",
        norm_position="pre",
        activation=_GATED[act],
        qkv_bias=qkv_bias,
        out_bias=out_bias,
        ffn_bias=ffn_bias,
        lm_head_bias=False,
        head="lm",
        tie_embeddings=f.get("tie_word_embeddings", defaults["tie_word_embeddings"], bool),
        dropout=float(f.get("attention_dropout", 0.0, float)),
        sliding_window=window,
        window_layers=None if len(sliding) == n_layers else len(sliding) or None,
    )
    if family in ("qwen3", "qwen3_moe", "gemma3_text"):
        fields["qk_norm"] = True
    if family in ("gemma", "gemma2", "gemma3_text"):
        fields["scale_embeddings"] = True
    if family == "gemma3_text":
        # Gemma3RotaryEmbedding builds one cos/sin set (and inv_freq buffers) per kind in
        # set(layer_types), which the pattern gives even where sliding_window is null.
        fields["rotary_sets"] = max(len(set(_gemma3_layer_types(f, n_layers))), 1)
    if family in ("gemma2", "gemma3_text"):
        fields["post_sublayer_norm"] = True
        scalar = f.get("query_pre_attn_scalar", defaults["query_pre_attn_scalar"], float)
        if scalar <= 0:
            raise ConfigError(f"{f.source}: query_pre_attn_scalar must be positive, got {show(scalar)}.")
        fields["attention_scale"] = scalar ** -0.5
        for key, field in (("attn_logit_softcapping", "attention_softcap"),
                           ("final_logit_softcapping", "logit_softcap")):
            value = f.nullable(key, defaults[key], float)
            fields[field] = None if value is None else float(value)
    if family == "phi3":
        _phi3(f, fields)
    if family == "granite":
        _granite(f, fields)
    if family == "smollm3":
        return _smollm3(f, fields)
    if family == "olmo2":
        # OLMo 2: an RMSNorm over the whole query and the whole key projection, and the layer's
        # norms after its sublayers (before each residual add) instead of before them.
        fields.update(qk_norm=True, qk_norm_whole=True, post_sublayer_norm=True, input_norms=False)
    moe = (_experts(f, family, fields)
           if family in ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3") else None)
    if family in ("deepseek_v2", "deepseek_v3"):
        _latent_attention(f, fields)
    return ModelConfig(**fields, layer_pattern=_pattern(n_layers, sliding, moe))


def _phi3(f: Fields, fields: dict[str, Any]) -> None:
    """Phi-3 (fused qkv_proj and gate_up_proj: facts) drops out after each sublayer with
    resid_pdrop and rotates partial_rotary_factor of each head (Phi-4-mini: 0.75)."""
    d_head = fields["d_head"] or fields["d_model"] // fields["n_heads"]
    rotary = int(d_head * rotary_fraction(f, "partial_rotary_factor", 1.0))
    fields["rotary_dim"] = None if rotary == d_head else rotary
    attention = fields["dropout"]
    fields["dropout"] = float(f.get("resid_pdrop", 0.0, float))
    fields["attention_dropout"] = attention


#: Granite's scalar multipliers (GraniteConfig's fields, 1.0 by default) -> ModelConfig's fields.
_GRANITE_MULTIPLIERS = {"embedding_multiplier": "embedding_multiplier",
                        "attention_multiplier": "attention_scale",
                        "residual_multiplier": "residual_multiplier",
                        "logits_scaling": "logits_scaling"}


def _granite(f: Fields, fields: dict[str, Any]) -> None:
    """Granite: Llama's layers and parameters with four scalar multipliers, each applied even at
    its default 1.0: the embeddings times embedding_multiplier, the attention scores times
    attention_multiplier (in place of 1/sqrt(head_dim)), each sublayer's output times
    residual_multiplier before its residual add, the logits divided by logits_scaling."""
    for key, field in _GRANITE_MULTIPLIERS.items():
        value = f.get(key, 1.0, float)
        if not 0 < value < float("inf"):
            raise ConfigError(f"{f.source}: {key} must be a positive number, got {show(value)}.")
        fields[field] = float(value)


def _smollm3(f: Fields, fields: dict[str, Any]) -> ModelConfig:
    """SmolLM3: Llama's layers and parameters, no RoPE on the layers whose no_rope_layers entry is
    0 (SmolLM3Config's default: every no_rope_layer_interval-th, counting from 1). Its window
    (use_sliding_window, on the NoPE layers by default) is not modelled."""
    n_layers = fields["n_decoder_layers"]
    if fields["sliding_window"] is not None:
        raise ConfigError(f"{f.source}: use_sliding_window with a sliding_window (SmolLM3's window "
                          "on its NoPE layers) is not modelled.")
    flags = f.data.get("no_rope_layers")
    if flags is None:
        every = f.get("no_rope_layer_interval", _LLAMA_DEFAULTS["smollm3"]["no_rope_layer_interval"],
                      minimum=1)
        flags = [int((i + 1) % every != 0) for i in range(n_layers)]
    elif (not isinstance(flags, list) or len(flags) != n_layers
          or any(isinstance(x, bool) or x not in (0, 1) for x in flags)):
        raise ConfigError(f"{f.source}: no_rope_layers must give 1 (RoPE) or 0 (none) for each of "
                          f"the {n_layers} layers.")
    nope = sum(1 for x in flags if x == 0)
    if nope == n_layers:
        raise ConfigError(f"{f.source}: no_rope_layers leaves no layer with RoPE, which is not modelled.")
    pattern = tuple("rope" if x else "nope" for x in flags) if nope else None
    return ModelConfig(**fields, nope_layers=nope, layer_pattern=pattern)


def _experts(f: Fields, family: str, fields: dict[str, Any]) -> list[int]:
    """Mixtral: top-k of num_local_experts experts of intermediate_size in every layer, a positive
    router_jitter_noise multiplying their input in place by U(1 - x, 1 + x) in training (once a layer).
    Qwen2-MoE: top-k of num_experts of moe_intermediate_size where (i + 1) % decoder_sparse_step == 0
    and i is not in mlp_only_layers, a shared expert with a sigmoid gate; Qwen3-MoE the same
    layers and routing without the shared expert. DeepSeek-V3: from layer first_k_dense_replace
    on, n_routed_experts of moe_intermediate_size, sigmoid routing over groups and
    n_shared_experts shared experts (one MLP of their summed width); DeepSeek-V2 the same with
    softmax routing. Returns the layers with experts."""
    layers = fields["n_decoder_layers"]
    if family == "mixtral":
        experts = f.get("num_experts", f.get("num_local_experts", 8))  # the mapped name wins
        jitter = f.get("router_jitter_noise", 0.0, float)  # > 0: the MoE input *= noise in training
        fields.update(n_experts=experts, top_k=f.get("num_experts_per_tok", 2),
                      moe_input_noise=float(jitter) if jitter > 0 else None)
        return list(range(layers))
    if family in ("qwen2_moe", "qwen3_moe"):
        qwen2 = family == "qwen2_moe"
        experts = f.get("num_experts", 60) if qwen2 else f.get("num_experts", f.get("num_local_experts", 128))
        step = f.get("decoder_sparse_step", 1, minimum=1)
        dense_only = f.data.get("mlp_only_layers") or []
        if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int)
                                                   for i in dense_only):
            raise ConfigError(f"{f.source}: mlp_only_layers must be a list of layer indices.")
        moe = [i for i in range(layers)
               if i not in dense_only and experts > 0 and (i + 1) % step == 0]
        fields.update(n_experts=experts, top_k=f.get("num_experts_per_tok", 4 if qwen2 else 8),
                      d_expert=f.get("moe_intermediate_size", 1408 if qwen2 else 768),
                      d_shared=f.get("shared_expert_intermediate_size", 5632) if qwen2 else 0,
                      shared_expert_gate=qwen2, n_dense_layers=layers - len(moe),
                      renormalize_top_k=f.get("norm_topk_prob", False, bool))
    else:
        v3 = family == "deepseek_v3"
        mapped = "num_local_experts" if v3 else "num_experts"  # the mapped name wins
        experts = f.get(mapped, f.get("n_routed_experts", 256 if v3 else 64))
        first_dense = min(f.get("first_k_dense_replace", 3 if v3 else 0, int), layers)
        moe_width = f.get("moe_intermediate_size", 2048 if v3 else 1407)
        moe = list(range(first_dense, layers))
        top_k = f.get("num_experts_per_tok", 8) if v3 else f.nullable("num_experts_per_tok", None)
        if top_k is None and moe:
            # DeepseekV2Config's default: transformers builds the model (its parameters are
            # defined) but DeepseekV2TopkRouter calls torch.topk(scores, k=None), a TypeError at
            # the first forward; with every layer dense (first_k_dense_replace >= layers) there is
            # no router and it runs.
            raise ConfigError(
                f"{f.source}: num_experts_per_tok is null (DeepseekV2Config's default) but layers "
                f"{first_dense}-{layers - 1} have experts, and transformers cannot run that model "
                "(its router calls torch.topk with k=None): set num_experts_per_tok, the experts "
                "each token is routed to.")
        fields.update(n_experts=experts, top_k=top_k, d_expert=moe_width,
                      d_shared=moe_width * f.get("n_shared_experts", 1 if v3 else 2, int),
                      router="sigmoid" if v3 else "softmax", n_dense_layers=first_dense,
                      renormalize_top_k=f.get("norm_topk_prob", v3, bool))
        if v3:  # DeepseekV3TopkRouter: top_k of the experts of the best topk_group of n_group groups
            fields.update(expert_groups=f.get("n_group", 1, minimum=1),
                          expert_groups_per_token=f.get("topk_group", 1, minimum=1))
    if not moe:  # no layer has experts: a dense model
        for key in ("n_experts", "top_k", "d_expert", "d_shared", "shared_expert_gate",
                    "n_dense_layers", "router", "renormalize_top_k", "expert_groups", "expert_groups_per_token"):
            fields.pop(key, None)
    elif fields["n_dense_layers"] and fields.get("window_layers") is not None:
        raise ConfigError(f"{f.source}: sliding windows on some layers of a model with dense and "
                          "expert layers are not modelled.")
    return moe


def _latent_attention(f: Fields, fields: dict[str, Any]) -> None:
    """DeepSeek-V3's multi-head latent attention: queries through q_lora_rank (or directly when it
    is null), keys and values from a cached kv_lora_rank latent and a qk_rope_head_dim RoPE key;
    a query/key head is qk_nope_head_dim + qk_rope_head_dim wide, a value head v_head_dim."""
    nope = f.get("qk_nope_head_dim", 128)
    rope = f.get("qk_rope_head_dim", 64)
    fields.update(
        d_head=nope + rope, rotary_dim=rope, n_kv_heads=fields["n_heads"],
        kv_lora_rank=f.get("kv_lora_rank", 512), q_lora_rank=f.nullable("q_lora_rank", 1536),
        v_head_dim=f.get("v_head_dim", 128),
    )


#: The Llama reader hf_llama_variants.py's families read their Llama fields with.
LLAMA_READER = LlamaReader(read=_llama_like, layer_types=_layer_types, pattern=_pattern)

#: Each Llama-like model type's builder: its family's reader, or Llama's under its own defaults.
LLAMA_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    **{family: (lambda f, name, family=family: _llama_like(f, name, family))
       for family in _LLAMA_DEFAULTS},
    **{model_type: (lambda f, name, model_type=model_type: _as_llama(f, name, model_type))
       for model_type in _RUN_AS_LLAMA},
}
