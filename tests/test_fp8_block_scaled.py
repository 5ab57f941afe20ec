"""The block-scaled training recipes (--fp8 mxfp8, --fp8 nvfp4; costmodel/layout/fp8.py): the casts'
and the scales' exact bytes for one linear, the peaks they run at (mxfp8, fp4: the Blackwell files
only), the one-line refusals elsewhere, a user's hardware file with the new peaks, and the commands
that take them."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import ConfigError
from costmodel.hardware import Hardware, load_hardware
from costmodel.kernel_shapes import Gemm
from costmodel.kernel_time import KernelTimer
from costmodel.layout.fp8 import RECIPES
from costmodel.layout.fp8_casts import BLOCK_FORMATS, CAST_PASSES, Casts, cast_bytes

# one linear: 96 tokens, 160 inputs, 224 outputs (multiples of 32, as TE requires; no two alike)
M, K, N = 96, 160, 224  # input 15,360 elements, weight 35,840, output gradient 21,504


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def scales_only(recipe: str) -> Casts:
    """The recipe's passes that write scales alone (what == "scales")."""
    casts = CAST_PASSES[recipe]
    return Casts(tuple(p for p in casts.passes if p.what == "scales"), casts.transposes, casts.weight_once_per_step)


def test_the_formats_bytes_per_element():
    """MXFP8: 1 byte and one E8M0 byte a 32; NVFP4: half a byte and one E4M3 byte a 16."""
    assert BLOCK_FORMATS["mxfp8"].bytes_per_element == 1 + 1 / 32
    assert BLOCK_FORMATS["nvfp4"].bytes_per_element == 0.5 + 1 / 16
    assert (RECIPES["mxfp8"].peak, RECIPES["nvfp4"].peak, RECIPES["current"].peak) == ("mxfp8", "fp4", "fp8")


def test_mxfp8_one_linear():
    """No amax; each operand cast once from bf16 (read 2) into a row-wise and a column-wise copy
    (write 1 + 1) with their scales (1 + 1 a 32): 4.0625 bytes an element, the input and the weight
    in forward, the output gradient in backward; no transposes on any GPU."""
    for needs_tn in (True, False):
        assert cast_bytes([Gemm(M, N, K)], CAST_PASSES["mxfp8"], needs_tn=needs_tn) == (208_000, 87_360)
    assert cast_bytes([Gemm(M, N, K)], scales_only("mxfp8"), needs_tn=True) == (3_200, 1_344)
    # the weight once a step (4 micro-batches), as current's; a recomputed forward casts the input only
    assert cast_bytes([Gemm(M, N, K)], CAST_PASSES["mxfp8"], needs_tn=True, microbatches=4) == (98_800, 87_360)
    assert cast_bytes([Gemm(M, N, K)], CAST_PASSES["mxfp8"], needs_tn=True, rerun=True) == (62_400, 0)


def test_mxfp8_quantizes_a_norms_output_on_the_ranks_tokens_under_sequence_parallelism():
    normed = Gemm(M, N, K, normed_input=True)
    forward, backward = cast_bytes([normed], CAST_PASSES["mxfp8"], needs_tn=True, tp=2, sequence_parallel=True)
    assert (forward, backward) == (176_800, 87_360)  # 4.0625 x (15,360 / 2 + 35,840)


def test_nvfp4_one_linear():
    """The input: an amax (read 2), the row-wise cast (read 2, write 0.5 + 1/16) and the fused
    Hadamard-and-cast column-wise copy (the same): 7.125 bytes an element; the weight (no RHT, 16 x
    16 blocks): amax, one cast writing both copies, 5.125; the output gradient as the input."""
    assert cast_bytes([Gemm(M, N, K)], CAST_PASSES["nvfp4"], needs_tn=True) == (293_120, 153_216)
    assert cast_bytes([Gemm(M, N, K)], scales_only("nvfp4"), needs_tn=True) == (6_400, 2_688)
    assert cast_bytes([Gemm(M, N, K)], CAST_PASSES["nvfp4"], needs_tn=True, rerun=True) == (109_440, 0)


