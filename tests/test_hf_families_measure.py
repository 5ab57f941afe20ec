"""Issue 14's families measured: Hugging Face's own classes against closed forms written here.

Every family of tests/family_configs.py (Llama 3.1, Qwen2.5, Qwen3, Gemma, Gemma 2, Phi-3,
Mistral with a window, GPT-NeoX, Falcon old and new, OPT, BLOOM, Mixtral, Qwen2-MoE, DeepSeek-V3) is
built by validate.hf_families from a config dict and measured by validate/measure.py: parameters,
forward and backward matmul FLOPs, bytes saved for backward (eager attention, fp32 and bf16, b = 1 included),
KV-cache bytes after a prefill and decode steps, decode-step FLOPs, and for the MoE families the
grouped_mm FLOPs and the observed routing. Each formula cites the code that makes it so; every
assertion is an exact integer. validate/FINDINGS.md section 11 explains them tensor by tensor.
transformers 5.24.0, torch 2.13.0 (CPU).
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.family_configs import FAMILY_CONFIGS  # noqa: E402
from validate.hf_families import build_hf_from_dict, family_inputs  # noqa: E402
from validate.hf_models import fake_mode  # noqa: E402
from validate.measure import (  # noqa: E402
    cache_after_each_step, count_parameters, expert_loads, matmul_flops, profiler_matmul_flops,
    run_with_cache, saved_activation_bytes,
)

MOE = ("mixtral", "qwen2_moe", "deepseek_v3")
DENSE = tuple(name for name in FAMILY_CONFIGS if name not in MOE)
WORKLOADS = ((2, 10), (1, 7))  # (b, n): n longer than every window; b = 1 keeps some views


# =============================================================================================
# Dimensions, read from the config dict the way each family's config class reads them


def dims(c: dict) -> dict:
    d = c["hidden_size"]
    h = c.get("num_attention_heads", c.get("n_head"))
    return dict(d=d, h=h, L=c.get("num_hidden_layers", c.get("n_layer")), V=c["vocab_size"],
                f=c.get("intermediate_size", c.get("ffn_dim", c.get("ffn_hidden_size"))),
                dh=c.get("head_dim") or d // h,
                hkv=c.get("num_key_value_heads", c.get("num_kv_heads", h)))


def rotary_dims(name: str, c: dict) -> int:
    """Width of RoPE's cos/sin: d_h, a fraction of it (GPT-NeoX rotary_pct, Phi-3
    partial_rotary_factor), or DeepSeek's qk_rope_head_dim."""
    dh = dims(c)["dh"]
    if name == "gpt_neox":
        return int(dh * c["rotary_pct"])
    if name == "deepseek_v3":
        return c["qk_rope_head_dim"]
    return int(dh * c.get("partial_rotary_factor", 1.0))


# =============================================================================================
# Parameters and forward matmul FLOPs


def llama_attention_weights(d, h, hkv, dh):
    """q, k, v, o projections: d*(h + 2 h_kv)*d_h + h*d_h*d (Phi-3's fused qkv_proj: the same)."""
    return d * (h + 2 * hkv) * dh + h * dh * d


def mla_weights(c):
    """DeepSeek MLA: q_a (d x r_q), q_b (r_q x h(nope+rope)), kv_a_proj_with_mqa (d x (r_kv+rope)),
    kv_b (r_kv x h(nope+v)), o (h v x d) (modeling_deepseek_v3.py, DeepseekV3Attention)."""
    d, h = c["hidden_size"], c["num_attention_heads"]
    rq, rkv, nope, rope, dv = (c[k] for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                              "qk_rope_head_dim", "v_head_dim"))
    return d * rq + rq * h * (nope + rope) + d * (rkv + rope) + rkv * h * (nope + dv) + h * dv * d


def layer_weights(name, c):
    """Matmul weights one token passes through in one layer, and biases/norms (parameters only),
    as (per-token matmul weights, other parameters). MoE: see moe_weights."""
    g = dims(c)
    d, h, hkv, dh, f = g["d"], g["h"], g["hkv"], g["dh"], g["f"]
    if name == "gpt_neox":  # fused qkv 3d^2 and dense d^2, with biases; 2 LayerNorms
        return 4 * d * d + 2 * d * f, 4 * d + f + d + 4 * d
    if name == "falcon_new":  # qkv (h + 2 h_kv) d_h; ln_attn, ln_mlp; no biases (bias=False)
        return d * (h + 2 * hkv) * dh + d * d + 2 * d * f, 4 * d
    if name == "falcon_7b":  # multi-query: qkv d + 2 d_h wide; one LayerNorm
        return d * (d + 2 * dh) + d * d + 2 * d * f, 2 * d
    if name in ("opt", "opt_pre"):  # q, k, v, out_proj, fc1, fc2 with biases; 2 LayerNorms
        return 4 * d * d + 2 * d * f, 4 * d + f + d + 4 * d
    if name == "bloom":  # fused qkv 3d^2, dense d^2, MLP 4d (fixed), all with biases; 2 LayerNorms
        return 12 * d * d, 13 * d
    norms = 4 * d if name == "gemma2" else 2 * d
    extra = {"qwen2.5": (h + 2 * hkv) * dh, "qwen3": 2 * dh}.get(name, 0)  # q/k/v biases; q/k norms
    return llama_attention_weights(d, h, hkv, dh) + 3 * d * f, norms + extra


