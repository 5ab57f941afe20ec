"""Every dimension of the cost model, declared once as a sympy symbol.

Model dimensions come from a ModelConfig; workload dimensions (batch, lengths, bytes per element)
come from a Workload. Formulas in blocks/ are built only from these symbols, so one expression
serves the LaTeX, the exact integers and the vectorised sweeps.
"""

from __future__ import annotations

import sympy as sp


def _dim(name: str) -> sp.Symbol:
    """A positive integer dimension."""
    return sp.Symbol(name, integer=True, positive=True)


# Model dimensions.
d = _dim("d")  # d_model, the residual stream width
h = _dim("h")  # query heads
h_kv = _dim("h_kv")  # key/value heads (GQA: divides h)
d_h = _dim("d_h")  # head dimension (d / h unless the config says otherwise, e.g. T5's d_kv)
d_ff = _dim("d_ff")  # FFN inner width
V = _dim("V")  # vocabulary size
P = _dim("P")  # rows of a learned position table (max positions)
N_tt = _dim("N_tt")  # token types (BERT's segment embeddings)
N_rb = _dim("N_rb")  # relative-position buckets (T5)
L_enc = _dim("L_enc")  # encoder layers
L_dec = _dim("L_dec")  # decoder layers
d_r = _dim("d_r")  # rotary width: the part of each query/key head RoPE rotates (d_h unless partial)
d_e = _dim("d_e")  # token-embedding width when it differs from d (OPT's word_embed_proj_dim)
w = _dim("w")  # sliding window: keys a windowed layer attends to, and its cache keeps
L_w = _dim("L_w")  # decoder layers with a sliding window
E = _dim("E")  # routed experts per mixture-of-experts layer
k = _dim("k")  # experts each token is routed to (top-k)
d_x = _dim("d_x")  # one routed expert's inner width (moe_intermediate_size)
d_s = _dim("d_s")  # the shared experts' inner width (all shared experts as one MLP)
Z = _dim("Z")  # zero-compute (identity) experts beside the E routed ones (LongCat-Flash's zero_expert_num)
d_l = _dim("d_l")  # the routed experts' latent width, their input and output (moe_latent_size)
L_moe = _dim("L_moe")  # decoder layers whose FFN is a mixture of experts
L_np = _dim("L_np")  # decoder layers whose attention has no RoPE (SmolLM3's NoPE layers)
r_q = _dim("r_q")  # MLA: rank of the compressed query (q_lora_rank)
r_kv = _dim("r_kv")  # MLA: rank of the compressed key/value latent (kv_lora_rank), what is cached
d_v = _dim("d_v")  # MLA: value head dimension (v_head_dim); d_h is the query/key head width
h_i = _dim("h_i")  # DeepSeek-V3.2's lightning indexer: its query heads (index_n_heads)
d_i = _dim("d_i")  # the indexer's head width (index_head_dim), one cached key per token
p_l = _dim("p_l")  # Gemma 4's per-layer input width (hidden_size_per_layer_input)
V_pl = _dim("V_pl")  # rows of Gemma 4's per-layer input table (vocab_size_per_layer_input)
L_ws = _dim("L_ws")  # Gemma 4's sliding layers that reuse an earlier layer's keys and values (num_kv_shared_layers)
L_fs = _dim("L_fs")  # its full-attention layers that do
h_kvg = _dim("h_kvg")  # KV heads of Gemma 4's full layers where they differ (num_global_key_value_heads)
A_u = _dim("A_u")  # Gemma 3n's AltUp streams (altup_num_inputs)
r_la = _dim("r_la")  # Gemma 3n's LAuReL rank (laurel_rank)
d_hg = _dim("d_hg")  # head width of the full-attention layers where it differs (Gemma 4's global_head_dim)
# Mamba-2 mixers (transformers' nemotron_h): heads, their width, the state, B/C groups, the conv
# kernel, the scan's chunk and the layers that are Mamba-2 mixers.
H_m = _dim("H_m")  # Mamba-2 heads (mamba_num_heads)
P_m = _dim("P_m")  # Mamba-2 head width (mamba_head_dim); the mixer's inner width is H_m P_m
N_m = _dim("N_m")  # Mamba-2 state size per head (ssm_state_size)
G_m = _dim("G_m")  # Mamba-2 groups sharing B and C (n_groups)
K_m = _dim("K_m")  # Mamba-2 depthwise conv kernel (conv_kernel)
Q_m = _dim("Q_m")  # Mamba-2 chunk length of the chunked scan (chunk_size)
L_m = _dim("L_m")  # layers whose one mixer is a Mamba-2 mixer (ModelConfig.mixer_layers)
L_a = _dim("L_a")  # layers whose one mixer is attention (mixer_layers)
L_f = _dim("L_f")  # layers whose one mixer is a dense MLP (mixer_layers)
# Gated DeltaNet mixers (transformers' qwen3_next, blocks/deltanet.py): key heads, value heads,
# their widths and the layers that are Gated DeltaNet mixers (the conv kernel K_m, the chunk Q_m).
H_gk = _dim("H_gk")  # Gated DeltaNet key (and query) heads (linear_num_key_heads)
H_gv = _dim("H_gv")  # Gated DeltaNet value heads (linear_num_value_heads)
P_gk = _dim("P_gk")  # Gated DeltaNet key head width (linear_key_head_dim)
P_gv = _dim("P_gv")  # Gated DeltaNet value head width (linear_value_head_dim)
L_g = _dim("L_g")  # layers whose one mixer is a Gated DeltaNet mixer (mixer_layers)
# Mamba-1 mixers (transformers' mamba, falcon_mamba; blocks/mamba1.py): the inner width, the rank
# of dt's projection and the layers that are Mamba-1 mixers (the state N_m, the conv kernel K_m).
D_m1 = _dim("D_m1")  # Mamba-1 inner width (intermediate_size, expand x hidden_size)
R_m1 = _dim("R_m1")  # Mamba-1 dt rank (time_step_rank)
L_m1 = _dim("L_m1")  # layers whose one mixer is a Mamba-1 mixer (mixer_layers)
# LFM2's gated short convolutions (transformers' lfm2, blocks/shortconv.py; the conv kernel K_m).
L_sc = _dim("L_sc")  # layers whose one mixer is a short convolution (mixer_layers)
# MiniMax's lightning attention (transformers' minimax, blocks/lightning.py; h, d_h, its block Q_m).
L_la = _dim("L_la")  # layers whose one mixer is a lightning attention (mixer_layers)
# Kimi Delta Attention (transformers' kimi_linear, blocks/kda.py; H_gv heads of P_gv, K_m taps).
L_kd = _dim("L_kd")  # layers whose one mixer is a Kimi Delta Attention (mixer_layers)
# Griffin's RG-LRU recurrent blocks (transformers' recurrent_gemma, blocks/rglru.py; h gate blocks, K_m taps).
D_rg = _dim("D_rg")  # RG-LRU width (lru_width)
L_rg = _dim("L_rg")  # layers whose one mixer is an RG-LRU recurrent block (mixer_layers)
# RWKV-4's time and channel mixes (transformers' rwkv, blocks/rwkv.py; d wide, the channel mix d_ff).
L_rt = _dim("L_rt")  # layers whose one mixer is an RWKV time mix (mixer_layers)
L_rc = _dim("L_rc")  # layers whose one mixer is an RWKV channel mix (mixer_layers)
# xLSTM's mLSTM (transformers' xlstm, blocks/mlstm.py; h heads of d_h query/key and d_v value width, chunk Q_m).
L_ml = _dim("L_ml")  # layers whose one mixer is an mLSTM (mixer_layers)
# Zamba's shared attention-and-MLP blocks (transformers' zamba, zamba2; costmodel/shared_block.py).
L_sh = _dim("L_sh")  # uses of the shared blocks (mixer_layers "shared")
B_sh = _dim("B_sh")  # shared blocks held (num_mem_blocks, at most L_sh)
r_sh = _dim("r_sh")  # rank of each use's LoRA adapters (zamba2's adapter_rank)
# DeepSeek-V4 (transformers' deepseek_v4, blocks/deepseek_v4.py): the hyper-connections' residual
# streams, the grouped output projection's groups and rank, the two compression rates and the
# layers of each compressed kind (the others slide only).
H_c = _dim("H_c")  # residual streams (hc_mult)
g_o = _dim("g_o")  # output projection groups (o_groups)
r_o = _dim("r_o")  # each group's rank (o_lora_rank)
m_c = _dim("m_c")  # compressed sparse attention's rate: one entry every m_c tokens (compress_rates)
m_h = _dim("m_h")  # heavily compressed attention's rate
L_cs = _dim("L_cs")  # layers of compressed sparse attention (layer_types)
L_hc = _dim("L_hc")  # layers of heavily compressed attention

