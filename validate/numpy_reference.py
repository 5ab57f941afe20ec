"""The reference Transformer's blocks again, in plain numpy: the independent check of the torch code.

Each function is the textbook formula written with numpy arrays (float64), taking the weights as a
dict of arrays named like the torch module's parameters (numpy_params turns a module into one).
tests/test_numpy_reference.py runs both on tiny, odd sizes and asserts np.allclose, as the seeds
do. Nothing here imports torch. Shapes: B batch, T queries, S keys, h heads, d_h head width.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from costmodel.config import GATED_ACTIVATIONS, ModelConfig

Array = np.ndarray
Params = dict[str, Array]

LAYERNORM_EPS = 1e-5
RMSNORM_EPS = 1e-6
NEGATIVE = -1e300  # "minus infinity" that keeps a fully masked row finite


def numpy_params(module: Any) -> Params:
    """A torch module's parameters as float64 numpy arrays, by name."""
    return {name: p.detach().double().cpu().numpy() for name, p in module.named_parameters()}


def sub(params: Params, prefix: str) -> Params:
    """The parameters under `prefix.`, with the prefix removed."""
    start = prefix + "."
    return {k[len(start) :]: v for k, v in params.items() if k.startswith(start)}


def linear(x: Array, params: Params, name: str) -> Array:
    """x W^T + b, the bias only if the layer has one."""
    y = x @ params[f"{name}.weight"].T
    return y + params[f"{name}.bias"] if f"{name}.bias" in params else y


# Embeddings and positions -------------------------------------------------------------------


def embedding(ids: Array, table: Array, scale: bool = False) -> Array:
    """Rows of the table; times sqrt(d) when scaled (Vaswani et al. 2017, section 3.4)."""
    x = table[ids]
    return x * math.sqrt(table.shape[1]) if scale else x


def sinusoid_table(length: int, d_model: int) -> Array:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    table = np.zeros((length, d_model))
    for pos in range(length):
        for i in range(d_model):
            angle = pos / 10000 ** ((i - i % 2) / d_model)
            table[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return table


def rope(x: Array, positions: Array, base: float = 10000.0) -> Array:
    """Rotate feature pairs (j, j + d_h/2) of x (..., T, d_h) by angle position * base^(-2j/d_h)."""
    half = x.shape[-1] // 2
    theta = base ** (-2.0 * np.arange(half) / x.shape[-1])  # (d_h/2,)
    angle = positions[:, None] * theta[None, :]  # (T, d_h/2)
    first, second = x[..., :half], x[..., half:]
    cos, sin = np.cos(angle), np.sin(angle)
    return np.concatenate([first * cos - second * sin, first * sin + second * cos], axis=-1)


def alibi_slopes(n_heads: int) -> Array:
    """Press et al.: 2^(-8k/n) for k = 1..n when n is a power of two, interleaved otherwise."""
    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]

    closest = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = geometric(closest)
    slopes += geometric(2 * closest)[0::2][: n_heads - closest]
    return np.array(slopes)


def alibi_bias(n_heads: int, start: int, q_len: int, k_len: int) -> Array:
    """-slope_head * |i - j| for query position i = start.. and key position j. (h, T, S)."""
    query = np.arange(start, start + q_len)[:, None]
    key = np.arange(k_len)[None, :]
    return -alibi_slopes(n_heads)[:, None, None] * np.abs(query - key)[None]


def t5_bucket(relative: int, bidirectional: bool, n_buckets: int, max_distance: int = 128) -> int:
    """T5's bucket of one (key - query) offset, written for a single integer."""
    bucket = 0
    if bidirectional:
        n_buckets //= 2
        bucket += n_buckets if relative > 0 else 0
        distance = abs(relative)
    else:
        distance = max(-relative, 0)
    exact = n_buckets // 2
    if distance < exact:
        return bucket + distance
    large = exact + int(math.log(distance / exact) / math.log(max_distance / exact) * (n_buckets - exact))
    return bucket + min(large, n_buckets - 1)


def relative_bias(table: Array, bidirectional: bool, start: int, q_len: int, k_len: int) -> Array:
    """T5's bias: table[bucket(j - i), head] for every query i and key j. (h, T, S)."""
    n_buckets, n_heads = table.shape
    out = np.zeros((n_heads, q_len, k_len))
    for i in range(q_len):
        for j in range(k_len):
            out[:, i, j] = table[t5_bucket(j - (start + i), bidirectional, n_buckets)]
    return out


# Attention ----------------------------------------------------------------------------------