def moe_weights(name, c):
    """(matmul weights per token in a MoE layer, parameters of that MoE layer, expert size).
    Router d*E; each routed expert 3*d*f (gate_up_proj 2f x d, down_proj d x f); shared experts."""
    d = c["hidden_size"]
    if name == "mixtral":
        E, k, f = c["num_local_experts"], c["num_experts_per_tok"], c["intermediate_size"]
        return d * E + k * 3 * d * f, d * E + E * 3 * d * f, 3 * d * f
    if name == "qwen2_moe":  # + shared expert (3 d f_s) and its sigmoid gate (d x 1)
        E, k, f = c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
        shared = 3 * d * c["shared_expert_intermediate_size"] + d
        return d * E + k * 3 * d * f + shared, d * E + E * 3 * d * f + shared, 3 * d * f
    E, k, f = c["n_routed_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
    shared = 3 * d * f * c["n_shared_experts"]
    return d * E + k * 3 * d * f + shared, d * E + E * 3 * d * f + shared, 3 * d * f


def moe_layers(name, c):
    """Indices of the MoE layers: Mixtral all; Qwen2-MoE all but mlp_only_layers
    (decoder_sparse_step 1); DeepSeek-V3 from first_k_dense_replace on."""
    L = c["num_hidden_layers"]
    if name == "qwen2_moe":
        return [i for i in range(L) if i not in c["mlp_only_layers"]]
    if name == "deepseek_v3":
        return list(range(c["first_k_dense_replace"], L))
    return list(range(L))


def attention_weights(name, c):
    """The attention (and norm) part of a MoE family's layer: (matmul weights, other params)."""
    g = dims(c)
    d, h, hkv, dh = g["d"], g["h"], g["hkv"], g["dh"]
    if name == "deepseek_v3":  # + q_a_layernorm, kv_a_layernorm, 2 RMSNorms
        return mla_weights(c), c["q_lora_rank"] + c["kv_lora_rank"] + 2 * d
    bias = (h + 2 * hkv) * dh if name == "qwen2_moe" else 0  # qkv_bias
    return llama_attention_weights(d, h, hkv, dh), bias + 2 * d


def head_and_embeddings(name, c):
    """(head matmul weights per token, parameters outside the layers)."""
    g = dims(c)
    d, V = g["d"], g["V"]
    tied = c["tie_word_embeddings"]
    if name in ("opt", "opt_pre"):  # w-wide tokens, positions with offset 2, project_in/out
        w = c["word_embed_proj_dim"]
        proj = 2 * w * d if w != d else 0
        final_norm = 2 * d if c["do_layer_norm_before"] else 0
        return w * V + proj, V * w + (c["max_position_embeddings"] + 2) * d + proj + final_norm
    final_norm = 2 * d if name in ("gpt_neox", "falcon_new", "falcon_7b", "bloom") else d
    embedding_norm = 2 * d if name == "bloom" else 0  # word_embeddings_layernorm
    return d * V, V * d * (1 if tied else 2) + final_norm + embedding_norm


def parameters(name, c):
    L = dims(c)["L"]
    _, outside = head_and_embeddings(name, c)
    if name not in MOE:
        weights, other = layer_weights(name, c)
        return L * (weights + other) + outside
    attn, other = attention_weights(name, c)
    _, moe_params, _ = moe_weights(name, c)
    dense = L - len(moe_layers(name, c))
    return L * (attn + other) + dense * 3 * c["hidden_size"] * c["intermediate_size"] \
        + len(moe_layers(name, c)) * moe_params + outside


def active_parameters(name, c):
    """Per token: every parameter except the routed experts a token does not visit."""
    _, _, expert = moe_weights(name, c)
    E = c.get("num_local_experts", c.get("num_experts", c.get("n_routed_experts")))
    return parameters(name, c) - len(moe_layers(name, c)) * (E - c["num_experts_per_tok"]) * expert


def attention_flops(name, c, b, nq, nk):
    """Eager attention: Q K^T and A V, dense over nq x nk (causal and window masks save nothing)."""
    g = dims(c)
    if name == "deepseek_v3":
        return 2 * b * g["h"] * nq * nk * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
                                           + c["v_head_dim"])
    return 4 * b * g["h"] * nq * nk * g["dh"]


