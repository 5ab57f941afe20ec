"""Timelines of a generation on a hardware preset: the prefill, then decode steps as the context grows.

simulate_inference strings the Roofline's passes (costmodel/roofline_model.py: each block's
kernels at the hardware's rates) into a generation: the prefill, the decode steps with and without
a KV cache, summed in closed form over any number of steps (costmodel/decode_sums.py), tokens/s,
the crossover batch and what fits; or, under the kernel-level time model, the leaves' kernels timed
by their shapes (costmodel/kernel_time.py). One GPU's training step (training_step,
simulate_training, mfu) is costmodel/roofline_training.py's.
"""

from __future__ import annotations

from typing import Any

from . import spec
from .config import DTYPE_BYTES, ConfigError, ModelConfig
from .workload import logits_kept
from .decode_sums import NoClosedForm, Rates, step_sums
from .eager_ops import decode_step_ops, step_copies, step_syncs
from .hardware import Efficiency, Hardware, time_model_for
from .kernel_facts_file import host_op_fields
from .memory import memory
from .roofline_model import Roofline, Timing, block_runs, timing_dict

#: What other modules import from here: the timelines, and the passes' Roofline they are built on.
__all__ = ["DECODE_CHUNK", "KernelSteps", "Rates", "Roofline", "Timing", "block_runs", "generation_seconds",
           "linear_sum", "simulate_inference", "stepwise_generation_seconds"]


