"""DeepSpeed-Inference's int8 as its code runs it (--quant-layout deepspeed; costmodel/quantization.py):
GroupQuantizer's 32 x 3 fp32 scales a matrix beside one byte a value, and quantized_gemm's in-memory
dequantization (launch_dequantize writes an fp16 copy, cuBLAS multiplies it: microsoft/DeepSpeed
csrc/transformer/inference/csrc/pt_binding.cpp at v0.7.3), priced in both time models on the
"hf-bloom-ds-inference" rows (BLOOM-176B, TP 8, A100 80GB)."""

from __future__ import annotations

import pytest

from costmodel.blocks import quantized_bytes
from costmodel.config import ConfigError, Workload
from costmodel.hardware import Efficiency
from costmodel.kernel_shapes import Gemm, Pointwise
from costmodel.quantization import weight_format
from costmodel.quantized_matmul import dequant_bytes, in_memory_dequant
from reports.published_decode import decode_layout_run, decode_setup
from reports.published_runs import other_runs_data

# BLOOM-176B's matrices on one of 8 ranks (hidden 14,336, d_ff 57,344): (output rows, input columns)
QKV, DENSE, H_4H, FOURH_H = (5376, 14336), (14336, 1792), (7168, 14336), (14336, 7168)
LAYER_VALUES = sum(r * c for r, c in (QKV, DENSE, H_4H, FOURH_H))  # 308,281,344 int8 values a layer a rank


def test_the_layout_stores_a_byte_a_value_and_384_bytes_of_scales_a_matrix():
    fmt = weight_format("int8", quant_layout="deepspeed")
    parts = quantized_bytes(((QKV[0], QKV[1], 1),), fmt)
    assert {k: int(v) for k, v in parts.items()} == {"data": 77_070_336, "scales": 384, "zeros": 0, "tables": 0}
    # LLM.int8's layout (the default) keeps an fp32 scale per output row instead: 5,376 x 4
    assert int(quantized_bytes(((QKV[0], QKV[1], 1),), weight_format("int8"))["scales"]) == 21_504


def test_a_quantized_gemm_becomes_a_dequantize_pass_then_the_fp16_gemm():
    """1 byte read + 2 written by the pass, 2 read by the GEMM: 5 bytes a weight (and the scales), where
    the weight-only kernel of the default layout reads 1."""
    fmt = weight_format("int8", quant_layout="deepspeed")
    stored = 77_070_336 + 384
    gemm = Gemm(1, QKV[0], QKV[1], weight_bytes=stored, weight_dtype="int8")
    kernels = in_memory_dequant(fmt, [gemm, Pointwise(10.0)], 2)
    assert kernels == [Pointwise(231_211_392.0), Gemm(1, QKV[0], QKV[1]), Pointwise(10.0)]
    assert kernels[0].bytes + 2 * QKV[0] * QKV[1] == 5 * 77_070_336 + 384
    assert dequant_bytes(stored, QKV[0] * QKV[1], 2) == 231_211_392
    assert in_memory_dequant(weight_format("int8"), [gemm], 2) == [gemm]  # dequantized in the registers
    assert in_memory_dequant(None, [gemm], 2) == [gemm]


@pytest.mark.parametrize("kwargs, match", [({"weight_dtype": "int4"}, "applies to int8 weights"),
                                           ({"weight_dtype": None}, "applies to int8 weights"),
                                           ({"weight_dtype": "int8", "weight_group": 128}, "32 groups of scales")])
def test_deepspeed_stores_int8_only(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Workload(quant_layout="deepspeed", **kwargs).weight_format


def _bloom(dtype: str, batch: int, time_model: str) -> dict:
    data = other_runs_data()
    source = data["sources"]["hf-bloom-ds-inference"]
    run = next(r for r in data["runs"] if r["id"] == f"hf-bloom-ds-inference bloom-176b {dtype} tp8 batch {batch}")
    return decode_layout_run(run, source, time_model, prefill=True)


def test_the_bloom_int8_rows_read_the_deepspeed_layout():
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "hf-bloom-ds-inference bloom-176b int8 tp8 batch 1")
    source = data["sources"]["hf-bloom-ds-inference"]
    assert decode_setup(run, source)[3] == {"weight_dtype": "int8", "quant_layout": "deepspeed"}
    assert all(quote in source["quant_layout_source"] for quote in ("v0.7.3", "quantized_gemm", "launch_dequantize"))


@pytest.mark.parametrize("time_model", ["kernels", "roofline"])
def test_an_int8_step_is_the_fp16_step_plus_its_dequantize_passes(time_model):
    """Batch 1: the GEMMs are the fp16 rows' own, so a step differs by 70 layers x 4 matrices' passes
    (3 bytes a value and 384 of scales) at the A100 file's memory-bound rate, 2.039 TB/s x 0.8."""
    _, hardware, _, _ = _bloom_setup()
    bandwidth = hardware.bandwidth_bytes_per_s * Efficiency(**hardware.efficiency).memory
    assert bandwidth == 1.6312e12
    passes = 70 * (3 * LAYER_VALUES + 4 * 384)
    assert passes == 64_739_189_760
    int8, fp16 = (_bloom(dtype, 1, time_model)["token"]["seconds_per_token"] for dtype in ("int8", "fp16"))
    assert int8 - fp16 == pytest.approx(passes / bandwidth, rel=1e-12)


def _bloom_setup() -> tuple:
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "hf-bloom-ds-inference bloom-176b int8 tp8 batch 1")
    return decode_setup(run, data["sources"]["hf-bloom-ds-inference"])


def test_the_int8_batch_1_row():
    """Published 89.09 ms a token (11.22 tokens/s); the kernel model's step 83.93 ms (39.69 of it the
    dequantize passes), end to end 11.913 tokens/s, 1.061x (2.834x before the layout)."""
    generation = _bloom("int8", 1, "kernels")
    assert round(generation["token"]["seconds_per_token"] * 1e3, 2) == 83.93
    assert round(generation["generation"]["end_to_end_tokens_per_second"], 3) == 11.913
    assert round(generation["generation"]["end_to_end_tokens_per_second"] / 11.2246, 3) == 1.061