def forward_flops(name, c, b, n):
    """FlopCounterMode forward: 2 * tokens * weights for every product (grouped_mm's included, by
    validate.measure.GROUPED_MM_FORMULAS), + attention; routed experts: top_k per token."""
    g = dims(c)
    T, L = b * n, g["L"]
    head, _ = head_and_embeddings(name, c)
    if name not in MOE:
        return L * (2 * T * layer_weights(name, c)[0] + attention_flops(name, c, b, n, n)) \
            + 2 * T * head
    attn, _ = attention_weights(name, c)
    moe_per_token, _, _ = moe_weights(name, c)
    moe = len(moe_layers(name, c))
    return L * (2 * T * attn + attention_flops(name, c, b, n, n)) \
        + (L - moe) * 2 * T * 3 * g["d"] * g["f"] + moe * 2 * T * moe_per_token + 2 * T * head


# =============================================================================================
# Bytes saved for backward (eager attention; s = 4 fp32, 2 bf16)


def rms_llama(b, n, d, s):
    """LlamaRMSNorm (also Qwen, Phi-3, Mistral, Mixtral, DeepSeek): fp32 x (PowBackward0), fp32
    rsqrt (b,n,1), x_hat.to(s) (weight * x_hat)."""
    return 4 * b * n * d + 4 * b * n + s * b * n * d


def rms_gemma(b, n, d):
    """GemmaRMSNorm: x.float(), rsqrt, the fp32 x_hat AND the fp32 (1 + weight) (a new (d,) tensor
    every call): `output * (1.0 + self.weight.float())` before `.type_as(x)`. No s term."""
    return 8 * b * n * d + 4 * b * n + 4 * d


def layernorm(b, n, d, s):
    """nn.LayerNorm on the CPU: input, mean, rstd, all in s."""
    return s * b * n * d + 2 * s * b * n


def lm_loss(b, n, V):
    """ForCausalLMLoss: fp32 log_softmax, shifted int64 labels (b = 1: a view of the padded
    n + 1), fp32 total_weight."""
    return 4 * b * n * V + 8 * (b * n + (b == 1)) + 4


def probs(b, h, n, s, softmax_bytes):
    """Softmax result, plus its cast to s (A V's input) when the softmax runs in fp32."""
    return softmax_bytes * b * h * n * n + (softmax_bytes != s) * s * b * h * n * n


def eager_core(b, h, n, dh, s, softmax_bytes, hk):
    """Q, K^T, V as the bmm saves them (h heads; hk < h where repeat_kv stays a view: MQA, b = 1)
    and the probabilities."""
    return s * b * n * dh * (h + 2 * hk) + probs(b, h, n, s, softmax_bytes)


def llama_layer_attention(b, n, s, d, h, hkv, dh):
    """Two RMSNorms, the q/k/v input and the FFN input (norm outputs), attention, o_proj input."""
    hk = 1 if (hkv == 1 and b == 1) else h
    return 2 * rms_llama(b, n, d, s) + 2 * s * b * n * d + eager_core(b, h, n, dh, s, 4, hk) \
        + s * b * n * h * dh


def causal_outside(name, c, b, n, s, final_norm):
    """Token ids, RoPE's cos and sin (one pair for all layers), final norm, head input, loss."""
    d, V = dims(c)["d"], dims(c)["V"]
    return (8 * b * n + 2 * s * n * rotary_dims(name, c) + final_norm + s * b * n * d
            + lm_loss(b, n, V))


def saved_llama_like(name, c, b, n, s):
    """Llama 3.1, Qwen2.5, Qwen3, Phi-3 (fused projections: the same bytes), Mistral, Gemma 1/2."""
    g = dims(c)
    d, h, hkv, dh, f, L = g["d"], g["h"], g["hkv"], g["dh"], g["f"], g["L"]
    layer = llama_layer_attention(b, n, s, d, h, hkv, dh) + 4 * s * b * n * f  # gate, act, up, prod
    final = rms_llama(b, n, d, s)
    if name == "qwen3":  # q_norm, k_norm: an RMSNorm over each head's d_h
        layer += rms_llama(b, n * (h + hkv), dh, s)
    if name in ("gemma", "gemma_mqa", "gemma2"):
        norms = 4 if name == "gemma2" else 2
        layer += norms * rms_gemma(b, n, d) - 2 * rms_llama(b, n, d, s)
        final = rms_gemma(b, n, d)
    outside = causal_outside(name, c, b, n, s, final)
    if name == "gemma2":  # soft-capping: tanh(scores / 50) and tanh(logits / 30), results in s
        layer += s * b * h * n * n
        outside += s * b * n * g["V"]
    return L * layer + outside


def saved_gpt_neox(c, b, n, s):
    """Parallel residual: both LayerNorms read the layer input (saved once, 2 sets of stats)."""
    g = dims(c)
    d, h, dh, f, L = g["d"], g["h"], g["dh"], g["f"], g["L"]
    layer = layernorm(b, n, d, s) + 2 * s * b * n + 3 * s * b * n * d \
        + eager_core(b, h, n, dh, s, 4, h)
    layer += 2 * s * b * n * f  # GELU input, dense_4h_to_h input
    return L * layer + causal_outside("gpt_neox", c, b, n, s, layernorm(b, n, d, s))


