"""Transformer Engine's GroupedLinear quantizing per expert: the kernels a Megatron-Core MoE layer's FP8 casts
launch beyond one a cast, a training step's kernel-level term (KernelStepTime.stage, beside the unfused router's
and permutations').

TEGroupedMLP's fc1 and fc2 are GroupedLinear modules; under an FP8 recipe each splits its input (forward) and
its output gradient (backward) by expert and quantizes every split with its own quantizer (tex.split_quantize),
one fused kernel for all only under delayed scaling or NVFP4. The tree's expert leaf times those casts as one
memory-bound kernel of their bytes (layout/kernel_step.py cast_kernel); the split adds, per MoE layer and
micro-batch of a rank with E local experts,

    kernels = calls x (E - 1) x q,   seconds = kernels x launch

calls the GroupedLinear quantize calls (kernel_facts.json "te_grouped_linear_quantize": 2 forward, 2 backward,
the forward's again where the layer is recomputed, fc2's saved input again where the activation is), q the kernels of one quantize (3 under current scaling, 1
under MXFP8), launch layout/unfused.py's eager kernel. Not where Megatron-Core runs Transformer Engine's op fuser
(a row's moe_op_fuser: its fused grouped MLP quantizes the experts together), nor under SequentialMLP (its own
per-expert Linear modules: layout/sequential_mlp.py), nor one local expert (one split, one quantize).
"""

from __future__ import annotations

from typing import Any

from ..kernel_rates import kernel_facts
from ..spec import RECOMPUTED_PARTS
from .gpt_oss_eager import forward_runs
from .unfused import launch_seconds


def facts() -> dict[str, Any]:
    return kernel_facts()["te_grouped_linear_quantize"]


def local_experts(estimate: Any) -> int:
    return estimate.cfg.n_experts // estimate.layout.ep


def applies(estimate: Any, op_fuser: bool) -> bool:
    """A Megatron-Core training step whose routed experts run GroupedLinear under a recipe that quantizes
    each expert's split on its own, more than one expert a rank, without the op fuser."""
    layout = estimate.layout
    return (estimate.phase == "train" and bool(estimate.cfg.n_experts) and layout.framework == "megatron"
            and layout.moe_grouped_gemm is not False and not op_fuser
            and layout.fp8 in facts()["quantize_kernels"] and local_experts(estimate) > 1)


def layer_kernels(estimate: Any) -> float:
    """The kernels one MoE layer's micro-batch adds on a rank: (E - 1) x q for each quantize call."""
    f = facts()
    calls = f["calls_per_layer"]["forward"] * forward_runs(estimate, {"moe_layer"}) + f["calls_per_layer"]["backward"]
    if "moe_act" in RECOMPUTED_PARTS.get(estimate.workload.recompute, frozenset()):  # set_save_original_input(fc2)
        calls += f["saved_input_backward"]
    return calls * (local_experts(estimate) - 1) * f["quantize_kernels"][estimate.layout.fp8]


def stage_seconds(estimate: Any, hardware: Any, moe_layers: int, op_fuser: bool) -> float:
    """What the per-expert quantize kernels add to one micro-batch of a rank running `moe_layers` MoE layers."""
    if not applies(estimate, op_fuser):
        return 0.0
    return moe_layers * layer_kernels(estimate) * launch_seconds(hardware)
