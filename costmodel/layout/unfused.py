"""The one time term Megatron-Core's unfused MoE paths share (its router without --moe-router-fusion,
its permutations without --moe-permute-fusion, SequentialMLP's loop without --moe-grouped-gemm):
eager torch ops, each one kernel, priced as launches plus the bytes they move at the memory-bound rate.

    seconds = kernels x launch + bytes / bandwidth,   launch = overhead_s_per_block / launches_per_block

launches_per_block is kernel_facts.json megatron_router_unfused's reading of the hardware files'
overhead_s_per_block ("~2 kernel launches of ~5 us per block"); bandwidth is the caller's memory-bound rate
(KernelTimer.bandwidth, as every pointwise kernel's).
"""

from __future__ import annotations

from typing import Any

from ..kernel_rates import kernel_facts


def launch_seconds(hardware: Any) -> float:
    """One eager kernel's launch on this hardware."""
    return hardware.overhead_s_per_block / kernel_facts()["megatron_router_unfused"]["launches_per_block"]


def eager_seconds(kernels: int, moved: int, hardware: Any, bandwidth: float) -> float:
    """GPU seconds of `kernels` eager kernels that move `moved` bytes between them."""
    return kernels * launch_seconds(hardware) + moved / bandwidth
