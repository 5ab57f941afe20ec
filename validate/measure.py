"""Measurements of any nn.Module (Hugging Face models and the reference model alike).

What each quantity means is fixed by the conventions in docs/design.md:
  parameters       unique tensors (tied weights once), buffers excluded
  matmul FLOPs     FlopCounterMode: 2*m*n*k per mm/bmm (and per group of torch._grouped_mm, which
                   torch lacks); torch.no_grad (not inference_mode) for forward
  expert loads     tokens routed to each expert of a mixture of experts (real tensors)
  other ops        output elements per aten op, counted by a TorchDispatchMode
  activations      bytes of unique storages saved for backward during a training forward with the
                   loss, parameters and buffers (and views of them) excluded
  KV cache         bytes of the key and value tensors held by the model's cache
Everything here also runs under validate.hf_models.fake_mode(), except profiler_matmul_flops,
expert_loads and cuda_peak_memory, which need real tensors.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import (
    FlopCounterMode, flop_registry, register_flop_formula, sdpa_backward_flop_count, sdpa_flop_count,
    shape_wrapper,
)

aten = torch.ops.aten
Inputs = dict[str, Any]
LossFn = Callable[[Any], torch.Tensor]

# ---------------------------------------------------------------------------------------------
# Parameters


def count_parameters(model: nn.Module) -> int:
    """Number of parameter elements, each tensor once (tied weights once), buffers excluded."""
    return sum(p.numel() for p in model.parameters())


def parameters_by_module(model: nn.Module, depth: int = 1) -> dict[str, int]:
    """Parameter elements per module path cut at depth, each tensor under the first path owning it."""
    counts: dict[str, int] = defaultdict(int)
    for name, param in model.named_parameters():  # yields each tensor once, first owner first
        parts = name.split(".")[:-1]
        counts[".".join(parts[:depth]) or "(root)"] += param.numel()
    return dict(counts)


# ---------------------------------------------------------------------------------------------
# The loss a training step differentiates


def default_loss(output: Any) -> torch.Tensor:
    """The model's own loss if it returns one, else mean squares of its hidden and pooled outputs.

    BertModel has no loss: it gets last_hidden_state.float().pow(2).mean() plus
    pooler_output.float().pow(2).mean(). A bare tensor output gets output.float().pow(2).mean().
    """
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    if isinstance(output, torch.Tensor):
        return output.float().pow(2).mean()
    terms = [
        getattr(output, key).float().pow(2).mean()
        for key in ("last_hidden_state", "pooler_output")
        if isinstance(getattr(output, key, None), torch.Tensor)
    ]
    if not terms:
        raise ValueError("default_loss: the output has no loss, hidden states or tensor; pass loss_fn.")
    return sum(terms[1:], terms[0])


def _forward_loss(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None) -> tuple[Any, torch.Tensor]:
    output = model(**inputs)
    return output, (loss_fn or default_loss)(output)


# ---------------------------------------------------------------------------------------------
# Matmul FLOPs


def _sdpa_cpu_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """torch's own sdpa formula (dense scores and weighted sum) for the CPU flash kernel."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def _sdpa_cpu_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                            out_shape=None, **kwargs) -> int:
    """torch's own sdpa backward formula (scores recomputed, then four matmuls) for the CPU kernel."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


#: Formulas torch 2.13 lacks: FlopCounterMode counts 0 for CPU scaled_dot_product_attention.
CPU_SDPA_FORMULAS = {
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_cpu_flop,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_cpu_backward_flop,
}


def _grouped_mm_flop(a_shape, b_shape, offs_shape=None, bias_shape=None, out_dtype=None, *,
                     out_shape=None, **kwargs) -> int:
    """2*m*n*k summed over the groups of torch._grouped_mm, the jagged dimension counted whole.

    Four layouts (torch/_meta_registrations.py, _create_grouped_mm_output_tensor):
      (S, K) x (G, K, N) -> (S, N)     each row times its group's matrix (MoE forward, input grad)
      (M, S) x (S, N) -> (G, M, N)     S split into groups (MoE weight gradient)
      (G, M, K) x (K, S) -> (M, S)     S split into groups
      (G, M, K) x (G, K, N) -> (G, M, N)  a plain batched product
    The kernel skips rows past offs[-1]; transformers leaves rows there only under expert
    parallelism (sentinel tokens), so without it this count is exact.
    """
    if len(a_shape) == 2 and len(b_shape) == 3:
        return 2 * a_shape[0] * a_shape[1] * b_shape[2]
    if len(a_shape) == 2 and len(b_shape) == 2:
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    if len(a_shape) == 3 and len(b_shape) == 2:
        return 2 * a_shape[1] * a_shape[2] * b_shape[1]
    return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[2]


#: Formulas torch 2.13 lacks: FlopCounterMode counts 0 for torch._grouped_mm, which transformers
#: 5.24 runs routed experts through by default (experts_implementation="grouped_mm").
GROUPED_MM_FORMULAS = {aten._grouped_mm: _grouped_mm_flop}

#: Every formula matmul_flops() adds to FlopCounterMode's own.
EXTRA_FLOP_FORMULAS = {**CPU_SDPA_FORMULAS, **GROUPED_MM_FORMULAS}


def register_cpu_sdpa_flop_formulas() -> None:
    """Register EXTRA_FLOP_FORMULAS (CPU sdpa and grouped_mm) in torch's global flop registry
    (idempotent).

    matmul_flops() does not need this (it passes them as custom_mapping); call it before using
    FlopCounterMode directly on a model with attn_implementation="sdpa" or with MoE experts.
    """
    for op, formula in EXTRA_FLOP_FORMULAS.items():
        if op not in flop_registry:
            register_flop_formula(op)(formula)


@dataclass(frozen=True)
class FlopResult:
    """Matmul FLOPs of one forward (and backward) pass, in total, per aten op and per module."""

    forward: int
    backward: int  # 0 when the backward was not run
    forward_by_op: dict[str, int]
    backward_by_op: dict[str, int]
    forward_by_module: dict[str, int]  # module path (cut at the requested depth) -> FLOPs
    backward_by_module: dict[str, int]
    # what the same forward saved for backward (matmul_flops(..., saved=True)), else None
    saved: SavedResult | None = None

    @property
    def total(self) -> int:
        return self.forward + self.backward


def _flop_counter() -> FlopCounterMode:
    return FlopCounterMode(display=False, custom_mapping=dict(EXTRA_FLOP_FORMULAS))


class _NodeOwners(TorchFunctionMode):
    """During a forward: maps every autograd node created to the innermost module running."""

    def __init__(self, stack: list[str]) -> None:
        super().__init__()
        self.stack = stack
        self.owners: dict[Any, str] = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        new = [t.grad_fn for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        while new:  # the nodes this call created: up to the first node already owned
            node = new.pop()
            if node is not None and node not in self.owners:
                self.owners[node] = self.stack[-1]
                new.extend(next_node for next_node, _ in node.next_functions)
        return out


class _MatmulsByModule(TorchDispatchMode):
    """Matmul FLOPs (FlopCounterMode's formulas) per module path: a forward op goes to the
    innermost module running, a backward op to the module whose forward created the autograd
    node being run. (FlopCounterMode's own backward attribution misplaces ops after a module
    that returns its input unchanged, e.g. Dropout(p=0) in train mode.)"""

    def __init__(self, stack: list[str], owners: dict[Any, str]) -> None:
        super().__init__()
        self.stack, self.owners = stack, owners
        extra = {op: shape_wrapper(formula) for op, formula in EXTRA_FLOP_FORMULAS.items()}
        self.formulas = {**flop_registry, **extra}
        self.forward: dict[str, int] = defaultdict(int)
        self.backward: dict[str, int] = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = self.formulas.get(func.overloadpacket)
        if formula is not None:
            flops = formula(*args, **kwargs, out_val=out)
            node = torch._C._current_autograd_node()
            if node is None:
                self.forward[self.stack[-1]] += flops
            else:
                self.backward[self.owners.get(node, "(unattributed)")] += flops
        return out


def _cut(by_path: dict[str, int], depth: int) -> dict[str, int]:
    """Sum per module path cut to depth components ("model.layers" at depth 2)."""
    result: dict[str, int] = defaultdict(int)
    for path, flops in by_path.items():
        if flops:
            parts = [] if path == "(root)" else path.split(".")
            result[".".join(parts[:depth]) or "(root)"] += flops
    return dict(result)


def _by_op(counter: FlopCounterMode) -> dict[str, int]:
    return {str(op): n for op, n in counter.get_flop_counts().get("Global", {}).items() if n}


def matmul_flops(model: nn.Module, inputs: Inputs, backward: bool = False, depth: int = 2,
                 loss_fn: LossFn | None = None, saved: bool = False) -> FlopResult:
    """Matmul FLOPs (FlopCounterMode) of a forward, and of its backward when backward=True.

    The forward runs under torch.no_grad unless backward=True. Totals and per-op counts are
    FlopCounterMode's; per-module counts use the same formulas, attributed to the innermost module
    (backward: the module whose forward made the node) and summed to paths cut at depth. With
    backward=True and saved=True the same training forward also records what it saves for
    backward (the result's saved: saved_activation_bytes's answer), so one pass measures both.
    """
    forward_counter, backward_counter = _flop_counter(), _flop_counter()
    recorded = None
    with _module_stack(model) as stack:
        owners = _NodeOwners(stack)
        by_module = _MatmulsByModule(stack, owners.owners)
        recorder = _SavedRecorder(model, stack) if saved and backward else None
        if not backward:
            with torch.no_grad(), forward_counter, by_module:
                model(**inputs)
        else:
            with forward_counter, by_module, owners, (
                    recorder.hooks() if recorder else contextlib.nullcontext()):
                output, loss = _forward_loss(model, inputs, loss_fn)
            recorded = recorder.result(output, loss) if recorder else None
            with backward_counter, by_module:
                loss.backward()
            model.zero_grad(set_to_none=True)
    return FlopResult(
        forward=forward_counter.get_total_flops(),
        backward=backward_counter.get_total_flops() if backward else 0,
        forward_by_op=_by_op(forward_counter),
        backward_by_op=_by_op(backward_counter) if backward else {},
        forward_by_module=_cut(by_module.forward, depth),
        backward_by_module=_cut(by_module.backward, depth),
        saved=recorded,
    )


_PROFILER_MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def profiler_matmul_flops(model: nn.Module, inputs: Inputs, backward: bool = False,
                          loss_fn: LossFn | None = None) -> int:
    """Matmul FLOPs as torch.profiler(with_flops=True) estimates them: an independent second count.

    Sums the mm/addmm/bmm/baddbmm events that have no matmul event below them (aten::matmul and
    aten::linear are parents that carry no FLOPs; the leaf is counted once). Real tensors only.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        if backward:
            _, loss = _forward_loss(model, inputs, loss_fn)
            loss.backward()
        else:
            with torch.no_grad():
                model(**inputs)
    if backward:
        model.zero_grad(set_to_none=True)
    total = 0
    for event in prof.events():
        if event.name not in _PROFILER_MATMULS:
            continue
        if any(child.name in _PROFILER_MATMULS for child in event.cpu_children):
            continue
        total += int(event.flops or 0)
    return total


def _is_experts(module: nn.Module) -> bool:
    """A transformers 5.24 experts module (@use_experts_implementation): 3-D expert weights,
    called as experts(hidden_states, top_k_index, top_k_weights)."""
    return hasattr(module, "num_experts") and hasattr(module, "has_gate")


def expert_loads(model: nn.Module, inputs: Inputs) -> dict[str, list[int]]:
    """Tokens routed to each expert, per experts module, in one forward (no_grad; real tensors).

    A token sent to top_k experts counts once for each, so each list sums to tokens * top_k. The
    routed experts' matmul FLOPs are 2 * sum(load) * (each expert's FLOPs per token) whatever the
    load; the load is what sets per-expert time and expert-parallel traffic.
    """
    loads: dict[str, list[int]] = {}

    def record(path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple) -> None:
            top_k_index = args[1]
            counts = torch.bincount(top_k_index.flatten(), minlength=module.num_experts)
            loads[path] = [int(c) for c in counts[: module.num_experts]]
        return hook

    handles = [module.register_forward_pre_hook(record(path))
               for path, module in model.named_modules() if _is_experts(module)]
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    return loads


# ---------------------------------------------------------------------------------------------
# Other ops: output elements per aten op


def op_key(func: Any) -> str:
    """'aten.add.Tensor' for a named overload, 'aten._softmax' for the default one."""
    packet = str(func.overloadpacket)
    name = func._overloadname
    return packet if name == "default" else f"{packet}.{name}"


#: Ops that only re-label memory although their schema does not say "view".
_NOT_COMPUTE = (aten._unsafe_view.default, aten.detach.default)


class OpElementCounter(TorchDispatchMode):
    """Counts the elements of each aten op's first output (native_layer_norm: the normalised
    tensor, not mean/rstd); view ops and ops with no tensor input (factories) are skipped."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: dict[str, int] = defaultdict(int)
        self.calls: dict[str, int] = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = [a for a in tree_flatten((args, kwargs or {}))[0] if isinstance(a, torch.Tensor)]
        if inputs and not func.is_view and func not in _NOT_COMPUTE:
            key = op_key(func)
            outputs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
            self.elements[key] += outputs[0].numel() if outputs else 0
            self.calls[key] += 1
        return out


def other_op_elements(model: nn.Module, inputs: Inputs, backward: bool = False,
                      loss_fn: LossFn | None = None) -> dict[str, int]:
    """Output elements per aten op over a forward (no_grad), or a training forward + backward."""
    counter = OpElementCounter()
    if backward:
        with counter:
            _, loss = _forward_loss(model, inputs, loss_fn)
            loss.backward()
        model.zero_grad(set_to_none=True)
    else:
        with torch.no_grad(), counter:
            model(**inputs)
    return dict(counter.elements)


# ---------------------------------------------------------------------------------------------
# Activation memory: tensors saved for backward


def _storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage (the StorageImpl pointer; also right for fake tensors)."""
    return t.untyped_storage()._cdata


def _held(t: torch.Tensor) -> torch.Tensor:
    """The tensor whose storage t keeps alive on this rank: a DTensor's local shard, else t.
    (Under tensor parallelism autograd saves DTensors, wrappers without a storage of their own.)"""
    local = getattr(t, "_local_tensor", None)
    return local if isinstance(local, torch.Tensor) else t


@dataclass(frozen=True)
class SavedTensor:
    """One tensor saved for backward, in the order the forward saved it."""

    module: str  # innermost module running when it was saved ("model.layers.0.mlp")
    op: str  # the backward node and its attribute ("MmBackward0._saved_self")
    shape: tuple[int, ...]
    dtype: str
    storage_bytes: int  # bytes of its whole storage
    kind: str  # "new": first time its storage is seen; "shared": seen before; "parameter";
    #            "unreachable": saved by a node the loss cannot reach (freed with the forward)

    @property
    def bytes(self) -> int:
        """What it adds to the total: its storage bytes the first time, otherwise 0."""
        return self.storage_bytes if self.kind == "new" else 0


@dataclass(frozen=True)
class SavedResult:
    """Bytes saved for backward (unique storages, parameters and buffers excluded) and each tensor.

    unreachable_bytes: unique storages saved only by autograd nodes that the loss cannot reach
    (DeepSeek-V3's router saves top-k indices and a mask on branches that end in integer indices);
    nothing holds those nodes once the forward returns, so they are not in total_bytes.
    """

    total_bytes: int
    tensors: list[SavedTensor] = field(repr=False)
    unreachable_bytes: int = 0

    def by_module(self, depth: int = 2) -> dict[str, int]:
        """Counted bytes per module path cut at depth."""
        result: dict[str, int] = defaultdict(int)
        for t in self.tensors:
            result[".".join(t.module.split(".")[:depth])] += t.bytes
        return dict(result)


@contextlib.contextmanager
def _module_stack(model: nn.Module) -> Iterator[list[str]]:
    """A list whose last element is the path of the innermost module currently running forward."""
    stack = ["(root)"]

    def enter(path: str) -> Callable[..., None]:
        return lambda module, args: stack.append(path) and None

    def leave(module: nn.Module, args: Any, output: Any) -> None:
        stack.pop()

    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(enter(name or "(root)")))
        handles.append(module.register_forward_hook(leave, always_call=True))
    try:
        yield stack
    finally:
        for handle in handles:
            handle.remove()


