"""The fused attention kernels' published figures (kernel_facts.json "attention_efficiency") as
efficiencies by sequence length, forward and backward, for kernel_time.KernelTimer: stated
points, or the authors' TFLOP/s over the peak they ran at: the backward's own figures where
published (cuDNN, FlashAttention-3), else derived where the forward and the forward-plus-backward
are both published (FlashAttention-2 on the H100; on the A100 its stated forward range and its measured
forward-plus-backward figure); and a kernel's figures measured at one head width and
window (kernel_facts.json "attention_shape_efficiency": cuDNN at GPT-OSS's sliding-window shape), which
time the calls of that shape in place of the kernel's figures by length alone; and the decode
kernels whose loads and products are stated from their code (kernel_facts.json
"decode_attention_kernels": TensorRT-LLM v0.6.1's masked MHA), which time a decode step's single-query
calls (decode_terms)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .config import ConfigError
from .kernel_rates import kernel_facts, log_linear

Points = tuple[tuple[int, float], ...]
ShapePoints = dict[tuple[int, int], tuple[Points, Points]]  # (head width, window) -> (forward, backward)


#: The kernel a run calls unless it names another (KernelTimer's attention_kernel).
DEFAULT_KERNEL = "flash2"


def kernel_entry(entries: list[dict[str, Any]], kernel: str, architecture: str) -> dict[str, Any]:
    """The attention_efficiency entry of `kernel` on `architecture`. A kernel no entry names is
    refused, and so is a named one with no figures on this architecture; the default kernel
    without figures there gives {} (its calls run at the large-GEMM efficiency, docs/time.md)."""
    known = sorted({e["kernel"] for e in entries})
    if kernel not in known:
        raise ConfigError(f"attention kernel {kernel!r} has no published figures; known: {', '.join(known)}.")
    entry = next((e for e in entries if e["kernel"] == kernel and e["architecture"] == architecture), None)
    if entry is None and kernel != DEFAULT_KERNEL:
        where = sorted(e["architecture"] for e in entries if e["kernel"] == kernel)
        raise ConfigError(f"attention kernel {kernel!r} has no published figures on {architecture}; "
                          f"it has on: {', '.join(where)}.")
    return entry or {}


def backward_tflops(forward: float, forward_backward: float, backward_factor: float) -> float:
    """A fused attention kernel's backward TFLOP/s from its published forward and forward-plus-
    backward rates at one length (FLOPs of the forward F, the backward backward_factor F): the
    backward's FLOPs over the forward-plus-backward time less the forward's."""
    return backward_factor / ((1 + backward_factor) / forward_backward - 1 / forward)


def attention_points(entry: dict[str, Any], backward_factor: float) -> tuple[Points | None, Points | None]:
    """One kernel_facts.json attention_efficiency entry as (forward, backward) efficiencies by
    length: its stated points (backward None: the forward's times backward_ratio), or, where it
    states the published TFLOP/s, those over its reference peak: the backward's own figures where
    published (backward_tflops), else derived from the forward (its figures, or its stated points)
    and the forward-plus-backward figures;
    where only the forward-plus-backward figure is published, that efficiency for both passes
    (what reproduces the figure's time)."""
    if "forward_backward_tflops" not in entry and "backward_tflops" not in entry:
        points = entry.get("points")
        return (tuple((int(n), float(e)) for n, e in points) if points else None), None
    peak = float(entry["reference_peak_tflops"])
    if "points" in entry:  # a forward stated as efficiencies (FlashAttention-2's A100 range), the sum measured
        forward = tuple((int(n), float(e)) for n, e in entry["points"])
        backward = tuple((int(n), backward_tflops(log_linear(forward, int(n)) * peak, tf, backward_factor) / peak)
                         for n, tf in entry["forward_backward_tflops"])
        return forward, backward
    if "backward_tflops" in entry:  # both passes measured
        return (tuple((int(n), tf / peak) for n, tf in entry["forward_tflops"]),
                tuple((int(n), tf / peak) for n, tf in entry["backward_tflops"]))
    both = dict(entry["forward_backward_tflops"])
    missing = sorted({int(n) for n, _ in entry.get("forward_tflops", ())} - {int(n) for n in both})
    if missing:
        raise ConfigError(f"attention kernel {entry.get('kernel')!r} ({entry.get('architecture')}) states a "
                          f"forward figure at {missing} without its forward-plus-backward figure there.")
    if "forward_tflops" not in entry:
        combined = tuple((int(n), tf / peak) for n, tf in entry["forward_backward_tflops"])
        return combined, combined
    forward = tuple((int(n), tf / peak) for n, tf in entry["forward_tflops"])
    backward = tuple((int(n), backward_tflops(tf, both[n], backward_factor) / peak)
                     for n, tf in entry["forward_tflops"])
    return forward, backward


def shape_points(entries: list[dict[str, Any]], kernel: str, architecture: str) -> ShapePoints:
    """The attention_shape_efficiency entries of `kernel` on `architecture` by (head width, window):
    their forward and backward TFLOP/s by length over the peak they were measured at."""
    out: ShapePoints = {}
    for e in entries:
        if e["kernel"] == kernel and e["architecture"] == architecture:
            peak = float(e["reference_peak_tflops"])
            forward, backward = (tuple((int(n), tf / peak) for n, tf in e[k]) for k in ("forward_tflops", "backward_tflops"))
            out[(int(e["head_dim"]), int(e["window"]))] = (forward, backward)
    return out


def shape_rate(points: ShapePoints, call: Any, backward: bool, backward_factor: float) -> tuple[float, float] | None:
    """(FLOPs, efficiency before the clock) of a call measured at its own shape: a causal sliding-
    window call (not chunked) whose query and value heads are an entry's width and whose window is
    the entry's; its FLOPs the unmasked pairs' (AttentionCall.window_flops, the benchmark's
    convention), backward_factor of them backward; None: no entry of its shape."""
    value_dim = call.value_dim or call.head_dim
    if call.window is None or call.chunked or not call.causal or value_dim != call.head_dim:
        return None
    measured = points.get((call.head_dim, call.window))
    if measured is None:
        return None
    flops = call.window_flops() * (backward_factor if backward else 1.0)
    return flops, log_linear(measured[1 if backward else 0], call.n_kv)


#: serve's attention backend where none is named (kernel_facts.json "serving_attention_backends").
DEFAULT_SERVING_BACKEND = "flash-attn2"


def serving_kernel(backends: dict[str, Any], backend: str) -> str:
    """The attention_efficiency kernel whose figures time `backend`'s attention in a serving step
    (kernel_facts.json "serving_attention_backends" "backends"); a backend with no published kernel
    rate there, or an unknown one, is refused in one line."""
    entry = backends.get(backend)
    if entry is None:
        raise ConfigError(f"--attention-backend must be one of {', '.join(backends)}, got {backend!r}.")
    if entry["kernel"] is None:
        timed = ", ".join(name for name, e in backends.items() if e["kernel"])
        raise ConfigError(f"--attention-backend {backend}: no published kernel rate of that backend's prefill or "
                          f"decode is in kernel_facts.json (serving_attention_backends); backends with figures: "
                          f"{timed}.")
    return entry["kernel"]


def decode_kernel_entry(kernel: str | None) -> dict[str, Any] | None:
    """A decode attention kernel's facts (kernel_facts.json "decode_attention_kernels"); None where none
    is named (a decode call is then timed as any fused attention call); an unknown one is refused."""
    if kernel is None:
        return None
    kernels = kernel_facts()["decode_attention_kernels"]["kernels"]
    if kernel not in kernels:
        raise ConfigError(f"decode attention kernel {kernel!r} is not known; known: {', '.join(sorted(kernels))}.")
    return kernels[kernel]


def decode_terms(entry: dict[str, Any], call: Any, element_bytes: int, vector: float,
                 bandwidth: float) -> tuple[float, float]:
    """A single-query call's two terms, in seconds, under a decode kernel (decode_kernel_entry): its
    products over every key it sees (the window's at most), Q*K^T and P*V, on the CUDA cores (products
    "cuda_cores": at the vector rate, no tensor-core tiles); and its bytes, the queries and output as
    any call's and each KV head's cache loaded once by each query head that shares it (kv_loads
    "query_head": as if the heads were not grouped) or once (kv_loads "kv_head")."""
    if entry["products"] != "cuda_cores":
        raise ConfigError(f"decode kernel products {entry['products']!r}: only 'cuda_cores' is modelled.")
    keys = call.n_kv if call.window is None else min(call.n_kv, call.window)
    shared = None if entry["kv_loads"] == "query_head" else call.kv_heads
    read = replace(call, n_kv=keys, window=None, chunked=False, kv_heads=shared)
    return read.dense_flops() / vector, read.moved_bytes(element_bytes) / bandwidth


def trtllm_xqa_serves(query_heads: int, kv_heads: int, head_dim: int, dtype: str) -> bool:
    """Whether TensorRT-LLM's precompiled XQA kernel (kernel_facts.json "decode_attention_kernels"
    "trtllm_xqa_precompiled": DecoderXQARunner::shouldUse of the releases before its JIT XQA) runs a decode
    call of these per-rank heads; where it does not, those releases run the masked MHA ("trtllm-mmha")."""
    rule = kernel_facts()["decode_attention_kernels"]["trtllm_xqa_precompiled"]
    grouped = query_heads % kv_heads == 0 and query_heads // kv_heads in rule["query_heads_per_kv"]
    return grouped and kv_heads in rule["kv_heads"] and head_dim in rule["head_dims"] and dtype in rule["dtypes"]


def trtllm_xqa_jit_serves(query_heads: int, kv_heads: int, head_dim: int, dtype: str, batch: int, sms: int,
                          multi_block_count: int = 1) -> bool:
    """Whether TensorRT-LLM's JIT XQA kernel (kernel_facts.json "decode_attention_kernels" "trtllm_xqa_jit": the
    default of v0.11.0's DecoderXQARunner) runs a decode call of these per-rank heads at `batch` sequences on a
    GPU of `sms` SMs (sm >= 80 assumed by the caller): its head rule, then mayHavePerfGain's block count
    (multi_block_count 1 outside multi-block mode); where it does not, the masked MHA ("trtllm-mmha") runs."""
    rule = kernel_facts()["decode_attention_kernels"]["trtllm_xqa_jit"]
    low, high = rule["head_dim_range"]
    grouped = query_heads % kv_heads == 0 and query_heads != kv_heads
    heads = grouped and query_heads // kv_heads <= rule["max_query_heads_per_kv"]
    dims = head_dim % rule["head_dim_multiple"] == 0 and low <= head_dim <= high and dtype in rule["dtypes"]
    return heads and dims and kv_heads * batch * multi_block_count * rule["enable_min_block_factor"] >= sms
