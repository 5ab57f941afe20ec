"""Defects found by the thirtieth new user (wt31_user30, session 31): an ML engineer who read only the README,
docs/commands.md, docs/layouts.md and docs/fit-and-cost.md, asking training and reporting questions (how long and
how much to pretrain a model on N GPUs, which layout, does it fit, what MFU, what it costs: `plan`, `simulate
--train`, `estimate`, `report`, `hardware`, `costmodel.simulate`)."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli_run import one_error_line, run_json, run_main

TRAIN8 = ["simulate", "--train", "--model", "llama3-8b", "--gpus", "8", "--dp", "8"]
# the step's model FLOPs (simulate --train --json: step.model_flops) over 8 x the H100 SXM's bf16 datasheet peak
FLOOR8 = 790_514_500_632_576 / (8 * 989.4e12)  # 0.09987 s: the step at MFU 100%


def test_a_measured_step_faster_than_the_peak_is_refused(capsys):
    """`simulate --train --model llama3-8b --gpus 8 --dp 8 --step-time 0.01` printed "MFU of the measured step:
    998.7%": ten times what eight H100s' tensor cores can do, a mistyped time (0.01 for 10 s, or another batch's
    step) read as a figure. A step whose model FLOPs (790.5 TFLOP, the step's) would need more than the GPUs'
    datasheet peak is now refused in one line that says the shortest step there can be."""
    assert run_json(TRAIN8, capsys)["step"]["model_flops"] == 790_514_500_632_576
    assert run_json([*TRAIN8, "--step-time", "0.1"], capsys)["mfu_measured"] == pytest.approx(FLOOR8 / 0.1, rel=1e-12)
    line = one_error_line([*TRAIN8, "--step-time", "0.01"], capsys)
    assert line.startswith("error: --step-time 0.01 s: MFU 998.7%")
    assert "no step of this run is shorter than 0.0999 s" in line
    one_error_line([*TRAIN8, "--step-time", "0.0998"], capsys)  # just below the floor


def test_a_measured_step_on_one_gpu_and_in_python_is_refused_alike(capsys):
    """One GPU's training (the roofline, no layout) and `costmodel.simulate(..., step_time=)` took 0.001 s for
    Llama 3.2 1B and returned mfu_measured 17.0 (1,700%)."""
    import costmodel
    from costmodel.config import ConfigError

    one = run_json(["simulate", "--train", "--model", "llama3.2-1b"], capsys)
    floor = one["mfu_predicted"] * one["step"]["seconds"]  # model FLOPs over the peak
    assert run_json(["simulate", "--train", "--model", "llama3.2-1b", "--step-time", str(2 * floor)],
                    capsys)["mfu_measured"] == pytest.approx(0.5, rel=1e-9)
    assert "MFU" in one_error_line(["simulate", "--train", "--model", "llama3.2-1b", "--step-time", "0.001"], capsys)
    with pytest.raises(ConfigError, match=r"--step-time 0.001 s: MFU 1,70\d\.\d%"):
        costmodel.simulate("llama3.2-1b", train=True, step_time=0.001)


def test_an_fp8_step_is_bounded_by_the_fp8_peak_not_the_bf16_one(capsys):
    """MFU divides by the bf16 datasheet peak (Megatron's convention) also for an FP8 run, whose GEMMs run at up to
    twice it: a measured FP8 step at 1.5x the bf16 floor (MFU 150% of bf16) can be real and is kept."""
    fp8 = [*TRAIN8, "--framework", "megatron", "--fp8", "current"]
    flops = run_json(fp8, capsys)["step"]["model_flops"]
    floor_bf16 = flops / (8 * 989.4e12)
    assert run_json([*fp8, "--step-time", str(floor_bf16 / 1.5)], capsys)["mfu_measured"] == pytest.approx(1.5)
    one_error_line([*fp8, "--step-time", str(floor_bf16 / 2.1)], capsys)  # past the fp8 peak (1,978.9 TFLOP/s)


def test_the_reports_asked_layout_runs_its_frameworks_code_as_simulate_does():
    """`report --tp 2 --dp 4 --microbatches 4 --framework megatron -n 4096` drew the asked layout at 84.67 GiB
    (Hugging Face's layers under sdpa, 17.36 GiB of activations), above the dashed line, where `simulate --train`
    and `estimate` with the same layout run Megatron's own layers under flash: 78.37 GiB (11.06 GiB), which fits;
    the plan's rows beside it were already each framework's code. The asked row now runs its framework's code, and
    the dashed line is what a training run can use (78.72 GiB, the plan's and simulate's capacity), not the 80 GiB
    sold."""
    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout
    from reports import report
    from reports.figures import GiB
    from reports.series import load_model

    layout = Layout(tp=2, dp=4, microbatches=4, framework="megatron")
    memory = report.make_layouts(load_model("llama3-8b"), Workload(seq_len=4096), layout, "h100-sxm")[0]
    asked = dict(zip(memory.headers, memory.rows[0]))
    assert asked["layout"].startswith("asked: tp 2 x pp 1 x dp 4, megatron")
    assert (asked["activations_bytes"], asked["total_bytes"]) == (11_877_285_890, 84_152_033_794)  # simulate's
    line = memory.figure.axes[0].lines[0]
    assert line.get_xdata()[0] * GiB == load_hardware("h100-sxm").training_memory_bytes == 84_520_468_480
    assert "78.72 GiB" in line.get_label()


def test_the_hardware_presets_name_only_commands_that_exist():
    """`hardware h100` printed, in its source, "`hardware calibrate` on a GPU measures it" (the memory reserve):
    `hardware calibrate` is "unknown hardware 'calibrate'" (exit 2); the reserve is measured by `hardware --measure
    --out FILE`. Every option a preset's source names in a `hardware ...` command must be one the command takes."""
    import json
    from pathlib import Path

    import click

    import costmodel
    from cli.hardware import hardware as command

    options = {opt for param in command.params if isinstance(param, click.Option) for opt in param.opts}
    named = []
    for path in sorted((Path(costmodel.__file__).parent / "hardware").glob("*.json")):
        for span in re.findall(r"`(hardware [^`]*)`", json.loads(path.read_text()).get("source", "")):
            named.append(span)
            words = span.split()[1:]
            assert words and words[0].startswith("--"), f"{path.name}: `{span}` is no hardware command"
            assert {w for w in words if w.startswith("--")} <= options, f"{path.name}: `{span}`"
    assert "hardware --measure --out FILE" in named


@pytest.mark.parametrize("option", [["--no-moe-grouped-gemm"], ["--all-reduce", "intra-node"],
                                    ["--tp-only-amax-red"]])
def test_estimate_refuses_the_options_that_only_time_a_step(option, capsys):
    """`estimate --model mixtral-8x7b --ep 8 --framework megatron --no-moe-grouped-gemm` (Megatron's SequentialMLP:
    the experts' kernels one after another), `--all-reduce intra-node` (whose kernels time an all-reduce) and
    `--tp-only-amax-red` (the amax reduction's group) printed the same memory and bytes as without them: each is
    read only by the step's time (layout/sequential_mlp.py, layout/time.py, layout/fp8 timing), which estimate does
    not compute. estimate already refused --no-moe-router-fusion so; these three are now refused alike."""
    args = ["estimate", "--model", "mixtral-8x7b", "--gpus", "8", "--ep", "8", "--dp", "8", "--framework", "megatron",
            "--zero", "1", *option]
    if option == ["--tp-only-amax-red"]:
        args += ["--fp8", "delayed"]
    line = one_error_line(args, capsys)
    assert line.startswith(f"error: {option[0].replace('--no-', '--[no-]')}") and "`simulate --train`" in line


def test_plans_sliding_window_warning_names_the_kernels_its_layouts_run(capsys):
    """`plan --model gemma3-4b --gpus 8` warned "eager attention still computes every score", though no layout
    it ranks runs eager: Megatron's run flash (which skips the scores outside the window), DeepSpeed's and FSDP2's
    sdpa. The warning was the plan's placeholder workload's (no framework: eager); `plan --serve` had been fixed
    so in round 29. Each framework's kernel now gets its own line."""
    code, _, err = run_main(["plan", "--model", "gemma3-4b", "--gpus", "8", "--seq-len", "4096", "--top", "1"], capsys)
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0 and not any("eager" in line for line in warnings), warnings
    assert [line.split(":")[1].strip() for line in warnings] == ["megatron layouts", "deepspeed and fsdp2 layouts"]
    assert "flash attention skips the scores outside the window" in warnings[0]
    assert "sdpa attention still computes every score" in warnings[1]
    one = run_main(["plan", "--model", "gemma3-4b", "--gpus", "8", "--seq-len", "4096", "--top", "1",
                    "--framework", "fsdp2"], capsys)[2]
    assert [line for line in one.splitlines() if line.startswith("warning:")] == [
        "warning: model 'gemma3-4b' attends within a sliding window of 1,024 tokens on 29 of its 34 layers: sdpa "
        "attention still computes every score (a masked full matrix)."]


def test_the_gpu_count_a_plan_suggests_is_a_command_that_gives_what_it_says(capsys):
    """`plan --model llama3-70b --gpus 4` (no layout fits) said "On 16 GPUs it fits: tp 2 x pp 2 x dp 4, ..., global
    batch 32 (`plan --gpus 16`)": that command plans a global batch of 128 (the default, 8 a GPU), not the 32 the
    line was sized at. The command now carries the global batch."""
    code, out, _ = run_main(["plan", "--model", "llama3-70b", "--gpus", "4"], capsys)
    assert code == 1
    assert out.strip().splitlines()[-2] == (  # (the last: the ZeRO-Offload that fits on these 4, not timed)
        "On 16 GPUs it fits: tp 2 x pp 2 x dp 4, fsdp2, ZeRO 3, recompute full, micro-batch 1, 71.85 GiB per GPU, global "
        "batch 32 (`plan --gpus 16 --global-batch 32`).")
    nearest = json.loads(run_main(["plan", "--model", "llama3-70b", "--gpus", "4", "--json"], capsys)[1])["nearest"]
    plan = run_json(["plan", "--model", "llama3-70b", "--gpus", "16", "--global-batch", "32", "--zero", "3",
                     "--recompute", "full", "--batch", "1", "--tp", "2", "--pp", "2"], capsys)
    assert plan["inputs"]["global_batch"] == 32
    named = [e for e in plan["feasible"] if e["layout"] == nearest["layout"]]
    assert [e["per_rank"]["total"] for e in named] == [nearest["per_rank"]]


@pytest.mark.parametrize("kwargs, message", [
    ({"tokens": "1e9"}, "tokens: a number of tokens (1e12), got the text '1e9': the command line's --tokens reads "
                        "spellings such as 1T; in Python give the number."),  # session 42: it said "positive and finite"
    ({"tokens": True}, "--tokens must be positive and finite, got True."),
    ({"tokens": 1e9, "price": "2"}, "--price must be a positive number of dollars per GPU-hour, got '2'."),
    ({"step_time": "1"}, "--step-time must be positive and finite, got '1'."),
])
def test_the_python_simulate_and_plan_refuse_a_run_figure_of_the_wrong_kind(kwargs, message):
    """`costmodel.simulate("llama3.2-1b", train=True, tokens="1e9")` (and plan's, price="2", step_time="1") died in a
    TypeError ('>' not supported between 'str' and 'int') inside cost.py; tokens=True trained on 1 token. Each is
    now the ConfigError the command's own check gives."""
    import costmodel
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError) as simulated:
        costmodel.simulate("llama3.2-1b", train=True, **kwargs)
    assert str(simulated.value) == message
    if "step_time" not in kwargs:
        with pytest.raises(ConfigError) as planned:
            costmodel.plan("llama3.2-1b", gpus=8, **kwargs)
        assert str(planned.value) == message


@pytest.mark.parametrize("fixed, message", [
    ({"framework": "jax"}, "plan: framework must be one of megatron, deepspeed, fsdp2, got 'jax'."),
    ({"sp": "yes"}, "plan: sp must be true or false, got 'yes'."),
    ({"tp": True}, "plan: tp must be a positive integer, got True."),
    ({"zero": 5}, "plan: zero must be a ZeRO stage, 0 to 3, got 5."),
    ({"overlap_grad_reduce": 1}, "plan: overlap_grad_reduce must be true or false, got 1."),
])
def test_the_python_plan_refuses_a_fixed_setting_of_the_wrong_kind(fixed, message):
    """`costmodel.plan("llama3.2-1b", gpus=8, framework="jax")` died in KeyError 'jax'; sp="yes" planned sequence
    parallelism, tp=True planned as tp 1 and zero=5 said "megatron supports --zero 0, 1, 3" (of a framework nobody
    named). plan's fixed settings are now checked as the command's types check them."""
    import costmodel
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError) as planned:
        costmodel.plan("llama3.2-1b", gpus=8, **fixed)
    assert str(planned.value) == message


def test_a_figure_past_the_largest_prefix_is_written_as_a_power_of_ten(capsys):
    """`plan --tokens 1e30` said "To train on 1000000.00 Y tokens (8219787264000001.00 YFLOP, ...)": the float's
    noise printed as sixteen digits before the point. A figure 1,000 times the largest prefix or more is now
    written in powers of ten; below it, the prefixes as before."""
    from reports.text import si

    assert (si(999.99e24, "FLOP"), si(1.5e24)) == ("999.99 YFLOP", "1.50 Y")
    code, out, _ = run_main(["plan", "--model", "llama3.2-1b", "--gpus", "8", "--tokens", "1e30", "--top", "1"], capsys)
    assert code == 0
    assert out.strip().splitlines()[-1].startswith("To train on 1e+30 tokens (8.21979e+39 FLOP, recomputation aside)")


@pytest.mark.parametrize("args, option", [
    (["--quick"], "--quick"), (["--like", "h100"], "--like"), (["--device", "cpu"], "--device"),
    (["--measure", "--quick"], "--quick"), (["--dtype", "bf16"], "--dtype"),
    (["--show", "h200", "--out", "h200.json"], "--out"), (["--show", "h200", "--measure"], "--measure"),
])
def test_the_hardware_commands_options_are_read_or_refused(args, option, capsys):
    """`hardware --quick`, `--like h100`, `--device cpu` and `--dtype bf16` listed the presets as if not typed;
    `hardware --measure --quick` ran the full calibration (15 s, not the small grid asked for: --quick is read with
    --out only); `hardware --show h200 --out F` measured a device instead of showing h200. Each is now one line."""
    line = one_error_line(["hardware", *args], capsys)
    assert line.startswith(f"error: {option}: ")
    assert run_main(["hardware", "--show", "h200"], capsys)[0] == 0


def test_the_context_parallel_chunks_refusal_reads_as_a_product(capsys):
    """`simulate --train --gpus 8 --cp 8 --seq-len 100` said "--cp 8 cuts each sequence into 2 cp = 16 chunks"."""
    # restated by wt43_etpfix: the default framework, deepspeed, now rotates by its own a2a (Ulysses' cp contiguous
    # pieces: "into 8 pieces"); torch's context_parallel (fsdp2) keeps the 2 cp load-balanced chunks this pin reads
    line = one_error_line(["simulate", "--train", "--model", "llama3-8b", "--gpus", "8", "--cp", "8", "--seq-len",
                           "100", "--framework", "fsdp2"], capsys)
    assert line == "error: layout: --cp 8 cuts each sequence into 2 x cp = 16 chunks; 100 tokens do not divide."
    line = one_error_line(["simulate", "--train", "--model", "llama3-8b", "--gpus", "8", "--cp", "8", "--seq-len",
                           "100"], capsys)
    assert line == "error: layout: --cp 8 cuts each sequence into 8 pieces; 100 tokens do not divide."
