"""The per-kernel rates of a device that the kernel-level time model reads from a hardware file,
measured (validate/hardware_file.py writes them; docs/time.md, "Measuring a GPU into a hardware
file"):
- `stream_rates`: BabelStream's Copy and Dot on the same two fp64 arrays, timed in turn. Dot
  (each array read once, the products reduced on chip, nothing written) is a GEMV's access
  pattern: its rate is the file's gemv_bandwidth_bytes_per_s, what costmodel/kernel_time.py moves
  a GEMM's bytes at;
- `weight_only_gemv`: a batch-1 bf16 GEMV and PyTorch's weight-only int8 and int4 products of the
  same weight, each as the bytes it stores over its time, and the quantized ones as a fraction of
  the bf16 rate (kernel_facts.json "weight_only_gemv" states that fraction from a published
  figure; a measured one is recorded beside the file, not written into the facts);
- `int4_gemv_by_shape`: PyTorch's int4 product (tinygemm) and the bf16 GEMV at the weight shapes
  and group sizes of the published int4 decoding runs, each call reading its weight from DRAM (a
  rotation over copies larger than any L2), as a fraction of the bf16 rate by shape and group:
  the kernel-level figure no source publishes for an A100 or H100 (validate/FINDINGS.md, "int4
  tinygemm on the A100 and H100"); beside it at each shape the FP8 W8A8 product at one row
  (torch._scaled_mm, the float8dq rows' GEMM: FINDINGS, "The decoding rows outside 0.75-1.33x");
- `graph_kernel_gap` (CUDA only): the GPU-side time each kernel of a CUDA graph's replay takes
  beyond its work, the file's graph_kernel_s, beside the same chain of kernels on a stream;
- `dram_kernel_startup` (CUDA only): a SCALE kernel's time per kernel in a CUDA graph at sizes
  past the L2, fitted as T = a + V/b (`streaming_fit`), less the same kernel's time at its
  smallest size: the file's dram_kernel_startup_s, as gpu-benches' gpu-small-kernels measures it;
- `cublas_workspaces` (CUDA only): what torch's cuBLAS handles allocate beside the tensors, part of
  the file's memory_reserve_bytes.
Each returns a dict with its method in words (`method`), kept under the file's `_measurements`.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable

import torch

#: Elements of each fp64 array of the stream kernels: quick (a CPU test) and full (BabelStream's
#: default array size, 2^25 doubles, 268 MB an array: far beyond any GPU's L2).
STREAM_ELEMENTS = {"quick": 2**21, "full": 2**25}
#: The GEMV's weight, N x K: quick, and full (16384 x 16384: 512 MiB in bf16, 128 MiB in int4,
#: each beyond the L2 of the GPUs the presets hold).
GEMV_SHAPE = {"quick": (1024, 1024), "full": (16384, 16384)}
#: The int4 products' group size (that of the Marlin figure kernel_facts.json's int4 entry reads)
#: and the CUDA kernel's inner K tiles (gpt-fast's).
INT4_GROUP, INT4_INNER_K_TILES = 128, 8
#: The (N, K) weights of the published int4 decoding runs (costmodel/published_runs.json), one token
#: by each: gpt-fast's Llama-2-7B (fused wqkv, wo, w1 and w3, w2), its Llama-2-70B at tp 8 (a rank's
#: shards) and torchao's Llama-3-8B; quick: one small odd shape (a CPU test).
INT4_DECODE_SHAPES = {
    "quick": ((384, 512),),
    "full": ((12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008),
             (1280, 8192), (8192, 1024), (3584, 8192), (8192, 3584),
             (6144, 4096), (14336, 4096), (4096, 14336)),
}
#: The runs' group sizes (gpt-fast 32, torchao 64) and the Marlin figure's (128).
INT4_DECODE_GROUPS = (32, 64, 128)
#: The bytes each product's rotation of weight copies spans at least, so that no call finds its
#: weight in a cache: full, 512 MiB (past the L2 of every GPU the presets hold: 40-126 MB); quick, 4 MiB.
ROTATION_BYTES = {"quick": 4 * 2**20, "full": 512 * 2**20}
#: The chains of trivial kernels whose difference gives the graph's gap per kernel.
GRAPH_LENGTHS = (100, 1000)
#: The SCALE kernel's sizes (fp64 elements of each of its two arrays): the smallest (64 KiB read
#: and written, gpu-benches' first size), and the sizes the fit runs over, 128 MiB to 1 GiB read
#: and written, past the L2 of every GPU the presets hold; kernels captured per graph.
STARTUP_SMALLEST, STARTUP_ELEMENTS, STARTUP_KERNELS = 4096, (2**23, 2**24, 2**25, 2**26), 50


def device_seconds(function: Callable[[], Any], device: str, repeats: int, inner: int = 1) -> float:
    """The median seconds of one call: `inner` calls timed together (CUDA events on a GPU, the
    wall clock on a CPU), `repeats` times, after one warm-up round."""
    cuda = device.startswith("cuda")
    times = []
    for round_ in range(repeats + 1):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                function()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            begin = time.perf_counter()
            for _ in range(inner):
                function()
            seconds = time.perf_counter() - begin
        if round_:  # the first round warms up
            times.append(seconds / inner)
    return statistics.median(times)


def stream_rates(device: str, grid: str, repeats: int = 20) -> dict[str, Any]:
    """BabelStream's Copy (c = a: one array read, one written) and Dot (sum of a * b: two read,
    none written) on fp64 arrays, timed in turn, round by round, so that a load that changes
    during the run slows both alike; bytes per second as BabelStream counts them (Copy 2 arrays,
    Dot 2 arrays), the median of `repeats` rounds."""
    elements = STREAM_ELEMENTS[grid]
    a = torch.full((elements,), 0.1, device=device, dtype=torch.float64)
    b = torch.full((elements,), 0.2, device=device, dtype=torch.float64)
    c = torch.empty_like(a)
    copies, dots = [], []
    for _ in range(repeats):
        copies.append(device_seconds(lambda: c.copy_(a), device, 1))
        dots.append(device_seconds(lambda: torch.dot(a, b), device, 1))
    array_bytes = elements * a.element_size()
    copy_s, dot_s = statistics.median(copies), statistics.median(dots)
    return {"dtype": "fp64", "elements": elements, "array_bytes": array_bytes, "repeats": repeats,
            "copy_seconds": copy_s, "dot_seconds": dot_s,
            "copy_bytes_per_s": 2 * array_bytes / copy_s, "dot_bytes_per_s": 2 * array_bytes / dot_s,
            "method": f"BabelStream's Copy (c = a) and Dot (torch.dot(a, b): two arrays read once and "
                      f"reduced on chip, nothing written) on two fp64 arrays of {elements} elements "
                      f"({array_bytes / 1e6:.0f} MB each), timed in turn, the median of {repeats} rounds; "
                      "bytes as BabelStream counts them (2 arrays each)"}


def _int4_operands(x: torch.Tensor, n: int, k: int, group: int) -> tuple[Callable[..., Any], torch.Tensor,
                                                                         torch.Tensor, str]:
    """PyTorch's int4 weight-only product for x by an n x k weight (random codes, groups of `group`
    along K, bf16 scales and zeros): the op (called as op(x, packed, group, scales_and_zeros)), the
    packed codes, the scales and zeros, the op's name. The CUDA op takes the codes packed two to a
    byte (the even column in the high nibble); the CPU op takes them one to an int32 and packs them
    itself."""
    codes = torch.randint(0, 16, (n, k), dtype=torch.int32, device=x.device)
    scales_and_zeros = torch.rand(k // group, n, 2, dtype=torch.bfloat16, device=x.device)
    if x.is_cuda:
        nibbles = (codes[:, ::2] << 4 | codes[:, 1::2]).to(torch.uint8)
        packed = torch._convert_weight_to_int4pack(nibbles, INT4_INNER_K_TILES)
        return torch._weight_int4pack_mm, packed, scales_and_zeros, "torch._weight_int4pack_mm"
    packed = torch._convert_weight_to_int4pack_for_cpu(codes, 1)
    return torch._weight_int4pack_mm_for_cpu, packed, scales_and_zeros, "torch._weight_int4pack_mm_for_cpu"


def _stored_bytes(*tensors: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _int4_product(x: torch.Tensor, n: int, k: int) -> tuple[Callable[[], Any], int, str]:
    """The int4 product of x by an n x k weight in groups of INT4_GROUP (_int4_operands): the call,
    the bytes it stores, the op's name."""
    op, packed, scales_and_zeros, name = _int4_operands(x, n, k, INT4_GROUP)
    return (lambda: op(x, packed, INT4_GROUP, scales_and_zeros)), _stored_bytes(packed, scales_and_zeros), name


