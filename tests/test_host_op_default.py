"""The host time an eager op takes, borrowed where a GPU's file states none (kernel_facts.json
"eager_host_op_default": the project's own H200 host measurement, benchmarks/h200-measured.json
module_s_per_op, 6.545 us): an eager step on a GPU takes max(kernels, ops x that time) as the A100
files' own 7.1 us gives it; a CPU file keeps its own figures (never the default); a file's own
dispatch_s_per_op or module_s_per_op, or simulate's --host-op-time, wins; every output that uses the
borrowed figure says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel.hardware import Hardware, load_hardware, preset_names
from costmodel.kernel_time import KernelTimer, inference_subs, kernel_facts, leaves_time
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference
from costmodel.roofline_model import Roofline

ROOT = Path(__file__).resolve().parents[1]
H200_HOST_S = 6.545241752576789e-06  # benchmarks/h200-measured.json module_s_per_op (2026-12-04)
GPT_FAST_7B_OPS = 32 * 126 + 36  # kernel_facts.json eager_step_ops, gpt-fast bf16: 4,068
CPU = {"name": "cpu", "flops_per_s": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10, "memory_bytes": 2**34,
       "gemm_efficiency_by_rows": {"fp32": {"1": 0.1, "8": 0.5}}}


def test_the_default_is_the_projects_h200_host_measurement_and_lists_the_a100_hosts():
    entry = kernel_facts()["eager_host_op_default"]
    measured = json.loads((ROOT / "benchmarks" / "h200-measured.json").read_text())
    assert entry["value"] == measured["module_s_per_op"] == H200_HOST_S
    assert "2026-12-04" in measured["source"] and "driver 580.159.04" in entry["source"]
    hosts = {(h["figure"], h["seconds"]) for h in entry["hosts"]}
    assert ("dispatch_s_per_op", measured["dispatch_s_per_op"]) in hosts
    assert ("dispatch_s_per_op", load_hardware("a100-80gb").dispatch_s_per_op) in hosts  # FlagGems' 7.1 us add


def test_every_gpu_preset_but_the_a100s_borrows_it_and_the_a100s_keep_their_own():
    """36 presets: the four A100 files state FlagGems' 7.1 us add (a100-64gb, wt39_hpcgpus, takes its parent's);
    the 32 others state none (34 and 31 before session 39's two HPC centres' files)."""
    presets = {name: load_hardware(name) for name in preset_names()}
    borrowing = sorted(name for name, hw in presets.items() if hw.host_op_borrowed)
    assert len(presets) == 36 and len(borrowing) == 32
    assert set(presets) - set(borrowing) == {"a100-40gb", "a100-64gb", "a100-80gb", "a100-pcie"}
    for name in borrowing:
        assert presets[name].issues_ahead and presets[name].eager_op_s == H200_HOST_S
        assert presets[name].engine_op_s == H200_HOST_S  # the engine's ops: eager_op_s where it states none
    for name in ("a100-40gb", "a100-64gb", "a100-80gb", "a100-pcie"):
        assert presets[name].eager_op_s == 7.1e-6 and not presets[name].host_op_borrowed


def test_a_cpu_file_keeps_its_own_figures_never_the_default():
    """A CPU runs each op in the dispatching thread; its file's measured figures (or none) stand."""
    bare = Hardware.from_dict(CPU, "cpu")
    assert not bare.issues_ahead and bare.eager_op_s is None and not bare.host_op_borrowed
    assert KernelTimer(bare, "fp32", "sdpa").host_s_per_op is None and KernelTimer(bare, "fp32", "sdpa").dispatch_s == 0.0
    measured = Hardware.from_dict(dict(CPU, dispatch_s_per_op=2e-6), "cpu")
    assert measured.eager_op_s == 2e-6 and not measured.host_op_borrowed
    named = Hardware.from_dict({"name": "cpu", "flops_per_s": {"bf16": 1e11}, "bandwidth_bytes_per_s": 1e10,
                                "memory_bytes": 2**34, "sm_count": 2, "architecture": "cpu",
                                "vector_flops_per_s": 5e9}, "cpu")
    assert named.eager_op_s is None and not named.host_op_borrowed


