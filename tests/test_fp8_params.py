"""Megatron-Core's FP8 parameters (--fp8-param-gather; costmodel/layout/fp8.py FP8_PARAM_RECIPES) and
delayed scaling's amax all-reduces (ParallelEstimate.amax_reductions). The first: the distributed
optimizer's parameter buffer holds an FP8 weight as torch.uint8 (param_and_grad_buffer.py
group_params_for_buffers), one byte a linear-layer parameter with no bf16 copy, all-gathered so; the
forward casts no weight (its transpose still made). The second: one all-reduce of the chunk's
forward amaxes and one of its backward ones per model chunk and micro-batch, over TP x DP x CP
(get_amax_reduction_group) or TP x CP (--tp-only-amax-red). Exact bytes for one layout (Llama 3 8B
over 8 data-parallel ranks, Llama 2 70B at TP 4 PP 4 VP 5), and the one-line refusals."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.collectives import collective_seconds
from costmodel.kernel_shapes import Gemm
from costmodel.layout.fp8 import amax_reduction_bytes
from costmodel.layout.fp8_casts import CAST_PASSES, cast_bytes

# Llama 3 8B (32 layers, d 4096, 8 KV heads of 128, FFN 14,336, vocabulary 128,256, untied)
LAYER_LINEARS = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336  # 218,103,808
PARAMS = 8_030_261_248
FP8_PARAMS = 32 * LAYER_LINEARS  # 6,979,321,856: Q/K/V, output, gate, up, down
LLAMA3 = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100-sxm", "--seq-len", "8192", "--batch", "1",
          "--dtype", "bf16", "--attention", "flash", "--impl", "megatron", "--framework", "megatron", "--zero", "1",
          "--dp", "8", "--microbatches", "16", "--fp8", "delayed", "--json"]


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fp8_parameters_take_one_byte_held_and_gathered(capsys):
    """bf16: 2 bytes a parameter held and gathered; FP8 parameters: the 6,979,321,856 linear weights
    1 byte, the embedding, head and norms (1,050,939,392) 2. The gradients, optimizer state and the
    reduce-scatter do not move; the gather's exposed seconds fall."""
    assert LAYER_LINEARS == 218_103_808 and FP8_PARAMS == 6_979_321_856
    out = {}
    for flags in ([], ["--fp8-param-gather"]):
        code, text, _ = run(LLAMA3 + flags, capsys)
        assert code == 0
        out[bool(flags)] = json.loads(text)
    bf16, fp8 = out[False], out[True]
    assert bf16["parallel"]["per_rank"]["weights"] == 2 * PARAMS == 16_060_522_496
    assert fp8["parallel"]["per_rank"]["weights"] == 2 * PARAMS - FP8_PARAMS == 9_081_200_640
    assert bf16["parallel"]["communication"]["dp"] == {"reduce_scatter": 4 * PARAMS, "all_gather": 2 * PARAMS}
    assert fp8["parallel"]["communication"]["dp"] == {"reduce_scatter": 4 * PARAMS, "all_gather": 9_081_200_640}
    for key in ("gradients", "optimizer", "activations"):
        assert fp8["parallel"]["per_rank"][key] == bf16["parallel"]["per_rank"][key]
    assert fp8["step"]["exposed_communication_seconds"]["dp"] < bf16["step"]["exposed_communication_seconds"]["dp"]
    assert fp8["parallel"]["layout"]["fp8_param_gather"] is True
    assert "fp8_param_gather" not in bf16["parallel"]["layout"]


def test_fp8_parameters_skip_the_weights_cast_not_its_transpose():
    """One GEMM (37 x 23 x 19), 4 micro-batches, Hopper: delayed casts the weight (3 bytes) and
    transposes it (1) once a step; with FP8 parameters only the transpose; current also drops the
    weight's amax (2). Inputs and gradients alike either way."""
    gemm = [Gemm(37, 23, 19)]
    weight = 23 * 19 / 4
    for recipe, dropped in (("delayed", 3), ("current", 2 + 3)):
        plain = cast_bytes(gemm, CAST_PASSES[recipe], needs_tn=True, microbatches=4)
        fp8 = cast_bytes(gemm, CAST_PASSES[recipe], needs_tn=True, microbatches=4, fp8_params=True)
        assert (plain[0] - fp8[0], plain[1] - fp8[1]) == (dropped * weight, 0), recipe


