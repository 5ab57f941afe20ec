"""The kernels one Mamba-2 mixer runs in a training step besides its two projections, as
Megatron-Core runs them: MambaMixer._ssm_training (NVIDIA/Megatron-LM megatron/core/ssm/mamba_mixer.py,
00bebb45) calls mamba_ssm's mamba_split_conv1d_scan_combined without the norm's weight and without
out_proj (state-spaces/mamba mamba_ssm/ops/triton/ssd_combined.py, e9594ce1,
MambaSplitConv1dScanCombinedFn), then its gated RMSNorm (mamba_ssm/ops/triton/layernorm_gated.py)
on the gated output. Each kernel with the batched products it computes on the tensor cores (Gemm
shapes: (M, N, K) and how many) and the bytes it reads and writes, from the code; kernel_time.py
times each as the longer of its products (the GEMM tile model) and its bytes (the bandwidth).
Plain integers: no sympy, no torch.

The rows' containers run these kernels as listed (wt45_hybrid, read at the versions they pin):
Megatron-Bridge's uv.lock pins mamba-ssm 2.3.1 at v0.4.0-v0.4.2 (26.04, 26.04.01) and 2.3.2.post1 at
v0.5.0-v0.6.0; their ssd_*.py differ from e9594ce1 only by the state_dtype argument (#972: Megatron-Core
passes it from 6142ee47 on, not at 44151194, as mamba_training_ssm_states_dtype or else params_dtype:
C's own dtype, as before), a cast of C to dout's dtype in _chunk_scan_bwd_dstates (#855: bf16 on both
sides) and a duplicate assignment removed (#921): the same launches and bytes. MambaMixer._ssm_training
is the same call at 44151194 (26.04.01's Megatron-LM) and d98e8a64. The deterministic backward (#827,
mamba_ssm/utils/determinism.py: tile workspaces summed after each kernel) runs only under
MAMBA_DETERMINISTIC or torch.use_deterministic_algorithms, which the Nemotron-H performance recipes do
not set.

Conventions (stated, not measured):
  - a kernel reads each input and writes each output once (a block one program re-reads from L2,
    as each head of a group reads its group's C B^T, is counted once);
  - the products are dense: the intra-chunk product of _chunk_scan_fwd skips the blocks above the
    diagonal (IS_CAUSAL), how many depends on the autotuned block, so it is counted whole (an
    upper bound); these are hardware FLOPs and time only, the tree's model FLOPs are unchanged;
  - the sequence is padded to whole chunks in the products and the per-chunk tensors (dt, dA),
    the per-token tensors are the tokens';
  - _chunk_state_bwd_db and _chunk_scan_bwd_dC split the heads of a group over nsplits programs when
    batch x chunks x heads is under the GPU's SMs; taken as 1 (Nemotron 3 Nano at 8,192 tokens:
    64 chunks x 64 heads = 4,096 programs per sequence, over any GPU's SMs).
"""

from __future__ import annotations

from .kernel_shapes import Gemm, PassKernel
from .spec import DTYPE_BYTES

FP32 = DTYPE_BYTES["fp32"]  # the chunk states, dt and its cumulative sum, C B^T and the partial gradients


