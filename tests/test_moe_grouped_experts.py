"""Routed experts as one grouped GEMM per weight matrix (expert_kernels.grouped_gemms): the kernels a
decode step runs, the experts' bytes they read at a batch, and their time against per-expert GEMMs.
Shapes are DeepSeek-V3's (hidden 7,168, expert width 2,048, 256 experts, top-8, 58 MoE layers,
fp8 weights in 128 x 128 blocks with an fp32 scale each) and Mixtral 8x7B's (4,096, 14,336, 8
experts, top-2), from their presets (the models' config.json)."""

import math

import pytest

from costmodel.kernel_shapes import Gemm, Pointwise


def _deepseek_experts(batch: int, layout: dict | None = None) -> list:
    """The experts' kernels of one MoE layer of a tp 8 rank (or `layout`'s) in a decode step of
    `batch` sequences (the layout path simulate and plan use), fp8 weights as the checkpoint
    stores them."""
    from costmodel.api import make_workload
    from costmodel.checkpoint import inference_options
    from costmodel.layout import Layout
    from costmodel.layout.kernel_step import rank_kernels
    from costmodel.layout.rank import ParallelEstimate
    from costmodel.presets import load_preset

    cfg = load_preset("deepseek-v3")
    options = inference_options(cfg, {"weight_dtype": None, "weight_group": None, "kv_dtype": None})
    options.pop("weight_dtype_source")
    workload, _ = make_workload(cfg, 512, batch=batch, gen_tokens=256, precision="pure", **options)
    estimate = ParallelEstimate(cfg, workload, Layout(**(layout or {"tp": 8})), phase="decode")
    work = estimate.structure["work"]
    entries = rank_kernels(estimate, fused_attention=True, compiled=False)
    (kernels,) = [entry[3] for entry, w in zip(entries, work) if w["experts"] and any(
        isinstance(k, Gemm) and k.count > 1 for k in entry[3])]
    return kernels