def weight_only_gemv(device: str, grid: str, repeats: int = 10, inner: int = 10) -> dict[str, Any]:
    """A batch-1 product with one N x K weight: in bf16 (F.linear), then with the weight in int8
    (torch._weight_int8pack_mm, per-row bf16 scales; and gpt-fast's WeightOnlyInt8Linear.forward,
    F.linear(x, w.to(bf16)) * scales, eager: its cast is a kernel of its own) and in int4
    (torch._weight_int4pack_mm). Each: the bytes its weight stores over its time, and that rate
    over the bf16 GEMV's; an op this torch build or device lacks is recorded as unavailable, with
    the error's first line."""
    n, k = GEMV_SHAPE[grid]
    functional = torch.nn.functional
    x = torch.randn(1, k, device=device, dtype=torch.bfloat16)
    weight = torch.randn(n, k, device=device, dtype=torch.bfloat16)
    bf16_rate = weight.numel() * 2 / device_seconds(lambda: functional.linear(x, weight), device, repeats, inner)
    rows: dict[str, Any] = {"bf16": {"op": "torch.nn.functional.linear", "stored_bytes": weight.numel() * 2,
                                     "bytes_per_s": bf16_rate, "fraction_of_bf16": 1.0}}
    del weight
    int8 = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=device)
    scales = torch.rand(n, dtype=torch.bfloat16, device=device)
    candidates: dict[str, Callable[[], tuple[Callable[[], Any], int, str]]] = {
        "int8": lambda: ((lambda: torch._weight_int8pack_mm(x, int8, scales)), int8.numel() + 2 * n,
                         "torch._weight_int8pack_mm"),
        "int8_eager_dequantize": lambda: ((lambda: functional.linear(x, int8.to(x.dtype)) * scales),
                                          int8.numel() + 2 * n, "gpt-fast's WeightOnlyInt8Linear.forward, eager"),
        "int4": lambda: _int4_product(x, n, k),
    }
    for key, build in candidates.items():
        try:
            call, stored, op = build()
            rate = stored / device_seconds(call, device, repeats, inner)
            rows[key] = {"op": op, "stored_bytes": stored, "bytes_per_s": rate, "fraction_of_bf16": rate / bf16_rate}
        except (RuntimeError, NotImplementedError, AttributeError) as error:
            rows[key] = {"op": key, "unavailable": (str(error).strip().splitlines() or [type(error).__name__])[0]}
    return {"n": n, "k": k, "tokens": 1, "int4_group": INT4_GROUP, "products": rows,
            "method": f"one token (bf16) by a weight of {n} x {k}, the median of {repeats} rounds of {inner} calls; "
                      "each product's rate is its weight's stored bytes (codes, scales and zeros) over its time, "
                      "its fraction that rate over the bf16 GEMV's (F.linear)"}


