"""config.json readers of more classic families: StableLM (partial rotary, LayerNorms, a SwiGLU
MLP), GPT-BigCode (StarCoder 1 / SantaCoder: GPT-2's layers with multi-query attention) and MPT
(ALiBi, no biases, LayerNorms with a weight only) and GPT-J (parallel attention and MLP, interleaved
partial rotary, scores in fp32) GPT-Neo (local attention on alternate layers, learned positions) and Cohere (Command R: an fp32
Python LayerNorm into parallel attention and MLP, a scaled head; Cohere 2 adds windows and NoPE on
the full layers; Cohere2-MoE Mixtral's experts).
costmodel/hf.py dispatches on model_type. Defaults are those of transformers 5.24's configuration
classes."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_fields import LLAMA_NAMES, Fields, attention_layer_types, head_width, rotary_fraction, same_dropout


def interleaved_rotary_dim(f: Fields, head_dim: int, family: str) -> int:
    """GPT-J's and CodeGen's rotary_dim (64 by default): even, at most the head; null (RoPE on the
    whole head, its sin/cos table sized by n_embd in transformers) is not modelled."""
    rotary = f.nullable("rotary_dim", 64)
    if rotary is None:
        raise ConfigError(f"{f.source}: rotary_dim null (rotary on the whole head) is not modelled "
                          f"for {family}; transformers sizes its sin/cos table by n_embd then.")
    check_int(f.source, "rotary_dim", rotary)
    if rotary % 2 or rotary > head_dim:
        raise ConfigError(f"{f.source}: rotary_dim ({rotary}) must be even and at most the head "
                          f"dimension ({head_dim}).")
    return rotary

#: GPT-2's activation names as GPT-J's and GPT-Neo's MLPs read them (ACT2FN: gelu_new is the tanh GELU).
_GELU_NEW_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


def _activation(f: Fields, family: str, default: str, names: dict[str, str]) -> str:
    """The MLP's activation_function under the names this family's code maps (one line if not)."""
    act = f.get("activation_function", default, str)
    if act not in names:
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for {family}.")
    return names[act]


def _stablelm(f: Fields, name: str) -> ModelConfig:
    """StableLM (StableLM-2, StableLM-3B-4E1T): q/k/v (biases per use_qkv_bias) and o_proj without
    a bias, RoPE on partial_rotary_factor of each head (0.25 by default), LayerNorms with biases, a
    SwiGLU MLP without biases, and either sequential layers or one LayerNorm into attention and
    MLP in parallel (use_parallel_residual); an untied head by default. qk_layernorm (a LayerNorm
    per head on queries and keys) and a nonzero hidden_dropout are refused."""
    n_layers = f.get("num_hidden_layers", 32)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    n_kv = f.get("num_key_value_heads", 32, minimum=1)
    d_model = f.get("hidden_size", 2560)
    head_dim = head_width(f, d_model, n_heads, "num_attention_heads")
    if f.get("qk_layernorm", False, bool):
        raise ConfigError(f"{f.source}: qk_layernorm (a LayerNorm per head on StableLM's queries and "
                          "keys) is not modelled.")
    if f.get("hidden_dropout", 0.0, float):
        raise ConfigError(f"{f.source}: hidden_dropout (StableLM's dropout after the MLP only) is "
                          "not modelled; the released StableLM models have 0.")
    act = f.get("hidden_act", "silu", str)
    if act not in ("silu", "swish"):
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for stablelm.")
    rotary = int(head_dim * rotary_fraction(f, "partial_rotary_factor", 0.25))
    if rotary < 2 or rotary % 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions "
                          "per head (an even number, at least 2, is needed).")
    parallel = f.get("use_parallel_residual", False, bool)
    return ModelConfig(
        name=name, family="stablelm", vocab_size=f.get("vocab_size", 50304), d_model=d_model,
        n_heads=n_heads, n_kv_heads=n_kv, d_ff=f.get("intermediate_size", 6912),
        n_decoder_layers=n_layers, max_positions=f.get("max_position_embeddings", 4096),
        position="rope", rotary_dim=None if rotary == head_dim else rotary, norm="layernorm",
        norm_position="pre", activation="swiglu", qkv_bias=f.get("use_qkv_bias", False, bool),
        out_bias=False, ffn_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        parallel_attention=parallel, parallel_norms=1 if parallel else 2,
        dropout=0.0, attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


def _gpt_bigcode(f: Fields, name: str) -> ModelConfig:
    """GPT-BigCode (SantaCoder, StarCoder 1): GPT-2's layers (learned positions, LayerNorms, biases
    everywhere, a tanh-GELU MLP of n_inner, 4d by default, a tied head) with torch Linears, one
    fused c_attn and multi-query attention (one K/V head) unless multi_query is false; resid_pdrop
    after each sublayer, embd_pdrop after the embeddings, attn_pdrop on the probabilities."""
    n_layers = f.get("num_hidden_layers", f.get("n_layer", 12))
    check_int(f.source, "n_layer", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", f.get("n_embd", 768))
    n_heads = f.get("num_attention_heads", f.get("n_head", 12, minimum=1), minimum=1)
    head_width(f, d_model, n_heads, "n_head")
    if f.get("add_cross_attention", False, bool):
        raise ConfigError(f"{f.source}: add_cross_attention (GPT-BigCode as a decoder with "
                          "cross-attention) is not modelled.")
    if not f.get("scale_attn_weights", True, bool):
        raise ConfigError(f"{f.source}: scale_attn_weights false (unscaled scores) is not "
                          "modelled for gpt_bigcode.")
    activation = _activation(f, "gpt_bigcode", "gelu_pytorch_tanh",
                             {"gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"})
    dropout = same_dropout(f, ("resid_pdrop", "embd_pdrop"), "gpt_bigcode", 0.1)
    d_ff = f.get("n_inner", None)
    return ModelConfig(
        name=name, family="gpt_bigcode", vocab_size=f.get("vocab_size", 50257), d_model=d_model,
        n_heads=n_heads, n_kv_heads=1 if f.get("multi_query", True, bool) else n_heads,
        d_ff=4 * d_model if d_ff is None else d_ff, n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", f.get("n_positions", 1024)),
        position="learned", norm="layernorm", norm_position="pre", activation=activation,
        head="lm", tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=dropout, attention_dropout=float(f.get("attn_pdrop", 0.1, float)),
    )


def _mpt_attention(f: Fields) -> Fields:
    """MPT's attn_config (a dict in config.json; MptAttentionConfig's defaults where it is missing)."""
    attn = f.data.get("attn_config")
    if attn is None:
        attn = {}
    if not isinstance(attn, dict):
        raise ConfigError(f"{f.source}: attn_config must be an object, got {show(attn)}.")
    return Fields(attn, f"{f.source} (attn_config)")


def _mpt(f: Fields, name: str) -> ModelConfig:
    """MPT (MosaicML): ALiBi (the bias built each forward from max_seq_len, in fp32), a fused Wqkv
    and out_proj without biases, LayerNorms with a weight only, an MLP of 4d with the erf GELU, no
    bias anywhere, a tied head, no dropout (attn_config's attn_pdrop must be 0: transformers 5.24
    types it an integer). transformers' MptForCausalLM reads neither expansion_ratio nor no_bias nor
    learned_pos_emb (4d, no biases and ALiBi whatever they say): a config asking for another MLP
    width, biases or no ALiBi describes a model that class does not build, refused in one line;
    so are clip_qkv, qk_ln, multi-query attention and a prefix LM."""
    n_layers = f.get("num_hidden_layers", f.get("n_layers", 24))
    check_int(f.source, "n_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", f.get("d_model", 2048))
    n_heads = f.get("num_attention_heads", f.get("n_heads", 16, minimum=1), minimum=1)
    head_width(f, d_model, n_heads, "n_heads")
    if f.get("expansion_ratio", 4, (int, float)) != 4:
        raise ConfigError(f"{f.source}: expansion_ratio {show(f.data['expansion_ratio'])}: "
                          "transformers' MptMLP is 4 d wide whatever it says; only 4 is modelled.")
    if not f.get("no_bias", True, bool):
        raise ConfigError(f"{f.source}: no_bias false: transformers' MPT builds no biases whatever "
                          "it says; only no_bias true is modelled.")
    attn = _mpt_attention(f)
    if not attn.get("alibi", True, bool):
        raise ConfigError(f"{f.source}: attn_config alibi false: transformers' MPT always adds "
                          "ALiBi (and has no position table); only alibi true is modelled.")
    for key, default in (("clip_qkv", None), ("qk_ln", False), ("prefix_lm", False),
                         ("attn_uses_sequence_id", False)):
        if attn.data.get(key, default) not in (default, None, False):
            raise ConfigError(f"{f.source}: attn_config {key} {show(attn.data[key])} is not "
                              "modelled for mpt.")
    if attn.get("attn_type", "multihead_attention", str) != "multihead_attention":
        raise ConfigError(f"{f.source}: attn_config attn_type {show(attn.data['attn_type'])}: "
                          "transformers' MPT runs multi-head attention only.")
    if attn.get("alibi_bias_max", 8) != 8:
        raise ConfigError(f"{f.source}: attn_config alibi_bias_max other than 8 is not modelled "
                          "(transformers' MPT builds its slopes with 8 whatever it says).")
    scale = attn.nullable("softmax_scale", None, float)
    if attn.get("attn_pdrop", 0, float):  # MptAttentionConfig types it int: only 0 builds
        raise ConfigError(f"{f.source}: attn_config attn_pdrop {show(attn.data['attn_pdrop'])}: "
                          "dropout in MPT is not modelled (transformers 5.24 takes an integer "
                          "attn_pdrop, so only 0 builds).")
    return ModelConfig(
        name=name, family="mpt", vocab_size=f.get("vocab_size", 50368), d_model=d_model,
        n_heads=n_heads, d_ff=4 * d_model, n_decoder_layers=n_layers,
        max_positions=f.get("max_seq_len", 2048),  # ALiBi has no table: the bias is this long
        position="alibi", norm="layernorm", norm_bias=False, norm_position="pre",
        activation="gelu", qkv_bias=False, out_bias=False, ffn_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        attention_scale=None if scale is None else float(scale), dropout=0.0,
    )


def _gptj(f: Fields, name: str) -> ModelConfig:
    """GPT-J: one LayerNorm feeding attention and the MLP in parallel, q/k/v/out without biases,
    RoPE on rotary_dim of each head (64 by default) rotating interleaved pairs (rotate_every_two)
    with sin and cos from a P x rotary_dim fp32 buffer, scores computed in fp32, a gelu_new MLP of
    n_inner (4d by default) with biases, an lm_head with a bias, untied by default; resid_pdrop
    after each sublayer, embd_pdrop after the embeddings, attn_pdrop on the probabilities.
    rotary_dim null (transformers sizes the sin/cos table by hidden_size then, which only one
    head fits) is refused."""
    n_layers = f.get("num_hidden_layers", f.get("n_layer", 28))
    check_int(f.source, "n_layer", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", f.get("n_embd", 4096))
    n_heads = f.get("num_attention_heads", f.get("n_head", 16, minimum=1), minimum=1)
    head_dim = head_width(f, d_model, n_heads, "n_head")
    rotary = interleaved_rotary_dim(f, head_dim, "gptj")
    activation = _activation(f, "gptj", "gelu_new", _GELU_NEW_ACTIVATIONS)
    dropout = same_dropout(f, ("resid_pdrop", "embd_pdrop"), "gptj")
    d_ff = f.get("n_inner", None)
    return ModelConfig(
        name=name, family="gptj", vocab_size=f.get("vocab_size", 50400), d_model=d_model,
        n_heads=n_heads, d_ff=4 * d_model if d_ff is None else d_ff, n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", f.get("n_positions", 2048)),
        position="rope", rotary_dim=None if rotary == head_dim else rotary, norm="layernorm",
        norm_position="pre", activation=activation, qkv_bias=False, out_bias=False, ffn_bias=True,
        lm_head_bias=True, head="lm", tie_embeddings=f.get("tie_word_embeddings", False, bool),
        parallel_attention=True, parallel_norms=1, dropout=dropout,
        attention_dropout=float(f.get("attn_pdrop", 0.0, float)),
    )


def _gpt_neo_layers(f: Fields, n_layers: int) -> list[str]:
    """GPT-Neo's attention type of each layer ("global" or "local"), as GPTNeoConfig expands
    attention_types ([[["global", "local"], 12]] by default: 24 layers alternating from a global
    layer 0; the class refuses any other number of layers without a list of their own)."""
    kinds = f.data.get("attention_types") or [[["global", "local"], 12]]
    layers: list[str] = []
    try:
        for types, repeat in kinds:
            check_int(f.source, "attention_types", repeat, minimum=0)
            if not isinstance(types, list) or any(t not in ("global", "local") for t in types):
                raise TypeError
            layers += types * repeat
    except (TypeError, ValueError):
        raise ConfigError(f"{f.source}: attention_types must list [[\"global\" or \"local\", ...], "
                          "count] pairs.") from None
    if len(layers) != n_layers:
        raise ConfigError(f"{f.source}: attention_types describe {len(layers)} layers, num_layers is "
                          f"{n_layers}.")
    return layers


def _gpt_neo(f: Fields, name: str) -> ModelConfig:
    """GPT-Neo: GPT-2's layers (learned positions, LayerNorms, a gelu_new MLP of intermediate_size,
    4d by default, a tied head) with q/k/v without biases, unscaled scores computed in fp32, and
    local attention (a window of window_size keys, as a mask: every score is computed and every
    token cached) on the layers attention_types names; resid_dropout after each sublayer,
    embed_dropout after the embeddings, attention_dropout on the probabilities."""
    n_layers = f.get("num_hidden_layers", f.get("num_layers", 24))
    check_int(f.source, "num_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", 2048)
    n_heads = f.get("num_attention_heads", f.get("num_heads", 16, minimum=1), minimum=1)
    head_width(f, d_model, n_heads, "num_heads")
    layers = _gpt_neo_layers(f, n_layers)
    window = f.get("window_size", 256)
    check_int(f.source, "window_size", window)
    local = sum(kind == "local" for kind in layers)
    activation = _activation(f, "gpt_neo", "gelu_new", _GELU_NEW_ACTIVATIONS)
    dropout = same_dropout(f, ("resid_dropout", "embed_dropout"), "gpt_neo")
    d_ff = f.get("intermediate_size", None)
    return ModelConfig(
        name=name, family="gpt_neo", vocab_size=f.get("vocab_size", 50257), d_model=d_model,
        n_heads=n_heads, d_ff=4 * d_model if d_ff is None else d_ff, n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", 2048), position="learned",
        norm="layernorm", norm_position="pre", activation=activation, qkv_bias=False,
        out_bias=True, ffn_bias=True, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool), attention_scale=1.0,
        dropout=dropout,
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
        sliding_window=window if local else None,
        window_layers=local if 0 < local < n_layers else None,
        layer_pattern=(tuple("sliding" if kind == "local" else "full" for kind in layers)
                       if 0 < local < n_layers else None),
    )


def _cohere_fields(f: Fields, family: str) -> dict[str, Any]:
    """The ModelConfig fields Cohere and Cohere 2 share (the layer counts checked). Cohere2-MoE's
    attention reads a head_dim field (128 by default), the others hidden/heads."""
    n_layers = f.get("num_hidden_layers", 40)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    n_heads = f.get("num_attention_heads", 64, minimum=1)
    n_kv = f.get("num_key_value_heads", n_heads, minimum=1)
    d_model = f.get("hidden_size", 8192)
    d_head = (f.get("head_dim", 128, minimum=1) if family == "cohere2_moe"
              else head_width(f, d_model, n_heads, "num_attention_heads"))
    act = f.get("hidden_act", "silu", str)
    if act not in ("silu", "swish"):
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {family}.")
    scale = f.nullable("logit_scale", 0.0625, float)
    if scale is None:
        raise ConfigError(f"{f.source}: logit_scale null: transformers' {family} multiplies the "
                          "logits by it (logits * None fails); give a number.")
    if not 0 < scale < float("inf"):
        raise ConfigError(f"{f.source}: logit_scale must be a positive number, got {show(scale)}.")
    bias = f.get("attention_bias", False, bool)
    return dict(
        family=family, vocab_size=f.get("vocab_size", 256000), d_model=d_model,
        n_heads=n_heads, n_kv_heads=n_kv, d_head=d_head, d_ff=f.get("intermediate_size", 22528),
        n_decoder_layers=n_layers, max_positions=f.get("max_position_embeddings", 8192),
        position="rope", norm="layernorm", norm_bias=False, norm_position="pre",
        activation="swiglu", qkv_bias=bias, out_bias=bias, ffn_bias=False, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        parallel_attention=True, parallel_norms=1, logits_scaling=1 / float(scale),
        dropout=0.0, attention_dropout=float(f.nullable("attention_dropout", 0.0, float) or 0.0),
    )


def _cohere(f: Fields, name: str) -> ModelConfig:
    """Command R (Cohere): one LayerNorm with a weight only, computed in Python in fp32, feeding
    attention and a SwiGLU MLP in parallel; RoPE on every dimension rotating interleaved pairs in
    fp32; biases on q/k/v/o per attention_bias, none in the MLP; a tied head whose logits are
    multiplied by logit_scale (0.0625 by default: ModelConfig.logits_scaling is its inverse).
    use_qk_norm (Command R+'s LayerNorms on queries and keys) is refused."""
    if f.get("use_qk_norm", False, bool):
        raise ConfigError(f"{f.source}: use_qk_norm (Command R+'s LayerNorms on queries and keys) "
                          "is not modelled for cohere.")
    return ModelConfig(name=name, **_cohere_fields(f, "cohere"))


def _cohere2(f: Fields, name: str) -> ModelConfig:
    """Command R7B / Command A (Cohere 2): Cohere's layers with _cohere2_windows' windows."""
    fields = _cohere_fields(f, "cohere2")
    return ModelConfig(name=name, **fields, **_cohere2_windows(f, fields["n_decoder_layers"], "cohere2"))


def _cohere2_windows(f: Fields, n_layers: int, family: str) -> dict[str, Any]:
    """Cohere 2's windows: a window of sliding_window on the layers layer_types marks
    sliding_attention (three in four by default: sliding_window_pattern 4), RoPE on those only,
    none on the full layers (NoPE: ModelConfig.nope_layers on exactly the full layers). A null
    sliding_window (no window and no RoPE anywhere) or no sliding layer is refused."""
    window = f.nullable("sliding_window", 4096)
    if window is None:
        raise ConfigError(f"{f.source}: sliding_window null (no window and no RoPE on any layer) is "
                          f"not modelled for {family}.")
    check_int(f.source, "sliding_window", window)
    types = f.data.get("layer_types")
    if types is None:
        every = f.get("sliding_window_pattern", 4, minimum=1)
        types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n_layers)]
    attention_layer_types(f, types, n_layers)
    sliding = sum(t == "sliding_attention" for t in types)
    if not sliding:
        raise ConfigError(f"{f.source}: layer_types has no sliding_attention layer: no layer of "
                          f"{family} would apply RoPE, which is not modelled.")
    pattern = tuple("sliding" if t == "sliding_attention" else "full" for t in types)
    return dict(sliding_window=window, window_layers=None if sliding == n_layers else sliding,
                nope_layers=n_layers - sliding, layer_pattern=None if sliding == n_layers else pattern)


