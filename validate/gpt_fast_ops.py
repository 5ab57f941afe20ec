"""Counts the aten ops one eager decoding step of gpt-fast's Transformer issues (torchao's copy,
torchao/_models/llama/model.py and generate.py at commit b4d0768, the code of torchao's eager
benchmark rows; pytorch-labs/gpt-fast model.py at 32971d3 has the same forward): what
kernel_facts.json "eager_step_ops" states and costmodel/eager_ops.step_ops reads.

An eager step on a GPU is host-bound when its ops take the host longer to issue than the GPU
takes to run them (docs/time.md, "Eager decoding on a GPU"): the host's time is ops x the
hardware's dispatch_s_per_op, so the count is what matters, and it is counted here as
validate/eager_op_counts.py counts transformers': a TorchDispatchMode records every aten op that
reaches the dispatcher (views, copies and products alike: each is one dispatch) during
  - the model's forward at one token (Transformer.forward with input_pos: the mask's and the
    rotary table's rows, the embedding, the layers, the final norm, the head), and
  - what decode_n_tokens runs around it each step: sample() (logits_to_probs with a temperature
    and top_k, as generate.py's defaults 0.8 and 200; multinomial_sample_one_no_sync), the two
    clones, input_pos += 1 and the next token's view.
The step runs under sdpa's math backend, as decode_n_tokens sets it (torch.backends.cuda.sdp_kernel
(enable_flash=False, enable_mem_efficient=False, enable_math=True)): here
torch.nn.attention.sdpa_kernel(SDPBackend.MATH), whose composite decomposition the dispatcher
sees on any device. A dtype's no-ops are not dispatched: x.float() and type_as on fp32 tensors
return them, so fp32 counts fewer ops than bf16.

The classes below reproduce the op sequence of the stated source lines (RMSNorm.forward,
apply_rotary_emb, Attention.forward with KVCache.update, FeedForward.forward,
TransformerBlock.forward, Transformer.forward; generate.py's sample, logits_to_probs,
multinomial_sample_one_no_sync and decode_n_tokens' loop body); `count_model_file` counts the
source file itself where a copy of it is at hand (tests/test_eager_ops.py checks the two agree
when it is). Per layer: the difference between a model of two layers and one of one; the rest of
the step is the step's own. Counted with torch 2.13 on the CPU: the math backend's decomposition
(its fp32 upcast of bf16 inputs, _safe_softmax) is this torch's.
"""

from __future__ import annotations

from typing import Any

#: The sampling generate.py's main() passes by default (--temperature 0.8, --top_k 200).
TEMPERATURE, TOP_K = 0.8, 200


