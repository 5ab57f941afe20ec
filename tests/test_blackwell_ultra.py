"""The GPUs users now train on (issue 18): the B300 (HGX/DGX B300), the GB300 (one GPU of a GB300
NVL72 rack) and AMD's MI355X, and two PCIe cards users asked for, the L40 and the A40. Each preset
loads and round-trips, its datasheet peaks are the ones its `source` cites (exact), the dtypes
Blackwell Ultra cuts are refused in one line, and the names people type (and the driver prints)
resolve."""

from __future__ import annotations

import json

import pytest

from costmodel.hardware import HARDWARE_DIR, Hardware, hardware_names, load_hardware, schema_problems
from costmodel.collectives import nccl_facts
from tests.cli_run import run_main

NEW = ("b300", "gb300", "mi355x", "l40", "a40")
GiB = 2**30


def test_each_preset_loads_round_trips_and_cites_its_sources():
    assert set(NEW) <= set(hardware_names())
    for name in NEW:
        hw = load_hardware(name)
        assert schema_problems(hw.to_dict()) == [] and Hardware.from_dict(hw.to_dict(), "again") == hw, name
        assert "datasheet" in hw.source or "specifications" in hw.source, name
        assert "the dtypes this file carries" in hw.source, name
        assert hw.sm_count > 0 and hw.memory_reserve_bytes == 512 * 2**20 and hw.default_dtype == "bf16", name
        network = json.loads((HARDWARE_DIR / f"{name}.json").read_text())["interconnect"]
        assert "latency: a stated 10 us" in network["source"], name


def test_b300_peaks_are_the_hgx_b300_datasheets_per_gpu():
    # HGX B300 (8 GPUs), with sparsity: FP8 72, FP16/BF16 36, TF32 18 PFLOPS; FP32 600 TFLOPS; /8, sparse halved.
    b300 = load_hardware("b300")
    # MXFP8 at the FP8 rate; FP4: 105 PFLOPS dense for 8 GPUs (144 with sparsity: not twice).
    assert b300.flops_per_s == {"fp32": 600e12 / 8, "tf32": 18e15 / 8 / 2, "bf16": 36e15 / 8 / 2,
                                "fp16": 36e15 / 8 / 2, "fp8": 72e15 / 8 / 2, "mxfp8": 72e15 / 8 / 2,
                                "fp4": 105e15 / 8}
    assert {k: int(v) for k, v in b300.flops_per_s.items()} == {
        "fp32": 75_000_000_000_000, "tf32": 1_125_000_000_000_000, "bf16": 2_250_000_000_000_000,
        "fp16": 2_250_000_000_000_000, "fp8": 4_500_000_000_000_000, "mxfp8": 4_500_000_000_000_000,
        "fp4": 13_125_000_000_000_000}
    # 288 GB HBM3e at 8 TB/s (DGX B300: 64 TB/s over 8); 148 SMs measured (multiProcessorCount).
    assert (b300.memory_bytes, b300.bandwidth_bytes_per_s, b300.sm_count) == (288 * GiB, 8e12, 148)
    # Bekman's MAMF (ml-engineering 744d01e): 1769.0 of 2250 BF16, 3353.3 of 4500 FP8.
    assert b300.matmul_efficiency == {"bf16": 0.786, "fp16": 0.786, "fp8": 0.745}
    assert b300.sustained_matmul_efficiency == {}
    # NVLink 5: 900 GB/s per direction inside the 8-GPU node; one 800 Gb/s ConnectX-8 a GPU beyond it.
    assert (b300.gpus_per_node, b300.link(8), b300.link(16)) == (8, 900e9, 800e9 / 8)


