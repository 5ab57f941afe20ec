"""Measures this machine as the `local` hardware preset: matmul FLOP/s and memory bandwidth.

A short benchmark (a few seconds): the median of repeated square matmuls per dtype, and the
median of repeated copies of a buffer much larger than the caches (bytes read + bytes written per
second). The result is cached as JSON where costmodel.simulate.load_hardware("local") reads it.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import torch

from costmodel.simulate import local_cache_path


def _median_seconds(function: Callable[[], Any], repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_flops_per_s(dtype: torch.dtype, size: int = 1024, repeats: int = 7) -> float:
    """Dense matmul FLOP/s: 2*size^3 per product, median of `repeats` products."""
    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    seconds = _median_seconds(lambda: torch.mm(a, b), repeats)
    return 2 * size**3 / seconds


def bandwidth_bytes_per_s(megabytes: int = 256, repeats: int = 7) -> float:
    """Memory bandwidth: a copy reads and writes `megabytes` each, median of `repeats` copies."""
    elements = megabytes * 2**20 // 4
    source = torch.ones(elements, dtype=torch.float32)
    target = torch.empty_like(source)
    seconds = _median_seconds(lambda: target.copy_(source), repeats)
    return 2 * source.numel() * 4 / seconds


def measure_local(memory_bytes: int | None = None) -> dict[str, Any]:
    """The `local` preset's fields, measured now."""
    flops = {
        "fp32": matmul_flops_per_s(torch.float32),
        "bf16": matmul_flops_per_s(torch.bfloat16),
        "fp16": matmul_flops_per_s(torch.float16),
    }
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "name": "local",
        "description": f"this machine: {platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} torch threads",
        "flops_per_s": flops,
        "bandwidth_bytes_per_s": bandwidth_bytes_per_s(),
        "memory_bytes": memory_bytes,
        "efficiency": {"compute": 1.0, "memory": 1.0},
        "source": f"measured by validate/calibrate.py with torch {torch.__version__} "
        "(median of 7 matmuls of 1024x1024, median of 7 copies of 256 MiB)",
    }


def calibrate(path: Path | None = None) -> dict[str, Any]:
    """Measure and cache the `local` preset (written atomically); returns what was written."""
    path = path or local_cache_path()
    data = measure_local()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(temporary, path)
    return data
