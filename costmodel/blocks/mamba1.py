"""The Mamba-1 mixer (transformers 5.24's MambaMixer and FalconMambaMixer): its parameters, its
matmul FLOPs as the PyTorch path runs them (slow path: causal_conv1d_fn and mamba_selective_scan's
recurrent loop, no mamba_ssm or causal_conv1d kernels), the bytes it saves for backward in
training (that path, measured) and the states its cache holds.

The mixer, for b sequences of n tokens, an inner width D = D_m1 (expand x hidden_size), a state of
N = N_m per channel, dt's rank R = R_m1 and a depthwise conv of K = K_m taps:

  conv1d      depthwise over the D channels of x, K taps, a bias per channel (use_conv_bias)
  in_proj     d -> 2 D  (x, then the gate z)
  x_proj      D -> R + 2 N  (dt's low-rank input, B, C), no bias
  dt_proj     R -> D, its bias added in the scan (delta_bias), not by the matmul
  A_log       (D, N): a diagonal A per channel (Mamba-2's is one scalar per head)
  D           one per channel (the skip)
  the selective scan: per token a state update h = exp(A dt) h + dt B x, elementwise, and the
              output y = h C, one bmm of (b, D, N) by (b, N, 1)
  out_proj    D -> d
falcon_mamba adds weightless RMS norms (FalconMambaWeightlessRMSNorm: non-persistent buffers, no
parameters) on dt's input, B and C after x_proj, jamba weighted ones (JambaRMSNorm: R, N and N
weights): ModelConfig.mamba1_norms, one of NORMS.

What it runs besides its matmuls (exp, softplus, silu, the state updates, the norms) is not among
the other FLOPs (the workload's warnings say so). Its kernel time, where no kernel shapes are
listed, is its traffic (scan_bytes): the convention blocks/mamba.py states for Mamba-2, applied to
mamba_ssm's selective_scan_fn, whose timed kernels this project has no source for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr, unless_fp32
from .base import Block, Cost, Tensor, make_cost, projection_costs, weight_and_bias
from .deltanet import GatedDeltaNetMixer
from .mamba import Mamba2Mixer, ShortConvPhases
from .kda import KimiDeltaAttentionMixer
from .lightning import LightningAttentionMixer
from .rglru import RGLRUMixer
from .rwkv import RwkvChannelMix, RwkvTimeMix
from .mlstm import MLSTMMixer
from .shortconv import ShortConvMixer

#: ModelConfig.mamba1_norms: none (mamba), weightless (falcon_mamba), weighted (jamba).
NORMS = ("none", "weightless", "weighted")
INNER = S.D_m1
#: x_proj's outputs: dt's low-rank input, B and C.
X_PROJECTED = S.R_m1 + 2 * S.N_m


def projections() -> list[tuple[Expr, Expr]]:
    """(d_in, d_out) of in_proj, x_proj, dt_proj and out_proj, in the order they run."""
    return [(S.d, 2 * INNER), (INNER, X_PROJECTED), (S.R_m1, INNER), (INNER, S.d)]


def conv_flops(batch: Expr, out_len: Expr) -> Expr:
    """FlopCounterMode's count of the depthwise conv1d: 2 x output elements x K."""
    return 2 * batch * INNER * out_len * S.K_m


def scan_flops(batch: Expr, seq: Expr) -> Expr:
    """The recurrent loop's one product a token, h (b, D, N) times C (b, N, 1): 2 b n D N (a
    decode step's mamba_selective_state_update runs the same product once)."""
    return 2 * batch * seq * INNER * S.N_m