def _label_saved(roots: list[Any], label: list[str]) -> None:
    """Walk the autograd graph from roots, unpacking every saved tensor so the unpack hook can
    record which node (and attribute) saved it."""
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if attr.startswith("_saved_"):
                label[0] = f"{node.name()}.{attr}"
                with contextlib.suppress(RuntimeError):
                    getattr(node, attr)
        label[0] = f"{node.name()}.saved_tensors"  # custom autograd.Function (set before hasattr,
        with contextlib.suppress(RuntimeError, AttributeError):  # which already unpacks)
            node.saved_tensors
        stack.extend(next_node for next_node, _ in node.next_functions)


def saved_activation_bytes(model: nn.Module, inputs: Inputs,
                           loss_fn: LossFn | None = None) -> SavedResult:
    """Bytes of the unique storages saved for backward by a training forward including the loss.

    Parameters, buffers and views of them (a transposed weight) are excluded; a storage saved by
    several ops, or a view saved beside its base, counts once. Inputs saved by an op (token ids
    saved by the embedding) are included. A DTensor (tensor parallelism) counts its local shard.
    Tensors saved only by nodes the loss cannot reach are freed with the forward: they are
    reported as unreachable_bytes, not in total_bytes. The graph is freed afterwards without a
    backward.
    """
    with _module_stack(model) as stack:
        recorder = _SavedRecorder(model, stack)
        with recorder.hooks():
            output, loss = _forward_loss(model, inputs, loss_fn)
    return recorder.result(output, loss)


