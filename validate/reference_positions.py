"""Position information for the reference Transformer: added tables, rotations and score biases.

Positions enter a Transformer in one of three places, one class each:

- added to the token embeddings: SinusoidalPositions (a buffer) and LearnedPositions (a parameter);
- rotating queries and keys inside attention: RotaryEmbedding (RoPE; its cos/sin tables are buffers);
- a bias added to the attention scores: AlibiBias (fixed slopes, a buffer) and RelativePositionBias
  (T5's bucketed table of one number per bucket and head, a parameter).

Every forward takes `start`, the absolute position of the first token it is given, so incremental
decoding with a KV cache sees exactly the positions of a full forward.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from costmodel.config import ModelConfig

ROPE_BASE = 10000.0  # the RoPE base (theta) of Llama 2 and Mistral 7B v0.1
T5_MAX_DISTANCE = 128  # T5's relative_attention_max_distance


def check_positions(cfg: ModelConfig, end: int) -> None:
    """Refuse a sequence that runs past the last position a table holds."""
    if end > cfg.max_positions:
        raise ValueError(
            f"positions up to {end} were asked for, but model {cfg.name!r} holds only "
            f"max_positions = {cfg.max_positions}."
        )


def sinusoid_table(length: int, d_model: int) -> Tensor:
    """Vaswani et al.'s table: sin on even features, cos on odd ones, wavelengths up to 10000*2pi.
    Computed in float64, returned in the default dtype (the model's)."""
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    frequency = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model)
    )  # (ceil(d/2),)
    table = torch.zeros(length, d_model, dtype=torch.float64)  # (P, d)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: d_model // 2])
    return table.to(torch.get_default_dtype())


class SinusoidalPositions(nn.Module):
    """Fixed sinusoids added to the token embeddings; a buffer, so no parameters."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("table", sinusoid_table(cfg.max_positions, cfg.d_model), persistent=False)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        T = x.shape[1]  # x: (B, T, d)
        check_positions(self.cfg, start + T)
        return x + self.table[start : start + T]  # (B, T, d)


class LearnedPositions(nn.Embedding):
    """A learned table of max_positions x d_model rows added to the token embeddings (GPT-2, BERT)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg.max_positions, cfg.d_model)
        self.cfg = cfg

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        T = x.shape[1]  # x: (B, T, d)
        check_positions(self.cfg, start + T)
        positions = torch.arange(start, start + T, device=x.device)  # (T,)
        return x + super().forward(positions)  # (B, T, d)


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al. 2021) in the rotate-half layout of Llama: cos/sin tables are buffers."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d_h = cfg.d_head
        # Tables computed in float64, then held in the model's dtype.
        inverse_frequency = 1.0 / ROPE_BASE ** (
            torch.arange(0, d_h, 2, dtype=torch.float64) / d_h
        )  # (d_h/2,)
        angles = torch.outer(torch.arange(cfg.max_positions, dtype=torch.float64), inverse_frequency)
        angles = torch.cat([angles, angles], dim=-1)  # (P, d_h)
        dtype = torch.get_default_dtype()  # the model's dtype (set before building: docs/design.md)
        self.register_buffer("cos", angles.cos().to(dtype), persistent=False)
        self.register_buffer("sin", angles.sin().to(dtype), persistent=False)

    def forward(self, start: int, length: int) -> tuple[Tensor, Tensor]:
        """The (cos, sin) rows of positions start .. start+length-1, each (T, d_h)."""
        check_positions(self.cfg, start + length)
        return self.cos[start : start + length], self.sin[start : start + length]


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair (x_i, x_{i+d_h/2}) of every head by its position's angle."""
    half = x.shape[-1] // 2  # x: (B, heads, T, d_h)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (B, heads, T, d_h)
    return x * cos + rotated * sin


def alibi_slopes(n_heads: int) -> list[float]:
    """Press et al. 2022: a geometric sequence 2^(-8/n), 2^(-16/n), ... for n a power of two;
    otherwise the closest power of two's slopes followed by every other slope of twice as many."""
    closest = 2 ** math.floor(math.log2(n_heads))
    ratio = 2.0 ** (-8.0 / closest)
    slopes = [ratio ** (i + 1) for i in range(closest)]
    if closest < n_heads:
        slopes += alibi_slopes(2 * closest)[0::2][: n_heads - closest]
    return slopes


class AlibiBias(nn.Module):
    """ALiBi: the score of query i and key j gets -slope_head * |i - j|; slopes are a buffer."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.register_buffer("slopes", torch.tensor(alibi_slopes(cfg.n_heads)), persistent=False)

    def forward(self, start: int, q_len: int, k_len: int) -> Tensor:
        device = self.slopes.device
        query = torch.arange(start, start + q_len, device=device)[:, None]  # (T_q, 1)
        key = torch.arange(k_len, device=device)[None, :]  # (1, T_k)
        distance = (query - key).abs().to(self.slopes.dtype)  # (T_q, T_k)
        return -self.slopes[:, None, None] * distance[None]  # (h, T_q, T_k)


def relative_bucket(relative: Tensor, bidirectional: bool, n_buckets: int, max_distance: int) -> Tensor:
    """T5's bucket of each (key - query) offset: exact for small offsets, logarithmic up to
    max_distance; a bidirectional stack gives keys after the query their own half of the buckets."""
    bucket = torch.zeros_like(relative)
    if bidirectional:
        n_buckets //= 2
        bucket = bucket + (relative > 0).long() * n_buckets
        distance = relative.abs()
    else:
        distance = -torch.clamp(relative, max=0)  # only keys at or before the query
    exact = n_buckets // 2
    logarithmic = exact + (
        torch.log(distance.float().clamp(min=1) / exact)
        / math.log(max_distance / exact)
        * (n_buckets - exact)
    ).long()
    logarithmic = torch.clamp(logarithmic, max=n_buckets - 1)
    return bucket + torch.where(distance < exact, distance, logarithmic)


class RelativePositionBias(nn.Module):
    """T5's relative position bias: a relative_buckets x n_heads table, added to every layer's
    self-attention scores of one stack (it lives once per stack, as in T5's first layer)."""

    def __init__(self, cfg: ModelConfig, bidirectional: bool):
        super().__init__()
        smallest = 4 if bidirectional else 2
        if cfg.relative_buckets < smallest:
            raise ValueError(
                f"model {cfg.name!r}: a {'bidirectional' if bidirectional else 'causal'} relative "
                f"position bias needs at least {smallest} buckets, got {cfg.relative_buckets}."
            )
        self.bidirectional = bidirectional
        self.n_buckets = cfg.relative_buckets
        self.table = nn.Embedding(cfg.relative_buckets, cfg.n_heads)

    def forward(self, start: int, q_len: int, k_len: int) -> Tensor:
        device = self.table.weight.device
        query = torch.arange(start, start + q_len, device=device)[:, None]  # (T_q, 1)
        key = torch.arange(k_len, device=device)[None, :]  # (1, T_k)
        bucket = relative_bucket(key - query, self.bidirectional, self.n_buckets, T5_MAX_DISTANCE)
        return self.table(bucket).permute(2, 0, 1)  # (h, T_q, T_k)
