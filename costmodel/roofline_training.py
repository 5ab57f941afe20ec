"""One GPU's training step on a hardware preset under the roofline: training_step times it (forward,
backward, reruns under recomputation, then the optimizer leaf's pass, block by block at the passes'
roofs of costmodel/roofline_model.py), mfu is its model FLOPs utilisation, and simulate_training is
`simulate --train` without a layout: the step, tokens/s, MFU and the cost of a run. A generation's
timelines are costmodel/roofline.py's; a layout's steps, costmodel/layout/timing.py's.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .config import ModelConfig, Workload
from .embedding_grad import zeroed_table_bytes
from .evaluate import values
from .hardware import Efficiency, Hardware
from .memory import memory
from .model_flops import model_flops
from .roofline_model import Timing, block_runs, timing_dict
from .tree import CostModel, profile_for


def training_step(cfg: ModelConfig, workload: Workload, hardware: Hardware,
                  efficiency: Efficiency | None = None, flops_convention: str = "dense") -> dict[str, Any]:
    """Roofline time of one training step: forward + backward (+ recomputation) + optimizer.

    Block by block, as in inference, each block's two kernels at their own roofs, with the
    backward's FLOPs and traffic the tree's (blocks.Cost: backward matmul FLOPs; backward traffic
    and other ops twice the forward's, a stated convention). A block that recomputation reruns
    (every block under full recomputation, the attention core under selective, the norms under
    "deepseek") runs its forward once more; of latent attention's projections "deepseek" reruns
    the up-projections (Leaf.rerun). Then the optimizer leaf's pass: a memory-bound pass of its
    own, as a fused optimizer makes it (PyTorch's default, unfused AdamW makes about 20 passes over parameter-
    sized tensors; validate/FINDINGS.md section 9). Overhead: the per-block overhead for 3x the
    forward's blocks (backward runs about twice the forward's ops).
    """
    eff = efficiency or Efficiency(**hardware.efficiency)
    peak = hardware.peak(workload.dtype) * eff.compute
    vector = hardware.vector_flops_per_s * eff.compute
    bandwidth = hardware.bandwidth_bytes_per_s * eff.memory
    model = CostModel(cfg, profile_for(cfg, workload))
    subs = {k: sp.Integer(v) for k, v in values(cfg, workload).items()}
    n = lambda expr: float(expr.xreplace(subs))  # noqa: E731
    timing = Timing(0.0, 0.0, 0.0, 0.0, 0.0)
    for leaf in model.leaves:
        q = lambda quantity: n(leaf.total(quantity))  # noqa: E731
        # what recomputation reruns of the forward (Leaf.rerun: all of it, a part, nothing)
        again = lambda quantity: n(leaf.count * getattr(leaf.rerun, quantity)) if leaf.rerun is not None else 0.0  # noqa: E731
        matmul = (q("flops_matmul") + again("flops_matmul") + q("flops_matmul_backward"),
                  q("bytes_matmul") + again("bytes_matmul") + q("bytes_matmul_backward"))
        # an embedding's backward zeroes its table's gradient first (costmodel/embedding_grad.py)
        zeroed = zeroed_table_bytes(q("params"), workload.bytes_per_element) if leaf.part == "embedding" else 0.0
        others = (q("flops_other") + again("flops_other") + q("flops_other_backward"),
                  q("bytes_other") + again("bytes_other") + q("bytes_other_backward") + q("bytes_optimizer") + zeroed)
        timing = timing + Timing.of(matmul, others, peak, vector, bandwidth)
    overhead = 3 * block_runs(model) * hardware.overhead_s_per_block
    timing = timing + Timing(0.0, 0.0, 0.0, 0.0, 0.0, overhead)
    mem = memory(cfg, workload, model)
    tokens = workload.batch * workload.dimensions(cfg)["n"]
    memory_numbers = {k: int(getattr(mem, k).xreplace(subs)) for k in
                      ("weights", "gradients", "optimizer", "activations")}
    memory_numbers["total"] = int(mem.training_total.xreplace(subs))
    return {
        "timing": timing,
        "model_flops": n(model_flops(model.leaves, flops_convention)),
        "flops_convention": flops_convention,
        "tokens": tokens,
        "memory": memory_numbers,
        "fits": memory_numbers["total"] <= hardware.training_memory_bytes,
        "peak_flops_per_s": hardware.datasheet_peak(workload.dtype),  # MFU's denominator
    }


def mfu(model_flops: float, step_seconds: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilisation: the step's model FLOPs per second over the datasheet's peak (a clock
    or power limit slows the step; it does not shrink the denominator)."""
    return model_flops / (step_seconds * peak_flops_per_s)


def simulate_training(cfg: ModelConfig, workload: Workload, hardware: Hardware, *,
                      tokens: float | None = None, step_seconds: float | None = None,
                      efficiency: Efficiency | None = None, flops_convention: str = "dense",
                      price: float | None = None) -> dict[str, Any]:
    """Step time, tokens/s, MFU (predicted, and for a measured step time; model FLOPs of the
    named convention, costmodel/model_flops.py), time to train on `tokens` tokens with its
    GPU-hours, FLOPs and (at `price` per GPU-hour, or the hardware's) dollars, and the memory
    that must fit."""
    from .cost import price_of, training_cost

    step = training_step(cfg, workload, hardware, efficiency, flops_convention)
    timing: Timing = step["timing"]
    seconds = timing.seconds
    tokens_per_second = step["tokens"] / seconds
    result = {
        "inputs": {"model": cfg.name, "hardware": hardware.name, "dtype": workload.dtype,
                   "seq_len": workload.seq_len, "tgt_len": workload.tgt_len, "batch": workload.batch,
                   "recompute": workload.recompute, "attention": workload.attention,
                   "impl": workload.impl, "tokens": tokens, "mtp": cfg.mtp_layers, "optimizer": workload.optimizer,
                   "time_model": "roofline"},  # the only model of one GPU's training without a layout
        "step": timing_dict(timing, seconds),
        "tokens_per_second": tokens_per_second,
        "mfu_predicted": mfu(step["model_flops"], seconds, step["peak_flops_per_s"]),
        "flops_convention": flops_convention,
        "memory": step["memory"],
        "fits": step["fits"],
        "memory_capacity": hardware.training_memory_bytes,
    }
    if step_seconds is not None:
        from .cost import measured_mfu

        result["mfu_measured"] = measured_mfu(step["model_flops"], step_seconds, step["peak_flops_per_s"])
    if tokens is not None:
        result["cost"] = training_cost(tokens, tokens_per_second, 1, step["model_flops"], step["tokens"],
                                       *price_of(price, hardware))
        result["train_seconds"] = result["cost"]["train_seconds"]
    from .cost import with_measured_step

    with_measured_step(result, step_seconds, step["tokens"])
    return result