class _SavedRecorder:
    """Records every tensor autograd saves during a forward (with the module that saved it) and,
    once the forward is done, which node saved it and what it costs (saved_activation_bytes)."""

    def __init__(self, model: nn.Module, stack: list[str]) -> None:
        self.excluded = {_storage_key(_held(t)) for t in [*model.parameters(), *model.buffers()]}
        self.stack = stack
        self.saved: list[torch.Tensor] = []
        self.modules: list[str] = []
        self.ops: dict[int, str] = {}
        self.label = [UNREACHABLE]

    def pack(self, t: torch.Tensor) -> int:
        self.saved.append(t)
        self.modules.append(self.stack[-1])
        return len(self.saved) - 1

    def unpack(self, index: int) -> torch.Tensor:
        self.ops.setdefault(index, self.label[0])
        return self.saved[index]

    def hooks(self) -> Any:
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def result(self, output: Any, loss: torch.Tensor) -> SavedResult:
        saved, ops = self.saved, self.ops
        roots = [loss.grad_fn] + [
            t.grad_fn for t in tree_flatten(_as_tree(output))[0] if isinstance(t, torch.Tensor)
        ]
        _label_saved(roots, self.label)
        kinds = _saved_kinds(saved, [index in ops for index in range(len(saved))], self.excluded)
        tensors = [
            SavedTensor(module=self.modules[index], op=ops.get(index, UNREACHABLE),
                        shape=tuple(t.shape), dtype=str(t.dtype).removeprefix("torch."),
                        storage_bytes=_held(t).untyped_storage().nbytes(), kind=kinds[index])
            for index, t in enumerate(saved)
        ]
        unreachable = {_storage_key(_held(saved[i])): tensors[i].storage_bytes
                       for i, kind in enumerate(kinds) if kind == "unreachable"}
        return SavedResult(total_bytes=sum(t.bytes for t in tensors), tensors=tensors,
                           unreachable_bytes=sum(unreachable.values()))


