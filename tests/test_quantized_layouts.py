"""Quantized weights and KV caches in parallel layouts (issue 18, "every run expressible"): each
tensor-parallel rank stores its shards of the quantized matrices with their own scales and zeros,
through the one-device formula at the rank's substitution (costmodel/layout/rank.py).

The expected bytes are built here by hand, shard by shard, from the formats' stated layouts
(costmodel/quantization.py), not with blocks.quantized_bytes; the tiny config's sizes are odd
enough (vocabulary 99, d_ff 96, GQA 4:2) that a swapped dimension shows.
"""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.serving_memory import serving_memory
from costmodel.layout.spec import Layout
from costmodel.layout.timing import simulate_decode
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference
from costmodel.tree import CostModel, profile_for

E = 2  # bf16 bytes: the embedding, the head and the norms stay in the activation dtype


def tiny():
    """A Llama of odd sizes: d 64, 4 heads of 16, 2 KV heads, d_ff 96, vocabulary 99, 2 layers."""
    return load_preset("llama2-7b").replace(name="llama-quant", vocab_size=99, d_model=64, n_heads=4,
                                            n_kv_heads=2, d_ff=96, n_decoder_layers=2, max_positions=64)


def gptq(rows: int, cols: int, bits: int, group: int) -> int:
    """One GPTQ-layout matrix of rows x cols (group divides cols): data, an fp16 scale and a
    bits-wide zero per group of a row."""
    groups = rows * (cols // group)
    return rows * cols * bits // 8 + 2 * groups + groups * bits // 8


def per_row(rows: int, cols: int) -> int:
    """LLM.int8's layout: a byte per value and an fp32 scale per output row."""
    return rows * cols + 4 * rows


def shards(tp: int) -> list[tuple[int, int]]:
    """(rows, cols) of one layer's matrices on one rank, Megatron's split: q, k, v, gate and up
    column-parallel (their output rows / tp), o and down row-parallel (their input columns / tp)."""
    d, d_h, h, h_kv, d_ff = 64, 16, 4, 2, 96
    return [(h * d_h // tp, d), (h_kv * d_h // tp, d), (h_kv * d_h // tp, d), (d, h * d_h // tp),
            (d_ff // tp, d), (d_ff // tp, d), (d, d_ff // tp)]


def replicated(tp: int) -> int:
    """The rank's unquantized weights: two norms a layer and the final norm (whole), the embedding
    and the untied head (ceil(99 / tp) vocabulary rows each, DeepSpeed's split)."""
    rows = -(-99 // tp)
    return E * (2 * 2 * 64 + 64 + 2 * rows * 64)


def workload(**quantization) -> Workload:
    return Workload(seq_len=5, gen_tokens=200, batch=1, attention="sdpa", precision="pure", kv_cache="static",
                    **quantization)


def rank_weights(cfg, tp: int, **quantization) -> int:
    estimate = ParallelEstimate(cfg, workload(**quantization), Layout(tp=tp, framework="deepspeed"), phase="decode")
    return serving_memory(estimate)["weights"]


@pytest.mark.parametrize("tp", [1, 2])
def test_a_ranks_int4_weights_are_its_shards_built_by_hand(tp):
    cfg = tiny()
    expected = 2 * sum(gptq(rows, cols, 4, 16) for rows, cols in shards(tp)) + replicated(tp)
    assert rank_weights(cfg, tp, weight_dtype="int4", weight_group=16) == expected
    if tp == 2:  # the hand derivation, summed: q 1,344 + k, v 672 each + o 1,344 + 3 x 2,016 a layer
        assert expected == 2 * (1344 + 2 * 672 + 1344 + 3 * 2016) + E * (256 + 64 + 2 * 50 * 64) == 33_600


@pytest.mark.parametrize("tp", [1, 2])
def test_a_ranks_int8_weights_keep_every_output_rows_scale_on_a_row_parallel_shard(tp):
    cfg = tiny()
    expected = 2 * sum(per_row(rows, cols) for rows, cols in shards(tp)) + replicated(tp)
    assert rank_weights(cfg, tp, weight_dtype="int8") == expected


def test_grouped_matrices_split_exactly_over_the_ranks():
    """With whole groups on each shard, the rank's quantized matrices are the one-device tree's
    quantized matrix bytes / tp, and the rest is replicated as the one-device formula keeps it."""
    cfg = tiny()
    one = CostModel(cfg, profile_for(cfg, workload(weight_dtype="int4", weight_group=16)), phase="decode")
    values = {**{k: v for k, v in cfg.dimensions().items()}, "e": E}
    import sympy as sp

    from costmodel import symbols as S

    subs = {getattr(S, k): sp.Integer(v) for k, v in values.items() if hasattr(S, k)}
    matrices = sum(int(one.total(q).xreplace(subs)) for q in ("weight_data_bytes", "weight_scale_bytes",
                                                               "weight_zero_bytes", "weight_table_bytes"))
    for tp in (1, 2):
        assert rank_weights(cfg, tp, weight_dtype="int4", weight_group=16) == matrices // tp + replicated(tp)
        assert matrices % tp == 0


def test_a_ranks_fp8_kv_cache_is_its_heads_in_one_byte_and_its_own_scales():
    """--kv-dtype fp8 at tp 2: each rank caches its h_kv / tp heads, a byte per element, and two
    fp32 scales per layer of its own; context 204 (prompt 5 + the 199 of 200 generated tokens fed back)."""
    cfg = tiny()
    estimate = ParallelEstimate(cfg, workload(kv_dtype="fp8"), Layout(tp=2, framework="deepspeed"), phase="decode")
    assert serving_memory(estimate)["kv_cache"] == 2 * (2 * 204 * (2 // 2) * 16 + 2 * 4)
    plain = ParallelEstimate(cfg, workload(), Layout(tp=2, framework="deepspeed"), phase="decode")
    assert serving_memory(plain)["kv_cache"] == 2 * 2 * 204 * 1 * 16 * E


@pytest.mark.parametrize("time_model", ["roofline", "kernels"])
@pytest.mark.parametrize("hardware_name, batch, quantization", [
    ("a100-80gb", 1, {"weight_dtype": "int4", "weight_group": 32}),
    ("a100-80gb", 1, {"weight_dtype": "int8", "kv_dtype": "fp8"}),
    ("a100-80gb", 4, {"weight_dtype": "nf4"}),
    ("h100-sxm", 64, {"weight_dtype": "fp8"}),  # W8A8 on the FP8 tensor cores
    ("h100-sxm", 64, {"weight_dtype": "fp8", "fp8_gemm": "w8a16"}),
])
def test_a_tp1_layout_decodes_as_the_one_device_simulate(time_model, hardware_name, batch, quantization):
    """A tp 1 layout with quantized weights gives the one-device decode step at the last context
    (the same leaves and kernels, summed in another order: equal to float rounding). The layout's
    token is the step at context prompt + gen - 1 (5 + 199), simulate's last step of 200 tokens (its
    199th decode step: the prefill gives the first token)."""
    cfg, hardware = load_preset("llama2-7b"), load_hardware(hardware_name)
    one = simulate_inference(cfg, hardware, prompt=5, gen=200, batch=batch, attention="sdpa", kv_cache="static",
                             cuda_graphs=True, quantization=quantization, time_model=time_model)
    w = Workload(seq_len=5, gen_tokens=200, batch=batch, attention="sdpa", precision="pure", kv_cache="static",
                 **quantization)
    layout = simulate_decode(cfg, w, Layout(tp=1, framework="deepspeed"), hardware, cuda_graphs=True,
                             time_model=time_model)
    assert layout["token"]["seconds_per_token"] == pytest.approx(one["decode"]["last_token"]["seconds"], rel=1e-12)


@pytest.mark.parametrize("time_model", ["roofline", "kernels"])
def test_w8a8_runs_per_rank_as_on_one_device(time_model):
    """fp8 weights on an FP8 peak at a batch where the GEMMs compute: W8A8 (the default) is faster
    than weight-only W8A16 at tp 2 as on one device."""
    cfg, hardware = load_preset("llama2-7b"), load_hardware("h100-sxm")
    seconds = {}
    for gemm in ("auto", "w8a16"):
        w = Workload(seq_len=5, gen_tokens=200, batch=512, attention="sdpa", precision="pure", kv_cache="static",
                     weight_dtype="fp8", fp8_gemm=gemm)
        seconds[gemm] = simulate_decode(cfg, w, Layout(tp=2, framework="deepspeed"), hardware, cuda_graphs=True,
                                        time_model=time_model)["token"]["seconds_per_token"]
    assert seconds["auto"] < seconds["w8a16"]


@pytest.mark.parametrize("time_model", ["roofline", "kernels"])
def test_int8_decoding_at_tp2_is_faster_than_at_tp1(time_model):
    cfg, hardware = load_preset("llama2-7b"), load_hardware("a100-80gb")
    w = workload(weight_dtype="int8")
    seconds = {tp: simulate_decode(cfg, w, Layout(tp=tp, framework="megatron"), hardware, cuda_graphs=True,
                                   time_model=time_model)["token"]["seconds_per_token"] for tp in (1, 2)}
    assert seconds[2] < seconds[1]
    bf16 = simulate_decode(cfg, workload(), Layout(tp=2, framework="megatron"), hardware, cuda_graphs=True,
                           time_model=time_model)["token"]["seconds_per_token"]
    assert seconds[2] < bf16  # half the weight bytes per rank


def test_groups_that_straddle_two_ranks_are_refused():
    """Llama-2-7B's down projection has 11,008 input columns: 1,376 a rank at tp 8, not a whole
    number of int4's default 128-column groups (gpt-fast and vLLM refuse it); groups of 32 fit."""
    cfg = load_preset("llama2-7b")
    with pytest.raises(ConfigError, match="groups of 128 input columns do not divide .* 11008 / 8 = 1376"):
        ParallelEstimate(cfg, workload(weight_dtype="int4"), Layout(tp=8), phase="decode")
    ParallelEstimate(cfg, workload(weight_dtype="int4", weight_group=32), Layout(tp=8), phase="decode")
    ParallelEstimate(cfg, workload(weight_dtype="int4"), Layout(tp=2), phase="decode")  # 5,504 = 43 x 128


def test_training_on_quantized_weights_in_a_layout_is_refused():
    cfg = tiny()
    for quantization in ({"weight_dtype": "int4"}, {"kv_dtype": "fp8"}):
        with pytest.raises(ConfigError, match="inference formats"):
            ParallelEstimate(cfg, Workload(seq_len=32, **quantization), Layout(tp=2))


def test_the_commands_take_quantized_layouts_and_refuse_bad_combinations(capsys):
    base = ["-m", "llama2-7b", "--hardware", "a100-80gb"]
    assert cli.main(["simulate", *base, "--tp", "2", "--weight-dtype", "int4", "--weight-group", "32",
                     "--kv-dtype", "fp8", "--prompt", "5", "--gen", "20", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["per_rank"]["weights"] < 2 * 2**30 and result["token"]["seconds_per_token"] > 0
    bad = [
        ["simulate", *base, "--tp", "8", "--weight-dtype", "int4", "--prompt", "5", "--gen", "20"],
        ["simulate", *base, "--tp", "2", "--train", "--weight-dtype", "int8", "--seq-len", "64"],
        ["plan", *base, "--gpus", "8", "--weight-dtype", "int4"],
        ["serve", *base, "--tp", "4", "--weight-dtype", "int4", "--rate", "1", "--requests", "5"],
    ]
    for args in bad:
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err, (args, err)


def test_plan_serve_ranks_quantized_layouts(capsys):
    assert cli.main(["plan", "-m", "llama2-7b", "--hardware", "a100-80gb", "--gpus", "8", "--serve", "--batch", "8",
                     "--weight-dtype", "int4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    tps = {e["layout"]["tp"] for e in result["feasible"]}
    assert tps == {1, 2}  # 11,008 / 4 and / 8 columns are not whole groups of 128
    assert {e["layout"]["tp"] for e in result["infeasible"] if e["reason"] == "unsupported"} == {4, 8}
    assert result["inputs"]["weight_dtype"] == "int4"
