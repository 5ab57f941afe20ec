"""A Hugging Face config.json (as a dict) -> ModelConfig, for llama, mistral, qwen2, gpt2, bert, t5.

Read as plain JSON: no transformers import, no network, no code from the file. The ModelConfig
describes the class a user trains: *ForCausalLM for decoders, BertModel (with pooler) for BERT,
T5ForConditionalGeneration for T5. Defaults are those of transformers' configuration classes.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "gpt2", "bert", "t5")


class _Fields:
    """Typed access to a config dict; a missing or mistyped field is a one-line ConfigError."""

    def __init__(self, data: dict[str, Any], source: str):
        self.data = data
        self.source = source

    def get(self, key: str, default: Any = ..., kind: type | tuple[type, ...] = int) -> Any:
        if key not in self.data or self.data[key] is None:
            if default is ...:
                raise ConfigError(f"{self.source}: missing field {key!r}.")
            return default
        value = self.data[key]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{self.source}: field {key!r} must be an integer, got {show(value)}.")
        if kind is bool and not isinstance(value, bool):
            raise ConfigError(f"{self.source}: field {key!r} must be true or false, got {show(value)}.")
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ConfigError(f"{self.source}: field {key!r} must be a number, got {show(value)}.")
        if kind is str and not isinstance(value, str):
            raise ConfigError(f"{self.source}: field {key!r} must be a string, got {show(value)}.")
        return value


def _llama_like(f: _Fields, name: str, family: str) -> ModelConfig:
    n_heads = f.get("num_attention_heads")
    d_model = f.get("hidden_size")
    head_dim = f.get("head_dim", None)
    act = f.get("hidden_act", "silu", str)
    if act not in ("silu", "swish", "gelu", "gelu_pytorch_tanh"):
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {family}.")
    # Llama reads attention_bias (all four projections) and mlp_bias; Mistral has no biases;
    # Qwen2 has biases on q/k/v only, fixed in its code.
    if family == "llama":
        qkv_bias = out_bias = f.get("attention_bias", False, bool)
        ffn_bias = f.get("mlp_bias", False, bool)
    else:
        qkv_bias, out_bias, ffn_bias = family == "qwen2", False, False
    # Mistral attends within sliding_window when it is set; Qwen2 only with use_sliding_window.
    window = f.get("sliding_window", None)
    if family == "qwen2" and not f.get("use_sliding_window", False, bool):
        window = None
    return ModelConfig(
        name=name,
        family=family,
        vocab_size=f.get("vocab_size"),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=f.get("num_key_value_heads", n_heads),
        d_head=head_dim,
        d_ff=f.get("intermediate_size"),
        n_decoder_layers=f.get("num_hidden_layers"),
        max_positions=f.get("max_position_embeddings", 2048),
        position="rope",
        norm="rmsnorm",
        norm_position="pre",
        activation={"silu": "swiglu", "swish": "swiglu", "gelu": "geglu"}.get(act, "geglu_tanh"),
        qkv_bias=qkv_bias,
        out_bias=out_bias,
        ffn_bias=ffn_bias,
        lm_head_bias=False,
        head="lm",
        tie_embeddings=f.get("tie_word_embeddings", False, bool),
        dropout=float(f.get("attention_dropout", 0.0, float)),
        sliding_window=window,
    )


def _gpt2(f: _Fields, name: str) -> ModelConfig:
    d_model = f.get("n_embd", 768)
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
    )


def _bert(f: _Fields, name: str) -> ModelConfig:
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


def _t5(f: _Fields, name: str) -> ModelConfig:
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


_BUILDERS: dict[str, Callable[[_Fields, str], ModelConfig]] = {
    "llama": lambda f, name: _llama_like(f, name, "llama"),
    "mistral": lambda f, name: _llama_like(f, name, "mistral"),
    "qwen2": lambda f, name: _llama_like(f, name, "qwen2"),
    "gpt2": _gpt2,
    "bert": _bert,
    "t5": _t5,
}


def from_hf_config(data: Any, name: str, source: str = "config.json") -> ModelConfig:
    """Translate a parsed Hugging Face config.json into a ModelConfig."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}.")
    model_type = data.get("model_type")
    if model_type is None:
        raise ConfigError(f"{source}: missing field 'model_type'.")
    if not isinstance(model_type, str) or model_type not in _BUILDERS:
        raise ConfigError(
            f"{source}: unsupported model_type {show(model_type)}; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}."
        )
    return _BUILDERS[model_type](_Fields(data, source), name)
