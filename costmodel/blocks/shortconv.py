"""LFM2's gated short convolution (transformers 5.24's Lfm2ShortConv, the "conv" layers of
model_type lfm2): its parameters, its matmul FLOPs as the PyTorch path runs them on a CPU
(causal_conv1d_fn and causal_conv1d_update: no causal_conv1d kernels), the bytes it saves for
backward in training (that path, measured) and the state its cache holds.

The mixer, for b sequences of n tokens of width d and a depthwise conv of K = K_m taps
(conv_L_cache):

  in_proj   d -> 3 d  (B, C, x), a bias where conv_bias
  B x       elementwise, the conv's input
  conv      depthwise over the d channels, K taps, a bias where conv_bias; no activation
  C y       elementwise, out_proj's input
  out_proj  d -> d, a bias where conv_bias

Lfm2Model builds a cache whenever use_cache (Lfm2Config's default: true), in training too, so a
training forward runs as a prefill does: a sequence shorter than K is padded to K first
(LinearAttentionLayer.update_conv_state). The tree's training phase is that default's (the same
as use_cache false from n = K on). What it runs besides its matmuls (the two products) is not
among the other FLOPs (the workload's warnings say so).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import Expr
from .base import Block, Cost, Tensor, make_cost, projection_costs, weight_and_bias
from .mamba import ShortConvPhases

#: (d_in, d_out) of in_proj and out_proj, in the order they run.
PROJECTIONS = ((S.d, 3 * S.d), (S.d, S.d))


def conv_flops(batch: Expr, out_len: Expr) -> Expr:
    """FlopCounterMode's count of the depthwise conv1d: 2 x output elements x K."""
    return 2 * batch * S.d * out_len * S.K_m


def conv_traffic(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The traffic of the mixer's work besides its two projections, the memory-bound convention of
    blocks/mamba.py's scan_bytes (not a measurement): each kernel reads its inputs and writes its
    outputs once in the activations' dtype:
      B x   reads B and x, writes the product     3 d
      conv  reads and writes the d channels       2 d
      C y   reads C and y, writes the product     3 d
    per token; a decode step also reads and writes the cached state (K d)."""
    if decode:
        return batch * S.e * 8 * S.d + 2 * shortconv_state_bytes(batch)
    return batch * S.e * seq * 8 * S.d


def saved_bytes_torch(batch: Expr, seq: Expr) -> Expr:
    """Bytes the PyTorch path keeps for backward in one mixer in training, its input aside (the
    norm before it counts it), with T = b n tokens and m = max(n, K) (validate/measure's
    saved-tensor hooks on Lfm2ForCausalLM, its default use_cache building a cache):
      in_proj's output (B, C and x are views of it)             3 e T d
      the conv's input: B x, padded to K columns where n < K    e b d m
      the conv's output, m + K - 1 long (C y keeps it)          e b d (m + K - 1)
      out_proj's input, the product made contiguous             e T d
    """
    tokens, columns = batch * seq, sp.Max(seq, S.K_m)
    return S.e * (4 * tokens * S.d + batch * S.d * (2 * columns + S.K_m - 1))


def shortconv_state_bytes(batch: Expr = S.b) -> Expr:
    """Bytes one short-conv layer's cache holds, whatever the context: the conv state, the last K
    inputs of the conv (B x) in the activation dtype (b, d, K), transformers' LinearAttentionLayer
    (cache_utils.py: "conv" layers reuse it, with no recurrent state)."""
    return batch * S.d * S.K_m * S.e


@dataclass(frozen=True)
class ShortConvMixer(ShortConvPhases, Block):
    """One gated short convolution over b sequences. phase "train" (no cache), "prefill" (a cache
    filled from the prompt), "chunk" (n new tokens after a cached prefix) or "decode" (one new token
    per sequence: causal_conv1d_update). The conv's output length before slicing is
    blocks/mamba.py's (the same conv functions and cache class)."""

    phase: str = "train"
    bias: bool = False  # conv_bias: the conv's, in_proj's and out_proj's biases
    title = "short convolution"

    @property
    def conv_len(self) -> Expr:
        """ShortConvPhases' lengths, training's as a prefill's (the class's cache: module docstring)."""
        return super().conv_len if self.phase != "train" else sp.Max(S.n, S.K_m) + S.K_m - 1

    def __post_init__(self) -> None:
        self.check_phase()

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: conv (weight (d, 1, K), bias), in_proj, out_proj."""
        conv = (Tensor(S.d, S.K_m),) + ((Tensor(S.d),) if self.bias else ())
        return (*conv, *(t for w_in, w_out in PROJECTIONS for t in weight_and_bias(w_in, w_out, self.bias)))

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        forward, backward, linears = projection_costs(tokens, PROJECTIONS)
        conv = conv_flops(S.b, self.conv_len)
        return make_cost(
            tensors=self.tensors(),
            **linears,
            flops_matmul=forward + conv,
            # the conv's input and weight gradients each a conv of the forward's size (blocks/mamba.py's
            # convention; validate/hf_mamba1.py counts the weight gradient with its groups)
            flops_matmul_backward=backward + 2 * conv,
            bytes_other=conv_traffic(S.b, self.seq, self.phase == "decode"),
            saved_bytes=saved_bytes_torch(S.b, self.seq) if self.phase == "train" else 0,
            kv_cache_bytes=shortconv_state_bytes(),  # in every phase, as the tree reports the cache
        )