# Workload dimensions.
b = _dim("b")  # batch size (sequences)
n = _dim("n")  # tokens per sequence on the decoder side (or the only side)
s = _dim("s")  # tokens per source sequence (encoder side of an encoder-decoder)
T = sp.Symbol("T", integer=True, nonnegative=True)  # tokens generated after the prefill
c = _dim("c")  # keys a decode step attends to: the cached tokens plus the new one
e = _dim("e")  # bytes per activation element (2 for bf16/fp16, 4 for fp32)

# Parallel layouts (costmodel/layout): the sizes of the groups a rank belongs to.
tp = _dim("tp")  # tensor-parallel ranks (heads, d_ff and the vocabulary split; sequence with SP)
dp = _dim("dp")  # data-parallel ranks (ZeRO/FSDP shard over them)

MODEL_SYMBOLS = (d, h, h_kv, d_h, d_ff, V, P, N_tt, N_rb, L_enc, L_dec, d_r, d_e, w, L_w, E, k,
                 d_x, d_s, d_l, L_moe, r_q, r_kv, d_v, L_np, H_m, P_m, N_m, G_m, K_m, Q_m, L_m, L_a, L_f,
                 H_gk, H_gv, P_gk, P_gv, L_g, D_m1, R_m1, L_m1, L_sc, L_la, L_kd, D_rg, L_rg, L_rt, L_rc, L_ml, L_sh, B_sh, r_sh, p_l, V_pl, d_hg, L_ws, L_fs, h_kvg,
                 H_c, g_o, r_o, m_c, m_h, L_cs, L_hc, Z)
