"""MiniMax's lightning attention (transformers 5.24's MiniMaxLightningAttention, the
"linear_attention" layers of model_type minimax): its parameters, its decay buffers, its matmul
FLOPs as the PyTorch path runs them (block by block in training and a prefill, token by token
after a cache), and the recurrent state its cache holds.

The mixer, for b sequences of n tokens, h heads of width P = d_h and blocks of Q = Q_m tokens
(block_size):

  qkv_proj     d -> 3 h P, no bias, silu on its output (q, k, v of each head)
  the blocks   N = ceil(n / Q) blocks of c_i tokens (the last r = n - (N - 1) Q), per head:
                 intra  q k^T, then (q k^T * decay) v         2 x 2 c_i^2 P
                 inter  (q * decay) kv                          2 c_i P^2
                 state  (k * decay)^T v, added to kv           2 c_i P^2
  norm         RMSNorm over h P (one weight)
  output_gate  d -> h P, no bias; sigmoid(gate) times the normed output
  out_proj     h P -> d, no bias

The buffers (persistent, in the model's dtype): slope_rate (h), query_decay and key_decay (h Q
each), diagonal_decay (h Q^2). With a cache holding the state (a chunk after a prefix, a decode
step) each token runs k^T v and q kv (2 x 2 P^2 per head): MiniMaxLightningAttention's recurrent
branch. The state kv (b, h, P, P) is kept in the values' dtype (MiniMaxCache.linear_cache).
Its other FLOPs count silu on qkv and sigmoid on the gate; the rest it runs besides its
matmuls (the decays, the norm, the products) is not among them (the workload's warning says so); the bytes it saves for backward are the PyTorch path's
(saved_bytes_torch).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr
from .base import Block, Cost, MixerPhases, Tensor, make_cost, projection_costs, weight_and_bias

#: The width of the heads' queries, keys and values together (h P) and the projections' (d_in,
#: d_out) in the order they run: qkv_proj, output_gate, out_proj.
WIDTH = S.h * S.d_h
PROJECTIONS = ((S.d, 3 * WIDTH), (S.d, WIDTH), (WIDTH, S.d))


def _blocks(seq: Expr) -> tuple[Expr, Expr, Expr]:
    """(the sum of the blocks' squared lengths, the first block's length, the last one's)."""
    count = sp.ceiling(seq / S.Q_m)
    last = seq - (count - 1) * S.Q_m
    return (count - 1) * S.Q_m**2 + last**2, sp.Min(seq, S.Q_m), last


def block_flops(batch: Expr, seq: Expr) -> Expr:
    """FlopCounterMode's count of the block path over `seq` tokens (module docstring):
    per head 4 P sum(c_i^2) + 4 P^2 n."""
    squares, _, _ = _blocks(seq)
    return batch * S.h * (4 * S.d_h * squares + 4 * S.d_h**2 * seq)


def block_backward_flops(batch: Expr, seq: Expr) -> Expr:
    """FlopCounterMode's count of the block path's backward in training (measured, torch 2.13 on
    the CPU; tests/test_hf_minimax.py), per head: the intra products both ways (8 P sum(c_i^2));
    the inter product's gradient for q (2 P^2 n) and for kv but in block 0, whose kv is a zero
    tensor (2 P^2 (n - c_0)); the state update both ways but in the last block, whose state only
    the cache keeps (4 P^2 (n - r))."""
    squares, first, last = _blocks(seq)
    return batch * S.h * (8 * S.d_h * squares + S.d_h**2 * (2 * seq + 2 * (seq - first) + 4 * (seq - last)))


def saved_bytes_torch(batch: Expr, seq: Expr) -> Expr:
    """Bytes the PyTorch path keeps for backward in one mixer in training, its input aside (the norm
    before it counts it), with T = b n tokens, W = h P and blocks c_0 .. c_{N-1} (validate's
    saved-tensor hooks on MiniMaxForCausalLM, fp32 and bf16; the last block's state update feeds
    only the cache, so what it alone saves is freed with the forward and not counted):
      qkv_proj's output (silu's input)                                     e T 3W
      q, k, v: views of silu's output (e T 3W); where b > 1 and n > 1 each 4D matmul copies its
        strided operand instead: q, k^T and v for the intra products (e T 3W), v for the state
        update but the last block's (e b h P (n - c_{N-1}))
      per block and head: (q k^T) * decay and the state kv its q multiplies (block 0's zeros too)
                                                                          e b h (c_i^2 + P^2)
      k * decay but in the last block (e b h P (n - c_{N-1})); q * decay from block 1 on
        (e b h P (n - c_0)); the decay factor of each block but the first and the last (e h)
      the output norm in fp32: its input (4 T W) and rsqrt (4 T), the normalised input times the
        weight's input and output (2 e T W), sigmoid(gate) (e T W), the product out_proj reads (e T W)
    """
    tokens, width = batch * seq, S.h * S.d_h
    squares, first, last = _blocks(seq)
    count = sp.ceiling(seq / S.Q_m)
    update = batch * S.h * S.d_h * (seq - last)  # the state updates' k * decay (and v copies), but the last
    copies = sp.Piecewise((0, sp.Eq(batch, 1)), (0, sp.Eq(seq, 1)), (update, True))
    blocks = batch * S.h * (squares + count * S.d_h**2) + update + batch * S.h * S.d_h * (seq - first)
    return (S.e * (10 * tokens * width + copies + blocks + S.h * sp.Max(count - 2, 0))
            + FP32 * tokens * (width + 1))


def recurrent_flops(batch: Expr, seq: Expr) -> Expr:
    """The recurrent branch (a cached state): per token and head k^T v and q kv, 2 x 2 P^2."""
    return batch * S.h * seq * 4 * S.d_h**2


def lightning_traffic(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The traffic of the mixer's work besides its projections, blocks/mamba.py's memory-bound
    convention (not a measurement): each kernel reads its inputs and writes its outputs once in the
    activations' dtype: the attention reads q, k, v and writes its output (4 h P), the gate's
    product reads two and writes one (3 h P), per token; a decode step also reads and writes the
    cached state."""
    per_token = batch * seq * S.e * 7 * WIDTH
    return per_token + 2 * lightning_state_bytes(batch) if decode else per_token


def lightning_state_bytes(batch: Expr = S.b) -> Expr:
    """Bytes one lightning layer's cache holds, whatever the context: the state kv (b, h, P, P) in
    the values' dtype (MiniMaxCache.set_linear_cache)."""
    return batch * S.h * S.d_h**2 * S.e


def lightning_buffer_bytes() -> Expr:
    """slope_rate, query_decay, key_decay and diagonal_decay, in the model's dtype (module docstring)."""
    return S.e * S.h * (1 + 2 * S.Q_m + S.Q_m**2)


@dataclass(frozen=True)
class LightningAttentionMixer(MixerPhases, Block):
    """One lightning attention over b sequences. phase "train" and "prefill" (the block path: a
    fresh cache holds no state), "chunk" (n new tokens after a cached prefix) or "decode" (one new
    token per sequence): the recurrent branch."""

    phase: str = "train"
    title = "lightning attention"

    def __post_init__(self) -> None:
        self.check_phase()

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: norm, qkv_proj, out_proj, output_gate."""
        return (Tensor(WIDTH), *weight_and_bias(S.d, 3 * WIDTH, False), *weight_and_bias(WIDTH, S.d, False),
                *weight_and_bias(S.d, WIDTH, False))

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        forward, backward, linears = projection_costs(tokens, PROJECTIONS)
        blocked = self.phase in ("train", "prefill")
        core = block_flops(S.b, self.seq) if blocked else recurrent_flops(S.b, self.seq)
        return make_cost(
            tensors=self.tensors(),
            **linears,
            flops_matmul=forward + core,
            flops_matmul_backward=backward + (block_backward_flops(S.b, self.seq) if blocked else 2 * core),
            elements=[("silu", tokens * 3 * WIDTH), ("sigmoid", tokens * WIDTH)],  # qkv's, the output gate's
            bytes_other=lightning_traffic(S.b, self.seq, self.phase == "decode"),
            buffer_bytes=lightning_buffer_bytes(),
            saved_bytes=saved_bytes_torch(S.b, S.n) if self.phase == "train" else 0,
            kv_cache_bytes=lightning_state_bytes(),  # in every phase, as the tree reports the cache
        )
