"""Kimi Delta Attention (transformers 5.24's KimiLinearDeltaAttention, the "linear_attention"
layers of model_type kimi_linear): its parameters, the matmul FLOPs of its projections and its
short conv, and the states its cache holds.

The mixer, for b sequences of n tokens and H = H_gv heads of width P = P_gv (linear_num_heads,
linear_head_dim; the Gated DeltaNet's symbols, blocks/deltanet.py) and a depthwise conv of K = K_m
taps (linear_conv_kernel_dim):

  q_proj, k_proj, v_proj   d -> H P each, no bias
  conv1d                   depthwise over the 3 H P channels of q, k, v; K taps, no bias
  forget_gate              f_a_proj d -> P, f_b_proj P -> H P (a per-channel decay), dt_bias (H P,
                           fp32), A_log (H)
  b_proj                   d -> H (beta)
  g_a_proj, g_b_proj       d -> P -> H P (the output gate)
  o_norm                   gated RMSNorm over P (one weight)
  o_proj                   H P -> d

Not counted: the short conv's and the chunked delta rule's FLOPs (neither torch path is measured
here) and what the mixer runs besides its projections; the workload's warning says so. The
parameters are proven against the class (tests/test_hf_kimi_linear.py); the FLOPs of the
projections are 2 x tokens x d_in x d_out each, as every linear's.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr
from .base import Block, Cost, Tensor, linear_bytes, linear_flops, make_cost, weight_and_bias, weight_matrix

#: The width of the queries, keys and values (H P) and the conv's channels (q, k, v).
WIDTH = S.H_gv * S.P_gv
CONV_CHANNELS = 3 * WIDTH
#: (d_in, d_out) of the linears, in registration order: q, k, v, f_a, f_b, b, g_a, g_b, o.
PROJECTIONS = ((S.d, WIDTH), (S.d, WIDTH), (S.d, WIDTH), (S.d, S.P_gv), (S.P_gv, WIDTH), (S.d, S.H_gv),
               (S.d, S.P_gv), (S.P_gv, WIDTH), (WIDTH, S.d))


def kda_state_bytes(batch: Expr = S.b) -> Expr:
    """Bytes one KDA layer's cache holds, whatever the context, as the Gated DeltaNet's layout
    (blocks/deltanet.py): the conv state, the last K inputs of q, k, v in the activation dtype, and
    the rule's recurrent state (b, H, P, P) in fp32. Not measured against the class here."""
    return batch * (CONV_CHANNELS * S.K_m * S.e + FP32 * S.H_gv * S.P_gv**2)


@dataclass(frozen=True)
class KimiDeltaAttentionMixer(Block):
    """One Kimi Delta Attention over b sequences (phase as blocks/deltanet.py's mixer's; a decode
    step one token per sequence): its projections only (module docstring)."""

    phase: str = "train"
    title = "Kimi Delta Attention"

    def __post_init__(self) -> None:
        if self.phase not in ("train", "prefill", "chunk", "decode"):
            raise ValueError(f"KimiDeltaAttentionMixer phase {self.phase!r} is not train, prefill, chunk or decode.")

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: q, k, v, conv1d (channels, 1, K), f_a, f_b, dt_bias, A_log, b,
        g_a, g_b, o_norm, o_proj."""
        linears = [weight_and_bias(w_in, w_out, False)[0] for w_in, w_out in PROJECTIONS]
        return (*linears[:3], Tensor(CONV_CHANNELS, S.K_m), *linears[3:5], Tensor(WIDTH), Tensor(S.H_gv),
                *linears[5:8], Tensor(S.P_gv), linears[8])

    def cost(self) -> Cost:
        seq = sp.Integer(1) if self.phase == "decode" else S.n
        tokens = S.b * seq
        forward = backward = sp.Integer(0)
        for width_in, width_out in PROJECTIONS:
            fwd, bwd = linear_flops(tokens, width_in, width_out)
            forward, backward = forward + fwd, backward + bwd
        return make_cost(
            tensors=self.tensors(),
            matrices=[weight_matrix(w_in, w_out) for w_in, w_out in PROJECTIONS],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            matrix_tokens=[tokens] * len(PROJECTIONS),
            bytes_matmul=sum((linear_bytes(tokens, w_in, w_out) for w_in, w_out in PROJECTIONS), sp.Integer(0)),
            kv_cache_bytes=kda_state_bytes(),
        )
