"""GPT-2's and BERT's modules as the cost tree's leaves, the random models (Llama's, GPT-2's, BERT's)
whose training step validate/eager_op_counts.py's ByteCounter counts, and the leaves each family's
entry states (kernel_facts.json "eager_training_bytes"; tests/test_eager_ops.py measures them again)."""

from __future__ import annotations

from typing import Any

#: The layer leaves' path prefix as counted (validate/eager_op_counts.py's per_leaf divides these
#: by the layers): the decoder's, for an encoder's layers too (BERT_LAYER).
LAYER = "decoder.layer."

#: GPT2LMHeadModel's submodules (under transformer.h.N) as the tree's leaves; the attention
#: module's own body is the weighted sum's (its eager core goes to the scores, softmax and
#: weighted-sum leaves, ByteCounter.advance), its probabilities' dropout (attn_dropout) the softmax's.
GPT2_LAYER = {"ln_1": "self_attention.norm", "attn.c_attn": "self_attention.qkv", "attn": "self_attention.weighted_sum",
              "attn.attn_dropout": "self_attention.softmax", "attn.c_proj": "self_attention.out",
              "attn.resid_dropout": "self_attention.dropout", "ln_2": "ffn.norm", "mlp": "ffn.mlp",
              "mlp.dropout": "ffn.dropout"}


def gpt2_leaf_of_module(name: str) -> str | None:
    """The cost-tree leaf a GPT2LMHeadModel submodule's ops belong to (None: its parent's)."""
    parts = name.split(".")
    top = {"transformer.wte": "embedding.tokens", "transformer.wpe": "embedding.positions",
           "transformer.drop": "embedding.dropout", "transformer.ln_f": "decoder.final_norm",
           "lm_head": "head.lm_head", "transformer": "model"}
    if name in top:
        return top[name]
    if len(parts) == 3 and parts[:2] == ["transformer", "h"]:
        return "layer"
    if len(parts) >= 4 and parts[:2] == ["transformer", "h"]:
        return LAYER + GPT2_LAYER[".".join(parts[3:])] if ".".join(parts[3:]) in GPT2_LAYER else None
    return None


#: BertModel's submodules (under encoder.layer.N) as the tree's leaves, counted under the
#: decoder's layer names (LAYER: per_leaf's and ByteCounter.advance's) and stated under the
#: encoder's (ENCODER_LAYER). The residual adds run in BertSelfOutput's and BertOutput's own bodies
#: (LayerNorm(hidden + input)); the FFN's two products and the activation are the MLP's.
BERT_LAYER = {"attention.self": "self_attention.weighted_sum", "attention.self.query": "self_attention.qkv",
              "attention.self.key": "self_attention.qkv", "attention.self.value": "self_attention.qkv",
              "attention.output": "self_attention.residual", "attention.output.dense": "self_attention.out",
              "attention.output.dropout": "self_attention.dropout", "attention.output.LayerNorm": "self_attention.norm",
              "intermediate": "ffn.mlp", "output": "ffn.residual", "output.dense": "ffn.mlp",
              "output.dropout": "ffn.dropout", "output.LayerNorm": "ffn.norm"}
ENCODER_LAYER = "encoder.layer."


def bert_leaf_of_module(name: str) -> str | None:
    """The cost-tree leaf a BertModel submodule's ops belong to (None: its parent's)."""
    parts = name.split(".")
    top = {"embeddings.word_embeddings": "embedding.tokens", "embeddings.position_embeddings": "embedding.positions",
           "embeddings.token_type_embeddings": "embedding.token_types", "embeddings.LayerNorm": "embedding.norm",
           "embeddings.dropout": "embedding.dropout", "pooler": "head.pooler", "embeddings": "model"}
    if name in top:
        return top[name]
    if len(parts) >= 4 and parts[:2] == ["encoder", "layer"]:
        rest = ".".join(parts[3:])
        return LAYER + BERT_LAYER[rest] if rest in BERT_LAYER else None
    return None