def ssd_training_kernels(batch: int, seq: int, heads: int, head_dim: int, state: int, groups: int,
                         chunk: int, element: int) -> list[PassKernel]:
    """The forward's kernels, then the backward's, for `batch` sequences of `seq` tokens, in the
    activations' dtype of `element` bytes (names as in mamba_ssm)."""
    e, tokens = element, batch * seq
    chunks = batch * -(-seq // chunk)  # all sequences' chunks
    padded = chunks * chunk  # the chunk grid's positions
    inner, bc = heads * head_dim, groups * state  # x (and z, y) per token; B (and C) per token
    conv = inner + 2 * bc  # x B C, the conv's channels
    projected = 2 * inner + 2 * bc + heads  # in_proj's output: z x B C dt
    states = chunks * inner * state  # one state (P x N per head) per chunk
    cb = chunks * groups * chunk * chunk  # C B^T within each chunk, per group
    dt_cs = FP32 * heads * padded  # dt after softplus or dA's cumulative sum, fp32 (b, H, chunks, Q)
    # Megatron's "l b d -> b l d" (and back) .contiguous() copy only when there is a batch to move
    transpose = batch > 1
    # the per-chunk products: (M, N, K) over all chunks and heads (or groups)
    state_of_chunk = Gemm(head_dim, state, chunk, chunks * heads)  # B^T (x dt decay): P x N per head
    c_b = Gemm(chunk, chunk, state, chunks * groups)  # C B^T: Q x Q per group
    intra = Gemm(chunk, head_dim, chunk, chunks * heads)  # (C B^T masked) x: Q x P per head
    inter = Gemm(chunk, head_dim, state, chunks * heads)  # C x state: Q x P per head
    # the kernels the backward reruns as the forward ran them (the autograd function saves zxbcdt)
    # ensure_stride copies x B C first when in_proj's row is not a multiple of 8 elements
    conv_fwd = PassKernel("causal_conv1d_fwd", 2 * e * tokens * conv * (1 + (projected % 8 != 0)))
    cumsum = PassKernel("_chunk_cumsum_fwd", e * tokens * heads + 2 * dt_cs)  # dt in; dt, dA (fp32) out
    chunk_state = PassKernel("_chunk_state_fwd", e * tokens * (inner + bc) + 2 * dt_cs + FP32 * states,
                             (state_of_chunk,))  # x, B, dt and dA in; fp32 states out
    bmm = PassKernel("_bmm_chunk_fwd", 2 * e * tokens * bc + FP32 * cb, (c_b,))  # C, B in; fp32 C B^T out
    forward = [
        PassKernel("transpose zxBCdt", 2 * e * tokens * projected * transpose),
        conv_fwd, cumsum, chunk_state,
        # fp32 states in, the states in the activations' dtype (out_dtype C.dtype) and the last fp32 out
        PassKernel("_state_passing_fwd", (FP32 + e) * states + FP32 * batch * inner * state),
        bmm,
        # C B^T, x, dt, dA, C, the states and z in; out (gated) and out_x (before the gate) out
        PassKernel("_chunk_scan_fwd", FP32 * cb + e * tokens * (4 * inner + bc) + 2 * dt_cs + e * states,
                   (intra, inter)),
        PassKernel("transpose y", 2 * e * tokens * inner * transpose),
        # RMSNormGated(y), no z: y in, its output and rstd (fp32, one per group and token) out
        PassKernel("_layer_norm_fwd", 2 * e * tokens * inner + FP32 * tokens * groups),
    ]
    backward = [
        PassKernel("_layer_norm_bwd", 3 * e * tokens * inner + FP32 * tokens * groups),
        PassKernel("transpose dy", 2 * e * tokens * inner * transpose),
        conv_fwd, PassKernel("dt.clone", 2 * e * tokens * heads), cumsum, bmm, chunk_state,
        PassKernel("_state_passing_fwd", 2 * FP32 * states + FP32 * batch * inner * state),  # fp32 out
        # x, z, out_x and dout in; dz and dout through the gate out
        PassKernel("_chunk_scan_bwd_dz", 6 * e * tokens * inner),
        PassKernel("_chunk_scan_bwd_dstates", e * tokens * (bc + inner) + dt_cs + FP32 * states,
                   (Gemm(head_dim, state, chunk, chunks * heads),)),  # dout^T (C decay): P x N
        # fp32 states and dstates in; both in the activations' dtype out
        PassKernel("_state_passing_bwd", 2 * (FP32 + e) * states),
        PassKernel("_chunk_scan_chunk_state_bwd_dx",
                   e * tokens * (3 * inner + bc) + 3 * dt_cs + FP32 * cb + e * states,
                   (intra, inter)),  # (C B^T)^T dout and B dstates: Q x P per head; dx, ddt out
        # x, dt, dA, dstates and B in; dB (fp32) and ddA out, then dB.sum over the splits
        PassKernel("_chunk_state_bwd_db", e * tokens * (inner + bc) + 3 * dt_cs + e * states
                   + 3 * FP32 * tokens * bc, (Gemm(chunk, state, head_dim, chunks * heads),)),
        PassKernel("_chunk_scan_bwd_dC", e * tokens * (inner + bc) + 2 * dt_cs + e * states
                   + 3 * FP32 * tokens * bc, (Gemm(chunk, state, head_dim, chunks * heads),)),
        PassKernel("_chunk_scan_bwd_dcb", 2 * e * tokens * inner + 2 * dt_cs + FP32 * cb,
                   (Gemm(chunk, chunk, head_dim, chunks * heads),)),  # dout x^T: Q x Q per head
        # dB = dCB C + dB and dC = dCB^T B + dC: C B^T's gradient, the fp32 residual, out in e
        *[PassKernel("_bmm_chunk_bwd", FP32 * cb + (2 * e + FP32) * tokens * bc,
                     (Gemm(chunk, state, chunk, chunks * groups),)) for _ in range(2)],
        PassKernel("_chunk_scan_bwd_ddAcs_stable", 2 * e * tokens * inner + 3 * dt_cs + FP32 * cb,
                   (Gemm(chunk, chunk, head_dim, chunks * heads),)),
        # ddA_prev's flip, cumsum and flip, and ddA += ddA_next + ddA_prev: torch's element-wise ops
        PassKernel("ddA sums", 8 * dt_cs),
        PassKernel("_chunk_cumsum_bwd", 2 * e * tokens * heads + 2 * dt_cs),
        # x B C and the conv output's gradient in, x B C's gradient out (into dzxbcdt)
        PassKernel("causal_conv1d_bwd", 3 * e * tokens * conv),
        PassKernel("transpose dzxBCdt", 2 * e * tokens * projected * transpose),
    ]
    return [k for k in forward if k.bytes] + [PassKernel(k.name, k.bytes, k.products, True)
                                              for k in backward if k.bytes]
