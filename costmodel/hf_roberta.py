"""config.json readers of RoBERTa's encoders (model_type "roberta", "camembert", "data2vec-text",
"xlm-roberta": RobertaModel, CamembertModel, Data2VecTextModel, XLMRobertaModel with the pooler; their
pre-LayerNorm variants "xlm-roberta-xl" and "roberta-prelayernorm"), of Megatron-BERT ("megatron-bert":
BERT's embeddings without their LayerNorm, pre-LayerNorm layers), of ERNIE ("ernie": BertModel's code, read
as "bert") and
of ELECTRA's ("electra": ElectraModel, BERT's encoder without a pooler).

transformers 5.24 builds each as BERT's encoder (modeling_xlm_roberta.py's attention, intermediate,
output and pooler modules are BertModel's, renamed), so each reads as costmodel/hf_classic.py's
BERT reader, under the family "roberta". What differs is in the embeddings: the position ids are
built per sequence from input_ids (padding_idx + 1 + a cumulative count of the non-padding
tokens), so the position lookup keeps a (b, n) int64 index (facts position_ids_per_sequence), not
a view of the id buffer. The class is the base model with its pooler, as "bert" reads BertModel;
the causal-LM mapping's *ForCausalLM (an MLM-style head: dense, gelu, LayerNorm, a biased decoder)
is not the class modelled.

ElectraModel's embeddings are BERT's (position ids a slice of the buffer), family "electra", head
"none". Its embeddings may be narrower than the layers (embedding_size below hidden_size, projected
up by embeddings_project after the embeddings' LayerNorm: electra-small's 128 into 256, ElectraConfig's
default); the tree projects OPT's way (before the positions, and out again before an LM head), so
that is refused in one line; the base and large discriminators (embedding_size = hidden_size) read.

Refused in one line: is_decoder (a causal mask and a cache), add_cross_attention, a
position_embedding_type other than absolute, an activation BERT's reader does not take.
"""

from __future__ import annotations

from typing import Callable

from .config import ConfigError, ModelConfig, show
from .hf_classic import CLASSIC_BUILDERS
from .hf_fields import LLAMA_NAMES, Fields

#: The configuration class's vocab_size default of each type (transformers 5.24).
_VOCAB = {"roberta": 50265, "camembert": 30522, "data2vec-text": 30522, "xlm-roberta": 30522, "electra": 30522,
          "xlm-roberta-xl": 250880, "roberta-prelayernorm": 50265, "megatron-bert": 29056}


def _encoder_only(f: Fields, model_type: str) -> None:
    """Refuses a decoder's fields (a causal mask and a cache; cross-attention) in one line."""
    for key in ("is_decoder", "add_cross_attention"):
        if f.get(key, False, bool):
            raise ConfigError(f"{f.source}: {key} is not modelled for {model_type} (read as the "
                              "bidirectional encoder with its pooler).")


def _roberta(model_type: str) -> Callable[[Fields, str], ModelConfig]:
    def read(f: Fields, name: str) -> ModelConfig:
        _encoder_only(f, model_type)
        position = f.nullable("position_embedding_type", "absolute", str)
        if position not in (None, "absolute"):
            raise ConfigError(f"{f.source}: unsupported position_embedding_type {show(position)} for {model_type}.")
        act = f.get("hidden_act", "gelu", str)
        if act not in ("gelu", "relu", "gelu_new"):
            raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for {model_type}.")
        data = dict(f.data, vocab_size=f.get("vocab_size", _VOCAB[model_type]), position_embedding_type="absolute")
        return CLASSIC_BUILDERS["bert"](Fields(data, f.source), name).replace(family="roberta")
    return read