def saved_falcon(name, c, b, n, s):
    """Softmax in the model dtype (F.softmax(..., dtype=hidden_states.dtype)); _split_heads'
    qkv[:, :, :, [-2]] saves a 1-element int64 index twice (16 bytes per layer). New layout:
    ln_attn and ln_mlp on the same input. 7B: one LayerNorm feeds both (its output saved once)."""
    g = dims(c)
    d, h, dh, f, L = g["d"], g["h"], g["dh"], g["f"], g["L"]
    layer = layernorm(b, n, d, s) + s * b * n * d + 16 + s * b * n * d + 2 * s * b * n * f
    if name == "falcon_new":
        layer += 2 * s * b * n + s * b * n * d + eager_core(b, h, n, dh, s, s, h)
    else:
        layer += eager_core(b, h, n, dh, s, s, 1 if b == 1 else h)
    return L * layer + causal_outside(name, c, b, n, s, layernorm(b, n, d, s))


def saved_opt(name, c, b, n, s):
    """2 LayerNorms, q/k/v input, out_proj input, fc1 input, ReLU result (= fc2 input); outside:
    token and position ids (b,n) int64, project_in/out inputs, head input (w wide)."""
    g = dims(c)
    d, h, dh, f, V, L = g["d"], g["h"], g["dh"], g["f"], g["V"], g["L"]
    w = c["word_embed_proj_dim"]
    layer = 2 * layernorm(b, n, d, s) + 3 * s * b * n * d + eager_core(b, h, n, dh, s, 4, h) \
        + s * b * n * f
    outside = 16 * b * n + (w != d) * (s * b * n * w + s * b * n * d) + s * b * n * w \
        + lm_loss(b, n, V)
    outside += c["do_layer_norm_before"] * layernorm(b, n, d, s)
    return L * layer + outside


