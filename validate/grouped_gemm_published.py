"""The kernel model's routed-expert grouped GEMMs beside published grouped-GEMM microbenchmarks
(session 30, validate/FINDINGS.md "Grouped GEMMs against published microbenchmarks"):
Transformer Engine's on H100 (BF16), torchao's torch._grouped_mm and MXFP8 torch._scaled_grouped_mm
on B200, DeepGEMM's k-grouped FP8 weight gradient on H200 (validate/grouped_gemm_published.json,
each set with its source and what it assumes; DeepGEMM's README tables: grouped_gemm_table.py).

Each entry is timed as the model times routed experts (expert_kernels.grouped_gemms): Gemm(m, n, k,
count=groups, grouped_rows=the rows an expert) on the set's hardware preset at the burst rate (a
microbenchmark), in the set's matmul dtype; a forward+backward entry as a training leaf's GEMM
(kernel_time.kernels_seconds: the forward, the input gradient and the weight gradient).

    PYTHONPATH=. python validate/grouped_gemm_published.py

Nothing here enters the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer, kernels_seconds

TABLE = Path(__file__).with_name("grouped_gemm_published.json")


def sets() -> list[dict]:
    return json.loads(TABLE.read_text())["sets"]


def rows() -> list[tuple[str, str, int, int, int, int, float, float]]:
    """(set id, library, groups, m, n, k, published TFLOP/s, model TFLOP/s) for every entry."""
    out = []
    for entry in sets():
        timer = KernelTimer(load_hardware(entry["hardware"]), entry["dtype"], matmul_dtype=entry["matmul_dtype"])
        training = entry["passes"] == "forward+backward"
        in_seconds = entry["columns"][-1] == "microseconds"
        for library, figures in entry["libraries"].items():
            for groups, m, n, k, figure in figures:
                rows_an_expert = {"m": m, "k": k}.get(entry["rows_an_expert"], entry["rows_an_expert"])
                flops = 2 * groups * m * n * k * (3 if training else 1)
                gemm = Gemm(m, n, k, count=groups, grouped_rows=rows_an_expert)
                seconds = kernels_seconds([gemm], timer, training)
                published = flops / (figure * 1e-6) / 1e12 if in_seconds else float(figure)
                out.append((entry["id"], library, groups, m, n, k, published, flops / seconds / 1e12))
    return out


def main(argv: list[str]) -> int:
    if argv:
        print(f"error: {' '.join(argv)!r} is not an option; usage: python validate/grouped_gemm_published.py",
              file=sys.stderr)
        return 2
    print("| set | library | groups | m | n | k | published TFLOP/s | model TFLOP/s | model / published |")
    print("|---|---|---|---|---|---|---|---|---|")
    for set_id, library, groups, m, n, k, published, model in rows():
        print(f"| {set_id} | {library} | {groups} | {m:,} | {n:,} | {k:,} | {published:,.0f} | {model:,.0f} "
              f"| {model / published:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