UNREACHABLE = "(unreachable from the loss)"


def _saved_kinds(saved: list[torch.Tensor], reachable: list[bool], excluded: set[int]) -> list[str]:
    """parameter / new / shared / unreachable per saved tensor. A storage is "new" at its first
    reachable save (even if an unreachable node saved it earlier) and "unreachable" only if no
    reachable node saves it."""
    counted: set[int] = set()
    reached = {_storage_key(_held(t)) for t, r in zip(saved, reachable) if r}
    kinds = []
    for t, is_reachable in zip(saved, reachable):
        key = _storage_key(_held(t))
        if key in excluded:
            kinds.append("parameter")
        elif key not in reached:
            kinds.append("unreachable")
        elif key in counted or not is_reachable:
            kinds.append("shared")
        else:
            kinds.append("new")
            counted.add(key)
    return kinds


def _as_tree(output: Any) -> Any:
    """Model outputs (ModelOutput, tuples, tensors) as something tree_flatten walks."""
    if isinstance(output, dict):
        return [v for v in output.values() if v is not None]
    return output


# ---------------------------------------------------------------------------------------------
# KV cache


def cache_bytes(cache: Any) -> dict[str, int]:
    """Bytes of the keys and values a cache holds: {"self_attention": .., "cross_attention": ..}.

    Reads Hugging Face DynamicCache (layers[i].keys / .values) and EncoderDecoderCache
    (self_attention_cache, cross_attention_cache); any other nested list/tuple/dict of tensors
    counts as self-attention. Each storage is counted once.
    """
    parts = {"self_attention": cache, "cross_attention": None}
    if hasattr(cache, "self_attention_cache"):
        parts = {"self_attention": cache.self_attention_cache,
                 "cross_attention": cache.cross_attention_cache}
    seen: set[int] = set()
    result = {}
    for name, part in parts.items():
        total = 0
        for t in _cache_tensors(part):
            key = _storage_key(t)
            if key not in seen:
                seen.add(key)
                total += t.untyped_storage().nbytes()
        result[name] = total
    return result


