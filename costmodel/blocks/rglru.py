"""Griffin's recurrent block (transformers 5.24's RecurrentGemmaRecurrentBlock, the "recurrent"
layers of model_type recurrent_gemma): its parameters, its matmul FLOPs as the PyTorch path runs
them (a depthwise nn.Conv1d, two block-diagonal gate products by torch.baddbmm, the RG-LRU's
recurrence as a Python loop of elementwise ops) and the states its cache holds.

The block, for b sequences of n tokens (T = b n), a width D = D_rg (lru_width), h gate blocks of
D / h (num_attention_heads) and a depthwise conv of K = K_m taps (conv1d_width):

  linear_y    d -> D, a bias; gelu (hidden_activation): the gate branch
  linear_x    d -> D, a bias: the recurrent branch's input
  conv_1d     depthwise over the D channels, K taps, a bias, padded by K - 1 on both sides and
              sliced to the first n outputs (n + K - 1 computed), with or without a cache
  rg_lru      input_gate_weight and recurrent_gate_weight (h, D/h, D/h), each with a bias (h, D/h):
              two baddbmm of (h, T, D/h) by (h, D/h, D/h); recurrent_param (D); the recurrence
              h_t = a_t h_{t-1} + sqrt(1 - a_t^2) (i_t x_t), elementwise, in fp32
  linear_out  D -> d, a bias, over the product of the two branches

A cached decode step computes the conv as a sum of products (torch.sum(conv_state * weight)): no
matmul. The cache of a recurrent layer is its state: the conv's last K - 1 inputs (b, D, K - 1) in
the activations' dtype and the recurrence's (b, D) in fp32; the block holds them itself
(conv1d_state, rg_lru.recurrent_states), not transformers' Cache.

The bytes it saves for backward in training are the PyTorch loop's, measured (saved_bytes_torch).
What it runs besides its matmuls (gelu, the sigmoids, softplus, exp, sqrt, the loop) is not among
the other FLOPs (the workload's warnings say so). Its kernel time, where no kernel shapes are
listed, is its traffic (scan_bytes): the memory-bound convention blocks/mamba.py states for Mamba-2.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import FP32, Expr, if_batch_of_one, if_fp32, unless_fp32
from .base import Block, Cost, MixerPhases, Tensor, make_cost, projection_costs, weight_and_bias

WIDTH = S.D_rg


def projections() -> list[tuple[Expr, Expr]]:
    """(d_in, d_out) of linear_y, linear_x and linear_out, in the order they run."""
    return [(S.d, WIDTH), (S.d, WIDTH), (WIDTH, S.d)]


def conv_flops(batch: Expr, seq: Expr) -> Expr:
    """FlopCounterMode's count of the depthwise conv1d over n + K - 1 outputs (padding K - 1, sliced
    after): 2 x output elements x K."""
    return 2 * batch * WIDTH * (seq + S.K_m - 1) * S.K_m


def gate_flops(tokens: Expr) -> Expr:
    """The two gates' baddbmm: h products of (T, D/h) by (D/h, D/h), 2 T D^2 / h each."""
    return 2 * (2 * tokens * WIDTH * WIDTH / S.h)


def scan_bytes(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The traffic of the block's work besides its three projections, the memory-bound convention
    of blocks/mamba.py's scan_bytes (not a measurement): each fused kernel reads its inputs and
    writes its outputs once, in the activations' dtype:
      conv          reads and writes x                          2 D
      the gates     read their two outputs                      2 D
      the recurrence reads x, writes y                          2 D
      y times gelu(linear_y): reads both, writes the product   3 D
    per token. A decode step also reads and writes the cached states."""
    per_token = 9 * WIDTH
    if decode:
        return batch * S.e * per_token + 2 * rglru_state_bytes(batch)
    return batch * S.e * seq * per_token


def saved_bytes_torch(batch: Expr, seq: Expr) -> Expr:
    """Bytes the block keeps for backward in one layer in training, its input aside (the norm
    before it counts it), with T = b n tokens, n >= 2 (validate/measure's saved-tensor hooks on
    RecurrentGemmaForCausalLM under its default use_cache; a one-token sequence runs the decode
    branch, not modelled):
      linear_y's output (gelu's input), linear_x's output (the conv's input)       2 e T D
      the conv's output, n + K - 1 long (the input gate's other factor)            e b D (n + K - 1)
      its reshape for the gates' baddbmm: a copy, a view for one sequence          e T D | 0
      the two sigmoids, -8 r softplus(param), exp of it and of twice it, 1 - a^2,
        sqrt of it, the gated input, the recurrence's output, gelu's output,
        linear_out's input                                                         11 e T D
      softplus(recurrent_param)                                                    e D
      ~reset twice (bool, one row of positions)                                    2 n
      the recurrence's n states in fp32 (the first its zeros)                      4 n b D
      its gates a step: in fp32 views of one e T D tensor; where narrower, the
        fp32 copies of steps 2..n                                                  e T D | 4 (n - 1) b D"""
    tokens = batch * seq * WIDTH
    return (14 * S.e * tokens + S.e * batch * WIDTH * (seq + S.K_m - 1) - if_batch_of_one(S.e * tokens)
            + S.e * WIDTH + 2 * seq + FP32 * seq * batch * WIDTH
            + if_fp32(S.e * tokens) + unless_fp32(FP32 * (seq - 1) * batch * WIDTH))


def rglru_state_bytes(batch: Expr = S.b) -> Expr:
    """Bytes one recurrent layer holds, whatever the context: the conv's last K - 1 inputs
    (b, D, K - 1) in the activations' dtype and the recurrence's state (b, D) in fp32."""
    return batch * (WIDTH * (S.K_m - 1) * S.e + FP32 * WIDTH)


@dataclass(frozen=True)
class RGLRUMixer(MixerPhases, Block):
    """One recurrent block over b sequences. phase "train" (no cache), "prefill" (a cache filled
    from the prompt), "chunk" (n new tokens after a cached prefix: the class convolves them alone,
    zero-padded, as a prefill) or "decode" (one new token per sequence, the conv as a sum of
    products)."""

    phase: str = "train"
    title = "RG-LRU recurrent block"

    def __post_init__(self) -> None:
        self.check_phase()

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: linear_y, linear_x, linear_out (each with its bias), conv_1d
        (weight (D, 1, K), bias), recurrent_param, the input gate's weight and bias, the recurrent
        gate's."""
        gate = (Tensor(S.h, (WIDTH / S.h) ** 2), Tensor(S.h, WIDTH / S.h))
        return (*weight_and_bias(S.d, WIDTH, True), *weight_and_bias(S.d, WIDTH, True),
                *weight_and_bias(WIDTH, S.d, True), Tensor(WIDTH, S.K_m), Tensor(WIDTH),
                Tensor(WIDTH), *gate, *gate)

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        forward, backward, linears = projection_costs(tokens, projections())
        conv = 0 if self.phase == "decode" else conv_flops(S.b, self.seq)
        gates = gate_flops(tokens)
        return make_cost(
            tensors=self.tensors(),
            **linears,
            flops_matmul=forward + conv + gates,
            # each product's two inputs need gradients; the conv's weight gradient a conv of the
            # same size (blocks/mamba.py's convention)
            flops_matmul_backward=backward + 2 * conv + 2 * gates,
            bytes_other=scan_bytes(S.b, self.seq, self.phase == "decode"),
            saved_bytes=saved_bytes_torch(S.b, self.seq) if self.phase == "train" else 0,
            kv_cache_bytes=rglru_state_bytes(),  # in every phase, as the tree reports the cache
        )
