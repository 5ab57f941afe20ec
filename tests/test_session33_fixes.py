"""Session 33's review findings fixed (validate/FINDINGS.md, "Review of session 33's merged work"):
the A100 int4 GEMV entry matched by its die, not its preset's name; one rule for a PCIe ring call's
time in the kernel model and the serving roofline; the two offload suggesters saying which question
each answers."""

from __future__ import annotations

import pytest

from costmodel.hardware import Hardware, load_hardware
from costmodel.kernel_time import KernelTimer


def _renamed(preset: str, name: str) -> Hardware:
    """A user's copy of a preset under another name, as `hardware --show` edited or `hardware --measure
    --like PRESET` writes it (validate/hardware_file.measure_file: like.to_dict(), its name replaced)."""
    data = load_hardware(preset).to_dict()
    data["name"] = name
    return Hardware.from_dict(data, name)


def test_a_renamed_a100_keeps_the_a100s_int4_figure_and_a_renamed_a10_the_a10s():
    # kernel_facts.json weight_only_gemv, int4: the A100 entry (gemlite, 0.730 of the GEMV rate, by blocks
    # from 512: 0.833) on any Ampere file of 108 SMs; the A10's Marlin figure (0.928, no blocks) on the rest.
    for name in ("my-a100", "local"):
        timer = KernelTimer(_renamed("a100-80gb", name), "bf16")
        kernel = timer.weight_only_gemv["int4"]
        assert kernel.rate == pytest.approx(timer.gemv_bandwidth * 0.730)
        assert kernel.by_blocks[0] == (512.0, 0.833)
    a10 = KernelTimer(_renamed("a10", "my-a10"), "bf16").weight_only_gemv["int4"]
    assert a10.by_blocks == () and a10.rate == pytest.approx(KernelTimer(load_hardware("a10"), "bf16").gemv_bandwidth * 0.928)


def test_the_serving_roofline_times_a_pcie_rings_calls_as_the_kernel_model_does():
    # 2 x L40S (intra_node_fabric "pcie", 32 GB/s a direction, collective_latency_s 10 us), Llama 2 7B
    # (32 layers, d 4,096, bf16), one decode token a step: each of the 64 all-reduces moves 8,192 B,
    # a ring of 2 ranks 2 steps: LL 6.6 + 2 x 1.0 us + 8,192 B / 16 GB/s = 9.112 us (Simple: 8.4 +
    # 2 x 5.7 + 0.256 = 20.056), NCCL's tuning.cc constants; the flat rule gave 10.256 us a call.
    from costmodel import load_model
    from costmodel.collectives import within_node
    from costmodel.serving.roofline_steptime import RooflineStepTime

    hardware = load_hardware("l40s")
    step = RooflineStepTime(load_model("llama2-7b"), hardware, tp=2)
    assert step.communication_seconds(1) == pytest.approx(64 * 9.112e-6)
    # the kernel model's within_node reads the same rule (collectives.call_seconds) at its own link, 0.8
    # of the spec (nccl_facts.json link_efficiency): LL 8.6 us + 8,192 B / 12.8 GB/s = 9.24 us a call
    assert within_node(hardware, "all_reduce", 64 * 8192, 2, calls=64) == pytest.approx(64 * 9.24e-6)
    # a node without the PCIe fabric keeps its flat latency: the A100's NVLink ring, 10 us a call
    a100 = load_hardware("a100-80gb")
    nvlink = RooflineStepTime(load_model("llama2-7b"), a100, tp=2)
    assert nvlink.communication_seconds(1) == pytest.approx(64 * (8192 / a100.link(2) + a100.collective_latency_s))


def test_the_two_offload_suggesters_say_which_question_each_answers(capsys):
    # Llama 3 8B at 2,048 tokens on 2 x RTX 4090: estimate's list keeps the run's recompute and offers
    # ZeRO-Infinity (14.11 GiB); plan's line takes the leanest DeepSpeed layout and names ZeRO-Offload with
    # full recomputation (10.22 GiB). Each output now says which question it answers.
    from tests.cli_run import run_main

    args = ["--model", "llama3-8b", "--hardware", "rtx-4090", "--gpus", "2", "--seq-len", "2048"]
    _, estimate, _ = run_main(["estimate", *args], capsys)
    assert "To make it fit (cheapest first; each changes only what it names, the run as given otherwise):" in estimate
    assert "--dp 2 --zero 3 --offload params" in estimate and "14.11 GiB" in estimate
    code, plan, _ = run_main(["plan", *args], capsys)
    assert code == 1  # no layout plan times fits
    assert "--dp 2 --zero 3 --offload optimizer --recompute full --batch 1" in plan and "10.22 GiB" in plan
    assert "the first of ZeRO-Offload and ZeRO-Infinity that fits in the leanest DeepSpeed layout" in plan
