"""Measures this machine as the `local` hardware preset: matmul and vector FLOP/s, memory bandwidth.

A short benchmark (about a minute on a 2-core VM). The roofs are what each kind of work reaches here, measured on
the shapes a Transformer runs:
- matmul FLOP/s, in each dtype asked for (fp32 by default): a prefill's linear layers, tokens
  through 16 distinct weights of 1024 x 4096 and 4096 x 1024 (with bias), one after the other:
  256 tokens in fp32, 32 in the 16-bit dtypes, which this CPU runs far slower;
- memory bandwidth: a decode step's linear layers, one token through the same 16 weights (256 MiB),
  which streams every weight once;
- vector FLOP/s: softmax, layernorm, rmsnorm, gelu, gelu (tanh) and silu over 2M fp32 elements,
  each counted with costmodel.blocks' FLOPs-per-element convention; the median of the six;
- overhead per block: a tiny model's decode step, divided by its blocks;
- GEMM efficiency by rows (fp32): the linear chain at 1 to 256 rows over the best of those rates
  (few rows reach neither the large-GEMM rate nor the weights' streaming rate on a CPU): the
  kernel model's GEMM time on `local` (costmodel/kernel_time.py);
- GEMV efficiency by inner width (fp32): one row through chains of distinct K x K weights (64 MiB
  each, K 256 to 4096), timed in turn with the linear chain, over the chain's best rate (a one-row
  product runs as a GEMV, one dot product of K per output, slower per byte at a short K);
- dispatch per op: one tiny op's time (an add of two 1-element tensors);
- module code per op: transformers' Llama decoder layers (2, 32 wide) on one token, their forward
  over the aten ops it dispatches: what each op of an eager leaf pays (costmodel/eager_ops.py
  counts module code's ops; Hardware.eager_op_s takes this figure over the bare add's);
- the engine's time per op: a compute-free Llama's steps through transformers' continuous-batching
  engine over the aten ops they dispatch (the serving step's counted ops take it: Hardware.engine_op_s);
- the paged cache's copies cold (validate/cold_copies.py): index_select of keys out of a paged
  cache and repeat_kv's clone of them, a 64 MiB read before each call, at several key counts, each
  op's medians fitted as a fixed time per call + bytes at a rate (Hardware.cold_copies).
- attention efficiency by queries (fp32): torch's scaled_dot_product_attention, 8 heads of 64 (the
  serving benchmark's Llama), at (queries, keys) (1, 256), (16, 256), (64, 512), (256, 256) and
  (512, 512), causal where queries and keys are as many, timed in turn with the linear chain at 256
  tokens: the FLOPs the kernel model counts for the call over the chain's rate (what flops_per_s
  measures). Its rate follows the queries (1 query: a tenth of the peak; 16 and more: about half),
  not the keys: the kernel model's attention time on `local`.
A plain copy's bandwidth is recorded beside them. The first dtype measured is the preset's default
dtype. The result is cached as JSON where costmodel.hardware.load_hardware("local") reads it.
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

from costmodel.hardware import local_cache_path

from .cold_copies import SOURCE as COLD_COPY_SOURCE
from .cold_copies import cold_copies


def median_seconds(function: Callable[[], Any], repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: Tokens and repeats of the prefill-shaped chain per dtype: the 16-bit matmuls run ~25x slower here.
CHAIN_RUNS = {"fp32": (256, 5), "bf16": (32, 3), "fp16": (32, 3)}


class LinearChain:
    """16 distinct linear layers, d -> 4d and back, that a batch of tokens runs through."""

    def __init__(self, d: int = 1024, layers: int = 16, dtype: torch.dtype = torch.float32):
        shapes = [(4 * d, d) if i % 2 == 0 else (d, 4 * d) for i in range(layers)]
        self.weights = [(torch.randn(rows, cols) / cols**0.5).to(dtype) for rows, cols in shapes]
        self.biases = [torch.zeros(rows, dtype=dtype) for rows, _ in shapes]
        self.d = d
        self.dtype = dtype

    def run(self, x: torch.Tensor) -> torch.Tensor:
        for weight, bias in zip(self.weights, self.biases):
            x = torch.nn.functional.linear(x, weight, bias)
        return x

    @property
    def elements(self) -> int:
        return sum(w.numel() for w in self.weights)

    def flops_per_s(self, tokens: int = 256, repeats: int = 5) -> float:
        """Prefill-shaped: 2 * tokens * weights FLOPs per pass."""
        x = torch.randn(tokens, self.d, dtype=self.dtype)
        return 2 * tokens * self.elements / median_seconds(lambda: self.run(x), repeats)

    def bytes_per_s(self, repeats: int = 9) -> float:
        """Decode-shaped: one token reads every weight once."""
        x = torch.randn(1, self.d, dtype=self.dtype)
        return self.weights[0].element_size() * self.elements / median_seconds(lambda: self.run(x), repeats)


def gemm_rows_flops_per_s(rows: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256), repeats: int = 5,
                          dtype: str = "fp32") -> dict[int, float]:
    """FLOP/s of the linear chain's products at each row count (tokens): how fast few-row products
    run against the large-GEMM rate flops_per_s measures at 256 rows (a shape-dependent
    efficiency; on this CPU a few rows reach neither that rate nor the weights' streaming rate).
    The row counts are timed in turn, `repeats` times round (the median of each): a machine whose
    load changes during the measurement slows every row count alike."""
    return gemm_rates(rows, (), repeats, dtype)["chain"]


#: Inner widths (K) of the one-row products gemv_efficiency_by_inner times beside the chain.
INNER_WIDTHS = (256, 512, 1024, 2048, 4096)
INNER_MEGABYTES = 64  # each width's distinct weights, so every product reads its weights from memory


def gemm_rates(rows: tuple[int, ...], inner: tuple[int, ...] = INNER_WIDTHS, repeats: int = 5,
               dtype: str = "fp32", megabytes: int = INNER_MEGABYTES) -> dict[Any, dict[int, float]]:
    """FLOP/s by rows of the linear chain ("chain") and, for each inner width K of `inner`, of one
    row through a chain of distinct K x K weights (`megabytes` in all, so each product reads its
    weights from memory, as a step's layers do): every (chain, rows) timed in turn, `repeats` times
    round, the median of each. The BLAS runs one row as a GEMV, one dot product of K per output:
    on a CPU its rate per byte falls with K (on a 2-core EPYC VM one row at K 512 ran at 0.58x
    the chain's one-row rate, at K 256 0.42x), which the chain's 1024 <-> 4096 products do not
    show. (At 4 rows and more the same square chains ran 0.7-1.4x the chain's rate, and the
    engine's own products of 8 rows at K 512 at the chain's: the rows table stands there.)"""
    chain = LinearChain(dtype=TORCH_DTYPES[dtype])
    chains: dict[Any, tuple[list[torch.Tensor], int]] = {"chain": (chain.weights, chain.d)}
    for k in inner:
        copies = max(1, megabytes * 2**20 // (chain.weights[0].element_size() * k * k))
        chains[k] = ([(torch.randn(k, k) / k**0.5).to(chain.dtype) for _ in range(copies)], k)
    plan = [(name, m) for name in chains for m in (rows if name == "chain" else (1,))]
    inputs = {(name, m): torch.randn(m, chains[name][1], dtype=chain.dtype) for name, m in plan}

    def run(name: Any, m: int) -> None:
        if name == "chain":  # with its biases, as flops_per_s times it
            chain.run(inputs[(name, m)])
            return
        x = inputs[(name, m)]
        for weight in chains[name][0]:
            x = torch.nn.functional.linear(x, weight)

    times: dict[tuple[Any, int], list[float]] = {key: [] for key in plan}
    for key in plan:  # warm-up
        run(*key)
    for _ in range(repeats):
        for key in plan:
            start = time.perf_counter()
            run(*key)
            times[key].append(time.perf_counter() - start)
    rates: dict[Any, dict[int, float]] = {name: {} for name in chains}
    for name, m in plan:
        elements = sum(w.numel() for w in chains[name][0])
        rates[name][m] = 2 * m * elements / statistics.median(times[(name, m)])
    return rates


def gemv_efficiency_by_inner(rates: dict[Any, dict[int, float]]) -> dict[str, float]:
    """gemv_efficiency_by_inner's table from gemm_rates: each width's one-row rate over the best
    of the chain's rates (efficiency_by_rows' denominator: a ratio within one interleaved
    measurement), at most 1."""
    top = max(rates["chain"].values())
    return {str(k): min(1.0, by_rows[1] / top) for k, by_rows in rates.items() if k != "chain"}


#: (queries, keys) of the attention calls calibrate times, and their heads and head width: the
#: serving benchmark's Llama (benchmarks/bench_serve_steps.py: 512 wide, 8 heads of 64).
ATTENTION_SHAPES = ((1, 256), (16, 256), (64, 512), (256, 256), (512, 512))
ATTENTION_HEADS, ATTENTION_HEAD_DIM = 8, 64


def attention_flops_per_s(shapes: tuple[tuple[int, int], ...] = ATTENTION_SHAPES, repeats: int = 5,
                          heads: int = ATTENTION_HEADS, head_dim: int = ATTENTION_HEAD_DIM,
                          chain: "LinearChain | None" = None) -> tuple[dict[int, float], float]:
    """FLOP/s of torch's scaled_dot_product_attention (fp32) at each (queries, keys), and of the
    linear chain at 256 tokens timed in turn with them (the rate flops_per_s measures), as
    (rates by queries, chain rate); `chain`: an fp32 LinearChain already built (None: a new one).
    Each call's FLOPs are those the kernel model counts for it
    (kernel_time.AttentionCall.executed_flops, causal, the queries the last of the keys), so the
    model gives the measured time back at each measured shape. torch's is_causal aligns the
    first query with the first key, so only a call of as many queries as keys runs causal; one
    of fewer queries runs unmasked: the last positions' queries see every key but their own
    block's upper triangle, and the model counts every pair of those calls (whole 128-key blocks)."""
    from costmodel.kernel_time import AttentionCall, kernel_facts

    block = int(kernel_facts()["attention_block"]["value"])
    chain = chain or LinearChain()
    x = torch.randn(256, chain.d)
    tensors = {shape: [torch.randn(1, heads, n, head_dim) for n in (shape[0], shape[1], shape[1])]
               for shape in shapes}
    def attend(shape: tuple[int, int]) -> Any:
        return torch.nn.functional.scaled_dot_product_attention(*tensors[shape], is_causal=shape[0] == shape[1] > 1)
    times: dict[Any, list[float]] = {shape: [] for shape in (*shapes, "chain")}
    runs = {**{shape: (lambda s=shape: attend(s)) for shape in shapes}, "chain": lambda: chain.run(x)}
    for run in runs.values():  # warm-up
        run()
    for _ in range(repeats):
        for key, run in runs.items():
            for _ in range(3 if key != "chain" else 0):  # the call hot (its operands and code in the
                run()  # caches) as an engine's layers run it, not cold after the chain's 256 MiB of weights
            start = time.perf_counter()
            run()
            times[key].append(time.perf_counter() - start)
    flops = {shape: AttentionCall(1, heads, shape[0], shape[1], head_dim).executed_flops(block) for shape in shapes}
    rates = {shape[0]: flops[shape] / statistics.median(times[shape]) for shape in shapes}
    return rates, 2 * 256 * chain.elements / statistics.median(times["chain"])


def attention_efficiency_by_queries(rates: dict[int, float], chain: float) -> dict[str, float]:
    """The attention rates by queries as fractions of the chain's rate measured with them (a ratio
    within one interleaved measurement, as efficiency_by_rows' is), each at most 1: the hardware
    file's fraction of the peak (a reading above the chain's rate is the shared machine's noise)."""
    return {str(n_q): min(1.0, rate / chain) for n_q, rate in sorted(rates.items())}


def dispatch_s_per_op(repeats: int = 2001, device: str = "cpu") -> float:
    """The time one tiny op takes (an add of two 1-element tensors): PyTorch's per-op dispatch,
    what each of the ~1,000 small ops of an eager engine step pays. On a GPU, the host's time to
    issue one (Python, the dispatcher and the launch; what an eager step's host term charges,
    kernel_time.host_bound_seconds): batches of 100 adds timed on the host without waiting for
    the GPU, the queue drained between batches, the median batch's time per add."""
    a, b = torch.ones(1, device=device), torch.ones(1, device=device)
    if not device.startswith("cuda"):
        return median_seconds(lambda: torch.add(a, b), repeats, warmup=50)
    per_op = []
    for batch in range(max(6, repeats // 100) + 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(100):
            torch.add(a, b)
        if batch:  # the first batch warms up
            per_op.append((time.perf_counter() - start) / 100)
    torch.cuda.synchronize()
    return statistics.median(per_op)


#: The module-code microbenchmark's model: transformers' own Llama decoder layers (the module code
#: the continuous-batching engine runs, validate/serving_engine.py) and its rotary module, 2 layers,
#: 4 heads, 2 KV heads (grouped, as the serving benchmark's Llama), the MLP 3x the width; fp32, sdpa.
MODULE_LAYERS, MODULE_HEADS, MODULE_KV_HEADS = 2, 4, 2
#: The width it runs at: one token through products of 32 x 96 at most, so its kernels take far less
#: than its ops' host time; module_seconds_per_op is flat in the width (tests/test_module_per_op.py).
MODULE_WIDTH = 32


def module_stack(width: int = MODULE_WIDTH, device: str = "cpu") -> Any:
    """A small eager stack of transformers' LlamaDecoderLayer (MODULE_LAYERS of them, after the
    model's rotary module), `width` wide, on `device`, in eval mode: called with one token's
    hidden state (1, 1, width), it runs each layer's norms, q/k/v/o linears, rotary, sdpa and SwiGLU
    MLP through their nn.Module calls, as the engine's model does, without the engine's cache."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(vocab_size=16, hidden_size=width, intermediate_size=3 * width,
                         num_hidden_layers=MODULE_LAYERS, num_attention_heads=MODULE_HEADS,
                         num_key_value_heads=MODULE_KV_HEADS, max_position_embeddings=64)
    config._attn_implementation = "sdpa"

    class Stack(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rotary_emb = LlamaRotaryEmbedding(config)
            self.layers = torch.nn.ModuleList(LlamaDecoderLayer(config, i) for i in range(MODULE_LAYERS))

        def forward(self, hidden: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
            position_embeddings = self.rotary_emb(hidden, position_ids)
            for layer in self.layers:
                hidden = layer(hidden, attention_mask=None, position_ids=position_ids,
                               position_embeddings=position_embeddings)
            return hidden

    return Stack().to(device).eval()


def count_aten_ops(function: Callable[[], Any]) -> int:
    """The aten ops one call of `function` dispatches below autograd (views, copies and products
    alike, as validate/eager_op_counts.py counts an engine step's), under a TorchDispatchMode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            Count.ops += 1
            return func(*args, **(kwargs or {}))

    with Count():
        function()
    return Count.ops


def module_seconds_per_op(repeats: int = 301, width: int = MODULE_WIDTH, device: str = "cpu") -> dict[str, Any]:
    """The host's time per aten op in eager module code: module_stack's forward on one token
    (no_grad, as the engine runs), timed, over the aten ops it dispatches (count_aten_ops). What
    an op inside an engine step's modules pays beyond a bare op's dispatch (dispatch_s_per_op):
    nn.Module.__call__, F.linear's and sdpa's argument handling, the views and reshapes around each
    product, transformers' kwargs. On a CPU the median forward's time over its ops; on a GPU, as
    dispatch_s_per_op: batches of 5 forwards timed on the host without waiting for the GPU (the
    queue drained between batches), the median batch's time per op. Returns {"seconds_per_op",
    "ops" (per forward), "forward_s", "width"}."""
    stack = module_stack(width, device)
    hidden = torch.randn(1, 1, width, device=device)
    position = torch.zeros(1, 1, dtype=torch.long, device=device)
    with torch.no_grad():
        forward = lambda: stack(hidden, position)  # noqa: E731
        ops = count_aten_ops(forward)
        if not device.startswith("cuda"):
            seconds = median_seconds(forward, repeats, warmup=20)
        else:
            batches = []
            for batch in range(max(6, repeats // 5) + 1):
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(5):
                    forward()
                if batch:  # the first batch warms up
                    batches.append((time.perf_counter() - start) / 5)
            torch.cuda.synchronize()
            seconds = statistics.median(batches)
    return {"seconds_per_op": seconds / ops, "ops": ops, "forward_s": seconds, "width": width}


def module_s_per_op(repeats: int = 301, device: str = "cpu") -> float:
    """The hardware file's module_s_per_op: module_seconds_per_op's seconds per op at MODULE_WIDTH."""
    return module_seconds_per_op(repeats, device=device)["seconds_per_op"]


def engine_seconds_per_op(runs: int = 5) -> dict[str, Any]:
    """The host's time per aten op of transformers' continuous-batching engine: a compute-free Llama
    (validate/serving_engine.py's TINY_LLAMA: 64 wide, 2 layers; its products take microseconds)
    runs a fixed trace through the engine; each step's measured time over the aten ops it
    dispatches (counted in a run apart, validate/eager_op_counts.py: the model's leaves, its own
    body and the step's sampling), the median over `runs` timed runs' steps but each run's first. What an op of the
    engine's step pays: the module code's (module_seconds_per_op) and the paged attention's,
    the model's and the step's Python between ops. Returns {"seconds_per_op", "ops" (per step,
    the median), "steps"}."""
    from .eager_op_counts import count_engine_steps
    from .serving_engine import TINY_LLAMA, run_engine, tiny_model

    trace = [(0, 6, 4), (5, 9, 3), (5, 5, 4), (5, 7, 2), (5, 3, 3)] * 2
    budgets = dict(scheduler="fifo", block_size=4, num_blocks=64, max_batch_tokens=16, max_requests=8)
    counted = count_engine_steps(trace, tiny_model(0), **budgets)
    layers = TINY_LLAMA["num_hidden_layers"]
    ops = [sum(n * (layers if p.startswith("decoder.layer.") else 1) for p, n in step["ops"].items())
           for step in counted]
    model, per_op = tiny_model(0), []
    for _ in range(runs):
        timed = run_engine(trace, model=model, **budgets)
        if [len(s["queries"]) for s in counted] != [len(e) for e, _, _ in timed.schedule]:
            raise RuntimeError("the engine scheduled the counted and the timed runs differently.")
        per_op += [t / n for t, n in zip(timed.seconds[1:], ops[1:])]
    return {"seconds_per_op": statistics.median(per_op), "ops": statistics.median(ops[1:]), "steps": len(ops) - 1}


def vector_flops_per_s(elements: int = 2**21, repeats: int = 7) -> float:
    """The median over the models' non-matmul ops of their FLOP/s (costmodel's convention)."""
    from costmodel.blocks import OTHER_FLOPS_PER_ELEMENT

    functional = torch.nn.functional
    x = torch.randn(elements // 512**2, 512, 512)
    weight, bias = torch.ones(512), torch.zeros(512)
    ops = {
        "softmax": lambda: torch.softmax(x, -1),
        "layernorm": lambda: functional.layer_norm(x, (512,), weight, bias),
        "rmsnorm": lambda: functional.rms_norm(x, (512,), weight),
        "gelu": lambda: functional.gelu(x),
        "gelu_tanh": lambda: functional.gelu(x, approximate="tanh"),
        "silu": lambda: functional.silu(x),
    }
    rates = [OTHER_FLOPS_PER_ELEMENT[kind] * x.numel() / median_seconds(op, repeats)
             for kind, op in ops.items()]
    return statistics.median(rates)


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
    from costmodel.roofline import block_runs
    from costmodel.tree import CostModel

    from .decoding import prefill, step
    from .reference import build_reference

    cfg = ModelConfig(name="tiny", family="llama", vocab_size=64, d_model=32, n_heads=4, d_ff=64,
                      n_decoder_layers=2, position="rope", norm="rmsnorm", activation="swiglu",
                      qkv_bias=False, out_bias=False, ffn_bias=False, tie_embeddings=False)
    model = build_reference(cfg).eval()
    token = torch.zeros(1, dtype=torch.long)
    state, _ = prefill(model, torch.ones(1, 4, dtype=torch.long))
    seconds = median_seconds(lambda: step(state, token), repeats)
    return seconds / block_runs(CostModel(cfg, phase="decode"))


def efficiency_by_rows(rates: dict[int, float]) -> dict[str, float]:
    """The measured FLOP/s by rows as fractions of the best of them (the large-GEMM rate, which
    flops_per_s measures apart), for the hardware file: each at least that of fewer rows (a
    product of m rows can run as products of m' < m rows, m' dividing m on this grid of powers of
    two, so a lower reading is the shared machine's noise). A ratio within one interleaved
    measurement, so a load that differs from flops_per_s's does not move it."""
    out, best, top = {}, 0.0, max(rates.values())
    for m in sorted(rates):
        best = max(best, rates[m] / top)
        out[str(m)] = best
    return out


def measure_local(memory_bytes: int | None = None, dtypes: tuple[str, ...] = ("fp32",)) -> dict[str, Any]:
    """The `local` preset's fields, measured now: matmul FLOP/s in each of `dtypes` (the first is
    the default dtype of a simulation on `local`)."""
    chain = LinearChain()
    flops = {}
    for dtype in dtypes:
        tokens, repeats = CHAIN_RUNS[dtype]
        measured = chain if dtype == "fp32" else LinearChain(dtype=TORCH_DTYPES[dtype])
        flops[dtype] = measured.flops_per_s(tokens, repeats)
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    rows = {}
    if "fp32" in dtypes:
        measured = gemm_rates((1, 2, 4, 8, 16, 32, 64, 128, 256))
        rates = measured["chain"]
        rows = {"gemm_efficiency_by_rows": {"fp32": efficiency_by_rows(rates)},
                "_gemm_rows_flops_per_s": {"fp32": {str(m): r for m, r in rates.items()}},
                "gemv_efficiency_by_inner": {"fp32": gemv_efficiency_by_inner(measured)}}
        attention, chain_rate = attention_flops_per_s(chain=chain)
        efficiency = attention_efficiency_by_queries(attention, chain_rate)
        rows.update({"attention_efficiency_by_queries": {"fp32": efficiency},
                     "_attention_flops_per_s": {"fp32": {**{str(n): r for n, r in attention.items()},
                                                         "chain": chain_rate}}})
    copies = cold_copies()
    if copies["fields"]:
        rows.update({"cold_copies": copies["fields"],
                     "_cold_copy_seconds": {op: {str(k): t for k, t in by_keys.items()}
                                            for op, by_keys in copies["seconds"].items()}})
    return {
        "name": "local",
        "architecture": "cpu",
        "description": f"this machine: {platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} torch threads",
        "flops_per_s": flops,
        "default_dtype": dtypes[0],
        "vector_flops_per_s": vector_flops_per_s(),
        "bandwidth_bytes_per_s": chain.bytes_per_s(),
        "copy_bandwidth_bytes_per_s": bandwidth_bytes_per_s(),
        "memory_bytes": memory_bytes,
        "efficiency": {"compute": 1.0, "memory": 1.0},
        "overhead_s_per_block": overhead_s_per_block(),
        "dispatch_s_per_op": dispatch_s_per_op(),
        "module_s_per_op": module_s_per_op(),
        "engine_s_per_op": engine_seconds_per_op()["seconds_per_op"],
        **rows,
        "source": f"measured by validate/calibrate.py with torch {torch.__version__} (medians: "
        f"matmuls of tokens through 16 linear layers 1024 <-> 4096 in {', '.join(dtypes)} (256 "
        "tokens in fp32, 32 in 16-bit dtypes); one fp32 token through the same layers (256 MiB "
        "of weights) for the bandwidth; "
        "softmax, norms and activations over 2M elements for the vector FLOP/s; a tiny "
        "model's decode step per block for the overhead; the same fp32 chain at 1-256 tokens, the row counts "
        "in turn, over the best of them for the GEMM efficiency by rows (raw rates in _gemm_rows_flops_per_s); "
        f"one row through chains of distinct K x K weights ({INNER_MEGABYTES} MiB each, K in "
        f"{', '.join(map(str, INNER_WIDTHS))}), timed in turn with it, over the same best rate, for the GEMV "
        "efficiency by inner width; "
        "an add of two 1-element tensors for the dispatch per op; transformers' LlamaDecoderLayer x "
        f"{MODULE_LAYERS} ({MODULE_WIDTH} wide, {MODULE_HEADS} heads, {MODULE_KV_HEADS} KV heads, sdpa) and its rotary "
        "module on one token, the forward over the aten ops it dispatches, for the module code per op; "
        "a compute-free Llama's steps (64 wide) through transformers' continuous-batching engine over the ops "
        "they dispatch, for the engine's time per op; torch's scaled_dot_product_attention, 8 heads "
        "of 64, at (queries, keys) " + ", ".join(f"({q}, {k})" for q, k in ATTENTION_SHAPES) + " timed in turn "
        "with the chain at 256 tokens, the kernel model's FLOPs of each call over the chain's rate, for the "
        "attention efficiency by queries (raw rates in _attention_flops_per_s); " + COLD_COPY_SOURCE + ")",
    }


def calibrate(path: Path | None = None, dtypes: tuple[str, ...] = ("fp32",)) -> dict[str, Any]:
    """Measure and cache the `local` preset (written atomically); returns what was written."""
    path = path or local_cache_path()
    data = measure_local(dtypes=dtypes)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(temporary, path)
    return data
