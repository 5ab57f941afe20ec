"""Counts the aten ops one decoding step of Hugging Face generate issues (transformers 5.24's
LlamaForCausalLM.generate, greedy, its DynamicCache, torch 2.13 CPU): what kernel_facts.json
"eager_step_ops" states for the implementation "transformers", the code `simulate` models by
default.

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
"""

from __future__ import annotations

from typing import Any

#: Odd sizes (STYLE.md): hidden 48, 4 heads of 12, an FFN of 37, a vocabulary of 99 whose last
#: token is the EOS; a 5-token prompt.
SIZES = dict(vocab_size=99, hidden_size=48, intermediate_size=37, num_attention_heads=4, max_position_embeddings=64)
PROMPT = (1, 5, 7, 9, 11)
K_SHORT, K_LONG = 3, 7


def _model(layers: int, kv_heads: int, attention: str, dtype: str) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    eos = SIZES["vocab_size"] - 1
    config = LlamaConfig(**SIZES, num_hidden_layers=layers, num_key_value_heads=kv_heads, eos_token_id=eos,
                         bos_token_id=1, pad_token_id=None)
    config._attn_implementation = attention
    model = LlamaForCausalLM(config).eval()
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
             long: int = K_LONG, batch: int = 1) -> float:
    """One decoding step's ops: the ops of the steps between `short` and `long` new tokens, per step."""
    model = _model(layers, kv_heads, attention, dtype)
    return (generate_ops(model, long, batch) - generate_ops(model, short, batch)) / (long - short)


def step_ops(attention: str, dtype: str, kv_heads: int) -> dict[str, float]:
    """Ops per decoding step of a model with `kv_heads` of 4 query heads: per layer, and the
    step's own (everything a step issues outside its layers)."""
    one, two = (per_step(layers, kv_heads, attention, dtype) for layers in (1, 2))
    return {"per_layer": two - one, "per_step": one - (two - one)}


if __name__ == "__main__":  # python -m validate.generate_ops: the counts, as JSON
    import json

    print(json.dumps({f"{attention} {dtype} kv_heads {kv}": step_ops(attention, dtype, kv)
                      for attention in ("eager", "sdpa") for dtype in ("bf16", "fp32") for kv in (4, 2)}, indent=1))