# One expert's matrices on a tp 8 rank, as stored: gate_up (7,168 -> 2 x 2,048 / 8 = 512) and down
# (256 -> 7,168), fp8 values and a 4-byte scale per 128 x 128 block.
GATE_UP_BYTES = 512 * 7168 + 4 * (512 // 128) * (7168 // 128)  # 3,670,912
DOWN_BYTES = 7168 * 256 + 4 * (7168 // 128) * (256 // 128)  # 1,835,456


@pytest.mark.parametrize("batch, touched, rows", [(1, 8, 1), (8, 58, 2), (25, 141, 2), (64, 223, 3)])
def test_deepseek_v3_decode_runs_two_grouped_gemms_over_the_touched_experts(batch, touched, rows):
    """Whatever the batch, a layer's experts are two GEMM launches (gate_up, down) and the gating's
    memory-bound kernel; each GEMM covers the experts that b tokens' top-8 of 256 touch under
    uniform random routing, 256 (1 - (31/32)^b) (blocks/experts.py experts_touched), rounded up:
    b = 1: 8 exactly; b = 8: 57.42 -> 58; b = 25: 140.25 -> 141; b = 64: 222.44 -> 223 (the worst
    case min(256, 8 b) read 64, 200 and 256). Each has the most loaded expert's rows,
    ceil(8 b / touched): 1, ceil(64 / 58) = 2, ceil(200 / 141) = 2, ceil(512 / 223) = 3 (before:
    one GEMM per touched expert and matrix, 400 launches a layer at batch 25)."""
    kernels = _deepseek_experts(batch)
    gemms = [k for k in kernels if isinstance(k, Gemm)]
    assert [type(k) for k in kernels] == [Gemm, Gemm, Pointwise]
    assert [(g.m, g.n, g.k, g.count) for g in gemms] == [(rows, 512, 7168, touched), (rows, 7168, 256, touched)]
    assert [g.weight_bytes for g in gemms] == [GATE_UP_BYTES, DOWN_BYTES]
    assert [g.weight_dtype for g in gemms] == ["fp8", "fp8"]


def test_deepseek_v3_batch_25_reads_141_experts_weights_once_each():
    """At batch 25 a rank reads 141 experts' shards a layer (256 (1 - (31/32)^25) = 140.25, a split
    expert counted whole), each once: 141 x 5,506,368 bytes (the worst case, 200 experts, read
    1,101,273,600)."""
    gemms = [k for k in _deepseek_experts(25) if isinstance(k, Gemm)]
    assert sum(g.count * g.weight_bytes for g in gemms) == 141 * (GATE_UP_BYTES + DOWN_BYTES) == 776_397_888


@pytest.mark.parametrize("batch, touched, rows", [(1, 8, 1), (25, 32, 7)])
def test_an_expert_parallel_rank_reads_the_experts_it_holds(batch, touched, rows):
    """EP 8 over dp 8: a rank holds 256 / 8 = 32 experts and takes the slots that the 8 ranks'
    tokens route to them, so it touches 32 (1 - (31/32)^(8 b)) of its own (blocks/experts.py
    Experts.cost): b = 1: 7.18 -> 8, each with ceil(8 / 8) = 1 row (its b k = 8 slots, balanced);
    b = 25: 31.94 -> 32, ceil(200 / 32) = 7 rows. Untouched by tensor parallelism, each expert's
    matrices whole: gate_up 7,168 -> 4,096, down 2,048 -> 7,168. Before, the rank's tree read the
    experts that its own b tokens touch among all 256 (min(256, 8 b): 8 and 200 of 1 row), the
    weights of experts it does not hold."""
    gemms = [k for k in _deepseek_experts(batch, {"dp": 8, "ep": 8}) if isinstance(k, Gemm)]
    assert [(g.m, g.n, g.k, g.count) for g in gemms] == [(rows, 4096, 7168, touched), (rows, 7168, 2048, touched)]


def _mixtral_experts(batch: int):
    from costmodel.hardware import load_hardware
    from costmodel.kernel_time import KernelTimer, inference_subs
    from costmodel.presets import load_preset
    from costmodel.roofline import Roofline

    cfg, hardware = load_preset("mixtral-8x7b"), load_hardware("a100-80gb")
    roof = Roofline(cfg, hardware, "bf16", None, "sdpa", "static", True, {})
    leaf = next(x for x in roof.decoder_tree().leaves if x.path == "decoder.layer.ffn.experts")
    timer = KernelTimer(hardware, "bf16", "sdpa", cuda_graphs=True)
    return leaf, inference_subs(cfg, "bf16", batch, 1, context=600), timer


def test_mixtral_batch_25_pads_each_experts_rows_to_the_most_loaded():
    """50 slots over 8 experts: 8 (1 - (3/4)^25) = 7.994 of them expected touched, counted whole: every
    expert is read once, its rows the most loaded expert's ceil(50 / 8) = 7 (fused_moe pads each expert's rows to its block); before, 50 / 8 rows did not
    divide and the experts fell back to a shapeless memory-bound kernel."""
    from costmodel.kernel_time import leaf_kernels

    leaf, subs, timer = _mixtral_experts(25)
    gemms = [k for k in leaf_kernels(leaf, subs, timer.fused_attention) if isinstance(k, Gemm)]
    assert [(g.m, g.n, g.k, g.count) for g in gemms] == [(7, 28672, 4096, 8), (7, 4096, 14336, 8)]
    assert math.ceil(25 * 2 / 8) == 7


def test_a_grouped_gemm_pays_one_start_for_all_its_experts():
    """One token's gate_up over its 2 experts (a GEMV each, memory-bound): the grouped launch takes
    twice one expert's streaming time plus one DRAM start, where two launches took two starts."""
    from costmodel.kernel_time import leaf_kernels, leaf_seconds

    leaf, subs, timer = _mixtral_experts(1)
    grouped = leaf_kernels(leaf, subs, timer.fused_attention)[0]
    assert (grouped.m, grouped.count) == (1, 2)
    one = Gemm(1, grouped.n, grouped.k)
    start = timer.dram_startup_s
    assert start > 0
    assert timer.seconds(grouped) == pytest.approx(2 * timer.seconds(one) - start, rel=1e-12)
    # the leaf's time is the sum of its kernels' (launch gaps apart): two GEMMs and the gating
    kernels = leaf_kernels(leaf, subs, timer.fused_attention)
    seconds, count = leaf_seconds(leaf, subs, timer)
    assert count == 3
    assert seconds == pytest.approx(sum(timer.seconds(k) for k in kernels), rel=1e-12)


def test_simulate_with_a_layout_runs_the_latent_attention_form_asked_for():
    """`simulate --tp 8 --mla absorbed` times the absorbed form (before, the layout branch built its
    workload without --mla and ran the default naive form whatever was asked: both gave 82.7 ms at
    batch 25): naive is the default's time to the bit, absorbed a shorter one."""
    import json

    from click.testing import CliRunner

    import cli

    seconds = {}
    for mla in (None, "naive", "absorbed"):
        args = ["simulate", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8", "--batch", "25",
                "--prompt", "512", "--gen", "256", "--json"] + (["--mla", mla] if mla else [])
        out = CliRunner().invoke(cli.cli, args)
        assert out.exit_code == 0, out.output
        seconds[mla] = json.loads(out.output)["token"]["seconds_per_token"]
    assert seconds["naive"] == seconds[None]
    assert seconds["absorbed"] < seconds["naive"]
