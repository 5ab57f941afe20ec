"""Collectives at NCCL's measured bus bandwidth (issue 18), and the static KV cache and CUDA
graphs with a layout."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.collectives import collective_seconds, interpolated_busbw, busbw_curve
from costmodel.hardware import load_hardware


def test_an_a100_node_all_reduce_takes_the_measured_time():
    # nccl-tests on 8 A100s (ml-engineering's table): 1 GiB in 8,203.9 us (busbw 229.04 GB/s),
    # 32 KiB in 43.83 us; in between, busbw is interpolated in log(bytes).
    a100 = load_hardware("a100-80gb")
    assert collective_seconds(a100, "all_reduce", 2**30, 8, 8) == pytest.approx(8203.9e-6, rel=0.002)
    assert collective_seconds(a100, "all_reduce", 32768, 8, 8) == pytest.approx(43.83e-6, rel=0.002)
    curve = busbw_curve(a100)
    assert 138.49e9 < interpolated_busbw(curve, 50e6) < 171.54e9
    # Sixty-four calls of 1 MiB cost far more than one of 64 MiB (latency, not bandwidth).
    many = collective_seconds(a100, "all_reduce", 64 * 2**20, 8, 8, calls=64)
    assert many > 5 * collective_seconds(a100, "all_reduce", 64 * 2**20, 8, 8)


def test_without_a_curve_alpha_beta_at_eighty_percent_of_the_link():
    mi300x = load_hardware("mi300x")
    seconds = collective_seconds(mi300x, "all_gather", 1e9, 8, 8, calls=4)
    assert seconds == pytest.approx(1e9 * 7 / 8 / (448e9 * 0.8) + 4 * 1e-5)


def test_a_group_across_nodes_runs_hierarchically():
    # 16 ranks over two A100 nodes: reduce-scatter in the node, an all-reduce of each GPU's 1/8
    # between the 2 nodes at 73% of its 25 GB/s NIC, all-gather in the node.
    a100 = load_hardware("a100-80gb")
    payload = 2**30
    inside = 2 * collective_seconds(a100, "all_gather", payload, 8, 8)
    crossing = payload / 8 * 1.0 / (25e9 * 0.73) + 1e-5
    assert collective_seconds(a100, "all_reduce", payload, 16, 16) == pytest.approx(inside + crossing)
    # A data-parallel group strided by tensor parallelism 8 has one rank a node: all of it crosses.
    assert collective_seconds(a100, "all_reduce", payload, 4, 32) == pytest.approx(payload * 2 * 3 / 4 / (25e9 * 0.73) + 1e-5)


def test_a_static_cache_and_cuda_graphs_are_honoured_with_a_layout(capsys):
    args = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--tp", "2", "--batch", "32",
            "--prompt", "2048", "--gen", "256", "--attention", "sdpa", "--json"]
    seconds = {}
    for extra in ([], ["--kv-cache", "static"], ["--kv-cache", "static", "--cuda-graphs"]):
        assert cli.main(args + extra) == 0
        seconds[" ".join(extra)] = json.loads(capsys.readouterr().out)["token"]["seconds_per_token"]
    dynamic, static, graphed = seconds.values()
    assert static < 0.6 * dynamic  # no torch.cat copy of the cache every step
    # Every rank runs all 32 layers at tp 2. The kernel model (the default): 9 launching leaves a
    # layer (one fused attention call stands for the scores, softmax and weighted sum) and 3 more,
    # 10 us each.
    assert static - graphed == pytest.approx((32 * 9 + 3) * 1e-5, rel=1e-6)
    # The roofline: 11 active blocks a layer (the fused kernel's softmax and weighted sum still
    # count as blocks there) and 3 more.
    roofline = {}
    for extra in (["--kv-cache", "static"], ["--kv-cache", "static", "--cuda-graphs"]):
        assert cli.main(args + extra + ["--time-model", "roofline"]) == 0
        roofline[" ".join(extra)] = json.loads(capsys.readouterr().out)["token"]["seconds_per_token"]
    static, graphed = roofline.values()
    assert static - graphed == pytest.approx((32 * 11 + 3) * 1e-5, rel=1e-6)


def test_plan_serve_takes_the_static_cache(capsys):
    args = ["plan", "--model", "llama2-7b", "--hardware", "a100-80gb", "--gpus", "2", "--serve", "--batch", "32",
            "--prompt", "2048", "--gen", "256", "--json"]
    assert cli.main(args) == 0
    dynamic = json.loads(capsys.readouterr().out)["feasible"][0]["time_per_output_token"]
    assert cli.main(args + ["--kv-cache", "static"]) == 0
    static = json.loads(capsys.readouterr().out)["feasible"][0]["time_per_output_token"]
    assert static < 0.6 * dynamic


def test_the_overlap_conventions_are_settable():
    from costmodel.config import ConfigError, Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import Overlap, StepTime
    from costmodel.presets import load_preset

    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=4096, attention="sdpa"),
                                Layout(tp=2, dp=8, microbatches=4, framework="megatron"))
    hw = load_hardware("a100-80gb")
    default = StepTime(estimate, hw).step()
    hidden = StepTime(estimate, hw, overlap=Overlap(tp=1.0)).step()
    after = StepTime(estimate, hw, overlap=Overlap(dp=0.0)).step()
    assert default["exposed_communication_seconds"]["tp"] > 0 == hidden["exposed_communication_seconds"]["tp"]
    assert default["seconds"] - hidden["seconds"] == pytest.approx(default["exposed_communication_seconds"]["tp"])
    assert after["exposed_communication_seconds"]["dp"] > default["exposed_communication_seconds"]["dp"]
    with pytest.raises(ConfigError, match="overlap dp"):
        Overlap(dp=1.5)
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--train", "--tp", "2", "--dp", "4",
                     "--dp-overlap", "2"]) == 2