def cache_after_each_step(model: Any, inputs: dict[str, torch.Tensor], steps: int) -> list[int]:
    """Self-attention cache bytes a Hugging Face causal LM holds after the prefill of inputs and
    after each of `steps` decode steps (token id 1 each step)."""
    batch = inputs["input_ids"].shape[0]
    with torch.no_grad():
        cache = model(**inputs, use_cache=True).cache
        held = [cache_bytes(cache)["self_attention"]]
        for _ in range(steps):
            token = torch.ones(batch, 1, dtype=torch.long)
            cache = model(input_ids=token, cache=cache, use_cache=True).cache
            held.append(cache_bytes(cache)["self_attention"])
    return held


def _cache_tensors(cache: Any) -> list[torch.Tensor]:
    if cache is None:
        return []
    if hasattr(cache, "layers"):
        return [t for layer in cache.layers for t in (getattr(layer, "keys", None),
                getattr(layer, "values", None)) if isinstance(t, torch.Tensor) and t.numel()]
    return [t for t in tree_flatten(cache)[0] if isinstance(t, torch.Tensor)]


def output_cache(output: Any) -> Any:
    for key in ("cache", "past_key_values"):
        if getattr(output, key, None) is not None:
            return getattr(output, key)
    raise ValueError("the model output holds no cache (expected .cache or .past_key_values).")