class KernelSteps:
    """The kernel-level model's prefill and decode-step times for simulate_inference: the
    Roofline's trees, timed leaf by leaf (costmodel.kernel_time.leaves_time). Decode steps are
    timed at the shown contexts (up to 8) and interpolated linearly in between (the step time is
    linear in the context but for the attention kernel's block steps). step_ops: the ops one
    eager decoding step issues (eager_ops.step_ops; None: not counted): on a GPU (an op's time:
    Hardware.eager_op_s, the file's or else borrowed), a step takes the longer of its kernels and their host time
    (kernel_time.host_bound_seconds), at any batch (an eager step issues one op per tensor, not
    per row: generate's count is the same at batch 1, 2 and 4, validate/generate_ops.py), and so
    does the prefill, whose forward runs the same modules once (the step's count, a lower bound:
    generate's prefill issues a few more, 305 against 279 in validate/generate_ops.py's tiny
    model, the same for prompts of 5 and 20 tokens). fused_qkv: the decoding code runs Q, K and V
    as one GEMM (kernel_facts_file.fuses_qkv: gpt-fast's wqkv), in the prefill and the steps alike.
    decode_kernel: the decode steps' attention kernel (KernelTimer's; the prefill keeps the fused one's).
    serial_ops: the step's ops issued outside the forward's window between GPU reads
    (generate_windows): their host time joins each cached step's kernels, max(kernels + serial t, ops t).
    layer_windows: (layers, ops a layer) where every layer reads the GPU (eager_ops.DecodeStepOps.syncs_per_layer:
    lit-gpt d16f924d's roll check): the host cannot run ahead past a layer, so each cached step is one window a
    layer, each the longer of a layer's ops and its kernels, and one for the rest (kernel_time.layer_windows_seconds).
    compiled: torch.compile's fusions in the prefill and the steps (each step's kernels replayed from a
    CUDA graph too where cuda_graphs: mode "reduce-overhead"); eager_prefill: the prefill runs eager all
    the same (gpt-fast's generate.py compiles decode_one_token alone unless --compile_prefill)."""

    def __init__(self, roof: Roofline, cuda_graphs: bool, compiled: bool = False, step_ops: int | None = None,
                 fused_qkv: bool = False, copies: dict | None = None, decode_kernel: str | None = None,
                 serial_ops: int | None = None, eager_prefill: bool = False,
                 layer_windows: tuple[int, int] | None = None):
        from .kernel_time import KernelTimer, check_kernel_model

        check_kernel_model(roof.hardware)
        self.roof = roof
        self.step_ops = step_ops
        self.copies = copies  # eager_ops.step_copies: what the decoding code copies per cached key and layer
        self.serial_ops = serial_ops  # generate_windows: the step's ops outside the forward's window
        self.layer_windows = layer_windows  # (layers, ops a layer) where every layer reads the GPU
        self.timer = KernelTimer(roof.hardware, roof.dtype, roof.workload.attention,
                                 efficiency=roof.efficiency_given, compiled=compiled and not eager_prefill,
                                 w8a8=roof.w8a8, fused_qkv=fused_qkv)
        self.decode_timer = KernelTimer(roof.hardware, roof.dtype, roof.workload.attention,
                                        cuda_graphs=cuda_graphs, efficiency=roof.efficiency_given, compiled=compiled,
                                        w8a8=roof.w8a8, fused_qkv=fused_qkv, decode_kernel=decode_kernel)

    def prefill(self, batch: int, prompt: int, source: int) -> tuple[float, list[dict[str, Any]]]:
        """The prefill's seconds and its blocks' (simulate's prefill_blocks), which add up to them: each
        leaf's kernels with their launches, or, where the host's ops stand for the launches (an eager
        step, host_bound_seconds), its kernels alone and the host's wait past them as one more row."""
        from .kernel_time import host_bound_seconds, inference_subs, leaves_time

        subs = inference_subs(self.roof.cfg, self.roof.dtype, batch, prompt, source_len=source)
        times = leaves_time(self.roof.prefill_model.leaves, subs, self.timer)
        seconds = host_bound_seconds(times, self.step_ops, self.timer)
        hosted = self.timer.host_seconds(self.step_ops) is not None
        blocks = [{"path": leaf.path, "seconds": leaf.seconds - (leaf.launch_seconds if hosted else 0.0)}
                  for leaf in times.leaves]
        if hosted:
            blocks.append({"path": "host (eager ops)", "seconds": seconds - (times.seconds - times.launch_seconds)})
        return seconds, blocks

    def host_seconds(self) -> float | None:
        """The host's time to issue one eager decoding step (its counted ops at the hardware's
        eager_op_s), where the kernel model weighs it against the kernels; else None."""
        return self.decode_timer.host_seconds(self.step_ops)

    def decode_curve(self, batch: int, contexts: Any, source: int) -> tuple[list[int], list[float]]:
        """The decode step's seconds at each of `contexts` (sorted): the points linear_sum and
        np.interp take."""
        from dataclasses import replace

        from .kernel_time import layer_windows_seconds
        from .kernel_time import host_bound_seconds, inference_subs, leaves_time

        sampled = sorted({int(c) for c in contexts})
        leaves, rerun = self.roof.step_leaves()  # a class without a cache: the prefix rerun, n = c
        times = []
        for c in sampled:
            subs = inference_subs(self.roof.cfg, self.roof.dtype, batch, c if rerun else 1, context=c, source_len=source)
            if self.layer_windows and self.decode_timer.host_seconds(1) is not None:
                layers, per_layer = self.layer_windows
                times.append(layer_windows_seconds(leaves, subs, self.decode_timer, layers, per_layer, self.step_ops,
                                                   self.serial_ops, self.copy_seconds(subs, batch * c)))
                continue
            kernels = leaves_time(leaves, subs, self.decode_timer)
            kernels = replace(kernels, seconds=kernels.seconds + self.copy_seconds(subs, batch * c)
                              + (self.decode_timer.host_seconds(self.serial_ops) or 0.0))
            times.append(host_bound_seconds(kernels, self.step_ops, self.decode_timer))
        return sampled, times

    def copy_seconds(self, subs: dict, keys: int) -> float:
        """What the decoding code's stated copies (self.copies' parts) add to a step attending `keys`
        cached keys in all: per attention layer, each part's calls x the op's fixed time + its bytes a
        key x keys at its rate (Hardware.cold_copies, else no fixed time and the timer's bandwidth, as
        the serving step's copies, serving/eager_step.EagerStep.copy_seconds); 0 without copies."""
        if not self.copies:
            return 0.0
        timer = self.decode_timer
        total = 0.0
        for part in self.copies["parts"].values():
            fixed, rate = timer.cold_copies.get(part.op, (0.0, timer.bandwidth))
            total += part.calls * fixed + float(part.bytes_per_key.xreplace(subs)) * keys / rate
        return self.roof.cfg.n_layers * total


