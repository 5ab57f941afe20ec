"""Measures a device and writes a hardware file in costmodel/hardware.py's schema (`python cli.py
hardware --measure --out FILE [--device cpu|cuda] [--like PRESET]`).

What it measures, each the median of a few runs after a warm-up:
- a GEMM grid (square and tall shapes) in each dtype: the best FLOP/s reached. Without --like
  that is the file's peak; with --like PRESET the preset's datasheet peaks stay and the ratio
  becomes the file's matmul_efficiency (what the kernel time model uses);
- the same GEMM sustained: the grid's fastest shape run back to back until the clock has settled
  under full load (20 s), then timed over a window (4 s), as S. Bekman's mamf-finder measures its
  MSMF; the rate over the peak (with --like) or over the grid's best (without) becomes the
  file's sustained_matmul_efficiency, what a training step's GEMMs run at;
- memory bandwidth: a large copy (reads and writes), or the Dot's rate below where that is faster
  (the schema holds the GEMV rate at or under the bandwidth); with --like, the copy's ratio to the
  datasheet becomes efficiency.memory;
- scaled_dot_product_attention at a few lengths (causal, head_dim 128): FLOP/s under the dense
  convention, recorded for comparison in `_measurements`;
- the read-and-reduce rate (BabelStream's Dot beside its Copy, validate/device_rates.py): the
  file's gemv_bandwidth_bytes_per_s, what the kernel model moves a GEMM's bytes at;
- a batch-1 GEMV in bf16 and with int8 and int4 weights (PyTorch's weight-only ops, where the
  build has them): recorded in `_measurements` as fractions of the bf16 rate;
- on CUDA: the gap each kernel of a CUDA graph's replay takes (a chain of trivial kernels, two
  lengths), the file's graph_kernel_s, beside the same chain on a stream; a streaming kernel's
  fixed start at sizes past the L2 (T = a + V/b, less its smallest size's time), the file's
  dram_kernel_startup_s; the SM count, the
  memory a fresh context takes (total - free after initialisation) and torch's cuBLAS workspaces
  (device_rates.cublas_workspaces), together memory_reserve_bytes, the
  driver and CUDA versions; the host's time to issue one bare op (dispatch_s_per_op) and an op
  of eager module code (module_s_per_op: validate/calibrate.py module_seconds_per_op);
- on a CPU (without --like): the GEMM efficiency by rows, the dispatch time per op and the module
  code's time per op, as validate/calibrate.py measures them for `local` (on a GPU the kernel
  model's tiles serve instead of the rows table, and with --like the preset's do), and the paged
  cache's copies cold (cold_copies: validate/cold_copies.py; a GPU file states none).
The file names the date, torch and the device in `source`, and is checked (Hardware.from_dict)
before it is written. `--device cpu` runs the same code on this machine's CPU, so that the path
a GPU takes is tested here.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import torch

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: GEMM shapes (M, N, K): quick (a CPU test) and full (a GPU).
GRIDS = {
    "quick": [(128, 256, 256), (256, 512, 256)],
    "full": [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
             (16384, 4096, 4096), (4096, 14336, 4096), (2048, 8192, 28672)],
}
ATTENTION_LENGTHS = {"quick": [128], "full": [1024, 4096, 16384]}
#: The sustained GEMM: seconds run back to back first (the clock settles at the power limit),
#: then the seconds timed.
SUSTAIN_SECONDS = {"quick": (0.2, 0.2), "full": (20.0, 4.0)}
#: A CPU's GEMM efficiency by rows: the row counts of the linear chain (validate/calibrate.py).
CPU_ROWS = {"quick": (1, 8, 64), "full": (1, 2, 4, 8, 16, 32, 64, 128, 256)}


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def median_seconds(function: Callable[[], Any], device: str, repeats: int = 5, warmup: int = 2) -> float:
    for _ in range(warmup):
        function()
    _synchronize(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gemm_grid(device: str, dtype: str, grid: str) -> list[dict[str, Any]]:
    rows = []
    for m, n, k in GRIDS[grid]:
        a = torch.randn(m, k, device=device, dtype=TORCH_DTYPES[dtype])
        b = torch.randn(k, n, device=device, dtype=TORCH_DTYPES[dtype])
        seconds = median_seconds(lambda: a @ b, device)
        rows.append({"m": m, "n": n, "k": k, "flops_per_s": 2 * m * n * k / seconds})
    return rows


def sustained_rate(device: str, dtype: str, shape: tuple[int, int, int], settle_s: float, window_s: float) -> float:
    """FLOP/s of one GEMM shape held under full load: run back to back for settle_s, then timed
    in batches (each ended by a synchronize, so the time is the device's) until window_s."""
    m, n, k = shape
    a = torch.randn(m, k, device=device, dtype=TORCH_DTYPES[dtype])
    b = torch.randn(k, n, device=device, dtype=TORCH_DTYPES[dtype])
    def batch(iterations: int) -> float:
        start = time.perf_counter()
        for _ in range(iterations):
            a @ b
        _synchronize(device)
        return time.perf_counter() - start
    iterations, settled = 1, 0.0
    while settled < settle_s:
        seconds = batch(iterations)
        settled += seconds
        iterations = max(1, min(2 * iterations, int(iterations * 0.1 / max(seconds, 1e-9))))  # ~0.1 s batches
    done = 0
    elapsed = 0.0
    while elapsed < window_s:
        elapsed += batch(iterations)
        done += iterations
    return 2 * m * n * k * done / elapsed


def copy_bandwidth(device: str, megabytes: int) -> float:
    source = torch.ones(megabytes * 2**20 // 4, device=device)
    target = torch.empty_like(source)
    return 2 * source.numel() * 4 / median_seconds(lambda: target.copy_(source), device)


def attention_rates(device: str, dtype: str, grid: str) -> list[dict[str, Any]]:
    rows = []
    functional = torch.nn.functional
    for n in ATTENTION_LENGTHS[grid]:
        q, k, v = (torch.randn(1, 8, n, 128, device=device, dtype=TORCH_DTYPES[dtype]) for _ in range(3))
        seconds = median_seconds(lambda: functional.scaled_dot_product_attention(q, k, v, is_causal=True), device)
        rows.append({"n": n, "heads": 8, "head_dim": 128, "causal": True,
                     "dense_flops_per_s": 4 * 8 * n * n * 128 / seconds})
    return rows


def device_facts(device: str) -> dict[str, Any]:
    if device.startswith("cuda"):
        from .device_rates import cublas_workspaces

        torch.cuda.init()
        free, total = torch.cuda.mem_get_info()
        props = torch.cuda.get_device_properties(0)
        workspaces = cublas_workspaces()
        spent = workspaces["total_beside_tensors"]
        reserve = (f"memory_reserve_bytes: the CUDA context (total - free after initialisation, {total - free:,} B) and "
                   f"torch's cuBLAS workspaces ({spent:,} B, validate/device_rates.py cublas_workspaces: "
                   f"{workspaces['method']})")
        return {"description": props.name, "memory_bytes": total, "memory_reserve_bytes": total - free + spent,
                "reserve_method": reserve, "reserve_parts": {"context": total - free, "cublas_workspaces": workspaces},
                "sm_count": props.multi_processor_count,
                "versions": f"torch {torch.__version__}, CUDA {torch.version.cuda}, driver {_driver()}"}
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"description": f"CPU: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads",
            "memory_bytes": memory, "memory_reserve_bytes": 0, "sm_count": os.cpu_count() or 1,
            "architecture": "cpu", "versions": f"torch {torch.__version__}"}


def _vector_rate(device: str, peaks: dict[str, float]) -> dict[str, float]:
    """A CPU measured without fp32 (whose peak stands for the non-matmul ops' rate): that rate
    measured (validate/calibrate.py vector_flops_per_s: softmax, norms and activations over 2M
    fp32 elements, the median op's FLOP/s); else nothing (the fp32 peak stands for it)."""
    if device.startswith("cuda") or "fp32" in peaks:
        return {}
    from .calibrate import vector_flops_per_s

    return {"vector_flops_per_s": vector_flops_per_s()}


def _driver() -> str:
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        return out.splitlines()[0] if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measure_file(name: str, device: str = "cuda", dtypes: tuple[str, ...] = ("bf16",),
                 like: Any = None, grid: str = "full") -> dict[str, Any]:
    """A hardware file's dict, measured now on `device` (like: a Hardware whose datasheet
    peaks, interconnect and clocks to keep)."""
    facts = device_facts(device)
    grids = {dtype: gemm_grid(device, dtype, grid) for dtype in dtypes}
    best = {dtype: max(row["flops_per_s"] for row in rows) for dtype, rows in grids.items()}
    settle_s, window_s = SUSTAIN_SECONDS[grid]
    sustained = {}
    for dtype, rows in grids.items():
        fastest = max(rows, key=lambda row: row["flops_per_s"])
        shape = (fastest["m"], fastest["n"], fastest["k"])
        sustained[dtype] = {"m": shape[0], "n": shape[1], "k": shape[2], "settle_s": settle_s, "window_s": window_s,
                            "flops_per_s": sustained_rate(device, dtype, shape, settle_s, window_s)}
    bandwidth = copy_bandwidth(device, 64 if grid == "quick" else 1024)
    attention = attention_rates(device, dtypes[0], grid)
    kernel_rates = measure_kernel_rates(device, grid, cpu_tables=like is None, rows="fp32" in dtypes)
    today = datetime.date.today().isoformat()
    measured = (f"measured {today} by validate/hardware_file.py on {facts['description']} ({facts['versions']}): "
                f"the best of a GEMM grid of {len(GRIDS[grid])} shapes per dtype, that shape sustained ({settle_s:g} s "
                f"to settle, {window_s:g} s timed), a {'64' if grid == 'quick' else '1024'} MiB copy; "
                + "; ".join(kernel_rates["sources"] + ([facts["reserve_method"]] if "reserve_method" in facts else [])))
    if like is None:
        # memory streams at least as fast as the faster of the copy and the Dot (a CPU's copy also reads its
        # destination before writing it, which BabelStream does not count): the file's bandwidth, which the
        # schema holds the GEMV rate under (hardware_schema._gemv_problem)
        dot = kernel_rates["fields"]["gemv_bandwidth_bytes_per_s"]
        if dot > bandwidth:
            measured += "; bandwidth_bytes_per_s: the Dot's rate, above the copy's"
        data = {"name": name, "description": facts["description"], "flops_per_s": best,
                "bandwidth_bytes_per_s": max(bandwidth, dot), "memory_bytes": facts["memory_bytes"],
                "efficiency": {"compute": 1.0, "memory": 1.0}, "default_dtype": dtypes[0],
                "sm_count": facts["sm_count"], "memory_reserve_bytes": facts["memory_reserve_bytes"],
                **({"architecture": facts["architecture"]} if "architecture" in facts else {}),
                **_vector_rate(device, best),
                "source": measured + "; peaks as measured (efficiencies 1); sustained_matmul_efficiency: the "
                          "fastest shape held under full load over the grid's best"}
        data["sustained_matmul_efficiency"] = {d: min(1.0, sustained[d]["flops_per_s"] / best[d]) for d in best}
    else:
        data = like.to_dict()
        # the preset's copy stream is its own card's Copy, measured beside the Dot this run replaces: not kept
        # (costmodel/kernel_time.py KernelTimer.stream_rate then takes the measured Dot for every GEMM)
        data.pop("copy_stream_bandwidth_bytes_per_s", None)
        peaks = data["flops_per_s"]
        data.update(name=name, memory_reserve_bytes=facts["memory_reserve_bytes"],
                    source=f"{measured}; datasheet peaks, interconnect and clocks of {like.name}, whose other "
                           f"fields stay where not measured here ({like.source})")
        if device.startswith("cuda") and facts["memory_bytes"] <= data["memory_bytes"]:  # mem_get_info's total
            data["device_memory_bytes"] = facts["memory_bytes"]
        data["matmul_efficiency"] = {d: min(1.0, best[d] / peaks[d]) for d in best if d in peaks}
        data["sustained_matmul_efficiency"] = {d: min(1.0, sustained[d]["flops_per_s"] / peaks[d])
                                               for d in best if d in peaks}
        data["efficiency"] = dict(data["efficiency"], memory=min(1.0, bandwidth / data["bandwidth_bytes_per_s"]))
    data.update(kernel_rates["fields"])
    data["_measurements"] = {"gemm": grids, "sustained_gemm": sustained, "attention": attention,
                             "copy_bandwidth_bytes_per_s": bandwidth, **kernel_rates["measurements"],
                             "device": facts["description"], "versions": facts["versions"], "date": today,
                             **({"memory_reserve": facts["reserve_parts"]} if "reserve_parts" in facts else {})}
    return data


def measure_kernel_rates(device: str, grid: str, cpu_tables: bool, rows: bool) -> dict[str, Any]:
    """The kernel model's per-kernel fields (validate/device_rates.py): `fields` for the file,
    `measurements` for its `_measurements`, `sources` (the method of each field, for `source`).
    On a GPU, also the host's dispatch and module-code time per op. cpu_tables: on a CPU, also
    the dispatch and module-code time per op and (rows: fp32 is measured, the peak its
    fractions are of) the fp32 GEMM efficiency by rows, validate/calibrate.py's, as `local` has them."""
    from .device_rates import dram_kernel_startup, graph_kernel_gap, int4_gemv_by_shape, stream_rates, weight_only_gemv

    stream = stream_rates(device, grid, repeats=5 if grid == "quick" else 20)
    fields: dict[str, Any] = {"gemv_bandwidth_bytes_per_s": stream["dot_bytes_per_s"]}
    sources = [f"gemv_bandwidth_bytes_per_s: {stream['method']}, the Dot's rate"]
    gemv = weight_only_gemv(device, grid)
    if "bf16" in gemv["products"]:  # does a bf16 GEMV move its weight at the Dot's rate, as the model takes it?
        gemv["bf16_over_dot"] = gemv["products"]["bf16"]["bytes_per_s"] / stream["dot_bytes_per_s"]
    measurements: dict[str, Any] = {"stream": stream, "weight_only_gemv": gemv,
                                    "int4_gemv_by_shape": int4_gemv_by_shape(device, grid)}
    if device.startswith("cuda"):
        try:
            gap = graph_kernel_gap()
        except RuntimeError as error:  # a build without graphs: the field stays unwritten, the reason kept
            gap = {"not_measured": f"the CUDA graph failed: {str(error).strip().splitlines()[0]}"}
        if gap.get("graph_kernel_s", 0) > 0:
            fields["graph_kernel_s"] = gap["graph_kernel_s"]
            sources.append(f"graph_kernel_s: {gap['method']}")
        measurements["graph_kernel"] = gap
        try:  # the start beyond the gap measured beside it (graph_kernel_s + the start = the intercept)
            floor = gap.get("graph_kernel_s", 0)
            startup = dram_kernel_startup(floor=floor if floor > 0 else None)
        except RuntimeError as error:
            startup = {"not_measured": f"the CUDA graph failed: {str(error).strip().splitlines()[0]}"}
        if startup.get("dram_kernel_startup_s", 0) > 0:
            fields["dram_kernel_startup_s"] = startup["dram_kernel_startup_s"]
            sources.append(f"dram_kernel_startup_s: {startup['method']}")
        measurements["dram_startup"] = startup
    else:
        measurements["graph_kernel"] = {"not_measured": "a CPU has no CUDA graphs: graph_kernel_s is not written"}
        measurements["dram_startup"] = {"not_measured": "a CPU has no CUDA graphs: dram_kernel_startup_s is not written"}
    if device.startswith("cuda"):  # the host's issue time per eager op (an eager step's host term)
        from .calibrate import dispatch_s_per_op, module_seconds_per_op

        fields["dispatch_s_per_op"] = dispatch_s_per_op(201 if grid == "quick" else 2001, device)
        sources.append("dispatch_s_per_op: the host's time to issue one add of two 1-element tensors on the GPU "
                       "(validate/calibrate.py dispatch_s_per_op: batches of 100 timed on the host, not waiting "
                       "for the GPU)")
        module = module_seconds_per_op(31 if grid == "quick" else 301, device=device)
        fields["module_s_per_op"] = module["seconds_per_op"]
        measurements["module_per_op"] = module
        sources.append(f"module_s_per_op: the host's time per aten op of eager module code on the GPU "
                       f"(validate/calibrate.py module_seconds_per_op: transformers' Llama decoder layers on one "
                       f"token, {module['ops']} ops a forward, batches of 5 forwards timed on the host, not "
                       f"waiting for the GPU)")
    if cpu_tables and not device.startswith("cuda"):
        from .calibrate import (INNER_MEGABYTES, INNER_WIDTHS, dispatch_s_per_op, efficiency_by_rows,
                                engine_seconds_per_op, gemm_rates, gemv_efficiency_by_inner, module_seconds_per_op)

        fields["dispatch_s_per_op"] = dispatch_s_per_op(201 if grid == "quick" else 2001)
        sources.append("dispatch_s_per_op as validate/calibrate.py measures `local`: an add of two 1-element tensors")
        module = module_seconds_per_op(31 if grid == "quick" else 301)
        fields["module_s_per_op"] = module["seconds_per_op"]
        measurements["module_per_op"] = module
        sources.append(f"module_s_per_op as validate/calibrate.py measures `local`: transformers' Llama decoder "
                       f"layers on one token, the forward over its {module['ops']} aten ops")
        engine = engine_seconds_per_op()
        fields["engine_s_per_op"] = engine["seconds_per_op"]
        measurements["engine_per_op"] = engine
        sources.append("engine_s_per_op as validate/calibrate.py measures `local`: a compute-free Llama's steps "
                       "through transformers' continuous-batching engine over the aten ops they dispatch")
        from .cold_copies import SOURCE as COLD_COPY_SOURCE
        from .cold_copies import cold_copies

        copies = cold_copies(repeats=3 if grid == "quick" else 9)
        measurements["cold_copies"] = copies
        if copies["fields"]:
            fields["cold_copies"] = copies["fields"]
            sources.append(COLD_COPY_SOURCE)
        if rows:
            counts = CPU_ROWS[grid]
            widths, megabytes = ((256, 1024), 8) if grid == "quick" else (INNER_WIDTHS, INNER_MEGABYTES)
            measured = gemm_rates(counts, widths, repeats=3 if grid == "quick" else 5, megabytes=megabytes)
            rates = measured["chain"]
            fields["gemv_efficiency_by_inner"] = {"fp32": gemv_efficiency_by_inner(measured)}
            sources.append(f"gemv_efficiency_by_inner as validate/calibrate.py measures `local`: one row through chains "
                           f"of distinct K x K weights ({megabytes} MiB each, K in {', '.join(map(str, widths))}) timed "
                           "in turn with the chain below, over the best of its rates")
            fields["gemm_efficiency_by_rows"] = {"fp32": efficiency_by_rows(rates)}
            measurements["gemm_rows_flops_per_s"] = {"fp32": {str(m): r for m, r in rates.items()}}
            sources.append(f"gemm_efficiency_by_rows as validate/calibrate.py measures `local`: 16 fp32 linear "
                           f"layers 1024 <-> 4096 at {', '.join(map(str, counts))} tokens, the row counts in turn, "
                           "over the best of them")
    return {"fields": fields, "measurements": measurements, "sources": sources}


def write_hardware_file(path: Path, data: dict[str, Any]) -> None:
    """Check the file against the schema, then write it."""
    from costmodel.hardware import Hardware

    from reports.output import write_json

    Hardware.from_dict(data, str(path))
    write_json(path, data)  # atomic: an interrupted write leaves no half-written file
