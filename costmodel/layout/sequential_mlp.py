"""Megatron-Core's SequentialMLP: the routed experts without --moe-grouped-gemm (Layout.moe_grouped_gemm False,
Megatron-LM's default), a Python loop over the rank's E local experts, each its own fc1, activation and fc2 at
its own tokens, where the tree's expert leaf runs one grouped GEMM a product over them (expert_kernels.py). A
training step's kernel-level term (KernelStepTime.part_seconds) and host calls (layout/host_syncs.py).

The counts are kernel_facts.json "megatron_sequential_mlp" (the loop measured from the code:
validate/sequential_mlp_ops.py). Per MoE layer and micro-batch of a rank, on the expert leaf (times its layout
factor, the most loaded EP rank's share):
    GEMMs   each grouped Gemm of the leaf (count c experts of m rows) as c Gemms of m rows, forward and
            backward (and the forward again where the leaf is recomputed): their time less the grouped one's
    loop    bytes (b_E E X + b_1 X + b_inv X / E) / bandwidth, X = e S d, S = b n k / cp the rank's slots
    launch  ((E - 1)(expert kernels) + loop kernels) x overhead_s_per_block / launches_per_block
    host    +4 E + 1 calls forward, +3 E - 3 Python backward Functions
Launch and bandwidth: layout/unfused.py's (the term the router's and permutations' unfused paths share).
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, show
from ..kernel_rates import kernel_facts
from ..kernel_shapes import Gemm
from ..spec import DTYPE_BYTES
from .unfused import eager_seconds


def facts() -> dict[str, Any]:
    return kernel_facts()["megatron_sequential_mlp"]


def check(cfg: Any, layout: Any) -> None:
    """Layout.check's: a bool; off only on Megatron-Core (SequentialMLP) or DeepSpeed (transformers 4.x's own MoE
    blocks, layout/hf_moe_loop.py: the codes counted), for routed experts."""
    if not isinstance(layout.moe_grouped_gemm, bool):
        raise ConfigError(f"layout: moe_grouped_gemm must be true or false, got {show(layout.moe_grouped_gemm)}.")
    if layout.moe_grouped_gemm:
        return
    if layout.framework not in ("megatron", "deepspeed"):
        raise ConfigError("layout: --no-moe-grouped-gemm is Megatron-Core's SequentialMLP (--framework megatron) or "
                          "transformers 4.x's loop over every expert (--framework deepspeed); the framework is "
                          f"{show(layout.framework)}.")
    if not cfg.n_experts:
        raise ConfigError("--no-moe-grouped-gemm runs a mixture of experts' experts one after another; this model has "
                          "no routed experts.")


def applies(estimate: Any) -> bool:
    """A Megatron-Core training step of routed experts run by SequentialMLP."""
    return (estimate.phase == "train" and bool(estimate.cfg.n_experts) and not estimate.layout.moe_grouped_gemm
            and estimate.layout.framework == "megatron")


def local_experts(estimate: Any) -> int:
    return estimate.cfg.n_experts // estimate.layout.ep


def loop_kernels(experts: int) -> tuple[int, int]:
    """(forward, backward) kernels of the loop around E local experts' products (coefficients of [E, 1]; E = 1
    as measured)."""
    if experts == 1:
        return tuple(facts()["one_local_expert"]["kernels"])  # type: ignore[return-value]
    counts = facts()["loop_kernels"]
    return tuple(a * experts + b for a, b in (counts["forward"], counts["backward"]))  # type: ignore[return-value]


def loop_bytes(tokens_bytes: int, experts: int) -> tuple[int, int]:
    """(forward, backward) bytes the loop moves: coefficients of [E X, X, X / E], X the permuted tokens' bytes
    (split evenly over the E experts)."""
    if experts == 1:
        forward, backward = facts()["one_local_expert"]["bytes"]
        return forward * tokens_bytes, backward * tokens_bytes
    counts = facts()["loop_bytes"]
    def side(c: list[int]) -> int:
        return c[0] * experts * tokens_bytes + c[1] * tokens_bytes + c[2] * tokens_bytes // experts
    return side(counts["forward"]), side(counts["backward"])


def extra_launches(experts: int) -> int:
    """Kernels a layer's forward and backward add: the loop's, and each expert's own beyond the grouped path's one
    of each."""
    f = facts()
    loop = sum(loop_kernels(experts))
    own = sum(f["expert_kernels"][side] * experts - f["grouped_kernels"][side] for side in ("forward", "backward"))
    return loop + own


def extra_calls(experts: int) -> tuple[int, int]:
    """(forward, backward) host calls one MoE layer adds beside the grouped path's."""
    c = facts()["calls"]
    return (c["forward_per_expert"] * experts + c["forward_once"] - c["grouped_forward"],
            c["backward_per_expert"] * experts - c["grouped_backward"])


def tokens_bytes(estimate: Any) -> int:
    """X: the bytes of the permuted tokens one MoE layer's experts take on a rank, a micro-batch's b n / cp tokens
    k times each (balanced; the dispatcher gathers the sequence-parallel shards back)."""
    workload, cfg = estimate.workload, estimate.cfg
    slots = workload.batch * workload.seq_len // estimate.layout.cp * cfg.top_k
    return DTYPE_BYTES[workload.dtype] * slots * cfg.d_model


def one_expert(gemm: Gemm) -> Gemm:
    """One expert's Gemm of a grouped one: its rows, on its own."""
    return Gemm(gemm.m, gemm.n, gemm.k, 1, gemm.weight_bytes, gemm.weight_dtype, gemm.quantizes_input,
                weight_kernel=gemm.weight_kernel)


def gemm_delta(kernels: list, rerun: list, timer: Any) -> float:
    """The seconds each grouped Gemm of the expert leaf (count c) takes more as c Gemms of one expert each,
    forward and backward, and forward again for each rerun one."""
    from ..kernel_time import kernels_seconds

    def delta(gemm: Gemm, training: bool) -> float:
        alone = kernels_seconds([one_expert(gemm)], timer, training)
        return gemm.count * alone - kernels_seconds([gemm], timer, training)
    grouped = [k for k in kernels if isinstance(k, Gemm) and k.count > 1]
    again = [k for k in rerun if isinstance(k, Gemm) and k.count > 1]
    return sum(delta(g, True) for g in grouped) + sum(delta(g, False) for g in again)


def layer_seconds(estimate: Any, hardware: Any, kernels: list, rerun: list, timer: Any) -> float:
    """What SequentialMLP adds to one MoE layer's forward and backward of a micro-batch (before the leaf's
    layout factor): the per-expert GEMMs, the loop's bytes (the forward's again where the leaf is rerun) and the
    extra launches."""
    experts = local_experts(estimate)
    forward, backward = loop_bytes(tokens_bytes(estimate), experts)
    moved = forward * (2 if rerun else 1) + backward
    return gemm_delta(kernels, rerun, timer) + eager_seconds(extra_launches(experts), moved, hardware, timer.bandwidth)