def linear_sum(curve: tuple[list[int], list[float]], lo: int, hi: int) -> float:
    """The sum over the integers c = lo..hi of the piecewise-linear curve through the points
    (xs, ys) (np.interp's: constant beyond its ends), in closed form: on each piece, n
    consecutive integers sum to n times the line's value at their middle."""
    xs, ys = curve
    total = max(0, min(hi, xs[0]) - lo + 1) * ys[0]  # c <= xs[0]
    total += max(0, hi - max(lo, xs[-1] + 1) + 1) * ys[-1]  # c > xs[-1]
    for k in range(len(xs) - 1):  # xs[k] < c <= xs[k + 1]
        a, b = max(lo, xs[k] + 1), min(hi, xs[k + 1])
        if a <= b:
            slope = (ys[k + 1] - ys[k]) / (xs[k + 1] - xs[k])
            total += (b - a + 1) * (ys[k] + slope * ((a + b) / 2 - xs[k]))
    return total


#: Steps evaluated at once by the step-by-step path: a million steps take about 100 MB.
DECODE_CHUNK = 1 << 18


def stepwise_generation_seconds(roof: "Roofline", batch: int, lo: int, hi: int,
                                source_len: int = 1) -> tuple[float, float]:
    """Roofline seconds of the generation steps at contexts lo..hi, with and without a KV cache,
    evaluated step by step in chunks (time linear in the steps). simulate_inference sums them in
    closed form (costmodel/decode_sums.py); this path is what tests check that sum against."""
    import numpy as np

    with_total = without_total = 0.0
    for start in range(lo, hi + 1, DECODE_CHUNK):
        contexts = np.arange(start, min(start + DECODE_CHUNK, hi + 1))
        _, with_cache, _ = roof.decode(batch, contexts, source_len=source_len)
        _, without_cache, _ = roof.rerun(batch, contexts, source_len=source_len)
        with_total += float(np.broadcast_to(with_cache, contexts.shape).sum())
        without_total += float(np.broadcast_to(without_cache, contexts.shape).sum())
    return with_total, without_total


def generation_seconds(roof: "Roofline", batch: int, lo: int, hi: int, source_len: int = 1
                       ) -> tuple[float, float]:
    """Roofline seconds of the generation steps at contexts lo..hi, with a KV cache (decode steps;
    no launches under CUDA graphs) and without one (every step reruns the decoder over its prefix;
    an encoder-decoder keeps the encoder's output): summed in closed form
    (costmodel/decode_sums.py), at once for any number of steps; step by step where a cost is not
    piecewise polynomial in the context, or where quantized weights or KV, or a decode code's own
    cache (decode_codes.tree_options: the KV heads where transformers' class caches more), change
    the bytes the closed form (transformers' tree) does not model."""
    from .decode_codes import tree_options

    if roof.quantized or tree_options(roof.cfg, roof.workload):
        return stepwise_generation_seconds(roof, batch, lo, hi, source_len)
    rates = (roof.flops_per_s, roof.vector_flops_per_s, roof.bytes_per_s)
    if roof.cacheless:  # no cache to decode with: every step is the rerun (OpenAI GPT's class)
        workload = {"batch": batch, "source_len": source_len, "bytes_per_element": DTYPE_BYTES[roof.dtype]}
        try:
            rerun = step_sums(roof.cfg, "rerun", roof.attention, roof.kv_cache, roof.workload.mla)
            seconds = rerun.seconds(lo, hi, Rates(*rates, roof.overhead_s), **workload)
            return seconds, seconds
        except NoClosedForm:
            return stepwise_generation_seconds(roof, batch, lo, hi, source_len)
    workload = {"batch": batch, "source_len": source_len, "bytes_per_element": DTYPE_BYTES[roof.dtype]}
    mla = roof.workload.mla
    try:
        cached = step_sums(roof.cfg, "decode", roof.attention, roof.kv_cache, mla)
        rerun = step_sums(roof.cfg, "rerun", roof.attention, roof.kv_cache, mla)
        return (cached.seconds(lo, hi, Rates(*rates, roof.decode_overhead_s), **workload),
                rerun.seconds(lo, hi, Rates(*rates, roof.overhead_s), **workload))
    except NoClosedForm:
        return stepwise_generation_seconds(roof, batch, lo, hi, source_len)


