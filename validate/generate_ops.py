"""Counts the aten ops one decoding step of Hugging Face generate issues (transformers 5.24's
LlamaForCausalLM.generate and the other families' below, greedy, its DynamicCache, torch 2.13
CPU): what kernel_facts.json "eager_step_ops" states for the implementation "transformers", the
code `simulate` models by default.

A TorchDispatchMode (validate/gpt_fast_ops.DispatchCounter) counts every aten op that reaches the
dispatcher during generate(max_new_tokens=k) at k = K_SHORT and K_LONG: the difference over the
K_LONG - K_SHORT extra steps is one decoding step's ops whole (the model's forward at one token
with its mask and rotary tables, the logits' processing, the argmax, the stopping criteria and
the loop's own bookkeeping: all a step issues), per layer the difference between models of two
layers and one, the rest the step's own. The counts are the same over every step (the test
counts two intervals). The model states an EOS token (generate's EosTokenCriteria and its
padding of finished sequences run, as with Llama's own generation config), which the tiny
model never emits (its head's row for it is zero), so every run decodes k tokens. Greedy
(do_sample False: GenerationConfig's default; a sampling configuration adds its processors'
ops). Under eager attention a model whose KV heads are fewer than its query heads adds
repeat_kv's copies (unsqueeze, expand, clone, _unsafe_view for K and V: 8 per layer); under
sdpa at batch 1 no mask is passed and sdpa repeats the heads itself (enable_gqa).

The other families users decode with eagerly (FAMILIES: Qwen2's q/k/v biases, Mistral, Qwen3's
q/k norms, Gemma's scaled embedding and (1 + w) norms, Gemma 2's four norms a layer, softcapping
and alternating sliding and full layers, Phi-3's fused qkv and gate_up, the routers and experts of
Mixtral, Qwen2-MoE (its shared expert and gate) and Qwen3-MoE) are built the same way from a tiny
config of their own class (AutoConfig.for_model) and counted the same way (step_ops' family);
Gemma 2 per layer kind (layer_types: two layers of one kind less one), its window 4 tokens so that
every counted step's sliding layers run past it, as a long context does. The experts run
transformers' default experts implementation, grouped_mm (one grouped product for every expert a
token reaches, so the count does not grow with top_k: the same at top_k 2 and 3, one op fewer
at 1); the experts' widths are multiples of 8 (grouped_mm's 16-byte strides). flash_attention_2 does not run
on a CPU (flash_attn needs CUDA): not counted here (docs/time.md says what stands for it).
"""

from __future__ import annotations

from typing import Any

#: Odd sizes (STYLE.md): hidden 48, 4 heads of 12, an FFN of 37, a vocabulary of 99 whose last
#: token is the EOS; a 5-token prompt.
SIZES = dict(vocab_size=99, hidden_size=48, intermediate_size=37, num_attention_heads=4, max_position_embeddings=64)
PROMPT = (1, 5, 7, 9, 11)
K_SHORT, K_LONG = 3, 7


#: Each family's tiny config beyond SIZES (its class's defaults otherwise): head widths where the
#: class defaults to its real model's (Qwen3, Gemma: 12, as 48 / 4), no window where the family
#: takes one optionally (Mistral, Mixtral, Phi-3; Gemma 2 always has one), experts of widths that
#: are multiples of 8. "FAMILY windowed": the family with a window of 4 tokens, which every
#: counted step runs past (a long context's steady state: Mistral-7B-v0.1's 4,096, Phi-3's 2,047).
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": {}, "qwen2": {}, "mistral": dict(sliding_window=None), "qwen3": dict(head_dim=12),
    "gemma": dict(head_dim=12), "gemma2": dict(head_dim=12, sliding_window=4), "phi3": dict(sliding_window=None),
    "phi3 windowed": dict(sliding_window=4), "mistral windowed": dict(sliding_window=4),
    "mixtral": dict(intermediate_size=40, num_local_experts=4, num_experts_per_tok=2, sliding_window=None),
    "qwen2_moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=40,
                      shared_expert_intermediate_size=24),
    "qwen3_moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=40, head_dim=12),
}


#: Families counted only under an older release's own classes (validate/generate_ops_releases.py; their 5.24 classes are
#: not counted): MPT (ALiBi, LayerNorm, GELU; MptConfig's d_model, n_heads, n_layers from SIZES' names, its FFN
#: expansion_ratio x d_model) and Falcon-7B's layout (multi-query: one KV head, whatever num_key_value_heads says; the
#: parallel attention and MLP on one LayerNorm; rotary; no biases).
RELEASE_FAMILIES: dict[str, dict[str, Any]] = {
    "mpt": dict(max_seq_len=64),
    "falcon": dict(multi_query=True, parallel_attn=True, new_decoder_architecture=False, alibi=False, bias=False),
}


