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
    # without the layout's flag a llama-family model's loss is a fused kernel's traffic (facts.loss_passes:
    # gpt only; blocks/head.py fused_loss_bytes): the bf16 logits read (2), then read and their gradient written (4)
    plain = _loss_kernel(A800_ROW, False)
    assert (plain.bytes, plain.backward_bytes) == (2 * logits, 4 * logits) and plain.flops == kernel.flops


def test_the_unfused_loss_is_megatrons():
    with pytest.raises(ConfigError, match="unfused_loss is Megatron's"):
        Layout(framework="fsdp2", unfused_loss=True)
    assert Layout(framework="megatron", unfused_loss=True).unfused_loss


def _norm_kernel(run_id: str, fp32_input: bool):
    from dataclasses import replace

    from costmodel.kernel_time import Pointwise
    from costmodel.layout.kernel_step import rank_kernels
    from costmodel.layout.rank import ParallelEstimate

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    estimate, _, _ = train_setup(run, data["sources"][run_id.split()[0]])
    estimate = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, fp32_norm_input=fp32_input))
    layer = [kernels for key, _, _, kernels in rank_kernels(estimate, True, False) if key.startswith("layer")]
    return next(k for kernels in layer for k in kernels if isinstance(k, Pointwise))  # the attention norm


def test_internlm_norms_read_an_fp32_copy_and_rerun_in_backward():
    # InternLM's 8-GPU TP 1 row: 2 x 2,048 tokens x 4,096 a micro-batch. Forward: the cast (2 + 4)
    # and the norm on the fp32 copy (4 + 2): 12 bytes a value; backward: the checkpointed forward
    # again (12), the norm's (2 + 4 + 4) and the cast's (4 + 2): 28; the weight's 4,096 bf16 values
    # once forward and twice backward.
    values, weight = 2 * 2048 * 4096, 2 * 4096
    kernel = _norm_kernel("internlm-train 7b tp1 zero1-all 8xa100-80gb", True)
    assert (kernel.bytes, kernel.backward_bytes) == (12 * values + weight, 28 * values + 2 * weight)
    plain = _norm_kernel("internlm-train 7b tp1 zero1-all 8xa100-80gb", False)
    assert (plain.bytes, plain.backward_bytes) == (4 * values + weight, None)  # read and write in bf16; backward 2x


def test_with_the_whole_layer_recomputed_the_norm_is_not_rerun_twice():
    # the FLOPS table's row with activation checkpointing: dropout_selective_checkpoint is off
    # (checkpoint True), the full recomputation reruns the norm's forward (Leaf.rerun), not its backward bytes
    values, weight = 8 * 2048 * 4096, 2 * 4096
    kernel = _norm_kernel("internlm-train 7b tp1 packed ckpt mbs8 8xa100-80gb", True)
    assert (kernel.bytes, kernel.backward_bytes) == (12 * values + weight, 16 * values + 2 * weight)


def test_the_cli_takes_both_flags_and_refuses_the_loss_off_megatron():
    from click.testing import CliRunner

    import cli

    base = ["simulate", "--model", "llama3-8b", "--hardware", "a100-80gb", "--train", "--seq-len", "8192", "--batch",
            "1", "--framework", "megatron", "--pp", "2", "--dp", "4", "--global-batch", "512", "--json"]
    runner = CliRunner()
    plain, unfused = (runner.invoke(cli.cli, base + extra) for extra in ([], ["--unfused-loss"]))
    assert plain.exit_code == 0 and unfused.exit_code == 0
    import json

    seconds = [json.loads(r.output)["step"]["seconds"] for r in (plain, unfused)]
    assert seconds[1] > seconds[0]  # the fp32 loss's passes on the last stage, 128 micro-batches
    refused = runner.invoke(cli.cli, ["simulate", "--model", "llama3-8b", "--train", "--framework", "fsdp2", "--dp", "8",
                                   "--unfused-loss"])
    assert refused.exit_code == 2 and "unfused_loss is Megatron's" in refused.output