def _kernels_alone(hardware: Hardware, batch: int, context: int) -> float:
    """The eager decode step's kernels (less their per-block launches, which the host term stands for, but
    with each kernel's GPU-side launch cost, graph_kernel_s, which it does not: session 38's sweep),
    gpt-fast's: Q, K and V one GEMM (its wqkv; kernel_facts.json fused_projections)."""
    roof = Roofline(load_preset("llama2-7b"), hardware, "bf16", None, "sdpa", "static", False, None, "naive")
    leaves, rerun = roof.step_leaves()
    assert not rerun
    times = leaves_time(leaves, inference_subs(roof.cfg, "bf16", batch, 1, context=context),
                        KernelTimer(hardware, "bf16", "sdpa", fused_qkv=True))
    assert times.stream_seconds == pytest.approx(387 * hardware.graph_kernel_s, rel=1e-12)  # 387 kernels a step
    return times.seconds - times.launch_seconds + times.stream_seconds


def _step(hardware: Hardware, batch: int = 1, gen: int = 20) -> dict:
    return simulate_inference(load_preset("llama2-7b"), hardware, prompt=5, gen=gen, batch=batch, dtype="bf16",
                              attention="sdpa", kv_cache="static", time_model="kernels", implementation="gpt-fast")


def test_an_eager_h100_llama2_7b_decode_step_is_the_longer_of_its_kernels_and_the_borrowed_host():
    """gpt-fast's step, 4,068 ops x 6.545 us = 26.63 ms, over the H100's kernels at batch 1 (host-bound);
    at batch 192 and context 4,000 the kernels' own time (the KV cache's reads) is the longer."""
    h100 = load_hardware("h100-sxm")
    small = _step(h100)
    host = GPT_FAST_7B_OPS * H200_HOST_S
    assert small["decode"]["first_token"]["seconds"] == max(_kernels_alone(h100, 1, 6), host) == host
    assert small["prefill"]["seconds"] == host  # the prefill runs the same modules once
    assert small["decode"]["host"] == {"ops_per_step": 4068, "seconds_per_step": host, "bound": True,
                                       "op_seconds": H200_HOST_S, "op_time_borrowed": True,
                                       "op_time_note": "host time an op: 6.55 us, borrowed from the project's H200 "
                                       "host measurement; your host may differ (a hardware file's module_s_per_op "
                                       "or dispatch_s_per_op, or simulate's --host-op-time, states its own)"}
    large = simulate_inference(load_preset("llama2-7b"), h100, prompt=3999, gen=2, batch=192, dtype="bf16",
                               attention="sdpa", kv_cache="static", time_model="kernels", implementation="gpt-fast")
    kernels = _kernels_alone(h100, 192, 4000)
    # session 37: gpt-fast's eager step also copies every cached key (kernel_facts.json eager_step_copies: its
    # repeat_interleave and sdpa's math backend in fp32), 32 layers x 192 x 4,000 keys at the timer's bandwidth
    from costmodel import symbols as S
    from costmodel.eager_ops import step_copies

    copies = step_copies(load_preset("llama2-7b"), "gpt-fast", "sdpa", "bf16")["parts"].values()
    per_key = sum(int(part.bytes_per_key.xreplace({S.e: 2, S.d_h: 128, S.h: 32, S.h_kv: 32})) for part in copies)
    kernels += 32 * 192 * 4000 * per_key / KernelTimer(h100, "bf16", "sdpa", fused_qkv=True).bandwidth
    assert kernels > host and large["decode"]["first_token"]["seconds"] == pytest.approx(max(kernels, host), rel=1e-12)
    graphs = simulate_inference(load_preset("llama2-7b"), h100, prompt=5, gen=20, batch=1, dtype="bf16",
                                attention="sdpa", kv_cache="static", time_model="kernels",
                                implementation="gpt-fast", cuda_graphs=True)
    assert "host" not in graphs["decode"] and graphs["decode"]["first_token"]["seconds"] < host / 3


def test_a_users_own_figure_wins():
    """A file's dispatch_s_per_op, else its module_s_per_op over it, else the default."""
    h100 = load_hardware("h100-sxm")
    own = h100.replace(dispatch_s_per_op=9e-6)
    assert (own.eager_op_s, own.host_op_borrowed) == (9e-6, False)
    assert _step(own)["decode"]["first_token"]["seconds"] == GPT_FAST_7B_OPS * 9e-6
    assert "op_time_note" not in _step(own)["decode"]["host"]
    module = own.replace(module_s_per_op=1.2e-5)
    assert _step(module)["decode"]["first_token"]["seconds"] == GPT_FAST_7B_OPS * 1.2e-5


