"""Peak live tensor bytes over one training step: forward with the loss, backward, AdamW, zero_grad.

Where the peak is (measured with MemTracker, validate/FINDINGS.md section 7, and tests/test_peak.py):
in the **AdamW step**, not in backward, for every model measured (reference, HF Llama, HF GPT-2 at
d=64..256): by then the activations saved for backward are freed, but the gradients, the freshly
created moments m and v and the optimizer's own temporaries are all live at once. At that moment:
weights + gradients + moments (the precision policy's bytes per parameter) + AdamW's step counters
and temporaries (the optimizer leaf, blocks.OptimizerStep) + the scalar loss (the loss leaf) + the
int64 inputs (ids, token types, labels) + the buffers (RoPE tables, sinusoids, BERT's id buffers).
MemTracker's categories match these: Parameter = weights, Gradient = gradients, Optstate = moments
+ steps + temporaries, Activation = loss, Other = inputs, Buffer = buffers.

A second candidate is the start of backward, when the activations are largest: weights +
activations (the tree's saved bytes, exact against measurement) + the loss + the loss's backward
transients (blocks.CrossEntropy: the gradients of its log-softmax output and of the logits, less
the int64 targets freed by then) + inputs + buffers, plus, in a steady-state step (m, v already
exist, gradients were set to None), the moments and steps. It wins when the activations exceed
gradients + moments + temporaries; `phase` says which candidate is larger. MemTracker measures
step one, which has no moments before the AdamW step.

A third candidate walks backward (backward_moments): without an lm head (BERT, loss = sum of the
outputs) the peak lies later, among backward's transients: the FFN output matrix's gradients or
the attention probabilities' gradient in the last layer. From the live bytes at the start of
backward (forward_end, counting once the ids the embeddings keep) it takes each leaf's backward as
its block states it (Block.backward: what it allocates, what it frees), from the loss through the
head and one run of the last layer, and the peak is the largest moment (exact against MemTracker
for BERT at six sizes: tests/test_peak_backward.py; the start of backward was 1-7% low). An LM's
walk stops at once: the cross-entropy does not state its backward, its start already holds the
logits' gradients, and its candidates are unchanged.

Every term is a sum over the training tree's leaves (costmodel/tree.py) under the workload's
precision policy ("pure" is what torch.optim does on a model built in one dtype, and what
MemTracker measured); this module only sums and orders them.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .config import ConfigError, ModelConfig, Workload
from .evaluate import exact, values
from .leaf import Leaf
from .memory import PHASE_QUANTITIES, activation_bytes, forward_transient, inference_bytes, inference_phases
from .tree import CostModel, profile_for

OPTIMIZER_IMPLS = ("single", "foreach", "fused")


def training_model(cfg: ModelConfig, workload: Workload, optimizer_impl: str = "single",
                   device: str = "cpu") -> CostModel:
    """The training tree of a workload, with torch's AdamW variant and device."""
    if optimizer_impl not in OPTIMIZER_IMPLS:
        raise ConfigError(f"optimizer_impl must be one of {', '.join(OPTIMIZER_IMPLS)}.")
    profile = profile_for(cfg, workload, optimizer_impl=optimizer_impl, device=device, kernel_device=device)
    return CostModel(cfg, profile)


def training_peak_expressions(model: CostModel) -> dict[str, sp.Expr]:
    """The terms of the peak as expressions: sums over the training tree's leaves."""
    return {
        "weights": model.total("weight_bytes"),
        "gradients": model.total("gradient_bytes"),
        "adam_moments": model.total("optimizer_bytes"),
        "adam_steps": model.total("step_state_bytes"),
        "optimizer_temporaries": model.total("step_transient_bytes"),
        "loss": model.total("result_bytes"),
        "inputs": model.total("input_bytes"),
        "buffers": model.total("buffer_bytes"),
        "activations": activation_bytes(model),
        "loss_gradients": model.total("backward_transient_bytes"),
    }


def walked_leaves(model: CostModel) -> list[tuple[Leaf, Leaf | None]]:
    """The leaves backward runs first, in its order, each with the leaf before it in the forward
    (None: none walked): the head and loss, then one run of the last stack's layer, whose first
    leaf follows the layer's last (the layer before it is alike). The layer only where the stack's
    layers are all of one kind and its last leaf comes right before the head (no final norm)."""
    leaves = [leaf for leaf in model.leaves if leaf.part != "optimizer"]
    head = [leaf for leaf in leaves if leaf.part in ("head", "loss")]
    last = head[0].stack if head else None
    layer = [leaf for leaf in leaves if leaf.in_layer and leaf.stack == last]
    if not layer or any(leaf.kind is not None for leaf in layer) or leaves[-len(head) - 1] is not layer[-1]:
        layer = []
    forward = layer + head
    before = {id(leaf): forward[i - 1] if i else (layer[-1] if layer else None) for i, leaf in enumerate(forward)}
    return [(leaf, before[id(leaf)]) for leaf in reversed(forward)]