def llama_training_model(hidden: int, heads: int, kv_heads: int, head_dim: int, ffn: int, layers: int = 2,
                         vocab: int = 97, seed: int = 0, attention: str = "sdpa", dtype: str = "bf16") -> Any:
    """A random LlamaForCausalLM of these sizes in this dtype (bf16, fp32) under this attention
    implementation (sdpa, eager), as a training step runs it."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from .compare import TORCH_DTYPES  # bf16, fp16, fp32: one map

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                         max_position_embeddings=256, attn_implementation=attention)
    return LlamaForCausalLM(config).to(TORCH_DTYPES[dtype]).train()


def gpt2_training_model(hidden: int, heads: int, ffn: int, layers: int = 2, vocab: int = 97, seed: int = 0,
                        attention: str = "sdpa", dtype: str = "bf16") -> Any:
    """A random GPT2LMHeadModel of these sizes (head width hidden / heads; dropout 0.1 everywhere,
    as gpt2's config states) in this dtype under this attention, as a training step runs it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from .compare import TORCH_DTYPES  # bf16, fp16, fp32: one map

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab, n_embd=hidden, n_head=heads, n_inner=ffn, n_layer=layers,
                        n_positions=256, attn_implementation=attention)
    return GPT2LMHeadModel(config).to(TORCH_DTYPES[dtype]).train()


def bert_training_model(hidden: int, heads: int, ffn: int, layers: int = 2, vocab: int = 97, seed: int = 0,
                        attention: str = "sdpa", dtype: str = "bf16") -> Any:
    """A random BertModel (with its pooler) of these sizes (head width hidden / heads; dropout 0.1,
    as bert-base's config states; GELU) in this dtype under this attention, as a training step runs it."""
    import torch
    from transformers import BertConfig, BertModel
    from .compare import TORCH_DTYPES  # bf16, fp16, fp32: one map

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_attention_heads=heads, intermediate_size=ffn,
                        num_hidden_layers=layers, max_position_embeddings=256, attn_implementation=attention)
    return BertModel(config, add_pooling_layer=True).to(TORCH_DTYPES[dtype]).train()


#: The leaves whose training bytes are stated: every leaf of the Llama tree the decoder runs
#: but the attention core's. The embedding's gather reads rows, not the table the in-plus-out
#: rule would count, and the head's loss runs outside the model (its own implementation): they
#: keep the tree's bytes.
LLAMA_STATED = ("decoder.rope_tables",) + tuple(LAYER + leaf for leaf in (
    "self_attention.norm", "self_attention.qkv", "self_attention.rope", "self_attention.out",
    "self_attention.residual", "ffn.norm", "ffn.mlp", "ffn.residual")) + ("decoder.final_norm",)

#: Measured and recorded, not used: the attention module's own body around the call (the
#: weighted-sum leaf, as OpCounter gives it). On the CPU its backward copies the query and key
#: gradients back from (batch, heads, tokens, width) memory; CUDA's flash backward returns them
#: in (batch, tokens, heads, width) memory (transposed views), so the heads' views need no copy
#: there, and the leaf's time is the attention model's.
CPU_ONLY_LEAVES = (LAYER + "self_attention.weighted_sum",)

#: GPT-2's stated leaves: Llama's less RoPE's, with its three dropouts (its position embedding's
#: gather, like the tokens', keeps the tree's bytes; the add of the two is the model's body).
GPT2_STATED = ("embedding.dropout",) + tuple(LAYER + leaf for leaf in (
    "self_attention.norm", "self_attention.qkv", "self_attention.out", "self_attention.dropout",
    "self_attention.residual", "ffn.norm", "ffn.mlp", "ffn.dropout", "ffn.residual")) + ("decoder.final_norm",)

#: BERT's stated leaves, as counted (LAYER's names; ENCODER_LAYER's in kernel_facts.json): its
#: embeddings' norm and dropout and every layer leaf but the attention core's.
BERT_STATED = ("embedding.norm", "embedding.dropout") + tuple(LAYER + leaf for leaf in (
    "self_attention.qkv", "self_attention.out", "self_attention.dropout", "self_attention.residual",
    "self_attention.norm", "ffn.mlp", "ffn.dropout", "ffn.residual", "ffn.norm"))