def test_simulate_says_the_figure_is_borrowed_and_host_op_time_states_ones_own(capsys):
    import cli

    args = ["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--prompt", "5", "--gen", "20",
            "--decode-code", "gpt-fast", "--attention", "sdpa", "--kv-cache", "static"]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "  host: 4,068 eager ops a step (gpt-fast), 26.6 ms to issue" in text
    assert ("  host time an op: 6.55 us, borrowed from the project's H200 host measurement; your host may "
            "differ") in text
    assert cli.main([*args, "--host-op-time", "1e-5", "--json"]) == 0
    own = json.loads(capsys.readouterr().out)["decode"]["host"]
    assert own["seconds_per_step"] == GPT_FAST_7B_OPS * 1e-5
    assert own["op_time_borrowed"] is False and "op_time_note" not in own
    assert cli.main([*args, "--host-op-time", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --host-op-time is seconds, above 0 and below 1, got 0.0")


def test_amds_eager_mi210_rows_are_their_ops_at_the_borrowed_time():
    """rocm-int8's eager rows (gpt-fast, no compile, end to end over 200 tokens): every step and the
    prefill host-bound, 1 / (ops x 6.545 us): Llama-2-7B 37.56 tokens/s against 33.29 published (1.13x)."""
    from reports.published_decode import decode_run
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "rocm-int8 llama2-7b bf16 eager")
    rate = decode_run(run, data["sources"]["rocm-int8"], "kernels")
    assert rate == pytest.approx(1 / (GPT_FAST_7B_OPS * H200_HOST_S), rel=1e-12)
    assert round(rate, 2) == 37.56 and round(rate / 33.29, 2) == 1.13


def test_a_gpu_serving_step_takes_no_host_term():
    """The serving simulator's kernel step model itself (StepTime, here a vLLM-style profile) weighs no
    host time on a GPU: the borrowed figure leaves it where it was. build_replica adds the host's term for
    the schedulers whose code's ops are counted (costmodel/serving/host_step.py, tests/test_serving_host.py)."""
    from costmodel.serving.steptime import StepTime
    from costmodel.serving.profile import serving_profile

    cfg = load_preset("llama2-7b")
    h100 = load_hardware("h100-sxm")
    step = StepTime(cfg, h100, "bf16", profile=serving_profile(cfg, attention="sdpa"))
    stated = StepTime(cfg, h100.replace(dispatch_s_per_op=1e-3), "bf16", profile=serving_profile(cfg, attention="sdpa"))
    assert step.timer.eager_ops is None and step.eager_step.layers == 0
    assert step.seconds([1, 1], [100, 300]) == stated.seconds([1, 1], [100, 300])


def test_plans_eager_training_note_says_the_figure_is_borrowed():
    """plan's note where some layouts run Hugging Face's eager code (their host ops counted) and others not."""
    from costmodel.planning import host_note

    feasible = [{"host": {"ops_per_step": 2349}}, {"host": {"ops_per_step": 2544}}, {}]
    head = ("2 of the 3 layouts run Hugging Face's eager code, whose step issues 2,349 ops or more "
            "(kernel_facts.json eager_training_ops) at {} us each on the host: each takes the longer of that and "
            "its kernels; the others' code issues ops not counted, so no host time is charged to them.")
    assert host_note(feasible, load_hardware("a100-80gb")) == head.format("7.10")
    assert host_note(feasible, load_hardware("h100-sxm")) == head.format("6.55") + (
        " Host time an op: 6.55 us, borrowed from the project's H200 host measurement; your host may differ (a "
        "hardware file's module_s_per_op or dispatch_s_per_op, or simulate's --host-op-time, states its own).")


def test_host_op_time_under_the_roofline_is_one_error_line(capsys):
    # The roofline counts no ops, so --host-op-time changed nothing there and was read silently (as
    # --graph-kernel-gap without the kernel model is refused); the kernel model still takes it.
    from tests.cli_run import one_error_line

    args = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--prompt", "128", "--gen", "16",
            "--host-op-time", "1e-5"]
    assert one_error_line([*args, "--time-model", "roofline"], capsys) == (
        "error: --host-op-time is the host's time per eager op, which the kernel model weighs against the "
        "kernels; the roofline counts no ops: drop one of them.")
    assert one_error_line([*args[:-1], "0", "--time-model", "roofline"], capsys).startswith(
        "error: --host-op-time is seconds, above 0")  # a bad value is still named first
