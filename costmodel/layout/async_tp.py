"""Async TP (torchtitan's enable_async_tensor_parallel): torch's micro-pipelined all-gather-matmul and
matmul-reduce-scatter over SymmetricMemory, priced op by op: what each fused op's copies hide under its own
chunked matmuls, and what the decomposition adds (`simulate --async-tp`, a row's "async_tp"; Overlap.async_tp).

Which collectives fuse. torchtitan 3faaa1a0d torchtitan/parallelisms/parallelize_llama.py: "Async TP requires
--training.compile" (lines 50-54); apply_tp sets torch._inductor.config._micro_pipeline_tp and
enable_symm_mem_for_group on the TP group (lines 185-189); compile wraps each TransformerBlock (lines 66-72), so
inductor's micro-pipeline pass (torch/_inductor/fx_passes/micro_pipeline_tp.py) sees each block's sequence-parallel
all-gathers feeding matmuls and matmuls feeding reduce-scatters. fuse_all_gather_matmul takes the matmuls that read
the gathered tensor as their left operand (_find_consumer_matmuls): the forward's Q/K/V and w1/w3 (one op each,
fused_all_gather_matmul with several Bs), the backward's dgrad of wo and of w2 on the gathered output gradient;
fuse_matmul_reduce_scatter needs one producer matmul (_find_producer_matmul: "no producer matmul found for reduce
scatter, skipping"): the forward's wo and w2 fuse, the backward's reduce-scatter of a sublayer's input gradient (a
sum of dgrads) stays NCCL's, as do the embedding's, the head's and the loss's collectives (outside the blocks) and
the norms' once-a-step all-reduce; under float8 rowwise only the reduce-scatters fuse (REDUCE_SCATTERS_ONLY). A
recomputed forward (layout/communication.py recomputed_collectives) fuses as the forward, its consumers the matmuls
it reruns (the rank's rerun kernels).

What a fused op hides (pytorch/pytorch torch/distributed/_symmetric_memory/__init__.py, as stored):
_pipelined_multi_all_gather_and_consume splits the gathered tensor into tp chunks; the rank first copies its shard
into its p2p buffer and passes a barrier, exposed ("we are giving up the chance to overlap mv and b with the first
shard_consumer"), consumes its own chunk, then for each of the tp - 1 peers copies the peer's chunk (copy_, a copy
engine's P2P copy) and consumes it, on two alternating streams; "cp from different streams cannot overlap", so the
copies run one after another. _pipelined_produce_and_all2all mirrors it: produce a chunk, barrier, the peer pulls
it, tp - 1 times, then the rank's own chunk, then _fused_matmul_reduce_scatter_impl's reduce_fn sums the tp
stacked partials (torch.sum over dim 0: reads the matmul's whole output, writes 1/tp of it), exposed. So with one
chunk's copy c and one chunk's matmul m (the op's GEMMs at 1/tp of the rows), the tp - 1 copies each run beside one
chunk's matmul: the op hides (tp - 1) x min(c, m) of its collective and exposes (tp - 1) x max(0, c - m).
Rules and their data:
- c: the collective's own time (collectives.py, the NCCL curve at that payload) over tp - 1: the copies move the
  bytes the ring moves, (tp - 1) / tp of the tensor a rank, over the same NVLink (stated: no copy-engine P2P
  bandwidth is in the facts; torch's NOTE [low-contention collectives] says a copy-engine copy 'may not have a
  significant advantage when there's no ambient compute'; a copy-engine P2P copy measures 376-380 GB/s one way on
  HGX H100, NVIDIA/nccl#1264, against the curve's ~353 GB/s busbw at these payloads: one hardware's, not taken);
- m: the kernel model's tile and wave rule (kernel_time.KernelTimer.gemm_seconds) on the chunk's shape; the op's
  matmuls run as tp chunks, so the step's compute pays tp x m less the whole GEMM's time (the chunks' lower
  efficiency: D. Vega-Myhre, 'Deep dive: overlapping compute and comms in tensor parallelism', 2025-05-26,
  'Amplified wave quantization due to decomposition'; the two streams' overlap of one chunk's partial wave with
  the next chunk, which that post credits, is not);
- the all-gather's shard copy into the p2p buffer (2 x tensor / tp bytes) and the reduce-scatter's sum
  (tensor + tensor / tp bytes), memory-bound at the step's bandwidth, exposed; the barriers' latency is not
  charged;
- the hidden copies take no SM (copy engines: the same post, 'This prevents any SM contention issues'), so they
  pay no Overlap.slowdown (whose source is the SMs an NCCL kernel holds); the copies' HBM traffic beside the
  matmuls is not charged (not measured for this pattern).
Not modelled: the copies' start waiting on the other stream's matmul (each stream's copy follows its own previous
matmul), the float8 ops' gathered tensor in one byte (the rows' TP collectives stay at the activations' dtype, as
their vanilla rows'), and torch's native and multimem variants (small M only: 2048 < M <= 4096 behind an
environment variable; multimem for small global M).
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError
from ..kernel_shapes import Gemm

#: The --fp8 recipes under which torch's pass fuses the matmul-reduce-scatters only, its all-gather-matmuls left
#: NCCL's: pytorch/pytorch#149990 (D. Vega-Myhre, 2025-03-25, open as stored), '[Async TP] all-gather-matmuls not
#: fusing properly when rowwise scales are used': 'the matmul-reduce-scatters were being fused properly ...
#: however, the all-gather-matmul patterns were NOT being fused properly' (torchao float8 rowwise, torchtitan Llama 3
#: 70B); taken as still so in the torch of the benchmark's rows (38410cf9, June 2025: the issue open after it).
REDUCE_SCATTERS_ONLY = ("rowwise",)


def check(layout: Any, compiled: bool) -> None:
    """Async TP as torchtitan runs it: FSDP2's framework, TP with sequence parallelism, compiled."""
    if layout.framework != "fsdp2" or layout.tp <= 1 or not layout.sp or not compiled:
        raise ConfigError("--async-tp is torchtitan's enable_async_tensor_parallel: --framework fsdp2, --tp > 1 with "
                          "sequence parallelism, and --compile ('Async TP requires --training.compile'); here "
                          f"--framework {layout.framework}, --tp {layout.tp}, sp {bool(layout.sp)}, "
                          f"{'compiled' if compiled else 'not compiled'}.")


