"""Closed forms for issue 14's families, written from Hugging Face's code, for the measured tests.

The parameters, forward matmul FLOPs, bytes saved for backward (eager attention, s = 4 fp32, 2 bf16)
and KV-cache bytes of every family of tests/family_configs.py, read from its config dict the way
each family's config class reads it. Each formula cites the code that makes it so;
tests/test_hf_families_measure.py measures the classes and compares, and
tests/test_hf_quantized_storage.py does the same for quantized weights. No torch here.
"""

from __future__ import annotations

from tests.family_configs import FAMILY_CONFIGS

MOE = ("mixtral", "qwen2_moe", "deepseek_v3")
DENSE = tuple(name for name in FAMILY_CONFIGS if name not in MOE)


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
