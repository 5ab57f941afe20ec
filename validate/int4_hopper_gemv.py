"""PyTorch's int4 weight-only GEMV (`torch._weight_int4pack_mm`, tinygemm) on Hopper: its rate at one
token as a fraction of the bf16 GEMV's, from the repository's own H200 measurements
(kernel_facts.json "weight_only_gemv", int4, hopper).

`hardware --measure` (validate/device_rates.int4_gemv_by_shape) timed one bf16 token by each weight of
the published int4 decoding runs, in bf16 (`F.linear`) and in `_weight_int4pack_mm` at groups of 32,
64 and 128, each call reading its weight from DRAM (copies rotated past the L2). Three runs on an
NVIDIA H200 (GH100, torch 2.11.0+cu130) are stored: benchmarks/h200-measured.json and
benchmarks/results_hardware_measure_2026-12-04{,b}.json. Here each call is modelled as the kernel
model times a GEMV, t = a + bytes / rate, fitted by least squares over the tensor-parallel-1 shapes
(Llama-2-7B's and Llama-3-8B's weights, `FULL_SHAPES`) of all three runs: once for bf16 and once for
int4 (the three groups pooled: their rates agree within 1.1%); the fraction is the int4 rate over the
bf16 one, the same ratio of two kernels measured alike that the Ampere entries state. The 70B tp 8
shards (`SHARD_SHAPES`: 160 to 1,024 thread blocks, N / 8 at one token in int4mm.cu) are reported
beside it, not fitted: below about four blocks an SM the kernel moves its bytes slower still.
Pure arithmetic on stored files; no torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("benchmarks/h200-measured.json", "benchmarks/results_hardware_measure_2026-12-04.json",
        "benchmarks/results_hardware_measure_2026-12-04b.json")
#: (N, K) of Llama-2-7B's and Llama-3-8B's wqkv, wo, w1/w3 and w2 (validate/device_rates.INT4_DECODE_SHAPES).
FULL_SHAPES = ((12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008), (6144, 4096), (14336, 4096), (4096, 14336))
#: Llama-2-70B's tp 8 shards.
SHARD_SHAPES = ((1280, 8192), (8192, 1024), (3584, 8192), (8192, 3584))
GROUPS = ("32", "64", "128")


def shapes(paths: Iterable[str] = RUNS) -> list[dict[str, Any]]:
    """Every stored shape of every run (each: n, k, bf16, int4 by group), with its run's device."""
    out = []
    for path in paths:
        data = json.loads((ROOT / path).read_text())["_measurements"]
        for shape in data["int4_gemv_by_shape"]["shapes"]:
            out.append({**shape, "device": data["device"]})
    return out


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, rate): least squares of seconds = a + bytes / rate over (bytes, seconds) points."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return mean_y - slope * mean_x, 1.0 / slope


def points(stored: list[dict[str, Any]], kind: str, keep: tuple[tuple[int, int], ...] = FULL_SHAPES,
           groups: Iterable[str] = GROUPS) -> list[tuple[float, float]]:
    """(stored bytes, seconds) of each call of `kind` (bf16 or int4, the given groups) at the kept shapes."""
    chosen = [s for s in stored if (s["n"], s["k"]) in keep]
    if kind == "bf16":
        return [(s["bf16"]["stored_bytes"], s["bf16"]["seconds"]) for s in chosen]
    return [(s["int4"][g]["stored_bytes"], s["int4"][g]["seconds"]) for s in chosen for g in groups]


def int4_fraction(stored: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """The fitted terms and the int4 kernel's rate over the bf16 one's at the full shapes."""
    stored = shapes() if stored is None else stored
    bf16_a, bf16_rate = fit(points(stored, "bf16"))
    int4_a, int4_rate = fit(points(stored, "int4"))
    by_group = {g: fit(points(stored, "int4", groups=(g,)))[1] / bf16_rate for g in GROUPS}
    return {"bf16_start_s": bf16_a, "bf16_rate": bf16_rate, "int4_start_s": int4_a, "int4_rate": int4_rate,
            "fraction": int4_rate / bf16_rate, **{f"fraction_g{g}": v for g, v in by_group.items()}}


def shard_rates(stored: list[dict[str, Any]] | None = None) -> dict[tuple[int, int], float]:
    """Each 70B tp 8 shard's int4 rate beyond the fitted start (groups pooled, runs averaged), over
    the full shapes' fitted int4 rate: what the fraction leaves out at small N."""
    stored = shapes() if stored is None else stored
    terms = int4_fraction(stored)
    out = {}
    for shape in SHARD_SHAPES:
        rates = [b / (t - terms["int4_start_s"]) for b, t in points(stored, "int4", keep=(shape,))]
        out[shape] = sum(rates) / len(rates) / terms["int4_rate"]
    return out


if __name__ == "__main__":
    terms = int4_fraction()
    print(f"bf16: a = {terms['bf16_start_s'] * 1e6:.2f} us, rate = {terms['bf16_rate'] / 1e12:.3f} TB/s")
    print(f"int4: a = {terms['int4_start_s'] * 1e6:.2f} us, rate = {terms['int4_rate'] / 1e12:.3f} TB/s")
    print(f"int4 / bf16: {terms['fraction']:.3f} (g32 {terms['fraction_g32']:.3f}, g64 {terms['fraction_g64']:.3f},"
          f" g128 {terms['fraction_g128']:.3f})")
    for (n, k), ratio in shard_rates().items():
        print(f"70B tp 8 shard {n} x {k} ({n // 8} blocks): {ratio:.2f} of the full shapes' int4 rate")
