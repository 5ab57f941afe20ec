"""config.json readers of more dense decoder families whose blocks exist here already: Nemotron
(Nemotron-4 / Minitron: Llama's attention with partial rotary, a squared-ReLU MLP without a gate,
LayerNorm1P), VaultGemma (Gemma 2 without the norms after the sublayers), Ministral 3
(Mistral's layers with a per-position query scale after RoPE), Jais 2 (Llama's attention,
Nemotron's MLP, LayerNorms), HyperCLOVA X (Granite with post-sublayer norms), CodeGen (GPT-J's
layers with a fused Q/K/V projection without a bias), BioGPT (OPT's pre-norm layers with
scaled embeddings) and MiniCPM3 (DeepSeek-V2's latent attention in dense layers, multipliers).
The Llama-like ones read their fields through costmodel/hf_llama.py's Llama reader (Gemma 2's,
Mistral's, Granite's, DeepSeek-V2's rules), which hf.py passes in, and change what their own
code does otherwise. costmodel/hf.py dispatches on model_type. Defaults are those of
transformers 5.24's configuration classes."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .errors import MAX_LAYERS, check_int
from .hf_classic_more import interleaved_rotary_dim
from .hf_fields import LLAMA_NAMES, Fields, head_width, rotary_fraction, same_dropout
from .hf_llama_variants import LlamaReader

#: transformers 5.24's NemotronConfig defaults for the Llama fields it reads
#: (models/nemotron/configuration_nemotron.py; head_dim None: hidden_size / heads).
_NEMOTRON_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=4096, hidden_act="silu",
                                          tie_word_embeddings=False)


def _nemotron(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Nemotron (NemotronForCausalLM: Nemotron-4, Minitron): Llama's attention (attention_bias
    on q, k, v and o; grouped KV heads) with RoPE on partial_rotary_factor of each head (0.5 by
    default; rotate_half, the passed part joined by torch.cat), an MLP up_proj -> relu2 ->
    down_proj (mlp_bias on both), and LayerNorm1P: a LayerNorm with weight and bias whose weight
    is applied as weight + 1 (a new d-wide tensor each forward, which layer_norm keeps:
    facts layernorm_weight_plus_one). A missing or null num_key_value_heads (NemotronConfig's
    default, which its attention cannot run) is refused."""
    act = f.get("hidden_act", "relu2", str)
    if act != "relu2":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for nemotron (its MLP has "
                          "no gate; relu2 is modelled).")
    if f.data.get("num_key_value_heads") is None:
        raise ConfigError(f"{f.source}: num_key_value_heads is missing or null (NemotronConfig's "
                          "default), which transformers 5.24's NemotronAttention cannot run (it "
                          "divides num_attention_heads by it); give the number of KV heads.")
    base = llama.read(Fields(dict(f.data, hidden_act="silu"), f.source), name, "llama",
                      _NEMOTRON_DEFAULTS)
    rotary = int(base.d_head * rotary_fraction(f, "partial_rotary_factor", 0.5))
    if rotary < 2 or rotary % 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions per "
                          "head; an even number of at least 2 is modelled.")
    return base.replace(family="nemotron", activation="relu2", norm="layernorm",
                        rotary_dim=None if rotary == base.d_head else rotary)


def _vaultgemma(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """VaultGemma (VaultGemmaForCausalLM): Gemma 2's layers (its configuration class, defaults,
    window on alternate layers, soft-capping, query_pre_attn_scalar, (1 + w) RMSNorms, scaled
    embeddings, a tied head) without the two norms after the sublayers
    (VaultGemmaDecoderLayer deletes post_attention_layernorm and post_feedforward_layernorm)."""
    base = llama.read(f, name, "gemma2", None)
    return base.replace(family="vaultgemma", post_sublayer_norm=False)


#: transformers 5.24's Ministral3Config defaults for the Llama fields it reads
#: (models/ministral3/configuration_ministral3.py; sliding_window None: no window).
_MINISTRAL3_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=262144, hidden_act="silu",
                                            tie_word_embeddings=False, num_key_value_heads=8,
                                            head_dim=128, sliding_window=None)


