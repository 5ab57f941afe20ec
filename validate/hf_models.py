"""Hugging Face models built from a ModelConfig, with no weights downloaded.

hf_config() is the inverse of costmodel.hf.from_hf_config: it returns the transformers config object
whose config.json reads back as the same ModelConfig. build_hf_model() instantiates the class a user
trains (LlamaForCausalLM, GPT2LMHeadModel, BertModel with its pooler, T5ForConditionalGeneration...),
randomly initialised. Full-size models are built and run without memory inside fake_mode(); the dtype
is chosen with default_dtype() because `.to(dtype)` fails under FakeTensorMode. make_inputs() gives
deterministic forward kwargs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from costmodel.config import ModelConfig

HF_FAMILIES = ("llama", "mistral", "qwen2", "gpt2", "bert", "t5")
ATTN_IMPLEMENTATIONS = ("eager", "sdpa")

# ModelConfig.activation -> the activation string of each family's config.
_LLAMA_ACTS = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_pytorch_tanh"}
_GPT2_ACTS = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}
_BERT_ACTS = {"gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_new"}
_T5_ACTS = {"relu": "relu", "geglu_tanh": "gated-gelu", "gelu": "gelu"}


def _require(cfg: ModelConfig, condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(f"model {cfg.name!r}: Hugging Face {cfg.family} cannot build {what}.")


def _check_common(cfg: ModelConfig, position: str, norm: str, norm_position: str,
                  attention_scale: float | None = None) -> None:
    """What every family's class fixes: positions, norms, no embedding or head scaling, and the
    attention scale (None: 1/sqrt(d_head); T5: 1.0, unscaled)."""
    _require(cfg, cfg.position == position, f"position {cfg.position!r} (it uses {position!r})")
    _require(cfg, cfg.norm == norm, f"norm {cfg.norm!r} (it uses {norm!r})")
    _require(
        cfg, cfg.norm_position == norm_position,
        f"{cfg.norm_position}-norm layers (it uses {norm_position}-norm)",
    )
    _require(cfg, not cfg.scale_embeddings, "scaled embeddings")
    _require(cfg, not cfg.lm_head_bias, "a bias on the output projection")
    _require(cfg, cfg.attention_scale == attention_scale,
             f"attention_scale {cfg.attention_scale!r} (it uses {attention_scale!r})")


def _classic_linears(cfg: ModelConfig) -> None:
    """GPT-2 and BERT: every linear has a bias, h heads of d/h for queries, keys and values."""
    _require(cfg, cfg.qkv_bias and cfg.out_bias and cfg.ffn_bias, "linears without biases")
    _require(cfg, cfg.n_kv_heads == cfg.n_heads, "grouped-query attention")
    _require(cfg, cfg.d_head * cfg.n_heads == cfg.d_model, "a head dimension other than d/h")


def _decoder_only(cfg: ModelConfig) -> None:
    _require(cfg, cfg.n_encoder_layers == 0, "encoder layers (it is decoder-only)")
    _require(cfg, not cfg.scale_lm_head_input, "a scaled input to the output projection")
    _require(cfg, cfg.head == "lm", f"head {cfg.head!r} (its class has an lm head)")
    _require(cfg, cfg.token_types == 0, "token-type embeddings")
    _require(cfg, not cfg.embedding_norm, "a norm after the embeddings")


def _llama_like(cfg: ModelConfig, attn: str) -> Any:
    from transformers import LlamaConfig, MistralConfig, Qwen2Config

    _check_common(cfg, "rope", "rmsnorm", "pre")
    _decoder_only(cfg)
    _require(cfg, cfg.activation in _LLAMA_ACTS, f"activation {cfg.activation!r} (gated only)")
    common = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_decoder_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.d_head,
        hidden_act=_LLAMA_ACTS[cfg.activation],
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=cfg.tie_embeddings,
        attention_dropout=cfg.dropout,
        attn_implementation=attn,
    )
    _require(cfg, cfg.d_model % cfg.n_heads == 0, "d_model not divisible by n_heads (its check)")
    if cfg.family == "llama":
        _require(cfg, cfg.sliding_window is None, "a sliding window")
        _require(cfg, cfg.qkv_bias == cfg.out_bias, "different q/k/v and output-projection biases")
        return LlamaConfig(**common, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias)
    if cfg.family == "mistral":
        _require(cfg, not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias), "biases")
        # The window reads back as the config's; the cost tree counts full attention (windows are
        # not modelled yet), equal to the model's up to the window.
        return MistralConfig(**common, sliding_window=cfg.sliding_window)
    _require(
        cfg, cfg.qkv_bias and not cfg.out_bias and not cfg.ffn_bias,
        "biases other than on q/k/v (fixed in its code)",
    )
    window = dict(use_sliding_window=True, sliding_window=cfg.sliding_window) if cfg.sliding_window else {}
    return Qwen2Config(**common, **window)


def _gpt2(cfg: ModelConfig, attn: str) -> Any:
    from transformers import GPT2Config

    _check_common(cfg, "learned", "layernorm", "pre")
    _decoder_only(cfg)
    _require(cfg, cfg.activation in _GPT2_ACTS, f"activation {cfg.activation!r}")
    _classic_linears(cfg)
    return GPT2Config(
        vocab_size=cfg.vocab_size,
        n_positions=cfg.max_positions,
        n_embd=cfg.d_model,
        n_layer=cfg.n_decoder_layers,
        n_head=cfg.n_heads,
        n_inner=cfg.d_ff,
        activation_function=_GPT2_ACTS[cfg.activation],
        resid_pdrop=cfg.dropout,
        embd_pdrop=cfg.dropout,
        attn_pdrop=cfg.dropout,
        tie_word_embeddings=cfg.tie_embeddings,
        attn_implementation=attn,
    )


def _bert(cfg: ModelConfig, attn: str) -> Any:
    from transformers import BertConfig

    _check_common(cfg, "learned", "layernorm", "post")
    _require(cfg, cfg.n_decoder_layers == 0, "decoder layers (BertModel is an encoder)")
    _require(cfg, cfg.head == "pooler", f"head {cfg.head!r} (BertModel has the pooler)")
    _require(cfg, cfg.embedding_norm, "embeddings without their LayerNorm")
    _require(cfg, not cfg.tie_embeddings, "tied embeddings (BertModel has no output projection)")
    _require(cfg, cfg.token_types >= 1, "zero token types (it always has a token-type embedding)")
    _require(cfg, cfg.activation in _BERT_ACTS, f"activation {cfg.activation!r}")
    _classic_linears(cfg)
    return BertConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_encoder_layers,
        num_attention_heads=cfg.n_heads,
        intermediate_size=cfg.d_ff,
        hidden_act=_BERT_ACTS[cfg.activation],
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.dropout,
        max_position_embeddings=cfg.max_positions,
        type_vocab_size=cfg.token_types,
        attn_implementation=attn,
    )


def _t5(cfg: ModelConfig, attn: str) -> Any:
    from transformers import T5Config

    _check_common(cfg, "relative", "rmsnorm", "pre", attention_scale=1.0)
    _require(cfg, cfg.n_encoder_layers > 0 and cfg.n_decoder_layers > 0, "a single stack")
    _require(cfg, cfg.head == "lm", f"head {cfg.head!r}")
    _require(cfg, cfg.activation in _T5_ACTS, f"activation {cfg.activation!r}")
    _require(cfg, not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias), "biases")
    _require(cfg, cfg.n_kv_heads == cfg.n_heads, "grouped-query attention")
    _require(cfg, cfg.tie_embeddings, "an untied lm head (transformers 5 always ties T5's)")
    _require(cfg, cfg.share_embeddings, "separate source and target embeddings")
    _require(cfg, cfg.token_types == 0 and not cfg.embedding_norm, "BERT-style embeddings")
    return T5Config(
        vocab_size=cfg.vocab_size,
        d_model=cfg.d_model,
        d_kv=cfg.d_head,
        d_ff=cfg.d_ff,
        num_layers=cfg.n_encoder_layers,
        num_decoder_layers=cfg.n_decoder_layers,
        num_heads=cfg.n_heads,
        relative_attention_num_buckets=cfg.relative_buckets,
        dropout_rate=cfg.dropout,
        feed_forward_proj=_T5_ACTS[cfg.activation],
        n_positions=cfg.max_positions,
        tie_word_embeddings=cfg.scale_lm_head_input,  # tied whatever it says; it switches the scale
        attn_implementation=attn,
    )


_CONFIGS = {
    "llama": _llama_like, "mistral": _llama_like, "qwen2": _llama_like,
    "gpt2": _gpt2, "bert": _bert, "t5": _t5,
}


def hf_config(cfg: ModelConfig, attn_implementation: str = "eager") -> Any:
    """The transformers config object that reads back (costmodel.hf) as this ModelConfig."""
    if cfg.family not in _CONFIGS:
        raise ValueError(
            f"model {cfg.name!r}: family {cfg.family!r} has no Hugging Face class here; "
            f"supported: {', '.join(HF_FAMILIES)}."
        )
    if attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise ValueError(
            f"attn_implementation must be one of {', '.join(ATTN_IMPLEMENTATIONS)}; "
            f"got {attn_implementation!r}."
        )
    return _CONFIGS[cfg.family](cfg, attn_implementation)


def build_hf_model(
    cfg: ModelConfig, attn_implementation: str = "eager", dtype: torch.dtype | None = None
) -> torch.nn.Module:
    """The randomly initialised class a user trains, built from cfg (in train mode).

    dtype, if given, is set as the default dtype while building (works under fake_mode()).
    """
    import transformers as tr

    config = hf_config(cfg, attn_implementation)
    classes = {
        "llama": tr.LlamaForCausalLM, "mistral": tr.MistralForCausalLM,
        "qwen2": tr.Qwen2ForCausalLM, "gpt2": tr.GPT2LMHeadModel,
        "t5": tr.T5ForConditionalGeneration,
    }
    with default_dtype(dtype):
        if cfg.family == "bert":
            model = tr.BertModel(config, add_pooling_layer=True)
        else:
            model = classes[cfg.family](config)
    return model.train()


@contextlib.contextmanager
def fake_mode() -> Iterator[FakeTensorMode]:
    """Run the body under FakeTensorMode: shapes and dtypes without memory or compute."""
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        yield mode


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype | None) -> Iterator[None]:
    """Set torch's default dtype for the body (None: leave it) and restore it afterwards."""
    previous = torch.get_default_dtype()
    if dtype is not None:
        torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _tokens(batch: int, length: int, vocab: int, offset: int) -> torch.Tensor:
    """A fixed (batch, length) int64 token pattern that spreads over the vocabulary."""
    index = torch.arange(batch * length, dtype=torch.long).reshape(batch, length)
    return (index * 7919 + offset) % vocab


