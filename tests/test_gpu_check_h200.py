"""costmodel.peak against CUDA peaks measured on an H200 (benchmarks/results_gpu_check*.json).

The measurements were taken once on a lent GPU (`python benchmarks/gpu_check.py`, with
`--dtype bf16` and `--attention sdpa`; torch 2.11.0+cu130, transformers 5.24.0) and are recorded;
the analytic side is recomputed here from the configs, so a change to the tree is checked against
the GPU without one. The step's own peak is torch.cuda.max_memory_allocated less what was allocated
before the step (weights, inputs, and the cuBLAS workspaces earlier rows' matmuls left:
benchmarks/results_cuda_workspace.json), beside the analytic peak less its weights, inputs and buffers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from costmodel.blocks.base import Profile
from costmodel.peak import training_peak_bytes

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import gpu_check  # noqa: E402

RESULTS = ("results_gpu_check.json", "results_gpu_check_bf16.json", "results_gpu_check_sdpa.json")


# BERT-base at 16 x 512: the analytic step peak (less weights, inputs, buffers), the walk through backward's
BERT_WALK = {("fp32", "eager"): 10_583_027_720, ("bf16", "eager"): 5_669_001_220, ("fp32", "sdpa"): 5_151_928_328}


def rows():
    for name in RESULTS:
        for row in json.loads((BENCHMARKS / name).read_text())["rows"]:
            yield pytest.param(row, id=f"{name.removesuffix('.json')}-{row['model']}-{row['batch']}x{row['seq_len']}")


def step_peaks(row: dict) -> tuple[int, int]:
    """(measured, analytic) bytes of the step's own peak, as the module docstring says."""
    cfg, workload = gpu_check.recorded_run(row)
    analytic = training_peak_bytes(cfg, workload, "foreach", "cuda")
    own = analytic["weights"] + analytic["inputs"] + analytic["buffers"]
    assert own == row["analytic_weights_inputs_buffers"]
    return row["train_peak_measured"] - row["allocated_before_step"], analytic["total"] - own


@pytest.mark.parametrize("row", [r for r in rows() if r.values[0]["train_peak_phase"] == "forward_end"])
def test_the_start_of_backward_on_an_h200(row):
    """Where activations dominate: Llama-style (no dropout) to 1,016 bytes, the caching allocator's
    rounding; GPT-2 (dropout 0.1: aten's fused CUDA dropout keeps a bool mask) within 3%. BERT
    peaks inside backward (the walk, costmodel/peak.py): 0.45% (fp32), 0.86% (bf16), 0.88% (sdpa)
    low, where the start of backward was 1.40%, 1.69% and 2.74% low (the walk moved the analytic
    step peak by 105,934,852 B, 49,756,162 B and 105,934,852 B). Before the mask was made
    device-aware the analytic peak was 15.5% (GPT-2) and 18.5% (BERT) high."""
    measured, analytic = step_peaks(row)
    if row["model"].startswith("llama"):
        assert 0 <= measured - analytic <= 1024
    elif row["model"] == "bert-base-uncased":
        assert analytic == BERT_WALK[(row["dtype"], row["attention"])]
        assert 0 < measured - analytic < 0.01 * row["train_peak_measured"]
    else:
        assert abs(analytic - measured) / row["train_peak_measured"] < 0.03


@pytest.mark.parametrize("row", [r for r in rows() if r.values[0]["train_peak_phase"] == "optimizer_step"])
def test_the_adamw_step_on_an_h200(row):
    """Where the optimizer step peaks (short sequences): within 1% after the first row, whose step
    also allocates the cuBLAS workspaces (68,157,440 B on this GPU) and the first kernels' buffers."""
    measured, analytic = step_peaks(row)
    first = row["model"] == "gpt2" and row["seq_len"] == 128
    workspaces = json.loads((BENCHMARKS / "results_cuda_workspace.json").read_text())["total_beside_tensors"]
    assert workspaces == 2 * 32 * 2**20 + 2**20  # a 32 MiB cuBLAS workspace per thread, 1 MiB cuBLASLt
    if first:
        assert 0 < measured - analytic - workspaces < 0.03 * row["train_peak_measured"]
    elif row["model"] != "bert-base-uncased" or row["dtype"] == "fp32":
        assert abs(analytic - measured) / row["train_peak_measured"] < 0.01
    else:  # BERT in bf16 at 1 x 128: 37 MB (3.1%) short, as on the CPU at other sizes (FINDINGS)
        assert 0 < measured - analytic < 0.035 * row["train_peak_measured"]


def test_dropout_keeps_a_bool_mask_on_cuda_only():
    assert Profile(kernel_device="cuda").mask_bytes == 1
    assert Profile(kernel_device="cpu", impl="hf").mask_bytes != 1  # the noise tensor, in the input's dtype
    assert Profile(device="cuda").mask_bytes != 1  # AdamW's device alone does not change it
