"""Megatron-Core's all-to-all dispatcher without --moe-permute-fusion (Layout.moe_permute_fusion False): its
permute, sort_chunks_by_idxs (both ways) and unpermute as eager torch ops in place of Transformer Engine's four
fused kernels, a training step's kernel-level term (KernelStepTime.stage) and host calls (layout/host_syncs.py).

The counts are kernel_facts.json "megatron_permute_unfused" (measured from Megatron-Core's code:
validate/permute_fusion_ops.py). Per MoE layer and micro-batch of a rank, beside the fused path's bytes the
tree's expert leaf prices (e d (2T + 6S) a direction):
    GPU  (K_f + K_b) x launch + (B_unfused - B_fused) / bandwidth
    host +7 calls forward, -4 Python backward Functions
T: the tokens one MoE layer routes on the rank (router_fusion.router_tokens), S = T k; launch and bandwidth are
layout/unfused.py's. Counted for the all-to-all dispatcher with more than one expert a rank (sort_chunks_by_idxs
runs), dropless.
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, show
from ..kernel_rates import kernel_facts
from ..spec import DTYPE_BYTES
from .router_fusion import router_tokens
from .unfused import eager_seconds


def facts() -> dict[str, Any]:
    return kernel_facts()["megatron_permute_unfused"]


def check(layout: Any) -> None:
    """Layout.__post_init__'s check: a bool; off only on Megatron-Core's all-to-all dispatcher, dropless."""
    if not isinstance(layout.moe_permute_fusion, bool):
        raise ConfigError(f"layout: moe_permute_fusion must be true or false, got {show(layout.moe_permute_fusion)}.")
    if not layout.moe_permute_fusion and (layout.framework != "megatron" or layout.ep_dispatcher != "alltoall"
                                          or layout.capacity_factor is not None):
        raise ConfigError("layout: --no-moe-permute-fusion is counted for Megatron-Core's dropless all-to-all "
                          "dispatcher (--framework megatron, --ep-dispatcher alltoall, no --capacity-factor).")


def check_model(cfg: Any, layout: Any) -> None:
    """Layout.check's: routed experts, more than one a rank (the chunks' sort runs)."""
    if not cfg.n_experts:
        raise ConfigError("--no-moe-permute-fusion permutes a mixture of experts' tokens; this model has no routed experts.")
    if cfg.n_experts // layout.ep < 2:
        raise ConfigError(f"--no-moe-permute-fusion is counted with more than one expert a rank (sort_chunks_by_idxs "
                          f"runs); here {cfg.n_experts} experts over --ep {layout.ep}.")


def applies(estimate: Any) -> bool:
    """A Megatron-Core training step of routed experts with the permutations' fusion off."""
    return estimate.phase == "train" and bool(estimate.cfg.n_experts) and not estimate.layout.moe_permute_fusion


def extra_calls() -> tuple[int, int]:
    """(forward, backward) host calls one MoE layer adds: the unfused forward ops less the fused calls; the
    fused Functions' Python backward gone."""
    unfused, fused = facts()["unfused"], facts()["fused"]
    return unfused["forward_kernels"] - fused["forward_calls"], -fused["backward_calls"]


def layer_bytes(coefficients: list[int], element: int, tokens: int, hidden: int, experts: int, slots: int) -> int:
    """Bytes of [e T d, e S d, T E, S]."""
    terms = (element * tokens * hidden, element * slots * hidden, tokens * experts, slots)
    return sum(c * t for c, t in zip(coefficients, terms))


def layer_seconds(estimate: Any, hardware: Any, bandwidth: float) -> float:
    """The GPU seconds the unfused permutations add to one MoE layer's forward and backward of a micro-batch."""
    f = facts()
    unfused, fused = f["unfused"], f["fused"]
    kernels = sum(unfused[f"{side}_kernels"] - fused[f"{side}_kernels"] for side in ("forward", "backward"))
    cfg, tokens = estimate.cfg, router_tokens(estimate)
    slots = tokens * cfg.top_k
    element = DTYPE_BYTES[estimate.workload.dtype]  # the activations the permutations move
    moved = sum(layer_bytes(unfused[f"{side}_bytes"], element, tokens, cfg.d_model, cfg.n_experts, slots)
                + f["expanded_index_bytes"] * slots - layer_bytes(f["fused_bytes"], element, tokens, cfg.d_model,
                                                                   cfg.n_experts, slots)
                for side in ("forward", "backward"))
    return eager_seconds(kernels, moved, hardware, bandwidth)


def stage_seconds(estimate: Any, hardware: Any, moe_layers: int, bandwidth: float) -> float:
    """What the unfused permutations add to one micro-batch of a rank running `moe_layers` MoE layers."""
    return moe_layers * layer_seconds(estimate, hardware, bandwidth) if applies(estimate) else 0.0
