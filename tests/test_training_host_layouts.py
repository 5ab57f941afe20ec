"""An eager training step's host on a layout of several GPUs (layout/kernel_step.KernelStepTime.step,
training_host_ops, stage_host_ops): each rank issues its stage's share of the counted ops
(kernel_facts.json "eager_training_ops", GPT-2 fp32 under eager attention: 188 a layer and 93 the
step's own at batch 1, 190 and 95 above), at the hardware's op time; the step takes the longer of its
kernels (less the slowest stage's per-block launches in each pass it charges) and the busiest rank's
host. One GPU: as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout.spec import Layout
from costmodel.layout.timing import simulate_training
from costmodel.presets import load_preset

H200_MEASURED = Path(__file__).resolve().parents[1] / "benchmarks" / "h200-measured.json"


def _workload(batch: int, seq_len: int = 128, dtype: str = "fp32") -> Workload:
    return Workload(seq_len=seq_len, batch=batch, dtype=dtype, impl="hf", attention="eager", precision="pure")


def _step(layout: Layout, workload: Workload, hardware=None) -> dict:
    hardware = hardware or load_hardware(str(H200_MEASURED))
    return simulate_training(load_preset("gpt2"), workload, layout, hardware, time_model="kernels")["step"]


@pytest.mark.parametrize("layout", [Layout(dp=2), Layout(tp=2, dp=1), Layout(dp=4, tp=2)])
def test_a_data_or_tensor_parallel_rank_issues_the_whole_count(layout):
    """Each data-parallel rank runs the whole step and each tensor-parallel rank every layer on its
    shards: 188 x 12 + 93 = 2,349 ops at 1 x 128, 15.37 ms at the measured H200's 6.545 us, over the
    rank's kernels (host-bound), as on one GPU."""
    hardware = load_hardware(str(H200_MEASURED))
    step = _step(layout, _workload(1))
    assert step["host"]["ops_per_step"] == 2349
    assert step["seconds"] == step["host"]["seconds_per_step"] == 2349 * hardware.module_s_per_op
    assert step["host"]["bound"] and step["host"]["kernels_seconds"] < step["seconds"]


def test_a_pipeline_rank_issues_its_layers_share_and_the_last_the_steps_own():
    """pp 2, 6 layers a stage: the first 188 x 6 = 1,128 ops, the last 1,128 + 93 = 1,221 (the
    busiest rank's host, 7.99 ms at 6.545 us); at batch 1 it is over the step's kernels."""
    hardware = load_hardware(str(H200_MEASURED))
    step = _step(Layout(pp=2, dp=1, microbatches=1), _workload(1))
    assert step["host"]["ops_per_step"] == 188 * 6 + 93 == 1221
    assert step["host"]["seconds_per_step"] == 1221 * hardware.module_s_per_op
    assert step["seconds"] == max(step["host"]["seconds_per_step"], step["host"]["kernels_seconds"])


@pytest.mark.parametrize("layout,kernels", [
    (Layout(dp=2, microbatches=2), 2 * 222),  # m 2, no bubble; GPT-2's 12 x 18 + 3 + 1 + 2 kernels a pass
    (Layout(pp=2, dp=1, microbatches=4), (4 + 1) * 111),  # m 4 and the bubble's 1; the last stage 6 x 18 + 1 + 2
    (Layout(tp=2, pp=2, dp=1, microbatches=3), (3 + 1) * 111)])  # a tp rank launches the same kernels
def test_the_kernels_side_is_the_step_less_its_per_block_launches(layout, kernels):
    """kernels_seconds is the step without the host term less the slowest stage's launches in every
    pass it charges (the micro-batches' and the bubble's): the same step on a hardware with no per-block
    overhead, plus each kernel's GPU-side launch cost in each of the 3 passes (the file's graph_kernel_s,
    1.086 us: KernelTimer.stream_seconds; session 39, before which a training step dropped it). At 4 x 512
    the kernels win: the step is that."""
    hardware = load_hardware(str(H200_MEASURED))
    quiet = dataclasses.replace(hardware, overhead_s_per_block=0.0)
    loud = _step(layout, _workload(4, 512), hardware)
    stream = 3 * kernels * 1.0863289485375085e-06  # benchmarks/h200-measured.json graph_kernel_s
    assert loud["host"]["kernels_seconds"] == pytest.approx(_step(layout, _workload(4, 512), quiet)["host"]
                                                            ["without_host_seconds"] + stream, rel=1e-12)
    assert not loud["host"]["bound"] and loud["seconds"] == loud["host"]["kernels_seconds"]
    assert loud["host"]["without_host_seconds"] > loud["seconds"]


def test_no_host_term_where_the_rank_runs_no_counted_eager_step():
    """FP8 linears (other ops; GPT-2 in bf16 counts 188 x 12 + 95 without), a GQA model: none, as on one GPU."""
    assert _step(Layout(dp=2), _workload(1, dtype="bf16"))["host"]["ops_per_step"] == 188 * 12 + 95
    # torchao's tensorwise: Transformer Engine's current is refused under deepspeed since session 41
    assert "host" not in _step(Layout(dp=2, fp8="tensorwise"), _workload(1, dtype="bf16"))
    cfg = load_preset("llama2-70b").replace(n_decoder_layers=2)
    step = simulate_training(cfg, _workload(1), Layout(dp=2), load_hardware(str(H200_MEASURED)),
                             time_model="kernels")["step"]
    assert "host" not in step