def run_with_cache(model: nn.Module, inputs: Inputs, gen_tokens: int = 0) -> Any:
    """Prefill with use_cache=True, then feed gen_tokens single tokens through the cache (no_grad).

    For an encoder-decoder the encoder runs once and each step feeds one decoder token. Returns
    the final cache. Token ids of the steps are fixed (token 1), so no .item() is needed.
    """
    inputs = {k: v for k, v in inputs.items() if k != "labels"}
    decoder_key = "decoder_input_ids" if "decoder_input_ids" in inputs else "input_ids"
    with torch.no_grad():
        output = model(**inputs, use_cache=True)
        cache = output_cache(output)
        batch = inputs[decoder_key].shape[0]
        step = {}
        if decoder_key == "decoder_input_ids":
            step["encoder_outputs"] = (output.encoder_last_hidden_state,)
        for _ in range(gen_tokens):
            token = torch.ones(batch, 1, dtype=torch.long, device=inputs[decoder_key].device)
            output = model(**step, **{decoder_key: token}, cache=cache, use_cache=True)
            cache = output_cache(output)
    return cache


def kv_cache_bytes(model: nn.Module, inputs: Inputs, gen_tokens: int = 0) -> int:
    """Bytes of keys and values held after a prefill of the inputs and gen_tokens decode steps."""
    return sum(cache_bytes(run_with_cache(model, inputs, gen_tokens)).values())


