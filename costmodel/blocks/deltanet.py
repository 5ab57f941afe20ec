"""The Gated DeltaNet mixer (transformers 5.24's Qwen3NextGatedDeltaNet, which qwen3_5 and
qwen3_5_moe share) and the output gate of the attention beside it (Qwen3NextAttention): their
parameters, their matmul FLOPs as the PyTorch path runs them on a CPU (torch_chunk_gated_delta_rule
and torch_recurrent_gated_delta_rule: no fla or causal_conv1d kernels), and the states the
mixer's cache holds.

The mixer, for b sequences of n tokens, H_k key heads and H_v value heads of widths P_k and P_v,
a depthwise conv of K = K_m taps and the rule's chunk Q = Q_m (64: the function's default, which
the class does not override):

  in_proj_qkvz  d -> 2 H_k P_k + 2 H_v P_v  (q, k, v, then the gate z)
  in_proj_ba    d -> 2 H_v                  (beta, then a, the decay's input)
  conv1d        depthwise over the 2 H_k P_k + H_v P_v channels of q, k, v; K taps, no bias
  dt_bias, A_log  one per value head
  the chunked gated delta rule: per chunk and value head the products listed in rule_flops
  norm          gated RMSNorm over P_v (one weight, each value head apart)
  out_proj      H_v P_v -> d

What it runs besides its matmuls (the l2 norms, exp, cumsum, softplus, the triangular solve, the
gated norm) is not among the other FLOPs; its training activations (saved bytes) are not measured:
the workload's warnings say so (workload.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr
from .base import (Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, projection_costs,
                   weight_and_bias, weight_matrix)
from .mamba import ShortConvPhases

#: The widths of the queries and keys, and of the values (and of z).
KEY_WIDTH = S.H_gk * S.P_gk
VALUE_WIDTH = S.H_gv * S.P_gv
#: The channels the conv runs over (q, k, v) and in_proj_qkvz's outputs (those and z).
CONV_CHANNELS = 2 * KEY_WIDTH + VALUE_WIDTH
QKVZ = 2 * KEY_WIDTH + 2 * VALUE_WIDTH


def rule_flops(batch: Expr, seq: Expr) -> Expr:
    """Matmul FLOPs of torch_chunk_gated_delta_rule over `seq` tokens of `batch` sequences, as
    FlopCounterMode counts them (queries and keys repeated to the H_v value heads first; the
    sequence padded to C Q with C = ceil(seq / Q) chunks), per chunk and value head:
      the UT system k_beta k^T, the intra-chunk attention q k^T    2 x 2 Q^2 P_k
      (the two triangular solves: no FlopCounterMode formula, not counted)
      the state read by the decayed keys, by the queries           2 x 2 Q P_k P_v
      the intra-chunk attention times the new values               2 Q^2 P_v
      the state update k^T v_new                                   2 Q P_k P_v
    """
    chunks = sp.ceiling(seq / S.Q_m)
    per_chunk = 4 * S.Q_m**2 * S.P_gk + 2 * S.Q_m**2 * S.P_gv + 6 * S.Q_m * S.P_gk * S.P_gv
    return batch * S.H_gv * chunks * per_chunk


def rule_backward_flops(batch: Expr, seq: Expr) -> Expr:
    """FlopCounterMode's count of the rule's backward in training (no final state kept: the last
    chunk's state update receives no gradient, nor does the zero initial state), per value head:
    each chunk's products above both ways (the state reads' left factor only in chunk 0), and each
    triangular solve's gradient for its matrix (-grad_X X^T: 2 Q^2 P_v and 2 Q^2 P_k):
      C (10 Q^2 P_k + 6 Q^2 P_v + 4 Q P_k P_v) + (C - 1) 8 Q P_k P_v
    (measured with torch 2.13 on the CPU; tests/test_hf_qwen_next.py checks it on the rule)."""
    chunks = sp.ceiling(seq / S.Q_m)
    per_chunk = 10 * S.Q_m**2 * S.P_gk + 6 * S.Q_m**2 * S.P_gv + 4 * S.Q_m * S.P_gk * S.P_gv
    return batch * S.H_gv * (chunks * per_chunk + (chunks - 1) * 8 * S.Q_m * S.P_gk * S.P_gv)


def conv_flops(batch: Expr, out_len: Expr) -> Expr:
    """FlopCounterMode's count of the depthwise conv1d: 2 x output elements x K."""
    return 2 * batch * CONV_CHANNELS * out_len * S.K_m