def rerun_seconds_floored(roof: "Roofline", batch: int, lo: int, hi: int, source_len: int, host: float,
                          plain: float) -> float:
    """The sum over contexts lo..hi of max(the uncached step's seconds, host): an eager rerun
    issues the same ops as a cached step (one per tensor, whatever the context), so no rerun takes
    less than their host time (kernel_time.host_bound_seconds). `plain`: the sum without the
    floor (generation_seconds'). The rerun's step grows with the context, so the steps under the
    floor are a prefix, found by bisection; the rest keep their closed-form sum."""
    def step(context: int) -> float:
        return float(roof.rerun(batch, context, source_len=source_len)[1])

    if step(lo) >= host:
        return plain
    if step(hi) <= host:
        return host * (hi - lo + 1)
    below, above = lo, hi  # step(below) < host < step(above)
    while above - below > 1:
        middle = (below + above) // 2
        below, above = (middle, above) if step(middle) < host else (below, middle)
    return host * (below - lo + 1) + generation_seconds(roof, batch, above, hi, source_len)[1]


def decode_rates(batch: int, gen: int, decode_s: float) -> dict[str, Any]:
    """The gen - 1 decode steps of a generation of `gen` new tokens for each of `batch` sequences
    (the prefill gives the first), decode_s seconds in all: their mean, the time per output token
    (vLLM's benchmark_serving.py calculate_metrics: tpot = (latency - ttft) / (output_len - 1),
    the same as serving/metrics.py's), and the decode rate, batch x (gen - 1) over decode_s;
    both None without a step. `plan --serve` ranks layouts by this mean."""
    steps = gen - 1
    return {"decode_steps": steps, "decode_seconds": decode_s,
            "time_per_output_token": decode_s / steps if steps > 0 else None,
            "decode_tokens_per_second": batch * steps / decode_s if steps > 0 else None}


def generation_rates(batch: int, gen: int, prefill_s: float, decode_s: float) -> dict[str, Any]:
    """A generation of `gen` new tokens for each of `batch` sequences: the prefill (which gives
    the first token), gen - 1 decode steps taking decode_s seconds in all (decode_rates: their
    mean and rate), and the end-to-end rate, batch x gen over prefill_s + decode_s."""
    return {**decode_rates(batch, gen, decode_s), "end_to_end_seconds": prefill_s + decode_s,
            "end_to_end_tokens_per_second": batch * gen / (prefill_s + decode_s)}


def shown_steps(gen: int, rows: int = 8) -> list[int]:
    """Up to `rows` decode steps spread over 1..gen, always with the first and the last."""
    if gen <= rows:
        return list(range(1, gen + 1))
    return sorted({1 + round(i * (gen - 1) / (rows - 1)) for i in range(rows)})


def refuse_layout_cache_size(cache_size: int | None) -> None:
    """--cache-size is one GPU's decode: the layout model's decode steps attend the tokens so far."""
    if cache_size is not None:
        raise ConfigError("--cache-size is one GPU's decode (simulate without a layout); the layout "
                          "model's decode steps attend the tokens so far.")


def check_eager_prefill(compiled: bool, eager_prefill: bool) -> None:
    """An eager prefill is one beside compiled decode steps (gpt-fast's generate.py --compile without
    --compile_prefill); without compiled every step runs eager already."""
    if eager_prefill and not compiled:
        raise ConfigError("--eager-prefill runs the prefill eager beside compiled decode steps; add --compile "
                          "(without it every step runs eager).")


def check_cache_size(cfg: ModelConfig, cache_size: int | None, kv_cache: str, prompt: int, gen: int) -> None:
    """A static cache's allocated length (--cache-size), refused in one line where it cannot apply: a
    dynamic cache grows with its tokens; a cache shorter than the prompt and the generation cannot hold
    them (torchao generate.py b4d0768 line 119: assert cache_size >= max_seq_length, the prompt plus
    max_new_tokens); an encoder-decoder's steps attend its source too (not stated)."""
    if cache_size is None:
        return
    if cache_size < 1:
        raise ConfigError(f"--cache-size must be a positive number of tokens, got {cache_size}.")
    if kv_cache != "static":
        raise ConfigError("--cache-size is a static cache's allocated length: add --kv-cache static "
                          "(a dynamic cache holds the tokens so far).")
    if cache_size < prompt + gen:
        raise ConfigError(f"--cache-size {cache_size:,} cannot hold the prompt and the generation "
                          f"({prompt:,} + {gen:,} tokens).")
    if cfg.architecture == "encoder-decoder":
        raise ConfigError("--cache-size is a decoder-only model's static cache; an encoder-decoder's steps also "
                          "attend its source.")


