"""The last 14 published rows the CLI could not express, made expressible from their code (wt40_expressible):
ExLlamaV2's EXL2 (--weight-dtype exl2 --weight-bits B: costmodel/exl2.py, turboderp/exllamav2 at v0.0.6) for
oobabooga's six EXL2 rows, and vLLM's RTN before PR #26051 (--quant-layout vllm-rtn-torch: rtn.py at 03346f0b, a
bf16 copy dequantized every call, then F.linear) for the PR's eight old-RTN rows. Pinned: the bytes a decode step
reads, exactly; the file sizes oobabooga's page prints; the rows' ratios as first computed; the options' round
trip and their bad-input errors (one line, exit status 2)."""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel import exl2
from costmodel import symbols as S
from costmodel.config import Workload
from costmodel.presets import load_preset
from costmodel.tree import CostModel, model_values, profile_for
from tests.cli_run import one_error_line, run_json, run_main
from tests.unseen_rows import assert_first_computed, runs_of

# llama2-13b's 40 layers: 4 d^2 + 3 d d_ff weights each (d 5,120, d_ff 13,824); llama3.1-8b's 32: d (d + 2 d / 4)
# + d^2 + 3 d d_ff (d 4,096, 8 of 32 heads for K and V, d_ff 14,336)
LLAMA2_13B_LINEAR = 40 * (4 * 5120 ** 2 + 3 * 5120 * 13824)  # 12,687,769,600
LLAMA31_8B_LINEAR = 32 * (4096 * 6144 + 4096 ** 2 + 3 * 4096 * 14336)  # 6,979,321,856


def _decode_bytes(model: str, dtype: str, **weights) -> tuple[int, int]:
    """(weight bytes as stored, one decode step's matmul bytes at batch 1) of a model's decode tree."""
    cfg = load_preset(model)
    tree = CostModel(cfg, profile_for(cfg, Workload(dtype=dtype, **weights)), phase="decode")
    sizes = {**{s: sp.Integer(v) for s, v in model_values(cfg).items()}, S.b: 1, S.e: 2}
    stored = sum(leaf.total("weight_bytes") for leaf in tree.leaves).xreplace(sizes)
    moved = sum(leaf.count * leaf.matmul_bytes_as_stored() for leaf in tree.leaves if leaf.cost.matrices)
    return int(stored), int(moved.xreplace(sizes))


def test_the_exl2_head_is_the_converters_head_bits_6():
    # QParams(32, [8, 6], [0.15, 0.85], 4).total_bits((5120, 32000)): 40 groups of 128 rows, 6 of them 8-bit
    # (24 of 32 rows), 34 6-bit (136): 24*32*32000*8 + 136*32*32000*6 + 160*16 + 160*32 + 160*32000*4
    assert exl2.total_bits(5120, 32000) == 196608000 + 835584000 + 2560 + 5120 + 20480000 == 1052679680
    assert exl2.head_bits(32000, 5120) == sp.Rational(411203, 64000)  # 6.425 bits a weight


@pytest.mark.parametrize("bits, stored, moved, page_mib", [
    (4.9, 8238500800, 7917069760, 7860), (4.65, 7842008000, 7520576960, 7481), (4.4, 7445515200, 7124084160, 7104),
    (4.25, 7207619520, 6886188480, 6876), (4.125, 7009373120, 6687942080, 6687), (4.0, 6811126720, 6489695680, 6498)])
def test_exl2_bytes_and_oobabooga_model_sizes(bits, stored, moved, page_mib):
    assert _decode_bytes("llama2-13b", "fp16", weight_dtype="exl2", weight_bits=bits) == (stored, moved)
    # stored: the decoder's matrices at `bits`, their q_perm and q_invperm (4 bytes an input row), the head at
    # 6.425 bits and its perms, the fp16 embedding and 81 norms; the step reads all but the last two, and its
    # activations (one token's inputs and outputs of each product)
    perms = 40 * 4 * (4 * 5120 + 2 * 5120 + 13824) + 4 * 5120
    matrices = sp.ceiling(sp.Rational(repr(bits)) * LLAMA2_13B_LINEAR / 8) + perms + 1052679680 // 8
    assert stored == matrices + 2 * 32000 * 5120 + 2 * 81 * 5120
    assert moved - matrices == 7078400
    # oobabooga's 'Model size' column (read as MiB): within 0.05% of the stored bytes (fp16 embedding and norms)
    assert abs(stored / 2 ** 20 / page_mib - 1) < 5e-4


