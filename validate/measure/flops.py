"""What a pass computes: matrix-product FLOPs (FlopCounterMode, with the formulas torch lacks: CPU
sdpa and torch._grouped_mm, and a grouped convolution's backward counted with its groups), per op
and per module; the profiler's count; the tokens routed to each
expert; and the output elements of every other aten op."""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import (
    FlopCounterMode, conv_flop_count, flop_registry, register_flop_formula, sdpa_backward_flop_count, sdpa_flop_count,
    shape_wrapper,
)

from .common import Inputs, LossFn, aten, forward_loss, module_stack
from .saved import SavedRecorder, SavedResult


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

def _grouped_conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                                transposed, _output_padding, _groups, output_mask, out_shape) -> int:
    """A convolution's backward, groups counted. torch 2.13's conv_backward_flop counts the weight
    gradient by transposing the shapes (conv_flop_count(t(x), t(grad_out), t(w))) and so ignores the
    groups: a depthwise conv of D channels is counted D times over (measured: 1,229,184 FLOPs for a
    conv of 96 channels, 3 taps, b 2, n 9, whose forward is 12,672). Here the input gradient is
    torch's count (a conv of the same weight, which w_shape carries groups-correctly) and the weight
    gradient the forward's (each output element times each of the c_in / groups x K weights once)."""
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:
            raise NotImplementedError("a transposed convolution's weight gradient is not counted here")
        flops += 2 * x_shape[0] * math.prod(w_shape) * math.prod(grad_out_shape[2:])
    return flops


#: Every formula matmul_flops() adds to FlopCounterMode's own (the depthwise convs of the Mamba
#: mixers and LFM2's short convolution need the grouped backward).
EXTRA_FLOP_FORMULAS = {**CPU_SDPA_FORMULAS, **GROUPED_MM_FORMULAS,
                       aten.convolution_backward: _grouped_conv_backward_flop}


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
    with module_stack(model) as stack:
        owners = _NodeOwners(stack)
        by_module = _MatmulsByModule(stack, owners.owners)
        recorder = SavedRecorder(model, stack) if saved and backward else None
        if not backward:
            with torch.no_grad(), forward_counter, by_module:
                model(**inputs)
        else:
            with forward_counter, by_module, owners, (
                    recorder.hooks() if recorder else contextlib.nullcontext()):
                output, loss = forward_loss(model, inputs, loss_fn)
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
            _, loss = forward_loss(model, inputs, loss_fn)
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
            _, loss = forward_loss(model, inputs, loss_fn)
            loss.backward()
        model.zero_grad(set_to_none=True)
    else:
        with torch.no_grad(), counter:
            model(**inputs)
    return dict(counter.elements)
