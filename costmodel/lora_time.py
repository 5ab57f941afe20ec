"""The time of one LoRA / QLoRA step, from the kernels it runs, timed by the kernel-level model
(costmodel/kernel_time.py) that times full training: no rate of its own, nothing fitted.

What runs, from peft's LoRA Linear and bitsandbytes' Linear4bit:
  frozen base   every leaf of the full-training tree runs its forward as in full training; a linear
                layer's backward runs its input-gradient GEMM only (dX = dY W): a frozen weight
                (requires_grad False) gets no weight-gradient GEMM. The attention core's and the
                memory-bound kernels' backward are full training's (their inputs need gradients);
                recomputation reruns the forward as in full training.
  adapters      per target of each decoder layer, h = x A^T (T x r from d_in) and y += s h B^T
                (T x d_out from r), in the adapters' dtype (peft casts x to lora_A's dtype): two
                GEMMs forward; backward dB, dh, dA and dx (four GEMMs, their weight gradients
                included), lora_linear_flops; under --recompute full (gradient checkpointing, which
                reruns each decoder layer's forward with peft's modules in it) the two forward GEMMs
                again.
  optimizer     one fused pass over the adapters only: each weight read and written, its gradient
                read, its state read and written (precision.ParamBytes.step_traffic's convention).
  nf4 (QLoRA)   bitsandbytes dequantizes each nf4 matrix to the activations' dtype before each use:
                the forward, the backward's input gradient, and each rerun under recomputation
                (dequantize_4bit reads the stored data and absmax, blocks.quantized_bytes, and writes
                e bytes a weight): a memory-bound kernel each, dequant_bytes. The LM head and the
                embedding stay unquantized.
Each leaf pays full training's launch overhead per pass; the host-bound rule of an eager step
(kernel_time.host_bound_seconds) is not applied: a LoRA step's op count is not measured.
Not counted: peft's dtype casts of x to the adapters' dtype and of their output back, and the
frozen norms' skipped weight gradients (memory-bound, small against the GEMMs). Dense decoders
only (grouped expert GEMMs are refused).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .config import DTYPE_BYTES, ConfigError, ModelConfig, Workload
from .hardware import Hardware

#: The note every timed LoRA/QLoRA step carries: what it counts.
COUNTED = ("counted: the frozen base's forward and input-gradient GEMMs (no weight-gradient GEMM for a frozen "
           "weight), the adapters' GEMMs forward and backward with their weight gradients, attention and the "
           "memory-bound kernels as full training runs them, recomputation's reruns, one fused optimizer pass over "
           "the adapters{nf4}; not counted: peft's casts to and from the adapters' dtype, the frozen norms' "
           "skipped weight gradients, the host's op time of an eager step (not measured for LoRA)")
NF4_COUNTED = ", and QLoRA's nf4 dequantization before each forward, backward and rerun use of a base matrix"


def lora_linear_flops(tokens: int, d_in: int, d_out: int, rank: int, input_grad: bool = True) -> dict[str, int]:
    """FLOPs of one LoRA Linear over `tokens` rows: the frozen base (forward; backward dX only)
    and the adapters A (r x d_in), B (d_out x r) (forward two products; backward dB, dh, dA and,
    where the input needs a gradient, dx through A; dx through the base likewise)."""
    base = 2 * tokens * d_in * d_out
    a, b = 2 * tokens * d_in * rank, 2 * tokens * rank * d_out
    forward = base + a + b
    backward = b + b + a + (a + base if input_grad else 0)  # dB, dh, dA, dx (A and base)
    return {"forward": forward, "backward": backward}


def dequant_bytes(d_in: int, d_out: int, nf4: Workload) -> int:
    """Bytes one dequantize_4bit of a d_out x d_in nf4 matrix moves: its stored bytes read (data at
    half a byte a weight, the absmax as blocks.quantized_bytes counts it) and the dequantized
    matrix written in the activations' dtype."""
    import sympy as sp

    from .blocks import quantized_bytes

    stored = quantized_bytes(((sp.Integer(d_out), sp.Integer(d_in), sp.Integer(1)),), nf4.weight_format)
    return int(sum(stored.values())) + DTYPE_BYTES[nf4.dtype] * d_in * d_out


def _weight_gemm(leaf: Any, kernel: Any) -> bool:
    """A GEMM of a weight matrix (a linear layer or the LM head), not the attention core's."""
    from .blocks import AttentionScores, WeightedSum
    from .kernel_time import Gemm

    return isinstance(kernel, Gemm) and not isinstance(leaf.block, (AttentionScores, WeightedSum))


def _adapter_gemms(cfg: ModelConfig, tune: Any, tokens: int) -> list[tuple[int, Any]]:
    """(layers, GEMM) of every adapter product, forward only (its backward: kernel_time's two)."""
    from .lora_adapters import layer_kinds, linear_shapes, targets_of
    from .kernel_time import Gemm

    out = []
    for count, moe in layer_kinds(cfg):
        shapes = linear_shapes(cfg, moe)
        for target in targets_of(cfg, tune):
            if target in shapes:
                _, d_in, d_out = shapes[target]
                out += [(count, Gemm(tokens, tune.rank, d_in)), (count, Gemm(tokens, d_out, tune.rank))]
    return out


