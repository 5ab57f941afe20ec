"""The cost tree cut into the parts a pipeline stage holds, each part's per-rank quantities as expressions.

The training tree (costmodel/tree.py) is cut into parts, each placed on pipeline stages:
  embedding  the first stage           shared  every stage (RoPE tables, ALiBi slopes)
  layer      each stage, its layers    tail    the last stage (the final norm)
  head       the last stage (the output projection and the loss)
Each leaf's per-rank cost is its block's cost with tensor (and sequence) parallelism's
substitution (costmodel/layout/split.py); a part's quantities are sums of those, as expressions in
the model and workload symbols and tp, dp (compiled once per structure, costmodel/compiled.py),
beside the structure the rank's sums need (each part's collectives per micro-batch). Stage is one
pipeline rank: which parts and layers it holds. costmodel/layout/rank.py places the parts on the
stages and sums them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .. import compiled
from ..config import ModelConfig, Workload
from ..model_flops import leaf_model_flops
from ..quantized_matmul import w8a8_leaf, w8a8_run_bytes
from .fp8 import RECIPES, fp8_blocks, fp8_weights
from .frameworks import FRAMEWORKS, layout_vocabulary
from .spec import Layout

PARTS = ("embedding", "shared", "layer", "tail", "head")
#: Latent attention's all-gathers under sequence parallelism, each one call's bytes
#: (LatentAttention.sequence_parallel_gathers): the query latent, the key/value latent, the RoPE key.
LATENT_GATHERS = ("latent_gather_q", "latent_gather_kv", "latent_gather_rope")
PART_QUANTITIES = ("params", "padded", "tensors", "gradient_params", "saved", "rebuilt", "inputs",
                   "buffers", "norm_params", "flops", "kv_cache", "latent_gradient", "expert_params",
                   "expert_saved", "routed_slots", "fp8_params", *LATENT_GATHERS)


def _options(layout: Layout) -> dict[str, Any]:
    """What the per-part expressions depend on besides the symbols (their cache key)."""
    return {"framework": layout.framework, "sp": layout.sp, "loss_parallel": uses_loss_parallel(layout),
            "device": layout.device, "vocabulary": layout_vocabulary(layout),
            "fp8_activations": fp8_activations(layout), "ep": layout.ep, "folded": layout.folded,
            **({"etp": layout.etp} if layout.expert_split == "etp" else {}),
            **({"grad_reduce": layout.grad_reduce_dtype} if layout.grad_reduce_dtype else {}),
            **({"pure_precision": True} if layout.pure_precision else {}),
            **({"unfused_loss": True} if layout.unfused_loss else {}),
            **({"fp32_norm_input": True} if layout.fp32_norm_input else {})}


def layout_loss(layout: Layout) -> str | None:
    """The loss code a layout's ranks run (Profile.framework_loss): the framework's, or
    "vocab_parallel_unfused" where the layout says the model's code calls Megatron's unfused
    vocabulary-parallel cross-entropy whatever its family (Layout.unfused_loss; blocks/head.py)."""
    return "vocab_parallel_unfused" if layout.unfused_loss else FRAMEWORKS[layout.framework].loss


def fp8_activations(layout: Layout) -> bool:
    """Whether the layout's FP8 recipe keeps activations in low precision (layout/fp8.py)."""
    return layout.fp8 is not None and RECIPES[layout.fp8].caches_activations


def uses_loss_parallel(layout: Layout) -> bool:
    framework = FRAMEWORKS[layout.framework]
    return framework.vocabulary_parallel_loss or (layout.framework == "fsdp2" and layout.loss_parallel)


def part_of(tree: Any) -> dict[int, str]:
    """Each leaf's part (by its index in the tree): a stack's own leaves before its layers are
    shared by every stage, those after them (the final norm) go with the head."""
    seen_layer: set[str] = set()
    parts = {}
    for i, leaf in enumerate(tree.leaves):
        if leaf.part == "layer":
            seen_layer.add(leaf.stack)
            parts[i] = "layer"
        elif leaf.part == "stack":
            parts[i] = "tail" if leaf.stack in seen_layer else "shared"
        elif leaf.part in ("head", "loss"):
            parts[i] = "head"
        elif leaf.part == "embedding":
            parts[i] = "embedding"
    return parts


