"""The h200 preset's one-row GEMV (its bytes' rate and its fixed time) read from the project's own H200
measurement, benchmarks/h200-measured.json (validate/FINDINGS.md, "H200's small GEMMs from the project's
measurement"): computed here from that file's points, so an edit of either shows."""

import json
from pathlib import Path

import pytest

from costmodel.config import ConfigError
from costmodel.hardware import Efficiency, Hardware, load_hardware
from costmodel.kernel_time import Gemm, KernelTimer
from validate.device_rates import streaming_fit

MEASURED = Path(__file__).resolve().parent.parent / "benchmarks" / "h200-measured.json"


def _measurements() -> dict:
    return json.loads(MEASURED.read_text())["_measurements"]


def _bf16_points() -> list[tuple[int, float]]:
    """(weight bytes, seconds) of each bf16 F.linear call at one token, as the file records them."""
    return [(s["bf16"]["stored_bytes"], s["bf16"]["seconds"]) for s in _measurements()["int4_gemv_by_shape"]["shapes"]]


def test_h200_gemv_fields_are_the_files_fit():
    """11 shapes (16.8-117 MB), least squares T = a + V / b: a = 4.725 us, b = 4,158 GB/s. The calls ran
    back to back on a stream, so a holds the stream's per-kernel gap, measured beside them (1.818 us),
    which the kernel model charges apart (graph_kernel_s): the GEMV's own fixed time is a less that gap."""
    points = _bf16_points()
    assert len(points) == 11
    intercept, rate = streaming_fit(points)
    gap = _measurements()["graph_kernel"]["stream_kernel_s"]
    h200 = load_hardware("h200")
    assert h200.gemv_kernel_bytes_per_s == rate
    assert h200.gemv_kernel_startup_s == intercept - gap
    assert round(intercept * 1e9) == 4725 and round(rate / 1e9) == 4158 and round((intercept - gap) * 1e9) == 2907


def test_h200_gemv_model_reproduces_the_measurement():
    """The kernel model's one-row bf16 product at each measured shape, plus the stream's gap, refitted: the
    file's own line, within the token's and the output's 2 (n + k) bytes the model adds (3 ns, 0.02%)."""
    timer = KernelTimer(load_hardware("h200"), "bf16")
    gap = _measurements()["graph_kernel"]["stream_kernel_s"]
    shapes = _measurements()["int4_gemv_by_shape"]["shapes"]
    modelled = [(s["bf16"]["stored_bytes"], timer.gemm_seconds(Gemm(1, s["n"], s["k"])) + gap) for s in shapes]
    intercept, rate = streaming_fit(modelled)
    measured_intercept, measured_rate = streaming_fit(_bf16_points())
    assert abs(intercept - measured_intercept) < 5e-9 and abs(rate / measured_rate - 1) < 1e-3
    # 4096 x 4096 (33.6 MB): 2.907 us + 33,570,816 B / 4,158.2 GB/s = 10.98 us (was 1.955 + 33,570,816 / 3,840 = 10.70)
    assert round(timer.gemm_seconds(Gemm(1, 4096, 4096)) * 1e8) == 1098


def test_batched_products_more_rows_and_other_gpus_keep_the_streaming_terms():
    """Only a single one-row product is what was measured: a batched one (count > 1) and a GEMM of more rows keep
    dram_kernel_startup_s and bandwidth x efficiency.memory (h200.json states no gemv_bandwidth: 3,840 GB/s); the
    other GPUs have no GEMV terms of their own (none measured)."""
    h200 = load_hardware("h200")
    timer = KernelTimer(h200, "bf16")
    assert h200.gemv_bandwidth_bytes_per_s == 0 and timer.gemv_bandwidth == 4.8e12 * 0.8
    moved = 2 * (2 * 4096 * 4096 + 2 * (4096 + 4096))
    assert timer.gemm_seconds(Gemm(1, 4096, 4096, count=2)) == pytest.approx(1.955e-6 + moved / 3.84e12, rel=1e-12)
    two_rows = Gemm(2, 4096, 4096)
    assert timer.gemm_seconds(two_rows) == pytest.approx(1.955e-6 + (2 * 4096 * 4096 + 4 * 8192) / 3.84e12, rel=1e-12)
    # a memory efficiency given on the command line rules the one-row product too, as it rules gemv_bandwidth
    given = KernelTimer(h200, "bf16", efficiency=Efficiency(compute=0.7, memory=0.5, given=("memory",)))
    assert given.gemm_seconds(Gemm(1, 4096, 4096)) == pytest.approx(2.9074449955e-6 + 33_570_816 / 2.4e12, rel=1e-9)
    for name in ("h100-sxm", "a100-80gb", "h20", "h800", "gh200-96gb", "b200", "mi300x"):
        other = load_hardware(name)
        assert (other.gemv_kernel_startup_s, other.gemv_kernel_bytes_per_s) == (0.0, 0.0), name


def test_negative_gemv_start_is_refused():
    data = load_hardware("h200").to_dict()
    data["gemv_kernel_startup_s"] = -1e-6
    with pytest.raises(ConfigError, match="gemv_kernel_startup_s"):
        Hardware.from_dict(data, source="x.json")
