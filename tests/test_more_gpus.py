"""The GPUs a new user asked for by name (V100, T4, A10, A10G, L4, RTX A6000/3090, H20, GH200, MI250X):
each preset loads with its sources, its datasheet peaks as written there, its short and driver names
resolve, names that are no single preset say which to give, and a dtype the GPU has no peak for (bf16 on
Volta and Turing, fp8 before Ada/Hopper) is one error line with exit status 2 in every command."""

from __future__ import annotations

import json

import pytest

from costmodel.hardware import Hardware, hardware_names, load_hardware, schema_problems
from tests.cli_run import run_main

#: The presets this issue adds (the fourteen of tests/test_hardware_files.py PRESETS came before).
NEW = ("v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb", "v100-pcie-32gb", "t4", "a10", "a10g", "l4",
       "rtx-a6000", "rtx-3090", "h20", "gh200-96gb", "gh200-144gb", "mi250x")
GiB = 2**30


def test_every_new_preset_is_a_valid_file_with_its_sources():
    assert set(NEW) <= set(hardware_names()) and len(hardware_names()) == 36 + 1  # 36 presets (wt39_hpcgpus adds a100-64gb, h100-64gb) (test_blackwell_ultra.py adds 5; mi210 for the rocm-int8 rows) and `local`
    for name in NEW:
        hw = load_hardware(name)
        assert schema_problems(hw.to_dict()) == [] and Hardware.from_dict(hw.to_dict(), "again") == hw, name
        assert "datasheet" in hw.source or "whitepaper" in hw.source or "stated" in hw.source, name
        assert hw.sm_count > 0 and hw.memory_reserve_bytes == 512 * 2**20, name
        assert hw.default_dtype in hw.flops_per_s and hw.vector_flops_per_s > 0, name


def test_each_file_states_where_its_interconnect_comes_from():
    from costmodel.hardware import HARDWARE_DIR

    for name in NEW:
        network = json.loads((HARDWARE_DIR / f"{name}.json").read_text())["interconnect"]
        assert network["source"] and "latency: a stated 10 us" in network["source"], name