WORKLOAD_SYMBOLS = (b, n, s, T, c, e)
#: The tokens a generation of T feeds back, each taking a position and a place in the KV cache: the
#: last one is returned, never fed back (transformers' generate with max_new_tokens=T runs the prompt
#: and T - 1 one-token steps; Workload.fed_back_tokens is its number).
FED_BACK = sp.Max(T - 1, 0)
#: The keys of a generation's last decode step, which its KV cache holds at the end: n + T - 1.
LAST_CONTEXT = n + FED_BACK
LAYOUT_SYMBOLS = (tp, dp)

#: How each symbol is written in LaTeX (sympy's default would print d_ff as d_{ff} already; the
#: mapping makes the others read like the papers).
LATEX_NAMES = {
    d: r"d",
    h: r"h",
    h_kv: r"h_{kv}",
    d_h: r"d_{h}",
    d_ff: r"d_{ff}",
    V: r"V",
    P: r"P",
    N_tt: r"N_{tt}",
    N_rb: r"N_{rb}",
    L_enc: r"L_{enc}",
    L_dec: r"L_{dec}",
    d_r: r"d_{r}",
    d_e: r"d_{e}",
    w: r"w",
    L_w: r"L_{w}",
    E: r"E",
    k: r"k",
    d_x: r"d_{x}",
    d_s: r"d_{s}",
    d_l: r"d_{l}",
    L_moe: r"L_{moe}",
    L_np: r"L_{nope}",
    r_q: r"r_{q}",
    r_kv: r"r_{kv}",
    d_v: r"d_{v}",
    H_m: r"H_{m}",
    P_m: r"P_{m}",
    N_m: r"N_{m}",
    G_m: r"G_{m}",
    K_m: r"K_{m}",
    Q_m: r"Q_{m}",
    L_m: r"L_{mamba}",
    L_a: r"L_{attn}",
    L_f: r"L_{mlp}",
    p_l: r"p_{l}",
    V_pl: r"V_{pl}",
    d_hg: r"d_{hg}",
    L_ws: r"L_{ws}",
    h_kvg: r"h_{kvg}",
    L_fs: r"L_{fs}",
    H_gk: r"H_{gk}",
    H_gv: r"H_{gv}",
    P_gk: r"P_{gk}",
    P_gv: r"P_{gv}",
    L_g: r"L_{gdn}",
    D_m1: r"D_{m1}",
    R_m1: r"R_{m1}",
    L_m1: r"L_{mamba1}",
    L_sc: r"L_{conv}",
    L_la: r"L_{lightning}",
    L_kd: r"L_{kda}",
    D_rg: r"D_{rg}",
    L_rg: r"L_{rglru}",
    L_sh: r"L_{shared}",
    B_sh: r"B_{shared}",
    r_sh: r"r_{adapter}",
    L_rt: r"L_{rwkv,t}",
    L_rc: r"L_{rwkv,c}",
    L_ml: r"L_{mlstm}",
    H_c: r"H_{c}",
    g_o: r"g_{o}",
    r_o: r"r_{o}",
    m_c: r"m_{c}",
    m_h: r"m_{h}",
    L_cs: r"L_{csa}",
    L_hc: r"L_{hca}",
    b: r"b",
    n: r"n",
    s: r"s",
    T: r"T",
    c: r"c",
    e: r"e",
    tp: r"t",
    dp: r"D",
}