def test_amax_buffers_and_the_all_reduces_of_one_step():
    """Per FP8 GEMM 3 forward and 2 backward fp32 amaxes: a Llama layer's 4 TE GEMMs all-reduce 48
    bytes after its forward and 32 in its backward (a 4-layer chunk 192 and 128); NeMo 24.07's Llama 2
    70B at TP 4 PP 4 VP 20 (80 layers: 20 one-layer chunks a rank) 40 a micro-batch, each
    latency-bound over TP x DP = 16 ranks (Megatron-Core's default) or TP = 4 (--tp-only-amax-red,
    the row's), 32 micro-batches a step."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    assert amax_reduction_bytes(16) == {"forward": 192, "backward": 128}
    data = json.load(open("costmodel/published_runs.json"))
    source = data["sources"]["nemo-24.07"]
    row = next(r for r in data["runs"] if r["id"] == "nemo-24.07 llama2-70b 64xh100")
    hardware = load_hardware("h100-sxm")
    for tp_only, ranks in ((True, 4), (False, 16)):
        estimate, _, options = train_setup(row, {**source, "tp_only_amax_red": tp_only})
        stage = estimate.stages[0]
        assert estimate.amax_reductions(stage) == [48, 32] * 20
        timer = step_time(estimate, hardware, **options)
        each = [collective_seconds(hardware, "all_reduce", b, ranks, ranks, dtype="fp32") for b in (48, 32)]
        assert timer.stage(stage)["amax"] == pytest.approx(20 * sum(each), rel=1e-12)
        assert timer.step()["exposed_communication_seconds"]["amax"] == pytest.approx(
            32 * timer.stage(timer.estimate.stages[timer.step()["slowest_stage"]])["amax"], rel=1e-12)


def test_no_amax_all_reduce_without_delayed_scaling_or_a_group(capsys):
    """Current scaling reduces no amax history; one GPU has no group to reduce over."""
    code, text, _ = run(LLAMA3[:LLAMA3.index("--dp")] + ["--tp", "2", "--dp", "4", "--sp", "--microbatches", "16",
                                                          "--fp8", "current", "--json"], capsys)
    assert code == 0 and "amax" not in json.loads(text)["step"]["exposed_communication_seconds"]
    code, text, _ = run(["simulate", "--train", "--model", "gpt2", "--hardware", "h100-sxm", "--framework", "megatron",
                         "--dp", "1", "--fp8", "delayed", "--json"], capsys)
    assert code == 0 and "amax" not in json.loads(text)["step"]["exposed_communication_seconds"]


@pytest.mark.parametrize("flags, message", [
    (["--fp8", "mxfp8", "--fp8-param-gather"], "layout: FP8 parameters (--fp8-param-gather) are modelled with --fp8 "
     "current or delayed (Transformer Engine's per-tensor Float8Tensor); here --fp8 mxfp8."),
    (["--fp8-param-gather", "--framework", "megatron"], "layout: FP8 parameters (--fp8-param-gather) are modelled "
     "with --fp8 current or delayed (Transformer Engine's per-tensor Float8Tensor); here no --fp8."),
    (["--fp8", "delayed", "--fp8-param-gather", "--framework", "fsdp2"], "layout: --fp8-param-gather under "
     "--framework fsdp2 is torchao's float8 all-gather (enable_fsdp_float8_all_gather), for --fp8 tensorwise; "
     "here --fp8 delayed."),
    (["--fp8", "current", "--fp8-param-gather", "--framework", "deepspeed"], "layout: --fp8-param-gather is "
     "Megatron-Core's, on its distributed optimizer (--framework megatron --zero 1), and torchao's FSDP2 float8 "
     "all-gather (--framework fsdp2 --fp8 tensorwise); here deepspeed with --zero 0."),
    (["--fp8", "current", "--tp-only-amax-red", "--framework", "megatron"], "layout: --tp-only-amax-red is "
     "Megatron-Core's amax reduction group of delayed scaling (--framework megatron --fp8 delayed)."),
])
def test_bad_input_is_one_line(capsys, flags, message):
    code, out, err = run(["simulate", "--train", "--model", "llama2-7b", "--hardware", "b200", "--gpus", "8",
                          "--dp", "8"] + flags, capsys)
    assert (code, out, err.strip()) == (2, "", f"error: {message}")


def test_mixtral_experts_gather_one_byte_over_their_own_group():
    """NeMo 25.02's Mixtral 8x7B (EP 8 of DP 64): the dense part over DP 64, the rank's 1 of 8
    experts (5,637,144,576 parameters, all FP8) over the expert-data-parallel 8. Mixtral 8x7B:
    experts 32 x 8 x 3 x 4096 x 14,336 = 45,097,156,608; attention 32 x (4096 x 6144 + 4096^2) =
    1,342,177,280 (FP8); embedding and head 2 x 32,000 x 4096, router 32 x 4096 x 8, norms 65 x 4096
    (bf16): 1,605,636,096 dense in all."""
    from reports.published_runs import train_setup

    experts, attention, dense = 45_097_156_608, 1_342_177_280, 1_605_636_096
    assert attention + 2 * 32_000 * 4096 + 32 * 4096 * 8 + 65 * 4096 == dense
    local = experts // 8
    data = json.load(open("costmodel/published_runs.json"))
    row = next(r for r in data["runs"] if r["id"] == "nemo-25.02 mixtral-8x7b 64xb200")
    estimate, _, _ = train_setup(row, data["sources"]["nemo-25.02"])
    stage = estimate.stages[0]
    assert estimate.fp8_parameters(stage) == (attention, experts)
    communication = estimate.communication(stage)
    assert communication["dp"]["all_gather"] == 2 * dense - attention == 1_869_094_912
    assert communication["edp"]["all_gather"] == local == 5_637_144_576
    assert estimate.per_rank["weights"] == 2 * (dense + local) - (attention + local) == 7_506_239_488


def test_the_published_rows_that_state_them():
    """NeMo 25.02 (bf16_with_fp8_mixed: fp8_params True) gathers FP8 parameters and reduces amaxes over
    TP x DP x CP; NeMo 24.07 over TP x CP (core_r0.8.0); Megatron-Bridge's FP8-CS rows on the
    distributed optimizer gather FP8 parameters (fp8_cs -> bf16_with_fp8_current_scaling_mixed), dense
    and MoE, their Megatron-FSDP, BF16, MXFP8 and NVFP4 rows not."""
    from reports.published_runs import train_setup

    data = json.load(open("costmodel/published_runs.json"))
    typed = {}
    for row in data["runs"]:
        family = row["id"].split()[0]
        if family in ("nemo-24.07", "nemo-25.02", "megatron-bridge", "megatron-bridge-moe"):
            layout = train_setup(row, data["sources"][family])[0].layout
            typed.setdefault(family, set()).add((layout.fp8, layout.zero, layout.fp8_param_gather,
                                                 layout.tp_only_amax_red))
    assert typed["nemo-25.02"] == {("delayed", 1, True, False)}
    assert typed["nemo-24.07"] == {("delayed", 1, False, True)}
    assert typed["megatron-bridge"] == {("current", 1, True, False), ("current", 3, False, False),
                                        ("mxfp8", 1, False, False), ("nvfp4", 1, False, False)}
    assert typed["megatron-bridge-moe"] == {("current", 1, True, False), (None, 1, False, False),
                                            ("mxfp8", 1, False, False), ("mxfp8", 3, False, False),
                                            ("nvfp4", 1, False, False)}


def test_interleaved_gathers_weigh_each_chunks_bytes():
    """Llama 2 7B at PP 2 VP 2 over DP 8 with FP8 parameters: rank 0's chunk 0 holds 1,750,138,880
    parameters (16 layers' 1,619,001,344 FP8 linear weights, their norms and the bf16 embedding),
    chunk 1 1,619,066,880: 1,881,276,416 and 1,619,132,416 bytes gathered, the stage's all-gather
    (3,500,408,832) split so, not by parameters (chunk 0 would then gather 52%, not 54%). With the
    reduce exposed (Overlap.dp 0) what remains exposed is chunk 0's whole gather: chunk 1's hides under
    the two forwards before its first."""
    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import Overlap, StepTime
    from costmodel.presets import load_preset

    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=4096, attention="flash", impl="megatron"),
                                Layout(pp=2, dp=8, zero=1, microbatches=2, schedule="interleaved", virtual_stages=2,
                                       framework="megatron", fp8="delayed", fp8_param_gather=True))
    stage = estimate.stages[0]
    assert estimate.on_chunks(stage, "params") == (1_750_138_880, 1_619_066_880)
    assert estimate.on_chunks(stage, "fp8_params") == (1_619_001_344, 1_619_001_344)
    gathered = (2 * 1_750_138_880 - 1_619_001_344, 2 * 1_619_066_880 - 1_619_001_344)
    assert gathered == (1_881_276_416, 1_619_132_416)
    dp = estimate.communication(stage)["dp"]
    assert dp["all_gather"] == sum(gathered) == 3_500_408_832
    timer = StepTime(estimate, load_hardware("h100-sxm"), overlap=Overlap(dp=0.0, params=1.0, slowdown=0.0))
    exposed, _ = timer.data_parallel_split(stage, timer.stage(stage)["compute"])
    reduce = timer.collective("dp", "reduce_scatter", dp["reduce_scatter"])
    assert exposed - reduce == pytest.approx(timer.collective("dp", "all_gather", gathered[0]), rel=1e-12)
    by_params = timer.collective("dp", "all_gather", dp["all_gather"] * 1_750_138_880 / (1_750_138_880 + 1_619_066_880))
    assert exposed - reduce != pytest.approx(by_params, rel=1e-3)


ESTIMATE = ["estimate", "--seq-len", "4096", "--batch", "1", "--dtype", "bf16", "--framework", "megatron",
            "--zero", "1", "--dp", "8", "--microbatches", "4", "--fp8", "delayed", "--json"]


@pytest.mark.parametrize("model, extra, params, fp8_params", [
    ("llama3-8b", [], PARAMS, FP8_PARAMS),
    # Mixtral 8x7B: 32 layers of attention (4096 x 6144 + 4096 x 4096 = 41,943,040) and eight experts
    # (8 x 3 x 4096 x 14,336 = 1,409,286,144); the router, norms and 32,000-row tables stay bf16
    ("mixtral-8x7b", ["--ep", "8"], 46_702_792_704, 32 * (41_943_040 + 1_409_286_144)),
    # Nemotron 3 Nano: 23 Mamba-2 mixers' in_proj (2,688 x 10,304: z, x, B, C, dt) and out_proj
    # (4,096 x 2,688), TE modules under the recipe's context (layout/fp8.py fp8_blocks), 890,265,600;
    # 6 attention layers (2,688 x 4,608 + 4,096 x 2,688), 140,378,112; 23 MoE layers' 128 experts
    # (2 x 2,688 x 1,856 each) and shared expert (2 x 2,688 x 3,712), 29,833,789,440. The mixers'
    # conv1d, gated norm, dt_bias, A_log and D, the router, norms and tables stay bf16.
    ("nemotron-3-nano", ["--ep", "8"], 31_577_937_344, 890_265_600 + 140_378_112 + 29_833_789_440),
])
def test_estimate_whole_model_weights_under_fp8_parameters(capsys, model, extra, params, fp8_params):
    """estimate's whole-model lines hold what Megatron-Core keeps under --fp8-param-gather: the FP8
    layers' parameters one byte each, no bf16 copy (the whole model's, every expert included), the
    rest two; the training total falls by the same bytes, the per-rank lines by theirs; the text's
    weights line says so. Inference is served without the training layout: unchanged."""
    out = {}
    for flags in ([], ["--fp8-param-gather"]):
        code, text, _ = run(ESTIMATE + ["--model", model, *extra, *flags], capsys)
        assert code == 0
        out[bool(flags)] = json.loads(text)["memory"]
    bf16, fp8 = out[False], out[True]
    assert bf16["weights"] == 2 * params and "fp8_parameters" not in bf16
    assert fp8["fp8_parameters"] == fp8_params
    assert fp8["weights"] == 2 * params - fp8_params
    assert fp8["training_total"] == bf16["training_total"] - fp8_params
    for key in ("gradients", "optimizer", "activations", "inference_total", "generate_total"):
        assert fp8[key] == bf16[key]
    assert fp8["bytes_per_param"] == {**bf16["bytes_per_param"], "fp8_weights": 1}
    code, text, _ = run([a for a in ESTIMATE if a != "--json"] + ["--model", model, *extra, "--fp8-param-gather"],
                        capsys)
    assert code == 0
    assert "(2 B/param; 1 B for the " in text and "parameters of the FP8 layers: --fp8-param-gather" in text
