"""The HPC centres' GPU variants as hardware files (wt39_hpcgpus, session 39): Leonardo's A100 SXM4 64GB and
MareNostrum 5's H100 SXM5 64GB load and validate, their names resolve in any case, each one's derived figures
follow the stated rules from its parent (SMs x clock x per-SM rate; four 16 GB stacks at the parent's rate a
stack), and the Modalities rows that name them run on them."""

from __future__ import annotations

from costmodel.hardware import Hardware, load_hardware, schema_problems
from tests.unseen_rows import assert_first_computed, source_of

GiB = 2**30


def test_each_file_loads_and_validates_under_any_case():
    for name, parent in (("a100-64gb", "a100-80gb"), ("h100-64gb", "h100-sxm")):
        hw = load_hardware(name)
        assert schema_problems(hw.to_dict()) == [] and Hardware.from_dict(hw.to_dict(), "again") == hw, name
        assert load_hardware(name.upper()) == hw and "not published" in hw.source, name
        # peaks, SMs, clock, board power and the borrowed kernel rates are the parent's, stated so
        mother = load_hardware(parent)
        assert (hw.flops_per_s, hw.sm_count, hw.clock_mhz, hw.power_watts, hw.matmul_efficiency,
                hw.graph_kernel_s, hw.dram_kernel_startup_s) == (
            mother.flops_per_s, mother.sm_count, mother.clock_mhz, mother.power_watts,
            mother.matmul_efficiency, mother.graph_kernel_s, mother.dram_kernel_startup_s), name
        assert hw.memory_bytes == 64 * GiB and hw.gpus_per_node == 4 and hw.gemv_bandwidth_bytes_per_s == 0.0, name
    assert load_hardware("NVIDIA A100-SXM-64GB").name == "a100-64gb"  # the name Leonardo's driver reports
    assert load_hardware("NVIDIA H100 SXM5 64GB").name == "h100-64gb"  # NVIDIA's PCI ID name, 10de:2337


def test_the_a100_64gb_figures():
    a100 = load_hardware("a100-64gb")
    # bf16 dense: 108 SMs x 2,048 FLOPs a clock x 1,410 MHz = 311.87 TFLOP/s, the datasheet's 312
    assert 108 * 2048 * 1410e6 == 311_869_440_000_000 and round(311_869_440_000_000 / 1e12) * 1e12 == a100.peak("bf16")
    # HBM2e: 2,039 GB/s over five 16 GB stacks, four of them in 64 GB: 1,631.2 GB/s
    assert a100.bandwidth_bytes_per_s == 2039e9 / 5 * 4 == 1631.2e9
    # '2 x dual port HDR100 per node' over 4 GPUs: 100 Gb/s, 12.5 GB/s, a GPU; NVLink 3 4 links x 25 GB/s x 3 peers
    assert (a100.inter_node_bandwidth_bytes_per_s, a100.link(4)) == (4 * 100e9 / 8 / 4, 3 * 4 * 25e9)


def test_the_h100_64gb_figures():
    h100 = load_hardware("h100-64gb")
    # bf16 dense: 132 SMs x 4,096 FLOPs a clock x 1,830 MHz = 989.4 TFLOP/s (the datasheet's figure)
    assert round(132 * 4096 * 1830e6 / 1e11) * 1e11 == h100.peak("bf16") == 989.4e12
    # HBM3: 3.35 TB/s over five 16 GB stacks, four of them in 64 GB: 2.68 TB/s
    assert h100.bandwidth_bytes_per_s == 3.35e12 / 5 * 4 == 2.68e12
    # '4x ConnectX-7 NDR200 InfiniBand (800Gb/s bandwidth per node)' over 4 GPUs: 25 GB/s a GPU
    assert h100.inter_node_bandwidth_bytes_per_s == 800e9 / 8 / 4


def test_the_modalities_rows_run_on_the_parts_they_name():
    assert source_of("modalities-leonardo")["hardware"] == "a100-64gb"
    assert source_of("modalities-mn5")["hardware"] == "h100-64gb"
    for name in ("modalities-leonardo", "modalities-mn5"):
        source = source_of(name)
        assert "hardware_overrides" not in source and "wt39_hpcgpus" in source["amended"], name
    assert "'Leonardo Booster - NVIDIA A100 64GB'" in source_of("modalities-leonardo")["amended"]
    assert "'MareNostrum 5 - NVIDIA H100 64GB'" in source_of("modalities-mn5")["amended"]


# a moved row pinned: before -> after as `python cli.py published --json` diffed (FINDINGS, wt39_hpcgpus)
MOVED = {"modalities-leonardo 2.7b fsdp mbs2 4096 8xa100-64gb (table row 2)": 0.843,  # 0.893 on a100-80gb
         "modalities-mn5 2.7b fsdp mbs2 4096 4xh100-64gb (table row 2)": 1.075}  # 1.168 on h100-sxm


def test_a_moved_row_of_each_source():
    assert_first_computed(("modalities-leonardo", "modalities-mn5"), MOVED, {})
