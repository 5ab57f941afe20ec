"""config.json readers of the families whose layers are not Llama's: GPT-NeoX, Falcon, OPT, BLOOM,
GPT-2, BERT and T5 (costmodel/hf.py reads the Llama-like ones and dispatches on model_type).
Defaults are those of transformers 5.24's configuration classes."""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .hf_fields import Fields, head_width, rotary_fraction


def _gpt_neox(f: Fields, name: str) -> ModelConfig:
    """GPT-NeoX (Pythia): fused query_key_value with attention_bias, a GELU MLP with biases,
    LayerNorms, RoPE on rotary_pct of each head (0.25 by default), parallel residual by default."""
    d_model = f.get("hidden_size", 6144)
    n_heads = f.get("num_attention_heads", 64)
    act = f.get("hidden_act", "gelu", str)
    acts = {"gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for gpt_neox.")
    d_head = head_width(f, d_model, n_heads, "num_attention_heads")
    rotary = int(d_head * rotary_fraction(f, "rotary_pct", 0.25))
    if rotary < 2:
        raise ConfigError(f"{f.source}: rotary_pct leaves {rotary} rotary dimensions per head.")
    bias = f.get("attention_bias", True, bool)
    hidden_dropout = float(f.get("hidden_dropout", 0.0, float))
    return ModelConfig(
        name=name, family="gpt_neox", vocab_size=f.get("vocab_size", 50432), d_model=d_model,
        n_heads=n_heads, d_ff=f.get("intermediate_size", 24576),
        n_decoder_layers=f.get("num_hidden_layers", 44),
        max_positions=f.get("max_position_embeddings", 2048), position="rope",
        rotary_dim=None if rotary == d_head else rotary, norm="layernorm", norm_position="pre",
        activation=acts[act], qkv_bias=bias, out_bias=bias, ffn_bias=True, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        parallel_attention=f.get("use_parallel_residual", True, bool),
        dropout=hidden_dropout,
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


def _falcon(f: Fields, name: str) -> ModelConfig:
    """Falcon: the 7B layout (multi_query: one K/V head, one LayerNorm feeding attention and MLP
    in parallel), the new layout (new_decoder_architecture: num_kv_heads K/V heads, which the
    cache holds broadcast to every query head; num_ln_in_parallel_attn LayerNorms, 2 by default)
    or Falcon-RW's (alibi: multi-head attention, sequential by parallel_attn false); RoPE
    otherwise, fused query_key_value, a GELU MLP of ffn_hidden_size, biases per `bias`."""
    d_model = f.get("n_embed", f.get("hidden_size", 4544))  # n_embed: FalconConfig's legacy name
    n_heads = f.get("num_attention_heads", 71, minimum=1)
    head_width(f, d_model, n_heads, "num_attention_heads")
    act = f.get("activation", "gelu", str)
    if act not in ("gelu", "relu"):
        raise ConfigError(f"{f.source}: unsupported activation {show(act)} for falcon.")
    new = f.get("new_decoder_architecture", False, bool)
    parallel = f.get("parallel_attn", True, bool)
    bias = f.get("bias", False, bool)
    alibi = f.get("alibi", False, bool)
    if alibi:  # Falcon-RW: the old layout's multi-head attention with ALiBi
        if new or f.get("multi_query", True, bool):
            raise ConfigError(f"{f.source}: Falcon's ALiBi is modelled in the old multi-head layout "
                              "(Falcon-RW: multi_query and new_decoder_architecture false).")
        if f.get("attention_dropout", 0.0, float) > 0 or f.get("hidden_dropout", 0.0, float) > 0:
            raise ConfigError(f"{f.source}: dropout in Falcon's ALiBi layout is not modelled.")
        layout = dict(family="falcon_rw", n_kv_heads=n_heads, parallel_attention=parallel,
                      parallel_norms=1 if parallel else 2, position="alibi")
    elif new:
        n_kv = f.get("num_kv_heads", n_heads)
        norms = f.get("num_ln_in_parallel_attn", 2)
        if norms not in (1, 2) or (norms == 1 and not parallel):
            raise ConfigError(f"{f.source}: num_ln_in_parallel_attn {norms} with parallel_attn "
                              f"{parallel} is not a layout transformers runs.")
        layout = dict(family="falcon_new", n_kv_heads=n_kv, parallel_attention=True,
                      parallel_norms=norms)
    else:
        if not f.get("multi_query", True, bool):
            raise ConfigError(f"{f.source}: Falcon's old layout without multi_query is not "
                              "modelled; the multi-query (Falcon-7B) and new layouts are.")
        if not parallel and f.get("attention_dropout", 0.0, float) > 0:
            raise ConfigError(f"{f.source}: Falcon's sequential layout drops the attention output "
                              "out with attention_dropout, which is not modelled.")
        layout = dict(family="falcon", n_kv_heads=1, parallel_attention=parallel,
                      parallel_norms=1 if parallel else 2)
    return ModelConfig(
        name=name, vocab_size=f.get("vocab_size", 65024), d_model=d_model, n_heads=n_heads,
        d_ff=f.get("ffn_hidden_size", 4 * d_model), n_decoder_layers=f.get("num_hidden_layers", 32),
        max_positions=f.get("max_position_embeddings", 2048), norm="layernorm",
        norm_position="pre", activation=act, qkv_bias=bias, out_bias=bias, ffn_bias=bias,
        head="lm", tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("hidden_dropout", 0.0, float)),
        attention_dropout=0.0,  # the rotary path applies no dropout to the probabilities
        **{"position": "rope", **layout},
    )