def saved_bloom(c, b, n, s):
    """ALiBi baddbmm saves Q and K^T; GeLUFunction saves its input (4d wide); b = 1: the saved
    query is a view of the fused qkv output, keeping all 3 s n d of it."""
    g = dims(c)
    d, h, V, L = g["d"], g["h"], g["V"], g["L"]
    layer = 2 * layernorm(b, n, d, s) + 3 * s * b * n * d + eager_core(b, h, n, d // h, s, 4, h) \
        + 8 * s * b * n * d + (b == 1) * 2 * s * n * d
    return L * layer + 8 * b * n + 2 * layernorm(b, n, d, s) + s * b * n * d + lm_loss(b, n, V)


def router_softmax(T, E, k, renormalise):
    """Mixtral / Qwen2-MoE: fp32 softmax, int64 top-k indices; renormalised top-k (Mixtral always,
    Qwen2-MoE with norm_topk_prob) adds the fp32 sum and top-k values (DivBackward0)."""
    return 4 * T * E + 8 * T * k + renormalise * (4 * T + 4 * T * k)


def router_sigmoid(T, d, E, k, s):
    """DeepSeek-V3: fp32 router weight, so a fp32 copy of the input in bf16 models, fp32 sigmoid,
    int64 top-k indices, fp32 sum and top-k weights (norm_topk_prob)."""
    return (s != 4) * 4 * T * d + 4 * T * E + 8 * T * k + 4 * T + 4 * T * k


def experts_grouped(T, k, E, d, f, s, w):
    """integrations/moe.py grouped_mm_experts_forward, S = k T slots: int64 perm // k, perm,
    inv_perm (24 S); int32 offsets, one per expert, shared by both grouped_mm (4 E); gathered input
    (S, d); gate_up output (S, 2f: SiLU input and up factor); SiLU output; product; down output;
    routing weights (w bytes: fp32 in Mixtral and DeepSeek, s in Qwen2-MoE)."""
    S = k * T
    return 24 * S + 4 * E + s * S * (2 * d + 4 * f) + w * S


def experts_batched(T, k, d, f, s, w):
    """batched_mm_experts_forward: each slot's gathered expert weights gate_up_proj[expert_ids] and
    down_proj[expert_ids] (the bmm operands, 3 d f per slot), the repeated input, gate_up output,
    SiLU output, product, down output and the routing weights; its expert ids are a view of the
    router's top-k indices (already counted)."""
    S = k * T
    return s * S * (2 * d + 3 * d * f + 4 * f) + w * S


def saved_moe(name, c, b, n, s):
    g = dims(c)
    d, h, hkv, dh, L = g["d"], g["h"], g["hkv"], g["dh"], g["L"]
    T, moe = b * n, moe_layers(name, c)
    if name == "deepseek_v3":
        attn = mla_saved(c, b, n, s) + 2 * rms_llama(b, n, d, s) + s * T * d  # + MLP input
        E, k, fm = c["n_routed_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
        block = router_sigmoid(T, d, E, k, s) + experts_grouped(T, k, E, d, fm, s, 4) \
            + 4 * s * T * fm * c["n_shared_experts"]
    elif name == "mixtral":
        attn = llama_layer_attention(b, n, s, d, h, hkv, dh)
        E, k = c["num_local_experts"], c["num_experts_per_tok"]
        block = router_softmax(T, E, k, True) + experts_grouped(T, k, E, d, g["f"], s, 4)
    else:
        attn = llama_layer_attention(b, n, s, d, h, hkv, dh)
        E, k, fm = c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
        block = router_softmax(T, E, k, c["norm_topk_prob"]) + experts_grouped(T, k, E, d, fm, s, s)
        block += 4 * s * T * c["shared_expert_intermediate_size"]  # shared expert MLP
        block += s * T + s * T * d  # sigmoid(shared_expert_gate) result, shared expert output
    dense = (L - len(moe)) * 4 * s * T * c["intermediate_size"]
    final = rms_llama(b, n, d, s)
    return L * attn + dense + len(moe) * block + causal_outside(name, c, b, n, s, final)


def mla_saved(c, b, n, s):
    """DeepseekV3Attention without its input norm: q_a/kv_a input, q_a_layernorm, q_b input,
    kv_a_layernorm (fp32: x.to(fp32) is a view of kv_a's whole (r_kv + rope) output), kv_b input
    (the cached latent), Q, K (h heads, nope + rope), V (b = 1: a view of kv_b's whole output),
    softmax (fp32) and its cast, o_proj input."""
    d, h = c["hidden_size"], c["num_attention_heads"]
    rq, rkv, nope, rope, dv = (c[k] for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                              "qk_rope_head_dim", "v_head_dim"))
    T = b * n
    out = s * T * d + rms_llama(b, n, rq, s) + s * T * rq
    out += 4 * T * (rkv + (s == 4) * rope) + 4 * T + s * T * rkv + s * T * rkv
    out += s * b * h * n * (2 * (nope + rope) + dv) + (b == 1) * s * h * n * nope
    return out + probs(b, h, n, s, 4) + s * T * h * dv


def saved_bytes(name, c, b, n, s):
    if name in MOE:
        return saved_moe(name, c, b, n, s)
    if name == "gpt_neox":
        return saved_gpt_neox(c, b, n, s)
    if name in ("falcon_new", "falcon_7b"):
        return saved_falcon(name, c, b, n, s)
    if name in ("opt", "opt_pre"):
        return saved_opt(name, c, b, n, s)
    if name == "bloom":
        return saved_bloom(c, b, n, s)
    return saved_llama_like(name, c, b, n, s)


# =============================================================================================
# KV cache


def layer_kinds(name, c):
    """"sliding" where DynamicCache builds a DynamicSlidingWindowLayer: Gemma 2 every other layer
    from layer 0 (layer_types), Mistral and Phi-3 every layer when sliding_window is set."""
    L = dims(c)["L"]
    if name == "gemma2":
        return ["sliding" if i % 2 == 0 else "full" for i in range(L)]
    if name in ("mistral_sw", "phi3", "phi3_partial") and c.get("sliding_window"):
        return ["sliding"] * L
    return ["full"] * L


def tokens_held(kind, n, gen, w):
    """Tokens in a layer's storage (cache_utils.py): full layers torch.cat everything. A sliding
    layer keeps keys[:, :, -w+1:], a VIEW of the concatenation: after the prefill that is the whole
    prefill (n tokens held, min(n, w-1) visible); after a decode step, a new cat of the w-1 visible
    and the new token: min(n + gen, w) held, min(n + gen, w - 1) visible."""
    if kind == "full":
        return n + gen
    return n if gen == 0 else min(n + gen, w)


def kv_cache_bytes(name, c, b, n, s, gen):
    g = dims(c)
    if name == "deepseek_v3":  # keys: kv_a_layernorm'd latent (r_kv); values: rotated k_rot (rope)
        return g["L"] * b * (n + gen) * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * s
    heads = {"falcon_new": g["h"],  # keys/values broadcast to h heads before layer_past.update
             "falcon_7b": 1, "gpt_neox": g["h"], "opt": g["h"], "opt_pre": g["h"],
             "bloom": g["h"]}.get(name, g["hkv"])
    w = c.get("sliding_window")
    return sum(2 * b * heads * tokens_held(kind, n, gen, w) * g["dh"] * s
               for kind in layer_kinds(name, c))


# =============================================================================================
# Measuring


@contextlib.contextmanager
def built(name, dtype, fake=True, experts=None):
    """The family's model, inside the FakeTensorMode it was built in (fake=False: real tensors)."""
    with fake_mode() if fake else contextlib.nullcontext():
        torch.manual_seed(0)
        yield build_hf_from_dict(FAMILY_CONFIGS[name], dtype=dtype, experts_implementation=experts)


def measure_dtype(name, dtype):
    """MoE in fp32 runs on real tensors: torch._grouped_mm's fake kernel takes only bf16."""
    return not (name in MOE and dtype == torch.float32)


# ---------------------------------------------------------------------------------------------
# Parameters and FLOPs


@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_parameters(name):
    with built(name, torch.float32, experts="batched_mm") as model:
        assert count_parameters(model) == parameters(name, FAMILY_CONFIGS[name])


def test_active_parameters_of_the_moe_families():
    # Mixtral: 2 of 5 experts of 3*48*40 per layer, 2 layers; the router and attention stay active
    assert active_parameters("mixtral", FAMILY_CONFIGS["mixtral"]) == 83_184 - 2 * 3 * 5_760
    assert active_parameters("deepseek_v3", FAMILY_CONFIGS["deepseek_v3"]) == 75_144 - 2 * 5 * 2_304


@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_forward_and_backward_matmul_flops(name):
    c = FAMILY_CONFIGS[name]
    with built(name, torch.bfloat16 if name in MOE else torch.float32) as model:
        flops = matmul_flops(model, family_inputs(c, 2, 10, labels=True), backward=True)
        assert flops.forward == forward_flops(name, c, 2, 10)
        assert flops.backward == 2 * flops.forward  # every product trains one of its operands
        assert matmul_flops(model, family_inputs(c, 1, 7)).forward == forward_flops(name, c, 1, 7)


# ---------------------------------------------------------------------------------------------
# Bytes saved for backward


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_saved_bytes(name, dtype):
    c, s = FAMILY_CONFIGS[name], 4 if dtype == torch.float32 else 2
    with built(name, dtype, fake=measure_dtype(name, dtype)) as model:
        for b, n in WORKLOADS:
            saved = saved_activation_bytes(model, family_inputs(c, b, n, labels=True))
            assert saved.total_bytes == saved_bytes(name, c, b, n, s), (b, n)


def test_example_saved_bytes():
    # the numbers FINDINGS.md section 11 quotes (b = 2, n = 10)
    for name, s, want in (("gemma2", 2, 204_780), ("falcon_7b", 4, 84_596),
                          ("mixtral", 2, 126_204), ("deepseek_v3", 2, 188_068)):
        assert saved_bytes(name, FAMILY_CONFIGS[name], 2, 10, s) == want


def test_moe_saves_int32_expert_offsets_once_per_layer():
    with built("mixtral", torch.bfloat16) as model:
        saved = saved_activation_bytes(model, family_inputs(FAMILY_CONFIGS["mixtral"], 2, 10, True))
    offsets = [t for t in saved.tensors if t.op == "GroupedMmBackward0._saved_offs"]
    assert [(t.dtype, t.shape) for t in offsets] == [("int32", (5,))] * 4  # 2 grouped_mm x 2 layers
    assert sum(t.bytes for t in offsets) == 2 * 4 * 5  # shared by both products: 4 E per layer


def test_deepseek_router_branches_that_end_in_indices_are_not_kept():
    # group scores' top-2 indices (T, G, 2), the groups' top-k indices (T, topk_group) and the
    # bool mask (T, E): saved by nodes the loss cannot reach, freed when the router returns
    c = FAMILY_CONFIGS["deepseek_v3"]
    with built("deepseek_v3", torch.bfloat16) as model:
        saved = saved_activation_bytes(model, family_inputs(c, 2, 10, labels=True))
    T, G, E = 20, c["n_group"], c["n_routed_experts"]
    assert saved.unreachable_bytes == 2 * (8 * T * G * 2 + 8 * T * c["topk_group"] + T * E)


# ---------------------------------------------------------------------------------------------
# KV cache


@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_kv_cache_bytes(name):
    c = FAMILY_CONFIGS[name]
    with built(name, torch.bfloat16) as model:
        model.eval()
        for b, n, steps in ((2, 10, 3), (1, 3, 2)):  # a prefill longer, then shorter than windows
            held = cache_after_each_step(model, family_inputs(c, b, n), steps)
            assert held == [kv_cache_bytes(name, c, b, n, 2, gen) for gen in range(steps + 1)]


def test_sliding_window_layers_keep_views_of_the_whole_prefill():
    c = FAMILY_CONFIGS["gemma2"]  # window 4; layers 0 and 2 slide
    with built("gemma2", torch.bfloat16) as model:
        model.eval()
        keys = run_with_cache(model, family_inputs(c, 2, 10), 0).layers[0].keys
        assert keys.shape[2] == 3 and keys.untyped_storage().nbytes() == 2 * 2 * 10 * 10 * 2
        keys = run_with_cache(model, family_inputs(c, 2, 10), 5).layers[0].keys
        assert keys.shape[2] == 3 and keys.untyped_storage().nbytes() == 2 * 2 * 4 * 10 * 2


def test_fp8_quantized_cache_holds_one_byte_per_element_and_two_scales_per_layer():
    from transformers import QuantizedCache

    c = FAMILY_CONFIGS["llama3"]
    model = build_hf_from_dict(c, dtype=torch.bfloat16).eval()
    cache = QuantizedCache(backend="fp8", config=model.config)
    with torch.no_grad():
        model(**family_inputs(c, 2, 10), cache=cache, use_cache=True)
    held = {t.untyped_storage()._cdata: t.untyped_storage().nbytes()
            for layer in cache.layers
            for t in (*layer._quantized_keys, *layer._quantized_values)}
    assert sum(held.values()) == 2 * 2 * 2 * 2 * 10 * 10 * 1 + 2 * 2 * 4  # 2 L b h_kv n d_h + 8 L


# ---------------------------------------------------------------------------------------------
# Decode steps: windowed attention, MLA's up-projection of the whole cache


def decode_step_flops(model, c, b, n, gen):
    """Forward matmul FLOPs of one decode step after a prefill of n and gen steps."""
    cache = run_with_cache(model, family_inputs(c, b, n), gen)
    step = {"input_ids": torch.ones(b, 1, dtype=torch.long), "cache": cache, "use_cache": True}
    return matmul_flops(model, step)


@pytest.mark.parametrize("name", ["mistral_sw", "gemma2", "deepseek_v3", "llama3"])
def test_decode_step_flops(name):
    c = FAMILY_CONFIGS[name]
    g = dims(c)
    with built(name, torch.bfloat16) as model:
        model.eval()
        for b, n, gen in ((2, 10, 2), (1, 2, 0)):
            context = n + gen + 1  # keys the new token attends to
            flops = decode_step_flops(model, c, b, n, gen)
            keys = [context if kind == "full" else min(context, c["sliding_window"])
                    for kind in layer_kinds(name, c)]  # a window layer: w - 1 cached + the new one
            assert flops.forward_by_op["aten.bmm"] == sum(
                attention_flops(name, c, b, 1, k) for k in keys), (b, n, gen)
            products = flops.forward - flops.forward_by_op["aten.bmm"]
            one_token = forward_flops(name, c, b, 1) - g["L"] * attention_flops(name, c, b, 1, 1)
            if name == "deepseek_v3":  # kv_b_proj up-projects every cached latent, every step
                up = 2 * b * c["kv_lora_rank"] * g["h"] * (c["qk_nope_head_dim"] + c["v_head_dim"])
                one_token += g["L"] * up * (context - 1)
            assert products == one_token, (b, n, gen)


# ---------------------------------------------------------------------------------------------
# grouped_mm: the FLOP formula on real tensors and against the batched_mm path


def test_grouped_mm_formula_on_real_tensors():
    # jagged groups with an empty one: rows 0-2 -> expert 0, none -> expert 1, rows 3-7 -> expert 2
    x = torch.randn(8, 16, requires_grad=True)
    w = torch.randn(3, 16, 24, requires_grad=True)
    offs = torch.tensor([3, 3, 8], dtype=torch.int32)
    from torch.utils.flop_counter import FlopCounterMode

    from validate.measure import EXTRA_FLOP_FORMULAS

    counter = FlopCounterMode(display=False, custom_mapping=dict(EXTRA_FLOP_FORMULAS))
    with counter:
        y = torch._grouped_mm(x, w, offs=offs)
        forward = counter.get_total_flops()
        y.backward(torch.randn_like(y))  # (a sum's stride-0 gradient is not a valid operand)
    assert torch.allclose(y, torch.cat([x[:3] @ w[0], x[3:] @ w[2]]), atol=1e-5)
    per_group = sum(2 * rows * 16 * 24 for rows in (3, 0, 5))
    assert forward == per_group
    assert counter.get_total_flops() == 3 * per_group  # input gradient + weight gradient


def test_grouped_mm_counts_what_batched_mm_and_the_profiler_count_but_saves_less():
    c = FAMILY_CONFIGS["mixtral"]
    inputs = family_inputs(c, 2, 10, labels=True)
    with built("mixtral", torch.float32, fake=False) as grouped:
        g = matmul_flops(grouped, inputs, backward=True)
        saved_gm = saved_activation_bytes(grouped, inputs).total_bytes
    with built("mixtral", torch.float32, fake=False, experts="batched_mm") as batched:
        bm = matmul_flops(batched, inputs, backward=True)
        profiled = profiler_matmul_flops(batched, inputs, backward=True)
        saved_bm = saved_activation_bytes(batched, inputs).total_bytes
    assert (g.forward, g.backward) == (bm.forward, bm.backward) == (1_841_280, 3_682_560)
    d, f, k, E = c["hidden_size"], c["intermediate_size"], c["num_experts_per_tok"], 5
    grouped_bytes = saved_moe("mixtral", c, 2, 10, 4)
    assert saved_gm == grouped_bytes
    assert saved_bm == grouped_bytes + 2 * (experts_batched(20, k, d, f, 4, 4)
                                            - experts_grouped(20, k, E, d, f, 4, 4))
    assert "aten._grouped_mm" in g.forward_by_op and "aten._grouped_mm" not in bm.forward_by_op
    assert profiled == g.forward + g.backward


def test_expert_loads_set_the_grouped_flops():
    c = FAMILY_CONFIGS["qwen2_moe"]
    inputs = family_inputs(c, 2, 10)
    with built("qwen2_moe", torch.float32, fake=False) as model:
        loads = expert_loads(model, inputs)
        flops = matmul_flops(model, inputs)
    assert list(loads) == ["model.layers.0.mlp.experts"]  # layer 1 is in mlp_only_layers
    assert sum(loads["model.layers.0.mlp.experts"]) == 2 * 10 * c["num_experts_per_tok"]
    d, f = c["hidden_size"], c["moe_intermediate_size"]
    assert flops.forward_by_op["aten._grouped_mm"] == sum(
        2 * load * 3 * d * f for layer in loads.values() for load in layer)


# ---------------------------------------------------------------------------------------------
# Quantized weights (optional libraries: pip install bitsandbytes accelerate optimum-quanto torchao)

QUANT_MODEL = dict(model_type="llama", vocab_size=320, hidden_size=256, intermediate_size=384,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                   tie_word_embeddings=False, max_position_embeddings=64)
LIBRARIES = {"bnb": ("bitsandbytes", "accelerate"), "quanto": ("optimum.quanto",),
             "torchao": ("torchao",)}


def quantized_linears(c):
    """(out, in) of every nn.Linear the integrations quantize: q, k, v, o, gate, up, down."""
    d, h, hkv, dh, f = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], \
        c["head_dim"], c["intermediate_size"]
    layer = [(h * dh, d), (hkv * dh, d), (hkv * dh, d), (d, h * dh), (f, d), (f, d), (d, f)]
    return layer * c["num_hidden_layers"]


