"""What each leaf runs in eager PyTorch, where an implementation is measured on the real
transformers module (validate/eager_op_counts.py, checked again by tests/test_eager_ops.py):
  - the ops it launches in a serving step (costmodel/kernel_facts.json "eager_ops"): in eager
    mode every op pays the dispatcher (and the Python around it) whatever its size; on a CPU with
    a few rows per product that is a large share of a step. The kernel model charges an eager
    leaf ops x the hardware's measured op time, Hardware.engine_op_s (engine_s_per_op, the engine's
    time per op, else module_s_per_op, the module code's, else dispatch_s_per_op;
    kernel_time.KernelTimer.leaf_launch_seconds)
    where both are known; elsewhere one launch per leaf (overhead_s_per_block), as before;
  - the copies a leaf makes beyond the tree's bytes in a serving step (kernel_facts.json
    "eager_ops" "copies", copy_parts: the paged cache's gather and repeat_kv's copies of every key
    the step reads, each its aten op's calls per layer): the serving step charges them
    (costmodel/serving/eager_step.py EagerStep.copy_seconds);
  - the bytes its memory-bound ops move in a training step, forward and backward
    (kernel_facts.json "eager_training_bytes": Llama under sdpa and eager attention, GPT-2 under
    both, in bf16 and fp32): eager PyTorch runs a norm as some eight kernels with an fp32 upcast,
    RoPE as ten, eager attention's softmax with its upcast and cast back and the dropout on the
    (query x key) probabilities, and backward as its own sequence of aten ops, where the
    tree's bytes_other is the traffic of one fused kernel. In a training step that is not
    compiled, the kernel model gives a leaf of a measured implementation these bytes instead
    (tree_kernels.leaf_kernels; the backward's in place of twice the forward's);
  - the ops one decoding step of a counted implementation issues, all told (kernel_facts.json
    "eager_step_ops": gpt-fast's Transformer, validate/gpt_fast_ops.py; Hugging Face generate,
    validate/generate_ops.py): on a GPU the host issues
    them ahead of the GPU, so an eager step takes the longer of their host time and the kernels'
    (eager_step_seconds, as kernel_time.host_bound_seconds applies it);
  - the ops one eager training step of a counted Hugging Face model issues on one GPU, all told
    (kernel_facts.json "eager_training_ops": forward with the loss, backward, AdamW's foreach step,
    zero_grad; validate/training_ops.py): the same rule, in layout/kernel_step.KernelStepTime.step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .kernel_facts_file import kernel_facts, matching_entry


def eager_step_seconds(kernels: Any, launches: Any, host: Any) -> Any:
    """The one rule of an eager step whose host issues its ops ahead of the GPU: the longer of its
    kernels less their per-block launches (the host's term stands for them) and its ops' host time,
    max(kernels - launches, host). Numbers (a float back) or numpy arrays alike. Applied here for
    simulate's steps (kernel_time.host_bound_seconds), serve's eager steps (serving/host_step.HostBound,
    launches 0: its step is built without them) and a layout's eager stages (layout/kernel_step.py)."""
    import numpy as np

    if isinstance(kernels, np.ndarray) or isinstance(launches, np.ndarray) or isinstance(host, np.ndarray):
        return np.maximum(kernels - launches, host)
    return float(max(kernels - launches, host))


def eager_implementation(cfg: Any, attention: str, weight_format: Any = None) -> dict | None:
    """The counted implementation (kernel_facts.json "eager_ops") a model of this config runs
    under this attention, or None where none matches it (another family, a bias, experts, latent
    attention, quantized weights...: they launch other ops)."""
    if weight_format is not None:
        return None
    entry = matching_entry("eager_ops", cfg, lambda entry: attention == entry["attention"])
    if entry is None or cfg.n_kv_heads != cfg.n_heads or "multi_head" not in entry:
        return entry
    return _multi_head(entry)


def _multi_head(entry: dict) -> dict:
    """The counted implementation with as many key/value heads as query heads: its "multi_head"
    counts in place of the grouped-query ones (repeat_kv returns its input: none of its ops, none
    of its copies). Per model, not per rank: a rank whose tp leaves h / tp query heads over one
    replicated key/value head (split.kv_heads_per_rank) is not told apart."""
    same = entry["multi_head"]
    gone = set(same["skips"])
    cases = {name: ({**case, "ops": same["cases"][name],
                     "skips": [part for part in case.get("skips", ()) if part not in gone]}
                    if isinstance(case, dict) else case)
             for name, case in entry["cases"]["WeightedSum"].items()}
    copies = {name: part for name, part in entry["copies"]["WeightedSum"].items() if name not in gone}
    return {**entry, "ops": {**entry["ops"], **same["ops"]}, "cases": {**entry["cases"], "WeightedSum": cases},
            "copies": {**entry["copies"], "WeightedSum": copies}}


def eager_op_counts(cfg: Any, attention: str, weight_format: Any = None) -> dict[str, int] | None:
    """Ops per run of each block kind (by class name: what KernelTimer.leaf_launch_seconds looks a
    leaf's block up by) for a model of this config under this attention implementation, or None
    where no counted implementation matches it."""
    entry = eager_implementation(cfg, attention, weight_format)
    return None if entry is None else dict(entry["ops"])


@dataclass(frozen=True)
class CopyPart:
    """One copy a run of a leaf makes beyond the tree's bytes (kernel_facts.json eager_ops "copies"):
    `calls` calls of the aten `op` per run (K's and V's), `bytes_per_key` for every key of the step
    (a sympy expression of e, d_h, h and h_kv)."""
    op: str
    calls: int
    bytes_per_key: Any


def copy_parts(entry: dict | None, block: str) -> dict[str, CopyPart]:
    """The copies one run of a block's leaf makes beyond the tree's bytes (the implementation's
    "copies": the paged cache's gather and repeat_kv's copies of every key the attention reads),
    by name. Empty where the implementation states none for the block."""
    if entry is None:
        return {}
    stated = entry.get("copies", {}).get(block, {})
    return {name: CopyPart(str(part["op"]), int(part["calls"]), _expression(part["bytes_per_key"]))
            for name, part in stated.items() if isinstance(part, dict)}


def _expression(text: str) -> Any:
    """A stated count (kernel_facts.json) as a sympy expression of the tree's symbols, by name."""
    import sympy as sp

    from . import symbols as S

    return sp.sympify(text, locals={str(symbol): symbol for symbol in S.MODEL_SYMBOLS + S.WORKLOAD_SYMBOLS})


def eager_training_implementation(cfg: Any, workload: Any) -> dict | None:
    """The measured training implementation (kernel_facts.json "eager_training_bytes") an eager
    training step of this config and workload runs, or None where none matches: another family
    or block (a bias, experts, latent attention...), another attention path, dtype or
    implementation, quantized weights (they run other ops), or a shape the entry is not stated
    for (its "multi_head_only": fewer key/value heads than query heads; its "min_batch": a
    smaller batch; eager attention's copies differ there). The caller decides the step is
    eager: not compiled, not under autocast (layout/rank_kernel_cache.eager_training)."""
    if workload.weight_format is not None:
        return None
    dtype = kernel_facts()["eager_training_bytes"]["same_bytes_as"].get(workload.dtype, workload.dtype)  # fp16: bf16's
    return matching_entry("eager_training_bytes", cfg, lambda entry: (
        workload.attention in entry["attention"] and dtype == entry["dtype"]
        and workload.impl == entry["impl"] and workload.batch >= entry.get("min_batch", 1)
        and not (entry.get("multi_head_only") and cfg.n_kv_heads != cfg.n_heads)))


def training_bytes(entry: dict | None) -> dict[str, tuple[Any, Any]] | None:
    """Each stated leaf's measured (forward, backward) bytes in one training step of the
    implementation, by leaf path, as sympy expressions of the tree's symbols (what
    tree_kernels.leaf_kernels takes as `eager`; a leaf not stated keeps the tree's bytes_other);
    None without an implementation."""
    if entry is None:
        return None
    return {path: tuple(_expression(stated[phase]) for phase in ("forward", "backward"))
            for path, stated in entry["leaves"].items()}


def step_ops(cfg: Any, implementation: str, dtype: str, attention: str, kv_cache: str,
             quantization: dict[str, Any] | None = None, sampling: str = "greedy") -> int | None:
    """The aten ops one eager decoding step at batch 1 of this implementation issues
    (kernel_facts.json "eager_step_ops": per layer x the layers, a window's layers at their own
    count where the family states one (Gemma 2's sliding_per_layer), plus the step's own, plus
    the copies of grouped KV heads per layer where the KV heads are fewer than the query heads
    and the implementation states them), in this dtype, under this attention (or one the counted
    entry stands for: its "stands_for") and KV cache where the implementation states which it
    counted; None where no counted implementation of that name matches, or the weights are
    quantized (quantization's weight_dtype or fp8_gemm: their kernels are other ops) but for the
    codes and weight dtypes whose quantized linears issue nn.Linear's host calls (kernel_facts.json
    eager_step_ops "quantized_linears": AutoGPTQ's exllama QuantLinear under transformers, int4),
    which keep the count. fp16 takes
    bf16's counts: both are half types, so the same casts (x.float(), type_as) dispatch. A
    quantized KV cache (quantization's kv_dtype) adds the ops its update issues where the entry counts
    them (gpt-fast's "int8_kv_per_layer": torchao's int8 cache), else keeps the counts, a lower bound
    (its quantize and dequantize ops are not counted). sampling: generate_windows.SAMPLINGS (the step's own ops as the
    release issues them where kernel_facts.json "generate_windows" counts them)."""
    split = step_ops_split(cfg, implementation, dtype, attention, kv_cache, quantization, sampling)
    return None if split is None else sum(split)


def step_ops_split(cfg: Any, implementation: str, dtype: str, attention: str, kv_cache: str,
                   quantization: dict[str, Any] | None = None, sampling: str = "greedy") -> tuple[int, int] | None:
    """step_ops as (the layers' ops, the step's own ops), what a pipeline splits (decode_step_ops')."""
    counted = decode_step_ops(cfg, implementation, dtype, attention, kv_cache, quantization, sampling)
    return None if counted is None else (counted.layers, counted.own)


@dataclass(frozen=True)
class DecodeStepOps:
    """One counted eager decoding step: the layers' ops, the step's own ("per_step", or the release's
    own count under the sampling where generate_windows counts its windows), those windows
    (generate_windows.StepWindows; None where none is counted) and the GPU reads each layer makes
    (kernel_facts.json eager_step_ops "syncs_per_layer": lit-gpt d16f924d's roll check; 0 elsewhere), which
    make every layer a window of its own (roofline.KernelSteps' layer_windows)."""
    layers: int
    own: int
    windows: Any = None
    syncs_per_layer: int = 0

    @property
    def total(self) -> int:
        return self.layers + self.own


def decode_step_ops(cfg: Any, implementation: str, dtype: str, attention: str, kv_cache: str,
                    quantization: dict[str, Any] | None = None, sampling: str = "greedy") -> DecodeStepOps | None:
    """step_ops' count split, with the step's generate windows looked up once (what simulate_inference's
    serial ops read too); None where step_ops is None (no windows looked up). Where no windows are counted
    (another family, code, attention or cache) the step keeps its table's greedy per_step whatever the
    sampling: a lower bound for a sampled step (its processors' ops not counted; qwen3-speed-hf's
    Qwen3-30B-A3B rows)."""
    from .generate_windows import check_sampling, step_windows

    check_sampling(sampling)  # a typo is one line whether or not the step is counted
    if not _counted_weights(implementation, quantization or {}):
        return None
    counts = _step_counts(cfg, implementation, dtype, attention, kv_cache)
    if counts is None:
        return None
    extra = counts.get("grouped_kv_per_layer", 0) if cfg.n_kv_heads < cfg.n_heads else 0  # every layer's
    extra += counts.get("int8_kv_per_layer", 0) if (quantization or {}).get("kv_dtype") == "int8" else 0
    sliding = cfg.n_window_layers if "sliding_per_layer" in counts else 0  # decoder-only families here
    per_layer = counts["per_layer"] + counts.get("per_expert", 0) * cfg.n_experts  # a loop over every expert
    windows = step_windows(cfg, implementation, attention, sampling, kv_cache)
    return DecodeStepOps((per_layer + extra) * (cfg.n_layers - sliding)
                         + (counts.get("sliding_per_layer", 0) + extra) * sliding
                         + _quantized_extra_calls(cfg, quantization or {}),
                         counts["per_step"] if windows is None or windows.per_step is None else windows.per_step, windows,
                         int(counts.get("syncs_per_layer", 0)))


def _quantized_extra_calls(cfg: Any, quantization: dict[str, Any]) -> int:
    """The host calls a step's quantized linears issue beyond nn.Linear's four (kernel_facts.json
    eager_step_ops "quantized_linears" extra_calls_by_layout, validate/gptq_linear_ops.py: AutoGPTQ's
    exllama module 1, its cuda-old module 4), once per linear a layer (lora_adapters.linear_shapes)."""
    from .kernel_facts_file import kernel_facts
    from .lora_adapters import layer_kinds, linear_shapes

    if quantization.get("weight_dtype") is None:
        return 0
    extra = kernel_facts()["eager_step_ops"]["quantized_linears"].get("extra_calls_by_layout", {})
    calls = extra.get(quantization.get("quant_layout", ""), 0)
    return calls * sum(count * len(linear_shapes(cfg, moe)) for count, moe in layer_kinds(cfg)) if calls else 0


def _counted_weights(implementation: str, quantization: dict[str, Any]) -> bool:
    """Whether the counted ops stand for a step with these weights: unquantized ones, or a weight
    dtype whose linears issue nn.Linear's host calls under this code (kernel_facts.json
    eager_step_ops "quantized_linears"), or weights the code's own entry counted its quantized modules'
    calls for (its "weight_dtypes" in its "quant_layouts": AutoAWQ's fused GEMM modules); an fp8 GEMM never."""
    from .kernel_facts_file import kernel_facts

    if quantization.get("fp8_gemm") is not None:
        return False
    weight = quantization.get("weight_dtype")
    kept = kernel_facts()["eager_step_ops"].get("quantized_linears", {})
    own = [entry for entry in kernel_facts()["eager_step_ops"]["implementations"] if entry["name"] == implementation
           and weight in entry.get("weight_dtypes", ()) and quantization.get("quant_layout") in entry["quant_layouts"]]
    return (weight is None or bool(own)
            or (implementation in kept.get("codes", ()) and weight in kept.get("weight_dtypes", ())))


def step_copies(cfg: Any, implementation: str, attention: str, dtype: str | None = None,
                kv_dtype: str | None = None, eager: bool = True) -> dict | None:
    """The copies one eager decoding step of this implementation makes beyond the tree's bytes
    (kernel_facts.json "eager_step_copies": transformers 4.46's Qwen2 FlashAttention2 repeats the
    cached K and V heads before flash; gpt-fast's step under sdpa's math backend repeats, upcasts
    and scales the whole cache), or None where none is stated: the entry, its "parts" the
    CopyParts by name (per cached key and attention layer). A "grouped_only" entry applies only
    where the KV heads are fewer than the query heads (repeat_kv returns its input otherwise); an
    "eager_only" one only to an eager step (not `eager`: compiled, or replayed from CUDA graphs, which
    gpt-fast captures under torch.compile only: Inductor generates its own attention); one that names
    "dtypes" only in those dtypes (the math backend upcasts half types only). A part that names
    "kv_dtypes" applies only to a cache quantized to one of them (torchao's int8 cache's dequantized
    copy)."""
    entry = matching_entry("eager_step_copies", cfg, lambda entry: (
        entry["name"] == implementation and attention == entry["attention"]
        and (eager or not entry.get("eager_only")) and dtype in entry.get("dtypes", (dtype,))))
    if entry is None or (entry.get("grouped_only") and cfg.n_kv_heads >= cfg.n_heads):
        return None
    return {**entry, "parts": {name: CopyPart(str(part["op"]), int(part["calls"]), _expression(part["bytes_per_key"]))
                               for name, part in entry["copies"].items()
                               if kv_dtype in part.get("kv_dtypes", (kv_dtype,))}}


def step_syncs(cfg: Any, implementation: str, dtype: str, attention: str, kv_cache: str) -> int:
    """The device-to-host syncs one eager decoding step of this implementation issues inside its
    layers (kernel_facts.json "eager_step_ops" syncs_per_expert: transformers 4.51's Qwen3-MoE block,
    a torch.where over each of its experts, every layer; syncs_per_layer: lit-gpt d16f924d's roll check;
    generate's own stopping check not counted here), 0 where none is stated."""
    counts = _step_counts(cfg, implementation, dtype, attention, kv_cache) or {}
    return (counts.get("syncs_per_expert", 0) * cfg.n_experts + counts.get("syncs_per_layer", 0)) * cfg.n_layers


def _step_counts(cfg: Any, implementation: str, dtype: str, attention: str, kv_cache: str) -> dict | None:
    """The counted entry's ops in this dtype (fp16 takes bf16's) for this implementation, or for the
    code it is based on where kernel_facts.json "code_bases" says so (a family without experts:
    transformers-4.51 takes transformers' counts); None where none matches."""
    from .kernel_facts_file import kernel_facts

    def counted(name: str) -> dict | None:
        entry = matching_entry("eager_step_ops", cfg, lambda entry: (
            entry["name"] == name and kv_cache == entry.get("kv_cache", kv_cache)
            and attention in (entry.get("attention", attention), *entry.get("stands_for", ()))))
        return None if entry is None else entry["ops"].get("bf16" if dtype == "fp16" else dtype)

    counts = counted(implementation)
    base = kernel_facts()["eager_step_ops"].get("code_bases", {}).get(implementation)
    if counts is None and base is not None and not cfg.n_experts:
        counts = counted(base["base"])
    return counts


def training_step_ops(cfg: Any, workload: Any) -> int | None:
    """The aten ops one eager training step of this config and workload issues on one device
    (kernel_facts.json "eager_training_ops": the forward with the loss, backward, AdamW's foreach
    step and zero_grad of a Hugging Face model, validate/training_ops.py): per_layer x the layers
    + per_step, batch 1's counts at batch 1 and batch_many's above. None where no counted
    implementation matches: another family or structure (a bias, a window, experts...), fewer
    key/value heads than query heads (repeat_kv's ops, not counted), another attention, dtype or
    implementation (impl "hf" only), or quantized weights. The caller decides the step is eager
    (layout/kernel_step.training_host_ops)."""
    split = training_step_ops_split(cfg, workload)
    return None if split is None else sum(split)


def training_step_ops_split(cfg: Any, workload: Any) -> tuple[int, int] | None:
    """training_step_ops as (the layers' ops: per_layer x the layers, the step's own: per_step), what a
    pipeline splits (layout/kernel_step.stage_host_ops)."""
    if workload.weight_format is not None or cfg.n_kv_heads != cfg.n_heads:
        return None
    entry = matching_entry("eager_training_ops", cfg, lambda entry: (
        workload.attention == entry["attention"] and workload.dtype == entry["dtype"]
        and workload.impl == entry["impl"]))
    if entry is None:
        return None
    counts = entry["ops"]["batch_1" if workload.batch == 1 else "batch_many"]
    return counts["per_layer"] * cfg.n_layers, counts["per_step"]
