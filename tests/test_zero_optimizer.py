"""Layout.zero_optimizer (--zero-optimizer): nanotron's ZeRO-1 (huggingface/nanotron at c2528430) all-reduces
the whole fp32 gradient (trainer.py lines 510-518, reduce_scatter=False; optim/gradient_accumulator.py line
155) where Megatron-Core's distributed optimizer reduce-scatters it, and copies every gathered parameter
slice back in a Python loop (distributed.py update_output: dp x n copy_ ops), costmodel/layout/zero_optimizer.py."""

from __future__ import annotations

import pytest

import cli
from costmodel.collectives import collective_seconds
from costmodel.config import ConfigError, Workload
from costmodel.hardware import Hardware, load_hardware
from costmodel.kernel_facts_file import borrowed_host_op_s
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.zero_optimizer import nanotron_tensors
from costmodel.presets import load_preset
from reports.published_runs import other_runs_data, train_setup

ROW = "nanotron-playbook llama-3.57b dp128 tp4 pp1 gas1 mbs2 zero1 512xh100"


def _dp_bytes(optimizer: str) -> tuple[dict[str, int], int]:
    layout = Layout(dp=8, tp=1, zero=1, framework="megatron", zero_optimizer=optimizer)
    estimate = ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=4096, batch=1, dtype="bf16"), layout)
    stage = estimate.stages[0]
    return estimate.communication(stage)["dp"], estimate.on_stage(stage, "params")


def test_nanotron_all_reduces_the_whole_fp32_gradient_and_gathers_the_same_bf16_parameters():
    """Llama 3 8B (8,030,261,248 parameters, divisible by 8: no padding) over DP 8: 4 bytes a parameter
    reduce-scattered (flat) or all-reduced (nanotron), 2 all-gathered either way."""
    flat, params = _dp_bytes("flat")
    nanotron, _ = _dp_bytes("nanotron")
    assert params == 8_030_261_248
    assert flat == {"reduce_scatter": 4 * params, "all_gather": 2 * params}
    assert nanotron == {"all_reduce": 4 * params, "all_gather": 2 * params}


def _row(**changes):
    data = other_runs_data()
    source = data["sources"]["nanotron-playbook"]
    run = dict(next(r for r in data["runs"] if r["id"] == ROW), **changes)
    return run, train_setup(run, source)


def test_nanotron_s_llama_tensors_a_rank():
    """models/llama.py's six tensors a decoder layer (QKV and gate/up fused, no biases), the embedding
    first, the final norm and an untied or pipelined head last: 3.57B (28 layers, tied, one stage) 170;
    1.34B over two stages of 11 and 5 layers 67 and 32; 80B (80 layers, untied) 483."""
    _, (estimate, _, _) = _row()
    assert [nanotron_tensors(estimate, s) for s in estimate.stages] == [170]
    data = other_runs_data()
    source = data["sources"]["nanotron-playbook"]
    counts = {}
    for run in data["runs"]:
        if run["id"].startswith("nanotron-playbook") and run["id"].split()[2:4] in (["dp128", "tp2"], ["dp32", "tp16"]):
            estimate = train_setup(run, source)[0]
            counts[run["model"]] = [nanotron_tensors(estimate, s) for s in estimate.stages]
    assert counts == {"nanotron-llama-1.34b": [67, 32], "nanotron-llama-80b": [483]}


def test_the_row_exposes_the_all_reduce_and_the_copy_loop():
    """3.57B DP 128 TP 4 on 64 nodes of the book's cluster (893,561,856 parameters a rank): the exposed
    reduction is the all-reduce of 4 bytes each plus the bf16 gather, 136.3 ms, where the reduce-scatter
    gave 82.0 ms (the difference: an all-gather of the fp32 gradient, 54.3 ms, session 28's figure for
    what the rows lacked); the copy loop, 128 x 170 = 21,760 copy_ ops at the borrowed 6.545 us, 142.4 ms,
    less the 27.7 ms gather beside it, adds 114.7 ms to the optimizer's seconds."""
    from costmodel.layout.timing import step_time

    hf = Hardware.from_dict(dict(load_hardware("h100-sxm").to_dict(), cluster="hf-h100-efa"), "test")
    params = 893_561_856
    steps = []
    for changes in ({}, {"zero_optimizer": "flat"}):
        run, (estimate, hardware, options) = _row(**changes)
        assert estimate.on_stage(estimate.stages[0], "params") == params
        steps.append(step_time(estimate, hardware, time_model="kernels", **options).step())
    gather = collective_seconds(hf, "all_gather", 2 * params, 128, 512)
    nanotron, flat = (step["exposed_communication_seconds"]["dp"] for step in steps)
    assert nanotron == pytest.approx(collective_seconds(hf, "all_reduce", 4 * params, 128, 512) + gather)
    assert flat == pytest.approx(collective_seconds(hf, "reduce_scatter", 4 * params, 128, 512) + gather)
    assert (round(nanotron, 4), round(flat, 4), round(gather, 4)) == (0.1363, 0.082, 0.0277)
    assert round(collective_seconds(hf, "all_gather", 4 * params, 128, 512), 4) == 0.0543
    loop = 128 * 170 * borrowed_host_op_s()
    assert round(loop, 4) == 0.1424
    assert steps[0]["optimizer_seconds"] - steps[1]["optimizer_seconds"] == pytest.approx(loop - gather)
    # 0.3915 / 0.2224 before session 31's loss passes (nanotron's sharded_cross_entropy: Layout.unfused_loss, 5.2 ms)
    assert (round(steps[0]["seconds"], 4), round(steps[1]["seconds"], 4)) == (0.3951, 0.2264)  # (0.3967, 0.2281) before session 43


