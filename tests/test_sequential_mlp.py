"""Megatron-Core's SequentialMLP, the experts without --moe-grouped-gemm (costmodel/layout/sequential_mlp.py):
each local expert's GEMMs at its own tokens, the loop's copies measured by running its code on the CPU
(validate/sequential_mlp_ops.py), their launches, and the host calls (kernel_facts.json megatron_sequential_mlp)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from costmodel.layout import sequential_mlp
from reports.published_runs import other_runs_data, train_setup

QWEN_BF16 = "flagperf-qwen-moe-bf16 qwen1.5-moe-2.7b-8e pp2dp4tp1 8xa800"


@pytest.mark.parametrize("dtype, element", [("bfloat16", 2), ("float32", 4)])
@pytest.mark.parametrize("slots, hidden, experts", [(60, 24, 3), (70, 40, 5), (64, 16, 1)])
def test_the_counts_are_the_loop_measured(dtype, element, slots, hidden, experts):
    """At odd sizes, the loop's kernels and bytes around the experts' products equal kernel_facts' coefficients:
    forward E + 1 kernels and 3 X bytes, backward 7 E - 3 kernels and (6 E + 4) X - 3 X / E bytes (E > 1)."""
    import torch

    from validate.sequential_mlp_ops import loop_kernels

    ops = loop_kernels(slots, hidden, experts, dtype=getattr(torch, dtype))
    x = element * slots * hidden
    counted = (sum(k for _, k, _ in ops["forward"]), sum(k for _, k, _ in ops["backward"]))
    moved = (sum(b for _, _, b in ops["forward"]), sum(b for _, _, b in ops["backward"]))
    assert counted == sequential_mlp.loop_kernels(experts)
    assert moved == sequential_mlp.loop_bytes(x, experts)
    if experts > 1:
        assert counted == (experts + 1, 7 * experts - 3)
        assert moved == (3 * x, (6 * experts + 4) * x - 3 * x // experts)
    else:  # one expert: the zeros and the copy forward, the slice's backward (a fill and a copy) alone
        assert (counted, moved) == ((2, 2), (3 * x, 3 * x))


def _estimate(grouped: bool):
    from costmodel.layout.rank import ParallelEstimate

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == QWEN_BF16)
    estimate, hardware, options = train_setup(run, data["sources"]["flagperf-qwen-moe-bf16"])
    return ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, moe_grouped_gemm=grouped)), \
        hardware, options


def test_flagperf_qwen_moe_runs_sequential_mlp():
    """The FlagPerf script passes no --moe-grouped-gemm: its source states moe_grouped_gemm false."""
    estimate, _, _ = _estimate(False)
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == QWEN_BF16)
    stated, _, _ = train_setup(run, data["sources"]["flagperf-qwen-moe-bf16"])
    assert stated.layout.moe_grouped_gemm is False and sequential_mlp.applies(stated)


def test_one_layer_on_the_flagperf_row():
    """8 local experts, 8,192 tokens x top 2 = 16,384 slots of 2,048 in bf16: X = 67,108,864 bytes; the loop moves
    3 X forward and 52 X - 3 X / 8 backward; 9 + 53 loop kernels and 21 + 35 expert kernels beyond the grouped
    path's 3 + 5; each of the tree's grouped Gemms (8 experts of 2,048 rows) as 8 Gemms of one expert."""
    from costmodel.kernel_shapes import Gemm
    from costmodel.kernel_time import kernels_seconds
    from costmodel.layout.kernel_step import KernelStepTime, rank_kernels

    estimate, hardware, options = _estimate(False)
    x = 2 * 16384 * 2048
    assert sequential_mlp.tokens_bytes(estimate) == x == 67_108_864
    assert sequential_mlp.loop_bytes(x, 8) == (201_326_592, 3_464_495_104)
    assert sequential_mlp.extra_launches(8) == 9 + 53 + 21 + 35 == 118
    assert sequential_mlp.extra_calls(8) == (33, 21)
    step = KernelStepTime(estimate, hardware, overlap=options["overlap"])
    timer = step.timer
    entries = rank_kernels(estimate, timer.fused_attention, timer.compiled)
    experts = [kernels for (_, _, _, kernels), work in zip(entries, estimate.structure["work"]) if work.get("experts")]
    assert len(experts) == 1
    gemms = [k for k in experts[0] if isinstance(k, Gemm)]
    assert gemms == [Gemm(2048, 11008, 2048, 8, grouped_rows=2048), Gemm(2048, 2048, 5504, 8, grouped_rows=2048)]
    def pair(g: Gemm) -> float:
        return 8 * kernels_seconds([replace(g, count=1)], timer, True) - kernels_seconds([g], timer, True)
    gemm = pair(gemms[0]) + pair(gemms[1])
    assert sequential_mlp.gemm_delta(experts[0], [], timer) == pytest.approx(gemm, rel=1e-12)
    expected = gemm + (201_326_592 + 3_464_495_104) / timer.bandwidth + 118 * hardware.overhead_s_per_block / 2
    assert timer.bandwidth == pytest.approx(0.8 * 2.039e12)
    assert sequential_mlp.layer_seconds(estimate, hardware, experts[0], [], timer) == pytest.approx(expected, rel=1e-12)
    # the step: 12 MoE layers a stage, 128 micro-batches; the first computed figure kept
    assert expected == pytest.approx(3.2023e-3, rel=1e-4)


def _simulate(*extra):
    from click.testing import CliRunner

    import cli

    return CliRunner().invoke(cli.cli, ["simulate", "--model", "mixtral-8x7b", "--train", "--hardware", "a100-80gb",
                                        "--dp", "8", "--ep", "4", "--seq-len", "1024", "--batch", "1", *extra])


def test_simulate_no_moe_grouped_gemm():
    """Mixtral 8x7B with 2 local experts a rank: the step grows and the layout line says so."""
    steps = []
    for extra in ((), ("--no-moe-grouped-gemm",)):
        result = _simulate("--framework", "megatron", "--time-model", "kernels", "--json", *extra)
        assert result.exit_code == 0, result.output
        steps.append(json.loads(result.output[result.output.index("{"):])["step"]["seconds"])
    assert steps[1] > steps[0]
    text = _simulate("--framework", "megatron", "--time-model", "kernels", "--no-moe-grouped-gemm")
    assert "the experts one after another (SequentialMLP)" in text.output


def test_bad_input_is_one_line():
    fsdp2 = _simulate("--framework", "fsdp2", "--no-moe-grouped-gemm")  # DeepSpeed's is transformers 4.x's loop
    assert fsdp2.exit_code == 2 and "Megatron-Core's SequentialMLP" in fsdp2.output
    from click.testing import CliRunner

    import cli

    dense = CliRunner().invoke(cli.cli, ["simulate", "--model", "llama3-8b", "--train", "--hardware", "a100-80gb",
                                         "--dp", "8", "--framework", "megatron", "--no-moe-grouped-gemm"])
    assert dense.exit_code == 2 and "no routed experts" in dense.output
