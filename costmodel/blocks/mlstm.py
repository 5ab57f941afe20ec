"""xLSTM's mLSTM layer (transformers 5.24's xLSTMLayer, model_type xlstm, its native PyTorch kernels:
no xlstm package): its parameters, its matmul FLOPs as those kernels run them and the state its
cache holds.

For T = b n tokens of width d, h heads of query/key width p = d_h and value width q = d_v, and the
kernels' chunk L = Q_m (chunk_size):

  q, k   d -> h p, no bias          v, ogate   d -> h q, no bias
  igate, fgate   d -> h, with biases (soft-capped)
  the kernel (xLSTMBackend's "inference" mode, which the training forward runs too): per sequence
         and head, floor(n / L) chunks of the chunkwise kernel (each chunk's K^T V state 2 L p q,
         and Q K^T 2 L^2 p, Q C 2 L p q, M V 2 L^2 q, Q n 2 L p), then n mod L recurrent steps
         (k v^T 2 p q, q C 2 p q, q n 2 p); a cached decode step is one recurrent step
  multihead_norm   a LayerNorm weight per value channel (h q); ogate's sigmoid times it
  out_proj   h q -> d, no bias

The state (xLSTMCache, in the model's dtype): per layer C (b, h, p, q), n (b, h, p), m (b, h, 1).

What it runs besides its matmuls (the gates' soft caps and exponentials, the norm) is not among the
other FLOPs, and the bytes it saves for backward are not modelled (the workload's warnings say
so). Its kernel time, where no kernel shapes are listed, is its traffic (kernel_bytes): the
memory-bound convention blocks/mamba.py states for Mamba-2.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import Expr
from .base import Block, Cost, MixerPhases, Tensor, make_cost, projection_costs, weight_and_bias

QK, V = S.h * S.d_h, S.h * S.d_v
#: (d_in, d_out) of q, k, v, ogate, igate, fgate and out_proj, in the order they run.
PROJECTIONS = ((S.d, QK), (S.d, QK), (S.d, V), (S.d, V), (S.d, S.h), (S.d, S.h), (V, S.d))


def step_flops() -> Expr:
    """One recurrent step of one head (mlstm_recurrent_step_native): k v^T, q C, q n."""
    return 4 * S.d_h * S.d_v + 2 * S.d_h


def chunk_flops() -> Expr:
    """One chunk of one head (mlstm_chunkwise_native_autograd): its K^T V state, Q K^T, Q C, M V, Q n."""
    return 4 * S.Q_m * S.d_h * S.d_v + 2 * S.Q_m ** 2 * (S.d_h + S.d_v) + 2 * S.Q_m * S.d_h


def kernel_flops(batch: Expr, seq: Expr) -> Expr:
    """wrap_chunkwise_arbitrary_sequence_length: the whole chunks chunkwise, the rest step by step."""
    return batch * S.h * (sp.floor(seq / S.Q_m) * chunk_flops() + sp.Mod(seq, S.Q_m) * step_flops())


def mlstm_state_bytes(batch: Expr = S.b) -> Expr:
    """One layer's state in the activations' dtype: C (b, h, p, q), n (b, h, p), m (b, h, 1)."""
    return batch * S.h * (S.d_h * S.d_v + S.d_h + 1) * S.e


def kernel_bytes(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The kernel's traffic, the memory-bound convention of blocks/mamba.py's scan_bytes (not a
    measurement): it reads q, k, v and the two gates and writes h once, in the activations' dtype; a
    decode step also reads and writes the state."""
    per_token = 2 * QK + 2 * V + 2 * S.h
    if decode:
        return batch * S.e * per_token + 2 * mlstm_state_bytes(batch)
    return batch * seq * S.e * per_token


@dataclass(frozen=True)
class MLSTMMixer(MixerPhases, Block):
    """One mLSTM layer over b sequences. phase "train", "prefill", "chunk" (after a cached prefix:
    the same kernels from the cached state) or "decode" (one recurrent step)."""

    phase: str = "train"
    title = "mLSTM layer"

    def __post_init__(self) -> None:
        self.check_phase()

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: q, k, v, ogate, igate (with its bias), fgate (with its bias),
        multihead_norm's weight, out_proj."""
        linears = [w for i, (d_in, d_out) in enumerate(PROJECTIONS[:6])
                   for w in weight_and_bias(d_in, d_out, i >= 4)]
        return (*linears, Tensor(V), *weight_and_bias(V, S.d, False))

    def cost(self) -> Cost:
        forward, backward, linears = projection_costs(S.b * self.seq, list(PROJECTIONS))
        kernel = S.b * S.h * step_flops() if self.phase == "decode" else kernel_flops(S.b, self.seq)
        return make_cost(tensors=self.tensors(), **linears, flops_matmul=forward + kernel,
                         flops_matmul_backward=backward + 2 * kernel,  # each product's two inputs
                         bytes_other=kernel_bytes(S.b, self.seq, self.phase == "decode"),
                         kv_cache_bytes=mlstm_state_bytes())  # in every phase, as the tree reports the cache