def make_inputs(
    cfg: ModelConfig, batch: int, seq_len: int, tgt_len: int | None = None, labels: bool = False
) -> dict[str, torch.Tensor]:
    """Deterministic forward kwargs for build_hf_model(cfg): ids, token types, decoder ids, labels.

    seq_len is the decoder length for decoders and the encoder length for T5, whose decoder gets
    tgt_len tokens (default seq_len). labels=True adds the labels each class's own loss reads
    (BertModel has none). No attention_mask: every token is real, so the models build their
    own causal or empty masks.
    """
    if cfg.family not in HF_FAMILIES:
        raise ValueError(f"model {cfg.name!r}: family {cfg.family!r} has no Hugging Face class here.")
    inputs = {"input_ids": _tokens(batch, seq_len, cfg.vocab_size, 3)}
    if cfg.family == "bert":
        inputs["token_type_ids"] = (
            torch.arange(seq_len, dtype=torch.long).expand(batch, seq_len) * 2 // seq_len
        ) % cfg.token_types
    elif cfg.family == "t5":
        tgt = seq_len if tgt_len is None else tgt_len
        inputs["decoder_input_ids"] = _tokens(batch, tgt, cfg.vocab_size, 5)
        if labels:
            inputs["labels"] = _tokens(batch, tgt, cfg.vocab_size, 11)
    elif labels:
        inputs["labels"] = inputs["input_ids"].clone()
    return inputs