def stage_terms(step: Any, stage: Any) -> tuple[float, float]:
    """One micro-batch's fused ops on this pipeline rank under a kernel-level StepTime `step`: (the seconds of
    tensor-parallel collectives they hide, the seconds they add to the compute: the chunks' GEMMs over the whole
    GEMMs', the shard copies and the partial sums), the rules of the module's docstring."""
    hidden = added = 0.0
    for runs, kind, gemms, gemm_timer in stage_passes(step, stage):  # refuses a StepTime without kernel entries
        op_hidden, op_added = ring_terms(step, kind, gemms, gemm_timer)
        hidden, added = hidden + runs * op_hidden, added + runs * op_added
    return hidden, added


def ring_terms(step: Any, kind: str, gemms: list, gemm_timer: Any) -> tuple[float, float]:
    """One fused op's (hidden seconds, added seconds) by the module's rules: its collective ("all_gather" or
    "reduce_scatter" of the boundary tensor) as tp - 1 chunk copies beside the tp chunks of its GEMMs `gemms`
    (TE's ring_exchange runs the same pipeline: layout/ub_overlap.py)."""
    from ..kernel_time import kernels_seconds

    tp, x = step.estimate.layout.tp, step.estimate.numbers["boundary"]
    copy = step.collective("tp", kind, x) / (tp - 1)
    own = {"all_gather": 2 * x / tp, "reduce_scatter": x + x / tp}[kind]  # the shard's copy; the partials' sum
    chunk = kernels_seconds([Gemm(-(-g.m // tp), g.n, g.k) for g in gemms], gemm_timer)
    whole = kernels_seconds([Gemm(g.m, g.n, g.k) for g in gemms], gemm_timer)
    return (tp - 1) * min(copy, chunk), tp * chunk - whole + own / step.timer.bandwidth


def fused_calls(step: Any, stage: Any) -> dict[str, int]:
    """One micro-batch's fused collectives on this pipeline rank by kind: the calls whose DTensor chunk-and-cat the
    micro-pipeline pass takes into its fused op (micro_pipeline_tp.py matches the split + cat with the collective
    and erases them), so layout/dtensor_copies.py charges them no copy (each fused op's own copies are above)."""
    calls = {"all_gather": 0, "reduce_scatter": 0}
    for runs, kind, _, _ in stage_passes(step, stage):
        calls[kind] += runs
    return calls


def stage_passes(step: Any, stage: Any, ops_of: Any = None) -> list[tuple[int, str, list, Any]]:
    """The fused ops of one micro-batch on this pipeline rank: (the layer's runs, the collective, the GEMMs beside
    it, the timer of those GEMMs). ops_of(kernels, width, forward): a leaf's ops (None: fused_ops, with the
    float8 rowwise recipe's all-gathers left out; layout/ub_overlap.py passes TE's)."""
    from .roofline_parts import runs_fp8

    estimate, timer = step.estimate, getattr(step, "timer", None)
    if not hasattr(step, "kernel_entries"):
        raise ConfigError("--async-tp is priced by the kernel-level time model only; add --time-model kernels.")
    if estimate.layout.mixed_precision is not None:  # one timer a leaf below; fp8_share's blend is not here
        raise ConfigError(f"layout: async TP and TE's userbuffers overlap time each leaf's GEMMs at one rate; "
                          f"mixed_precision {estimate.layout.mixed_precision}'s bf16 layers are not modelled there.")
    width = estimate.cfg.d_model
    rerun = {kind for kind, calls, _ in estimate.recomputed_collectives(stage) if calls}
    runs = estimate.layer_runs(stage)
    out = []
    for (key, reruns, _, kernels), work in zip(step.kernel_entries, estimate.structure["work"]):
        if key not in runs:
            continue
        gemm_timer = step.fp8_timer if runs_fp8(work, estimate) and step.fp8_timer is not None else timer
        ops = ops_of or fused_ops
        passes = ops(kernels, width, True) + ops(kernels, width, False)
        if estimate.recomputed_kind(key):
            passes += [(kind, gemms) for kind, gemms in ops(reruns, width, True) if kind in rerun]
        if ops_of is None and estimate.layout.fp8 in REDUCE_SCATTERS_ONLY:
            passes = [(kind, gemms) for kind, gemms in passes if kind == "reduce_scatter"]
        out += [(runs[key], kind, gemms, gemm_timer) for kind, gemms in passes]
    return out


def fused_ops(kernels: list, width: int, forward: bool = True) -> list[tuple[str, list]]:
    """A leaf's fused ops as (collective, the GEMMs beside it): forward, the all-gather into the GEMMs that read the
    normed (gathered) input, one op for all of them, and a reduce-scatter out of each GEMM that writes the model's
    width from an unnormed input (wo, w2); backward, the all-gather of each such GEMM's output gradient into its
    dgrad (its input's width out, the model's width in)."""
    gemms = [g for g in kernels if isinstance(g, Gemm) and g.count == 1]
    # A leaf's last GEMM that writes the model's width from what its first writes (an FFN's down projection) is a
    # producer even where kernel_time marks it normed: it marks GEMMs by shape, and a 4 x width FFN at TP 4 reads
    # rows as wide as the norm's (GPT-3 175B's fc2 at TP 4).
    down = len(gemms) - 1 if len(gemms) > 1 and gemms[-1].n == width and gemms[-1].k == gemms[0].n else None
    producers = [g for i, g in enumerate(gemms) if g.n == width and (not g.normed_input or i == down)]
    if not forward:
        return [("all_gather", [Gemm(g.m, g.k, g.n)]) for g in producers]
    consumers = [g for i, g in enumerate(gemms) if g.normed_input and i != down]
    return ([("all_gather", consumers)] if consumers else []) + [("reduce_scatter", [g]) for g in producers]
