"""Two frontier runs beside the layout model (issue 22): DeepSeek-V3 (EP64, PP16, FP8, DualPipe on
2,048 H800s) and Llama 3 405B's 131k-context row (CP16). The published figures and the layouts as
published are data here, each with its source; whatever a run did that the model cannot express
is said in `assumed`. Each runs the recomputation its report states (DeepSeek-V3's "deepseek") or,
where none is stated, full recomputation (Llama 3); its memory is reported with whether it fits. Each row is timed under both time models: "ours" and "ratio" the roofline's,
"kernels" and "kernels_ratio" the kernel-level model's (the default; costmodel/layout/kernel_step.py).
`python cli.py published` prints them; docs/layouts.md explains the errors.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.schedule import empty_edge_chunks
from costmodel.layout.timing import step_time
from costmodel.presets import load_preset

DEEPSEEK_V3 = {
    "model": "deepseek-v3", "hardware": "h800", "gpus": 2048, "seq_len": 4096, "global_batch": 15360,
    "recompute": "deepseek", "mtp_layers": 1,
    "layout": dict(tp=1, pp=16, dp=128, ep=64, zero=1, framework="megatron", schedule="dualpipev",
                   fp8="blockwise", microbatches=120),
    "published": {"gpu_hours_per_trillion_tokens": 180_000},
    "source": "DeepSeek-V3 technical report (arXiv 2412.19437): section 3.2 (16-way pipeline with "
              "DualPipe, 64-way expert parallelism over 8 nodes, ZeRO-1 data parallelism, no tensor "
              "parallelism), 3.2.3 (every RMSNorm and MLA's up-projections recomputed in backward: "
              "--recompute deepseek; the EMA in CPU memory; the MTP module's embedding and head shared "
              "with the main model's), 3.3 (FP8 training, 1x128 / 128x128 blocks; 3.3.3: BF16 AdamW "
              "moments, activations cached in FP8, the input of the linear after attention in E5M6, the "
              "MoE SwiGLU's input in FP8 and its output recomputed: --fp8 blockwise), 4.2 (sequence 4096, "
              "batch ramped to 15360; MTP depth D = 1: one prediction module); section 1: 180K H800 GPU "
              "hours per trillion tokens",
    "assumed": "micro-batch 1 (120 a step; not published); DualPipeV (torch's, one copy of the weights) for "
               "DualPipe; the 61 layers split 2 a stage from the first (the last three stages 1), the MTP "
               "module with the head on the last stage, which DualPipeV puts on the first rank (the report "
               "does not say how its stages were balanced); the batch at its final 15360, not its ramp; MLA "
               "projections at the bf16 peak; the "
               "experts' down-projection output, the router's input and the norms' inputs kept in bf16 (the "
               "report does not say how it keeps them): so the model needs more than the H800's 80 GiB (the "
               "row's memory)",
}

LLAMA3_405B_CP16 = {
    "model": "llama3.1-405b", "hardware": "h100-sxm", "gpus": 16384, "seq_len": 131072, "global_batch": 128,
    "recompute": "full",
    "layout": dict(tp=8, cp=16, pp=16, dp=8, zero=1, framework="megatron", schedule="interleaved",
                   virtual_stages=8, microbatches=16, stage_layers=empty_edge_chunks(126, 16 * 8)),
    "published": {"tflops_per_gpu": 380, "mfu": 0.38},
    "source": "The Llama 3 Herd of Models (arXiv 2407.21783), Table 4, third row: 16,384 GPUs, TP 8, CP 16, "
              "PP 16, DP 8, sequence 131,072, batch 16 a data-parallel group, 380 TFLOP/s a GPU, 38% BF16 "
              "MFU; section 3.3.2: interleaved schedule, one layer fewer on the first and last stages, "
              "whose first and last model chunks hold only the embedding and only the head",
    "assumed": "eight virtual stages a rank of one layer each (V is not printed; section 3.3.2's chunks "
               "imply it: costmodel/published_runs.json, llama3's pipeline_source); full recomputation "
               "(without it the model needs 171 GiB a GPU); Megatron's conventions and profile; the KV "
               "all-gather and the pipeline sends exposed (the paper's sends are asynchronous)",
}


def _run(row: dict[str, Any], time_model: str = "roofline") -> dict[str, Any]:
    cfg = load_preset(row["model"])
    if row.get("mtp_layers"):  # the prediction modules the run trained with (ModelConfig.mtp_layers)
        cfg = dataclasses.replace(cfg, mtp_layers=row["mtp_layers"])
    layout = Layout(**row["layout"])
    layout.check(cfg, row["gpus"])
    workload = Workload(seq_len=row["seq_len"], batch=row["global_batch"] // (layout.dp * layout.microbatches),
                        dtype="bf16", impl="megatron", attention="flash", recompute=row["recompute"])
    estimate = ParallelEstimate(cfg, workload, layout)
    hardware = load_hardware(row["hardware"])
    step = step_time(estimate, hardware, time_model=time_model).step()
    return {"step": step, "per_rank": estimate.per_rank, "capacity": hardware.training_memory_bytes}


def _memory(run: dict[str, Any]) -> dict[str, Any]:
    """The most loaded rank's memory, whether it fits the GPU (less the hardware file's reserve)
    and by how much it is over."""
    total = run["per_rank"]["total"]
    return {"memory_gib": total / 2**30, "fits": total <= run["capacity"],
            "over_gib": max(0, total - run["capacity"]) / 2**30}


def frontier() -> list[dict[str, Any]]:
    """The two runs: what was published, what the model says, the ratio and what was assumed."""
    rows = []
    deepseek = _run(DEEPSEEK_V3)
    tokens = DEEPSEEK_V3["global_batch"] * DEEPSEEK_V3["seq_len"]
    def hours(run: dict[str, Any]) -> float:
        return DEEPSEEK_V3["gpus"] * run["step"]["seconds"] / 3600 * 1e12 / tokens
    kernels = hours(_run(DEEPSEEK_V3, time_model="kernels"))
    published = DEEPSEEK_V3["published"]["gpu_hours_per_trillion_tokens"]
    rows.append({"run": "DeepSeek-V3 671B", "layout": "EP64 PP16 DP128, FP8 blockwise, DualPipeV",
                 "gpus": f"{DEEPSEEK_V3['gpus']:,} x h800", "quantity": "H800 GPU-hours per trillion tokens",
                 "published": published, "ours": hours(deepseek), "ratio": hours(deepseek) / published,
                 "kernels": kernels, "kernels_ratio": kernels / published,
                 **_memory(deepseek), "source": DEEPSEEK_V3["source"],
                 "assumed": DEEPSEEK_V3["assumed"]})
    llama = _run(LLAMA3_405B_CP16)
    published = LLAMA3_405B_CP16["published"]["tflops_per_gpu"]
    ours = llama["step"]["tflops_per_gpu"]
    kernels = _run(LLAMA3_405B_CP16, time_model="kernels")["step"]["tflops_per_gpu"]
    rows.append({"run": "Llama 3 405B, 131k", "layout": "TP8 CP16 PP16 DP8, interleaved",
                 "gpus": f"{LLAMA3_405B_CP16['gpus']:,} x h100-sxm", "quantity": "TFLOP/s per GPU",
                 "published": published, "ours": ours, "ratio": ours / published,
                 "kernels": kernels, "kernels_ratio": kernels / published,
                 **_memory(llama), "source": LLAMA3_405B_CP16["source"],
                 "assumed": LLAMA3_405B_CP16["assumed"]})
    return rows