def _cohere2_moe(f: Fields, name: str) -> ModelConfig:
    """Cohere2-MoE (Cohere2MoeForCausalLM): Cohere 2's layers and windows (head_dim 128 by
    default) with Mixtral's experts in every layer: top num_experts_per_tok (2) of num_experts
    (8) SwiGLU experts of intermediate_size, chosen by a linear router whose top k logits go
    through a softmax in fp32 (expert_selection_fn "softmax"), beside num_shared_experts (0)
    shared experts as one MLP of their summed width, added (shared_expert_combination_strategy
    "sum"). Refused in one line, as not modelled: dense layers (mlp_layer_types "dense", whose full
    layers force RoPE), the sigmoid selection, the "average" combination of shared experts (the
    class's default strategy, run only where there are shared experts) and RMSNorms
    (rms_norm_eps given)."""
    fields = _cohere_fields(f, "cohere2_moe")
    layers = fields["n_decoder_layers"]
    kinds = f.data.get("mlp_layer_types")
    if kinds is not None and kinds != ["sparse"] * layers:
        raise ConfigError(f"{f.source}: mlp_layer_types other than sparse on every one of the "
                          f"{layers} layers (dense prefix layers, whose full layers force RoPE) is "
                          "not modelled for cohere2_moe.")
    if f.get("first_k_dense_replace", 0, minimum=0):
        raise ConfigError(f"{f.source}: first_k_dense_replace (dense prefix layers) is not modelled "
                          "for cohere2_moe.")
    if f.data.get("rms_norm_eps") is not None:
        raise ConfigError(f"{f.source}: rms_norm_eps (RMSNorms in place of Cohere's LayerNorms) is "
                          "not modelled for cohere2_moe; leave it null.")
    selection = f.get("expert_selection_fn", "softmax", str)
    if selection != "softmax":
        raise ConfigError(f"{f.source}: expert_selection_fn {show(selection)} is not modelled for "
                          "cohere2_moe (softmax is).")
    shared = f.get("num_shared_experts", 0, minimum=0)
    strategy = f.get("shared_expert_combination_strategy", "average", str)
    if shared and strategy != "sum":
        raise ConfigError(f"{f.source}: shared_expert_combination_strategy {show(strategy)} with "
                          "shared experts is not modelled for cohere2_moe (sum is).")
    experts = f.get("num_experts", 8, minimum=1)
    top_k = f.get("num_experts_per_tok", 2, minimum=1)
    if top_k > experts:
        raise ConfigError(f"{f.source}: num_experts_per_tok ({top_k}) is more than num_experts "
                          f"({experts}), which torch.topk cannot choose.")
    width = fields["d_ff"]
    return ModelConfig(name=name, **fields, **_cohere2_windows(f, layers, "cohere2_moe"),
                       n_experts=experts, top_k=top_k, d_expert=width, d_shared=width * shared,
                       router="topk_softmax", renormalize_top_k=False)


