"""Session 29's systematic bias on unseen training rows (validate/FINDINGS.md "(wt29_bias, session 29)"):
the mechanisms a source gives a number for. Megatron-Core 0.6's unfused vocabulary-parallel loss on a
llama-shaped GPTModel (Layout.unfused_loss): FlagPerf's Llama 3 scripts run it (core_v0.6.0
language_module.py: vocab_parallel_cross_entropy(logits.float(), labels))."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.layout.spec import Layout
from reports.published_runs import other_runs_data, train_setup

A800_ROW = "flagperf-llama3-a800 llama3-8b pp2dp4tp1 8xa800"


def _loss_kernel(run_id: str, unfused: bool):
    from dataclasses import replace

    from costmodel.kernel_time import Pointwise
    from costmodel.layout.kernel_step import rank_kernels
    from costmodel.layout.rank import ParallelEstimate

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    estimate, _, _ = train_setup(run, data["sources"][run_id.split()[0]])
    estimate = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, unfused_loss=unfused))
    head = [k for key, _, _, kernels in rank_kernels(estimate, True, False) if key == "head" for k in kernels]
    return [k for k in head if isinstance(k, Pointwise)][-1]


def test_flagperf_llama3_runs_megatron_cores_unfused_loss_on_its_fp32_logits():
    # 8,192 tokens x the 128,256-word vocabulary at TP 1: the cast to fp32 (read 2, write 4), max (4),
    # the subtraction (4 + 4), exp (4 + 4), sum (4), div_ (4 + 4): 38 bytes a logit forward; backward
    # mul_ (4 + 4) and the cast's backward (4 + 2): 14 bytes.
    logits = 8192 * 128256
    kernel = _loss_kernel(A800_ROW, True)
    assert (kernel.bytes, kernel.backward_bytes) == (38 * logits, 14 * logits)
    # without the layout's flag a llama-family model's loss is its FLOPs only (facts.loss_passes: gpt only)
    plain = _loss_kernel(A800_ROW, False)
    assert plain.bytes == 0 and plain.flops == kernel.flops


def test_the_unfused_loss_is_megatrons():
    with pytest.raises(ConfigError, match="unfused_loss is Megatron's"):
        Layout(framework="fsdp2", unfused_loss=True)
    assert Layout(framework="megatron", unfused_loss=True).unfused_loss