def rotating_seconds(call: Callable[[Any], Any], operands: list[Any], device: str, repeats: int) -> dict[str, Any]:
    """The seconds of one call of `call`, called on each of `operands` in turn, so that every call
    reads operands the previous ones did not (a weight copy no cache holds when the rotation spans
    more than the caches): the median of `repeats` rotations over the rotation's length. On a GPU
    the rotation is queued behind a sleeping kernel (queued_seconds), so a call shorter than its
    launch is timed by the GPU's work, not by the CPU's launching; `queued` says whether it was."""
    def rotation() -> list[Any]:
        return [call(operand) for operand in operands]
    if device.startswith("cuda"):
        timed = queued_seconds(rotation, repeats)
        return {"seconds": timed["seconds"] / len(operands), "queued": timed["queued"]}
    return {"seconds": device_seconds(rotation, device, repeats) / len(operands), "queued": None}


def _w8a8_row(x: torch.Tensor, n: int, k: int, rotation: int, device: str, repeats: int,
              bf16: dict[str, Any]) -> dict[str, Any]:
    """One token by an n x k FP8 (e4m3) weight in the dynamic W8A8 product torchao's float8dq
    (PerTensor) runs: torch._scaled_mm of the token, already cast to FP8, by the weight's transpose,
    fp32 per-tensor scales, bf16 out, use_fast_accum=True (torchao's Float8MMConfig default for
    float8_dynamic_activation_float8_weight; read in later quant_api.py, not at 92dd5f5). The
    activation's quantization is left out: its kernels are timed by the model apart. Rotated over
    weight copies as the bf16 product; unavailable (sm < 89, no FP8 build) with the error's line."""
    try:
        token = x.to(torch.float8_e4m3fn)
        weight = torch.randn(n, k, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        scale = torch.ones((), device=device, dtype=torch.float32)
        stored = _stored_bytes(weight, scale)
        copies = [weight] + [weight.clone() for _ in range(math.ceil(rotation / stored) - 1)]
        timed = rotating_seconds(lambda w: torch._scaled_mm(token, w.t(), scale_a=scale, scale_b=scale,
                                                            out_dtype=torch.bfloat16, use_fast_accum=True),
                                 copies, device, repeats)
    except (RuntimeError, NotImplementedError, AttributeError, TypeError) as error:
        return {"unavailable": (str(error).strip().splitlines() or [type(error).__name__])[0]}
    rate = stored / timed["seconds"]
    return {"op": "torch._scaled_mm", "stored_bytes": stored, "copies": len(copies), **timed,
            "bytes_per_s": rate, "fraction_of_bf16": rate / bf16["bytes_per_s"]}


def int4_gemv_by_shape(device: str, grid: str, repeats: int = 5) -> dict[str, Any]:
    """One bf16 token by each weight of INT4_DECODE_SHAPES, in bf16 (F.linear) and in int4
    (_int4_operands) in each group size of INT4_DECODE_GROUPS, and in FP8 W8A8 (_w8a8_row: the
    float8dq rows' torch._scaled_mm at one row, validate/FINDINGS.md session 22): each call's
    seconds, its weight's stored bytes over them, and the rate over the bf16 rate of the same shape. Every product
    rotates over copies of its weight spanning ROTATION_BYTES, so each call reads its weight from
    DRAM, as a decode step's GEMVs do (one weight per layer, the model far larger than the L2)."""
    rotation = ROTATION_BYTES[grid]
    functional = torch.nn.functional
    shapes = []
    for n, k in INT4_DECODE_SHAPES[grid]:
        x = torch.randn(1, k, device=device, dtype=torch.bfloat16)
        weight = torch.randn(n, k, device=device, dtype=torch.bfloat16)
        copies = [weight] + [weight.clone() for _ in range(math.ceil(rotation / _stored_bytes(weight)) - 1)]
        timed = rotating_seconds(lambda w: functional.linear(x, w), copies, device, repeats)
        bf16 = {"op": "torch.nn.functional.linear", "stored_bytes": _stored_bytes(weight), "copies": len(copies),
                **timed, "bytes_per_s": _stored_bytes(weight) / timed["seconds"]}
        del weight, copies
        w8a8 = _w8a8_row(x, n, k, rotation, device, repeats, bf16)
        row: dict[str, Any] = {"n": n, "k": k, "bf16": bf16, "int4": {}, "fp8_w8a8": w8a8}
        for group in INT4_DECODE_GROUPS:
            try:
                op, packed, scales_and_zeros, name = _int4_operands(x, n, k, group)
                stored = _stored_bytes(packed, scales_and_zeros)
                copies = [(packed, scales_and_zeros)] + [(packed.clone(), scales_and_zeros.clone())
                                                         for _ in range(math.ceil(rotation / stored) - 1)]
                timed = rotating_seconds(lambda c: op(x, c[0], group, c[1]), copies, device, repeats)
                row["int4"][str(group)] = {"op": name, "stored_bytes": stored, "copies": len(copies), **timed,
                                           "bytes_per_s": stored / timed["seconds"],
                                           "fraction_of_bf16": stored / timed["seconds"] / bf16["bytes_per_s"]}
                del packed, scales_and_zeros, copies
            except (RuntimeError, NotImplementedError, AttributeError) as error:
                first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
                row["int4"][str(group)] = {"unavailable": first_line}
        shapes.append(row)
    groups = ", ".join(map(str, INT4_DECODE_GROUPS))
    return {"tokens": 1, "groups": list(INT4_DECODE_GROUPS), "rotation_bytes": rotation, "shapes": shapes,
            "method": f"one bf16 token by each N x K weight, in bf16 (F.linear) and in int4 (PyTorch's int4 "
                      f"weight-only product, bf16 scales and zeros, groups of {groups}); each product called on "
                      f"copies of its weight in turn, the copies spanning at least {rotation / 2**20:.0f} MiB "
                      f"so that no call finds its weight in a cache, the median of {repeats} "
                      "rotations (on a GPU each queued behind torch.cuda._sleep: the GPU's time, not the launches'); "
                      "a call's rate is its weight's stored bytes over its seconds, the int4 fraction that rate over "
                      "the same shape's bf16 rate; fp8_w8a8: the same token cast to FP8 by an FP8 copy of the weight "
                      "in torch._scaled_mm (per-tensor fp32 scales, bf16 out, use_fast_accum), its quantization "
                      "not timed"}


def queued_seconds(launch: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """GPU seconds of what `launch` queues, measured behind a sleeping kernel (torch.cuda._sleep):
    the CPU queues everything while the GPU sleeps, so the two events around it time the GPU's
    work alone, none of the CPU's launching. The median of `repeats` (after a warm-up); `queued`
    says whether the sleep outlasted the launching every time (else the CPU's pace is in it)."""
    times, launching, queued = [], [], True
    for round_ in range(repeats + 1):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        begin = time.perf_counter()
        launch()
        cpu = time.perf_counter() - begin
        on_time = not start.query()  # the sleep still ran when the last launch was queued
        end.record()
        end.synchronize()
        if round_:
            times.append(start.elapsed_time(end) / 1e3)
            launching.append(cpu)
            queued = queued and on_time
    return {"seconds": statistics.median(times), "cpu_launch_seconds": statistics.median(launching), "queued": queued}


#: The sleep that holds the GPU while the CPU queues a chain: ~0.1 s at a 2 GHz SM clock, far
#: longer than the CPU takes to launch GRAPH_LENGTHS[-1] small ops or one graph.
SLEEP_CYCLES = 200_000_000


def graph_kernel_gap(repeats: int = 5, device: str = "cuda") -> dict[str, Any]:
    """The GPU-side seconds per kernel of a chain of trivial kernels (an in-place add to a
    1-element tensor), replayed from a CUDA graph and, for comparison, launched on a stream.

    Each chain length in GRAPH_LENGTHS is captured in a torch.cuda.CUDAGraph; each graph's replay,
    and the same chain launched eagerly, is timed by queued_seconds (the GPU's time alone). The
    gap per kernel is the difference of the two lengths' times over the difference of their
    kernels, which removes what a chain pays once (the first kernel's start, the last one's
    drain). It includes the trivial kernel's own run (one element read and written): an upper
    bound of the gap beyond a kernel's work, as Hazy Research's empty kernel is. `device`: where
    the counter lives (a test runs the same steps on a CPU with torch.cuda's calls stood in)."""
    counter = torch.zeros(1, device=device)
    def chain(length: int) -> None:
        for _ in range(length):
            counter.add_(1)
    side = torch.cuda.Stream()  # warm-up on a side stream before capture (torch.cuda.graphs' rule)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        chain(3)
    torch.cuda.current_stream().wait_stream(side)
    graphs = {}
    for length in GRAPH_LENGTHS:
        graphs[length] = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graphs[length]):
            chain(length)
    graph = {length: queued_seconds(graphs[length].replay, repeats) for length in GRAPH_LENGTHS}
    stream = {length: queued_seconds(lambda length=length: chain(length), repeats) for length in GRAPH_LENGTHS}
    short, long = GRAPH_LENGTHS
    def per_kernel(times: dict[int, dict[str, Any]]) -> float:
        return (times[long]["seconds"] - times[short]["seconds"]) / (long - short)
    return {
        "graph_kernel_s": per_kernel(graph),
        "stream_kernel_s": per_kernel(stream),
        "graph": {str(length): t for length, t in graph.items()},
        "stream": {str(length): t for length, t in stream.items()},
        "cpu_launch_s_per_op": stream[long]["cpu_launch_seconds"] / long,
        "method": f"in-place adds to a 1-element tensor, chains of {short} and {long}, captured in a "
                  "torch.cuda.CUDAGraph and replayed, queued behind torch.cuda._sleep and timed between two CUDA "
                  f"events (the GPU's time alone; median of {repeats}); the gap per kernel is "
                  f"(t({long}) - t({short})) / {long - short}, which removes what a chain pays once and keeps the "
                  "trivial kernel's own run (an upper bound); the same chains launched on a stream beside it",
    }


def streaming_fit(points: dict[int, float]) -> tuple[float, float]:
    """The least-squares line T = a + V / b through {bytes V: seconds T} of one kernel at several
    sizes: (a, its fixed seconds; b, its bytes/s at large sizes)."""
    n = len(points)
    if n < 2:
        raise ValueError("a streaming fit needs two sizes or more.")
    volumes, times = list(points), list(points.values())
    mean_v, mean_t = sum(volumes) / n, sum(times) / n
    slope = sum((v - mean_v) * (t - mean_t) for v, t in zip(volumes, times)) / \
        sum((v - mean_v) ** 2 for v in volumes)
    return mean_t - slope * mean_v, 1 / slope


def dram_kernel_startup(repeats: int = 5, device: str = "cuda", elements: tuple[int, ...] = STARTUP_ELEMENTS,
                        smallest: int = STARTUP_SMALLEST, kernels: int = STARTUP_KERNELS,
                        floor: float | None = None) -> dict[str, Any]:
    """The fixed seconds a kernel streaming from DRAM takes beyond its bytes: a SCALE kernel
    (y = 0.25 x in fp64, each element read and written once: 16 bytes) captured `kernels` times
    in a torch.cuda.CUDAGraph per size (alternating x -> y and y -> x, as gpu-benches does), each
    replay timed by queued_seconds; the seconds per kernel at each size in `elements` fitted as
    T = a + V/b (streaming_fit), less `floor` (the file's graph_kernel_s, measured beside it), or
    where none is given the seconds per kernel at `smallest` (the floor every kernel of the run
    pays): graph_kernel_s + the start = a. `device`: where the arrays live (a test runs the same
    steps on a CPU with torch.cuda's calls stood in)."""
    per_kernel: dict[int, float] = {}
    for n in (smallest, *elements):
        x = torch.ones(n, dtype=torch.float64, device=device)
        y = torch.empty_like(x)
        def run(x: torch.Tensor = x, y: torch.Tensor = y) -> None:
            for _ in range(kernels // 2):
                torch.mul(x, 0.25, out=y)
                torch.mul(y, 0.25, out=x)
        side = torch.cuda.Stream()  # warm-up on a side stream before capture (torch.cuda.graphs' rule)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        per_kernel[n] = queued_seconds(graph.replay, repeats)["seconds"] / (2 * (kernels // 2))
        del x, y, graph
    intercept, rate = streaming_fit({16 * n: per_kernel[n] for n in elements})
    return {
        "dram_kernel_startup_s": intercept - (per_kernel[smallest] if floor is None else floor),
        "intercept_s": intercept,
        "bandwidth_bytes_per_s": rate,
        "smallest_kernel_s": per_kernel[smallest],
        "seconds_per_kernel": {str(16 * n): t for n, t in per_kernel.items()},
        "method": f"a SCALE kernel (y = 0.25 x, fp64: 16 bytes an element read and written), {kernels} captured "
                  f"in a torch.cuda.CUDAGraph per size, replayed behind torch.cuda._sleep (median of {repeats}); "
                  f"T = a + V/b fitted by least squares at {', '.join(str(16 * n) for n in elements)} bytes, "
                  + (f"less the time per kernel at {16 * smallest} bytes (gpu-benches' gpu-small-kernels method)"
                     if floor is None else f"less graph_kernel_s ({floor:.3g} s)"),
    }


def cublas_workspaces() -> dict[str, Any]:
    """torch.cuda.memory_allocated's growth, net of the tensors still alive, at the first fp32
    matmul, the first bf16 linear with a bias (the cuBLASLt path), the first backward (autograd's
    device thread has its own handle) and a bf16 one with a bias. torch allocates a handle's
    workspace through its caching allocator at a (handle, stream)'s first matmul and keeps it, so
    the workspaces are cleared first (torch._C._cuda_clearCublasWorkspaces) to be measured anew."""
    import torch.nn.functional as F

    torch.cuda.synchronize()
    torch._C._cuda_clearCublasWorkspaces()

    def allocated() -> int:
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    def grown(step: Callable[[], list[torch.Tensor]]) -> int:
        before = allocated()
        alive = step()
        return allocated() - before - sum(t.numel() * t.element_size() for t in alive)

    def operands(dtype: torch.dtype, grad: bool) -> list[torch.Tensor]:
        return [torch.randn(*shape, device="cuda", dtype=dtype, requires_grad=grad)
                for shape in ((1024, 1024), (1024, 1024), (1024,))]

    x, w, _ = operands(torch.float32, False)
    xb, wb, bb = operands(torch.bfloat16, False)
    xg, wg, _ = operands(torch.float32, True)
    xbg, wbg, bbg = operands(torch.bfloat16, True)

    def backward(*tensors: torch.Tensor) -> list[torch.Tensor]:
        F.linear(*tensors).sum().backward()
        return [t.grad for t in tensors]

    out = {"first_fp32_mm": grown(lambda: [x @ w]),
           "first_bf16_linear_bias": grown(lambda: [F.linear(xb, wb, bb)]),
           "first_backward": grown(lambda: backward(xg, wg)),
           "first_bf16_backward_bias": grown(lambda: backward(xbg, wbg, bbg))}
    out["total_beside_tensors"] = sum(out.values())
    out["method"] = ("torch.cuda.memory_allocated's growth net of the tensors alive at the first fp32 matmul, bf16 "
                     "linear with a bias, backward and bf16 backward with a bias, after "
                     "torch._C._cuda_clearCublasWorkspaces (validate/device_rates.py cublas_workspaces)")
    return out