def tiny_model(layers: int, kv_heads: int, attention: str, dtype: str, family: str = "llama",
           layer_type: str | None = None, top_k: int | None = None) -> Any:
    """A tiny `family` model of `layers` layers (all of `layer_type` where the family has kinds:
    "sliding_attention" or "full_attention"), random weights, its EOS never emitted."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    eos = SIZES["vocab_size"] - 1
    extra = dict(FAMILIES[family] if family in FAMILIES else RELEASE_FAMILIES[family])
    if layer_type is not None:
        extra["layer_types"] = [layer_type] * layers
    if top_k is not None:
        extra["num_experts_per_tok"] = top_k
    config = AutoConfig.for_model(family.split()[0], **{**SIZES, **extra}, num_hidden_layers=layers,
                                  num_key_value_heads=kv_heads, eos_token_id=eos, bos_token_id=1, pad_token_id=None)
    config._attn_implementation = attention
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        model.lm_head.weight[eos] = 0  # its logit is 0, below the largest of 98 random ones: never emitted
    return model.to({"bf16": torch.bfloat16, "fp32": torch.float32}[dtype])


def generate_ops(model: Any, new_tokens: int, batch: int = 1) -> int:
    """Aten ops of model.generate(PROMPT, max_new_tokens=new_tokens), greedy, PROMPT repeated
    over `batch` rows (a mask of ones: no padding)."""
    import torch

    from validate.gpt_fast_ops import DispatchCounter

    ids = torch.tensor([PROMPT] * batch)
    with torch.no_grad(), DispatchCounter() as counter:
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False)
    if out.shape[1] != len(PROMPT) + new_tokens:
        raise RuntimeError(f"generate stopped after {out.shape[1] - len(PROMPT)} of {new_tokens} tokens.")
    return counter.count


def per_step(layers: int, kv_heads: int, attention: str, dtype: str, short: int = K_SHORT,
             long: int = K_LONG, batch: int = 1, family: str = "llama", layer_type: str | None = None,
             top_k: int | None = None) -> float:
    """One decoding step's ops: the ops of the steps between `short` and `long` new tokens, per step."""
    model = tiny_model(layers, kv_heads, attention, dtype, family, layer_type, top_k)
    return (generate_ops(model, long, batch) - generate_ops(model, short, batch)) / (long - short)


def step_ops(attention: str, dtype: str, kv_heads: int, family: str = "llama",
             layer_type: str | None = None) -> dict[str, float]:
    """Ops per decoding step of a `family` model with `kv_heads` of 4 query heads (its layers all
    of `layer_type` where it has kinds): per layer, and the step's own (everything a step issues
    outside its layers)."""
    one, two = (per_step(layers, kv_heads, attention, dtype, family=family, layer_type=layer_type)
                for layers in (1, 2))
    return {"per_layer": two - one, "per_step": one - (two - one)}


#: What is counted per family (python -m validate.generate_ops FAMILY): its attention
#: implementations (Gemma 2's class takes no sdpa) and its layer kinds.
COUNTED = {family: (("eager",) if family == "gemma2" else ("eager", "sdpa"),
                    ("full_attention", "sliding_attention") if family == "gemma2" else (None,))
           for family in FAMILIES}


def family_counts(family: str, dtype: str = "bf16") -> dict[str, dict[str, float]]:
    """A family's counts in `dtype` (kernel_facts.json eager_step_ops' form): per attention and
    layer kind, per layer and the step's own, where the query heads each have their KV head (4 of
    4) under eager, at 2 KV heads of 4 under sdpa (which repeats no heads at batch 1), and under
    eager the grouped heads' extra ops a layer (2 KV heads less 4)."""
    attentions, kinds = COUNTED[family]
    out = {}
    for attention in attentions:
        for kind in kinds:
            grouped = step_ops(attention, dtype, 2, family, kind)
            if attention == "eager":
                single = step_ops(attention, dtype, 4, family, kind)
                if single["per_step"] != grouped["per_step"]:
                    raise AssertionError(f"{family}: grouped KV heads change the step's own ops.")
                grouped = {**single, "grouped_kv_per_layer": grouped["per_layer"] - single["per_layer"]}
            out[f"{attention} {kind or 'all'}"] = grouped
    return out


if __name__ == "__main__":  # python -m validate.generate_ops [FAMILY...]: the counts, as JSON
    import json
    import sys

    if sys.argv[1:]:
        print(json.dumps({family: {dtype: family_counts(family, dtype) for dtype in ("bf16", "fp32")}
                          for family in sys.argv[1:]}, indent=1))
    else:
        print(json.dumps({f"{attention} {dtype} kv_heads {kv}": step_ops(attention, dtype, kv)
                          for attention in ("eager", "sdpa") for dtype in ("bf16", "fp32") for kv in (4, 2)},
                         indent=1))