def _opt(f: Fields, name: str) -> ModelConfig:
    """OPT: learned positions looked up at position + 2, ReLU MLP of ffn_dim, biases
    (enable_bias), LayerNorms before (do_layer_norm_before, >= 1.3b, with a final one) or after
    (350m) each sublayer, embeddings of word_embed_proj_dim projected in and out when it differs
    from hidden_size, a head tied to them; dropout after each sublayer."""
    d_model = f.get("hidden_size", 768)
    act = f.get("activation_function", "relu", str)
    acts = {"relu": "relu", "gelu": "gelu"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for opt.")
    if not f.get("layer_norm_elementwise_affine", True, bool):
        raise ConfigError(f"{f.source}: LayerNorms without weights are not modelled for opt.")
    pre = f.get("do_layer_norm_before", True, bool)
    if pre and f.get("_remove_final_layer_norm", False, bool):
        raise ConfigError(f"{f.source}: _remove_final_layer_norm is not modelled for opt.")
    width = f.get("word_embed_proj_dim", d_model)
    bias = f.get("enable_bias", True, bool)
    return ModelConfig(
        name=name, family="opt", vocab_size=f.get("vocab_size", 50272), d_model=d_model,
        n_heads=f.get("num_attention_heads", 12), d_ff=f.get("ffn_dim", 3072),
        n_decoder_layers=f.get("num_hidden_layers", 12),
        max_positions=f.get("max_position_embeddings", 2048), position="learned",
        position_offset=2, embedding_dim=None if width == d_model else width, norm="layernorm",
        norm_position="pre" if pre else "post", activation=acts[act], qkv_bias=bias,
        out_bias=bias, ffn_bias=bias, head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("dropout", 0.1, float)),
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


def _bloom(f: Fields, name: str) -> ModelConfig:
    """BLOOM: ALiBi, a LayerNorm after the embeddings, fused query_key_value, an MLP of 4d with
    the tanh GELU, biases everywhere, tied head."""
    # A legacy n_embed overrides hidden_size (BloomConfig.__post_init__), and the attribute-mapped
    # names num_attention_heads / num_hidden_layers override n_head / n_layer (they are set last).
    d_model = f.get("n_embed", f.get("hidden_size", 64))
    n_heads = f.get("num_attention_heads", f.get("n_head", 8, minimum=1), minimum=1)
    head_width(f, d_model, n_heads, "n_head")
    if f.get("apply_residual_connection_post_layernorm", False, bool):
        raise ConfigError(f"{f.source}: apply_residual_connection_post_layernorm is not modelled "
                          "for bloom.")
    return ModelConfig(
        name=name, family="bloom", vocab_size=f.get("vocab_size", 250880), d_model=d_model,
        n_heads=n_heads, d_ff=4 * d_model, n_decoder_layers=f.get("num_hidden_layers", f.get("n_layer", 2)),
        max_positions=f.get("seq_length", 2048),  # ALiBi has no table: only the context warned of
        position="alibi", norm="layernorm", norm_position="pre", embedding_norm=True,
        activation="gelu_tanh", head="lm", tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(f.get("hidden_dropout", 0.0, float)),
        attention_dropout=float(f.get("attention_dropout", 0.0, float)),
    )


def _gpt2(f: Fields, name: str) -> ModelConfig:
    """GPT-2. transformers 5.24's GPT2Attention folds scale_attn_weights (1/sqrt(d_head)) and
    scale_attn_by_inverse_layer_idx (1/(layer_idx + 1)) into one float, `scaling`, that eager
    attention multiplies the scores by once and sdpa takes as its scale: either setting leaves the
    ops, FLOPs and saved bytes as they are (tests/test_gpt2_attention_options.py measures it), so
    both are read (typed) and change nothing. reorder_and_upcast_attn (upcast_attention) runs eager
    attention as an fp32 baddbmm (fp32 copies of q and k, fp32 probabilities saved, the scale in
    its alpha), which the tree does not hold: refused under hf eager (leaves.py); sdpa ignores it."""
    d_model = f.get("n_embd", 768)
    f.get("scale_attn_weights", True, bool)
    f.get("scale_attn_by_inverse_layer_idx", False, bool)
    act = f.get("activation_function", "gelu_new", str)
    acts = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported activation_function {show(act)} for gpt2.")
    return ModelConfig(
        name=name,
        family="gpt2",
        vocab_size=f.get("vocab_size", 50257),
        d_model=d_model,
        n_heads=f.get("n_head", 12),
        d_ff=f.get("n_inner", 4 * d_model),
        n_decoder_layers=f.get("n_layer", 12),
        max_positions=f.get("n_positions", 1024),
        position="learned",
        norm="layernorm",
        norm_position="pre",
        activation=acts[act],
        head="lm",
        tie_embeddings=f.get("tie_word_embeddings", True, bool),
        dropout=float(max(f.get(k, 0.1, float) for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop"))),
        upcast_attention=f.get("reorder_and_upcast_attn", False, bool),
    )


def _bert(f: Fields, name: str) -> ModelConfig:
    act = f.get("hidden_act", "gelu", str)
    acts = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh"}
    if act not in acts:
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for bert.")
    position = f.get("position_embedding_type", "absolute", str)
    if position != "absolute":
        raise ConfigError(f"{f.source}: unsupported position_embedding_type {show(position)} for bert.")
    return ModelConfig(
        name=name,
        family="bert",
        vocab_size=f.get("vocab_size", 30522),
        d_model=f.get("hidden_size", 768),
        n_heads=f.get("num_attention_heads", 12),
        d_ff=f.get("intermediate_size", 3072),
        n_encoder_layers=f.get("num_hidden_layers", 12),
        max_positions=f.get("max_position_embeddings", 512),
        position="learned",
        norm="layernorm",
        norm_position="post",
        embedding_norm=True,
        activation=acts[act],
        head="pooler",
        tie_embeddings=False,
        token_types=f.get("type_vocab_size", 2),
        dropout=float(
            max(f.get(k, 0.1, float) for k in ("hidden_dropout_prob", "attention_probs_dropout_prob"))
        ),
    )


def _t5(f: Fields, name: str) -> ModelConfig:
    proj = f.get("feed_forward_proj", "relu", str)
    acts = {"relu": "relu", "gated-gelu": "geglu_tanh", "gelu": "gelu", "gated-relu": None}
    if acts.get(proj) is None:
        raise ConfigError(f"{f.source}: unsupported feed_forward_proj {show(proj)} for t5.")
    n_layers = f.get("num_layers", 6)
    # transformers 5 ties T5's output projection to the shared table whatever tie_word_embeddings
    # says; the flag only switches the d**-0.5 scaling of the decoder output off.
    scale_output = f.get("tie_word_embeddings", True, bool)
    return ModelConfig(
        name=name,
        family="t5",
        vocab_size=f.get("vocab_size", 32128),
        d_model=f.get("d_model", 512),
        n_heads=f.get("num_heads", 8),
        d_head=f.get("d_kv", 64),
        d_ff=f.get("d_ff", 2048),
        n_encoder_layers=n_layers,
        n_decoder_layers=f.get("num_decoder_layers", n_layers),
        max_positions=f.get("n_positions", 512),
        position="relative",
        relative_buckets=f.get("relative_attention_num_buckets", 32),
        norm="rmsnorm",
        norm_position="pre",
        activation=acts[proj],
        qkv_bias=False,
        out_bias=False,
        ffn_bias=False,
        head="lm",
        tie_embeddings=True,
        share_embeddings=True,
        scale_lm_head_input=scale_output,
        attention_scale=1.0,  # T5 folds 1/sqrt(d_kv) into its initialisation
        dropout=float(f.get("dropout_rate", 0.1, float)),
    )


#: model_type -> its reader.
CLASSIC_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    "gpt_neox": _gpt_neox, "falcon": _falcon, "opt": _opt, "bloom": _bloom,
    "gpt2": _gpt2, "bert": _bert, "t5": _t5,
}
