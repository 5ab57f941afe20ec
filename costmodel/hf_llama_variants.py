"""config.json readers of Llama-like families whose blocks costmodel/hf.py mostly has already: OLMo
1 and 3, OLMoE, EXAONE 4, Seed-OSS, Helium, Arcee, GLM-4 (glm and glm4), ERNIE 4.5, Apertus,
Hunyuan dense, GraniteSWA and BitNet. Each reads Llama's
fields through hf_llama.py's Llama reader (with its own defaults) and then changes what its own code does
otherwise (norms, biases, windows, RoPE, experts, the MLP). costmodel/hf.py dispatches on
model_type. Defaults are those of transformers 5.24's configuration classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .hf_fields import LLAMA_NAMES, Fields, rotary_fraction


@dataclass(frozen=True)
class LlamaReader:
    """costmodel/hf_llama.py's Llama reader and its per-layer helpers, which hf.py passes to these
    readers (it imports this module, so this module cannot import it): read(f, name, family,
    defaults) is a Llama-like family's ModelConfig, layer_types(f, layers) the config's checked
    layer_types list (None where it has none), pattern(layers, sliding, moe) the layer_pattern."""

    read: Callable[[Fields, str, str, "dict[str, Any] | None"], ModelConfig]
    layer_types: Callable[[Fields, int], "list[str] | None"]
    pattern: Callable[[int, "list[int]", "list[int] | None"], "tuple[str, ...] | None"]


#: transformers 5.24's defaults for the Llama fields each family reads (its configuration class).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "seed_oss": dict(max_position_embeddings=524288, hidden_act="silu", tie_word_embeddings=False,
                     num_key_value_heads=8, head_dim=128),
    "arcee": dict(max_position_embeddings=4096, hidden_act="relu2", tie_word_embeddings=False),
    "olmo": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "olmoe": dict(max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False),
    "helium": dict(max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False,
                   num_key_value_heads=20, head_dim=128),
    "ernie4_5": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=True,
                     num_key_value_heads=2, head_dim=128),
    "exaone4": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False,
                    num_key_value_heads=32),
    "apertus": dict(max_position_embeddings=65536, hidden_act="xielu", tie_word_embeddings=False),
    "glm4": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                 num_key_value_heads=2, head_dim=128),
    "glm": dict(max_position_embeddings=131072, hidden_act="silu", tie_word_embeddings=False,
                num_key_value_heads=2, head_dim=128),
    "hunyuan_v1_dense": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "granite_swa": dict(max_position_embeddings=8192, hidden_act="silu", tie_word_embeddings=True,
                        num_key_value_heads=4),
    "bitnet": dict(max_position_embeddings=2048, hidden_act="relu2", tie_word_embeddings=False,
                   num_key_value_heads=5),
    "diffllama": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
    "doge": dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False),
}


def _llama(f: Fields, name: str, family: str, llama: LlamaReader, **changes: Any) -> ModelConfig:
    """The family's config.json read as Llama's (hf.py's reader, the family's defaults), then
    `changes` and the family's own name (the facts table's key)."""
    base = llama.read(f, name, "llama", _DEFAULTS[family])
    return base.replace(family=family, **changes)


def _silu(f: Fields, family: str) -> None:
    act = f.get("hidden_act", "silu", str)
    if act != "silu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {family}.")


def _olmo3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """OLMo 3: OLMo 2's layers (RMSNorms over the whole query and key projections, the norms after
    the sublayers) with a sliding_window (4096 by default) on the layers layer_types marks
    sliding_attention (by default all but every fourth, counting from 1), and one RoPE per kind
    of layer in layer_types (Olmo3RotaryEmbedding: Gemma 3's, fp32 tables as OLMo 2's). A null
    sliding_window, which its class cannot run, is refused."""
    base = llama.read(f, name, "olmo2", None)
    layers = base.n_decoder_layers
    types = llama.layer_types(f, layers) or ["sliding_attention" if (i + 1) % 4 else "full_attention"
                                        for i in range(layers)]
    window = f.nullable("sliding_window", 4096)
    if window is None:
        raise ConfigError(f"{f.source}: sliding_window null is not modelled for olmo3: transformers "
                          "5.24's Olmo3Model builds a sliding-window mask on every forward and "
                          "cannot run without a window (mark every layer full_attention instead).")
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    if not sliding:
        window = None
    return base.replace(family="olmo3", sliding_window=window,
                        window_layers=None if len(sliding) in (0, layers) else len(sliding),
                        layer_pattern=llama.pattern(layers, sliding, None), rotary_sets=len(set(types)))


def _clip(f: Fields) -> float | None:
    """clip_qkv: the bound the q, k and v projections are clamped to in place (null: none)."""
    clip = f.get("clip_qkv", None, float)
    if clip is not None and not 0 < clip < float("inf"):
        raise ConfigError(f"{f.source}: clip_qkv must be a positive number or null, got {show(clip)}.")
    return None if clip is None else float(clip)


def _olmo(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """OLMo (1 and 1.7): Llama's layers (attention_bias on q, k, v and o; no MLP bias whatever
    mlp_bias says) with LayerNorms that have no weight or bias and run in fp32, RoPE tables left
    in fp32, and clip_qkv (null by default; 8 in OLMo 1.7) clamping q, k and v."""
    _silu(f, "olmo")
    return _llama(f, name, "olmo", llama, ffn_bias=False, norm="layernorm", norm_affine=False,
                  clip_qkv=_clip(f))


def _olmoe(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """OLMoE: Llama's pre-norm layers (LlamaRMSNorm) with RMSNorms over the whole query and key
    projections (hidden_size and its key share wide), and in every layer top num_experts_per_tok
    of num_experts SwiGLU experts of intermediate_size (Mixtral's experts, Qwen2-MoE's softmax
    router, the top-k weights renormalised when norm_topk_prob), and clip_qkv (null by default)
    clamping the normalised q and k and v."""
    n_heads = f.get("num_attention_heads", minimum=1)
    d_model = f.get("hidden_size")
    head_dim = f.get("head_dim", None)
    if head_dim is not None and head_dim * n_heads != d_model:
        raise ConfigError(f"{f.source}: head_dim ({head_dim}) times num_attention_heads ({n_heads}) "
                          f"is not hidden_size ({d_model}), which OLMoE's query norm (hidden_size "
                          "wide) cannot run.")
    experts = f.get("num_experts", f.get("num_local_experts", 64))  # the mapped name wins
    return _llama(f, name, "olmoe", llama, qk_norm=True, qk_norm_whole=True, clip_qkv=_clip(f),
                  n_experts=experts,
                  top_k=f.get("num_experts_per_tok", 8),
                  renormalize_top_k=f.get("norm_topk_prob", False, bool))


def _glm4(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GLM-4 (0414): Llama's attention with attention_bias on q, k and v (o has none), RoPE on
    partial_rotary_factor of each head (0.5 by default) with cos and sin interleaved in each
    layer, a norm after each sublayer as well as before it (four per layer), and Phi-3's MLP
    (one fused gate_up_proj, no bias whatever mlp_bias says: Glm4MLP never reads it)."""
    return _glm_family(f, name, llama, "glm4")


