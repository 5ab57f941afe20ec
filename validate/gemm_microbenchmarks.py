"""The kernel model's GEMM time beside published matmul microbenchmarks (wt30_gemm, session 30):
Bekman's MAMF table (each GPU's best rate and shape), NVIDIA's cuBLAS m = n = k curve on the A100,
thonking.ai's randn 8,192^3 on the A100, OpenXLA's measured matmul tables for the H100, B200
and MI300X, and DeepBench's training GEMMs on the V100 and T4 (validate/gemm_microbenchmarks.json,
each with its source); session 33 (wt33_gemmrate) added cuBLAS rates at the shapes LLM layers run
("cublas_llm_shapes": FlagPerf's A100 soak and burst runs, EleutherAI's cookbook layer GEMMs, vLLM's H100
decode GEMMs, a crowd-sourced H100 square sweep, ml-engineering's SwiGLU sweep), reported by source and
shape class (`--classes`).

Each published figure is one GEMM kernel's rate, so the model's figure is KernelTimer.gemm_seconds
of the same Gemm(M, N, K, count=b) on the named preset: at the burst rate (the hardware's
matmul_efficiency, MAMF), except the randn row, a power-limited rate, at the sustained one. A
ratio is model TFLOP/s over published TFLOP/s (above 1: the model is fast).

    PYTHONPATH=. python validate/gemm_microbenchmarks.py [--rows | --fit | --classes]

--fit splits each XLA table's time at its largest outputs into a part that grows with K and one that
does not (fixed_and_marginal): where the kernel's output store does not overlap its main loop, the
fixed part grows with the outputs (kernel_facts.json "gemm_efficiency_by_k", why Blackwell has no entry).

Nothing here enters the model.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer

TABLE = Path(__file__).with_name("gemm_microbenchmarks.json")
# A GEMM the XLA table calls large: at least 8M outputs (b x m x n; 4 waves of 128 x 128 tiles on
# 132 SMs and more) and an inner width of 1,024 or more, where the tiles' rate, not a kernel's
# fixed start or its last wave's latency, sets the time.
LARGE_OUTPUTS = 2 ** 23
LARGE_K = 1024


@dataclass(frozen=True)
class Point:
    """One published GEMM rate and the model's at the same shape."""

    source: str
    hardware: str
    dtype: str
    b: int
    m: int
    n: int
    k: int
    published: float  # TFLOP/s
    model: float  # TFLOP/s

    @property
    def ratio(self) -> float:
        return self.model / self.published

    @property
    def large(self) -> bool:
        return self.b * self.m * self.n >= LARGE_OUTPUTS and self.k >= LARGE_K


@lru_cache(maxsize=1)
def table() -> dict:
    return json.loads(TABLE.read_text())


@lru_cache(maxsize=None)
def timer(hardware: str, dtype: str, sustained: bool = False) -> KernelTimer:
    return KernelTimer(load_hardware(hardware), "bf16", matmul_dtype=dtype, sustained=sustained)


def model_tflops(hardware: str, dtype: str, b: int, m: int, n: int, k: int, sustained: bool = False) -> float:
    gemm = Gemm(m, n, k, count=b)
    return gemm.flops / timer(hardware, dtype, sustained).gemm_seconds(gemm) / 1e12


def point(source: str, hardware: str, dtype: str, b: int, m: int, n: int, k: int, published: float,
          sustained: bool = False) -> Point:
    return Point(source, hardware, dtype, b, m, n, k, float(published),
                 model_tflops(hardware, dtype, b, m, n, k, sustained))


def mamf_points() -> list[Point]:
    return [point("mamf", hw, dtype, 1, m, n, k, tflops)
            for hw, dtype, tflops, m, n, k, _ in table()["mamf"]["rows"]]


def a100_square_points(hardware: str = "a100-40gb") -> list[Point]:
    return [point("a100_cublas_square", hardware, "bf16", 1, s, s, s, tflops)
            for s, tflops in table()["a100_cublas_square"]["rows"]]