def simulate_inference(cfg: ModelConfig, hardware: Hardware, *, prompt: int, gen: int, batch: int,
                       dtype: str = "bf16", efficiency: Efficiency | None = None,
                       attention: str = "eager", kv_cache: str = "dynamic",
                       decoder_prompt: int = spec.DECODER_START_PROMPT, cuda_graphs: bool = False,
                       quantization: dict[str, Any] | None = None,
                       time_model: str | None = None, compiled: bool = False,
                       mla: str = "naive", implementation: str = "transformers",
                       decode_kernel: str | None = None, sampling: str = "greedy",
                       cache_size: int | None = None, eager_prefill: bool = False) -> dict[str, Any]:
    """Prefill latency, time per output token as the context grows, tokens/s, the decode
    crossover batch, what fits in memory, and a step table with and without a KV cache.

    time_model "roofline" times each block's two kernels at the efficiencies' roofs;
    "kernels" times the leaves' kernels by their shapes (costmodel/kernel_time.py) for the
    prefill and the cached decode steps (the table's uncached reruns stay the roofline's).
    cuda_graphs: decode steps replayed from a CUDA graph, with no launch overhead.
    implementation: the code that decodes ("transformers": Hugging Face generate; "gpt-fast":
    gpt-fast's Transformer, as torchao's benchmarks run it; "tensorrt-llm"): its KV cache (the heads
    it holds, how its attention reads a quantized one: costmodel/decode_codes.py), and where its eager step's ops are counted
    (kernel_facts.json "eager_step_ops") and the hardware has an op's time (eager_op_s: the file's; on a
    GPU whose file states none, borrowed from the project's H200 host, Hardware.host_op_borrowed), the kernel
    model's eager steps (the prefill, the cached steps and the table's reruns, at any batch) take
    the longer of their kernels and their host time. decode_kernel: the kernel a decode step's
    attention runs where its code is stated (kernel_facts.json "decode_attention_kernels":
    "trtllm-mmha"; the kernel model's cached steps only); None: the fused kernel's figures. sampling:
    how the loop picks its token (generate_windows.SAMPLINGS): where kernel_facts.json "generate_windows"
    counts the code's step, its own ops under that sampling, and the ops it issues outside the forward's
    window between GPU reads, whose host time joins the cached steps' kernels (KernelSteps.serial_ops).
    cache_size: a static cache of that many tokens that every decode step attends whole, filled or not
    (check_cache_size: torchao's generate.py --cache_size, transformers' StaticCache max_cache_len): each
    step is timed at cache_size keys, with the decoding code's copies of every key (eager_ops.step_copies);
    None: a step attends the prompt and the tokens so far. compiled: torch.compile's fusions (the kernel
    model's; with cuda_graphs its fused kernels replayed, each at graph_kernel_s); eager_prefill: with
    compiled, the prefill runs eager (KernelSteps).

    An encoder-decoder's prompt is its source: the prefill runs the encoder over it and the
    decoder over its own prompt (decoder_prompt tokens, the start token by default); each decode
    step attends to the source and to the decoder's tokens so far.

    `gen` new tokens take the prefill and gen - 1 decode steps: the prefill's logits give the
    first token (transformers' generate, gpt-fast's and torchao's generate.py, vLLM), and the
    step that gives token k + 1 feeds token k, attending to prompt + k keys (k = 1 .. gen - 1);
    the last token is never fed. Two rates: the decode rate, batch x (gen - 1) tokens over the
    decode steps' seconds, and the end-to-end rate, batch x gen tokens over the prefill and the
    steps (the one gpt-fast's, torchao's generate.py and vLLM's benchmark_latency.py publish)."""
    from .decode_codes import check_runs_on

    check_runs_on(implementation, hardware, f"--decode-code {implementation}")
    import numpy as np

    from .generate_windows import check_sampling
    from .kernel_facts_file import fuses_qkv
    from .spec import DECODE_CODES

    if implementation not in DECODE_CODES:
        raise ConfigError(f"--decode-code must be {DECODE_CODES.listed()}, got {implementation!r}.")
    check_sampling(sampling)
    check_cache_size(cfg, cache_size, kv_cache, prompt, gen)
    time_model = time_model_for(hardware, time_model, dtype)
    if compiled and time_model != "kernels":
        raise ConfigError("--compile is modelled by the kernel-level time model only; add --time-model kernels.")
    check_eager_prefill(compiled, eager_prefill)
    roof = Roofline(cfg, hardware, dtype, efficiency, attention, kv_cache, cuda_graphs, quantization, mla,
                    decode_code=implementation)
    encoder_decoder = cfg.architecture == "encoder-decoder"
    source = prompt if encoder_decoder else 1
    decoder_prompt = decoder_prompt if encoder_decoder else prompt
    prefill_total, prefill_s, prefill_blocks = roof.prefill(batch, decoder_prompt, source_len=source)
    prefill_s = roofline_prefill_s = float(prefill_s)
    counted = decode_step_ops(cfg, implementation, roof.dtype, attention, kv_cache, quantization, sampling)
    ops, windows = (counted.total, counted.windows) if counted is not None else (None, None)
    copies = step_copies(cfg, implementation, attention, roof.dtype, (quantization or {}).get("kv_dtype"),
                         eager=not (compiled or cuda_graphs))
    kernels = (KernelSteps(roof, cuda_graphs, compiled, ops, fuses_qkv(implementation), copies, decode_kernel,
                           serial_ops=windows.serial if windows else None, eager_prefill=eager_prefill,
                           layer_windows=((cfg.n_layers, counted.layers // cfg.n_layers)
                                          if counted is not None and counted.syncs_per_layer else None))
               if time_model == "kernels" else None)
    blocks = [{"path": b.path, "seconds": b.seconds, "bound": b.timing.bound} for b in prefill_blocks]
    if kernels:  # the kernel model's blocks, each with the roofline's bound (None: a row of its own)
        prefill_s, timed = kernels.prefill(batch, decoder_prompt, source)
        bounds = {block["path"]: block["bound"] for block in blocks}
        blocks = [{**block, "bound": bounds.get(block["path"])} for block in timed]
    first = last = None
    table: list[dict[str, Any]] = []
    decode_seconds = 0.0
    steps = max(gen - 1, 0)  # decode steps: the prefill gives the first token
    if steps:
        def attended(contexts: Any) -> Any:  # the keys a step at these contexts attends
            return contexts if cache_size is None else np.full_like(np.asarray(contexts), cache_size)

        first, first_s, _ = roof.decode(batch, attended(decoder_prompt + 1), source_len=source)
        last, last_s, _ = roof.decode(batch, attended(decoder_prompt + steps), source_len=source)
        first_s, last_s = float(first_s), float(last_s)
        roofline_first_s, roofline_last_s = first_s, last_s
        shown = shown_steps(steps)
        contexts = decoder_prompt + np.asarray(shown)
        _, with_cache, _ = roof.decode(batch, attended(contexts), source_len=source)
        _, without_cache, _ = roof.rerun(batch, contexts, source_len=source)
        with_cache = np.broadcast_to(with_cache, contexts.shape)
        without_cache = np.broadcast_to(without_cache, contexts.shape)
        curve = kernels.decode_curve(batch, attended(contexts), source) if kernels else None
        host = kernels.host_seconds() if kernels else None  # an eager step's floor: its ops' host time
        if host is not None:
            without_cache = np.maximum(without_cache, host)
        if curve is not None:  # the kernel model's decode steps (the reruns stay the roofline's): the curve is
            # sampled at the shown contexts (shown_steps: sorted, distinct), or at the one cache_size
            with_cache = np.broadcast_to(curve[1], contexts.shape)
            first_s, last_s = float(with_cache[0]), float(with_cache[-1])
        with_total = without_total = 0.0
        previous = 0
        for i, step in enumerate(shown):
            lo, hi = decoder_prompt + previous + 1, decoder_prompt + step
            with_steps, without_steps = generation_seconds(roof, batch, lo, hi, source)
            if cache_size is not None:  # every step at the whole cache
                with_steps = (hi - lo + 1) * float(with_cache[i])
            elif curve is not None:  # the kernel model's steps: its curve, linear between the shown steps
                with_steps = linear_sum(curve, lo, hi)
            if host is not None:
                without_steps = rerun_seconds_floored(roof, batch, lo, hi, source, host, without_steps)
            with_total, without_total = with_total + with_steps, without_total + without_steps
            previous = step
            table.append({
                "step": step, "context": int(contexts[i]),
                "with_cache_seconds": float(with_cache[i]),
                "without_cache_seconds": float(without_cache[i]),
                "with_cache_cumulative": prefill_s + with_total,
                "without_cache_cumulative": prefill_s + without_total,
            })
        decode_seconds = float(with_total)
    result: dict[str, Any] = {
        "inputs": {"model": cfg.name, "hardware": hardware.name, "dtype": roof.dtype,
                   "prompt": prompt, "decoder_prompt": decoder_prompt if encoder_decoder else None,
                   "gen": gen, "batch": batch, "attention": attention,
                   "kv_cache": kv_cache, **({"cache_size": cache_size} if cache_size is not None else {}),
                   "cuda_graphs": cuda_graphs, "time_model": time_model,
                   "compiled": compiled, **({"eager_prefill": True} if eager_prefill else {}),
                   "implementation": implementation, "mla": mla if cfg.mla else None,
                   **({"kv_cache_held": False} if roof.cacheless else {}),
                   **{k: v for k, v in (quantization or {}).items() if v is not None},
                   "compute_efficiency": roof.efficiency.compute,
                   "memory_efficiency": roof.efficiency.memory},
        "hardware": {"peak_flops_per_s": hardware.peak(roof.dtype),
                     "vector_flops_per_s": hardware.vector_flops_per_s,
                     "bandwidth_bytes_per_s": hardware.bandwidth_bytes_per_s,
                     "ridge_flops_per_byte": roof.flops_per_s / roof.bytes_per_s,
                     "memory_bytes": hardware.memory_bytes,
                     "serving_memory_bytes": hardware.serving_memory_bytes, "source": hardware.source},
        "prefill": {**timing_dict(prefill_total, prefill_s, roofline_prefill_s),
                    "logits": logits_kept(roof.prefill_model.profile.logits_to_keep)},
        "prefill_blocks": blocks,  # they add up to prefill's seconds
    }
    if gen:
        result["decode"] = {
            **({"first_token": timing_dict(first, first_s, roofline_first_s),
                "last_token": timing_dict(last, last_s, roofline_last_s)} if steps else {}),
            **generation_rates(batch, gen, prefill_s, decode_seconds),
            "crossover_batch_weights_only": roof.decode_crossover_batch(),
            "crossover_batch_at_context": roof.decode_crossover_batch(
                cache_size or decoder_prompt + max(steps, 1), source),
        }
    prefill_host = kernels.timer.host_seconds(ops) if kernels else None  # the prefill's, eager even under graphs
    if prefill_host is not None:
        result["prefill"]["host"] = {"ops_per_step": ops, "seconds_per_step": prefill_host,
                                     "bound": prefill_host >= prefill_s, **host_op_fields(hardware)}
    if steps:
        if host is not None:  # an eager step whose host time the kernel model weighs (host_bound_seconds);
            # op_time_borrowed: the file states none, so the project's H200 host's (Hardware.host_op_borrowed)
            syncs = step_syncs(cfg, implementation, roof.dtype, attention, kv_cache)  # eager_ops: a loop's syncs
            result["decode"]["host"] = {"ops_per_step": kernels.step_ops, "seconds_per_step": host,
                                        "bound": host >= first_s, **host_op_fields(hardware),
                                        **({"syncs_per_step": syncs} if syncs else {}),
                                        **({"syncs_per_layer": counted.syncs_per_layer} if counted.syncs_per_layer else {}),
                                        **({"loop_reads_per_step": windows.syncs,
                                            "serial_ops_per_step": windows.serial} if windows else {})}
        elif kernels and kernels.decode_timer.host_s_per_op is not None:  # eager on a GPU host, ops not counted
            result["decode"]["host"] = {"ops_per_step": None, "seconds_per_step": None, "bound": None}
    # whether it fits, with no token generated too (the prefill alone: --gen 0)
    result["memory"] = roof.fits(batch, cache_size or decoder_prompt + max(gen - 1, 0), source_len=source,
                                 prompt=decoder_prompt)
    if gen:
        result["generation_table"] = table
    return result