def rule_bytes(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The traffic of the mixer's work besides its projections, a memory-bound convention (not a
    measurement; the one blocks/mamba.py's scan_bytes states): each kernel reads its inputs and
    writes its outputs once in the activations' dtype, as fla's fused kernels would:
      conv        reads and writes the q, k, v channels                  2 C
      rule        reads q, k, v, beta and a, writes its output          C + 2 H_v + H_v P_v
      gated norm  reads the output and z, writes its output             3 H_v P_v
    per token (C = 2 H_k P_k + H_v P_v channels), and the chunk states between the rule's
    kernels, fp32 (b, ceil(n / Q), H_v, P_k, P_v), written once and read once. A decode step
    instead reads and writes the cached states: the conv's K C in the activations' dtype, the
    rule's H_v P_k P_v in fp32."""
    per_token = 3 * CONV_CHANNELS + 2 * S.H_gv + 4 * VALUE_WIDTH
    state = S.H_gv * S.P_gk * S.P_gv
    if decode:
        return batch * S.e * per_token + 2 * deltanet_state_bytes(batch)  # the cached states, read and written
    return batch * (S.e * seq * per_token + 2 * FP32 * sp.ceiling(seq / S.Q_m) * state)


def deltanet_state_bytes(batch: Expr = S.b, conv_columns: Expr = S.K_m, ssm_bytes: Expr = FP32) -> Expr:
    """Bytes one Gated DeltaNet layer's cache holds, whatever the context. By default transformers'
    (LinearAttentionLayer): the conv state, the last K inputs of q, k, v in the activation dtype
    (b, C, K), and the rule's recurrent state, fp32 as the rule returns it (b, H_v, P_k, P_v).
    conv_columns and ssm_bytes give another engine's layout (serving/state_slots.py: vLLM's)."""
    return batch * (CONV_CHANNELS * conv_columns * S.e + ssm_bytes * S.H_gv * S.P_gk * S.P_gv)


@dataclass(frozen=True)
class GatedDeltaNetMixer(ShortConvPhases, Block):
    """One Gated DeltaNet mixer over b sequences. phase "train" (no cache), "prefill" (a cache
    filled from the prompt), "chunk" (n new tokens after a cached prefix) or "decode" (one new
    token per sequence: causal_conv1d_update and torch_recurrent_gated_delta_rule, whose state
    update is elementwise: no matmul).

    The conv's output length before slicing, as blocks/mamba.py's (the same cache class and
    conv functions): n + K - 1 in training; max(n, K) + K - 1 in a prefill (the cache pads a
    prompt shorter than K); n + 2K - 1 in a chunk; 2 in a decode step."""

    phase: str = "train"
    # OlmoHybridGatedDeltaNet's layout: q, k, v, a, b, g and o projections apart, registered first
    # (the same parameters and matmul FLOPs as the fused two; seven GEMMs instead of three)
    split: bool = False
    title = "Gated DeltaNet mixer"

    def __post_init__(self) -> None:
        self.check_phase()

    def projections(self) -> list[tuple[Expr, Expr]]:
        """(d_in, d_out) of each linear, in registration order: in_proj_qkvz, in_proj_ba, out_proj;
        split: q_proj, k_proj, v_proj, a_proj, b_proj, g_proj, o_proj."""
        if self.split:
            return [(S.d, KEY_WIDTH), (S.d, KEY_WIDTH), (S.d, VALUE_WIDTH), (S.d, S.H_gv), (S.d, S.H_gv),
                    (S.d, VALUE_WIDTH), (VALUE_WIDTH, S.d)]
        return [(S.d, QKVZ), (S.d, 2 * S.H_gv), (VALUE_WIDTH, S.d)]

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: conv1d's weight (channels, 1, K), in_proj_qkvz, in_proj_ba,
        dt_bias, A_log, the gated norm's weight, out_proj; split: the seven linears, the conv's
        weight, A_log, dt_bias, the gated norm's weight."""
        linears = [t for d_in, d_out in self.projections() for t in weight_and_bias(d_in, d_out, False)]
        conv, per_head, norm = Tensor(CONV_CHANNELS, S.K_m), (Tensor(S.H_gv), Tensor(S.H_gv)), Tensor(S.P_gv)
        if self.split:
            return (*linears, conv, *per_head, norm)
        return (conv, *linears[:-1], *per_head, norm, linears[-1])

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        projections = self.projections()
        forward, backward, linears = projection_costs(tokens, projections)
        conv = conv_flops(S.b, self.conv_len)
        decode = self.phase == "decode"
        rule = sp.Integer(0) if decode else rule_flops(S.b, self.seq)
        return make_cost(
            tensors=self.tensors(),
            **linears,
            flops_matmul=forward + conv + rule,
            # the conv's weight gradient counted as blocks/mamba.py's (2 x the conv); the rule's
            # backward as FlopCounterMode counts it in training (no final state)
            flops_matmul_backward=backward + 2 * conv + (0 if decode else rule_backward_flops(S.b, self.seq)),
            bytes_other=rule_bytes(S.b, self.seq, decode),
            kv_cache_bytes=deltanet_state_bytes(),  # in every phase, as the tree reports the cache
        )


@dataclass(frozen=True)
class AttentionOutputGate(Block):
    """Qwen3-Next's gate on the attention output: q_proj's second half (d -> h d_h, the query's
    weight rows interleaved per head with it, counted here apart), sigmoid(gate) times the
    attention's output before o_proj; AFMoE's gate_proj (d -> h d_h, no bias) has the same
    parameters and FLOPs; Laguna's g_proj (facts.output_gate "softplus_per_head") is d -> h, an
    fp32 softplus whose value multiplies each head's output. Where facts.output_gate_saves
    (AFMoE's and Laguna's measured rows) the product keeps the attention's output and the gate
    (the sigmoid's h d_h, or the softplus's fp32 input and its cast output, h each) per token;
    Qwen3-Next's saved bytes are not measured (see the module docstring)."""

    tokens: Expr
    bias: bool = False  # q_proj's (attention_bias)
    profile: Profile = Profile()
    title = "attention output gate"

    def cost(self) -> Cost:
        output = S.h * S.d_h
        if self.profile.facts.output_gate == "softplus_per_head":  # Laguna: one value a head
            width, kind = S.h, "softplus"
            saved = (FP32 + S.e) * self.tokens * width + S.e * self.tokens * output
        else:
            width, kind = output, "sigmoid"
            saved = 2 * S.e * self.tokens * output
        forward, backward = linear_flops(self.tokens, S.d, width)
        return make_cost(
            tensors=weight_and_bias(S.d, width, self.bias),
            matrices=[weight_matrix(S.d, width)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[(kind, self.tokens * width), ("mul", self.tokens * output)],
            saved_bytes=saved if self.profile.facts.output_gate_saves else 0,
            bytes_matmul=linear_bytes(self.tokens, S.d, width),
        )
