"""The blocks of the reference Transformer, one small class each, in reading order.

token embedding -> norms -> scaled dot-product attention -> multi-head attention (GQA, cross) ->
feed-forward network -> Add & Norm (pre- or post-LN) -> heads (LM head, BERT pooler).

Attention is written with explicit matmuls (q @ k^T, softmax, @ v), never with
F.scaled_dot_product_attention, so torch.utils.flop_counter.FlopCounterMode counts its dense
2*b*h*n_q*n_k*d_h FLOPs per product; the causal mask is applied by masking, not by skipping work.
Every block takes the ModelConfig as its constructor argument (plus, where one class serves two
roles, a flag saying which). Shapes: B batch, T query tokens, S key tokens, d model width,
h query heads, h_kv key/value heads, d_h head width, d_ff FFN width, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from costmodel.config import ModelConfig

from .reference_positions import apply_rotary

LAYERNORM_EPS = 1e-5  # torch's default, GPT-2's layer_norm_epsilon
RMSNORM_EPS = 1e-6  # T5's layer_norm_epsilon


def dropout_module(cfg: ModelConfig) -> nn.Module:
    """Dropout only where the config has it, so a p = 0 model runs no dropout op at all."""
    return nn.Dropout(cfg.dropout) if cfg.dropout > 0 else nn.Identity()


class TokenEmbedding(nn.Embedding):
    """The V x d lookup table, scaled by sqrt(d) in the seeds' Transformer (scale_embeddings)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg.vocab_size, cfg.d_model)
        self.scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else None

    def forward(self, ids: Tensor) -> Tensor:
        x = super().forward(ids)  # (B, T, d)
        return x * self.scale if self.scale is not None else x


class RMSNorm(nn.Module):
    """Root-mean-square norm (Zhang and Sennrich 2019): a weight, no bias, no mean subtraction."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cfg.d_model))
        self.eps = RMSNORM_EPS

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def make_norm(cfg: ModelConfig) -> nn.Module:
    """LayerNorm (weight and bias) or RMSNorm (weight only) over d_model."""
    if cfg.norm == "rmsnorm":
        return RMSNorm(cfg)
    return nn.LayerNorm(cfg.d_model, eps=LAYERNORM_EPS)


def additive_mask(
    q_len: int,
    k_len: int,
    *,
    causal: bool,
    start: int = 0,
    padding_mask: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """0 where query i may look at key j, the dtype's most negative number where it may not.

    Causal: query i (at absolute position start + i) sees keys 0 .. start + i. padding_mask is
    (B, S) with 1 for real tokens and 0 for padding; padded keys are hidden from every query.
    """
    query = torch.arange(start, start + q_len, device=device)[:, None]  # (T, 1)
    key = torch.arange(k_len, device=device)[None, :]  # (1, S)
    allowed = (key <= query) if causal else torch.ones(q_len, k_len, dtype=torch.bool, device=device)
    allowed = allowed[None, None]  # (1, 1, T, S)
    if padding_mask is not None:
        if padding_mask.shape[-1] != k_len:
            raise ValueError(
                f"the padding mask covers {padding_mask.shape[-1]} tokens but there are {k_len} keys."
            )
        allowed = allowed & padding_mask.bool()[:, None, None, :]  # (B, 1, T, S)
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    bias: Tensor | None = None,
    scale: float | None = None,
    dropout: nn.Module | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(q k^T * scale + bias + mask) v, with dense matmuls over every (query, key) pair.

    q: (B, h, T, d_h); k, v: (B, h, S, d_h); mask: additive, (B or 1, 1, T, S); bias: (h, T, S).
    Returns the output (B, h, T, d_h) and the attention weights (B, h, T, S).
    """
    scores = q @ k.transpose(-2, -1)  # (B, h, T, S)
    if scale is not None:
        scores = scores * scale
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(dim=-1)  # (B, h, T, S)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ v, weights  # (B, h, T, d_h)


def repeat_kv(x: Tensor, groups: int) -> Tensor:
    """Grouped-query attention: each of the h_kv heads serves `groups` query heads."""
    if groups == 1:
        return x
    B, h_kv, S, d_h = x.shape
    x = x[:, :, None].expand(B, h_kv, groups, S, d_h)  # (B, h_kv, g, S, d_h)
    return x.reshape(B, h_kv * groups, S, d_h)  # (B, h, S, d_h)


@dataclass
class LayerKV:
    """One decoder layer's KV cache: its self-attention keys/values, appended token by token, and
    (encoder-decoder) the cross-attention keys/values of the encoder output, computed once.
    Every tensor is (B, h_kv, t, d_h): only the KV heads are held."""

    keys: Tensor | None = None
    values: Tensor | None = None
    cross_keys: Tensor | None = None
    cross_values: Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        if self.keys is not None:
            k = torch.cat([self.keys, k], dim=2)  # (B, h_kv, t + T, d_h)
            v = torch.cat([self.values, v], dim=2)
        self.keys, self.values = k, v
        return k, v

    def tensors(self) -> list[Tensor]:
        kept = (self.keys, self.values, self.cross_keys, self.cross_values)
        return [t for t in kept if t is not None]


@dataclass
class AttentionInputs:
    """What a stack computes once and hands to every layer's attention: the additive mask,
    the position bias (ALiBi or T5 relative, self-attention only) and the RoPE (cos, sin)."""

    mask: Tensor | None = None
    bias: Tensor | None = None
    rotary: tuple[Tensor, Tensor] | None = None