@pytest.mark.parametrize("recipe, hardware, line", [
    ("mxfp8", "h200", "hardware h200: no block-scaled (MXFP8) peak (flops_per_s[\"mxfp8\"]) for --fp8 mxfp8 "
                      "(Hopper has no block-scaled (MXFP8) tensor cores: Blackwell, sm_100, and later); add it to "
                      "its hardware file or use --fp8 current."),
    ("nvfp4", "a100-80gb", "hardware a100-80gb: no FP4 peak (flops_per_s[\"fp4\"]) for --fp8 nvfp4 (Ampere has no "
                           "FP4 tensor cores: Blackwell, sm_100, and later); add it to its hardware file or leave "
                           "--fp8 out."),
])
def test_a_gpu_without_the_tensor_cores_is_refused_in_one_line(recipe, hardware, line, capsys):
    # estimate: its fit verdict, whose default layout is DeepSpeed's, which refuses Transformer Engine's recipes
    # before the GPU is read (session 41, test_smoke41_defects.py 5): megatron's named
    for command in (["simulate", "--train"], ["plan"], ["estimate", "--framework", "megatron"]):
        code, out, err = run(command + ["--model", "llama2-7b", "--hardware", hardware, "--gpus", "8",
                                        "--fp8", recipe], capsys)
        assert (code, out, err.strip()) == (2, "", f"error: {line}"), command


def test_only_the_blackwell_files_carry_the_block_scaled_peaks():
    for name, fp4 in (("b200", 9.0e15), ("gb200", 10.0e15), ("b300", 13.125e15), ("gb300", 15.0e15)):
        hardware = load_hardware(name)
        assert hardware.architecture == "blackwell"
        assert hardware.peak("mxfp8") == hardware.peak("fp8") and hardware.peak("fp4") == fp4
    for name in ("h100-sxm", "h200", "a100-80gb", "mi355x"):
        assert not {"mxfp8", "fp4"} & set(load_hardware(name).flops_per_s)


def test_their_gemms_take_the_fp8_measured_efficiency_where_none_is_their_own():
    b200 = load_hardware("b200")  # MAMF fp8 0.763, MSMF fp8 0.621 (its source)
    assert (b200.efficiency_dtype("fp4"), b200.efficiency_dtype("mxfp8"), b200.efficiency_dtype("bf16")) == \
        ("fp8", "fp8", "bf16")
    assert KernelTimer(b200, matmul_dtype="fp4").matmul_efficiency == 0.763
    assert KernelTimer(b200, matmul_dtype="mxfp8", sustained=True).matmul_efficiency == 0.621
    own = Hardware.from_dict(dict(b200.to_dict(), matmul_efficiency={"fp8": 0.763, "fp4": 0.6}), "own")
    assert own.efficiency_dtype("fp4") == "fp4" and KernelTimer(own, matmul_dtype="fp4").matmul_efficiency == 0.6
    gb300 = load_hardware("gb300")  # no MAMF row at all: efficiency.compute
    assert KernelTimer(gb300, matmul_dtype="fp4").matmul_efficiency == gb300.efficiency["compute"] == 0.7


def test_a_user_hardware_file_with_the_new_peaks_round_trips(tmp_path, capsys):
    written = load_hardware("h200").to_dict()
    written.update(name="my-blackwell", architecture="blackwell")
    written["flops_per_s"] = dict(written["flops_per_s"], mxfp8=written["flops_per_s"]["fp8"], fp4=4e15)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(written))
    mine = load_hardware(str(path))
    assert mine.peak("fp4") == 4e15 and Hardware.from_dict(mine.to_dict(), "again") == mine
    code, out, _ = run(["hardware", "--show", str(path)], capsys)
    assert code == 0 and json.loads(out)["flops_per_s"]["fp4"] == 4e15
    code, out, _ = run(["simulate", "--train", "--model", "llama2-7b", "--hardware", str(path), "--gpus", "8",
                        "--dp", "8", "--fp8", "nvfp4", "--framework", "megatron", "--json"], capsys)  # TE's: session 41
    assert code == 0 and json.loads(out)["parallel"]["layout"]["fp8"] == "nvfp4"
    written["flops_per_s"]["mxfp4"] = 1e15
    path.write_text(json.dumps(written))
    with pytest.raises(ConfigError, match="flops_per_s has an unknown dtype 'mxfp4'"):
        load_hardware(str(path))