def test_datasheet_peaks_as_written():
    # NVIDIA Tesla V100 datasheet: SXM2 tensor 125, single 15.7 TFLOPS, 900 GB/s, NVLink 300 GB/s (150 per
    # direction); PCIe tensor 112, single 14. Volta has FP16 tensor cores only: no bf16 peak.
    v100 = load_hardware("v100-sxm2-32gb")
    assert v100.flops_per_s == {"fp32": 15.7e12, "fp16": 125e12} and v100.default_dtype == "fp16"
    assert (v100.memory_bytes, v100.bandwidth_bytes_per_s, v100.link(8)) == (32 * GiB, 900e9, 150e9)
    assert load_hardware("v100-sxm2-16gb").memory_bytes == 16 * GiB
    assert load_hardware("v100-pcie-32gb").flops_per_s == {"fp32": 14e12, "fp16": 112e12}
    # T4 datasheet: mixed-precision 65 TFLOPS, INT8 130 TOPS, 16 GB at 320 GB/s.
    assert load_hardware("t4").flops_per_s == {"fp32": 8.1e12, "fp16": 65e12, "int8": 130e12}
    # A10 datasheet (sparse halved) 125 BF16; A10G (Baseten's table) 70; L4 (sparse halved) 121 BF16, 242.5 FP8.
    assert load_hardware("a10").peak("bf16") == 125e12 and load_hardware("a10g").peak("bf16") == 70e12
    l4 = load_hardware("l4")
    assert (l4.peak("bf16"), l4.peak("fp8"), l4.bandwidth_bytes_per_s) == (121e12, 485e12 / 2, 300e9)
    # GA102 whitepaper: RTX 3090 71 TFLOPS with FP32 accumulate, RTX A6000 154.8.
    assert load_hardware("rtx-3090").peak("fp16") == 71e12 and load_hardware("rtx-a6000").peak("bf16") == 154.8e12
    # H20: 148 TFLOP/s BF16 dense, 96 GB HBM3 at 4.0 TB/s, NVLink 900 GB/s (450 per direction).
    h20 = load_hardware("h20")
    assert (h20.peak("bf16"), h20.peak("fp8"), h20.memory_bytes, h20.bandwidth_bytes_per_s, h20.link(8)) == (
        148e12, 296e12, 96 * GiB, 4.0e12, 450e9)
    # wt37_h20: 78 SMs at 1,980 MHz as bench-probe read them on an H20-3e (miraclefarms/cuda-kernel-lab 12d3f12,
    # docs/environment-matrix.md); the GH100's graph launch (1.3 us, the H100's) and DRAM startup (1.955 us, the
    # H200's), borrowed; no measured H20 matmul or host figure, so none of those fields. Restated by wt40_hwfacts
    # (session 40): a measured streaming rate of an H20 96GB (AutoMegaKernel PR #3, 3,712.3 GB/s) is its GEMV rate
    # now (tests/test_hardware_measured40.py pins the figure to its source).
    h100, h200 = load_hardware("h100-sxm"), load_hardware("h200")
    assert (h20.sm_count, h20.clock_mhz) == (78, 1980)
    assert (h20.graph_kernel_s, h20.dram_kernel_startup_s) == (h100.graph_kernel_s, h200.dram_kernel_startup_s) == (
        1.3e-6, 1.955e-6)
    assert (h20.matmul_efficiency, h20.gemv_bandwidth_bytes_per_s, h20.host_module_call_s) == ({}, 3712.3e9, None)
    assert "SM 78; L2 60 MiB; memory bus 6016 bit; memory clock 3201 MHz; SM clock 1980 MHz" in h20.source
    # GH200: the H100's peaks with 96 GB HBM3 at 4 TB/s or 144 GB HBM3e at 4.9 TB/s; Bekman's MAMF of the
    # HBM3e part: 828.6 of 989 TFLOP/s BF16, 1535.0 of 1979 FP8.
    small, large = load_hardware("gh200-96gb"), load_hardware("gh200-144gb")
    assert small.flops_per_s == large.flops_per_s == load_hardware("h100-sxm").flops_per_s
    assert (small.memory_bytes, small.bandwidth_bytes_per_s) == (96 * GiB, 4.0e12)
    assert (large.memory_bytes, large.bandwidth_bytes_per_s) == (144 * GiB, 4.9e12)
    assert large.matmul_efficiency == {"bf16": round(828.6 / 989, 3), "fp16": round(828.6 / 989, 3),
                                       "fp8": round(1535.0 / 1979, 3)} and small.matmul_efficiency == {}
    # MI250X, one GCD: half the package's 383 TFLOP/s, 128 GB, 3.2 TB/s and 220 CUs; MAMF 147.0 of 191.5.
    gcd = load_hardware("mi250x")
    assert (gcd.peak("bf16"), gcd.memory_bytes, gcd.bandwidth_bytes_per_s, gcd.sm_count) == (
        383e12 / 2, 128 * GiB // 2, 3.2e12 / 2, 220 // 2)
    assert gcd.matmul_efficiency["bf16"] == round(147.0 / 191.5, 3) and "fp8" not in gcd.flops_per_s


@pytest.mark.parametrize("name, per_sm_per_clock", [
    # dense 16-bit tensor FLOP per SM per clock: Volta/Turing and the professional GA102/AD104 boards
    # 1,024; GeForce GA102 (RTX 3090) and the A10G 512 (FP32 accumulate). Their product with the SMs and
    # the boost clock must give the datasheet's peak: a wrong SM count or clock in a file fails here.
    ("v100-sxm2-32gb", 1024), ("v100-pcie-32gb", 1024), ("t4", 1024), ("a10", 1024), ("rtx-a6000", 1024),
    ("l4", 1024), ("rtx-3090", 512), ("a10g", 512),
])
def test_the_peaks_are_sms_times_clock_times_the_tensor_rate(name, per_sm_per_clock):
    hw = load_hardware(name)
    sixteen = hw.flops_per_s.get("bf16", hw.flops_per_s.get("fp16"))
    assert hw.sm_count * hw.clock_mhz * 1e6 * per_sm_per_clock == pytest.approx(sixteen, rel=0.012)


@pytest.mark.parametrize("typed, preset", [
    ("b200 sxm", "b200"), ("HGX-B200", "b200"), ("NVIDIA B200", "b200"), ("h100 sxm", "h100-sxm"),
    ("dgx h100", "h100-sxm"), ("A10G", "a10g"), ("NVIDIA A10G", "a10g"), ("NVIDIA A10", "a10"), ("H20", "h20"),
    ("NVIDIA H20", "h20"), ("NVIDIA L4", "l4"), ("Tesla T4", "t4"), ("v100-32gb", "v100-sxm2-32gb"),
    ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"), ("Tesla V100-PCIE-32GB", "v100-pcie-32gb"),
    ("NVIDIA RTX A6000", "rtx-a6000"), ("a6000", "rtx-a6000"), ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("GH200 HBM3e", "gh200-144gb"), ("NVIDIA GH200 480GB", "gh200-96gb"), ("AMD Instinct MI250X", "mi250x"),
])
def test_each_new_name_resolves(typed, preset):
    assert load_hardware(typed).name == preset


@pytest.mark.parametrize("typed, candidates", [
    ("v100", ("v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb", "v100-pcie-32gb")),
    ("GH200", ("gh200-96gb", "gh200-144gb")), ("a100", ("a100-40gb", "a100-80gb", "a100-pcie")),
    ("MI250X package", ("mi250x", "2 GPUs")), ("mi250x-oam", ("one GCD",)),
])
def test_a_name_that_is_no_single_preset_says_which_to_give(typed, candidates, capsys):
    code, out, err = run_main(["simulate", "--model", "llama2-7b", "--hardware", typed], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert all(c in err for c in candidates), err


V100_BF16 = "error: v100-sxm2-32gb has no bf16 peak (Volta); use --dtype fp16.\n"


@pytest.mark.parametrize("args", [
    ["simulate", "--model", "llama2-7b", "--hardware", "v100-32gb", "--dtype", "bf16"],
    ["simulate", "--model", "llama2-7b", "--hardware", "v100-32gb", "--dtype", "bfloat16", "--train", "--tp", "2"],
    ["serve", "--model", "llama2-7b", "--hardware", "v100-32gb", "--dtype", "bf16", "--rate", "1"],
    ["plan", "--model", "llama2-7b", "--hardware", "v100-32gb", "--gpus", "8", "--dtype", "bf16"],
    ["plan", "--model", "llama2-7b", "--hardware", "v100-32gb", "--gpus", "8", "--serve", "--dtype", "bf16"],
    ["estimate", "--model", "llama2-7b", "--hardware", "v100-32gb", "--dtype", "bf16"],
    ["finetune", "--model", "llama2-7b", "--method", "lora", "--hardware", "v100-32gb", "--dtype", "bf16"],
])
def test_a_dtype_the_gpu_lacks_is_one_line_and_exit_2(args, capsys):
    code, out, err = run_main(args, capsys)
    assert (code, out, err) == (2, "", V100_BF16)


def test_fp8_before_hopper_and_turing_bf16_are_one_line(capsys):
    for args, phrase in (
            (["simulate", "--model", "llama2-7b", "--hardware", "t4", "--dtype", "bf16"],
             "t4 has no bf16 peak (Turing); use --dtype fp16."),
            (["simulate", "--model", "llama2-7b", "--hardware", "v100-32gb", "--train", "--tp", "2", "--dtype",
              "fp16", "--fp8", "tensorwise"], "hardware v100-sxm2-32gb: no FP8 peak"),
            (["plan", "--model", "llama2-7b", "--hardware", "mi250x", "--gpus", "8", "--fp8", "rowwise"],
             "hardware mi250x: no FP8 peak")):
        code, out, err = run_main(args, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and phrase in err, err
    assert load_hardware("a100-80gb").missing_peak("fp8") == "a100-80gb has no fp8 peak (Ampere); use --dtype bf16."


def test_without_dtype_a_v100_runs_in_fp16(capsys):
    """The option's default (bf16) gives way to the hardware's (fp16) where the GPU has no bf16 peak:
    estimate's fit and plan's dtype, as simulate and serve already took hardware.default_dtype."""
    code, out, err = run_main(["estimate", "--model", "llama2-7b", "--hardware", "v100-32gb", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["dtype"] == "fp16" and data["fit"]["hardware"] == "v100-sxm2-32gb"
    code, out, err = run_main(["simulate", "--model", "llama2-7b", "--hardware", "v100-32gb", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["dtype"] == "fp16", err


def test_the_hardware_table_lists_them_with_fp16_where_bf16_is_absent(capsys):
    code, out, _ = run_main(["hardware"], capsys)
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert set(NEW) <= set(lines)
    assert "125.00 TFLOP/s (fp16)" in lines["v100-sxm2-32gb"] and "Tesla V100-SXM2-32GB" in lines["v100-sxm2-32gb"]
    assert "70.00 TFLOP/s" in lines["a10g"] and "(fp16)" not in lines["a10g"]