def test_gb300_peaks_are_the_nvl72_datasheets_per_gpu():
    # GB300 NVL72 (72 GPUs), with sparsity: FP8 720, FP16/BF16 360, TF32 180 PFLOPS; /72, sparse halved.
    gb300 = load_hardware("gb300")
    assert {k: int(v) for k, v in gb300.flops_per_s.items()} == {
        "fp32": 80_000_000_000_000, "tf32": 180_000_000_000_000_000 // 72 // 2,
        "bf16": 360_000_000_000_000_000 // 72 // 2, "fp16": 360_000_000_000_000_000 // 72 // 2,
        "fp8": 720_000_000_000_000_000 // 72 // 2, "mxfp8": 720_000_000_000_000_000 // 72 // 2,
        "fp4": 1_080_000_000_000_000_000 // 72}  # MXFP8 at the FP8 rate; FP4 1,080 PFLOPS dense a rack
    # 576 TB/s over 72 GPUs; 288 GB each; no MAMF row: large GEMMs at efficiency.compute.
    assert (gb300.memory_bytes, gb300.bandwidth_bytes_per_s) == (288 * GiB, 576e12 / 72)
    assert gb300.matmul_efficiency == {} and gb300.efficiency["compute"] == 0.7
    # One NVLink domain of 72; ConnectX-8 (800 Gb/s) beyond the rack.
    assert (gb300.gpus_per_node, gb300.link(72), gb300.link(144)) == (72, 900e9, 100e9)


def test_mi355x_peaks_are_clock_times_matrix_cores():
    # 2400 MHz x 512 FMAs per Matrix Core per clock x 2 x 1024 Matrix Cores = 2516.6 TFLOP/s (AMD: 2.5 PF);
    # FP8 and INT8 twice; FP32 vector 256 CUs x 2400 MHz x 256 = 157.3 TFLOP/s. No TF32 figure published.
    mi = load_hardware("mi355x")
    bf16 = 2_400_000_000 * 512 * 2 * 1024
    assert bf16 == 2_516_582_400_000_000
    assert {k: int(v) for k, v in mi.flops_per_s.items()} == {
        "fp32": 157_286_400_000_000, "bf16": bf16, "fp16": bf16, "fp8": 2 * bf16, "int8": 2 * bf16}
    assert (mi.memory_bytes, mi.bandwidth_bytes_per_s, mi.sm_count, mi.clock_mhz, mi.power_watts) == (
        288 * GiB, 8e12, 256, 2400, 1400)
    # MAMF 1565.0 TFLOP/s BF16 (ml-engineering 744d01e) over this file's peak, not the table's 2300.
    # FP8 (wt37_mi355x): hipBLASLt 3,130.21 TFLOP/s at 8,192 cubed (ROCm blog cdna4-gemm-kernels, Table 5)
    # over the 5,033.2 FP8 peak; the generic 0.7 before.
    assert mi.matmul_efficiency == {"bf16": round(1565.0 / 2516.5824, 3), "fp16": 0.622,
                                    "fp8": round(3130.21 / 5033.1648, 3)}
    assert round(3130.21 / 5033.1648, 3) == 0.622 and round(2750.42 / 5033.1648, 3) == 0.546
    # Infinity Fabric: 7 links of 153.6 GB/s bidirectional (76.8 a direction); a 400 Gb/s NIC a GPU.
    assert (mi.link(8), mi.link(16)) == (7 * 153.6e9 / 2, 400e9 / 8)


def test_blackwell_ultra_joins_the_nvlink_hardware_and_amd_does_not():
    nvlink = nccl_facts()["intra_node_all_reduce"]["hardware"]
    assert {"b300", "gb300"} <= set(nvlink) and "mi355x" not in nvlink


def test_l40_and_a40_peaks_are_their_datasheets_and_sms_times_clock():
    # L40 datasheet: FP32 90.5, TF32 90.5, BF16/FP16 181.05, FP8 362, INT8 362 TOPS (dense); 48 GB at 864 GB/s.
    l40 = load_hardware("l40")
    assert l40.flops_per_s == {"fp32": 90.5e12, "tf32": 90.5e12, "bf16": 181.05e12, "fp16": 181.05e12,
                               "fp8": 362e12, "int8": 362e12}
    assert (l40.memory_bytes, l40.bandwidth_bytes_per_s, l40.power_watts, l40.gpus_per_node) == (48 * GiB, 864e9, 300, 8)
    # A40 datasheet: FP32 37.4, TF32 74.8, BF16/FP16 149.7, INT8 299.3 TOPS; 696 GB/s; NVLink 112.5 GB/s a pair.
    a40 = load_hardware("a40")
    assert a40.flops_per_s == {"fp32": 37.4e12, "tf32": 74.8e12, "bf16": 149.7e12, "fp16": 149.7e12, "int8": 299.3e12}
    assert (a40.memory_bytes, a40.bandwidth_bytes_per_s, a40.link(2), a40.link(4)) == (48 * GiB, 696e9, 56.25e9, 32e9)
    assert a40.missing_peak("fp8") == "a40 has no fp8 peak (Ampere); use --dtype bf16."
    # SMs x boost clock x dense FLOP per SM per clock (AD102 as the L40 runs it 512; GA102 professional 1,024)
    # give the datasheet's BF16: a wrong SM count or clock fails here.
    assert l40.sm_count * l40.clock_mhz * 1e6 * 512 == pytest.approx(l40.peak("bf16"), rel=3e-4)
    assert a40.sm_count * a40.clock_mhz * 1e6 * 1024 == pytest.approx(a40.peak("bf16"), rel=3e-4)


@pytest.mark.parametrize("typed, preset", [
    ("B300", "b300"), ("B300 SXM", "b300"), ("b300-sxm6", "b300"), ("DGX-B300", "b300"), ("HGX B300", "b300"),
    ("NVIDIA B300 SXM6 AC", "b300"), ("GB300", "gb300"), ("NVIDIA GB300", "gb300"), ("DGX-GB300", "gb300"),
    ("GB300 NVL72", "gb300"), ("MI355X", "mi355x"), ("AMD Instinct MI355X", "mi355x"), ("mi355x_oam", "mi355x"),
    ("NVIDIA L40", "l40"), ("L40", "l40"), ("L40S", "l40s"), ("NVIDIA A40", "a40"), ("a40 48gb", "a40"),
])
def test_each_name_resolves(typed, preset):
    assert load_hardware(typed).name == preset


def test_the_mi350x_says_which_to_give(capsys):
    code, out, err = run_main(["simulate", "--model", "llama2-7b", "--hardware", "MI350X"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "mi355x" in err and "clock_limit_mhz 2200" in err, err


def test_an_fp8_run_works_and_an_int8_peak_is_refused_on_blackwell_ultra(capsys):
    code, out, err = run_main(["simulate", "--model", "llama2-7b", "--hardware", "gb300", "--train", "--tp", "2",
                               "--fp8", "tensorwise"], capsys)
    assert code == 0, err
    assert load_hardware("b300").missing_peak("int8") == "b300 has no int8 peak (Blackwell); use --dtype bf16."
    assert load_hardware("mi355x").missing_peak("tf32") == "mi355x has no tf32 peak (CDNA 4); use --dtype bf16."


def test_the_hardware_table_lists_them(capsys):
    code, out, _ = run_main(["hardware"], capsys)
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert code == 0 and set(NEW) <= set(lines)
    assert "2.25 PFLOP/s" in lines["b300"] and "2.50 PFLOP/s" in lines["gb300"] and "2.52 PFLOP/s" in lines["mi355x"]
    assert "NVIDIA B300 SXM6 AC" in lines["b300"] and "AMD Instinct MI355X" in lines["mi355x"]