# ---------------------------------------------------------------------------------------------
# Peak memory of a training step


def one_training_step(model: nn.Module, inputs: Inputs, optimizer: torch.optim.Optimizer,
                loss_fn: LossFn | None) -> None:
    """One step as a training loop writes it: the output (logits, cache) is dropped at once."""
    loss = (loss_fn or default_loss)(model(**inputs))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def peak_memory_memtracker(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None = None,
                           optimizer: torch.optim.Optimizer | None = None) -> dict[str, int]:
    """Peak live tensor bytes by category over forward, backward and an AdamW step (MemTracker).

    Keys: Parameter, Buffer, Gradient, Activation, Temp, Optstate, Other, Total; the categories
    are those at the moment Total peaks. Works on CPU and under fake_mode().
    """
    from torch.distributed._tools.mem_tracker import MemTracker

    optimizer = optimizer or torch.optim.AdamW(model.parameters())
    tracker = MemTracker()
    tracker.track_external(model, optimizer, *[v for v in inputs.values() if isinstance(v, torch.Tensor)])
    with tracker:
        one_training_step(model, inputs, optimizer, loss_fn)
    (snapshot,) = tracker.get_tracker_snapshot("peak").values()
    return {str(getattr(k, "value", k)): int(v) for k, v in snapshot.items()}


# ---------------------------------------------------------------------------------------------
# CUDA


def cuda_peak_memory(model: nn.Module, inputs: Inputs, gen_tokens: int = 0,
                     loss_fn: LossFn | None = None) -> dict[str, int]:
    """torch.cuda.max_memory_allocated around one training step and around prefill + decode.

    The model and inputs must already be on the GPU. Keys: weights (allocated before the step),
    train_step_peak (with AdamW), inference_peak (prefill + gen_tokens decode steps).
    """
    if not torch.cuda.is_available():
        raise RuntimeError("cuda_peak_memory needs a CUDA GPU; none is available.")
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    optimizer = torch.optim.AdamW(model.parameters())
    torch.cuda.reset_peak_memory_stats()
    one_training_step(model, inputs, optimizer, loss_fn)
    torch.cuda.synchronize()
    train_peak = torch.cuda.max_memory_allocated()
    del optimizer
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    was_training = model.training
    run_with_cache(model.eval(), inputs, gen_tokens)
    model.train(was_training)
    torch.cuda.synchronize()
    return {"weights": weights, "train_step_peak": train_peak,
            "inference_peak": torch.cuda.max_memory_allocated()}
