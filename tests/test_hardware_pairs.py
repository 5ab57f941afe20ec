"""Fields of a hardware file that are defined with or borrowed beside another (validate/FINDINGS.md, "Hardware
files audited for half-borrowed fields", session 39): every bundled file is checked, so the next file added
cannot take one half of a pair without the other (h100-pcie.json and h100-nvl.json took the H200's DRAM
start-up time, defined net of the H100's CUDA-graph gap, without the gap: 1.3 us short a graphed kernel)."""

from __future__ import annotations

import json

import pytest

from costmodel.hardware_presets import HARDWARE_DIR

FILES = {path.stem: json.loads(path.read_text()) for path in sorted(HARDWARE_DIR.glob("*.json"))}

#: Each bundled GPU file's die: the chip its kernels' launch and its memory controller are. A per-kernel
#: figure measured on one board of a die is borrowed by the die's other boards (h100-pcie.json: "the same
#: GH100 chip"), so one die's files state the same graph_kernel_s and dram_kernel_startup_s, or none.
#: A file added to costmodel/hardware/ must be named here (test_every_file_names_its_die).
DIES = {
    "GV100": ("v100-pcie-16gb", "v100-pcie-32gb", "v100-sxm2-16gb", "v100-sxm2-32gb"),
    "TU104": ("t4",),
    "GA100": ("a100-40gb", "a100-64gb", "a100-80gb", "a100-pcie"),
    "GA102": ("a10", "a10g", "a40", "rtx-a6000", "rtx-3090"),
    "AD102": ("l40", "l40s", "rtx-4090"),
    "AD104": ("l4",),
    "GH100": ("h100-sxm", "h100-pcie", "h100-nvl", "h200", "h800", "h20", "gh200-96gb", "gh200-144gb",
              "h100-64gb"),
    "Blackwell (B200's die)": ("b200", "gb200"),
    "Blackwell Ultra (B300's die)": ("b300", "gb300"),
    "CDNA 2 (Aldebaran)": ("mi210", "mi250x"),
    "CDNA 3 (MI300X's die)": ("mi300x", "mi325x"),
    "CDNA 4 (MI355X's die)": ("mi355x",),
}

#: The measured fields a file may state, and the words its `source` must hold where it states one: a
#: figure with no word of where it comes from is a figure borrowed without its fact.
SOURCED = {"graph_kernel_s": "graph_kernel_s", "dram_kernel_startup_s": "dram_kernel_startup_s",
           "host_module_call_s": "host_module_call_s", "dispatch_s_per_op": "dispatch_s_per_op",
           "gemv_bandwidth_bytes_per_s": "gemv_bandwidth", "matmul_efficiency": "matmul_efficiency",
           "sustained_matmul_efficiency": "sustained_matmul_efficiency", "device_memory_bytes": "device_memory_bytes"}


def test_every_file_names_its_die():
    named = [name for names in DIES.values() for name in names]
    assert len(named) == len(set(named))
    assert sorted(named) == sorted(FILES), "name each new hardware file's die in DIES"


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_dram_start_up_time_comes_with_the_graph_gap_it_is_net_of(name):
    # dram_kernel_startup_s is a measured intercept less graph_kernel_s (hardware_schema.py): without the gap a
    # graphed kernel streaming from DRAM pays the intercept less the gap (h100-nvl: 1.955 us of the H200's 3.255).
    data = FILES[name]
    if data.get("dram_kernel_startup_s", 0) > 0:
        assert data.get("graph_kernel_s", 0) > 0, name


def test_one_dram_start_up_time_is_net_of_one_graph_gap():
    # Files borrowing one measured start-up time borrow the gap it was netted against, so gap + start is the
    # measured intercept in each: the H200's 1.3 + 1.955 = 3.255 us, the A100 80GB's 1.34 + 1.96 = 3.30 us.
    gaps: dict[float, set[float]] = {}
    for data in FILES.values():
        if data.get("dram_kernel_startup_s", 0) > 0:
            gaps.setdefault(data["dram_kernel_startup_s"], set()).add(data.get("graph_kernel_s", 0))
    assert gaps == {1.955e-06: {1.3e-06}, 1.96e-06: {1.34e-06}}


@pytest.mark.parametrize("die", sorted(DIES))
def test_one_die_states_one_launch_gap_and_one_dram_start(die):
    for field in ("graph_kernel_s", "dram_kernel_startup_s"):
        stated = {name: FILES[name].get(field, 0) for name in DIES[die]}
        assert len(set(stated.values())) == 1, (die, field, stated)


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_measured_field_has_its_source_and_each_efficiency_its_peak(name):
    data = FILES[name]
    for field, words in SOURCED.items():
        if field in data:
            assert words in data["source"], (name, field)
    for section in ("matmul_efficiency", "sustained_matmul_efficiency"):
        assert set(data.get(section, {})) <= set(data["flops_per_s"]), (name, section)
    burst, held = data.get("matmul_efficiency", {}), data.get("sustained_matmul_efficiency", {})
    assert set(held) <= set(burst), name  # a held rate is a burst rate's share, measured beside it
    assert all(held[d] <= burst[d] for d in held), name  # a saturated, settled clock is no faster


def test_the_gaps_the_audit_filled():
    # graph_kernel_s as measured: Hazy Research's H100 dummy kernel 1.3 us; gpu-benches' graphed SCALE kernel over
    # 4,096 doubles, 65,536 B at 70 GB/s on the L40 (0.936 us) and 60 GB/s on the A40 (1.092 us); the B200's 0.8 us
    # (Mirage, arXiv:2512.22219). host_module_call_s: TransformerEngine issue #2053's GH200 figure, 33.17 us.
    assert FILES["h100-nvl"]["graph_kernel_s"] == FILES["gh200-144gb"]["graph_kernel_s"] == 1.3e-06
    assert FILES["gh200-96gb"]["dram_kernel_startup_s"] == 1.955e-06
    assert FILES["l40"]["graph_kernel_s"] == FILES["l40s"]["graph_kernel_s"] == pytest.approx(65536 / 70e9, rel=1e-4)
    assert FILES["a40"]["graph_kernel_s"] == FILES["a10g"]["graph_kernel_s"] == pytest.approx(65536 / 60e9, rel=1e-4)
    assert FILES["gb200"]["graph_kernel_s"] == 8e-07
    assert FILES["gh200-96gb"]["host_module_call_s"] == FILES["gh200-144gb"]["host_module_call_s"] == 33.17e-6