def a100_square_shape(points: list[Point] | None = None) -> list[tuple[int, float, float]]:
    """(m = n = k, published / published at 8,192, model / model at 8,192): the curve's shape."""
    points = points or a100_square_points()
    last = points[-1]
    return [(p.m, p.published / last.published, p.model / last.model) for p in points]


def randn_points() -> list[Point]:
    return [point("a100_randn_8192", hw, "bf16", 1, m, n, k, tflops, sustained=rate == "sustained")
            for hw, m, n, k, tflops, rate in table()["a100_randn_8192"]["rows"]]


def xla_points(name: str) -> list[Point]:
    hardware, dtype = name.split()
    return [point("xla " + name, hardware, dtype, b, m, n, k, tflops)
            for b, m, n, k, tflops in table()["xla_matmul_table"]["tables"][name]]


def deepbench_points(name: str) -> list[Point]:
    """DeepBench's training GEMMs on one sheet ("v100-sxm2-32gb fp16"): its time as a rate, 2 M N K / time."""
    hardware, dtype = name.split()
    return [point("deepbench " + name, hardware, dtype, 1, m, n, k, 2 * m * n * k / (ms * 1e-3) / 1e12)
            for m, n, k, _, ms in table()["deepbench_train"]["tables"][name]]


def fixed_and_marginal(name: str) -> list[tuple[int, int, float, float]]:
    """For each output count b x m x n of 8M and more in one XLA table: (outputs, shapes, fixed microseconds,
    marginal TFLOP/s), each the median over the table's shapes of that many outputs of a least-squares line
    time = fixed + K x slope through K = 1,024, 2,048 and 4,096 (marginal: 2 b m n / slope)."""
    by_shape: dict[tuple[int, int, int], dict[int, float]] = {}
    for b, m, n, k, tflops in table()["xla_matmul_table"]["tables"][name]:
        by_shape.setdefault((b, m, n), {})[k] = 2 * b * m * n * k / (tflops * 1e12)
    inner = (1024, 2048, 4096)
    mean_k = sum(inner) / len(inner)
    fits: dict[int, list[tuple[float, float]]] = {}
    for (b, m, n), times in by_shape.items():
        if b * m * n < LARGE_OUTPUTS:
            continue
        mean_t = sum(times[k] for k in inner) / len(inner)
        slope = sum((k - mean_k) * (times[k] - mean_t) for k in inner) / sum((k - mean_k) ** 2 for k in inner)
        fits.setdefault(b * m * n, []).append(((mean_t - slope * mean_k) * 1e6, 2 * b * m * n / slope / 1e12))
    return [(outputs, len(f), statistics.median(x for x, _ in f), statistics.median(r for _, r in f))
            for outputs, f in sorted(fits.items())]


def llm_shape_points(name: str | None = None) -> list[Point]:
    """Session 33's cuBLAS rates ("cublas_llm_shapes"): one source's, or all; each against the model at the
    row's regime (sustained: the power-limited rate; burst and zeros: MAMF's)."""
    sources = table()["cublas_llm_shapes"]["sources"]
    return [point(source, hw, dtype, b, m, n, k, tflops, sustained=regime == "sustained")
            for source in ([name] if name else sources)
            for hw, dtype, b, m, n, k, tflops, regime in sources[source]["rows"]]
def regime(p: Point) -> str:
    """The regime a session 33 row was typed with (its JSON row's last column)."""
    rows = table()["cublas_llm_shapes"]["sources"][p.source]["rows"]
    return next(r[7] for r in rows if (r[0], r[1], r[2], r[3], r[4], r[5], r[6]) ==
                (p.hardware, p.dtype, p.b, p.m, p.n, p.k, p.published))
def shape_class(p: Point) -> str:
    """square (M = N = K), decode (at most 256 rows in all: a decoding step's batch) or llm (tokens x widths)."""
    if p.m == p.n == p.k:
        return "square"
    return "decode" if p.b * p.m <= 256 else "llm"
