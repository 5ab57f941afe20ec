"""The Mamba-2 mixer (transformers 5.24's NemotronHMamba2Mixer): its parameters, its matmul FLOPs as
the PyTorch path runs them (torch_forward: no mamba_ssm or causal_conv1d kernels), the bytes it
saves for backward in training (that path, measured; or Megatron-Core's through mamba_ssm, from
the code), the kernels a training step runs (mamba_kernels.py) and the states its cache holds.

The mixer, for b sequences of n tokens, H = H_m heads of width P = P_m, state N = N_m, G = G_m groups
of B and C, a depthwise conv of K = K_m taps and the scan's chunk Q = Q_m:

  in_proj     d -> 2 H P + 2 G N + H  (z, then x B C, then dt)
  conv1d      depthwise over the H P + 2 G N channels of x B C, K taps, a bias per channel
  dt_bias, A_log, D   one per head
  the chunked scan (SSD): five einsums per call (mamba2_chunk_scan), each a bmm
  norm        gated RMSNorm over H P (one weight, G groups)
  out_proj    H P -> d
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

from .. import symbols as S
from ..kernel_shapes import PassKernel
from ..mamba_kernels import ssd_training_kernels
from ..terms import FP32, Expr, unless_fp32
from .base import (Block, Cost, MixerPhases, Tensor, linear_bytes, linear_flops, make_cost, weight_and_bias,
                   weight_matrix)

#: The mixer's inner width (z and x each) and the channels its conv runs over (x, B and C).
INNER = S.H_m * S.P_m
CONV_CHANNELS = INNER + 2 * S.G_m * S.N_m
#: in_proj's outputs: z, x B C, dt (one per head).
PROJECTED = INNER + CONV_CHANNELS + S.H_m


def scan_flops(batch: Expr, seq: Expr) -> Expr:
    """Matmul FLOPs of mamba2_chunk_scan over `seq` tokens of `batch` sequences, as
    FlopCounterMode counts its einsums (each 2 x the product of its dimensions). With
    C = ceil(seq / Q) chunks (the sequence padded to C Q):
      G = C^T B within a chunk      bclhn,bcshn->bclsh   2 b C Q^2 H N
      Y_diag = M x                  bclsh,bcshp->bclhp   2 b C Q^2 H P
      each chunk's state            bclhn,bclhp->bchpn   2 b C Q H P N
      the states across chunks      bzch,bzhpn->bchpn    2 b (C + 1)^2 H P N  (the initial one too)
      C times each chunk's state    bclhn,bchpn->bclhp   2 b C Q H P N
    """
    chunks = sp.ceiling(seq / S.Q_m)
    per_head = (2 * chunks * S.Q_m**2 * (S.N_m + S.P_m) + 4 * chunks * S.Q_m * S.P_m * S.N_m
                + 2 * (chunks + 1)**2 * S.P_m * S.N_m)
    return batch * S.H_m * per_head


def conv_flops(batch: Expr, out_len: Expr) -> Expr:
    """FlopCounterMode's count of the depthwise conv1d: 2 x output elements x K (one input channel
    per group)."""
    return 2 * batch * CONV_CHANNELS * out_len * S.K_m


def scan_bytes(batch: Expr, seq: Expr, decode: bool) -> Expr:
    """The traffic of the mixer's work besides its two projections, a memory-bound model (a
    stated convention, not a measurement; the roofline's in every phase, the kernel model's
    outside training, which times mamba_kernels.py's kernels): each kernel reads its inputs and writes its outputs
    once, in the activations' dtype, as the fused kernels a training or serving stack runs
    (causal_conv1d, mamba_ssm's chunked scan, its gated RMSNorm) do:
      conv        reads and writes the x B C channels                      2 C
      scan        reads x, B, C and dt, writes y                            C + H + H P
      gated norm  reads y and z, writes its output                         3 H P
    per token (C = H P + 2 G N channels), and the chunk states between the scan's kernels, fp32
    (b, ceil(n / Q), H, P, N), written once and read once. A decode step instead reads and
    writes the cached states: the conv's K C in the activations' dtype, the scan's H P N in fp32."""
    per_token = 3 * CONV_CHANNELS + S.H_m + 4 * INNER
    state = S.H_m * S.P_m * S.N_m
    if decode:
        return batch * S.e * per_token + 2 * mamba_state_bytes(batch)  # the cached states, read and written
    return batch * (S.e * seq * per_token + 2 * FP32 * sp.ceiling(seq / S.Q_m) * state)


def saved_bytes_torch(batch: Expr, seq: Expr, gated_norm: bool = True) -> Expr:
    """Bytes transformers' torch_forward keeps for backward in one mixer in training, its input
    aside (the norm before it counts it), with T = b n tokens, C = ceil(n / Q) chunks and
    n_Q = C Q the padded length (validate/measure's saved-tensor hooks on NemotronHMamba2Mixer;
    exact from two chunks on: with one chunk einsum's reshapes are views or copies as the
    batch happens to make them). The scan runs in fp32 (hidden_states.float(), B and C upcast and
    repeated to every head); u = 1 where the activations are narrower than fp32 (their .float()
    makes copies), 0 in fp32:
      in_proj's output (the conv keeps a view of it)            e T (2 H P + 2 G N + H)
      the conv's output (silu keeps it), n + K - 1 long         e b (H P + 2 G N) (n + K - 1)
      dt + dt_bias and softplus's output                        2 e T H
      dt in fp32 (two copies where narrower)                    4 T H (1 + u)
      x for the products: silu's output (fp32), else its copy   e T (H P + 2 G N) | 4 T H P
      x padded for D, x dt chunked, x transposed                3 x 4 b n_Q H P
      A = -exp(A_log) and the exp                               2 x 4 H
      segment_sum's two bool masks, twice                       2 Q^2 + 2 (C + 1)^2
      L, C^T B and M, each (Q x Q) per chunk and head           3 x 4 b C H Q^2
      B and C chunked and in the products, B decayed            5 x 4 b n_Q H N
      the decays out of and into each chunk                     2 x 4 b C H Q
      the chunk decays, the states (and initial), C's states    4 b H ((C + 1)^2 + (C + 1) P N + C P N)
      C times the states, the scan's output (padded)            2 x 4 b n_Q H P
      the gated norm (fp32): the gate (where narrower), silu(gate), the product, the
      normalised tensor, rsqrt per group                        4 T H P (3 + u) + 4 T G
        without it (gated_norm False, Falcon-H1's y * silu(z)): silu(z)      e T H P
      out_proj's input                                          e T H P
    """
    tokens, chunks = batch * seq, sp.ceiling(seq / S.Q_m)
    padded = chunks * S.Q_m
    # silu's output itself in fp32 (.float() returns it); where narrower an fp32 copy of x alone
    x_kept = unless_fp32(FP32 * tokens * INNER - S.e * tokens * CONV_CHANNELS) + S.e * tokens * CONV_CHANNELS
    per_head = (3 * chunks * S.Q_m**2 + 5 * padded * S.N_m + 2 * chunks * S.Q_m + (chunks + 1)**2
                + (chunks + 1) * S.P_m * S.N_m + chunks * S.P_m * S.N_m + 5 * padded * S.P_m)
    return (S.e * tokens * PROJECTED + S.e * batch * CONV_CHANNELS * (seq + S.K_m - 1) + 2 * S.e * tokens * S.H_m
            + FP32 * tokens * S.H_m + unless_fp32(FP32 * tokens * S.H_m) + x_kept + 2 * FP32 * S.H_m
            + 2 * S.Q_m**2 + 2 * (chunks + 1)**2 + FP32 * batch * S.H_m * per_head
            + (FP32 * tokens * (3 * INNER + S.G_m) + unless_fp32(FP32 * tokens * INNER) if gated_norm
               else S.e * tokens * INNER) + S.e * tokens * INNER)


def saved_bytes_mamba_ssm(batch: Expr, seq: Expr) -> Expr:
    """Bytes Megatron-Core's MambaMixer keeps for backward in one mixer in training, its input
    aside (from the code, facts.json "mamba_path"; not measured: the Triton kernels need a GPU):
    mamba_split_conv1d_scan_combined saves in_proj's output zxbcdt, the scan's output before the
    gate out_x and A (with exp's result, fp32); the gated RMSNorm its input and its fp32 rstd per
    group; out_proj its input: e T (2 H P + 2 G N + H) + 3 e T H P + 4 T G + 2 x 4 H."""
    tokens = batch * seq
    return S.e * tokens * (PROJECTED + 3 * INNER) + FP32 * tokens * S.G_m + 2 * FP32 * S.H_m


def mamba_state_bytes(batch: Expr = S.b, conv_columns: Expr = S.K_m, ssm_bytes: Expr = FP32) -> Expr:
    """Bytes one Mamba-2 layer's cache holds, whatever the context. By default transformers'
    (LinearAttentionLayer): the conv state, the last K inputs of x B C in the activation dtype
    (b, H P + 2 G N, K), and the scan's state, fp32 as mamba2_chunk_scan returns it (b, H, P, N).
    conv_columns and ssm_bytes give another engine's layout (serving/state_slots.py: vLLM's
    K - 1 columns and its --mamba-ssm-cache-dtype)."""
    return batch * (CONV_CHANNELS * conv_columns * S.e + ssm_bytes * S.H_m * S.P_m * S.N_m)


class ShortConvPhases(MixerPhases):
    """What a mixer with a causal depthwise convolution of K_m taps (Mamba-2's, Gated DeltaNet's)
    runs in each phase: its tokens a sequence (MixerPhases.seq) and the conv's input length
    (the sequence after its K_m - 1 cached or zero-padded positions)."""

    @property
    def conv_len(self) -> Expr:
        return {"train": S.n + S.K_m - 1, "prefill": sp.Max(S.n, S.K_m) + S.K_m - 1,
                "chunk": S.n + 2 * S.K_m - 1, "decode": sp.Integer(2)}[self.phase]


@dataclass(frozen=True)
class Mamba2Mixer(ShortConvPhases, Block):
    """One Mamba-2 mixer over b sequences. phase "train" (no cache), "prefill" (a cache filled from
    the prompt), "chunk" (n new tokens after a cached prefix) or "decode" (one new token per
    sequence: the conv and the state updated in place, mamba2_selective_state_update).

    Its conv's output length, as causal_conv1d_fn and causal_conv1d_update compute it before
    slicing: n + K - 1 in training; max(n, K) + K - 1 in a prefill (the cache pads a prompt shorter
    than K); n + 2K - 1 in a chunk (the cached K inputs concatenated ahead); 2 in a decode step
    (K cached and the new one, no padding). The decode step's scan is one bmm of the state with C.
    """

    phase: str = "train"
    path: str = "torch"  # the training step's code: facts.mamba_path ("torch" or "mamba_ssm")
    bias: bool = False  # in_proj's and out_proj's (config.use_bias)
    conv_bias: bool = True  # config.use_conv_bias
    out_bias: bool | None = None  # out_proj's where not `bias` (Falcon-H1's projectors_bias)
    gated_norm: bool = True  # False: no gated RMSNorm, y * silu(z) (Falcon-H1's mamba_rms_norm false)
    mup_vector: bool = False  # in_proj's output times a buffer as wide (Falcon-H1's mup_vector)
    title = "Mamba-2 mixer"

    def __post_init__(self) -> None:
        self.check_phase()
        if self.path not in ("torch", "mamba_ssm"):
            raise ValueError(f"Mamba2Mixer path {self.path!r} is not torch or mamba_ssm.")

    def pass_kernels(self, number: Callable[[Expr], int]) -> list[PassKernel] | None:
        """A training step's kernels besides in_proj and out_proj (costmodel/mamba_kernels.py:
        Megatron-Core's path through mamba_ssm), sizes read with `number`; None in the other
        phases (timed as scan_bytes). Every implementation's step is timed so: transformers' class
        runs the same kernels on a GPU where mamba_ssm is installed (5.24's
        use_kernel_func_from_hub_with_fallback: mamba_split_conv1d_scan_combined), while
        impl hf's saved bytes (saved_bytes) are its torch path's, the one measured on a CPU."""
        if self.phase != "train":
            return None
        return ssd_training_kernels(*(number(x) for x in (S.b, S.n, S.H_m, S.P_m, S.N_m, S.G_m, S.Q_m, S.e)))

    def tensors(self) -> tuple[Tensor, ...]:
        """In registration order: dt_bias, A_log, D, conv1d (weight (channels, 1, K), bias),
        in_proj, the gated norm's weight (where it has one), out_proj."""
        heads = (Tensor(S.H_m),) * 3
        conv = (Tensor(CONV_CHANNELS, S.K_m),) + ((Tensor(CONV_CHANNELS),) if self.conv_bias else ())
        out_bias = self.bias if self.out_bias is None else self.out_bias
        norm = (Tensor(INNER),) if self.gated_norm else ()
        return (*heads, *conv, *weight_and_bias(S.d, PROJECTED, self.bias), *norm, *weight_and_bias(INNER, S.d, out_bias))

    def cost(self) -> Cost:
        tokens = S.b * self.seq
        in_fwd, in_bwd = linear_flops(tokens, S.d, PROJECTED)
        out_fwd, out_bwd = linear_flops(tokens, INNER, S.d)
        conv = conv_flops(S.b, self.conv_len)
        scan = (2 * S.b * S.H_m * S.P_m * S.N_m if self.phase == "decode"
                else scan_flops(S.b, self.seq))
        return make_cost(
            tensors=self.tensors(),
            matrices=[weight_matrix(S.d, PROJECTED), weight_matrix(INNER, S.d)],
            flops_matmul=in_fwd + out_fwd + conv + scan,
            # each product's two inputs need gradients: one product for each (the conv's weight
            # gradient is a conv of the same size; FlopCounterMode's conv_backward_flop ignores
            # the groups and counts it CONV_CHANNELS times over)
            flops_matmul_backward=in_bwd + out_bwd + 2 * conv + 2 * scan,
            # the kernel model (kernel_time.py) times the two projections as GEMMs of these
            # rows; in training the rest as mamba_ssm's kernels (pass_kernels), else as its bytes
            matrix_tokens=[tokens, tokens],
            bytes_matmul=linear_bytes(tokens, S.d, PROJECTED) + linear_bytes(tokens, INNER, S.d),
            bytes_other=scan_bytes(S.b, self.seq, self.phase == "decode"),
            saved_bytes=0 if self.phase != "train" else (
                saved_bytes_mamba_ssm(S.b, self.seq) if self.path == "mamba_ssm"
                else saved_bytes_torch(S.b, self.seq, self.gated_norm)),
            kv_cache_bytes=mamba_state_bytes(),  # in every phase, as the tree reports the cache
            buffer_bytes=S.e * PROJECTED if self.mup_vector else 0,  # built in the model's dtype
        )