#: model_type -> its reader.
CLASSIC_MORE_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "stablelm": _stablelm, "gpt_bigcode": _gpt_bigcode, "mpt": _mpt, "gptj": _gptj,
    "gpt_neo": _gpt_neo, "cohere": _cohere, "cohere2": _cohere2, "cohere2_moe": _cohere2_moe,
}

#: The transformers class of each, for a config.json that names `architectures` only.
CLASSIC_MORE_ARCHITECTURES: dict[str, str] = {
    "StableLmForCausalLM": "stablelm", "GPTBigCodeForCausalLM": "gpt_bigcode",
    "MptForCausalLM": "mpt", "GPTJForCausalLM": "gptj", "GPTNeoForCausalLM": "gpt_neo",
    "CohereForCausalLM": "cohere", "Cohere2ForCausalLM": "cohere2",
    "Cohere2MoeForCausalLM": "cohere2_moe",
}

_LLAMA_NAMES: dict[str, str] = {k: v for k, v in LLAMA_NAMES.items() if k != "d_head"}
_GPT2_NAMES: dict[str, str] = {
    "n_heads": "n_head", "d_model": "n_embd", "d_ff": "n_inner", "n_decoder_layers": "n_layer",
    "max_positions": "n_positions"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
CLASSIC_MORE_NAMES: dict[str, dict[str, Any]] = {
    "stablelm": _LLAMA_NAMES, "gpt_bigcode": _GPT2_NAMES, "gptj": _GPT2_NAMES, "cohere": _LLAMA_NAMES,
    "cohere2": _LLAMA_NAMES,
    "cohere2_moe": {**LLAMA_NAMES, "n_experts": "num_experts", "top_k": "num_experts_per_tok",
                    "d_expert": "intermediate_size"},
    "gpt_neo": {"n_heads": "num_heads", "d_model": "hidden_size", "d_ff": "intermediate_size",
                "n_decoder_layers": "num_layers", "max_positions": "max_position_embeddings",
                "sliding_window": "window_size"},
    "mpt": {"n_heads": "n_heads", "d_model": "d_model", "n_decoder_layers": "n_layers",
            "max_positions": "max_seq_len"},
}
