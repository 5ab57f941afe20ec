"""Print the kernel model's time of one int4 (groups of 128, GPTQ's bytes) linear of N x 4,096 at M = 1-64 rows on an
RTX 4090, an A100 80GB and an H100 SXM, under one weight-only kernel (kernel_facts.json "weight_only_by_rows"; none
given: the layout-less Gemm, which keeps the one-row figure to its `tokens` and the tile model above), beside the
same product in fp16: us int4 / us fp16 at each M. validate/FINDINGS.md, "Weight-only int4 kernels by rows".

    PYTHONPATH=. python validate/int4_by_rows_table.py tinygemm
"""

from __future__ import annotations

import sys

import sympy as sp

from costmodel.blocks import quantized_bytes
from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer
from costmodel.quantization import weight_format

ROWS = (1, 2, 3, 4, 8, 16, 32, 64)


def table(kernel: str | None) -> list[str]:
    fmt, out = weight_format("int4", 128), []
    for hardware in ("rtx-4090", "a100-80gb", "h100-sxm"):
        timer = KernelTimer(load_hardware(hardware), "fp16")
        for n in (4096, 11008):
            stored = float(sum(quantized_bytes(((sp.Integer(n), sp.Integer(4096), sp.Integer(1)),), fmt).values()))
            int4 = [timer.gemm_seconds(Gemm(m, n, 4096, weight_bytes=stored, weight_dtype="int4", weight_kernel=kernel))
                    for m in ROWS]
            cells = [f"{m}:{q * 1e6:.1f}/{timer.gemm_seconds(Gemm(m, n, 4096)) * 1e6:.1f}" for m, q in zip(ROWS, int4)]
            out.append(f"{hardware} N{n}xK4096 " + " ".join(cells))
    return out


if __name__ == "__main__":
    print("\n".join(table(sys.argv[1] if len(sys.argv) > 1 else None)))
