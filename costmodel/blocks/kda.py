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

In training and a prefill, the depthwise conv (causal_conv1d_fn's F.conv1d) and
chunk_kimi_delta_attention's products over C = ceil(n / Q) chunks of Q = Q_m = 64 tokens (the
function's default) are counted as FlopCounterMode counts them (rule_flops,
rule_backward_flops; tests/test_hf_kimi_linear.py). A cached step's rule
(recurrent_kimi_delta_attention) is elementwise: no matmul, as measured. Among the other FLOPs
only the conv's silu is counted (validate's silu row, exact). What training keeps
for backward is saved_bytes_torch's (the PyTorch fallback, which runs where fla and causal_conv1d
are absent, as on a CPU; measured). Not counted: what the mixer runs besides its matmuls; the
workload's warning says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr, unless_fp32
from .base import Block, Cost, Tensor, make_cost, projection_costs, weight_and_bias
from .mamba import ShortConvPhases

#: The width of the queries, keys and values (H P) and the conv's channels (q, k, v).
WIDTH = S.H_gv * S.P_gv
CONV_CHANNELS = 3 * WIDTH
#: (d_in, d_out) of the linears, in registration order: q, k, v, f_a, f_b, b, g_a, g_b, o.
PROJECTIONS = ((S.d, WIDTH), (S.d, WIDTH), (S.d, WIDTH), (S.d, S.P_gv), (S.P_gv, WIDTH), (S.d, S.H_gv),
               (S.d, S.P_gv), (S.P_gv, WIDTH), (WIDTH, S.d))


def rule_flops(batch: Expr, seq: Expr) -> Expr:
    """FlopCounterMode's count of chunk_kimi_delta_attention's forward (measured, torch 2.13 on the
    CPU): per chunk and head 6 Q^2 P + 6 Q P^2 (the sequence padded to C Q)."""
    return batch * S.H_gv * sp.ceiling(seq / S.Q_m) * (6 * S.Q_m**2 * S.P_gv + 6 * S.Q_m * S.P_gv**2)


def rule_backward_flops(batch: Expr, seq: Expr) -> Expr:
    """FlopCounterMode's count of the rule's backward in training (measured, torch 2.13 on the CPU),
    per head: C (12 Q^2 P + 4 Q P^2) + (C - 1) 8 Q P^2 (no gradient into the first chunk's zero
    state nor out of the last chunk's state, which only the cache keeps)."""
    chunks = sp.ceiling(seq / S.Q_m)
    return batch * S.H_gv * (chunks * (12 * S.Q_m**2 * S.P_gv + 4 * S.Q_m * S.P_gv**2)
                             + (chunks - 1) * 8 * S.Q_m * S.P_gv**2)


def saved_bytes_torch(batch: Expr, seq: Expr, conv_len: Expr) -> Expr:
    """Bytes the PyTorch path keeps for backward in one KDA mixer in training, its input aside (the
    norm before it counts it), measured with validate's saved-tensor hooks on KimiLinearForCausalLM
    (fp32 and bf16; b 1 and 2; one chunk, two, and a sequence shorter than the conv). T = b n
    tokens, W = H P, C chunks of Q, N = C Q the padded length, R = b H rows of the rule; the rule
    runs in fp32 whatever the model's dtype:
      the conv's input (its max(n, K) columns) and its output, silu's input  e b 3W (max(n, K) + conv_len)
      f_b's input, beta's sigmoid                                            e T (P + H)
      the forget gate in fp32: exp, log's input, the product's factor (and where's mask, 1 byte)
        over T W; exp(A_log) and its negation over H                          13 T W + 8 H
      the l2 norms of q and k: each input and root                           2 (4 T W + 4 T H)
      padded: beta, v, k; k_beta; v_beta, exp(g) and k_beta exp(g); the queries   4 R N (1 + 7 P)
      the decay mask exp(g_i - g_j) and k_beta k times it, per chunk         2 x 4 R C Q^2 P
      the two triangular masks and the loop's (bool)                        3 Q^2
      the row loop's clones, rows 1..Q-1 (row and block, i + i^2 a row)     4 R C (Q - 1) Q (Q + 1) / 3
      attn, the UT system's solution                                        4 R C Q^2
      per chunk: exp(g_i), the state its queries read (chunk 0's zeros too), q k^T decay, v_new
        and the masked intra attention                                       4 R C (2 Q P + P^2 + Q^2 P + Q^2)
      from chunk 1 on: the decayed queries, the state update's two factors and its decay, in each
        chunk but the last (whose update only the cache keeps: freed)        4 R (C - 1) (3 Q P + P)
      k_cumdecay, where a second chunk reads it                              4 R N P min(C - 1, 1)
      g_b's input; the gated norm in fp32 (its input, rsqrt, the normalised input, sigmoid's result
        and the product; below fp32 the weight's fp32 copy); o_proj's input
                                                                             e T (P + W) + 16 T W + 4 T H + 4 P [e < 4]
    """
    tokens, width, rows = batch * seq, WIDTH, batch * S.H_gv
    chunks, q, p = sp.ceiling(seq / S.Q_m), S.Q_m, S.P_gv
    padded = chunks * q
    conv_in = conv_len - (S.K_m - 1)
    mixer = (S.e * batch * CONV_CHANNELS * (conv_in + conv_len) + S.e * tokens * (p + S.H_gv)
             + 13 * tokens * width + 8 * S.H_gv + 2 * FP32 * (tokens * width + tokens * S.H_gv))
    rule = FP32 * rows * (padded * (1 + 7 * p) + 2 * chunks * q**2 * p + chunks * (q - 1) * q * (q + 1) / 3
                          + chunks * q**2 + chunks * (2 * q * p + p**2 + q**2 * p + q**2)
                          + (chunks - 1) * (3 * q * p + p) + padded * p * sp.Min(chunks - 1, 1)) + 3 * q**2
    output = S.e * tokens * (p + width) + 16 * tokens * width + FP32 * tokens * S.H_gv + unless_fp32(FP32 * p)
    return mixer + rule + output


