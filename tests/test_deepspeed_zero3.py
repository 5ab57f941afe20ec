"""DeepSpeed ZeRO-3 as its v0.11.1 code runs a step (costmodel/layout/deepspeed_zero3.py, the edges;
costmodel/step_bytes.py deepspeed_zero3_step_bytes, the optimizer's passes).

By hand: the optimizer step moves, a parameter of the rank's 16-bit partition, 2 x (2 + 1 + 1) (isinf
and isnan with their .any()) + (2 + 8 + 8) (the float64 norm) + (2 + 2 + 2 + 4) (the flatten and the
fp32 cast) + 8 (unscale) + 28 (fused Adam) + (4 + 2) (the 16-bit copy back) = 78 bytes. TINY
(tests/distributed_cases.py: 32,688 parameters, a 99 x 48 embedding of 4,752) on 2 ranks in bf16: the
embedding's gather and its gradient's reduce-scatter each move 2 x 4,752 = 9,504 bytes; the trace
between its two uses, 2 x (32,688 - 4,752) = 55,872 elements, is within stage3_max_reuse_distance (1e9),
so it stays gathered over a step's micro-batches (one gather a step). Llama 2 7B (FlagPerf's H800 row,
6,738,415,616 parameters, a 32,000 x 4,096 embedding of 131,072,000): released each micro-batch.
"""

from __future__ import annotations

import math

import pytest

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate, deepspeed_zero3
from costmodel.layout.timing import step_time
from costmodel.step_bytes import deepspeed_zero3_step_bytes, framework_step_bytes, megatron_fp16_step_bytes
from tests.distributed_cases import TINY

REFERENCE = Workload(seq_len=8, batch=2, dtype="bf16", impl="reference", precision="pure")


def tiny(dtype: str = "bf16", **layout) -> ParallelEstimate:
    return ParallelEstimate(TINY, REFERENCE.replace(dtype=dtype),
                            Layout(**{"dp": 2, "zero": 3, "framework": "deepspeed", "device": "cpu", **layout}))


def test_the_step_passes_by_hand():
    assert deepspeed_zero3_step_bytes(2) == 78
    assert framework_step_bytes(tiny("bf16")) == framework_step_bytes(tiny("fp16")) == 78
    # one fused pass elsewhere: ZeRO-1/2, fp32 parameters; Megatron-LM's fp16 passes kept
    assert framework_step_bytes(tiny("bf16", zero=1)) is None and framework_step_bytes(tiny("fp32")) is None
    megatron = ParallelEstimate(TINY, REFERENCE.replace(dtype="fp16"), Layout(dp=2, framework="megatron", zero=1))
    assert framework_step_bytes(megatron) == megatron_fp16_step_bytes(2) == 52


def test_the_edges_by_hand():
    hardware = load_hardware("h100-sxm")
    for m, gathers in ((1, 1.0), (2, 0.5)):  # kept gathered over the step's micro-batches (reuse distance)
        estimate = tiny(microbatches=m)
        timer = step_time(estimate, hardware)
        edge = gathers * timer.collective("dp", "all_gather", 9_504) + timer.collective("dp", "reduce_scatter", 9_504)
        assert deepspeed_zero3.edge_seconds(timer, estimate.stages[0]) == pytest.approx(edge, rel=1e-12)
    # not DeepSpeed's ZeRO-3 (or one rank): no edge of this rule
    for estimate in (tiny(zero=1), tiny(dp=1)):
        assert not deepspeed_zero3.applies(estimate)


def test_the_h800_row():
    """The embedding's gather and reduce-scatter exposed each micro-batch, the rest hidden under the
    compute; the optimizer's 78 bytes over the rank's ceil(P / 8) parameters."""
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "flagperf-llama2-7b-ds-h800 llama2-7b zero3 8xh800")
    estimate, hardware, options = train_setup(run, data["sources"]["flagperf-llama2-7b-ds-h800"])
    timer = step_time(estimate, hardware, time_model="kernels", **options)
    params, embedding = estimate.on_stage(estimate.stages[0], "params"), estimate.part("embedding", "params")
    assert (params, embedding) == (6_738_415_616, 131_072_000)
    edge = timer.collective("dp", "all_gather", 2 * embedding) + timer.collective("dp", "reduce_scatter", 2 * embedding)
    step = timer.step()
    assert step["exposed_communication_seconds"]["dp"] == pytest.approx(edge, rel=1e-9)
    assert step["optimizer_seconds"] == pytest.approx(math.ceil(params / 8) * 78 / timer.bytes_per_s, rel=1e-9)