def _ministral3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Ministral 3 (Ministral3ForCausalLM; the language model of Mistral 3's mistral3 configs):
    Mistral's layers (no biases, a sliding_window on every layer when one is set) whose queries,
    after RoPE in every layer, are multiplied by 1 + llama_4_scaling_beta log(1 + floor(position /
    original_max_position_embeddings)), both read from rope_parameters on every forward
    (ModelConfig.rope_query_scale). Its default rope_parameters (YaRN, beta 0.1, 16384) change the
    RoPE tables' values only. A rope_parameters without either key, which Ministral3Attention
    cannot run (it computes with None), is refused."""
    rope = f.data.get("rope_parameters") or f.data.get("rope_scaling")
    if rope is not None:  # given: transformers keeps it as is (missing: the YaRN default)
        if not isinstance(rope, dict):
            raise ConfigError(f"{f.source}: rope_parameters must be an object, got {show(rope)}.")
        for key in ("llama_4_scaling_beta", "original_max_position_embeddings"):
            value = rope.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{f.source}: rope_parameters has no number {key} (got "
                                  f"{show(value)}), which transformers 5.24's Ministral3Attention "
                                  "reads on every forward to scale the queries.")
    # the reader takes Mistral's window rule with Mistral's default (4096): Ministral 3's is None
    data = dict(f.data, sliding_window=f.data.get("sliding_window"))
    base = llama.read(Fields(data, f.source), name, "mistral", _MINISTRAL3_DEFAULTS)
    return base.replace(family="ministral3", rope_query_scale=True)


#: transformers 5.24's Jais2Config defaults for the Llama fields it reads (models/jais2).
_JAIS2_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=8192, hidden_act="silu",
                                       tie_word_embeddings=False)


def _jais2(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Jais 2 (Jais2ForCausalLM): Llama's attention (attention_bias on q, k, v and o: True by
    default) and RoPE, Nemotron's MLP up_proj -> relu2 -> down_proj (mlp_bias: True by default)
    and torch's LayerNorm (weight and bias) in place of the RMSNorms."""
    act = f.get("hidden_act", "relu2", str)
    if act != "relu2":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for jais2 (its MLP has "
                          "no gate; relu2 is modelled).")
    data = dict(f.data, hidden_act="silu", attention_bias=f.get("attention_bias", True, bool),
                mlp_bias=f.get("mlp_bias", True, bool))
    defaults = dict(vocab_size=150272, hidden_size=3328, intermediate_size=26624,
                    num_attention_heads=26, num_hidden_layers=32)
    data.update({key: value for key, value in defaults.items() if data.get(key) is None})
    base = llama.read(Fields(data, f.source), name, "llama", _JAIS2_DEFAULTS)
    return base.replace(family="jais2", activation="relu2", norm="layernorm")


def _hyperclovax(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """HyperCLOVA X SEED (HyperCLOVAXForCausalLM): Granite's layers and multipliers with an
    RMSNorm on each sublayer's output before the scaled residual add (use_post_norm, True by
    default: Peri-LN), attention_multiplier null meaning head_dim ** -0.5, and the logits
    multiplied by logits_scaling where Granite divides (ModelConfig.logits_scaling is its
    inverse)."""
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    d_model = f.get("hidden_size", 4096)
    head_dim = f.get("head_dim", None) or d_model // n_heads
    data = dict(f.data)
    if data.get("attention_multiplier") is None:
        data["attention_multiplier"] = head_dim ** -0.5
    scaling = f.get("logits_scaling", 1.0, float)
    if not 0 < scaling < float("inf"):
        raise ConfigError(f"{f.source}: logits_scaling must be a positive number, got {show(scaling)}.")
    data["logits_scaling"] = 1 / scaling
    base = llama.read(Fields(data, f.source), name, "granite", None)
    return base.replace(family="hyperclovax", post_sublayer_norm=f.get("use_post_norm", True, bool))


#: GPT-2's activation names as CodeGen's MLP reads them (ACT2FN: gelu_new is the tanh GELU).
_CODEGEN_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


def _codegen(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """CodeGen (CodeGenForCausalLM; CodeGen 1 and 2): GPT-J's layers (one LayerNorm into
    attention and MLP in parallel, interleaved RoPE on rotary_dim of each head from an fp32
    sin/cos buffer, scores in fp32, a gelu_new MLP of n_inner with biases, a biased lm_head,
    untied by default) with one fused qkv_proj without a bias, split in mp_num = 4 groups
    (query, value, key in each), and out_proj without one. hidden_size must be a multiple of 4
    (the groups) and rotary_dim must be set (null sizes the table by hidden_size, as GPT-J)."""
    n_layers = f.get("num_hidden_layers", f.get("n_layer", 28))
    check_int(f.source, "n_layer", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", f.get("n_embd", 4096))
    n_heads = f.get("num_attention_heads", f.get("n_head", 16, minimum=1), minimum=1)
    if d_model % n_heads or d_model % 4:
        raise ConfigError(f"{f.source}: n_embd ({d_model}) must be divisible by n_head ({n_heads}) "
                          "and by 4 (CodeGen's qkv_proj is split in mp_num = 4 groups).")
    head_dim = d_model // n_heads
    rotary = interleaved_rotary_dim(f, head_dim, "codegen")
    act = f.get("activation_function", "gelu_new", str)
    if act not in _CODEGEN_ACTIVATIONS:
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for codegen.")
    dropout = same_dropout(f, ("resid_pdrop", "embd_pdrop"), "codegen")
    d_ff = f.get("n_inner", None)
    return ModelConfig(
        name=name, family="codegen", vocab_size=f.get("vocab_size", 50400), d_model=d_model,
        n_heads=n_heads, d_ff=4 * d_model if d_ff is None else d_ff, n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", f.get("n_positions", 2048)),
        position="rope", rotary_dim=None if rotary == head_dim else rotary, norm="layernorm",
        norm_position="pre", activation=_CODEGEN_ACTIVATIONS[act], qkv_bias=False, out_bias=False,
        ffn_bias=True, lm_head_bias=True, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool), parallel_attention=True,
        parallel_norms=1, dropout=dropout, attention_dropout=float(f.get("attn_pdrop", 0.0, float)),
    )


def _biogpt(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """BioGPT (BioGptForCausalLM): OPT's pre-LayerNorm layers (BART's attention and MLP, biases
    everywhere, a final LayerNorm) with the token embeddings times sqrt(hidden_size)
    (scale_embedding, True by default; a Python float), learned positions looked up at position
    + 2, an erf GELU MLP of intermediate_size, the softmax in the activation dtype, an
    output_projection without a bias tied to the embeddings by default; hidden_dropout_prob
    after the embeddings and each sublayer, attention_probs_dropout_prob on the probabilities.
    A nonzero activation_dropout (inside the MLP) and layerdrop are refused."""
    n_layers = f.get("num_hidden_layers", 24)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", 1024)
    n_heads = f.get("num_attention_heads", 16, minimum=1)
    head_width(f, d_model, n_heads, "num_attention_heads")
    for key in ("activation_dropout", "layerdrop"):
        if f.get(key, 0.0, float):
            raise ConfigError(f"{f.source}: {key} {show(f.data[key])} is not modelled for biogpt "
                              "(the released BioGPT models have 0).")
    act = f.get("hidden_act", "gelu", str)
    acts = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for biogpt.")
    return ModelConfig(
        name=name, family="biogpt", vocab_size=f.get("vocab_size", 42384), d_model=d_model,
        n_heads=n_heads, d_ff=f.get("intermediate_size", 4096), n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", 1024), position="learned",
        position_offset=2, norm="layernorm", norm_position="pre", activation=acts[act],
        qkv_bias=True, out_bias=True, ffn_bias=True, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        scale_embeddings=f.get("scale_embedding", True, bool),
        dropout=float(f.get("hidden_dropout_prob", 0.1, float)),
        attention_dropout=float(f.get("attention_probs_dropout_prob", 0.1, float)),
    )


def _minicpm3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """MiniCPM3 (MiniCPM3ForCausalLM): DeepSeek-V2's latent attention (q through q_lora_rank, 768
    by default; keys and values from a kv_lora_rank latent, 256, and a qk_rope_head_dim RoPE key,
    32; query/key heads qk_nope_head_dim + qk_rope_head_dim wide, values v_head_dim, hidden /
    heads by default) in Llama's layers with a SwiGLU MLP in every layer, the embeddings times
    scale_emb (12; a one-element buffer), each sublayer's output times scale_depth / sqrt(layers)
    (1.4) before its residual add, and the final hidden states divided by hidden_size /
    dim_model_base (256) before the tied head (ModelConfig.scale_lm_head_input). A
    num_key_value_heads other than num_attention_heads (its eager attention cannot run it) is
    refused."""
    layers = f.get("num_hidden_layers", 62)
    check_int(f.source, "num_hidden_layers", layers, maximum=MAX_LAYERS)
    d_model, n_heads = f.get("hidden_size", 2560), f.get("num_attention_heads", 40, minimum=1)
    depth = f.nullable("scale_depth", 1.4, float)
    base = f.nullable("dim_model_base", 256)  # null: hidden_size (a divide by 1.0, still run)
    scale_emb = f.get("scale_emb", 12, float)
    for key, value in (("scale_depth", depth), ("scale_emb", scale_emb), ("dim_model_base", base)):
        if value is not None and not 0 < value < float("inf"):
            raise ConfigError(f"{f.source}: {key} must be a positive number or null, got {show(value)}.")
    kv_heads = f.get("num_key_value_heads", 40)
    if kv_heads != n_heads:
        raise ConfigError(f"{f.source}: num_key_value_heads ({kv_heads}, 40 by default) differs from "
                          f"num_attention_heads ({n_heads}), which transformers 5.24's MiniCPM3 "
                          "eager attention cannot run (it repeats the keys, already expanded to "
                          "every head, num_attention_heads // num_key_value_heads times).")
    data = dict(f.data, first_k_dense_replace=layers, num_hidden_layers=layers, hidden_size=d_model,
                num_attention_heads=n_heads,
                kv_lora_rank=f.get("kv_lora_rank", 256),
                q_lora_rank=f.nullable("q_lora_rank", 768),
                qk_nope_head_dim=f.get("qk_nope_head_dim", 64),
                qk_rope_head_dim=f.get("qk_rope_head_dim", 32),
                v_head_dim=f.get("v_head_dim", None) or d_model // n_heads)
    defaults = dict(vocab_size=73448, intermediate_size=6400)
    data.update({key: value for key, value in defaults.items() if data.get(key) is None})
    cfg = llama.read(Fields(data, f.source), name, "deepseek_v2",
                     dict(max_position_embeddings=32768, hidden_act="silu", tie_word_embeddings=True,
                          num_key_value_heads=n_heads))
    residual = (layers ** 0.5 if depth is None else depth) / layers ** 0.5
    return cfg.replace(family="minicpm3", embedding_multiplier=float(scale_emb),
                       residual_multiplier=residual, scale_lm_head_input=True)


def _nanochat(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """nanochat (NanoChatForCausalLM): Llama's attention (attention_bias on q, k, v and o) with a
    weightless fp32 RMSNorm (Llama 4's L2 norm) on each query and key head after RoPE, the same
    weightless norm before each sublayer, after the embeddings and at the end, an MLP without a
    gate or biases (fc1 -> relu2 -> fc2), and Gemma 2's final_logit_softcapping (15 by default)
    on an untied head."""
    act = f.get("hidden_act", "relu2", str)
    acts = {"relu2": "relu2", "relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for nanochat.")
    data = dict(f.data, hidden_act="silu", mlp_bias=False)
    defaults = dict(vocab_size=50304, hidden_size=768, intermediate_size=8192,
                    num_attention_heads=6, num_hidden_layers=12)
    data.update({key: value for key, value in defaults.items() if data.get(key) is None})
    base = llama.read(Fields(data, f.source), name, "llama",
                      dict(max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False))
    cap = f.nullable("final_logit_softcapping", 15.0, float)
    if cap is not None and not 0 < cap < float("inf"):
        raise ConfigError(f"{f.source}: final_logit_softcapping must be a positive number or null, "
                          f"got {show(cap)}.")
    return base.replace(family="nanochat", activation=acts[act], norm_affine=False,
                        qk_l2_norm=True, embedding_norm=True,
                        logit_softcap=None if cap is None else float(cap))


def _persimmon(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Persimmon (PersimmonForCausalLM; Fuyu's language model): LayerNorms, one fused
    query_key_value with a bias (heads interleaved q, k, v), a LayerNorm with weight and bias on
    each query and key head before RoPE (qk_layernorm, True by default), RoPE on
    partial_rotary_factor (0.5) of each head through a torch.cat, an MLP dense_h_to_4h -> relu2
    -> dense_4h_to_h with biases, an untied head without a bias. A nonzero hidden_dropout (after
    each sublayer only) is refused."""
    n_layers = f.get("num_hidden_layers", 36)
    check_int(f.source, "num_hidden_layers", n_layers, maximum=MAX_LAYERS)
    d_model = f.get("hidden_size", 4096)
    n_heads = f.get("num_attention_heads", 64, minimum=1)
    head_dim = head_width(f, d_model, n_heads, "num_attention_heads")
    act = f.get("hidden_act", "relu2", str)
    acts = {"relu2": "relu2", "relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for persimmon.")
    if f.get("hidden_dropout", 0.0, float):
        raise ConfigError(f"{f.source}: hidden_dropout (Persimmon's dropout after each sublayer, "
                          "none after the embeddings) is not modelled; the released models have 0.")
    rotary = int(head_dim * rotary_fraction(f, "partial_rotary_factor", 0.5))
    if rotary < 2 or rotary % 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions per "
                          "head; an even number of at least 2 is modelled.")
    return ModelConfig(
        name=name, family="persimmon", vocab_size=f.get("vocab_size", 262144), d_model=d_model,
        n_heads=n_heads, d_ff=f.get("intermediate_size", 16384), n_decoder_layers=n_layers,
        max_positions=f.get("max_position_embeddings", 16384), position="rope",
        rotary_dim=None if rotary == head_dim else rotary, norm="layernorm", norm_position="pre",
        activation=acts[act], qkv_bias=True, out_bias=True, ffn_bias=True, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        qk_norm=f.get("qk_layernorm", True, bool), dropout=0.0,
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


#: model_type -> its reader (hf.py passes its LlamaReader).
DENSE_EXTRA_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "nemotron": _nemotron, "vaultgemma": _vaultgemma, "ministral3": _ministral3, "jais2": _jais2,
    "hyperclovax": _hyperclovax, "codegen": _codegen, "biogpt": _biogpt,
    "minicpm3": _minicpm3, "nanochat": _nanochat, "persimmon": _persimmon,
}

#: The transformers class of each, for a config.json that names `architectures` only.
DENSE_EXTRA_ARCHITECTURES: dict[str, str] = {
    "NemotronForCausalLM": "nemotron", "VaultGemmaForCausalLM": "vaultgemma",
    "Ministral3ForCausalLM": "ministral3", "Jais2ForCausalLM": "jais2",
    "HyperCLOVAXForCausalLM": "hyperclovax", "CodeGenForCausalLM": "codegen",
    "BioGptForCausalLM": "biogpt", "MiniCPM3ForCausalLM": "minicpm3",
    "NanoChatForCausalLM": "nanochat", "PersimmonForCausalLM": "persimmon",
}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
DENSE_EXTRA_NAMES: dict[str, dict[str, Any]] = {
    **{family: LLAMA_NAMES for family in DENSE_EXTRA_BUILDERS},
    "codegen": {"n_heads": "n_head", "d_model": "n_embd", "d_ff": "n_inner", "n_decoder_layers": "n_layer",
                "max_positions": "n_positions"}}