DESCRIPTIONS = {
    d: "model width d_model",
    h: "query heads",
    h_kv: "key/value heads",
    d_h: "head dimension",
    d_ff: "FFN inner width",
    V: "vocabulary size",
    P: "learned position rows",
    N_tt: "token types",
    N_rb: "relative-position buckets",
    L_enc: "encoder layers",
    L_dec: "decoder layers",
    d_r: "rotary width per head",
    d_e: "token-embedding width",
    w: "sliding window",
    L_w: "layers with a sliding window",
    E: "routed experts",
    k: "experts per token (top-k)",
    d_x: "routed expert inner width",
    d_s: "shared experts' inner width",
    d_l: "routed experts' latent width",
    L_moe: "mixture-of-experts layers",
    L_np: "layers without RoPE",
    r_q: "MLA query rank",
    r_kv: "MLA key/value latent rank",
    d_v: "value head dimension",
    H_m: "Mamba-2 heads",
    P_m: "Mamba-2 head width",
    N_m: "Mamba-2 state size",
    G_m: "Mamba-2 B/C groups",
    K_m: "Mamba-2 conv kernel",
    Q_m: "Mamba-2 scan chunk length",
    L_m: "Mamba-2 mixer layers",
    L_a: "attention-only layers",
    L_f: "MLP-only layers",
    H_gk: "Gated DeltaNet key heads",
    H_gv: "Gated DeltaNet value heads",
    P_gk: "Gated DeltaNet key head width",
    P_gv: "Gated DeltaNet value head width",
    L_g: "Gated DeltaNet mixer layers",
    D_m1: "Mamba-1 inner width",
    R_m1: "Mamba-1 dt rank",
    L_m1: "Mamba-1 mixer layers",
    L_sc: "short convolution layers",
    L_la: "lightning attention layers",
    L_kd: "Kimi Delta Attention layers",
    D_rg: "RG-LRU width",
    L_rg: "RG-LRU recurrent layers",
    L_sh: "uses of the shared attention-and-MLP blocks",
    B_sh: "shared attention-and-MLP blocks held",
    r_sh: "rank of each shared-block use's adapters",
    L_rt: "RWKV time-mix layers",
    L_rc: "RWKV channel-mix layers",
    L_ml: "mLSTM layers",
    H_c: "hyper-connection residual streams",
    g_o: "grouped output projection's groups",
    r_o: "grouped output projection's rank per group",
    m_c: "compressed sparse attention's rate",
    m_h: "heavily compressed attention's rate",
    L_cs: "compressed sparse attention layers",
    L_hc: "heavily compressed attention layers",
    p_l: "per-layer input width",
    V_pl: "per-layer input vocabulary",
    d_hg: "full-attention head width",
    L_ws: "sliding layers sharing K/V",
    h_kvg: "full-attention KV heads",
    L_fs: "full layers sharing K/V",
    b: "batch size",
    n: "sequence length (decoder side)",
    s: "source sequence length (encoder side)",
    T: "generated tokens",
    c: "context of a decode step (cached tokens + the new one)",
    e: "bytes per activation element",
    tp: "tensor-parallel ranks",
    dp: "data-parallel ranks",
}


def latex(expr: sp.Expr) -> str:
    """LaTeX of an expression with the project's symbol names."""
    return sp.latex(expr, symbol_names=LATEX_NAMES)