def class_summary() -> list[tuple[str, int, float, float, float]]:
    """(source / GPU / class / regime, count, median, min, max) of model / published over session 33's rows."""
    groups: dict[str, list[float]] = {}
    for p in llm_shape_points():
        groups.setdefault(f"{p.source} {p.hardware} {shape_class(p)} {regime(p)}", []).append(p.ratio)
    return [(label, *spread(ratios)) for label, ratios in groups.items()]
def spread(ratios: list[float]) -> tuple[int, float, float, float]:
    """(count, median, min, max) of model / published ratios."""
    return len(ratios), statistics.median(ratios), min(ratios), max(ratios)


def summary() -> list[tuple[str, int, float, float, float]]:
    """(label, count, median, min, max) of model / published for each source and subset."""
    out = [("MAMF (best shape, burst)", *spread([p.ratio for p in mamf_points()]))]
    square = a100_square_points()
    out.append(("A100 cuBLAS m=n=k >= 2048", *spread([p.ratio for p in square if p.m >= 2048])))
    out.append(("A100 cuBLAS m=n=k >= 2048, shape", *spread(
        [model / published for s, published, model in a100_square_shape(square) if s >= 2048])))
    out.append(("A100 randn 8192^3 (sustained)", *spread([p.ratio for p in randn_points()])))
    for name in table()["xla_matmul_table"]["tables"]:
        points = xla_points(name)
        out.append((f"XLA {name}, large", *spread([p.ratio for p in points if p.large])))
        out.append((f"XLA {name}, all", *spread([p.ratio for p in points])))
    for name in table()["deepbench_train"]["tables"]:
        points = deepbench_points(name)
        out.append((f"DeepBench {name}, large", *spread([p.ratio for p in points if p.large])))
        out.append((f"DeepBench {name}, all", *spread([p.ratio for p in points])))
    for name in table()["cublas_llm_shapes"]["sources"]:
        out.append((name, *spread([p.ratio for p in llm_shape_points(name)])))
    return out


def main(argv: list[str]) -> int:
    if argv and argv not in (["--rows"], ["--fit"], ["--classes"]):
        print("usage: python validate/gemm_microbenchmarks.py [--rows | --fit | --classes]", file=sys.stderr)
        return 2
    if argv == ["--fit"]:
        print(f"{'XLA table':16} {'outputs':>8} {'shapes':>6} {'fixed us':>9} {'marginal TFLOP/s':>17}")
        for name in table()["xla_matmul_table"]["tables"]:
            for outputs, shapes, fixed, marginal in fixed_and_marginal(name):
                print(f"{name:16} {outputs // 2 ** 20:>7}M {shapes:6d} {fixed:9.1f} {marginal:17.1f}")
        return 0
    if argv == ["--classes"]:
        print(f"{'source, GPU, shape class, regime':52} {'n':>3} {'median':>7} {'min':>6} {'max':>6}   (model / published)")
        for label, count, median, low, high in class_summary():
            print(f"{label:52} {count:3d} {median:7.3f} {low:6.3f} {high:6.3f}")
        for p in llm_shape_points():
            print(f"{p.source:26} {p.hardware:9} {p.dtype:4} {p.b}x{p.m}x{p.n}x{p.k:<6} {shape_class(p):6} "
                  f"{regime(p):9} published {p.published:7.1f}  model {p.model:7.1f}  {p.ratio:.3f}")
    print(f"{'source':40} {'n':>4} {'median':>7} {'min':>6} {'max':>6}   (model / published TFLOP/s)")
    for label, count, median, low, high in summary():
        print(f"{label:40} {count:4d} {median:7.3f} {low:6.3f} {high:6.3f}")
    if argv == ["--rows"]:
        for p in mamf_points() + a100_square_points() + randn_points():
            print(f"{p.source:20} {p.hardware:12} {p.dtype:5} {p.b}x{p.m}x{p.n}x{p.k:<6} "
                  f"published {p.published:7.1f}  model {p.model:7.1f}  {p.ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