def part_expressions(cfg: ModelConfig, workload: Workload, layout: Layout, phase: str = "train"
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every part's per-rank quantities as expressions (one layer for the layer part, per stack),
    and the structure beside them: each part's collectives per micro-batch. phase "decode": the
    cost tree of one decode step (serving), whose work is a forward."""
    import sympy as sp

    from .. import blocks as B
    from ..memory import largest  # sympy's module: imported where the expressions are built (a warm plan imports none)
    from .. import symbols as S
    from ..precision import inference_precision
    from ..tree import profile_for, shared_model
    from .split import column_inputs, local, rank_leaf, row_outputs, substitution

    framework = FRAMEWORKS[layout.framework]
    FP8_BLOCKS = fp8_blocks()
    precision = framework.precision_for(workload.dtype, layout.grad_reduce_dtype, layout.pure_precision)
    if phase != "train":  # a serving rank reads the --dtype copy (fsdp2's fp32 shards are training state)
        precision = inference_precision(precision)
    profile = profile_for(cfg, workload, precision=precision, device=layout.device,
                          optimizer_impl="foreach" if layout.device == "cuda" else "single",
                          fp8_activations=fp8_activations(layout) and phase == "train",
                          framework_loss=layout_loss(layout), routed_experts=True, expert_parallel=layout.ep,
                          fp32_norm_input=layout.fp32_norm_input)
    tree = shared_model(cfg, profile, phase)  # one tree for every layout option and shape it serves
    parts = part_of(tree)
    loss_parallel = uses_loss_parallel(layout)
    exprs: dict[str, Any] = {}
    structure: dict[str, Any] = {"stacks": [], "layers": {}, "counts": {}, "work": []}

    def add(key: str, value: Any) -> None:
        exprs[key] = exprs.get(key, sp.Integer(0)) + value

    transients: set[Any] = set()

    for i, whole in enumerate(tree.leaves):
        part = parts.get(i)
        if part is None:
            continue
        leaf = rank_leaf(whole, layout.sp)  # the rank's own (latent attention's latents under SP)
        key = part
        if part == "layer":  # one key per stack and kind of layer (windowed/full, dense/experts)
            key = f"layer.{leaf.stack}" + (f".{leaf.kind}" if leaf.kind else "")
            structure["layers"][key] = [leaf.stack, leaf.kind]
            if leaf.stack not in structure["stacks"]:
                structure["stacks"].append(leaf.stack)
        # a layer part is one layer; the head part holds its leaves' every run and weight copy
        # (a multi-token-prediction depth runs mtp_layers times, its weights held once or each time)
        runs, copies = (1, 1) if part == "layer" else (int(whole.count), int(whole.copies))
        encoder = leaf.stack == "encoder" and cfg.architecture == "encoder-decoder"
        subs = substitution(leaf.block, sp_on=layout.sp, vocabulary=layout_vocabulary(layout),
                            loss_parallel=loss_parallel, encoder=encoder, expert_split=layout.expert_split,
                            etp=layout.expert_tp)
        cost = leaf.cost
        for tensor in cost.tensors:
            rows, cols = local(tensor.rows, subs), local(tensor.cols, subs)
            add(f"{key}.params", copies * rows * cols)
            add(f"{key}.padded", copies * sp.ceiling(rows / S.dp) * cols)
            add(f"{key}.tensors", copies)
            full = isinstance(leaf.block, B.TokenEmbedding) and framework.embedding_gradient_full
            add(f"{key}.gradient_params", tensor.elements if full else copies * rows * cols)
            # the norms' gradients, and under parallel folding the router's, a latent MoE's
            # projections' and a shared expert's gate's (Megatron-Core sets their weights'
            # `sequence_parallel`: moe/router.py line 85 and extensions/transformer_engine.py line
            # 1316 at d98e8a64dd, moe/shared_experts.py at 0065cf8a), all-reduced over tp
            if isinstance(leaf.block, B.Norm) or (layout.expert_split and isinstance(
                    leaf.block, (B.Router, B.LatentProjection, B.SharedExpertGate))):
                add(f"{key}.norm_params", copies * rows * cols)
        saved = runs * local(cost.saved_bytes, subs)
        if layout.sp and isinstance(leaf.block, B.Norm) and not framework.sp_regathers_input \
                and not leaf.block.recomputed:
            # DTensor keeps the all-gathered input of the column-parallel layers this norm feeds
            # (FINDINGS 10.3): its output term is the whole sequence's.
            tokens = leaf.block.tokens
            saved += S.e * tokens * S.d - local(S.e * tokens * S.d, subs)
        if layout.expert_split == "etp" and isinstance(leaf.block, B.Experts):
            # the experts' tokens are the etp ranks' gathered slots (split.substitution), but what stays
            # on the rank's own slots (Experts.dispatcher_saved_bytes) is one rank's: 1 / etp of them
            saved -= runs * local(leaf.block.dispatcher_saved_bytes(), subs) * (1 - sp.Rational(1, layout.expert_tp))
        add(f"{key}.{'rebuilt' if leaf.checkpointed else 'saved'}", saved)
        add(f"{key}.inputs", runs * local(cost.input_bytes, subs))
        add(f"{key}.buffers", copies * local(cost.buffer_bytes, subs))
        add(f"{key}.flops", runs * local(cost.flops_matmul + cost.flops_matmul_backward, subs))
        add(f"{key}.kv_cache", runs * local(cost.kv_cache_bytes, subs))
        if cost.forward_transient_bytes != 0:  # one run's, the largest taken below (memory.forward_transient)
            transients.add(local(cost.forward_transient_bytes, subs))
        if isinstance(leaf.block, B.LatentAttention):
            add(f"{key}.latent_gradient", runs * local(leaf.block.latent_gradient_bytes(), subs))
            for name, payload in zip(LATENT_GATHERS, leaf.block.sequence_parallel_gathers()):
                add(f"{key}.{name}", runs * local(payload, subs))
            if layout.sp:  # its duplicated weights' gradients, all-reduced over tp with the norms'
                add(f"{key}.norm_params", copies * local(leaf.block.replicated_params(), subs))
        if isinstance(leaf.block, FP8_BLOCKS):  # the linear layers FP8 recipes convert (layout/fp8.py)
            add(f"{key}.fp8_params", copies * sum(local(rows, subs) * local(cols, subs)
                                                  for rows, cols in fp8_weights(leaf.block, cost)))
        if isinstance(leaf.block, B.Experts):  # what expert parallelism divides (layout/experts.py)
            add(f"{key}.expert_params", copies * sum(local(t.rows, subs) * local(t.cols, subs) for t in cost.tensors))
            add(f"{key}.expert_saved", 0 if leaf.checkpointed else saved)
            # the slots the rank itself dispatches: under expert tensor parallelism its SP tokens', the
            # experts' tokens (etp ranks' all-gathered) over etp (layout/experts.py)
            add(f"{key}.routed_slots", runs * local(leaf.block.tokens * S.k, subs)
                / (layout.expert_tp if layout.expert_split == "etp" else 1))
        if workload.weight_dtype is not None:  # quantized weights (inference): the rank's shards as stored
            # (rank.weight_bytes sums these alone); a leaf the format leaves alone (mxfp4 quantizes
            # the routed experts only) in the policy's bytes a weight (Leaf.weight_part).
            add(f"{key}.weight_bytes", local(leaf.weight_part("weight_bytes"), subs))
            if isinstance(leaf.block, B.Experts):  # what expert parallelism divides of them
                add(f"{key}.expert_weight_bytes", local(leaf.weight_part("weight_bytes"), subs))
            if leaf.weight_format is not None:
                row_parallel_widths(leaf, subs, exprs)
        # A training micro-batch's work (costmodel/roofline_training.py divides it by the rates): the
        # forward, what recomputation reruns of it (Leaf.rerun), the backward; a quantized leaf's
        # weights read as stored (Leaf.matmul_bytes_as_stored).
        rerun, backwards = leaf.rerun, int(phase == "train")
        again = (lambda quantity: getattr(rerun, quantity)) if rerun is not None else (lambda quantity: 0)
        work = {"f_mm": cost.flops_matmul + again("flops_matmul") + backwards * cost.flops_matmul_backward,
                "b_mm": leaf.matmul_bytes_as_stored() + again("bytes_matmul")
                + backwards * cost.bytes_matmul_backward,
                "f_o": cost.flops_other + again("flops_other") + backwards * cost.flops_other_backward,
                "b_o": cost.bytes_other + again("bytes_other") + backwards * cost.bytes_other_backward}
        index = len(structure["work"])
        w8a8 = w8a8_leaf(leaf, True)  # fp8 weights: W8A8 where the hardware runs it (quantized_matmul.runs_w8a8)
        structure["work"].append({"key": key, "path": leaf.path, "active": cost.is_active(),
            "rerun": rerun is not None and rerun.is_active() and phase == "train",
            "experts": isinstance(leaf.block, B.Experts), "fp8": isinstance(leaf.block, FP8_BLOCKS),
            "head": isinstance(leaf.block, B.LMHead),
            "attention_core": isinstance(leaf.block, B.AttentionCore), "w8a8": w8a8})
        if w8a8:  # its inputs read in one byte, after their quantization pass
            work["w8a8_b_mm"], work["w8a8_b_o"] = w8a8_run_bytes(leaf, S.e)
        for name, value in work.items():
            exprs[f"work.{index}.{name}"] = runs * local(value, subs)
        # Model FLOPs by convention (costmodel/model_flops.py: no recomputation, not even flash's
        # of Q K^T) for MFU; what the kernels execute for HFU.
        # (the whole model's: `whole`, not the rank's leaf)
        add("model_flops", whole.count * leaf_model_flops(whole, "dense"))
        add("model_flops_causal", whole.count * leaf_model_flops(whole, "causal"))
        add("executed_flops", whole.count * (whole.cost.flops_matmul + whole.cost.flops_matmul_backward))
        if isinstance(leaf.block, B.AttentionCore):  # context parallelism: n / cp queries, all n keys
            add("attention_flops", leaf.count * leaf_model_flops(leaf, "dense"))
            add("attention_flops_causal", leaf.count * leaf_model_flops(leaf, "causal"))
            add("attention_executed_flops", leaf.count * (cost.flops_matmul + cost.flops_matmul_backward))
        if whole.rerun is not None:
            add("recomputed_flops", whole.count * whole.rerun.flops_matmul)
        counts = structure["counts"].setdefault(key, {"column_inputs": 0, "row_outputs": 0, "sublayers": 0,
                                                      "latents": 0, "attentions": 0, "mamba_mixers": 0})
        counts["column_inputs"] += runs * column_inputs(leaf.block, framework.column_layers, cfg.gated, layout.expert_split)
        counts["row_outputs"] += runs * row_outputs(leaf.block, layout.expert_split)
        # the column-parallel regions whose input sequence parallelism all-gathers (a Mamba-2
        # mixer's in_proj: MambaMixer assumes its input "already partitioned along the sequence")
        counts["sublayers"] += runs * int(isinstance(leaf.block, (B.QKVProjection, B.FeedForward, B.Mamba2Mixer)))
        counts["latents"] += runs * int(isinstance(leaf.block, B.LatentAttention))
        # a layer that attends (one however many leaves its attention core has: context
        # parallelism's key/value exchange), and its Mamba-2 mixers (their all-to-alls)
        counts["attentions"] = max(counts["attentions"], runs * int(isinstance(leaf.block, B.AttentionCore)))
        counts["mamba_mixers"] += runs * int(isinstance(leaf.block, B.Mamba2Mixer))
    for key in list(structure["counts"]):
        for quantity in PART_QUANTITIES:
            exprs.setdefault(f"{key}.{quantity}", sp.Integer(0))
    per_param = profile.param_bytes
    exprs["bytes.weights"], exprs["bytes.gradients"] = per_param.weights, per_param.gradients
    exprs["bytes.optimizer"] = per_param.optimizer
    exprs["bytes.moment"] = per_param.moment
    for key in ("recomputed_flops", "attention_flops", "attention_flops_causal", "attention_executed_flops"):
        exprs.setdefault(key, sp.Integer(0))  # none: a model without attention (a pure Mamba-2 stack)
    exprs["step_traffic"] = per_param.step_traffic  # bytes a fused optimizer moves per parameter
    tokens = S.b * (1 if phase == "decode" else S.n)
    exprs["boundary"] = S.e * tokens * S.d  # one sublayer's input or output, every token
    # the positions whose logits the phase returns: generate's prefill keeps the last ones only
    kept = S.b * profile.logits_to_keep if phase == "prefill" and profile.logits_to_keep else tokens
    exprs["logits"] = S.e * kept * S.tp * sp.ceiling(S.V / S.tp)
    # the largest no-grad transient of one block's run (an eager softmax's scores, the FFN's hidden
    # tensors: Cost.forward_transient_bytes), on every stage alike
    exprs["forward_transient"] = largest(transients)
    exprs["loss_reduction"] = 3 * 4 * S.b * S.n  # fp32 max, sum of exponentials, target logit
    exprs["embedding_table"] = sp.ceiling(S.V / S.tp) * S.d
    structure["tied"] = bool(cfg.tie_embeddings and cfg.head == "lm")
    structure["step_counters"] = framework.step_counters and layout.device == "cpu"
    return exprs, structure


def row_parallel_widths(leaf: Any, subs: dict, exprs: dict[str, Any]) -> None:
    """The input widths K of a quantized leaf's matrices that tensor parallelism splits (row-parallel:
    the attention's and the FFN's output projections), as `row_parallel_width.<K>` expressions: a
    format with groups along K needs whole groups on each rank (ParallelEstimate checks them)."""
    from .split import split_inputs

    for cols in split_inputs(leaf.cost.matrices, subs):
        exprs[f"row_parallel_width.{cols}"] = cols


#: part_evaluator's memo, by the config object's id (with the config, so that the id stays its
#: own): hashing a whole ModelConfig, a hundred fields, for each of a plan's thousands of
#: estimates cost more than the lookup saved.
_EVALUATORS: dict[tuple, tuple[ModelConfig, tuple[Any, dict[str, Any]]]] = {}
_DIMENSIONS: dict[int, tuple[ModelConfig, dict[str, int]]] = {}


def part_evaluator(cfg: ModelConfig, workload: Workload, layout: Layout, phase: str) -> tuple[Any, dict[str, Any]]:
    """The compiled per-part expressions of a structure (memoised in this process: a plan asks
    for the same few structures thousands of times)."""
    from ..decode_codes import tree_options

    options = _options(layout)
    shaping = {**workload.options(), **tree_options(cfg, workload)}  # the decode code's cache too
    memo = (id(cfg), tuple(shaping.items()), tuple(options.items()), phase)
    entry = _EVALUATORS.get(memo)
    if entry is None or entry[0] is not cfg:
        if len(_EVALUATORS) >= 4096:  # a process that builds configs by the thousand: keep the memo bounded
            _EVALUATORS.clear()
        key = {"model": cfg.structure(), "workload": shaping, "layout": options,
               "layers": cfg.n_layers, "phase": phase}
        entry = _EVALUATORS[memo] = (cfg, compiled.cached("layout", key,
                                                          lambda: part_expressions(cfg, workload, layout, phase)))
    return entry[1]


def model_dimensions(cfg: ModelConfig) -> dict[str, int]:
    """cfg.dimensions(), once per config object (a built config does not change; a plan builds
    thousands of estimates of one). Shared: the caller copies it before adding to it."""
    entry = _DIMENSIONS.get(id(cfg))
    if entry is None or entry[0] is not cfg:
        if len(_DIMENSIONS) >= 256:  # configs built by the thousand (tests, sweeps): keep the memo small
            _DIMENSIONS.clear()
        entry = _DIMENSIONS[id(cfg)] = (cfg, cfg.dimensions())
    return entry[1]


class PartNumbers(dict):
    """The per-part quantities at one rank's values (evaluate_parts), and `sums`: the sums over a
    pipeline rank's parts ParallelEstimate.on_stage took of them, by (quantity, the rank's
    layers and edges), which every layout sharing these values shares. Read-only by convention,
    as the lru_cache that hands one instance to many estimates already requires."""

    __slots__ = ("sums", "seconds")

    def __init__(self, numbers: dict[str, Any]):
        super().__init__(numbers)
        self.sums: dict[tuple, int] = {}
        self.seconds: dict[tuple, Any] = {}  # the roofline's part seconds at these values (layout/roofline_parts.py)


@lru_cache(maxsize=4096)
def evaluate_parts(evaluate: Any, values: tuple[tuple[str, int], ...]) -> PartNumbers:
    """The compiled expressions at these values (a plan evaluates each (structure, tp, dp, batch)
    once for all its ZeRO stages, schedules and pipeline sizes)."""
    return PartNumbers(evaluate(dict(values)))


@dataclass(frozen=True)
class Stage:
    """One pipeline rank: its (virtual) stages' layers, the micro-batches each holds at the
    rank's peak, whether it runs the first and the last stage, and each (virtual) stage's layers
    by kind ((part key, layers), ...: a stack's layers, or its windowed and full, dense and
    expert layers)."""

    rank: int
    layers: tuple[int, ...]
    in_flight: tuple[int, ...]
    first: bool
    last: bool
    kinds: tuple[tuple[tuple[str, int], ...], ...] = ()