def kda_state_bytes(batch: Expr = S.b) -> Expr:
    """Bytes one KDA layer's cache holds, whatever the context, as the Gated DeltaNet's layout
    (blocks/deltanet.py): the conv state, the last K inputs of q, k, v in the activation dtype, and
    the rule's recurrent state (b, H, P, P) in fp32 (LinearAttentionLayer; tests/test_hf_kimi_linear.py)."""
    return batch * (CONV_CHANNELS * S.K_m * S.e + FP32 * S.H_gv * S.P_gv**2)


@dataclass(frozen=True)
class KimiDeltaAttentionMixer(ShortConvPhases, Block):
    """One Kimi Delta Attention over b sequences (phase as blocks/deltanet.py's mixer's; a decode
    step one token per sequence); its conv's output length ShortConvPhases' (module docstring)."""

    phase: str = "train"
    title = "Kimi Delta Attention"

    @property
    def conv_len(self) -> Expr:
        """ShortConvPhases' lengths, training's as a prefill's: KimiLinearModel builds a cache in
        training too (use_cache's default), whose update_conv_state pads a sequence shorter than K."""
        return super().conv_len if self.phase != "train" else sp.Max(S.n, S.K_m) + S.K_m - 1

    def __post_init__(self) -> None:
        self.check_phase()

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: q, k, v, conv1d (channels, 1, K), f_a, f_b, dt_bias, A_log, b,
        g_a, g_b, o_norm, o_proj."""
        linears = [weight_and_bias(w_in, w_out, False)[0] for w_in, w_out in PROJECTIONS]
        return (*linears[:3], Tensor(CONV_CHANNELS, S.K_m), *linears[3:5], Tensor(WIDTH), Tensor(S.H_gv),
                *linears[5:8], Tensor(S.P_gv), linears[8])

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        forward, backward, linears = projection_costs(tokens, PROJECTIONS)
        conv = 2 * S.b * CONV_CHANNELS * self.conv_len * S.K_m  # the depthwise conv1d: 2 x outputs x K
        chunked = self.phase in ("train", "prefill")
        return make_cost(
            tensors=self.tensors(),
            **linears,
            flops_matmul=forward + conv + (rule_flops(S.b, self.seq) if chunked else 0),
            # the conv's input and weight gradients each a conv of the forward's size (blocks/mamba.py's)
            flops_matmul_backward=backward + 2 * conv + (rule_backward_flops(S.b, self.seq) if chunked else 0),
            # the conv's silu over q, k and v (causal_conv1d_fn and _update slice the conv to the tokens first)
            elements=[("silu", S.b * CONV_CHANNELS * self.seq)],
            saved_bytes=saved_bytes_torch(S.b, self.seq, self.conv_len) if self.phase == "train" else 0,
            kv_cache_bytes=kda_state_bytes(),
        )