def test_the_commands_take_the_recipes(capsys):
    """simulate and plan on a B200; the block-scaled recipes at their peaks are faster than
    current scaling's FP8 (mxfp8: the same peak, no amax passes), nvfp4 faster still."""
    seconds = {}
    for recipe in ("current", "mxfp8", "nvfp4"):
        code, out, _ = run(["simulate", "--train", "--model", "llama2-7b", "--hardware", "b200", "--gpus", "8",
                            "--dp", "8", "--batch", "4", "--fp8", recipe, "--framework", "megatron", "--json"],
                           capsys)  # Transformer Engine's recipes: megatron's (deepspeed refuses them, session 41)
        assert code == 0
        seconds[recipe] = json.loads(out)["step"]["compute_seconds"]
    assert seconds["nvfp4"] < seconds["mxfp8"] < seconds["current"]
    code, out, _ = run(["plan", "--model", "gpt2", "--hardware", "b200", "--gpus", "8", "--fp8", "mxfp8", "--json"],
                       capsys)
    assert code == 0 and {row["layout"]["fp8"] for row in json.loads(out)["feasible"]} == {"mxfp8"}


def test_torchao_mxfp8_one_linear_casts_each_operand_twice():
    """torchao's MXLinear (mx_linear.py at e4e681be6, the MX rows' torchao): the input and the weight
    cast along rows in forward, the output gradient along rows and the weight, the gradient and the
    saved bf16 input along columns in backward, each cast a read of the bf16 tensor (2) and one
    byte and one E8M0 byte a 32 written: 3.03125 bytes an element; the weight cast in each forward
    (no cache across micro-batches), and a recomputed forward casts both again."""
    from costmodel.layout.fp8_casts import FRAMEWORK_CAST_PASSES

    casts = FRAMEWORK_CAST_PASSES[("mxfp8", "fsdp2")]
    forward = (15_360 + 35_840) * 3.03125  # 155,200
    backward = (21_504 + 15_360 + 35_840 + 21_504) * 3.03125  # 285,568
    for needs_tn in (True, False):
        assert cast_bytes([Gemm(M, N, K)], casts, needs_tn=needs_tn) == (forward, backward) == (155_200, 285_568)
    assert cast_bytes([Gemm(M, N, K)], casts, needs_tn=True, microbatches=4) == (155_200, 285_568)
    assert cast_bytes([Gemm(M, N, K)], casts, needs_tn=True, rerun=True) == (155_200, 0)


@pytest.mark.parametrize("framework, torchao", [("fsdp2", True), ("megatron", False)])
def test_torchtitan_runs_torchaos_mx_and_megatron_transformer_engines(framework, torchao):
    """--fp8 mxfp8 under --framework fsdp2 (torchtitan's MX converter: torchao's MXLinear) takes
    torchao's casts; under megatron, Transformer Engine's MXFP8BlockScaling."""
    from costmodel.layout.fp8_casts import FRAMEWORK_CAST_PASSES
    from costmodel.layout.kernel_step import fp8_casts
    from costmodel.layout.rank import Layout, ParallelEstimate
    from costmodel.presets import load_preset
    from costmodel.workload import Workload

    layout = Layout(dp=8, zero=3 if torchao else 1, framework=framework, fp8="mxfp8")
    estimate = ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=8192, batch=1, dtype="bf16"), layout)
    casts = fp8_casts(estimate, load_hardware("b200"))[0]
    assert casts is (FRAMEWORK_CAST_PASSES[("mxfp8", "fsdp2")] if torchao else CAST_PASSES["mxfp8"])