def test_rtn_dequantizes_into_a_bf16_copy_every_step():
    bf16 = _decode_bytes("llama3.1-8b", "bf16")
    assert bf16 == (16060522496, 13963362304)
    for dtype, bits, stored, moved in (("int8", 8, 9190252544, 35010379776), ("int4", 4, 5700591616, 31520718848)):
        assert _decode_bytes("llama3.1-8b", "bf16", weight_dtype=dtype, weight_group=128,
                             quant_layout="vllm-rtn-torch") == (stored, moved)
        # RTNLinearMethod's bytes: the values and a bf16 scale a group of 128, no zero
        quantized = LLAMA31_8B_LINEAR * bits // 8 + 2 * LLAMA31_8B_LINEAR // 128
        assert bf16[0] - stored == 2 * LLAMA31_8B_LINEAR - quantized
        # the step beyond bf16's: one pass reading them and writing the bf16 copy F.linear reads (as bf16 reads it)
        assert moved - bf16[1] == quantized + 2 * LLAMA31_8B_LINEAR


# As first computed (kernel model, wt40_expressible, once): id -> ours / published
FIRST = {
    "oobabooga-quant-2023 llama2-13b exl2 4.900b rtx3090": 1.181,
    "oobabooga-quant-2023 llama2-13b exl2 4.650b rtx3090": 1.127,
    "oobabooga-quant-2023 llama2-13b exl2 4.400b rtx3090": 1.163,
    "oobabooga-quant-2023 llama2-13b exl2 4.250b rtx3090": 1.183,
    "oobabooga-quant-2023 llama2-13b exl2 4.125b rtx3090": 1.211,
    "oobabooga-quant-2023 llama2-13b exl2 4.000b rtx3090": 1.23,
    "vllm-pr26051-rtn llama3.1-8b old rtn int8 batch 1 h100": 0.999,
    "vllm-pr26051-rtn llama3.1-8b old rtn int8 batch 4 h100": 1.028,
    "vllm-pr26051-rtn llama3.1-8b old rtn int8 batch 8 h100": 1.031,
    "vllm-pr26051-rtn llama3.1-8b old rtn int8 batch 16 h100": 1.039,
    "vllm-pr26051-rtn llama3.1-8b old rtn int4 batch 1 h100": 1.727,
    "vllm-pr26051-rtn llama3.1-8b old rtn int4 batch 4 h100": 1.75,
    "vllm-pr26051-rtn llama3.1-8b old rtn int4 batch 8 h100": 1.731,
    "vllm-pr26051-rtn llama3.1-8b old rtn int4 batch 16 h100": 1.671,
}


def test_the_14_rows_as_first_computed():
    assert len(FIRST) == 14 and all(k in {r["id"] for s in ("oobabooga-quant-2023", "vllm-pr26051-rtn")
                                          for r in runs_of(s)} for k in FIRST)
    assert_first_computed(("oobabooga-quant-2023", "vllm-pr26051-rtn"), FIRST, {}, refused=())
    exl2_rows = [r for r in runs_of("oobabooga-quant-2023") if r["weight_dtype"] == "exl2"]
    assert [r["weight_bits"] for r in exl2_rows] == [4.9, 4.65, 4.4, 4.25, 4.125, 4.0]  # their ids' bits


def test_the_options_round_trip(capsys):
    data = run_json(["estimate", "--model", "llama2-13b", "--dtype", "fp16", "--weight-dtype", "exl2", "--weight-bits",
                     "4.65"], capsys)
    assert (data["inputs"]["weight_dtype"], data["inputs"]["weight_bits"]) == ("exl2", 4.65)
    assert data["memory"]["quantized_weights"]["total"] == 7842008000
    data = run_json(["simulate", "--model", "llama3.1-8b", "--hardware", "h100-sxm", "--prompt", "256", "--gen", "32",
                     "--weight-dtype", "int4", "--weight-group", "128", "--quant-layout", "vllm-rtn-torch"], capsys)
    assert data["memory"]["weights"] == 5700591616
    code, text, err = run_main(["simulate", "--model", "llama2-13b", "--hardware", "rtx-3090", "--prompt", "32", "--gen",
                                "4", "--weight-dtype", "exl2", "--weight-bits", "4.4"], capsys)
    assert code == 0 and "weights exl2 at 4.4 bits a weight" in text, err