def _electra(f: Fields, name: str) -> ModelConfig:
    """ELECTRA's discriminator encoder (see the module docstring); ElectraConfig's defaults."""
    d_model = f.get("hidden_size", 256)
    width = f.nullable("embedding_size", 128)
    if width is not None and width != d_model:
        raise ConfigError(f"{f.source}: embedding_size {show(width)} differs from hidden_size {d_model}: "
                          "ELECTRA's embeddings_project after the embeddings' LayerNorm is not modelled for electra.")
    defaults = dict(hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    data = {**defaults, **{k: v for k, v in f.data.items() if k not in ("embedding_size", "summary_type")}}
    return _roberta("electra")(Fields(data, f.source), name).replace(family="electra", head="none")


#: XLMRobertaXLConfig's defaults (facebook/xlm-roberta-xl) for the fields BERT's reader reads.
_XL_DEFAULTS = dict(hidden_size=2560, num_hidden_layers=36, num_attention_heads=32,
                    intermediate_size=10240, max_position_embeddings=514, type_vocab_size=1)


def _xlm_roberta_xl(f: Fields, name: str) -> ModelConfig:
    """XLM-RoBERTa-XL (XLMRobertaXLModel, pooler included): RoBERTa's embeddings without their
    LayerNorm, pre-LayerNorm layers (self_attn_layer_norm before the attention, LayerNorm before the
    MLP; no dropout after the MLP, XLMRobertaXLOutput has none: family "roberta_xl"'s facts) and a
    final LayerNorm after the encoder."""
    data = {**_XL_DEFAULTS, **f.data}
    base = _roberta("xlm-roberta-xl")(Fields(data, f.source), name)
    return base.replace(family="roberta_xl", norm_position="pre", embedding_norm=False)


def _roberta_prelayernorm(f: Fields, name: str) -> ModelConfig:
    """RoBERTa-PreLayerNorm (RobertaPreLayerNormModel, pooler included): RoBERTa's embeddings with
    their LayerNorm, pre-LayerNorm layers (a LayerNorm before the attention, another before the
    MLP, inside RobertaPreLayerNormIntermediate; dropout after both sublayers, as RoBERTa's) and a
    LayerNorm on the encoder's output before the pooler (RobertaPreLayerNormModel.LayerNorm)."""
    return _roberta("roberta-prelayernorm")(f, name).replace(norm_position="pre")


#: MegatronBertConfig's defaults (nvidia/megatron-bert-uncased-345m's shape) for BERT's reader's fields.
_MEGATRON_BERT_DEFAULTS = dict(vocab_size=29056, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                               intermediate_size=4096)


def _megatron_bert(f: Fields, name: str) -> ModelConfig:
    """Megatron-BERT (MegatronBertModel, pooler included): BERT's embeddings without their LayerNorm
    (commented out in MegatronBertEmbeddings), its position ids a slice of the buffer and its
    token-type ids, when not given, a fresh (b, n) zeros tensor (no token_type_ids buffer: facts
    id_buffers of megatron_bert), pre-LayerNorm layers (MegatronBertAttention.ln,
    MegatronBertLayer.ln; dropout after both sublayers) and a final LayerNorm in the encoder. Its
    attention is eager code only (no sdpa or flash path: facts). Refused as roberta's: is_decoder,
    add_cross_attention, relative positions, an activation BERT's reader does not take."""
    data = {**_MEGATRON_BERT_DEFAULTS, **f.data}
    base = _roberta("megatron-bert")(Fields(data, f.source), name)
    return base.replace(family="megatron_bert", norm_position="pre", embedding_norm=False)


def _ernie(f: Fields, name: str) -> ModelConfig:
    """ERNIE 1.0-3.0 (ErnieModel, pooler included): BertModel's code (ErnieEmbeddings is BERT's,
    ErnieLayer, ErnieEncoder and ErniePooler are BERT's classes renamed), read as bert. Refused in
    one line: use_task_id (a task-type embedding table added to the embeddings, its ids fresh
    zeros: not modelled) and a decoder's fields."""
    _encoder_only(f, "ernie")
    if f.get("use_task_id", False, bool):
        raise ConfigError(f"{f.source}: use_task_id (ERNIE's task-type embeddings of task_type_vocab_size "
                          "rows added to the embeddings) is not modelled for ernie; set it to false.")
    return CLASSIC_BUILDERS["bert"](f, name)


#: model_type -> its reader.
ROBERTA_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    **{t: _roberta(t) for t in _VOCAB}, "electra": _electra, "xlm-roberta-xl": _xlm_roberta_xl,
    "roberta-prelayernorm": _roberta_prelayernorm, "megatron-bert": _megatron_bert, "ernie": _ernie}

#: transformers class -> model_type (the base models these readers model).
ROBERTA_ARCHITECTURES = {"RobertaModel": "roberta", "CamembertModel": "camembert",
                         "Data2VecTextModel": "data2vec-text", "XLMRobertaModel": "xlm-roberta",
                         "ElectraModel": "electra", "XLMRobertaXLModel": "xlm-roberta-xl",
                         "RobertaPreLayerNormModel": "roberta-prelayernorm", "MegatronBertModel": "megatron-bert",
                         "ErnieModel": "ernie"}

#: The config.json names of ModelConfig's fields (for errors).
ROBERTA_NAMES = {t: {**LLAMA_NAMES, "n_encoder_layers": "num_hidden_layers"} for t in (*_VOCAB, "ernie")}