def lora_step(cfg: ModelConfig, workload: Workload, tune: Any, hardware: Hardware) -> dict[str, Any]:
    """Seconds of one LoRA/QLoRA step on one GPU and its FLOPs and dequantized bytes, part by part
    (the module text says what runs)."""
    import sympy as sp

    from .eager_ops import eager_training_implementation, training_bytes
    from .evaluate import values
    from .finetune import optimizer_state_bytes
    from .lora_adapters import model_adapter_tensors
    from .kernel_time import (Gemm, KernelTimer, Pointwise, check_kernel_model, kernels_seconds,
                              leaf_kernels, rerun_kernels)
    from .blocks.optimizer import OptimizerStep
    from .tree import CostModel, profile_for

    check_kernel_model(hardware)
    base = dataclasses.replace(workload, weight_dtype=None) if getattr(workload, "weight_dtype", None) else workload
    model = CostModel(cfg, profile_for(cfg, base))
    subs = {k: sp.Integer(v) for k, v in values(cfg, base).items()}
    timer = KernelTimer(hardware, base.dtype, base.attention, sustained=True)
    eager = training_bytes(eager_training_implementation(cfg, base))  # the measured eager step's bytes
    adapter_timer = KernelTimer(hardware, tune.adapter_dtype, base.attention, sustained=True)
    nf4 = dataclasses.replace(base, weight_dtype="nf4", double_quant=True) if tune.method == "qlora" else None
    parts = {"base_forward": 0.0, "base_backward": 0.0, "rerun": 0.0, "adapters": 0.0, "dequant": 0.0,
             "optimizer": 0.0, "launches": 0.0}
    flops = {"base": 0, "adapters": 0}
    moved, removed = 0, 0.0
    for leaf in model.leaves:
        if isinstance(leaf.block, OptimizerStep):
            continue
        count = int(sp.sympify(leaf.count).xreplace(subs))
        kernels = leaf_kernels(leaf, subs, timer.fused_attention, eager=eager)
        if not count or not kernels:
            continue
        if any(type(k).__name__ not in ("Gemm", "Pointwise", "AttentionCall") for k in kernels):
            raise ConfigError(f"LoRA step time: {leaf.path} runs kernels other than GEMMs, attention and "
                              "memory-bound ones (grouped experts, a scan); its time is not modelled.")
        frozen = [k for k in kernels if _weight_gemm(leaf, k)]
        forward = kernels_seconds(kernels, timer)
        backward = kernels_seconds(kernels, timer, training=True) - forward
        skipped = sum(timer.gemm_seconds(Gemm(k.k, k.n, k.m, k.count)) for k in frozen)  # no dW
        backward -= skipped
        removed += count * skipped
        reruns = rerun_kernels(leaf, kernels, subs, timer.fused_attention, eager=eager)
        parts["base_forward"] += count * forward
        parts["base_backward"] += count * backward
        parts["rerun"] += count * kernels_seconds(reruns, timer)
        # a pass each of forward and backward's two, and the recomputed forward's once more (StepTime.compute)
        parts["launches"] += count * (3 + bool(reruns)) * timer.leaf_launch_seconds(leaf, len(kernels))
        flops["base"] += count * sum(k.flops * (2 + bool(reruns)) for k in frozen)
        if nf4 is not None and leaf.cost.matrices:  # the LM head (no matrices) stays unquantized
            uses = 2 + sum(1 for k in reruns if _weight_gemm(leaf, k)) // max(len(frozen), 1)
            each = sum(dequant_bytes(k.k, k.n, nf4) for k in frozen)
            moved += count * uses * each
            parts["dequant"] += count * uses * sum(timer.pointwise_seconds(Pointwise(dequant_bytes(k.k, k.n, nf4)))
                                                    for k in frozen)
    tokens = workload.batch * workload.dimensions(cfg)["n"]
    rerun = workload.recompute == "full"  # gradient checkpointing reruns each layer's forward, its adapters in it
    for layers, gemm in _adapter_gemms(cfg, tune, tokens):
        parts["adapters"] += layers * (kernels_seconds([gemm], adapter_timer, training=True)
                                       + rerun * kernels_seconds([gemm], adapter_timer))
        flops["adapters"] += layers * (3 + rerun) * gemm.flops
    shapes = model_adapter_tensors(cfg, tune)
    params = sum(r * c for r, c in shapes)
    if not tune.offload_optimizer:
        traffic = 3 * tune.adapter_bytes * params + 2 * optimizer_state_bytes(shapes, tune.optimizer, tune.adapter_bytes)
        parts["optimizer"] = timer.pointwise_seconds(Pointwise(traffic))
    return {"seconds": sum(parts.values()), "parts": parts, "tokens": tokens, "gemm_flops": flops,
            "dequant_bytes": moved, "adapter_params": params,
            "skipped_weight_gradient_seconds": removed,
            "counted": COUNTED.format(nf4=NF4_COUNTED if nf4 is not None else "")
            + ("; --offload-optimizer: the adapters' update runs on the host, not timed" if tune.offload_optimizer else "")}
