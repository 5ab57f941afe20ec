"""RWKV-4's two mixers (transformers 5.24's RwkvSelfAttention, the "time mix", and RwkvFeedForward,
the "channel mix", of model_type rwkv): their parameters, their matmul FLOPs as the PyTorch path
runs them (rwkv_linear_attention_cpu's loop of elementwise ops: no custom CUDA kernel) and the
states the model's cache holds for them.

For T = b n tokens of width d (the attention width must be d: the class's state is d wide) and a
channel mix of I = d_ff (intermediate_size, 4 d by default):

  time mix     time_decay, time_first (d each); time_mix_key, _value, _receptance (d each): each
               token mixed with the one before (time_shift); key, value, receptance d -> d, no bias;
               the WKV recurrence over the tokens, elementwise (fp32 num, den and max states);
               output d -> d over receptance's sigmoid times WKV
  channel mix  time_mix_key, time_mix_receptance (d each); key d -> I, squared ReLU, value I -> d,
               receptance d -> d and its sigmoid times value; no biases

The state (RwkvModel's five (b, d, L) tensors): the time mix's shifted token in the activations'
dtype and its num, den and max in fp32; the channel mix's shifted token in the activations' dtype.

The bytes they save for backward in training are the PyTorch loop's, measured (time_saved_bytes,
channel_saved_bytes; the CUDA kernel, which transformers loads where ninja and CUDA are, keeps
others). What they run besides their matmuls (the mixes, the WKV loop, sigmoids, the squared
ReLU) is not among the other FLOPs (the workload's warnings say so). Their kernel time, where no
kernel shapes are listed, is their traffic (mix_bytes): the memory-bound convention
blocks/mamba.py states for Mamba-2.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr, if_fp32, unless_fp32
from .base import Block, Cost, MixerPhases, Tensor, make_cost, projection_costs, weight_and_bias

#: (d_in, d_out) of each mixer's linears, in the order they run.
TIME_PROJECTIONS = ((S.d, S.d), (S.d, S.d), (S.d, S.d), (S.d, S.d))
CHANNEL_PROJECTIONS = ((S.d, S.d_ff), (S.d_ff, S.d), (S.d, S.d))


def time_state_bytes(batch: Expr = S.b) -> Expr:
    """One layer's time-mix state: the last token (b, d) in the activations' dtype, and the WKV's
    num, den and max (b, d) in fp32."""
    return batch * S.d * (S.e + 3 * FP32)


def channel_state_bytes(batch: Expr = S.b) -> Expr:
    """One layer's channel-mix state: the last token (b, d) in the activations' dtype."""
    return batch * S.d * S.e


def time_saved_bytes(batch: Expr, seq: Expr) -> Expr:
    """Bytes one time mix keeps for backward in training, its input aside (ln1 counts it), with
    T = b n tokens (validate/measure's saved-tensor hooks on RwkvForCausalLM, whose training forward
    runs rwkv_linear_attention_cpu with no state):
      the shifted tokens, the three mixed inputs of key, value and receptance, the sigmoid, the
        value projection's output (read a token a step), the WKV output, output's input     8 e T d
      the three (1 - mix) vectors and exp(time_decay)                                       4 e d
      a step of the loop, in fp32 (b, d): k + u, the max state, two exps, the num and den
        states, numerator, denominator, max + w, two exps; and the key in fp32 (the key
        projection's output where fp32, else a copy a step)                                 12 x 4 T d
      less what only the last step's state update keeps (no loss reaches it): max + w and
        its two exps, and the key's copy where narrower                                     -(3 + u) 4 b d
    where u = 1 below fp32. A one-token sequence's key is read by that update only, and so is
    exp(time_decay): -(e d + 4 b d in fp32)."""
    one_token = sp.Piecewise((S.e * S.d + if_fp32(FP32 * batch * S.d), sp.Eq(seq, 1)), (0, True))
    return (8 * S.e * batch * seq * S.d + 4 * S.e * S.d + 12 * FP32 * batch * seq * S.d
            - 3 * FP32 * batch * S.d - unless_fp32(FP32 * batch * S.d) - one_token)


def channel_saved_bytes(batch: Expr, seq: Expr) -> Expr:
    """Bytes one channel mix keeps for backward in training, its input aside (ln2 counts it), with
    T = b n tokens (measured as time_saved_bytes): the shifted tokens, the mixed inputs of key and
    receptance, the sigmoid and value's output 5 e T d; the ReLU's output and its square (value's
    input) 2 e T I; the two (1 - mix) vectors 2 e d."""
    tokens = batch * seq
    return 5 * S.e * tokens * S.d + 2 * S.e * tokens * S.d_ff + 2 * S.e * S.d


def mix_bytes(batch: Expr, seq: Expr, widths: Expr, state: Expr, decode: bool) -> Expr:
    """The traffic of a mixer's elementwise work, the memory-bound convention of blocks/mamba.py's
    scan_bytes (not a measurement): each fused kernel reads its inputs and writes its outputs once
    in the activations' dtype, `widths` elements a token; a decode step also reads and writes the
    state."""
    if decode:
        return batch * S.e * widths + 2 * state
    return batch * seq * S.e * widths


@dataclass(frozen=True)
class _RwkvMixer(MixerPhases, Block):
    """phase "train" (no state), "prefill", "chunk" (after a cached prefix: the same products) or
    "decode" (one new token per sequence)."""

    phase: str = "train"

    def __post_init__(self) -> None:
        self.check_phase()

    def mixer_cost(self, tensors: tuple[Tensor, ...], projections: tuple, widths: Expr, state: Expr,
                   saved: Expr) -> Cost:
        forward, backward, linears = projection_costs(S.b * self.seq, list(projections))
        return make_cost(tensors=tensors, **linears, flops_matmul=forward, flops_matmul_backward=backward,
                         bytes_other=mix_bytes(S.b, self.seq, widths, state, self.phase == "decode"),
                         saved_bytes=saved if self.phase == "train" else 0,
                         kv_cache_bytes=state)  # in every phase, as the tree reports the cache


@dataclass(frozen=True)
class RwkvTimeMix(_RwkvMixer):
    """RWKV-4's time mix over b sequences."""

    title = "RWKV time mix"

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: time_decay, time_first, the three mixes, key, value,
        receptance, output."""
        linears = [w for d_in, d_out in TIME_PROJECTIONS for w in weight_and_bias(d_in, d_out, False)]
        return (*(Tensor(S.d) for _ in range(5)), *linears)

    def cost(self) -> Cost:
        # the three mixes (read x and the shift, write one: 3 d each), the WKV loop (reads k, v,
        # writes wkv: 3 d), the gate (reads r and wkv, writes: 3 d)
        return self.mixer_cost(self.tensors(), TIME_PROJECTIONS, 15 * S.d, time_state_bytes(),
                               time_saved_bytes(S.b, self.seq))


@dataclass(frozen=True)
class RwkvChannelMix(_RwkvMixer):
    """RWKV-4's channel mix over b sequences."""

    title = "RWKV channel mix"

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: the two mixes, key, receptance, value."""
        linears = [w for d_in, d_out in (CHANNEL_PROJECTIONS[0], CHANNEL_PROJECTIONS[2], CHANNEL_PROJECTIONS[1])
                   for w in weight_and_bias(d_in, d_out, False)]
        return (Tensor(S.d), Tensor(S.d), *linears)

    def cost(self) -> Cost:
        # the two mixes (3 d each), the squared ReLU (2 I), the gate (3 d)
        return self.mixer_cost(self.tensors(), CHANNEL_PROJECTIONS, 9 * S.d + 2 * S.d_ff, channel_state_bytes(),
                               channel_saved_bytes(S.b, self.seq))