@pytest.mark.parametrize("args, says", [
    (("--weight-dtype", "exl2", "--weight-bits", "9"), "weight_bits must be a number of bits a weight from 2 to 8"),
    (("--weight-dtype", "exl2", "--weight-bits", "nan"), "weight_bits must be a number of bits a weight from 2 to 8"),
    (("--weight-dtype", "int4", "--weight-bits", "4.5"), "weight_bits applies only to exl2 weights"),
    (("--weight-dtype", "exl2", "--weight-group", "32"), "exl2 chooses its groups per layer"),
    (("--weight-dtype", "exl2", "--quantize-head"), "exl2 always quantizes the head"),
    (("--weight-dtype", "exl2", "--quant-layout", "vllm-rtn-torch"), "applies to int8 and int4 weights"),
    (("--weight-dtype", "fp8", "--quant-layout", "vllm-rtn-torch"), "applies to int8 and int4 weights"),
])
def test_bad_input_is_one_line_and_status_2(args, says, capsys):
    line = one_error_line(["simulate", "--model", "llama2-13b", "--hardware", "rtx-3090", "--prompt", "32", "--gen", "4",
                           *args], capsys)
    assert says in line, line


@pytest.mark.slow  # two Inductor compilations (~30 s)
def test_inductor_fuses_the_rtn_dequantization_into_one_kernel():
    """vllm-rtn-torch's one dequantization pass: the pre-#26051 op chain (validate/rtn_inductor.py) compiles, on the
    pinned torch's Inductor (CPU backend), to one fused kernel before one mm, for int8 and for int4."""
    pytest.importorskip("torch")
    from validate.rtn_inductor import generated_kernels

    for bits in (8, 4):
        fused, mms = generated_kernels(bits)
        assert (len(fused), mms) == (1, 1), (bits, fused)


def test_the_python_api_takes_weight_bits_as_the_command_does(capsys):
    """Review (wt40_review): `simulate --weight-bits` had no keyword in costmodel.simulate, whose exl2 was the
    converter's 4.125 whatever the file. Now weight_bits gives the command's figures (one GPU and a layout), and a
    misuse is the command's one sentence."""
    import costmodel
    from costmodel.config import ConfigError

    cli_data = run_json(["simulate", "--model", "llama2-13b", "--hardware", "rtx-3090", "--prompt", "32", "--gen", "4",
                         "--weight-dtype", "exl2", "--weight-bits", "4.65"], capsys)
    api = costmodel.simulate("llama2-13b", "rtx-3090", prompt=32, gen=4, weight_dtype="exl2", weight_bits=4.65).to_dict()
    assert api["inputs"]["weight_bits"] == cli_data["inputs"]["weight_bits"] == 4.65
    assert api["memory"]["weights"] == cli_data["memory"]["weights"] == 7842008000
    assert api["decode"]["decode_seconds"] == cli_data["decode"]["decode_seconds"]
    default = costmodel.simulate("llama2-13b", "rtx-3090", prompt=32, gen=4, weight_dtype="exl2").to_dict()
    assert default["memory"]["weights"] < api["memory"]["weights"]  # 4.125 bits a weight
    layout = costmodel.simulate("llama2-13b", "rtx-3090", prompt=32, gen=4, weight_dtype="exl2", weight_bits=4.65,
                                layout={"tp": 1}).to_dict()
    assert layout["inputs"]["weight_bits"] == 4.65
    with pytest.raises(ConfigError, match="weight_bits applies only to exl2 weights"):
        costmodel.simulate("llama2-13b", "rtx-3090", prompt=32, weight_bits=4.65)
    with pytest.raises(ConfigError, match="apply to inference, not to train=True"):
        costmodel.simulate("llama2-13b", "rtx-3090", train=True, seq_len=128, weight_bits=4.65)


def test_a_tied_head_names_exl2_not_an_option_nobody_typed(capsys):
    """Review (wt40_review): exl2 on a model whose head is its embedding (llama3.2-1b) said 'quantize_head: ...', an
    option the command line never held; EXL2 always quantizes the head, so the sentence names exl2."""
    line = one_error_line(["simulate", "--model", "llama3.2-1b", "--hardware", "h100-sxm", "--prompt", "32", "--gen", "4",
                           "--weight-dtype", "exl2"], capsys)
    assert "exl2 (its converter quantizes the head): 'llama3.2-1b' ties its head to the embedding" in line