def _glm(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GLM-4 (glm-4-9b, its -hf files; GlmForCausalLM): GLM-4 (0414)'s layers without the norms
    after the sublayers: Llama's two pre-norms, q/k/v biases (attention_bias, True by default; o
    without one), interleaved RoPE on partial_rotary_factor (0.5) of each head, Phi-3's fused
    gate_up MLP without a bias."""
    return _glm_family(f, name, llama, "glm")


def _glm_family(f: Fields, name: str, llama: LlamaReader, family: str) -> ModelConfig:
    """GLM-4's (glm) and GLM-4 0414's (glm4, with post_sublayer_norm) shared reading. A null
    head_dim, which GlmConfig accepts and GlmAttention cannot run (head_dim ** -0.5), is refused
    (Glm4Config refuses it itself)."""
    _silu(f, family)
    if "head_dim" in f.data and f.data["head_dim"] is None:
        raise ConfigError(f"{f.source}: head_dim null is not modelled for {family} (transformers "
                          "5.24's attention takes head_dim ** -0.5); give a width or leave the "
                          "field out (128).")
    base = _llama(f, name, family, llama, qkv_bias=f.get("attention_bias", True, bool),
                  out_bias=False, ffn_bias=False, post_sublayer_norm=family == "glm4")
    rotary = int(base.d_head * rotary_fraction(f, "partial_rotary_factor", 0.5))
    if rotary < 2 or rotary % 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions per "
                          "head; an even number of at least 2 is modelled.")
    return base.replace(rotary_dim=None if rotary == base.d_head else rotary)


def _helium(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Helium: Llama's layers (attention_bias on q, k and v; o without one; mlp_bias), an RMSNorm
    that multiplies the fp32 normalised tensor by an fp32 copy of its weight, and RoPE with cos
    and sin interleaved in each layer. Its o_proj is hidden_size wide on both sides, so heads
    times head_dim must be hidden_size."""
    _silu(f, "helium")
    cfg = _llama(f, name, "helium", llama, out_bias=False, ffn_bias=f.get("mlp_bias", False, bool))
    return _heads_span_width(f, cfg, "Helium's o_proj (hidden_size to hidden_size)")