def scan_bytes(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The traffic of the mixer's work besides its four projections, the memory-bound convention
    of blocks/mamba.py's scan_bytes (not a measurement): each fused kernel reads its inputs and
    writes its outputs once, in the activations' dtype, as causal_conv1d and mamba_ssm's
    selective_scan_fn (which keeps the state on chip) would:
      conv  reads and writes x                         2 D
      scan  reads x, dt, B, C and z, writes y          4 D + 2 N
    per token. A decode step also reads and writes the cached states: the conv's K D in the
    activations' dtype, the scan's D N in fp32."""
    per_token = 6 * INNER + 2 * S.N_m
    if decode:
        return batch * (S.e * per_token + 2 * S.e * S.K_m * INNER + 2 * FP32 * INNER * S.N_m)
    return batch * S.e * seq * per_token


def head_split_bytes(batch: Expr, seq: Expr, heads: int) -> Expr:
    """What ZambaMambaMixer keeps beyond one head's saved_bytes_torch when split into `heads` heads
    (n_mamba_heads: x_proj_weight (H, R + 2N, D / H) and dt_proj_weight (H, D / H, R) applied by a
    broadcast matmul over the batch, then one reference scan per head), with T = b n tokens; measured
    exact against the one-head class at (b, n) = (2, 9), (2, 5), (3, 4), (2, 1), (1, 9), (1, 5), (1, 1),
    (3, 2), heads 2 and 4, fp32 and bf16 (tests/test_hf_zamba.py; validate/FINDINGS.md, session 28):
      each head's own dt, B and C: x_proj's output, H - 1 more heads' worth   e T (H - 1)(R + 2N)
      B.float() a head where narrower than fp32 (a view in fp32)            4 T N (H - 1) u
    and where b > 1 (matmul broadcasts each head's weight over the batch: the expanded (H, b) weights
    reshape to (H b, ...) as copies, kept as bmm's first input; at b = 1 they stay views of the
    parameters), and the scan's input a head, a view of the heads' transpose whose storage no other
    saved tensor shares (x_proj's input is its own copy):
      x_proj's weight expanded, dt_proj's weight expanded                  e b D (R + 2N) + e b D R
      the scan's input                                                       e T D"""
    if heads == 1:
        return sp.Integer(0)
    tokens = batch * seq
    split = S.e * tokens * (heads - 1) * X_PROJECTED + unless_fp32(FP32 * tokens * S.N_m * (heads - 1))
    broadcast = S.e * batch * INNER * (X_PROJECTED + S.R_m1) + S.e * tokens * INNER
    return split + sp.Piecewise((0, sp.Eq(batch, 1)), (broadcast, True))


def saved_bytes_torch(batch: Expr, seq: Expr, norms: str, x_proj_copied: bool = False) -> Expr:
    """Bytes the slow path keeps for backward in one mixer in training, its input aside (the norm
    before it counts it), with T = b n tokens (validate/measure's saved-tensor hooks on MambaMixer
    and FalconMambaMixer). dt is in the activations' dtype; A, discrete A and B and the states are
    fp32; u = 1 where the activations are narrower than fp32 (their .float() copies), 0 in fp32:
      in_proj's output (the conv keeps a view of it)                 2 e T D
      the conv's output, n + K - 1 long                              e b D (n + K - 1)
      silu(conv), dt + bias and softplus(dt), silu(z), out_proj's
        input                                                        5 e T D
      x_proj's input, a copy of silu(conv)'s transpose (a view where
        b = 1 or n = 1: a strided matrix mm reads as it is; always a
        copy under facts.mamba1_x_proj_copied, Zamba's bmm)          e T D | 0
      y = scan + x D (fp32: D.float()), x.float() for dB x           4 T D (1 + u)
      exp(A_log) and A                                               2 x 4 D N
      discrete A and discrete B (b, D, n, N)                         2 x 4 b n D N
      the states: each kept by the next update and by the product
        with C: n + 1 in e (the first zeros), n - 1 more in fp32 where narrower
      D.float() where narrower                                       4 D u
    mamba: x_proj's output (dt's input, B, C as views) e T (R + 2 N) and B.float() 4 T N u;
    falcon_mamba's norms instead keep their fp32 inputs 4 T (R + 2 N) (views in fp32, copies
    where narrower), three rsqrt columns 3 x 4 T, the normalised dt and C e T (R + N) and B as
    fp32 4 T N; jamba's weighted norms keep besides each normalised input cast back to the
    activations' dtype (the weight's product's other factor) e T (R + 2 N)."""
    tokens = batch * seq
    state = batch * INNER * S.N_m
    x_proj_input = S.e * tokens * INNER if x_proj_copied else \
        sp.Piecewise((0, sp.Or(sp.Eq(batch, 1), sp.Eq(seq, 1))), (S.e * tokens * INNER, True))
    common = (2 * S.e * tokens * INNER + S.e * batch * INNER * (seq + S.K_m - 1) + 5 * S.e * tokens * INNER
              + x_proj_input
              + FP32 * tokens * INNER + unless_fp32(FP32 * tokens * INNER) + 2 * FP32 * INNER * S.N_m
              + 2 * FP32 * seq * state + state * (S.e * (seq + 1) + unless_fp32(FP32 * (seq - 1)))
              + unless_fp32(FP32 * INNER))
    if norms != "none":
        weighted = S.e * tokens * X_PROJECTED if norms == "weighted" else 0
        return common + FP32 * tokens * (X_PROJECTED + 3 + S.N_m) + S.e * tokens * (S.R_m1 + S.N_m) + weighted
    return common + S.e * tokens * X_PROJECTED + unless_fp32(FP32 * tokens * S.N_m)


def mamba1_state_bytes(batch: Expr = S.b) -> Expr:
    """Bytes one Mamba-1 layer's cache holds, whatever the context: the conv state, the last K
    inputs of x in the activation dtype (b, D, K), and the scan's state, fp32 as the loop leaves
    it (b, D, N)."""
    return batch * (INNER * S.K_m * S.e + FP32 * INNER * S.N_m)


@dataclass(frozen=True)
class Mamba1Mixer(ShortConvPhases, Block):
    """One Mamba-1 mixer over b sequences. phase "train" (no cache), "prefill" (a cache filled from
    the prompt), "chunk" (n new tokens after a cached prefix) or "decode" (one new token per
    sequence: causal_conv1d_update and mamba_selective_state_update). The conv's output length
    before slicing is blocks/mamba.py's (the same conv functions and cache class)."""

    phase: str = "train"
    bias: bool = False  # in_proj's and out_proj's (config.use_bias)
    conv_bias: bool = True  # config.use_conv_bias
    norms: str = "none"  # RMS norms on dt's input, B and C: NORMS
    x_proj_copied: bool = False  # facts.mamba1_x_proj_copied (Zamba's per-head bmm)
    heads: int = 1  # zamba's n_mamba_heads (ModelConfig.mamba1_heads): its per-head copies (head_split_bytes)
    title = "Mamba-1 mixer"

    def __post_init__(self) -> None:
        self.check_phase()
        if self.norms not in NORMS:
            raise ValueError(f"Mamba1Mixer norms {self.norms!r} is not one of {', '.join(NORMS)}.")

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: conv1d (weight (D, 1, K), bias), in_proj, x_proj, dt_proj (and
        its bias), A_log, D, out_proj, and jamba's norm weights on dt's input, B and C."""
        conv = (Tensor(INNER, S.K_m),) + ((Tensor(INNER),) if self.conv_bias else ())
        norms = (Tensor(S.R_m1), Tensor(S.N_m), Tensor(S.N_m)) if self.norms == "weighted" else ()
        return (*conv, *weight_and_bias(S.d, 2 * INNER, self.bias), *weight_and_bias(INNER, X_PROJECTED, False),
                *weight_and_bias(S.R_m1, INNER, True), Tensor(INNER, S.N_m), Tensor(INNER),
                *weight_and_bias(INNER, S.d, self.bias), *norms)

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        forward, backward, linears = projection_costs(tokens, projections())
        conv = conv_flops(S.b, self.conv_len)
        scan = scan_flops(S.b, self.seq)
        return make_cost(
            tensors=self.tensors(),
            **linears,
            flops_matmul=forward + conv + scan,
            # each product's two inputs need gradients; the conv's weight gradient a conv of
            # the same size (blocks/mamba.py's convention)
            flops_matmul_backward=backward + 2 * conv + 2 * scan,
            bytes_other=scan_bytes(S.b, self.seq, self.phase == "decode"),
            saved_bytes=(saved_bytes_torch(S.b, self.seq, self.norms, self.x_proj_copied)
                         + head_split_bytes(S.b, self.seq, self.heads) if self.phase == "train" else 0),
            kv_cache_bytes=mamba1_state_bytes(),  # in every phase, as the tree reports the cache
        )


def linear_mixer(kind: str, phase: str, cfg: Any, facts: Any) -> Block:
    """The mixer of a layer of ModelConfig.mixer_layers whose kind is a linear one: "deltanet"
    (Qwen3-Next, blocks/deltanet.py), "mamba1" (this module), "shortconv" (LFM2, blocks/shortconv.py),
    "lightning" (MiniMax, blocks/lightning.py), "kda" (Kimi Linear, blocks/kda.py), "rglru" (RecurrentGemma, blocks/rglru.py), "rwkv_time" and "rwkv_channel" (RWKV-4,
    blocks/rwkv.py), "mlstm" (xLSTM, blocks/mlstm.py) or "mamba" (blocks/mamba.py, its training step's code facts.mamba_path, its mup_vector buffer
    facts.mamba_mup_vector)."""
    if kind == "deltanet":
        return GatedDeltaNetMixer(phase, split=cfg.deltanet_split_projections)
    if kind == "shortconv":
        return ShortConvMixer(phase, bias=cfg.conv_bias)
    if kind == "lightning":
        return LightningAttentionMixer(phase)
    if kind == "kda":
        return KimiDeltaAttentionMixer(phase)
    if kind == "rglru":
        return RGLRUMixer(phase)
    if kind == "mlstm":
        return MLSTMMixer(phase)
    if kind in ("rwkv_time", "rwkv_channel"):
        return RwkvTimeMix(phase) if kind == "rwkv_time" else RwkvChannelMix(phase)
    if kind == "mamba1":
        return Mamba1Mixer(phase, bias=cfg.mamba_bias, conv_bias=cfg.conv_bias, norms=cfg.mamba1_norms,
                           x_proj_copied=facts.mamba1_x_proj_copied, heads=cfg.mamba1_heads)
    return Mamba2Mixer(phase, path=facts.mamba_path, bias=cfg.mamba_bias, conv_bias=cfg.conv_bias,
                       out_bias=cfg.mamba_out_bias, gated_norm=cfg.mamba_gated_norm, mup_vector=facts.mamba_mup_vector)
