"""Hugging Face models built from a ModelConfig, with no weights downloaded.

hf_config() is the inverse of costmodel.hf.from_hf_config: it returns the transformers config object
whose config.json reads back as the same ModelConfig. build_hf_model() instantiates the class a user
trains (LlamaForCausalLM, GPT2LMHeadModel, BertModel with its pooler, T5ForConditionalGeneration...),
randomly initialised. Full-size models are built and run without memory inside fake_mode(); the dtype
is chosen with default_dtype() because `.to(dtype)` fails under FakeTensorMode. make_inputs() gives
deterministic forward kwargs. The newer families' configs come from a config.json dict
(validate/hf_config_dict.py's config_dict).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from costmodel.config import ModelConfig

from .hf_classic_more import CLASSIC_MORE_DICTS
from .hf_config_dict import LLAMA_ACTS, config_dict, qwen_window, require
from .hf_dense_extra import DENSE_EXTRA_DICTS
from .hf_llama_variants import LLAMA_VARIANT_DICTS
from .hf_moe_extra import MOE_EXTRA_DICTS
from .hf_extra_dicts import NEWER_DICTS
from .torch_modes import default_dtype, fake_mode  # noqa: F401 (fake_mode: re-exported)

#: costmodel/hf_llama_variants.py's and hf_moe_extra.py's families (their config.json: validate/'s modules).
LLAMA_VARIANT_FAMILIES, MOE_EXTRA_FAMILIES = tuple(LLAMA_VARIANT_DICTS), tuple(MOE_EXTRA_DICTS)

#: Families built through a config.json dict (validate/hf_config_dict.py's config_dict) and AutoModelForCausalLM.
DICT_FAMILIES = ("qwen3", "gemma", "gemma2", "phi3", "gpt_neox", "falcon", "falcon_new",
                 "falcon_rw", "opt", "bloom", "mixtral", "qwen2_moe", "deepseek_v3", "ministral",
                 "gemma3_text", "qwen3_moe", "deepseek_v2", "cwm", "starcoder2", "phi", "granite", "smollm3",
                 "olmo2", "gpt_oss", "llama4_text", "glm4_moe_lite", "axk1", "deepseek_v32", *LLAMA_VARIANT_FAMILIES,
                 *CLASSIC_MORE_DICTS, *MOE_EXTRA_FAMILIES, *DENSE_EXTRA_DICTS, "glm_moe_dsa",
                 *NEWER_DICTS)
HF_FAMILIES = ("llama", "mistral", "qwen2", "gpt2", "bert", "t5", *DICT_FAMILIES)
ATTN_IMPLEMENTATIONS = ("eager", "sdpa")

# ModelConfig.activation -> the activation string of each family's config (Llama's: LLAMA_ACTS).
_GPT2_ACTS = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}
_BERT_ACTS = {"gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_new"}
_T5_ACTS = {"relu": "relu", "geglu_tanh": "gated-gelu", "gelu": "gelu"}


def _check_common(cfg: ModelConfig, position: str, norm: str, norm_position: str,
                  attention_scale: float | None = None) -> None:
    """What every family's class fixes: positions, norms, no embedding or head scaling, and the
    attention scale (None: 1/sqrt(d_head); T5: 1.0, unscaled)."""
    require(cfg, cfg.position == position, f"position {cfg.position!r} (it uses {position!r})")
    require(cfg, cfg.norm == norm, f"norm {cfg.norm!r} (it uses {norm!r})")
    require(
        cfg, cfg.norm_position == norm_position,
        f"{cfg.norm_position}-norm layers (it uses {norm_position}-norm)",
    )
    require(cfg, not cfg.scale_embeddings, "scaled embeddings")
    require(cfg, cfg.norm_bias, "LayerNorms without biases")
    require(cfg, not cfg.lm_head_bias, "a bias on the output projection")
    require(cfg, cfg.attention_scale == attention_scale,
             f"attention_scale {cfg.attention_scale!r} (it uses {attention_scale!r})")


def _classic_linears(cfg: ModelConfig) -> None:
    """GPT-2 and BERT: every linear has a bias, h heads of d/h for queries, keys and values."""
    require(cfg, cfg.qkv_bias and cfg.out_bias and cfg.ffn_bias, "linears without biases")
    require(cfg, cfg.n_kv_heads == cfg.n_heads, "grouped-query attention")
    require(cfg, cfg.d_head * cfg.n_heads == cfg.d_model, "a head dimension other than d/h")


def _decoder_only(cfg: ModelConfig) -> None:
    require(cfg, cfg.n_encoder_layers == 0, "encoder layers (it is decoder-only)")
    require(cfg, not cfg.scale_lm_head_input, "a scaled input to the output projection")
    require(cfg, cfg.head == "lm", f"head {cfg.head!r} (its class has an lm head)")
    require(cfg, cfg.token_types == 0, "token-type embeddings")
    require(cfg, not cfg.embedding_norm, "a norm after the embeddings")


def _llama_like(cfg: ModelConfig, attn: str) -> Any:
    from transformers import LlamaConfig, MistralConfig, Qwen2Config

    _check_common(cfg, "rope", "rmsnorm", "pre")
    _decoder_only(cfg)
    require(cfg, cfg.activation in LLAMA_ACTS, f"activation {cfg.activation!r} (gated only)")
    common = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_decoder_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.d_head,
        hidden_act=LLAMA_ACTS[cfg.activation],
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=cfg.tie_embeddings,
        attention_dropout=cfg.dropout,
        attn_implementation=attn,
    )
    require(cfg, cfg.d_model % cfg.n_heads == 0, "d_model not divisible by n_heads (its check)")
    require(cfg, _only_llama_fields(cfg), "fields of the newer families (see config_dict)")
    if cfg.family == "llama":
        require(cfg, cfg.sliding_window is None, "a sliding window")
        require(cfg, cfg.qkv_bias == cfg.out_bias, "different q/k/v and output-projection biases")
        return LlamaConfig(**common, attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias)
    if cfg.family == "mistral":
        require(cfg, not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias), "biases")
        require(cfg, cfg.window_layers is None, "a window on some layers only")
        return MistralConfig(**common, sliding_window=cfg.sliding_window)
    require(
        cfg, cfg.qkv_bias and not cfg.out_bias and not cfg.ffn_bias,
        "biases other than on q/k/v (fixed in its code)",
    )
    return Qwen2Config(**common, **qwen_window(cfg))


#: ModelConfig fields that only the dict-built families set.
_NEWER_FIELDS = ("qk_norm", "post_sublayer_norm", "attention_softcap", "logit_softcap", "rotary_dim",
                 "parallel_attention", "parallel_norms", "position_offset", "embedding_dim",
                 "n_experts", "kv_lora_rank", "attention_dropout", "embedding_multiplier",
                 "residual_multiplier", "logits_scaling", "nope_layers", "norm_affine", "clip_qkv",
                 "qk_l2_norm", "nope_temperature", "chunked_window", "rope_query_scale")


def _only_llama_fields(cfg: ModelConfig) -> bool:
    """No field of the newer families is set (Mistral's and Qwen2's windows are theirs)."""
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.init}
    return all(getattr(cfg, name) == defaults[name] for name in _NEWER_FIELDS)



def _gpt2(cfg: ModelConfig, attn: str) -> Any:
    from transformers import GPT2Config

    _check_common(cfg, "learned", "layernorm", "pre")
    _decoder_only(cfg)
    require(cfg, cfg.activation in _GPT2_ACTS, f"activation {cfg.activation!r}")
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
        reorder_and_upcast_attn=cfg.upcast_attention,
        attn_implementation=attn,
    )


def _bert(cfg: ModelConfig, attn: str) -> Any:
    from transformers import BertConfig

    _check_common(cfg, "learned", "layernorm", "post")
    require(cfg, cfg.n_decoder_layers == 0, "decoder layers (BertModel is an encoder)")
    require(cfg, cfg.head == "pooler", f"head {cfg.head!r} (BertModel has the pooler)")
    require(cfg, cfg.embedding_norm, "embeddings without their LayerNorm")
    require(cfg, not cfg.tie_embeddings, "tied embeddings (BertModel has no output projection)")
    require(cfg, cfg.token_types >= 1, "zero token types (it always has a token-type embedding)")
    require(cfg, cfg.activation in _BERT_ACTS, f"activation {cfg.activation!r}")
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
    require(cfg, cfg.n_encoder_layers > 0 and cfg.n_decoder_layers > 0, "a single stack")
    require(cfg, cfg.head == "lm", f"head {cfg.head!r}")
    require(cfg, cfg.activation in _T5_ACTS, f"activation {cfg.activation!r}")
    require(cfg, not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias), "biases")
    require(cfg, cfg.n_kv_heads == cfg.n_heads, "grouped-query attention")
    require(cfg, cfg.tie_embeddings, "an untied lm head (transformers 5 always ties T5's)")
    require(cfg, cfg.share_embeddings, "separate source and target embeddings")
    require(cfg, cfg.token_types == 0 and not cfg.embedding_norm, "BERT-style embeddings")
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
    **{family: (lambda cfg, attn: _from_dict(cfg, attn)) for family in DICT_FAMILIES},
}


def _from_dict(cfg: ModelConfig, attn: str) -> Any:
    from .hf_families import hf_config_from_dict

    return hf_config_from_dict(config_dict(cfg), attn)


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
        elif cfg.family in DICT_FAMILIES:
            model = tr.AutoModelForCausalLM.from_config(config)
        else:
            model = classes[cfg.family](config)
    if getattr(model, "loss_type", "") is None:
        # GPT2LMHeadModel's name matches no loss, so transformers warns "`loss_type=None` was set
        # in the config but it is unrecognized" and uses ForCausalLMLoss: name that loss here.
        model.loss_type = "ForCausalLM"
    return model.train()


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