def _heads_span_width(f: Fields, cfg: ModelConfig, needs: str) -> ModelConfig:
    """cfg, where its heads times head_dim are hidden_size, which `needs` (what the class runs that
    is hidden_size wide on the heads) requires; else one error saying so."""
    if cfg.n_heads * cfg.d_head != cfg.d_model:
        raise ConfigError(f"{f.source}: head_dim ({cfg.d_head}) times num_attention_heads ({cfg.n_heads}) "
                          f"is not hidden_size ({cfg.d_model}), which {needs} cannot run.")
    return cfg


def _ernie4_5(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """ERNIE 4.5 (dense): Llama's layers with use_bias on q, k, v, o and the MLP, no attention
    dropout whatever attention_dropout says (its attention sets 0), and RoPE in fp32 with cos and
    sin interleaved in each layer."""
    _silu(f, "ernie4_5")
    bias = f.get("use_bias", False, bool)
    return _llama(f, name, "ernie4_5", llama, qkv_bias=bias, out_bias=bias, ffn_bias=bias, dropout=0.0)


def _exaone4(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """EXAONE 4.0: OLMo 2's layer (norms after the sublayers only; Llama's RMSNorm) with an
    RMSNorm on each query and key head (Qwen3's), no biases, and exaone4_windows' windows and
    RoPE."""
    _silu(f, "exaone4")
    base = _llama(f, name, "exaone4", llama, qkv_bias=False, out_bias=False, ffn_bias=False,
                  qk_norm=True, post_sublayer_norm=True, input_norms=False)
    return base.replace(**exaone4_windows(f, base.n_decoder_layers, llama, "Exaone4Model"))


def exaone4_windows(f: Fields, layers: int, llama: LlamaReader, owner: str) -> dict[str, Any]:
    """EXAONE 4.0's (and EXAONE-MoE's) windows as ModelConfig fields: a sliding_window (4096 by
    default) on the layers layer_types marks sliding_attention (by default all but every
    sliding_window_pattern-th). With a window, only the sliding layers apply RoPE (the full ones
    are NoPE); without one, every layer does. A null window beside sliding layers (its mask
    needs one) and a window with no sliding layer (no RoPE at all) are refused; `owner` is the
    transformers class named in the refusal."""
    window = f.nullable("sliding_window", 4096)
    if window is not None and window < 1:  # before the pattern, which a window of 0 would blame
        raise ConfigError(f"{f.source}: sliding_window must be a whole number of at least 1 or "
                          f"null (no window), got {window}.")
    types = llama.layer_types(f, layers)
    if types is None:
        every = f.data.get("sliding_window_pattern", 4) if window else 0
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError(f"{f.source}: without layer_types, transformers 5.24 reads "
                              "sliding_window_pattern as a whole number of at least 1 (every "
                              "that-many-th layer full) and sliding_window as set; give "
                              f"layer_types (got sliding_window_pattern {show(every)}, "
                              f"sliding_window {show(window)}).")
        types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(layers)]
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    if window is None:
        if sliding:
            raise ConfigError(f"{f.source}: layer_types marks sliding_attention layers but "
                              f"sliding_window is null, which transformers 5.24's {owner} cannot "
                              "run (its sliding-window mask needs a window).")
        return {}
    if not sliding:
        raise ConfigError(f"{f.source}: a sliding_window with no sliding_attention layer leaves "
                          "EXAONE 4 with no RoPE on any layer, which is not modelled.")
    return dict(sliding_window=window, window_layers=None if len(sliding) == layers else len(sliding),
                nope_layers=layers - len(sliding), layer_pattern=llama.pattern(layers, sliding, None))


def _apertus(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Apertus: Llama's attention (attention_bias on q, k, v and o) with an RMSNorm on each query
    and key head, and an MLP without a gate or biases: up_proj -> xIELU -> down_proj, xIELU with
    two trainable scalars (alpha_p, alpha_n) and two buffers (beta, eps) per layer, run as
    transformers' Python version."""
    act = f.get("hidden_act", "xielu", str)
    if act != "xielu":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for apertus (xielu is "
                          "modelled).")
    return _llama(Fields(dict(f.data, hidden_act="silu"), f.source), name, "apertus", llama,
                  activation="xielu", ffn_bias=False, qk_norm=True)


def _apertus1p5_text(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Apertus 1.5's language model (Apertus1p5TextForCausalLM): Apertus's layers and class
    (ApertusForCausalLM's subclass) with a vocabulary of 266,752 by default. Its head may be pruned
    to the first output_vocab_size rows (lm_head narrower than the embeddings): not modelled, so
    refused in one line unless null or equal to vocab_size."""
    pruned = f.nullable("output_vocab_size", None)
    vocab = f.get("vocab_size", 266752)
    if pruned is not None and pruned != vocab:
        raise ConfigError(f"{f.source}: output_vocab_size {show(pruned)} (a head pruned below vocab_size "
                          f"{vocab}) is not modelled for apertus1p5_text; the head is as wide as the vocabulary.")
    return _apertus(Fields(dict(f.data, vocab_size=vocab), f.source), name, llama)


def _probability(f: Fields, key: str, default: float) -> float:
    return float(f.get(key, default, float))


def _seed_oss(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Seed-OSS: Llama's layers with attention_bias on q, k and v and attention_out_bias on o
    (True and False by default), mlp_bias on the MLP, residual_dropout on each sublayer's output
    before its residual add (0.1 by default) and attention_dropout on the probabilities (0.1)."""
    _silu(f, "seed_oss")
    return _llama(f, name, "seed_oss", llama, qkv_bias=f.get("attention_bias", True, bool),
                  out_bias=f.get("attention_out_bias", False, bool),
                  ffn_bias=f.get("mlp_bias", False, bool),
                  dropout=_probability(f, "residual_dropout", 0.1),
                  attention_dropout=_probability(f, "attention_dropout", 0.1))


def _arcee(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Arcee (AFM): Llama's attention (attention_bias on q, k, v and o) and an MLP without a gate,
    up_proj -> relu(x)^2 -> down_proj (Nemotron's; mlp_bias on both)."""
    act = f.get("hidden_act", "relu2", str)
    if act != "relu2":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for arcee (its MLP has "
                          "no gate; relu2 is modelled).")
    return _llama(Fields(dict(f.data, hidden_act="silu"), f.source), name, "arcee", llama,
                  activation="relu2")


def _bitnet(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """BitNet b1.58 (BitNetForCausalLM) as from_config builds it, with plain nn.Linear layers:
    Llama's attention (attention_bias on q, k, v and o) with attn_sub_norm (an RMSNorm hidden_size
    wide) on its output before o_proj, and GemmaMLP (no biases) with hidden_act relu2, a gated
    squared ReLU, with ffn_sub_norm (intermediate_size wide) on the gate's product before down_proj.
    A quantization_config (quant_method "bitnet": from_pretrained swaps each Linear for BitLinear's
    packed ternary buffers, or AutoBitLinear's online quantization) is refused, as is a head_dim
    whose heads are not hidden_size wide (attn_sub_norm could not run)."""
    if f.data.get("quantization_config") is not None:
        raise ConfigError(f"{f.source}: quantization_config is not modelled for bitnet: from_pretrained "
                          "replaces each Linear with BitLinear (2-bit ternary weights packed in uint8 "
                          "buffers) or AutoBitLinear; drop it to estimate the unquantized class.")
    act = f.get("hidden_act", "relu2", str)
    if act not in ("relu2", "silu"):
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for bitnet (relu2, BitNet's "
                          "gated squared ReLU, and silu are modelled).")
    base = _llama(Fields(dict(f.data, hidden_act="silu"), f.source), name, "bitnet", llama, ffn_bias=False,
                  activation="relu2_glu" if act == "relu2" else "swiglu", sub_norms=True)
    return _heads_span_width(f, base, "BitNet's attn_sub_norm (hidden_size wide, on the heads' output)")


def _diffllama(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """DiffLlama (DiffLlamaForCausalLM): Llama's layers (attention_bias on q, k, v and o; an MLP
    without biases) with DiffLlamaAttention, differential attention (blocks/differential.py). The
    class itself refuses attention_dropout > 0 and an odd num_key_value_heads; an odd
    num_attention_heads cannot be split into the two halves it subtracts, so both are refused here."""
    heads = f.get("num_attention_heads", 32, minimum=1)
    kv_heads = f.get("num_key_value_heads", heads, minimum=1)
    if heads % 2 or kv_heads % 2:
        raise ConfigError(f"{f.source}: diffllama needs an even num_attention_heads ({heads}) and "
                          f"num_key_value_heads ({kv_heads}): its differential attention splits each in two.")
    if float(f.get("attention_dropout", 0.0, (int, float))) != 0.0:
        raise ConfigError(f"{f.source}: a nonzero attention_dropout is not supported by diffllama "
                          "(DiffLlamaAttention refuses it).")
    return _llama(f, name, "diffllama", llama, ffn_bias=False, differential_attention=True)


def _doge(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Doge (DogeForCausalLM) with dense layers: Llama's layers with an RMSNorm on each query and key
    head, dynamic mask attention (blocks/dynamic_mask.py: dt_proj and A) and each residual stream
    times a learned d-vector (input_residual, post_attention_residual); attention_bias on q, k, v,
    dt_proj and o, mlp_bias on the MLP. Refused in one line: is_moe (CDMoE's product-key experts), a
    sliding_window, a keep_window_size below max_position_embeddings (its top-k masking), and a
    nonzero hidden_dropout or attention_dropout."""
    if f.get("is_moe", False, bool):
        raise ConfigError(f"{f.source}: is_moe (Doge's CDMoE, product-key experts) is not modelled for doge.")
    if f.data.get("sliding_window") is not None:
        raise ConfigError(f"{f.source}: a sliding_window is not modelled for doge.")
    positions = f.get("max_position_embeddings", 2048, minimum=1)
    keep = f.get("keep_window_size", 2048, minimum=1)
    if keep < positions:
        raise ConfigError(f"{f.source}: keep_window_size ({keep}) below max_position_embeddings ({positions}) is not "
                          "modelled for doge (past it, DogeAttention masks all but the top keep_window_size keys).")
    for key in ("hidden_dropout", "attention_dropout"):
        if float(f.get(key, 0.0, (int, float))) != 0.0:
            raise ConfigError(f"{f.source}: a nonzero {key} is not modelled for doge.")
    bias = f.get("attention_bias", False, bool)
    return _llama(f, name, "doge", llama, qkv_bias=bias, out_bias=bias, ffn_bias=f.get("mlp_bias", False, bool),
                  qk_norm=True, dynamic_mask=True, residual_scales=True)


def _hunyuan_v1_dense(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Hunyuan dense (HunYuanDenseV1ForCausalLM): Llama's layers (attention_bias on q, k, v and o;
    no MLP bias whatever mlp_bias says: HunYuanDenseV1MLP builds its three projections without)
    with an RMSNorm on each query and key head, applied after RoPE (query_layernorm and
    key_layernorm). Its "dynamic" RoPE with an alpha (NTK-alpha: a larger base) changes the
    tables' values only. HunYuanDenseV1Config's head_dim defaults to null, which its attention
    cannot run (head_dim ** -0.5), so a config.json must give it."""
    _silu(f, "hunyuan_v1_dense")
    if f.data.get("head_dim") is None:
        raise ConfigError(f"{f.source}: head_dim is missing or null, which transformers 5.24's "
                          "HunYuanDenseV1Attention cannot run (it takes head_dim ** -0.5); give "
                          "the width of a head.")
    return _llama(f, name, "hunyuan_v1_dense", llama, ffn_bias=False, qk_norm=True)


def _granite_swa(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """GraniteSWA: Granite's layers and multipliers with granite_swa_attention's windows, sinks
    and per-layer RoPE bases."""
    _silu(f, "granite_swa")
    base = llama.read(without_windows(f), name, "granite", _DEFAULTS["granite_swa"])
    return base.replace(family="granite_swa", **granite_swa_attention(f, base.n_decoder_layers, llama))


def without_windows(f: Fields) -> Fields:
    """The fields without sliding_window and layer_types, for a Granite reader that would read them
    as its own (GraniteSWA's windows are read by granite_swa_attention)."""
    return Fields({k: v for k, v in f.data.items() if k not in ("sliding_window", "layer_types")}, f.source)


def granite_swa_attention(f: Fields, layers: int, llama: LlamaReader) -> dict[str, Any]:
    """GraniteSWA's (and GraniteMoeSWA's) attention as ModelConfig fields: a window of
    sliding_window (128) on the layers layer_types marks sliding_attention (by default all but
    every fourth, from layer 0), a learned sink per head per layer (eagerly: the output times
    sigmoid(logsumexp(scores) - sink), facts.sink_lse_scaling), and layer_rope_theta: a RoPE base
    per layer, 0 for none (one rotary table per distinct base, beside the unused global one). A
    null window beside sliding layers and NoPE everywhere are refused; NoPE layers other than
    exactly the full ones beside sliding ones are refused by ModelConfig's check."""
    types = llama.layer_types(f, layers) or ["full_attention" if i % 4 == 0 else "sliding_attention"
                                             for i in range(layers)]
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    window = f.nullable("sliding_window", 128)
    if window is None and sliding:
        raise ConfigError(f"{f.source}: layer_types marks sliding_attention layers but sliding_window "
                          "is null, which transformers 5.24's GraniteSWA classes cannot run.")
    thetas = f.data.get("layer_rope_theta")
    if thetas is None:
        thetas = [1] * layers
    if (not isinstance(thetas, list) or len(thetas) != layers
            or any(isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0 for t in thetas)):
        raise ConfigError(f"{f.source}: layer_rope_theta must list a RoPE base (0: none) for each of "
                          f"the {layers} layers, got {show(thetas)}.")
    nope = {i for i, theta in enumerate(thetas) if theta == 0}
    if len(nope) == layers:
        raise ConfigError(f"{f.source}: layer_rope_theta 0 on every layer (no RoPE anywhere) is not "
                          "modelled for GraniteSWA.")
    partial = 0 < len(sliding) < layers
    pattern = (llama.pattern(layers, sliding, None) if partial else
               tuple("nope" if i in nope else "rope" for i in range(layers)) if nope else None)
    return dict(attention_sinks=True, sliding_window=window if sliding else None,
                window_layers=len(sliding) if partial else None, nope_layers=len(nope),
                layer_pattern=pattern, rotary_sets=1 + len({t for t in thetas if t}))


#: model_type -> its reader (hf.py passes its LlamaReader).
LLAMA_VARIANT_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "olmo": _olmo, "olmo3": _olmo3, "olmoe": _olmoe, "exaone4": _exaone4, "seed_oss": _seed_oss,
    "helium": _helium, "arcee": _arcee, "apertus": _apertus, "glm4": _glm4, "ernie4_5": _ernie4_5,
    "apertus1p5_text": _apertus1p5_text, "hunyuan_v1_dense": _hunyuan_v1_dense, "glm": _glm, "granite_swa": _granite_swa,
    "bitnet": _bitnet, "diffllama": _diffllama, "doge": _doge,
}

#: The transformers class of each, for a config.json that names `architectures` only.
LLAMA_VARIANT_ARCHITECTURES: dict[str, str] = {
    "OlmoForCausalLM": "olmo", "Olmo3ForCausalLM": "olmo3", "OlmoeForCausalLM": "olmoe",
    "Exaone4ForCausalLM": "exaone4", "SeedOssForCausalLM": "seed_oss",
    "HeliumForCausalLM": "helium", "ArceeForCausalLM": "arcee", "ApertusForCausalLM": "apertus",
    "Glm4ForCausalLM": "glm4", "Ernie4_5ForCausalLM": "ernie4_5",
    "HunYuanDenseV1ForCausalLM": "hunyuan_v1_dense", "GlmForCausalLM": "glm",
    "GraniteSWAForCausalLM": "granite_swa", "BitNetForCausalLM": "bitnet",
    "Apertus1p5TextForCausalLM": "apertus1p5_text", "DiffLlamaForCausalLM": "diffllama",
    "DogeForCausalLM": "doge",
}

_NAMES: dict[str, str] = LLAMA_NAMES
#: The config.json names of ModelConfig's fields (the ones its errors may name).
LLAMA_VARIANT_NAMES: dict[str, dict[str, Any]] = {
    **{family: _NAMES for family in LLAMA_VARIANT_BUILDERS},
    "olmoe": {**_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok"}}
