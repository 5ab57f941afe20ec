"""One decode step of a mixture-of-experts model with a tensor-parallel layout, split by kernel
kind under the kernel model (the layout path `simulate --tp` and `plan` time): the routed experts'
GEMMs apart from the other GEMMs, each GEMM's and attention call's DRAM start apart, launches,
and the expert GEMM launches counted (validate/FINDINGS.md, "MoE decode steps at batch > 1").

    python validate/moe_decode_split.py    # a Markdown table, ms per step
"""

from __future__ import annotations

from collections import defaultdict

import sympy as sp

from costmodel import symbols as S
from costmodel.api import make_workload
from costmodel.blocks import Experts
from costmodel.checkpoint import inference_options
from costmodel.hardware import load_hardware
from costmodel.kernel_shapes import AttentionCall, Gemm
from costmodel.kernel_time import MatmulCompute, launches_of, leaf_kernels
from costmodel.layout import Layout
from costmodel.layout.kernel_step import KernelStepTime
from costmodel.layout.rank import ParallelEstimate, part_of
from costmodel.layout.split import substitution
from costmodel.layout.timing import step_time
from costmodel.presets import load_preset
from costmodel.tree import CostModel, profile_for

RUNS = (("deepseek-v3", "h200", 8, None, "naive"), ("deepseek-v3", "h200", 8, None, "absorbed"),
        ("mixtral-8x7b", "a100-80gb", 2, "bf16", "naive"), ("qwen3-30b-a3b", "h100-sxm", 1, None, "naive"))
KINDS = ("expert GEMMs", "DRAM startups", "other GEMMs", "attention", "memory-bound", "launches")


def split(model: str, hardware_name: str, tp: int, batch: int, dtype: str | None, mla: str) -> dict:
    """Milliseconds of one decode step (prompt 512, 256 generated: context 768) by kernel kind on
    one rank, the step's compute and time per token as simulate states them, and the expert GEMMs'
    launches. Shapeless products (MatmulCompute) are in compute_ms only."""
    cfg, hardware = load_preset(model), load_hardware(hardware_name)
    options = inference_options(cfg, {"weight_dtype": None, "weight_group": None, "kv_dtype": None})
    options.pop("weight_dtype_source")
    workload, _ = make_workload(cfg, 512, batch=batch, dtype=dtype or hardware.default_dtype, gen_tokens=256,
                                precision="pure", mla=mla, attention="sdpa", **options)
    layout = Layout(tp=tp)
    estimate = ParallelEstimate(cfg, workload, layout, phase="decode")
    timer = KernelStepTime(estimate, hardware).timer
    token = step_time(estimate, hardware).token()
    profile = profile_for(cfg, workload, precision="pure", device=layout.device, optimizer_impl="foreach",
                          routed_experts=True)
    tree = CostModel(cfg, profile, phase="decode")
    # the rank's values, as the layout's kernels read them (kernel_step's key: dp changes no leaf)
    subs = {getattr(S, k): sp.Integer(v) for k, v in estimate.values.items() if k != "dp"}
    out: dict = defaultdict(float)
    for i in part_of(tree):
        leaf = tree.leaves[i]
        local = substitution(leaf.block, sp_on=layout.sp, vocabulary=False, loss_parallel=False, encoder=False)
        kernels = leaf_kernels(leaf, subs, timer.fused_attention, local, timer.compiled)
        count = int(sp.sympify(leaf.count).xreplace(subs))
        for kernel in kernels:
            if isinstance(kernel, MatmulCompute):
                continue
            start = timer.dram_startup_s if isinstance(kernel, (Gemm, AttentionCall)) else 0.0
            kind = ("expert GEMMs" if isinstance(leaf.block, Experts) else "other GEMMs") \
                if isinstance(kernel, Gemm) else "attention" if isinstance(kernel, AttentionCall) else "memory-bound"
            out[kind] += 1e3 * count * (timer.seconds(kernel) - start)
            out["DRAM startups"] += 1e3 * count * start
            out["expert launches"] += count * (isinstance(leaf.block, Experts) and isinstance(kernel, Gemm))
        out["launches"] += 1e3 * count * timer.launch_seconds(launches_of(leaf, len(kernels), timer.compiled))
    out["compute_ms"] = 1e3 * token["compute_seconds"]
    out["token_ms"] = 1e3 * token["seconds_per_token"]
    return dict(out)


def main() -> None:
    print("| model | mla | b | expert GEMM launches | " + " | ".join(KINDS) + " | compute | per token |")
    print("|---" * (len(KINDS) + 6) + "|")
    for model, hardware, tp, dtype, mla in RUNS:
        for batch in (1, 8, 25, 64):
            r = split(model, hardware, tp, batch, dtype, mla)
            cells = " | ".join(f"{r.get(k, 0.0):.2f}" for k in (*KINDS, "compute_ms", "token_ms"))
            print(f"| {model} tp {tp} {hardware} | {mla if 'deepseek' in model else '-'} | {batch} | "
                  f"{int(r.get('expert launches', 0))} | {cells} |")


if __name__ == "__main__":
    main()