def reference_modules() -> dict[str, Any]:
    """The reproduction's classes (torch imported here, not at module import)."""
    import torch
    import torch.nn as nn
    from torch.nn import functional as F

    class RMSNorm(nn.Module):  # model.py RMSNorm
        def __init__(self, dim: int, eps: float = 1e-5):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

        def forward(self, x):
            normed = x.float()
            normed = normed * torch.rsqrt(torch.mean(normed * normed, dim=-1, keepdim=True) + self.eps)
            return normed.type_as(x) * self.weight

    def apply_rotary_emb(x, freqs_cis):  # model.py apply_rotary_emb
        xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
        freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
        x_out2 = torch.stack([
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1]], -1)
        return x_out2.flatten(3).type_as(x)

    class Attention(nn.Module):  # model.py Attention, KVCache.update (use_index_put_for_kv_cache False)
        def __init__(self, dim: int, heads: int, kv_heads: int, max_len: int):
            super().__init__()
            self.dim, self.heads, self.kv_heads, self.head_dim = dim, heads, kv_heads, dim // heads
            self.wqkv = nn.Linear(dim, (heads + 2 * kv_heads) * self.head_dim, bias=False)
            self.wo = nn.Linear(dim, dim, bias=False)
            self.register_buffer("k_cache", torch.zeros(1, kv_heads, max_len, self.head_dim))
            self.register_buffer("v_cache", torch.zeros(1, kv_heads, max_len, self.head_dim))

        def forward(self, x, freqs_cis, mask, input_pos):
            bsz, seqlen, _ = x.shape
            kv_size = self.kv_heads * self.head_dim
            q, k, v = self.wqkv(x).split([self.dim, kv_size, kv_size], dim=-1)
            q = q.view(bsz, seqlen, self.heads, self.head_dim)
            k = k.view(bsz, seqlen, self.kv_heads, self.head_dim)
            v = v.view(bsz, seqlen, self.kv_heads, self.head_dim)
            q, k = apply_rotary_emb(q, freqs_cis), apply_rotary_emb(k, freqs_cis)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            k, v = self.update(input_pos, k, v)
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
            return self.wo(y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim))

        def update(self, input_pos, k_val, v_val):  # KVCache.update: the new token written, the whole cache back
            self.k_cache[:, :, input_pos] = k_val
            self.v_cache[:, :, input_pos] = v_val
            return self.k_cache, self.v_cache

    class FeedForward(nn.Module):  # model.py FeedForward
        def __init__(self, dim: int, hidden: int):
            super().__init__()
            self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):  # model.py TransformerBlock
        def __init__(self, dim, heads, kv_heads, hidden, max_len):
            super().__init__()
            self.attention, self.feed_forward = Attention(dim, heads, kv_heads, max_len), FeedForward(dim, hidden)
            self.attention_norm, self.ffn_norm = RMSNorm(dim), RMSNorm(dim)

        def forward(self, x, input_pos, freqs_cis, mask):
            h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)
            return h + self.feed_forward(self.ffn_norm(h))

    class Transformer(nn.Module):  # model.py Transformer (setup_caches' mask and rotary table)
        def __init__(self, layers, dim, heads, kv_heads, hidden, vocab, max_len):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Block(dim, heads, kv_heads, hidden, max_len) for _ in range(layers))
            self.norm, self.output = RMSNorm(dim), nn.Linear(dim, vocab, bias=False)
            self.causal_mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
            # precompute_freqs_cis' table, in the model's dtype (setup_caches casts it)
            self.register_buffer("freqs_cis", torch.randn(max_len, dim // heads // 2, 2))

        def forward(self, idx, input_pos):
            mask = self.causal_mask[None, None, input_pos]
            freqs_cis = self.freqs_cis[input_pos]
            x = self.tok_embeddings(idx)
            for layer in self.layers:
                x = layer(x, input_pos, freqs_cis, mask)
            return self.output(self.norm(x))

    return {"Transformer": Transformer}


def decode_step_tail(logits: Any, input_pos: Any) -> Any:
    """generate.py's per-step work after the forward: sample (logits_to_probs,
    multinomial_sample_one_no_sync), decode_n_tokens' clones, input_pos += 1 and the view."""
    import torch

    logits = logits[0, -1] / max(TEMPERATURE, 1e-5)
    top, _ = torch.topk(logits, min(TOP_K, logits.size(-1)))
    pivot = top.select(-1, -1).unsqueeze(-1)
    logits = torch.where(logits < pivot, -float("Inf"), logits)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    q = torch.empty_like(probs).exponential_(1)
    token = torch.argmax(probs / q, dim=-1, keepdim=True).to(dtype=torch.int)
    token, probs = token.clone(), probs.clone()
    input_pos += 1
    return token.view(1, -1)


def _count(model: Any, dtype: Any) -> int:
    """Aten ops of one decode step (forward at one token, then decode_step_tail) of `model`."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ops = DispatchCounter()
    token, input_pos = torch.tensor([[3]], dtype=torch.int), torch.tensor([5], dtype=torch.int)
    model = model.to(dtype)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), ops:
        decode_step_tail(model(token, input_pos), input_pos)
    return ops.count


class DispatchCounter:
    """A TorchDispatchMode that counts every aten op reaching the dispatcher (built lazily; also
    validate/generate_ops.py's)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        outer = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                outer.count += 1
                return func(*args, **(kwargs or {}))

        self.count, self.mode = 0, Mode()

    def __enter__(self):
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)


#: Odd sizes (STYLE.md): dim 48, 4 heads of 12, GQA with 2 KV heads, an FFN of 37, a vocabulary of 99.
SIZES = {"dim": 48, "heads": 4, "kv_heads": 2, "hidden": 37, "vocab": 99, "max_len": 16}


def step_ops(dtype: str, kv_heads: int = SIZES["kv_heads"]) -> dict[str, int]:
    """The reproduction's ops per decoding step in `dtype` ("bf16" or "fp32"): per layer, and the
    step's own (the forward outside its layers and generate.py's work around it)."""
    import torch

    Transformer = reference_modules()["Transformer"]
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    sizes = {**SIZES, "kv_heads": kv_heads}
    one, two = (_count(Transformer(layers, **sizes), torch_dtype) for layers in (1, 2))
    return {"per_layer": two - one, "per_step": one - (two - one)}


def count_model_file(path: str, dtype: str) -> dict[str, int]:
    """The same counts on gpt-fast's own model.py (torchao's copy imports two torchao helpers:
    find_multiple, given here as model.py's own definition in gpt-fast, and the quantized KV
    cache's helpers, which the bf16 cache does not call)."""
    import importlib.util
    import sys
    import types

    import torch

    stubs = {name: types.ModuleType(name) for name in (
        "torchao", "torchao.utils", "torchao.quantization", "torchao.quantization.quant_primitives",
        "torchao.quantization.utils")}
    stubs["torchao.utils"].find_multiple = lambda n, k: n if n % k == 0 else n + k - (n % k)
    stubs["torchao.quantization.quant_primitives"].quantize_affine = None
    stubs["torchao.quantization.quant_primitives"].dequantize_affine = None
    stubs["torchao.quantization.utils"].quantize_activation_per_token_absmax = None
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("gpt_fast_model", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]

    def model(layers: int) -> Any:
        args = module.ModelArgs(n_layer=layers, n_head=SIZES["heads"], dim=SIZES["dim"], vocab_size=SIZES["vocab"],
                                block_size=64, n_local_heads=SIZES["kv_heads"], intermediate_size=SIZES["hidden"])
        built = module.Transformer(args).to(torch_dtype)
        built.setup_caches(1, SIZES["max_len"])
        return built

    one, two = (_count(model(layers), torch_dtype) for layers in (1, 2))
    return {"per_layer": two - one, "per_step": one - (two - one)}


if __name__ == "__main__":  # python -m validate.gpt_fast_ops [model.py]: the counts, as JSON
    import json
    import sys

    counts = {dtype: step_ops(dtype) for dtype in ("bf16", "fp32")}
    if len(sys.argv) > 1:
        counts = {"reproduction": counts,
                  "file": {dtype: count_model_file(sys.argv[1], dtype) for dtype in ("bf16", "fp32")}}
    print(json.dumps(counts, indent=1))
