"""Layout.zero_grad_reduce (--zero-grad-reduce): nanotron's ZeRO-1 all-reduces the whole fp32 gradient
(trainer.py lines 510-518 at c2528430, reduce_scatter=False; optim/gradient_accumulator.py line 155) where
Megatron-Core's distributed optimizer reduce-scatters it; both then all-gather the parameters."""

from __future__ import annotations

import pytest

import cli
from costmodel.collectives import collective_seconds
from costmodel.config import ConfigError, Workload
from costmodel.hardware import Hardware, load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset
from reports.published_runs import other_runs_data, train_setup

ROW = "nanotron-playbook llama-3.57b dp128 tp4 pp1 gas1 mbs2 zero1 512xh100"


def _dp_bytes(reduce: str) -> tuple[dict[str, int], int]:
    layout = Layout(dp=8, tp=1, zero=1, framework="megatron", zero_grad_reduce=reduce)
    estimate = ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=4096, batch=1, dtype="bf16"), layout)
    stage = estimate.stages[0]
    return estimate.communication(stage)["dp"], estimate.on_stage(stage, "params")


def test_the_all_reduce_moves_the_whole_fp32_gradient_and_gathers_the_same_bf16_parameters():
    """Llama 3 8B (8,030,261,248 parameters, divisible by 8: no padding) over DP 8: 4 bytes a parameter
    reduce-scattered or all-reduced, 2 all-gathered either way."""
    scattered, params = _dp_bytes("reduce_scatter")
    reduced, _ = _dp_bytes("all_reduce")
    assert params == 8_030_261_248
    assert scattered == {"reduce_scatter": 4 * params, "all_gather": 2 * params}
    assert reduced == {"all_reduce": 4 * params, "all_gather": 2 * params}


def test_the_row_exposes_the_ring_all_reduce_s_second_half():
    """3.57B DP 128 TP 4 on 64 nodes of the book's cluster (893,561,856 parameters a rank): the exposed
    reduction is the all-reduce of 4 bytes each plus the bf16 gather, 136.3 ms, where the reduce-scatter
    gave 82.0 ms; the difference is an all-gather of the fp32 gradient, 54.3 ms (session 28's figure for
    what the rows lacked)."""
    from costmodel.layout.timing import step_time

    data = other_runs_data()
    source = data["sources"]["nanotron-playbook"]
    run = next(r for r in data["runs"] if r["id"] == ROW)
    assert run["zero_grad_reduce"] == "all_reduce"
    hf = Hardware.from_dict(dict(load_hardware("h100-sxm").to_dict(), cluster="hf-h100-efa"), "test")
    params = 893_561_856
    exposed = []
    for row in (run, {k: v for k, v in run.items() if k != "zero_grad_reduce"}):
        estimate, hardware, options = train_setup(row, source)
        assert estimate.on_stage(estimate.stages[0], "params") == params
        exposed.append(step_time(estimate, hardware, time_model="kernels", **options).step()["exposed_communication_seconds"]["dp"])
    gather = collective_seconds(hf, "all_gather", 2 * params, 128, 512)
    assert exposed[0] == pytest.approx(collective_seconds(hf, "all_reduce", 4 * params, 128, 512) + gather)
    assert exposed[1] == pytest.approx(collective_seconds(hf, "reduce_scatter", 4 * params, 128, 512) + gather)
    assert (round(exposed[0], 4), round(exposed[1], 4)) == (0.1363, 0.082)
    assert round(collective_seconds(hf, "all_gather", 4 * params, 128, 512), 4) == 0.0543


def test_refusals():
    with pytest.raises(ConfigError, match="needs --zero 1 \\(here 0\\)"):
        Layout(dp=8, zero=0, framework="megatron", zero_grad_reduce="all_reduce")
    with pytest.raises(ConfigError, match="zero_grad_reduce must be reduce_scatter or all_reduce, got 'scatter'"):
        Layout(dp=8, zero=1, framework="megatron", zero_grad_reduce="scatter")
    assert Layout(dp=8, zero=1, framework="megatron", zero_grad_reduce="all_reduce").to_dict(1)["zero_grad_reduce"] == "all_reduce"
    assert "zero_grad_reduce" not in Layout(dp=8, zero=1, framework="megatron").to_dict(1)


def test_the_command_line_refuses_it_without_zero_1(capsys):
    code = cli.main(["simulate", "--train", "-m", "llama3-8b", "--hardware", "h100-sxm", "--dp", "8", "--framework",
                     "megatron", "--zero-grad-reduce", "all_reduce", "-n", "4096"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "needs --zero 1 (here 0)" in err
