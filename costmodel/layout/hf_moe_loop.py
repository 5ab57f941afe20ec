"""transformers' MoE block in a training step (impl hf with routed experts): Qwen2MoeSparseMoeBlock /
Qwen3MoeSparseMoeBlock.forward (transformers 4.51.3 models/qwen2_moe/modeling_qwen2_moe.py lines 619-631; the same
loop in Qwen3-MoE, in 4.52; 4.53 loops over the hit experts, every expert at a training step's tokens) loops in
Python over every routed expert of the layer: torch.where(expert_mask[i]) (aten nonzero: the host reads its output's
size, a device-to-host sync), the expert's own gate, up and down products at its own tokens, index_add_. The tree's
expert leaf runs one grouped GEMM a product over them (expert_kernels.py); KernelStepTime adds this on that leaf.

The counts are kernel_facts.json "hf_moe_training_loop" (validate/hf_moe_train_ops.py; tests/test_hf_moe_train_loop.py
re-measures). Per MoE layer and micro-batch, E the layer's experts (no expert parallelism under DeepSpeed):
    GEMMs   each grouped Gemm as E Gemms of its own rows, forward, backward and the recomputed forward
            (sequential_mlp.gemm_delta, Megatron's SequentialMLP rule)
    launch  the loop's other kernels, E x (forward_kernels - forward_gemms) a forward pass and
            E x (backward_kernels - backward_gemms) the backward, at layout/unfused.py's launch time
    host    each forward pass (and its recomputation) is E sync windows; a window costs the longer of its host's
            forward_ops x eager_op_s (the hardware's per-op host time) and its GPU's expert forward (the expert's
            Gemms and launches): adds E x max(0, host - GPU) a pass. The backward syncs nowhere; its ops are issued
            by autograd's C++ engine, whose per-op host time no figure at hand states: not charged (a lower bound).
Not modelled: the loop's token gathers' bytes (index, index_add_, index_put in the backward), the tree's fused gate
and up product standing for HF's two (gate_proj, up_proj), ZeRO-3's per-expert parameter gathers (DeepSpeed's
per-module fetch: 3 E a layer a pass, each its own allgather and Python hooks; no sourced per-module time).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, show
from ..kernel_rates import kernel_facts
from ..kernel_shapes import Gemm
from .sequential_mlp import gemm_delta, one_expert
from .unfused import eager_seconds, launch_seconds


def facts() -> dict[str, Any]:
    return kernel_facts()["hf_moe_training_loop"]


def applies(estimate: Any) -> bool:
    """A training step of transformers' own model code (impl hf) with routed experts under DeepSpeed, which wraps the
    model's classes as they are (Megatron-Core builds its own MoE layers, and the FSDP2 stacks modelled here,
    torchtitan and NeMo AutoModel, their own grouped experts, whatever impl says), where the run states the loop:
    Layout.moe_grouped_gemm False (--no-moe-grouped-gemm), transformers 4.x's blocks. The default keeps the grouped
    GEMMs, as transformers 5 runs them (grouped_mm; the release the project's other transformers counts are of)."""
    return (estimate.phase == "train" and bool(estimate.cfg.n_experts) and estimate.workload.impl == "hf"
            and estimate.layout.framework == "deepspeed" and estimate.layout.moe_grouped_gemm is False)


def check(workload: Any, layout: Any) -> None:
    """One line where a DeepSpeed training step states the loop (--no-moe-grouped-gemm) for another code than
    transformers' own (impl hf): the flag would otherwise change nothing; or beside expert parallelism, which
    transformers' block does not run (DeepSpeed-MoE's own layers would). ParallelEstimate's, for a training step
    under either time model (the roofline prices the tree's grouped kernels, but the layout is still refused)."""
    if layout.framework != "deepspeed" or layout.moe_grouped_gemm is not False:
        return
    if workload.impl != "hf":
        raise ConfigError("layout: --no-moe-grouped-gemm under --framework deepspeed is transformers 4.x's loop over "
                          f"every expert, the code of --impl hf; the impl is {show(workload.impl)}.")
    if layout.ep > 1:  # the block holds and loops over all E experts on every rank (layer_seconds' E)
        raise ConfigError("layout: --no-moe-grouped-gemm under --framework deepspeed is transformers 4.x's loop over "
                          f"every expert, each rank holding all of them: no expert parallelism (ep {layout.ep}).")


def forward_passes(rerun: list) -> int:
    """The forward passes of the loop a micro-batch runs: the forward, and again where the leaf is recomputed."""
    return 2 if rerun else 1


def extra_launches(experts: int, passes: int) -> int:
    """The loop's non-GEMM kernels of a layer's forward passes and backward (the GEMMs are gemm_delta's)."""
    f = facts()
    forward = f["forward_kernels"] - f["forward_gemms"]
    backward = f["backward_kernels"] - f["backward_gemms"]
    return experts * (forward * passes + backward)


def window_gpu_seconds(kernels: list, hardware: Any, timer: Any) -> float:
    """One expert's forward on the GPU: its share of each grouped Gemm (one expert's rows) and its other kernels."""
    from ..kernel_time import kernels_seconds

    ones = [one_expert(k) for k in kernels if isinstance(k, Gemm) and k.count > 1]
    f = facts()
    return kernels_seconds(ones, timer, False) + (f["forward_kernels"] - f["forward_gemms"]) * launch_seconds(hardware)


def host_seconds(experts: int, passes: int, window_gpu: float, op_s: float) -> float:
    """What the sync windows add over their GPU work: E x max(0, host - GPU) a forward pass."""
    return passes * experts * max(0.0, facts()["forward_ops"] * op_s - window_gpu)


def layer_seconds(estimate: Any, hardware: Any, kernels: list, rerun: list, timer: Any) -> float:
    """What the loop adds to one MoE layer's forward passes and backward of a micro-batch (before the leaf's layout
    factor)."""
    experts, passes = estimate.cfg.n_experts, forward_passes(rerun)
    added = gemm_delta(kernels, rerun, timer) + eager_seconds(extra_launches(experts, passes), 0, hardware,
                                                                timer.bandwidth)
    op_s = hardware.eager_op_s
    if op_s is None:  # a CPU: no host term (the launch per leaf stands)
        return added
    return added + host_seconds(experts, passes, window_gpu_seconds(kernels, hardware, timer), op_s)
