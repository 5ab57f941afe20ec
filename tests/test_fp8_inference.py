"""FP8 checkpoints at inference (--weight-dtype fp8, --fp8-gemm): W8A8 GEMMs at the FP8 peak where
the hardware file has one (vLLM's fp8 on compute capability >= 8.9), weight-only elsewhere or when
asked (costmodel/quantized_matmul.py runs_w8a8), in both time models, exact to the formula."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer, inference_subs, leaf_kernels
from costmodel.presets import load_preset
from costmodel.quantization import weight_format
from costmodel.quantized_matmul import activation_quant_bytes, runs_w8a8
from costmodel.roofline_model import Roofline
from costmodel.serving.steptime import StepTime, serving_profile
from costmodel.tree import CostModel

from cli_run import run_main

H200_FP8 = 1978.9e12 * 0.734  # flops_per_s["fp8"] x matmul_efficiency["fp8"] (h200.json)
H200_BF16 = 989.4e12 * 0.803
H200_BYTES = 4.8e12 * 0.8  # bandwidth x the memory efficiency (no gemv_bandwidth in h200.json)
SMS = 132
#: What a GEMM streaming from DRAM starts with on an H200: gpu-benches' h200_graph.txt intercept,
#: 3.255 us, less the file's 1.3 us graph gap (h200.json).
H200_STARTUP = 1.955e-6


def test_a_compute_bound_prefill_gemm_runs_at_the_fp8_peak_and_its_efficiency():
    h200 = load_hardware("h200")
    weights = 8192 * 8192 + 4 * 8192  # one byte a value, an fp32 scale a row
    gemm = Gemm(8192, 8192, 8192, weight_bytes=weights, weight_dtype="fp8", quantizes_input=True)
    # 64 x 64 tiles of 128 x 128 over 132 SMs: 32 waves, each a tile's FLOPs at an SM's share
    tile_flops = 32 * 2 * 128 * 128 * 8192
    quantize = 5 * 8192 * 8192 / H200_BYTES  # amax read (2 B), cast read (2 B) and write (1 B)
    w8a8 = KernelTimer(h200, "bf16", w8a8=True).gemm_seconds(gemm, tile=(128, 128))
    assert w8a8 == pytest.approx(H200_STARTUP + tile_flops / (H200_FP8 / SMS) + quantize, rel=1e-12)
    weight_only = KernelTimer(h200, "bf16").gemm_seconds(gemm, tile=(128, 128))
    assert weight_only == pytest.approx(H200_STARTUP + tile_flops / (H200_BF16 / SMS), rel=1e-12)


def test_a_decode_gemm_moves_one_byte_inputs_and_pays_the_quantization_pass():
    h200 = load_hardware("h200")
    weights = 11008 * 4096 + 4 * 11008
    first = Gemm(8, 11008, 4096, weight_bytes=weights, weight_dtype="fp8", quantizes_input=True)
    w8a8 = KernelTimer(h200, "bf16", w8a8=True)
    # its bytes at 0.856 of the GEMV rate at up to 16 rows on a 132-SM Hopper (kernel_facts.json w8a8_small_rows:
    # vLLM's cutlass_scaled_mm on an H100, wt39_machete; the GEMV rate itself, H200_BYTES, before)
    small = 0.856 * H200_BYTES
    assert w8a8.gemm_seconds(first) == pytest.approx(
        H200_STARTUP + (8 * 4096 + 2 * 8 * 11008 + weights) / small + 5 * 8 * 4096 / H200_BYTES, rel=1e-12)
    # the GEMM beside it on the same input (gate and up) reads the quantized copy: no second pass
    beside = Gemm(8, 11008, 4096, weight_bytes=weights, weight_dtype="fp8")
    assert w8a8.gemm_seconds(beside) == pytest.approx(H200_STARTUP + (8 * 4096 + 2 * 8 * 11008 + weights) / small,
                                                      rel=1e-12)
    assert KernelTimer(h200, "bf16").gemm_seconds(first) == pytest.approx(
        H200_STARTUP + (2 * 8 * 4096 + 2 * 8 * 11008 + weights) / H200_BYTES, rel=1e-12)
    assert activation_quant_bytes(8 * 4096, 2) == 5 * 8 * 4096


def test_each_leaf_quantizes_each_input_once():
    cfg = load_preset("llama2-7b")
    profile = serving_profile(cfg, "flash", "fp8")
    tree = CostModel(cfg, profile, phase="prefill")
    subs = inference_subs(cfg, "bf16", 1, 37)
    flags = {leaf.path: [(k.weight_dtype, k.quantizes_input) for k in leaf_kernels(leaf, subs, True)
                         if isinstance(k, Gemm)] for leaf in tree.leaves}
    # Q, then K and V on the same input; gate and up on one, down on its own
    assert flags["decoder.layer.self_attention.qkv"] == [("fp8", True), ("fp8", False), ("fp8", False)]
    assert flags["decoder.layer.ffn.mlp"] == [("fp8", True), ("fp8", False), ("fp8", True)]
    assert flags["head.lm_head"] == [(None, False)]  # the head stays unquantized


def test_the_roofline_runs_the_quantized_ffn_at_the_fp8_peak():
    cfg = load_preset("llama2-7b")
    h200 = load_hardware("h200")
    blocks = {}
    for gemm in ("auto", "w8a16"):
        roof = Roofline(cfg, h200, "bf16", None, "sdpa", "static", False, {"weight_dtype": "fp8", "fp8_gemm": gemm})
        blocks[gemm] = {b.path: b.timing for b in roof.prefill(1, 2048)[2]}
    w8a8, weight_only = blocks["auto"]["decoder.layer.ffn.mlp"], blocks["w8a16"]["decoder.layer.ffn.mlp"]
    flops = 32 * 2 * 2048 * 3 * 4096 * 11008  # 32 layers' gate, up and down over 2,048 tokens
    compute = 0.7  # h200.json efficiency.compute (the roofline's)
    assert weight_only.compute_s - w8a8.compute_s == pytest.approx(
        flops / (989.4e12 * compute) - flops / (1978.9e12 * compute), rel=1e-9)
    # bytes: the inputs (d for gate and up, d_ff for down) read in 1 byte, not 2; one pass per input
    inputs = 32 * 2048 * (2 * 4096 + 11008)
    quantize = 32 * 5 * 2048 * (4096 + 11008)
    assert w8a8.bytes - weight_only.bytes == -inputs + quantize
    assert blocks["auto"]["decoder.layer.self_attention.scores"] == blocks["w8a16"]["decoder.layer.self_attention.scores"]


def test_an_a100_keeps_weight_only_and_refuses_w8a8():
    a100, h200 = load_hardware("a100-80gb"), load_hardware("h200")
    assert not runs_w8a8(weight_format("fp8"), a100) and runs_w8a8(weight_format("fp8"), h200)
    assert not runs_w8a8(weight_format("fp8", fp8_gemm="w8a16"), h200)
    assert not runs_w8a8(weight_format("int8"), h200)
    cfg = load_preset("llama2-7b")
    query, context = np.array([512, 1, 1]), np.array([512, 900, 40])
    for model in ("kernels", "roofline"):
        steps = [StepTime(cfg, a100, "bf16", None, serving_profile(cfg, "flash", "fp8", fp8_gemm=gemm), 1, 1, model)
                 for gemm in ("auto", "w8a16")]
        assert steps[0].seconds(query, context) == steps[1].seconds(query, context)
    with pytest.raises(ConfigError, match="a100-80gb: no FP8 peak"):
        StepTime(cfg, a100, "bf16", None, serving_profile(cfg, "flash", "fp8", fp8_gemm="w8a8"))


def test_w8a16_restores_the_bf16_products_and_w8a8_speeds_the_prefill_only():
    cfg = load_preset("llama2-7b")
    h200 = load_hardware("h200")
    profile = {gemm: serving_profile(cfg, "flash", "fp8", fp8_gemm=gemm) for gemm in ("auto", "w8a16")}
    bf16 = StepTime(cfg, h200, "bf16", None, profile["auto"], timer=KernelTimer(h200, "bf16", "flash"))
    weight_only = StepTime(cfg, h200, "bf16", None, profile["w8a16"])
    w8a8 = StepTime(cfg, h200, "bf16", None, profile["auto"])
    prefill, decode = (np.array([2048]), np.array([2048])), (np.full(8, 1), np.full(8, 1000))
    assert weight_only.seconds(*prefill) == bf16.seconds(*prefill)
    assert weight_only.seconds(*decode) == bf16.seconds(*decode)
    assert w8a8.seconds(*prefill) < 0.75 * weight_only.seconds(*prefill)  # the GEMMs at twice the peak
    # decode reads the same weights, W8A8 at its kernel's measured rate at few rows (0.856 of the GEMV rate:
    # kernel_facts.json w8a8_small_rows, wt39_machete; within 1e-3 of the weight-only step before): slower, by less
    # than the whole step over 0.856
    assert weight_only.seconds(*decode) < w8a8.seconds(*decode) < weight_only.seconds(*decode) / 0.856


@pytest.mark.parametrize("args", [
    ["simulate", "--model", "llama2-7b", "--hardware", "h200", "--weight-dtype", "fp8", "--fp8-gemm", "w4a4"],
    ["simulate", "--model", "llama2-7b", "--hardware", "h200", "--weight-dtype", "int8", "--fp8-gemm", "w8a8"],
    ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--weight-dtype", "fp8", "--fp8-gemm", "w8a8"],
    ["serve", "--model", "llama2-7b", "--hardware", "h200", "--rate", "1", "--weight-dtype", "fp8",
     "--fp8-gemm", "fp8"],
])
def test_a_bad_fp8_gemm_is_one_line(args, capsys):
    code, _, err = run_main(args, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")


def test_the_library_calls_take_the_choice():
    import costmodel
    from costmodel.serving import serve

    prefill = {gemm: costmodel.simulate("llama2-7b", "h200", prompt=2048, gen=4, batch=8, attention="sdpa",
                                        weight_dtype="fp8", fp8_gemm=gemm).to_dict()["prefill"]["seconds"]
               for gemm in ("auto", "w8a16")}
    assert prefill["auto"] < 0.8 * prefill["w8a16"]
    with pytest.raises(ConfigError, match="apply to inference"):
        costmodel.simulate("llama2-7b", "h200", train=True, weight_dtype="fp8")
    ttft = {gemm: serve("llama2-7b", "h200", rate=2.0, requests=12, prompt="2048", output="8", weight_dtype="fp8",
                        fp8_gemm=gemm).summary()["ttft"]["p50"] for gemm in ("auto", "w8a16")}
    assert ttft["auto"] < 0.8 * ttft["w8a16"]


@pytest.mark.parametrize("mla", ["naive", "absorbed"])
def test_latent_attentions_fp8_projections_are_the_same_in_both_time_models(mla):
    """vLLM's fp8 MLA (costmodel/quantization.py, "Latent attention"): q_a_proj, q_b_proj and
    kv_a_proj_with_mqa are FP8 Linear layers, W8A8; kv_b_proj is one too where it up-projects the
    keys' latents (naive), but absorbed vLLM multiplies 16-bit copies of it (W_UK, W_UV) as bmm's.
    Odd DeepSeek-V3 (d 48, h 6, r_q 20, r_kv 12, d_r 4, nope 6, d_v 7, 3 layers), fp8 weights on
    an H100: the kernel model's W8A8 GEMMs are those matrices, each at its own rows, and the
    roofline runs exactly their FLOPs at the FP8 peak."""
    import sys
    from pathlib import Path

    from costmodel.hf import from_hf_config

    sys.path.insert(0, str(Path(__file__).parent))
    from family_odd_configs import _deepseek_v3

    cfg = from_hf_config(_deepseek_v3()[0], "odd-deepseek-v3")
    h100 = load_hardware("h100-sxm")
    d, h, r_q, r_kv, d_r, nope, d_v = 48, 6, 20, 12, 4, 6, 7
    batch, context = 3, 37  # a decode step: 3 queries and new latents, 3 x 37 keys
    q_a, q_b, kv_a, kv_b = (r_q, d), (h * (nope + d_r), r_q), (r_kv + d_r, d), (h * (nope + d_v), r_kv)
    rows = {q_a: batch, q_b: batch, kv_a: batch, kv_b: batch if mla == "absorbed" else batch * context}
    fp8_matrices = {q_a, q_b, kv_a} if mla == "absorbed" else {q_a, q_b, kv_a, kv_b}
    fp8_flops = sum(2 * rows[m] * m[0] * m[1] for m in fp8_matrices)  # one layer's

    profile = serving_profile(cfg, "flash", "fp8", mla=mla)
    leaves = [leaf for leaf in CostModel(cfg, profile, phase="decode").leaves if leaf.path.endswith(".mla")]
    subs = inference_subs(cfg, "bf16", batch, 1, context=context)
    assert len(leaves) == 2 and sum(int(leaf.count.xreplace(subs)) for leaf in leaves) == 3  # 1 dense, 2 MoE
    for leaf in leaves:
        gemms = [k for k in leaf_kernels(leaf, subs, True) if isinstance(k, Gemm)]
        assert {(g.n, g.k): g.m for g in gemms} == rows  # each matrix at its own rows
        assert {(g.n, g.k) for g in gemms if g.weight_dtype == "fp8"} == fp8_matrices
        # one quantization pass per distinct input: q_a and kv_a share the hidden states
        assert [((g.n, g.k), g.quantizes_input) for g in gemms] == \
            [(q_a, True), (q_b, True), (kv_a, False), (kv_b, mla == "naive")]

    seconds = {}
    for gemm in ("auto", "w8a16"):
        roof = Roofline(cfg, h100, "bf16", None, "flash", "static", False, {"weight_dtype": "fp8", "fp8_gemm": gemm},
                        mla=mla)
        blocks = roof.decode(batch, context)[2]
        seconds[gemm] = sum(b.timing.compute_s for b in blocks if b.path.endswith(".mla"))
    compute = 0.7  # h100-sxm.json efficiency.compute (the roofline's)
    assert seconds["w8a16"] - seconds["auto"] == pytest.approx(
        3 * fp8_flops * (1 / (h100.peak("bf16") * compute) - 1 / (h100.peak("fp8") * compute)), rel=1e-9)
