"""A tensor-parallel rank's kernels for the kernel-level step time (layout/kernel_step.py): each leaf of
the rank as its part key, the kernels recomputation reruns, whether it launches any, and its kernels (Entry),
read from the cost tree (costmodel/tree_kernels.py at the rank's shapes, layout/split.py's substitution).

Fast enough for plan, which times hundreds of layouts: a rank's kernels (their shapes, read from
the cost tree with sympy) depend only on the model, the workload's options, the framework's
precision, the phase, the rank's values (tp, b, n / cp, ...) and whether an eager training step
runs a measured implementation (eager_training: its memory-bound bytes as measured), not on pp, dp,
ep, ZeRO, FP8 or the schedule (those scale or re-time the kernels, per part, in kernel_step.py).
They are kept per that key in this process and on disk beside the compiled expressions
(costmodel/compiled.py's cache folder and source digest, so editing a formula invalidates them).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from typing import Any

from .. import compiled as compiled_cache
from ..kernel_shapes import AttentionCall, Gemm, MatmulCompute, PassKernel, Pointwise
from .frameworks import layout_vocabulary
from .parts import fp8_activations, layout_loss
from .rank import FRAMEWORKS, ParallelEstimate, uses_loss_parallel

#: One leaf's entry in a rank's kernels: its part key, the kernels recomputation reruns of its
#: forward (tree_kernels.rerun_kernels; none, all or a part), whether it launches any kernel, and
#: one run's kernels.
Entry = tuple[str, list, bool, list]
_KINDS = {cls.__name__: cls for cls in (Gemm, AttentionCall, Pointwise, MatmulCompute, PassKernel)}
_RANK_KERNELS: dict[tuple, list[Entry]] = {}  # this process's, by what _rank_key reads


def eager_training(estimate: ParallelEstimate, compiled: bool, autocast: bool = False) -> dict | None:
    """The measured eager implementation a training step runs (costmodel/eager_ops.py: its
    leaves' memory-bound bytes, forward and backward), or None: not a training step, or compiled,
    or under autocast (other dtypes, other ops), or no measured implementation matches. FP8
    linears keep it: their casts are their GEMMs' own, the norms, RoPE and activation run as
    measured."""
    if estimate.phase != "train" or compiled or autocast:
        return None
    from ..eager_ops import eager_training_implementation

    return eager_training_implementation(estimate.cfg, estimate.workload)


def _rank_key(estimate: ParallelEstimate, fused_attention: bool, compiled: bool,
              autocast: bool = False, fused_qkv: bool = False) -> dict[str, Any]:
    """Everything a rank's kernels depend on (not dp: no leaf's cost does): the rank's values,
    n / cp under context parallelism (ParallelEstimate.values), and the eager implementation
    measured for its step (eager_training), if any."""
    cfg, workload, layout = estimate.cfg, estimate.workload, estimate.layout
    framework = FRAMEWORKS[layout.framework]
    values = {k: v for k, v in estimate.values.items() if k != "dp"}
    from ..decode_codes import tree_options

    return {"model": cfg.structure(), "values": values, "workload": {**workload.options(), **tree_options(cfg, workload)},
            "precision": framework.precision, "device": layout.device, "phase": estimate.phase,
            "sp": layout.sp, "vocabulary": layout_vocabulary(layout), "loss_parallel": uses_loss_parallel(layout),
            "fused_attention": fused_attention, "compiled": compiled, "framework": layout.framework,
            "fp8_activations": fp8_activations(layout), "ep": layout.ep, "folded": layout.folded,
            **({"etp": layout.etp} if layout.expert_split == "etp" else {}),
            "eager_training": (eager_training(estimate, compiled, autocast) or {}).get("name"), "fused_qkv": fused_qkv,
            **({"unfused_loss": True} if layout.unfused_loss else {}),
            **({"fp32_norm_input": True} if layout.fp32_norm_input else {})}


def rank_kernels(estimate: ParallelEstimate, fused_attention: bool, compiled: bool,
                 autocast: bool = False, fused_qkv: bool = False) -> list[Entry]:
    """Each leaf of one tensor-parallel rank as (part key, rerun kernels, launches, kernels):
    from this process's memo, the disk cache, or the cost tree (sympy). fused_qkv: the decoding
    code runs Q, K and V as one GEMM (tree_kernels.leaf_kernels)."""
    cfg, layout = estimate.cfg, estimate.layout
    memo = (cfg, estimate.workload, layout.tp, layout.cp, layout.sp, layout.framework, layout.loss_parallel,
            layout_vocabulary(layout), layout.device, estimate.phase, fused_attention, compiled,
            fp8_activations(layout), autocast, layout.ep, layout.expert_split, layout.expert_tp, fused_qkv, layout.unfused_loss,
            layout.fp32_norm_input)
    if memo in _RANK_KERNELS:
        return _RANK_KERNELS[memo]
    name = compiled_cache.key_name("kernels", _rank_key(estimate, fused_attention, compiled, autocast, fused_qkv))
    path = compiled_cache.cache_dir() / f"{name}.json"
    entries = _read(path)
    if entries is None:
        entries = _from_tree(estimate, fused_attention, compiled, autocast, fused_qkv)
        _write(path, entries)
    _RANK_KERNELS[memo] = entries
    return entries


def _from_tree(estimate: ParallelEstimate, fused_attention: bool, compiled: bool, autocast: bool,
               fused_qkv: bool = False) -> list[Entry]:
    import sympy as sp

    from .. import symbols as S
    from ..eager_ops import training_bytes
    from ..tree_kernels import launches_of, leaf_kernels, rerun_kernels
    from ..tree import profile_for, shared_model
    from .rank import part_of
    from .split import rank_leaf, substitution

    cfg, workload, layout = estimate.cfg, estimate.workload, estimate.layout
    framework = FRAMEWORKS[layout.framework]
    profile = profile_for(cfg, workload, precision=framework.precision, device=layout.device,
                          optimizer_impl="foreach" if layout.device == "cuda" else "single",
                          fp8_activations=fp8_activations(layout) and estimate.phase == "train",
                          framework_loss=layout_loss(layout), routed_experts=True, expert_parallel=layout.ep,
                          fp32_norm_input=layout.fp32_norm_input)
    tree = shared_model(cfg, profile, estimate.phase)  # built once for every rank shape it serves
    values = _rank_key(estimate, fused_attention, compiled, autocast)["values"]
    eager = training_bytes(eager_training(estimate, compiled, autocast))
    subs = {getattr(S, k): sp.Integer(v) for k, v in values.items()}
    entries: list[Entry] = []
    for i, part in part_of(tree).items():
        leaf = rank_leaf(tree.leaves[i], layout.sp)  # latent attention's latents on the SP tokens
        key = part if part != "layer" else f"layer.{leaf.stack}" + (f".{leaf.kind}" if leaf.kind else "")
        encoder = leaf.stack == "encoder" and cfg.architecture == "encoder-decoder"
        local = substitution(leaf.block, sp_on=layout.sp, vocabulary=layout_vocabulary(layout),
                             loss_parallel=uses_loss_parallel(layout), encoder=encoder,
                             expert_split=layout.expert_split, etp=layout.expert_tp)
        kernels = leaf_kernels(leaf, subs, fused_attention, local, compiled, eager, fused_qkv)
        rerun = rerun_kernels(leaf, kernels, subs, fused_attention, local, compiled, eager)
        if part != "layer":  # the head part's every run (a multi-token-prediction depth runs mtp_layers times)
            kernels, rerun = kernels * int(leaf.count), rerun * int(leaf.count)
        entries.append((key, rerun, launches_of(leaf, len(kernels), compiled) > 0, kernels))
    return entries


def _read(path: Any) -> list[Entry] | None:
    try:
        rows = json.loads(path.read_text())
        kinds = lambda listed: [_KINDS[kind](**fields) for kind, fields in listed]  # noqa: E731
        return [(key, kinds(rerun), launches, kinds(kernels)) for key, rerun, launches, kernels in rows]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Any, entries: list[Entry]) -> None:
    """Atomically; no cache when the folder cannot be written."""
    listed = lambda kernels: [[type(k).__name__, dataclasses.asdict(k)] for k in kernels]  # noqa: E731
    rows = [[key, listed(rerun), launches, listed(kernels)] for key, rerun, launches, kernels in entries]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as out:
            json.dump(rows, out)
        os.replace(out.name, path)
    except OSError:
        pass
