"""Megatron-Core's MoE router without --moe-router-fusion (Layout.moe_router_fusion False): the eager
torch ops of its top-k, its aux-loss scores and its aux loss in place of Transformer Engine's three fused
kernels, a training step's kernel-level term (KernelStepTime.stage) and host calls (layout/host_syncs.py).

The counts are kernel_facts.json "megatron_router_unfused" (measured from Megatron-Core's code:
validate/router_fusion_ops.py), for the top-k alone or with an aux loss (Layout.moe_router_load_balancing_type,
Megatron-Core's --moe-router-load-balancing-type: none, or aux_loss / seq_aux_loss / global_aux_loss). Per
MoE layer and micro-batch of a rank, beside what the tree's router leaf prices (the fused kernels' bytes):
    GPU  (K_f + K_b) x launch + (B_f + B_b) / bandwidth
    host +C_f calls forward, -C_b Python backward Functions
K: the unfused kernels less the fused ones; B: the unfused kernels' bytes at the router's tokens (exact
coefficients in T, E, k, G, g); launch and bandwidth: layout/unfused.py's, the term all three unfused MoE
paths share; C_f: the unfused forward ops
(each a call issued from Python) less the fused calls; C_b: the fused Functions' Python backward.
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, show
from ..kernel_rates import kernel_facts
from ..spec import MOE_LOAD_BALANCING
from .unfused import eager_seconds

#: Megatron-Core's --moe-router-load-balancing-type values this count knows (sinkhorn is not counted).
LOAD_BALANCING = MOE_LOAD_BALANCING


def facts() -> dict[str, Any]:
    return kernel_facts()["megatron_router_unfused"]


def check(layout: Any) -> None:
    """Layout.__post_init__'s check: a bool, and off only on Megatron-Core (the flag is its own)."""
    if not isinstance(layout.moe_router_fusion, bool):
        raise ConfigError(f"layout: moe_router_fusion must be true or false, got {show(layout.moe_router_fusion)}.")
    if layout.moe_router_load_balancing_type not in LOAD_BALANCING:
        raise ConfigError(f"layout: moe_router_load_balancing_type must be {', '.join(LOAD_BALANCING)}, "
                          f"got {show(layout.moe_router_load_balancing_type)}.")
    if not layout.moe_router_fusion and layout.framework != "megatron":
        raise ConfigError("layout: --no-moe-router-fusion is Megatron-Core's router without its fused kernels "
                          f"(--framework megatron); here {layout.framework}.")


def check_model(cfg: Any) -> None:
    """Layout.check's: the router off its fusion needs routed experts of a counted router (variant)."""
    if not cfg.n_experts:
        raise ConfigError("--no-moe-router-fusion is the router of a mixture of experts; this model has no routed experts.")
    variant(cfg)


def variant(cfg: Any) -> dict[str, Any]:
    """The counted unfused router of this model (kernel_facts' variants), or one error line."""
    if cfg.router == "sigmoid" and cfg.expert_groups > 1 and cfg.top_k >= 2:
        return facts()["variants"]["sigmoid_grouped"]
    if cfg.router == "sigmoid" and cfg.expert_groups == 1 and cfg.top_k >= 2:
        return facts()["variants"]["sigmoid"]
    if cfg.router in ("softmax", "topk_softmax") and cfg.expert_groups == 1 and cfg.top_k >= 2:
        return facts()["variants"]["softmax"]
    raise ConfigError(f"--no-moe-router-fusion: the unfused router is counted for sigmoid routers (grouped or not) "
                      f"and softmax routers with top k >= 2 (kernel_facts.json megatron_router_unfused); "
                      f"not for router {show(cfg.router)} with {cfg.expert_groups} groups and top {cfg.top_k}.")


def part(layout: Any) -> str:
    """The counted part: the top-k alone ('router', no aux loss) or with the aux loss's scores and loss."""
    return "router" if layout.moe_router_load_balancing_type == "none" else "with_aux_loss"


def counts(estimate: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """(the unfused kernels and bytes, the fused path's kernels and calls) of this step's router."""
    name = part(estimate.layout)
    return variant(estimate.cfg)[name], facts()["fused"][name]


def applies(estimate: Any) -> bool:
    """A Megatron-Core training step of routed experts with the router's fusion off."""
    return (estimate.phase == "train" and bool(estimate.cfg.n_experts)
            and not estimate.layout.moe_router_fusion and estimate.layout.framework == "megatron")


def router_tokens(estimate: Any) -> int:
    """The tokens one MoE layer's router scores a micro-batch on a rank: the micro-batch's, split by
    context parallelism and, under sequence parallelism, by the tensor-parallel ranks."""
    layout, workload = estimate.layout, estimate.workload
    return workload.batch * workload.seq_len // (layout.cp * (layout.tp if layout.sp else 1))


def unfused_bytes(coefficients: list[int], cfg: Any, tokens: int) -> int:
    """The bytes of the unfused kernels: coefficients of [T E, T k, T G, T g, T G k / g, T, E, 1]."""
    experts, k, groups, per_token = cfg.n_experts, cfg.top_k, cfg.expert_groups, cfg.expert_groups_per_token
    terms = (tokens * experts, tokens * k, tokens * groups, tokens * per_token,
             tokens * groups * (k // per_token), tokens, experts, 1)
    return sum(c * t for c, t in zip(coefficients, terms))


def extra_calls(estimate: Any) -> tuple[int, int]:
    """(forward, backward) host calls one MoE layer adds: the unfused forward ops less the fused calls;
    the fused Functions' Python backward gone (torch's engine runs the unfused one)."""
    unfused, fused = counts(estimate)
    return unfused["forward_kernels"] - fused["forward_calls"], -fused["backward_calls"]


def layer_seconds(estimate: Any, hardware: Any, bandwidth: float) -> float:
    """The GPU seconds the unfused router adds to one MoE layer's forward and backward of a micro-batch."""
    unfused, fused = counts(estimate)
    kernels = sum(unfused[f"{side}_kernels"] - fused[f"{side}_kernels"] for side in ("forward", "backward"))
    tokens = router_tokens(estimate)
    moved = sum(unfused_bytes(unfused[f"{side}_bytes"], estimate.cfg, tokens) for side in ("forward", "backward"))
    return eager_seconds(kernels, moved, hardware, bandwidth)


def stage_seconds(estimate: Any, hardware: Any, moe_layers: int, bandwidth: float) -> float:
    """What the unfused router adds to one micro-batch of a pipeline rank running `moe_layers` MoE
    layers a micro-batch (host_syncs.moe_layers); 0 where fused."""
    return moe_layers * layer_seconds(estimate, hardware, bandwidth) if applies(estimate) else 0.0