def quantized_layout(scheme, c):
    """Bytes by part, from each format's layout (out x in = N elements per weight, bf16 model).

    bitsandbytes int8 (LLM.int8): int8 N + fp32 row absmax (SCB) per output row.
    bitsandbytes nf4: N/2 packed + fp32 absmax per block of 64 + the 16-entry fp32 code (64 B).
    nf4 + double quantisation: absmax as uint8 (N/64) + fp32 absmax per 256 blocks + fp32 offset
    + the 16-entry code and the 256-entry fp32 code of the second quantisation (1,092 B of tables).
    quanto int8 / float8: N + one bf16 scale per output row; int4: N/2 + bf16 scale and shift per
    group of 128 (TinyGemm layout, both in _scale_shift); every QLinear adds input_scale and
    output_scale buffers (fp32 scalars, 8 B, counted with the unquantized tensors).
    torchao int8 weight-only: N + fp32 scale + int8 zero point per row; float8: N + fp32 scale/row.
    Unquantized: embeddings, lm_head, RMSNorm weights (bf16) and RoPE's two fp32 inv_freq buffers.
    """
    lin = quantized_linears(c)
    N = sum(o * i for o, i in lin)
    rows = sum(o for o, _ in lin)
    d, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    unquantized = 2 * (2 * V * d + (2 * L + 1) * d) + 2 * 4 * (c["head_dim"] // 2)
    parts = {
        "bnb-int8": {"data": N, "scales": 4 * rows},
        "bnb-nf4": {"data": N // 2, "scales": 4 * N // 64, "tables": 64 * len(lin)},
        "bnb-nf4-double": {"data": N // 2,
                           "scales": N // 64 + sum(4 * -(-o * i // (64 * 256)) for o, i in lin),
                           "tables": (64 + 1024 + 4) * len(lin)},
        "quanto-int8": {"data": N, "scales": 2 * rows},
        "quanto-fp8": {"data": N, "scales": 2 * rows},
        "quanto-int4": {"data": N // 2, "scales": 2 * 2 * N // 128},
        "torchao-int8": {"data": N, "scales": 4 * rows, "zeros": rows},
        "torchao-fp8": {"data": N, "scales": 4 * rows},
    }[scheme]
    quanto_buffers = 8 * len(lin) if scheme.startswith("quanto") else 0
    return {"unquantized": unquantized + quanto_buffers, **parts}


@pytest.fixture(scope="module")
def quant_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    build_hf_from_dict(QUANT_MODEL, dtype=torch.bfloat16).save_pretrained(path)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["bnb-int8", "bnb-nf4", "bnb-nf4-double", "quanto-int8",
                                    "quanto-fp8", "quanto-int4", "torchao-int8", "torchao-fp8"])
def test_quantized_weight_storage(scheme, quant_checkpoint):
    for module in LIBRARIES[scheme.split("-")[0]]:
        pytest.importorskip(module)
    from validate.quantized import load_quantized, storage_by_part

    model = load_quantized(quant_checkpoint, scheme)
    assert storage_by_part(model) == quantized_layout(scheme, QUANT_MODEL)
    with torch.no_grad():  # and it runs on this CPU
        assert model(input_ids=torch.arange(8).reshape(1, 8)).logits.shape == (1, 8, 320)
