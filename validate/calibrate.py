"""Measures this machine as the `local` hardware preset: matmul FLOP/s and memory bandwidth.

A short benchmark (several seconds). The roofs are what the two kinds of work reach here: the
compute roof is the median FLOP/s of square matmuls of a prefill's size (2048 in fp32; 512 in the
16-bit dtypes, which this CPU runs far slower), the memory roof the median rate at which a
matrix-vector product streams a 128 MiB weight matrix (what a decode step does). A plain copy's
bandwidth is recorded beside it. The result is cached as JSON where
costmodel.simulate.load_hardware("local") reads it.
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


def median_seconds(function: Callable[[], Any], repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_flops_per_s(dtype: torch.dtype, size: int = 2048, repeats: int = 7) -> float:
    """Dense matmul FLOP/s: 2*size^3 per product, median of `repeats` products."""
    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    seconds = median_seconds(lambda: torch.mm(a, b), repeats)
    return 2 * size**3 / seconds


def streaming_bytes_per_s(rows: int = 4096, cols: int = 8192, repeats: int = 9) -> float:
    """Weight-streaming bandwidth: bytes of an fp32 matrix read by one matrix-vector product."""
    weight = torch.randn(rows, cols)
    vector = torch.randn(cols)
    seconds = median_seconds(lambda: torch.mv(weight, vector), repeats)
    return weight.numel() * 4 / seconds


def bandwidth_bytes_per_s(megabytes: int = 256, repeats: int = 7) -> float:
    """Copy bandwidth: a copy reads and writes `megabytes` each, median of `repeats` copies."""
    elements = megabytes * 2**20 // 4
    source = torch.ones(elements, dtype=torch.float32)
    target = torch.empty_like(source)
    seconds = median_seconds(lambda: target.copy_(source), repeats)
    return 2 * source.numel() * 4 / seconds


def overhead_s_per_block(repeats: int = 41) -> float:
    """Dispatch time per cost-tree block: a decode step of a tiny reference model (compute and
    traffic negligible) divided by the blocks of its decode-step tree."""
    from costmodel.config import ModelConfig
    from costmodel.model import CostModel
    from costmodel.simulate import block_runs

    from .decoding import prefill, step
    from .reference import build_reference

    cfg = ModelConfig(name="tiny", family="llama", vocab_size=64, d_model=32, n_heads=4, d_ff=64,
                      n_decoder_layers=2, position="rope", norm="rmsnorm", activation="swiglu",
                      qkv_bias=False, out_bias=False, ffn_bias=False, tie_embeddings=False)
    model = build_reference(cfg).eval()
    token = torch.zeros(1, dtype=torch.long)
    state, _ = prefill(model, torch.ones(1, 4, dtype=torch.long))
    seconds = median_seconds(lambda: step(state, token), repeats)
    return seconds / block_runs(CostModel(cfg, decode=True))


def measure_local(memory_bytes: int | None = None) -> dict[str, Any]:
    """The `local` preset's fields, measured now."""
    flops = {
        "fp32": matmul_flops_per_s(torch.float32),
        "bf16": matmul_flops_per_s(torch.bfloat16, size=512),
        "fp16": matmul_flops_per_s(torch.float16, size=512),
    }
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "name": "local",
        "description": f"this machine: {platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} torch threads",
        "flops_per_s": flops,
        "bandwidth_bytes_per_s": streaming_bytes_per_s(),
        "copy_bandwidth_bytes_per_s": bandwidth_bytes_per_s(),
        "memory_bytes": memory_bytes,
        "efficiency": {"compute": 1.0, "memory": 1.0},
        "overhead_s_per_block": overhead_s_per_block(),
        "source": f"measured by validate/calibrate.py with torch {torch.__version__} "
        "(medians: fp32 matmuls of 2048x2048, 16-bit of 512x512; matrix-vector products "
        "streaming a 128 MiB fp32 matrix; a tiny model's decode step per block for the overhead)",
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