def test_no_loop_where_the_gather_outlasts_it_or_dp_is_one():
    """80B DP 32 TP 16: 32 x 483 copies (0.101 s) under a gather of 5 billion bf16 parameters; DP 1: no gather."""
    from costmodel.layout.zero_optimizer import gather_copy_seconds
    from costmodel.layout.timing import step_time

    data = other_runs_data()
    source = data["sources"]["nanotron-playbook"]
    run = next(r for r in data["runs"] if r["id"] == "nanotron-playbook llama-80b dp32 tp16 pp1 gas4 mbs2 zero1 512xh100")
    estimate, hardware, options = train_setup(run, source)
    timer = step_time(estimate, hardware, time_model="kernels", **options)
    assert 32 * 483 * borrowed_host_op_s() < timer.collective("dp", "all_gather", estimate.communication(estimate.stages[0])["dp"]["all_gather"])
    assert gather_copy_seconds(timer, estimate.stages[0]) == 0.0
    one = ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=4096, batch=1, dtype="bf16"),
                           Layout(dp=1, zero=1, framework="megatron", zero_optimizer="nanotron"))
    assert gather_copy_seconds(step_time(one, load_hardware("h100-sxm")), one.stages[0]) == 0.0


def test_refusals():
    with pytest.raises(ConfigError, match="needs --zero 1 \\(here 0\\)"):
        Layout(dp=8, zero=0, framework="megatron", zero_optimizer="nanotron")
    with pytest.raises(ConfigError, match="zero_optimizer must be flat, nanotron or internlm, got 'deepspeed'"):
        Layout(dp=8, zero=1, framework="megatron", zero_optimizer="deepspeed")
    assert Layout(dp=8, zero=1, framework="megatron", zero_optimizer="nanotron").to_dict(1)["zero_optimizer"] == "nanotron"
    assert "zero_optimizer" not in Layout(dp=8, zero=1, framework="megatron").to_dict(1)


def test_the_command_line_refuses_it_without_zero_1(capsys):
    code = cli.main(["simulate", "--train", "-m", "llama3-8b", "--hardware", "h100-sxm", "--dp", "8", "--framework",
                     "megatron", "--zero-optimizer", "nanotron", "-n", "4096"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "needs --zero 1 (here 0)" in err


def test_internlm_s_buckets_and_broadcasts():
    """InternLM 7B (7,321,948,160 parameters, 291 tensors: nine a layer and three more) under its
    HybridZeroOptimizer: the bf16 gradient all-reduced in ceil(7,321,948,160 / 512 Mi) = 14 bucket calls,
    the bf16 parameters broadcast by the min(dp, 291) ranks holding any (8 at 8 GPUs, 291 at 1,024): at
    1,024 A100s over 4 x 100 Gb RoCE a node, 1.153 s where one gather of the same bytes took 0.457 s."""
    from costmodel.layout.zero_optimizer import flat_calls, internlm_tensors

    data = other_runs_data()
    source = data["sources"]["internlm-train"]
    assert source["zero_optimizer"] == "internlm"
    seen = {}
    for gpus in (8, 1024):
        run = next(r for r in data["runs"] if r["id"] == f"internlm-train 7b tp1 zero1-all {gpus}xa100-80gb")
        estimate, hardware, _ = train_setup(run, source)
        stage = estimate.stages[0]
        assert estimate.on_stage(stage, "params") == 7_321_948_160 and internlm_tensors(estimate, stage) == 291
        assert estimate.communication(stage)["dp"] == {"all_reduce": 2 * 7_321_948_160, "all_gather": 2 * 7_321_948_160}
        seen[gpus] = (flat_calls(estimate, stage, "dp", "all_gather"), flat_calls(estimate, stage, "dp", "all_reduce"))
        if gpus == 1024:
            payload = 2 * 7_321_948_160
            assert round(collective_seconds(hardware, "all_gather", payload, 1024, 1024), 3) == 0.457
            assert round(collective_seconds(hardware, "all_gather", payload, 1024, 1024, 291), 3) == 1.153
    assert seen == {8: (8, 14), 1024: (291, 14)}
    # a flat (Megatron-Core) layout keeps one call a kind
    flat = ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=4096, batch=1, dtype="bf16"),
                            Layout(dp=8, zero=1, framework="megatron"))
    assert flat.data_parallel_calls(flat.stages[0], "dp", "all_gather") == 1


def test_internlm_has_no_copy_loop():
    """nanotron's Python loop of dp x n copy_ ops is nanotron's (distributed.py update_output); InternLM's
    holding ranks broadcast their flat parameters (broadcast_params) with no such loop. Merging session 30
    found the loop priced on InternLM's rows too (all_reduces() was true for both): at 1,024 A100s it added
    dp x 170 x the host's op time to a step InternLM's code does not run."""
    from costmodel.layout.timing import step_time
    from costmodel.layout.zero_optimizer import gather_copy_seconds

    data = other_runs_data()
    source = data["sources"]["internlm-train"]
    run = next(r for r in data["runs"] if r["id"] == "internlm-train 7b tp1 zero1-all 1024xa100-80gb")
    estimate, hardware, options = train_setup(run, source)
    timer = step_time(estimate, hardware, time_model="kernels", **options)
    assert estimate.layout.zero_optimizer == "internlm" and timer.hardware.eager_op_s is not None
    assert gather_copy_seconds(timer, estimate.stages[0]) == 0.0