def backward_moments(model: CostModel, start: sp.Expr) -> list[sp.Expr]:
    """Live bytes at each moment of backward from `start` (the live bytes when it begins), through
    the leaves that state their backward (Block.backward), in walked_leaves' order, until the
    first that does not: each step's allocations (its gradients, and its weight gradients in the
    precision policy's bytes) make a moment, then its frees; the gradient a leaf receives goes after
    its first step, the output a leaf kept for the next goes after that one's step that keeps it
    (Backward.input_step), and a residual add's gradient waits on the skip until the branch's
    reaches the sublayer's input."""
    moments, live = [start], start
    flowing, owned, held = sp.Integer(0), True, []
    walked = walked_leaves(model)
    for i, (leaf, before) in enumerate(walked):
        back = leaf.block.backward()
        if back is None:
            break
        if back.skip:
            held.append((flowing, back.skip))
            owned = False
            continue
        kept = before.block.backward() if before is not None else None
        for k, step in enumerate(back.steps):
            live += step.allocated + leaf.per_param.gradients * step.params
            moments.append(live)
            live -= step.freed + (flowing if k == 0 and owned else 0)
            live -= kept.output_kept if kept is not None and k == back.input_step % len(back.steps) else 0
        flowing, owned = back.grad_input, True
        following = walked[i + 1][0] if i + 1 < len(walked) else None
        if held and (following is None or following.sublayer != leaf.sublayer):
            skipped, merged = held.pop()
            live += merged
            moments.append(live)
            live -= skipped + flowing
            flowing = merged
    return moments


def training_peak_bytes(cfg: ModelConfig, workload: Workload, optimizer_impl: str = "single",
                        device: str = "cpu") -> dict[str, int | str]:
    """Every term as an exact integer, the candidate peaks and the larger one ("total").

    optimizer_step = weights + gradients + adam_moments + adam_steps + optimizer_temporaries
                     + loss + inputs + buffers      (where MemTracker finds the peak)
    forward_end    = weights + activations + loss + loss_gradients + inputs + buffers
                     (the start of backward in step one, as MemTracker measures it: no moments
                     yet; loss_gradients already less the freed targets)
    backward       = the largest moment of the walk through backward (backward_moments), from
                     forward_end less the inputs the embeddings keep (counted in both terms)
    total          = max(optimizer_step, forward_end, backward), "phase" names the larger
    steady_forward_end = forward_end + adam_moments + adam_steps   (any later step)
    steady_total   = max(optimizer_step, steady_forward_end, backward + adam_moments + adam_steps)
    """
    if cfg.architecture == "encoder-decoder":
        raise ConfigError(f"model {cfg.name!r}: the training peak of encoder-decoders is not modelled.")
    subs = values(cfg, workload)
    model = training_model(cfg, workload, optimizer_impl, device)
    terms = {k: exact(v, subs) for k, v in training_peak_expressions(model).items()}
    outside = terms["weights"] + terms["inputs"] + terms["buffers"]
    state = terms["adam_moments"] + terms["adam_steps"]
    step = outside + state + terms["gradients"] + terms["optimizer_temporaries"] + terms["loss"]
    forward = outside + terms["activations"] + terms["loss"] + terms["loss_gradients"]
    start = forward - exact(model.total("saved_input_bytes"), subs)
    walk = max(exact(moment, subs) for moment in backward_moments(model, start))
    candidates = {"optimizer_step": step, "forward_end": forward, "backward": walk}
    phase = max(candidates, key=candidates.get)  # the first of equals: the optimizer step's, then forward_end's
    return {**terms, **candidates, "total": candidates[phase], "phase": phase,
            "steady_forward_end": forward + state, "steady_total": max(step, forward + state, walk + state)}


def parameter_tensors(cfg: ModelConfig, workload: Workload) -> list[int]:
    """Element counts of every parameter tensor in the order AdamW visits them (the tree's
    registration order, the layers unrolled)."""
    model = training_model(cfg, workload)
    subs = values(cfg, workload)
    sizes: list[int] = []
    for run in model.parameter_runs(model.leaves):
        sizes += [exact(t, subs) for t in run.tensors] * exact(run.times, subs)
    return sizes


def inference_peak_bytes(cfg: ModelConfig, workload: Workload) -> dict[str, Any]:
    """The memory of inference (costmodel.memory.inference_bytes), by term, for the larger of its
    phases: the prefill (a plain forward: all n positions' logits and ids, the prompt's cache) or
    the last decode step (one token's, the cache of n + T - 1). "phase" names it. "transient" is
    the largest no-grad transient of one block (an eager softmax's n x n scores), never live with
    the logits: the total counts the larger of the two. A lower bound: a layer's other tensors
    are not counted (tests/test_inference_peak.py measures the gap)."""
    subs = values(cfg, workload)
    profile = profile_for(cfg, workload)
    phases = {name: exact(expr, subs) for name, expr in inference_phases(cfg, profile).items()}
    phase = max(phases, key=phases.get)
    model = CostModel(cfg, profile, phase=phase)
    terms = {name: exact(model.total(q), subs) for name, q in zip(
        ("weights", "buffers", "inputs", "logits", "kv_cache"), PHASE_QUANTITIES)}
    terms["transient"] = exact(forward_transient(model), subs)
    assert sum(terms.values()) - min(terms["logits"], terms["transient"]) == phases[phase] \
        == exact(inference_bytes(cfg, profile), subs)
    return {**terms, "total": phases[phase], "phase": phase}
