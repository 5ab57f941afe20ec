"""`hardware --measure --out` (issue 18): a device measured into a hardware file of the schema,
run here on the CPU so that the path a GPU takes is tested."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.hardware import load_hardware

pytest.importorskip("torch")


def test_measuring_the_cpu_writes_a_hardware_file_that_loads(tmp_path, capsys):
    path = tmp_path / "this-cpu.json"
    assert cli.main(["hardware", "--measure", "--out", str(path), "--device", "cpu", "--quick"]) == 0
    assert capsys.readouterr().out.strip() == str(path)
    hw = load_hardware(str(path))
    data = json.loads(path.read_text())
    assert hw.name == "this-cpu" and hw.flops_per_s["fp32"] > 0 and hw.bandwidth_bytes_per_s > 0
    assert "measured" in hw.source and "torch" in hw.source
    assert data["_measurements"]["gemm"]["fp32"] and data["_measurements"]["attention"]
    assert hw.flops_per_s["fp32"] == max(r["flops_per_s"] for r in data["_measurements"]["gemm"]["fp32"])
    # The fastest shape held under full load (settle, then a timed window): a training step's rate.
    sustained = data["_measurements"]["sustained_gemm"]["fp32"]
    assert (sustained["m"], sustained["n"], sustained["k"]) in [(r["m"], r["n"], r["k"])
                                                                for r in data["_measurements"]["gemm"]["fp32"]]
    assert sustained["flops_per_s"] > 0 and 0 < hw.sustained_matmul_efficiency["fp32"] <= 1
    assert hw.sustained_matmul_efficiency["fp32"] == min(1.0, sustained["flops_per_s"] / hw.flops_per_s["fp32"])


def test_like_a_preset_keeps_its_peaks_and_records_efficiencies(tmp_path, capsys):
    path = tmp_path / "mine.json"
    assert cli.main(["hardware", "--measure", "--out", str(path), "--device", "cpu", "--quick",
                     "--like", "a100-80gb"]) == 0
    hw, a100 = load_hardware(str(path)), load_hardware("a100-80gb")
    assert hw.flops_per_s == a100.flops_per_s and hw.gpus_per_node == 8
    assert 0 < hw.matmul_efficiency["fp32"] <= 1 and 0 < hw.efficiency["memory"] <= 1
    assert 0 < hw.sustained_matmul_efficiency["fp32"] <= 1


def test_a_missing_device_is_one_line(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert cli.main(["hardware", "--measure", "--out", str(tmp_path / "x.json"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cuda" in err


# The kernel model's per-kernel fields (issue 18, scope 6): the Dot's read-and-reduce rate, the
# CUDA graph's kernel gap (not on a CPU), the weight-only GEMVs, a CPU's rows table and dispatch.

@pytest.fixture(scope="module")
def cpu_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("hw") / "cpu-rates.json"
    assert cli.main(["hardware", "--measure", "--out", str(path), "--device", "cpu", "--quick"]) == 0
    return path, json.loads(path.read_text())


def test_the_gemv_bandwidth_is_the_dot_beside_its_copy(cpu_file):
    path, data = cpu_file
    hw = load_hardware(str(path))
    stream = data["_measurements"]["stream"]
    # BabelStream's counting, exactly: each rate is two arrays' bytes over its median time (a unit
    # slip, bits for bytes or one array for two, breaks the equality). How the two rates compare is
    # the machine's, not the code's: on this shared 2-core machine under a parallel test run the Dot
    # has read from under a quarter to over four times the Copy's rate, so no bound is asserted on it.
    assert 0 < hw.gemv_bandwidth_bytes_per_s == stream["dot_bytes_per_s"]
    # the schema holds the Dot at or under the bandwidth: a Dot faster than the copy is the file's bandwidth
    assert hw.bandwidth_bytes_per_s == max(data["_measurements"]["copy_bandwidth_bytes_per_s"], stream["dot_bytes_per_s"])
    assert stream["dot_bytes_per_s"] == 2 * stream["array_bytes"] / stream["dot_seconds"]
    assert stream["copy_bytes_per_s"] == 2 * stream["array_bytes"] / stream["copy_seconds"]
    assert stream["dtype"] == "fp64" and stream["array_bytes"] == 8 * stream["elements"]
    assert "gemv_bandwidth_bytes_per_s: BabelStream's Copy (c = a) and Dot (torch.dot(a, b)" in hw.source
    assert "the Dot's rate" in hw.source


def test_a_cpu_writes_no_graph_gap_and_says_why(cpu_file):
    path, data = cpu_file
    assert "graph_kernel_s" not in data and load_hardware(str(path)).graph_kernel_s == 0
    assert "no CUDA graphs" in data["_measurements"]["graph_kernel"]["not_measured"]
    assert "graph_kernel_s:" not in data["source"]


def test_a_cpu_file_has_local_s_rows_table_and_dispatch(cpu_file):
    from validate.hardware_file import CPU_ROWS

    path, data = cpu_file
    hw = load_hardware(str(path))
    table = hw.gemm_efficiency_by_rows["fp32"]
    assert [m for m, _ in table] == list(CPU_ROWS["quick"])
    efficiencies = [e for _, e in table]
    assert all(0 < e <= 1 for e in efficiencies) and efficiencies == sorted(efficiencies) and efficiencies[-1] == 1.0
    raw = data["_measurements"]["gemm_rows_flops_per_s"]["fp32"]
    assert efficiencies[0] == pytest.approx(raw["1"] / max(raw.values()))
    assert 0 < hw.dispatch_s_per_op < 1e-3
    assert "gemm_efficiency_by_rows as validate/calibrate.py" in hw.source and "dispatch_s_per_op as" in hw.source
    # and the module code's time per op, which a counted eager implementation's ops take
    assert 0 < hw.module_s_per_op < 1e-3 and hw.eager_op_s == hw.module_s_per_op and "module_s_per_op as" in hw.source
    assert data["_measurements"]["module_per_op"]["ops"] == 148  # tests/test_module_per_op.py derives it


def test_the_weight_only_gemvs_are_recorded_with_their_bytes(cpu_file):
    import torch

    _, data = cpu_file
    gemv = data["_measurements"]["weight_only_gemv"]
    n, k, group = gemv["n"], gemv["k"], gemv["int4_group"]
    products = gemv["products"]
    assert products["bf16"]["fraction_of_bf16"] == 1.0 and products["bf16"]["stored_bytes"] == 2 * n * k
    dot = data["_measurements"]["stream"]["dot_bytes_per_s"]
    assert gemv["bf16_over_dot"] == pytest.approx(products["bf16"]["bytes_per_s"] / dot)
    # int8: a byte a weight and a bf16 scale a row; int4: half a byte a weight and a bf16 scale
    # and zero a group of 128 along K.
    expected = {"int8": n * k + 2 * n, "int8_eager_dequantize": n * k + 2 * n, "int4": n * k // 2 + 4 * n * k // group}
    for key, stored in expected.items():
        row = products[key]
        assert row["stored_bytes"] == stored and row["bytes_per_s"] > 0
        assert row["fraction_of_bf16"] == pytest.approx(row["bytes_per_s"] / products["bf16"]["bytes_per_s"])
    # This torch's CPU build has both weight-only ops (they are what the GPU's are measured by).
    assert products["int8"]["op"] == "torch._weight_int8pack_mm" and hasattr(torch, "_weight_int8pack_mm")
    assert products["int4"]["op"] == "torch._weight_int4pack_mm_for_cpu"


def test_the_int4_gemvs_are_recorded_by_shape_and_group_each_call_reading_a_fresh_copy(cpu_file):
    from validate.device_rates import INT4_DECODE_GROUPS, INT4_DECODE_SHAPES, ROTATION_BYTES

    _, data = cpu_file
    table = data["_measurements"]["int4_gemv_by_shape"]
    assert [(row["n"], row["k"]) for row in table["shapes"]] == list(INT4_DECODE_SHAPES["quick"])
    assert table["groups"] == [32, 64, 128] == list(INT4_DECODE_GROUPS)
    rotation = table["rotation_bytes"]
    assert rotation == ROTATION_BYTES["quick"] == 4 * 2**20
    for row in table["shapes"]:
        n, k, bf16 = row["n"], row["k"], row["bf16"]
        assert (n, k) == (384, 512) and bf16["stored_bytes"] == 2 * 384 * 512 == 393_216
        assert bf16["copies"] == 11  # ceil(4 MiB / 393,216): the fewest copies spanning the rotation
        assert bf16["bytes_per_s"] == pytest.approx(bf16["stored_bytes"] / bf16["seconds"])
        assert bf16["queued"] is None  # a CPU's wall clock; a GPU's queued behind a sleep
        # half a byte a weight, a bf16 scale and zero a group along K: 98,304 + 4 n k / group
        expected = {"32": 122_880, "64": 110_592, "128": 104_448}
        for group, stored in expected.items():
            int4 = row["int4"][group]
            assert int4["op"] == "torch._weight_int4pack_mm_for_cpu" and int4["stored_bytes"] == stored
            assert (int4["copies"] - 1) * stored < rotation <= int4["copies"] * stored
            assert int4["fraction_of_bf16"] == pytest.approx(stored / int4["seconds"] / bf16["bytes_per_s"])
        # the FP8 W8A8 product (torch._scaled_mm, this torch's CPU build has it): one byte a weight
        # and the fp32 per-tensor scale, 384 x 512 + 4; 22 copies = ceil(4 MiB / 196,612)
        fp8 = row["fp8_w8a8"]
        assert fp8["op"] == "torch._scaled_mm" and fp8["stored_bytes"] == 384 * 512 + 4 == 196_612
        assert fp8["copies"] == 22 and (fp8["copies"] - 1) * fp8["stored_bytes"] < rotation
        assert fp8["fraction_of_bf16"] == pytest.approx(196_612 / fp8["seconds"] / bf16["bytes_per_s"])


def test_on_cuda_a_rotation_is_timed_by_the_gpu_behind_a_sleep(monkeypatch):
    """rotating_seconds' CUDA branch, queued_seconds stood in (no GPU here): the whole rotation is
    queued once a round, its GPU time divided by the copies, and whether it was queued is kept."""
    from validate import device_rates

    called, rounds = [], []
    def queued(launch, repeats):
        rounds.append(repeats)
        launch()
        return {"seconds": 3e-4, "cpu_launch_seconds": 1e-4, "queued": True}
    monkeypatch.setattr(device_rates, "queued_seconds", queued)
    timed = device_rates.rotating_seconds(called.append, ["a", "b", "c"], "cuda", repeats=7)
    assert timed == {"seconds": pytest.approx(1e-4), "queued": True}
    assert called == ["a", "b", "c"] and rounds == [7]
    timed = device_rates.rotating_seconds(called.append, ["a", "b"], "cpu", repeats=2)
    assert timed["queued"] is None and timed["seconds"] > 0 and called[3:] == ["a", "b"] * 3  # a warm-up round


def test_the_int4_shapes_are_the_published_int4_runs_weights():
    """INT4_DECODE_SHAPES["full"]: each (N, K) one of the weight matrices of the published int4
    decoding runs (published_runs.json: Llama-2-7B, Llama-2-70B at tp 8, Llama-3-8B; gpt-fast and
    torchao fuse q, k and v into one wqkv), derived here from the presets."""
    from costmodel.presets import load_preset
    from validate.device_rates import INT4_DECODE_SHAPES

    expected = []
    for name, tp in (("llama2-7b", 1), ("llama2-70b", 8), ("llama3-8b", 1)):
        c = load_preset(name)
        expected += [((c.n_heads + 2 * c.n_kv_heads) * c.d_head // tp, c.d_model),  # wqkv
                     (c.d_model, c.n_heads * c.d_head // tp),  # wo
                     (c.d_ff // tp, c.d_model),  # w1 and w3
                     (c.d_model, c.d_ff // tp)]  # w2
    assert sorted(set(expected)) == sorted(INT4_DECODE_SHAPES["full"])
    assert len(INT4_DECODE_SHAPES["full"]) == 11  # Llama-3-8B's wo (4096 x 4096) is Llama-2-7B's


def test_the_written_file_round_trips(cpu_file):
    from costmodel.hardware import Hardware

    path, data = cpu_file
    hw = load_hardware(str(path))
    again = Hardware.from_dict(hw.to_dict(), "again")
    assert again == hw
    assert hw.to_dict()["gemv_bandwidth_bytes_per_s"] == data["gemv_bandwidth_bytes_per_s"]
    assert hw.to_dict()["dispatch_s_per_op"] == data["dispatch_s_per_op"]
    assert hw.to_dict()["module_s_per_op"] == data["module_s_per_op"]


def test_like_a_preset_keeps_its_gpu_tables_and_takes_the_measured_dot(tmp_path):
    path = tmp_path / "like.json"
    assert cli.main(["hardware", "--measure", "--out", str(path), "--device", "cpu", "--quick", "--like", "h100-sxm"]) == 0
    data = json.loads(path.read_text())
    hw, h100 = load_hardware(str(path)), load_hardware("h100-sxm")
    assert hw.gemv_bandwidth_bytes_per_s == data["_measurements"]["stream"]["dot_bytes_per_s"] > 0
    # a CPU's rows table and dispatch would replace the GPU's tiles and launches: not written
    assert "gemm_efficiency_by_rows" not in data and "dispatch_s_per_op" not in data
    assert "module_s_per_op" not in data
    assert hw.graph_kernel_s == h100.graph_kernel_s  # not measured on a CPU: the preset's stays
    assert "whose other fields stay where not measured here" in hw.source


def test_on_cuda_a_positive_graph_gap_is_written_with_its_method(monkeypatch):
    """The CUDA branch's wiring, the device's measurements replaced by stand-ins (no GPU here):
    a positive gap becomes graph_kernel_s with its method in the source; a gap the noise made
    zero or negative is kept in _measurements only."""
    from validate import device_rates, hardware_file

    stream = {"dot_bytes_per_s": 4e12, "copy_bytes_per_s": 3e12, "method": "the stream"}
    monkeypatch.setattr(device_rates, "stream_rates", lambda device, grid, repeats: stream)
    monkeypatch.setattr(device_rates, "weight_only_gemv", lambda device, grid: {"products": {}})
    monkeypatch.setattr(device_rates, "int4_gemv_by_shape", lambda device, grid: {"shapes": [], "device": device})
    from validate import calibrate

    issued = []  # the host's issue time per op on the GPU (the eager step's host term)
    monkeypatch.setattr(calibrate, "dispatch_s_per_op", lambda repeats, device: issued.append(device) or 6.5e-6)
    module = {"seconds_per_op": 1.3e-5, "ops": 148, "forward_s": 148 * 1.3e-5, "width": 32}
    monkeypatch.setattr(calibrate, "module_seconds_per_op", lambda repeats, device: issued.append(device) or module)
    for gap, written in ((1.5e-6, True), (-2e-8, False)):
        monkeypatch.setattr(device_rates, "graph_kernel_gap", lambda gap=gap: {"graph_kernel_s": gap, "method": "chains"})
        floors = []
        monkeypatch.setattr(device_rates, "dram_kernel_startup",
                            lambda floor=None, gap=gap: floors.append(floor) or {"dram_kernel_startup_s": 2 * gap,
                                                                                   "method": "the fit"})
        rates = hardware_file.measure_kernel_rates("cuda", "full", cpu_tables=True, rows=True)
        assert rates["fields"].get("graph_kernel_s") == (gap if written else None)
        assert ("graph_kernel_s: chains" in rates["sources"]) == written
        assert rates["measurements"]["graph_kernel"]["graph_kernel_s"] == gap
        assert rates["fields"].get("dram_kernel_startup_s") == (2 * gap if written else None)
        assert ("dram_kernel_startup_s: the fit" in rates["sources"]) == written
        assert rates["measurements"]["dram_startup"]["dram_kernel_startup_s"] == 2 * gap
        assert floors == [gap if written else None]  # less the gap measured beside it, where there is one
        assert rates["fields"]["gemv_bandwidth_bytes_per_s"] == 4e12
        assert rates["measurements"]["int4_gemv_by_shape"] == {"shapes": [], "device": "cuda"}  # kept, not a field
        assert "gemm_efficiency_by_rows" not in rates["fields"]  # a CPU's table: not a GPU's
        assert rates["fields"]["dispatch_s_per_op"] == 6.5e-6 and issued[-1] == "cuda"
        assert any(s.startswith("dispatch_s_per_op: the host's time to issue") for s in rates["sources"])
        assert rates["fields"]["module_s_per_op"] == 1.3e-5 and rates["measurements"]["module_per_op"] == module
        assert issued[-2:] == ["cuda", "cuda"]
        assert any(s.startswith("module_s_per_op: the host's time per aten op") for s in rates["sources"])


def test_gpu_check_measures_the_device_after_its_table(tmp_path, monkeypatch, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import gpu_check

    monkeypatch.setattr(gpu_check, "models", lambda device: [])  # the table's models: test_peak's dry run
    path = tmp_path / "after-check.json"
    assert gpu_check.main(["--device", "cpu", "--out", str(tmp_path / "r"), "--measure-hardware", str(path)]) == 0
    hw = load_hardware(str(path))
    assert hw.name == "after-check" and hw.gemv_bandwidth_bytes_per_s > 0 and hw.gemm_efficiency_by_rows["fp32"]
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["gemv_bandwidth_bytes_per_s"] == hw.gemv_bandwidth_bytes_per_s
    assert printed["module_s_per_op"] == hw.module_s_per_op > 0
    # the host's time per op on the device, beside the table
    host = json.loads((tmp_path / "r.json").read_text())["host_per_op"]
    assert host["module_ops"] == 148 and host["dispatch_s_per_op"] > 0 and host["module_s_per_op"] > 0
    assert host["module_over_dispatch"] == host["module_s_per_op"] / host["dispatch_s_per_op"]
    assert host["module_minus_dispatch_s"] == host["module_s_per_op"] - host["dispatch_s_per_op"]
    assert "host per op on the cpu: a bare add" in (tmp_path / "r.md").read_text()


class FakeGpu:
    """torch.cuda's calls that graph_kernel_gap and device_seconds make, on a clock of its own:
    each in-place add costs `stream_s` launched eagerly and `graph_s` replayed from a graph (no
    GPU here; the arithmetic and the calls' order are what is tested)."""

    def __init__(self, stream_s: float, graph_s: float):
        import torch

        self.clock, self.capturing, self.stream_s, self.graph_s = 0.0, None, stream_s, graph_s
        gpu = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = gpu.clock

            def elapsed_time(self, end):
                return (end.at - self.at) * 1e3

            def query(self):
                return False  # the sleep still runs

            def synchronize(self):
                pass

        class Graph:
            def __init__(self):
                self.adds = 0

            def replay(self):
                gpu.clock += self.adds * gpu.graph_s

        class Capture:
            def __init__(self, graph):
                self.graph = graph

            def __enter__(self):
                gpu.capturing = self.graph

            def __exit__(self, *exc):
                gpu.capturing = None

        class Counting(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if getattr(func, "__name__", "") == "add_":
                    if gpu.capturing is not None:
                        gpu.capturing.adds += 1
                    else:
                        gpu.clock += gpu.stream_s
                return func(*args, **(kwargs or {}))

        class Stream:
            def wait_stream(self, other):
                pass

        self.calls = {"Event": Event, "CUDAGraph": Graph, "graph": Capture, "Stream": Stream,
                      "stream": lambda s: __import__("contextlib").nullcontext(),
                      "current_stream": Stream, "synchronize": lambda: None, "_sleep": lambda cycles: None}
        self.mode = Counting


def test_the_graph_gap_is_the_slope_over_two_chain_lengths(monkeypatch):
    import torch

    from validate import device_rates

    gpu = FakeGpu(stream_s=2.1e-6, graph_s=1.3e-6)
    for name, call in gpu.calls.items():
        monkeypatch.setattr(torch.cuda, name, call, raising=False)
    with gpu.mode():
        gap = device_rates.graph_kernel_gap(repeats=3, device="cpu")
    assert gap["graph_kernel_s"] == pytest.approx(1.3e-6) and gap["stream_kernel_s"] == pytest.approx(2.1e-6)
    short, long = device_rates.GRAPH_LENGTHS
    assert gap["graph"][str(long)]["seconds"] == pytest.approx(long * 1.3e-6) and gap["graph"][str(short)]["queued"]
    assert "torch.cuda.CUDAGraph" in gap["method"] and f"(t({long}) - t({short}))" in gap["method"]
    # device_seconds on a GPU: CUDA events around `inner` calls, per call
    assert device_rates.device_seconds(lambda: setattr(gpu, "clock", gpu.clock + 5e-6), "cuda", 3, 4) == pytest.approx(5e-6)


def test_the_streaming_fit_reproduces_gpu_benches_a100_intercept():
    """gpu-benches' SCALE kernel in a CUDA graph on an A100 80GB (te42kyfo/gpu-benches,
    gpu-small-kernels/a100_80_graph.txt: elements, then GB/s at the best block size): the fit the
    a100-80gb file's dram_kernel_startup_s comes from, a = 3.30 us and b = 1,752 GB/s."""
    from validate.device_rates import streaming_fit

    table = {3_308_414: 1580, 4_861_142: 1633, 7_142_609: 1669, 10_494_834: 1694, 15_420_351: 1712,
             22_657_553: 1724, 33_291_376: 1734, 48_915_950: 1740, 61_620_009: 1742}
    a, b = streaming_fit({16 * n: 16 * n / (rate * 1e9) for n, rate in table.items()})
    assert a == pytest.approx(3.30e-6, abs=0.05e-6) and b == pytest.approx(1752e9, rel=0.005)
    assert load_hardware("a100-80gb").dram_kernel_startup_s == pytest.approx(a - 4096 * 16 / 49e9, abs=0.05e-6)
    with pytest.raises(ValueError):
        streaming_fit({1: 1.0})


def test_the_dram_startup_is_the_fits_intercept_less_the_smallest_kernel(monkeypatch):
    """dram_kernel_startup's steps on a CPU, torch.cuda's calls stood in by a clock on which each
    SCALE kernel of n fp64 elements takes 1.3 us + 16 n / 2 TB/s (the arithmetic and the calls'
    order are what is tested; no GPU here)."""
    import torch

    from validate import device_rates

    gpu = FakeGpu(stream_s=0.0, graph_s=0.0)
    floor, start, rate = 1.3e-6, 2.0e-6, 2e12

    class Graph:
        def __init__(self):
            self.seconds = 0.0

        def replay(self):
            gpu.clock += self.seconds

    class Scaling(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "mul" and gpu.capturing is not None:
                n = args[0].numel()
                gpu.capturing.seconds += floor + (start if n > 4096 else 0.0) + 16 * n / rate
            return func(*args, **(kwargs or {}))

    for name, call in {**gpu.calls, "CUDAGraph": Graph}.items():
        monkeypatch.setattr(torch.cuda, name, call, raising=False)
    with Scaling():
        out = device_rates.dram_kernel_startup(repeats=3, device="cpu", elements=(2**12 + 8, 2**14, 2**16),
                                               smallest=4096, kernels=10)
    assert out["smallest_kernel_s"] == pytest.approx(floor + 16 * 4096 / rate)
    assert out["bandwidth_bytes_per_s"] == pytest.approx(rate)
    assert out["intercept_s"] == pytest.approx(floor + start)
    assert out["dram_kernel_startup_s"] == pytest.approx(start - 16 * 4096 / rate)
    with Scaling():  # less a graph gap measured beside it: graph_kernel_s + the start = the intercept
        beside = device_rates.dram_kernel_startup(repeats=3, device="cpu", elements=(2**12 + 8, 2**14, 2**16),
                                                  smallest=4096, kernels=10, floor=1.0e-6)
    assert beside["dram_kernel_startup_s"] == pytest.approx(floor + start - 1.0e-6)
    assert "torch.cuda.CUDAGraph" in out["method"]