def softmax(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def causal_allowed(q_len: int, k_len: int, start: int = 0) -> Array:
    """True where query i (at position start + i) may see key j <= start + i. (T, S)."""
    return np.arange(k_len)[None, :] <= np.arange(start, start + q_len)[:, None]


def attention(
    q: Array, k: Array, v: Array, allowed: Array | None = None, bias: Array | None = None,
    scale: float | None = None,
) -> tuple[Array, Array]:
    """softmax(q k^T scale + bias, hidden where not allowed) v. q (B, h, T, d_h), k, v (B, h, S, d_h),
    allowed broadcastable to (B, h, T, S). Returns the output and the weights."""
    scores = np.einsum("bhtd,bhsd->bhts", q, k)
    if scale is not None:
        scores = scores * scale
    if bias is not None:
        scores = scores + bias
    if allowed is not None:
        scores = np.where(allowed, scores, NEGATIVE)
    weights = softmax(scores)
    return np.einsum("bhts,bhsd->bhtd", weights, v), weights


def multi_head_attention(
    x: Array,
    params: Params,
    cfg: ModelConfig,
    context: Array | None = None,
    allowed: Array | None = None,
    bias: Array | None = None,
    positions: Array | None = None,
) -> Array:
    """Heads split from the projections; KV head g // (h / h_kv) serves query head g (GQA);
    positions (T,) rotate queries and keys (RoPE) when given. x (B, T, d) -> (B, T, d)."""
    source = x if context is None else context
    B, T, _ = x.shape
    S = source.shape[1]
    h, h_kv, d_h = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    q = linear(x, params, "q_proj").reshape(B, T, h, d_h).transpose(0, 2, 1, 3)
    k = linear(source, params, "k_proj").reshape(B, S, h_kv, d_h).transpose(0, 2, 1, 3)
    v = linear(source, params, "v_proj").reshape(B, S, h_kv, d_h).transpose(0, 2, 1, 3)
    if positions is not None:
        q, k = rope(q, positions), rope(k, positions)
    group = np.arange(h) // (h // h_kv)  # the KV head of each query head
    k, v = k[:, group], v[:, group]
    scale = cfg.scores_scale
    out, _ = attention(q, k, v, allowed, bias, scale)
    out = out.transpose(0, 2, 1, 3).reshape(B, T, h * d_h)
    return linear(out, params, "out_proj")


# Feed-forward, norms, residuals -------------------------------------------------------------


def gelu(x: Array) -> Array:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def gelu_tanh(x: Array) -> Array:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def silu(x: Array) -> Array:
    return x / (1.0 + np.exp(-x))


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "relu2": lambda x: np.maximum(x, 0.0) ** 2,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
    "swiglu": silu,
    "geglu": gelu,
    "geglu_tanh": gelu_tanh,
    "relu2_glu": lambda x: np.maximum(x, 0.0) ** 2,
}


def feed_forward(x: Array, params: Params, activation: str) -> Array:
    """down(act(up x)); gated: down(act(gate x) * up x)."""
    act = ACTIVATIONS[activation]
    if activation in GATED_ACTIVATIONS:
        hidden = act(linear(x, params, "gate_proj")) * linear(x, params, "up_proj")
    else:
        hidden = act(linear(x, params, "up_proj"))
    return linear(hidden, params, "down_proj")


def layer_norm(x: Array, weight: Array, bias: Array, eps: float = LAYERNORM_EPS) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


def rms_norm(x: Array, weight: Array, eps: float = RMSNORM_EPS) -> Array:
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * weight


def norm(x: Array, params: Params, cfg: ModelConfig) -> Array:
    if cfg.norm == "rmsnorm":
        return rms_norm(x, params["weight"])
    return layer_norm(x, params["weight"], params["bias"])


def add_norm(x: Array, f: Callable[[Array], Array], norm_params: Params, cfg: ModelConfig) -> Array:
    """Post-LN: LayerNorm(x + f(x)) (Vaswani et al.); pre-LN: x + f(norm(x)) (GPT-2, Llama)."""
    if cfg.norm_position == "pre":
        return x + f(norm(x, norm_params, cfg))
    return norm(x + f(x), norm_params, cfg)


def encoder_layer(
    x: Array, params: Params, cfg: ModelConfig, allowed: Array | None = None,
    bias: Array | None = None, positions: Array | None = None,
) -> Array:
    """Self-attention then FFN, each inside Add & Norm; params named as EncoderLayer's."""
    attention_params = sub(params, "self_attention.block")
    x = add_norm(
        x,
        lambda y: multi_head_attention(y, attention_params, cfg, None, allowed, bias, positions),
        sub(params, "self_attention.norm"),
        cfg,
    )
    ffn = sub(params, "ffn.block")
    return add_norm(x, lambda y: feed_forward(y, ffn, cfg.activation), sub(params, "ffn.norm"), cfg)


def decoder_layer(
    x: Array, params: Params, cfg: ModelConfig, memory: Array | None = None,
    memory_allowed: Array | None = None, bias: Array | None = None,
    positions: Array | None = None,
) -> Array:
    """Causal self-attention, cross-attention to memory (if given), FFN; params as DecoderLayer's."""
    T = x.shape[1]
    allowed = causal_allowed(T, T)
    self_params = sub(params, "self_attention.block")
    x = add_norm(
        x,
        lambda y: multi_head_attention(y, self_params, cfg, None, allowed, bias, positions),
        sub(params, "self_attention.norm"),
        cfg,
    )
    if memory is not None:
        cross = sub(params, "cross_attention.block")
        x = add_norm(
            x,
            lambda y: multi_head_attention(y, cross, cfg, memory, memory_allowed),
            sub(params, "cross_attention.norm"),
            cfg,
        )
    ffn = sub(params, "ffn.block")
    return add_norm(x, lambda y: feed_forward(y, ffn, cfg.activation), sub(params, "ffn.norm"), cfg)