class MultiHeadAttention(nn.Module):
    """h query heads and h_kv key/value heads of width d_h; cross-attention reads keys and values
    from the encoder output. The inner width h*d_h may differ from d (T5's d_kv)."""

    def __init__(self, cfg: ModelConfig, cross: bool = False):
        super().__init__()
        self.cross = cross
        self.n_heads, self.n_kv_heads, self.d_head = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_head, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.d_head, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.d_head, bias=cfg.qkv_bias)
        self.out_proj = nn.Linear(cfg.n_heads * cfg.d_head, cfg.d_model, bias=cfg.out_bias)
        # None: no multiply (T5 folds 1/sqrt(d_h) into its initialisation).
        self.scale = cfg.scores_scale
        self.dropout = nn.Dropout(cfg.dropout) if cfg.dropout > 0 else None  # on the weights

    def split(self, x: Tensor, heads: int) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, heads, self.d_head).transpose(1, 2)  # (B, heads, T, d_h)

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        inputs: AttentionInputs | None = None,
        cache: LayerKV | None = None,
    ) -> Tensor:
        """x: (B, T, d) queries; context: (B, S, d) the encoder output for cross-attention."""
        B, T, _ = x.shape
        inputs = inputs or AttentionInputs()
        q = self.split(self.q_proj(x), self.n_heads)  # (B, h, T, d_h)
        if self.cross and cache is not None and cache.cross_keys is not None:
            k, v = cache.cross_keys, cache.cross_values  # (B, h_kv, S, d_h)
        else:
            source = context if self.cross else x
            k = self.split(self.k_proj(source), self.n_kv_heads)  # (B, h_kv, S, d_h)
            v = self.split(self.v_proj(source), self.n_kv_heads)  # (B, h_kv, S, d_h)
        if inputs.rotary is not None:
            q, k = apply_rotary(q, *inputs.rotary), apply_rotary(k, *inputs.rotary)
        if cache is not None and self.cross:
            cache.cross_keys, cache.cross_values = k, v
        elif cache is not None:
            k, v = cache.append(k, v)  # (B, h_kv, t + T, d_h)
        groups = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, h, S, d_h)
        out, _ = attention(q, k, v, inputs.mask, inputs.bias, self.scale, self.dropout)
        out = out.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)  # (B, T, h*d_h)
        return self.out_proj(out)  # (B, T, d)


ACTIVATIONS = {
    "relu": F.relu,
    "relu2": lambda x: torch.square(F.relu(x)),  # squared ReLU (Nemotron-4): relu, then a square
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "swiglu": F.silu,  # the gate's activation
    "geglu": F.gelu,
    "geglu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu2_glu": lambda x: torch.square(F.relu(x)),  # the gate's squared ReLU (BitNet)
}


class FeedForward(nn.Module):
    """d -> d_ff -> d. Gated variants (SwiGLU, GeGLU; Shazeer 2020) multiply the activated gate
    projection by an up projection: three matrices, with biases only when ffn_bias."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.act = ACTIVATIONS[cfg.activation]
        self.gate_proj = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ffn_bias) if cfg.gated else None
        self.up_proj = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ffn_bias)
        self.down_proj = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.ffn_bias)

    def forward(self, x: Tensor) -> Tensor:
        if self.gate_proj is not None:
            hidden = self.act(self.gate_proj(x)) * self.up_proj(x)  # (B, T, d_ff)
        else:
            hidden = self.act(self.up_proj(x))  # (B, T, d_ff)
        return self.down_proj(hidden)  # (B, T, d)


class Sublayer(nn.Module):
    """Add & Norm around one block: pre-LN x + f(norm(x)), or post-LN norm(x + f(x)) (the seeds)."""

    def __init__(self, cfg: ModelConfig, block: nn.Module):
        super().__init__()
        self.pre_norm = cfg.norm_position == "pre"
        self.norm = make_norm(cfg)
        self.block = block
        self.dropout = dropout_module(cfg)

    def forward(self, x: Tensor, *args, **kwargs) -> Tensor:
        if self.pre_norm:
            return x + self.dropout(self.block(self.norm(x), *args, **kwargs))
        return self.norm(x + self.dropout(self.block(x, *args, **kwargs)))


class LMHead(nn.Module):
    """Logits over the vocabulary at every position: d -> V. With tie_embeddings the weight is the
    token embedding's own Parameter (so parameters() counts it once); lm_head_bias adds V biases.
    T5 with tied embeddings multiplies its decoder output by d**-0.5 first."""

    def __init__(self, cfg: ModelConfig, tokens: TokenEmbedding):
        super().__init__()
        if cfg.tie_embeddings:
            self.weight = tokens.weight
        else:
            self.weight = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size)) if cfg.lm_head_bias else None
        self.scale = cfg.d_model**-0.5 if cfg.scale_lm_head_input else None

    def forward(self, x: Tensor) -> Tensor:
        if self.scale is not None:
            x = x * self.scale
        return F.linear(x, self.weight, self.bias)  # (B, T, V)


class Pooler(nn.Module):
    """BERT's pooler: dense d -> d with bias and tanh, on the first ([CLS]) token."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.dense(x[:, 0]))  # (B, d)


def mean_pool(hidden: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """A sentence embedding: the mean of the final hidden states over the real (unpadded) tokens."""
    if attention_mask is None:
        return hidden.mean(dim=1)  # (B, d)
    weights = attention_mask.to(hidden.dtype)[:, :, None]  # (B, T, 1)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)  # (B, d)
