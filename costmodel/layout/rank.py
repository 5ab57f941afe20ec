"""Per-rank memory and communication of a layout: the cost tree's leaves, split, placed and summed.

The training tree (costmodel/tree.py) is cut into parts, each placed on pipeline stages:
  embedding  the first stage           shared  every stage (RoPE tables, ALiBi slopes)
  layer      each stage, its layers    tail    the last stage (the final norm)
  head       the last stage (the output projection and the loss)
Each leaf's per-rank cost is its block's cost with tensor (and sequence) parallelism's
substitution (costmodel/layout/split.py); a part's quantities are sums of those, as expressions in
the model and workload symbols and tp, dp (compiled once per structure, costmodel/compiled.py).
This module then places the parts on the stages, multiplies by the micro-batches a stage holds
(costmodel/layout/spec.py), shards the parameter state over dp as the framework does
(costmodel/layout/frameworks.py), and counts each collective's payload. Formulas stay in the
blocks: here are only sums, counts of collectives and the frameworks' sharding rules.

A collective's payload is its full buffer: the output of an all-gather, the input of a
reduce-scatter, the buffer of an all-reduce, the tensor of a send or receive. Wire bytes apply
the ring algorithm's factors: 2(w - 1)/w for an all-reduce, (w - 1)/w for an all-gather or a
reduce-scatter over w ranks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from .. import compiled, offload
from ..config import ConfigError, ModelConfig, Workload
from ..model_flops import leaf_model_flops
from .experts import expert_load
from .frameworks import FRAMEWORKS, Framework
from .spec import Layout

PARTS = ("embedding", "shared", "layer", "tail", "head")
PART_QUANTITIES = ("params", "padded", "tensors", "gradient_params", "saved", "rebuilt", "inputs",
                   "buffers", "norm_params", "flops", "kv_cache", "latent_gradient", "expert_params",
                   "expert_saved", "routed_slots", "fp8_params")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def _options(layout: Layout) -> dict[str, Any]:
    """What the per-part expressions depend on besides the symbols (their cache key)."""
    framework = FRAMEWORKS[layout.framework]
    return {"framework": layout.framework, "sp": layout.sp, "loss_parallel": uses_loss_parallel(layout),
            "device": layout.device, "vocabulary": framework.vocabulary}


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
    from .. import symbols as S
    from ..tree import CostModel, profile_for
    from .split import column_inputs, local, row_outputs, substitution

    framework = FRAMEWORKS[layout.framework]
    FP8_BLOCKS = (B.QKVProjection, B.AttentionOutput, B.FeedForward, B.Experts)
    profile = profile_for(cfg, workload, precision=framework.precision_for(workload.dtype), device=layout.device,
                          optimizer_impl="foreach" if layout.device == "cuda" else "single")
    tree = CostModel(cfg, profile, phase=phase)
    parts = part_of(tree)
    loss_parallel = uses_loss_parallel(layout)
    exprs: dict[str, Any] = {}
    structure: dict[str, Any] = {"stacks": [], "layers": {}, "counts": {}, "work": []}

    def add(key: str, value: Any) -> None:
        exprs[key] = exprs.get(key, sp.Integer(0)) + value

    for i, leaf in enumerate(tree.leaves):
        part = parts.get(i)
        if part is None:
            continue
        key = part
        if part == "layer":  # one key per stack and kind of layer (windowed/full, dense/experts)
            key = f"layer.{leaf.stack}" + (f".{leaf.kind}" if leaf.kind else "")
            structure["layers"][key] = [leaf.stack, leaf.kind]
            if leaf.stack not in structure["stacks"]:
                structure["stacks"].append(leaf.stack)
        encoder = leaf.stack == "encoder" and cfg.architecture == "encoder-decoder"
        subs = substitution(leaf.block, sp_on=layout.sp, vocabulary=framework.vocabulary,
                            loss_parallel=loss_parallel, encoder=encoder)
        cost = leaf.cost
        for tensor in cost.tensors:
            rows, cols = local(tensor.rows, subs), local(tensor.cols, subs)
            add(f"{key}.params", rows * cols)
            add(f"{key}.padded", sp.ceiling(rows / S.dp) * cols)
            add(f"{key}.tensors", 1)
            full = isinstance(leaf.block, B.TokenEmbedding) and framework.embedding_gradient_full
            add(f"{key}.gradient_params", tensor.elements if full else rows * cols)
            if isinstance(leaf.block, B.Norm):
                add(f"{key}.norm_params", rows * cols)
        saved = local(cost.saved_bytes, subs)
        if layout.sp and isinstance(leaf.block, B.Norm) and not framework.sp_regathers_input:
            # DTensor keeps the all-gathered input of the column-parallel layers this norm feeds
            # (FINDINGS 10.3): its output term is the whole sequence's.
            tokens = leaf.block.tokens
            saved += S.e * tokens * S.d - local(S.e * tokens * S.d, subs)
        add(f"{key}.{'rebuilt' if leaf.checkpointed else 'saved'}", saved)
        add(f"{key}.inputs", local(cost.input_bytes, subs))
        add(f"{key}.buffers", local(cost.buffer_bytes, subs))
        add(f"{key}.flops", local(cost.flops_matmul + cost.flops_matmul_backward, subs))
        add(f"{key}.kv_cache", local(cost.kv_cache_bytes, subs))
        if isinstance(leaf.block, B.LatentAttention):
            add(f"{key}.latent_gradient", local(leaf.block.latent_gradient_bytes(), subs))
        if isinstance(leaf.block, FP8_BLOCKS):  # the linear layers FP8 recipes convert (layout/fp8.py)
            add(f"{key}.fp8_params", sum(local(t.rows, subs) * local(t.cols, subs) for t in cost.tensors))
        if isinstance(leaf.block, B.Experts):  # what expert parallelism divides (layout/experts.py)
            add(f"{key}.expert_params", sum(local(t.rows, subs) * local(t.cols, subs) for t in cost.tensors))
            add(f"{key}.expert_saved", 0 if leaf.checkpointed else saved)
            add(f"{key}.routed_slots", local(leaf.block.tokens * S.k, subs))
        # A training micro-batch's work (costmodel/roofline.py divides it by the rates): the
        # forward (twice when recomputation reruns it), the backward.
        forwards, backwards = (2 if leaf.recomputed else 1), int(phase == "train")
        work = {"f_mm": forwards * cost.flops_matmul + backwards * cost.flops_matmul_backward,
                "b_mm": forwards * cost.bytes_matmul + backwards * cost.bytes_matmul_backward,
                "f_o": forwards * cost.flops_other + backwards * cost.flops_other_backward,
                "b_o": forwards * cost.bytes_other + backwards * cost.bytes_other_backward}
        index = len(structure["work"])
        structure["work"].append({"key": key, "active": cost.is_active(),
            "experts": isinstance(leaf.block, B.Experts), "fp8": isinstance(leaf.block, FP8_BLOCKS),
            "attention_core": isinstance(leaf.block, B.AttentionCore)})
        for name, value in work.items():
            exprs[f"work.{index}.{name}"] = local(value, subs)
        # Model FLOPs by convention (costmodel/model_flops.py: no recomputation, not even flash's
        # of Q K^T) for MFU; what the kernels execute for HFU.
        add("model_flops", leaf.count * leaf_model_flops(leaf, "dense"))
        add("model_flops_causal", leaf.count * leaf_model_flops(leaf, "causal"))
        add("executed_flops", leaf.count * (cost.flops_matmul + cost.flops_matmul_backward))
        if isinstance(leaf.block, B.AttentionCore):  # context parallelism: n / cp queries, all n keys
            add("attention_flops", leaf.count * leaf_model_flops(leaf, "dense"))
            add("attention_flops_causal", leaf.count * leaf_model_flops(leaf, "causal"))
            add("attention_executed_flops", leaf.count * (cost.flops_matmul + cost.flops_matmul_backward))
        if leaf.recomputed:
            add("recomputed_flops", leaf.count * cost.flops_matmul)
        counts = structure["counts"].setdefault(key, {"column_inputs": 0, "row_outputs": 0, "sublayers": 0,
                                                      "latents": 0})
        counts["column_inputs"] += column_inputs(leaf.block, framework.column_layers, cfg.gated)
        counts["row_outputs"] += row_outputs(leaf.block)
        counts["sublayers"] += int(isinstance(leaf.block, (B.QKVProjection, B.FeedForward)))
        counts["latents"] += int(isinstance(leaf.block, B.LatentAttention))
    for key in list(structure["counts"]):
        for quantity in PART_QUANTITIES:
            exprs.setdefault(f"{key}.{quantity}", sp.Integer(0))
    per_param = profile.param_bytes
    exprs["bytes.weights"], exprs["bytes.gradients"] = per_param.weights, per_param.gradients
    exprs["bytes.optimizer"] = per_param.optimizer
    exprs["bytes.moment"] = per_param.moment
    exprs.setdefault("recomputed_flops", sp.Integer(0))
    exprs.setdefault("attention_flops", sp.Integer(0))
    exprs["step_traffic"] = per_param.step_traffic  # bytes a fused optimizer moves per parameter
    tokens = S.b * (1 if phase == "decode" else S.n)
    exprs["boundary"] = S.e * tokens * S.d  # one sublayer's input or output, every token
    exprs["logits"] = S.e * tokens * S.tp * sp.ceiling(S.V / S.tp)
    exprs["loss_reduction"] = 3 * 4 * S.b * S.n  # fp32 max, sum of exponentials, target logit
    exprs["embedding_table"] = sp.ceiling(S.V / S.tp) * S.d
    structure["tied"] = bool(cfg.tie_embeddings and cfg.head == "lm")
    structure["step_counters"] = framework.step_counters and layout.device == "cpu"
    return exprs, structure


_EVALUATORS: dict[tuple, tuple[Any, dict[str, Any]]] = {}


def _evaluator(cfg: ModelConfig, workload: Workload, layout: Layout, phase: str) -> tuple[Any, dict[str, Any]]:
    """The compiled per-part expressions of a structure (memoised in this process: a plan asks
    for the same few structures thousands of times)."""
    options = _options(layout)
    memo = (cfg, tuple(workload.options().items()), tuple(options.items()), phase)
    if memo not in _EVALUATORS:
        key = {"model": cfg.structure(), "workload": workload.options(), "layout": options,
               "layers": cfg.n_layers, "phase": phase}
        _EVALUATORS[memo] = compiled.cached("layout", key, lambda: part_expressions(cfg, workload, layout, phase))
    return _EVALUATORS[memo]


@lru_cache(maxsize=4096)
def _evaluate(evaluate: Any, values: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """The compiled expressions at these values (a plan evaluates each (structure, tp, dp, batch)
    once for all its ZeRO stages, schedules and pipeline sizes)."""
    return evaluate(dict(values))


def _ring(kind: str, world: int) -> float:
    """Wire bytes per payload byte: 2(w - 1)/w for an all-reduce, (w - 1)/w for an all-gather,
    a reduce-scatter or an all-to-all (a rank's own share stays)."""
    if world <= 1:
        return 0.0
    return 2 * (world - 1) / world if kind == "all_reduce" else (world - 1) / world


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


@lru_cache(maxsize=4096)
def _layer_kinds(cfg: ModelConfig, layer_keys: tuple, stack: str, start: int,
                 layers: int) -> tuple[tuple[str, int], ...]:
    """How many of layers start .. start + layers - 1 of a stack are of each part key; the same
    stages recur across the layouts `plan` enumerates, so they are counted once."""
    keys = {(s, kind): key for key, (s, kind) in layer_keys}
    counts: dict[str, int] = {}
    for index in range(start, start + layers):
        key = keys[(stack, cfg.layer_kind_at(stack, index))]
        counts[key] = counts.get(key, 0) + 1
    return tuple(counts.items())


@lru_cache(maxsize=4096)
def _runs(kinds: tuple[tuple[tuple[str, int], ...], ...]) -> tuple[tuple[str, int], ...]:
    """The layers of each part key over a rank's virtual stages."""
    runs: dict[str, int] = {}
    for stage in kinds:
        for key, count in stage:
            runs[key] = runs.get(key, 0) + count
    return tuple(runs.items())


class ParallelEstimate:
    """Per-rank memory and communication of one model, workload and layout (exact integers)."""

    def __init__(self, cfg: ModelConfig, workload: Workload, layout: Layout, phase: str = "train"):
        """phase "train" (a training step) or "decode" (one decode step at the workload's
        context: serving)."""
        layout.check(cfg)
        if workload.weight_dtype is not None or workload.kv_dtype is not None:
            raise ConfigError("layout: quantized weights or KV cache in a parallel layout are not modelled; "
                              "estimate them on one device.")
        if workload.expert_load is not None and len(workload.expert_load) != cfg.n_experts:
            raise ConfigError(f"expert_load gives {len(workload.expert_load)} shares; model {cfg.name!r} "
                              f"has {cfg.n_experts} experts.")
        if cfg.mtp_layers > 1:  # the head part's leaves are summed once each (one module)
            raise ConfigError("layout: more than one multi-token prediction module in a layout is not modelled.")
        if layout.fp8 is not None and workload.dtype != "bf16":
            raise ConfigError(f"layout: FP8 training runs beside bf16 weights and activations; use --dtype bf16, "
                              f"not {workload.dtype}.")
        if layout.pp > 1 and layout.framework == "fsdp2" and cfg.tie_embeddings and cfg.head == "lm":
            raise ConfigError("layout: torch.distributed.pipelining splits an untied model; this one ties its "
                              "output projection to the embedding (use megatron or deepspeed).")
        self.cfg, self.workload, self.layout = cfg, workload, layout
        self.framework: Framework = FRAMEWORKS[layout.framework]
        self.phase = phase
        self._memo: dict[Any, Any] = {}
        evaluate, self.structure = _evaluator(cfg, workload, layout, phase)
        values = {**cfg.dimensions(), **workload.dimensions(cfg), "tp": layout.tp, "dp": layout.shard_ranks}
        if layout.cp > 1:  # each rank holds n / cp tokens of every sequence (layout/context.py)
            from .context import check_workload

            check_workload(workload, layout.cp)
            values["n"] //= layout.cp
        self.values = values  # one rank's values (the kernel model's shapes: layout/kernel_step.py)
        self.numbers = _evaluate(evaluate, tuple(values.items()))
        self.load = expert_load(cfg.n_experts, layout.ep, workload.expert_load, layout.capacity_factor) \
            if cfg.moe else None

    @property
    def _gradient_dtype(self) -> str:
        return self.framework.gradient_dtype_for(self.workload.dtype)

    def _part(self, key: str, quantity: str) -> int:
        return self.numbers.get(f"{key}.{quantity}", 0)

    @cached_property
    def stages(self) -> list[Stage]:
        layout = self.layout
        if layout.pp == 1:
            layers = {"encoder": self.cfg.n_encoder_layers, "decoder": self.cfg.n_decoder_layers}
            kinds = tuple(pair for stack in self.structure["stacks"]
                          for pair in self._kinds(stack, 0, layers[stack]))
            return [Stage(0, (self.cfg.n_layers,), (1,), True, True, (kinds,))]
        per_stage = layout.layers_per_stage(self.cfg.n_layers)
        starts = [sum(per_stage[:s]) for s in range(len(per_stage))]
        stack = self.structure["stacks"][0]
        last = layout.stages - 1
        out = []
        for rank in range(layout.pp):
            own = layout.stages_of(rank)
            out.append(Stage(rank, tuple(per_stage[s] for s in own), layout.in_flight(rank),
                             0 in own, last in own,
                             tuple(self._kinds(stack, starts[s], per_stage[s]) for s in own)))
        return out

    def _kinds(self, stack: str, start: int, layers: int) -> tuple[tuple[str, int], ...]:
        """Layers start .. start + layers - 1 of a stack by part key (ModelConfig.layer_kind_at)."""
        layer_keys = tuple((key, tuple(kind)) for key, kind in self.structure["layers"].items())
        return _layer_kinds(self.cfg, layer_keys, stack, start, layers)

    def layer_runs(self, stage: Stage) -> dict[str, int]:
        """How many layers of each part key the rank runs per micro-batch."""
        return dict(_runs(stage.kinds))

    def _layer_sum(self, stage: Stage, quantity: str) -> int:
        """A layer quantity over the stage's layers, each kind of layer its own."""
        return sum(count * self._part(key, quantity) for key, count in self.layer_runs(stage).items())

    def _largest_layer(self, quantity: str) -> int:
        """The quantity of the largest kind of layer (the one a framework gathers or rebuilds)."""
        return max((self._part(key, quantity) for key in self.structure["layers"]), default=0)

    def on_stage(self, stage: Stage, quantity: str, per_stage: bool = False) -> int:
        """A quantity over the parts a pipeline rank holds (shared parts once per virtual stage
        when per_stage)."""
        total = self._layer_sum(stage, quantity)
        total += self._part("shared", quantity) * (len(stage.layers) if per_stage else 1)
        if stage.first:
            total += self._part("embedding", quantity)
        if stage.last:
            total += self._part("tail", quantity) + self._part("head", quantity)
        return total

    def tied_copy(self, stage: Stage) -> int:
        """The last stage's copy of a tied embedding (pp > 1): its table elements."""
        if self.layout.pp > 1 and self.structure["tied"] and stage.last and not stage.first:
            return self.numbers["embedding_table"]
        return 0

    # -- state ------------------------------------------------------------------------------

    def state(self, stage: Stage) -> dict[str, int]:
        """Weights, gradients and optimizer state of one rank of this pipeline stage, sharded
        over dp as the framework shards them (rank 0 of the data-parallel group: the most
        loaded, holding every padded row)."""
        layout = self.layout
        w, g, o = self._per_param()
        params = self.on_stage(stage, "params") + self.tied_copy(stage)
        gradient_params = self.on_stage(stage, "gradient_params") + self.tied_copy(stage)
        tensors = self.on_stage(stage, "tensors")
        dp = layout.shard_ranks
        if layout.ep > 1:
            return self._expert_parallel_state(stage, params, gradient_params)
        if self.framework.sharding == "per_tensor" and dp > 1:
            padded = self.on_stage(stage, "padded")
            out = {"weights": w * padded, "gradients": g * padded, "optimizer": o * padded}
        else:
            shard = math.ceil(params / dp)
            zero = layout.zero if self.framework.sharding == "flat" else 0
            out = {"weights": w * (shard if zero >= 3 else params),
                   "gradients": g * (math.ceil(gradient_params / dp) if zero >= 2 else gradient_params),
                   "optimizer": o * (shard if zero >= 1 else params)}
            if zero in self.framework.fp32_gradient_partition_stages and self.workload.dtype != "fp32":
                out["gradients"] += 4 * shard  # the fp32 gradient partition step() allocates
        if self.structure["step_counters"]:
            out["optimizer"] += 4 * tensors
        return offload.device_state(out, layout)

    def offloaded(self, stage: Stage) -> dict[str, Any]:
        """Host and NVMe bytes and PCIe traffic of one rank's offloaded state (costmodel/offload.py)."""
        n = self.numbers
        per_param = {"weights": n["bytes.weights"], "gradients": n["bytes.gradients"],
                     "optimizer": n["bytes.optimizer"]}
        return offload.offloaded(self.layout, self.on_stage(stage, "params") + self.tied_copy(stage), per_param)

    def _per_param(self) -> tuple[int, int, int]:
        """Bytes per parameter of the weights, gradients and optimizer state (an FP8 recipe may
        keep AdamW's moments narrower: costmodel/layout/fp8.py)."""
        n = self.numbers
        w, g, o = n["bytes.weights"], n["bytes.gradients"], n["bytes.optimizer"]
        recipe = self.fp8_recipe
        if recipe is not None and recipe.moment_bytes is not None:
            from ..precision import OPTIMIZERS

            o -= OPTIMIZERS[self.workload.optimizer].moments * (n["bytes.moment"] - recipe.moment_bytes)
        return w, g, o

    @property
    def fp8_recipe(self) -> Any:
        from .fp8 import RECIPES

        return RECIPES[self.layout.fp8] if self.layout.fp8 else None

    def fp8_copies(self, stage: Stage) -> int:
        """Bytes of the FP8 weight copies (and scales) the recipe keeps on this rank."""
        recipe = self.fp8_recipe
        if recipe is None or not recipe.weight_copy_bytes:
            return 0
        params = self.on_stage(stage, "fp8_params")
        if self.layout.ep > 1:  # the rank's own experts only
            experts = self.on_stage(stage, "expert_params")
            params -= experts - experts // self.layout.ep
        return math.ceil(params * recipe.weight_copy_bytes)

    def _expert_parallel_state(self, stage: Stage, params: int, gradient_params: int) -> dict[str, int]:
        """State under expert parallelism (costmodel/layout/experts.py): the rank's E / ep experts
        sharded over the expert-data-parallel group (dp / ep), the rest over dp."""
        layout = self.layout
        w, g, o = self._per_param()
        experts = self.on_stage(stage, "expert_params")
        local = experts // layout.ep
        groups = ((params - experts, gradient_params - experts, layout.dp), (local, local, layout.dp // layout.ep))
        out = {"weights": 0, "gradients": 0, "optimizer": 0}
        for held, gradient_held, ranks in groups:
            shard = math.ceil(held / ranks)
            out["weights"] += w * held
            out["gradients"] += g * (math.ceil(gradient_held / ranks) if layout.zero >= 2 else gradient_held)
            out["optimizer"] += o * (shard if layout.zero >= 1 else held)
            if layout.zero in self.framework.fp32_gradient_partition_stages and self.workload.dtype != "fp32":
                out["gradients"] += 4 * shard
        return out

    def activations(self, stage: Stage) -> int:
        """Bytes saved for backward at the rank's peak: each of its stages' per-micro-batch bytes
        times the micro-batches it holds; a step's ids and labels as one storage where pipelining
        keeps them whole; one layer rebuilt under full recomputation."""
        saved = inputs = 0
        for i, (layers, held) in enumerate(zip(stage.layers, stage.in_flight)):
            first = stage.first and i == 0
            last = stage.last and i == len(stage.layers) - 1
            one = Stage(stage.rank, (layers,), (held,), first, last, (stage.kinds[i],))
            per_microbatch = self.on_stage(one, "saved", per_stage=True) if self.layout.pp > 1 else \
                self.on_stage(one, "saved")
            if self.load is not None and self.load.factor != 1:  # the most loaded rank's experts
                per_microbatch += math.ceil((self.load.factor - 1) * self._layer_sum(one, "expert_saved"))
            edge_inputs = (self._part("embedding", "inputs") if first else 0) + (
                self._part("head", "inputs") if last else 0)
            if self.framework.whole_batch_inputs and self.layout.pp > 1:
                saved += held * (per_microbatch - edge_inputs)
                inputs += self.layout.microbatches * edge_inputs if (first or last) else 0
            else:
                saved += held * per_microbatch
        rebuilt = self._largest_layer("rebuilt")
        return saved + inputs + rebuilt

    def buffers(self, stage: Stage) -> int:
        """The modules' buffers, and the framework's communication buffers: FSDP2 holds the
        gathered parameters of the group computing (and of the root, not resharded) with one
        all-gather and one reduce-scatter buffer (FINDINGS 10.2); ZeRO-3 two gathered layers
        (the current and the prefetched one; DeepSpeed's buckets, not measured)."""
        layout, n = self.layout, self.numbers
        own = self.on_stage(stage, "buffers", per_stage=True)
        dp = layout.shard_ranks
        if dp == 1:
            return own
        if self.framework.sharding == "per_tensor":
            e = self.workload.bytes_per_element
            layer = dp * self._largest_layer("padded")
            root = dp * (self.on_stage(stage, "padded") - self._layer_sum(stage, "padded"))
            everything = dp * self.on_stage(stage, "padded")
            unsharded = (everything if layout.zero == 2 or layout.reshard_after_forward is False
                         else layer if layout.reshard_after_forward else root + layer)
            return own + e * unsharded + e * layer + 4 * layer
        if layout.zero >= 3:
            return own + 2 * self.workload.bytes_per_element * self._largest_layer("params")
        return own

    def memory(self, stage: Stage) -> dict[str, int]:
        """Weights, gradients, optimizer, activations, buffers and their total on one rank of this
        pipeline stage (computed once for stages alike: a deep pipeline's middle stages)."""
        signature = ("memory", stage.layers, stage.in_flight, stage.first, stage.last, stage.kinds)
        if signature not in self._memo:
            out = self.state(stage)
            out["weights"] += self.fp8_copies(stage)
            out["activations"] = self.activations(stage)
            out["buffers"] = self.buffers(stage)
            out["total"] = sum(out.values())
            self._memo[signature] = out
        return dict(self._memo[signature])

    @cached_property
    def per_rank(self) -> dict[str, int]:
        """The most loaded rank's memory, and its pipeline stage: the first or the last. The
        first holds at least as many layers as any other (extra layers go first), at least as
        many micro-batches in flight (every schedule) and the embeddings; the last the head. With
        layers of different kinds (DeepSeek-V3's dense layers first) any rank may be: all are
        compared."""
        candidates = self.stages if len(self.structure["layers"]) > 1 else [self.stages[0], self.stages[-1]]
        stage = max(candidates, key=lambda s: (self.memory(s)["total"], -s.rank))
        return {**self.memory(stage), "stage": stage.rank}

    # -- communication ----------------------------------------------------------------------

    def communication(self, stage: Stage) -> dict[str, dict[str, int]]:
        """Payload bytes one rank of this pipeline stage sends per training step, by group
        (tp, dp, pp) and collective."""
        signature = ("communication", stage.layers, stage.in_flight, stage.first, stage.last, stage.kinds,
                     stage.rank if self.layout.virtual_stages > 1 else None)
        if signature not in self._memo:
            self._memo[signature] = self._communication(stage)
        return self._memo[signature]

    def _communication(self, stage: Stage) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}

        def add(group: str, kind: str, value: int) -> None:
            if value:
                out.setdefault(group, {})
                out[group][kind] = out[group].get(kind, 0) + int(value)

        layout, n, m = self.layout, self.numbers, self.layout.microbatches
        if layout.tp > 1:
            for kind, calls, payload in self.tensor_parallel_collectives(stage):
                if kind == "optimizer_all_reduce":  # once per step, not per micro-batch
                    add("tp", "all_reduce", calls * payload)
                else:
                    add("tp", kind, m * calls * payload)
        if layout.cp > 1 and self.phase == "train":
            from .context import exchange

            attention = sum(self.layer_runs(stage).values())  # every layer attends
            for kind, value in exchange(self.cfg, self.workload, layout.cp, layout.cp_rotate, attention).items():
                add("cp", kind, m * value)
        if layout.shard_ranks > 1:
            for group, kinds in self._data_parallel_groups(stage).items():
                for kind, value in kinds.items():
                    add(group, kind, value)
        if layout.ep > 1:
            add("ep", "all_to_all", m * self._all_to_all(stage))
        if layout.pp > 1:
            # Each (virtual) stage sends its output forward unless it is the last and its input's
            # gradient backward unless it is the first; it receives as much (FINDINGS 10.4).
            boundary = n["boundary"] // (layout.tp if layout.sp else 1)
            for index in layout.stages_of(stage.rank):  # a V's turn (stage p - 1 to p) stays on a rank
                crossings = (int(index < layout.stages - 1 and layout.rank_of(index + 1) != stage.rank)
                             + int(index > 0 and layout.rank_of(index - 1) != stage.rank))
                add("pp", "send", m * boundary * crossings)
                add("pp", "recv", m * boundary * crossings)
            if self.structure["tied"] and (stage.first or stage.last) and not (stage.first and stage.last):
                width = 4 if self._gradient_dtype == "fp32" else self.workload.bytes_per_element
                add("pp", "all_reduce", width * n["embedding_table"])
        return out

    def tensor_parallel_collectives(self, stage: Stage) -> list[tuple[str, int, int]]:
        """One micro-batch's tensor-parallel collectives as (kind, calls, payload of each call);
        "optimizer_all_reduce" once per step."""
        n, layout = self.numbers, self.layout
        x = n["boundary"]
        counts = self.structure["counts"]
        runs = self.layer_runs(stage)

        def per_layer(name: str) -> int:
            return sum(count * counts.get(key, {}).get(name, 0) for key, count in runs.items())

        rows, columns, sublayers = per_layer("row_outputs"), per_layer("column_inputs"), per_layer("sublayers")
        first = int(stage.first)
        head_loss = int(stage.last and self.cfg.head == "lm")
        events: list[tuple[str, int, int]] = []
        if self.phase == "decode":  # a forward: the row-parallel outputs, then the logits gathered
            events.append(("all_reduce", rows + first, x))
            if head_loss:
                events.append(("all_gather", 1, n["logits"]))
            return [event for event in events if event[1] and event[2]]
        if not layout.sp:
            # Forward: the row-parallel outputs and the embedding's; backward: the inputs of the
            # column-parallel layers and of the head.
            events.append(("all_reduce", rows + first + columns + head_loss, x))
            latents = per_layer("latents")  # latent attention: its latents' gradient, each layer
            if latents:
                events.append(("all_reduce", latents, self._layer_sum(stage, "latent_gradient") // latents))
        else:
            gathers = sublayers + head_loss  # the inputs of the column-parallel regions
            scatters = rows + first  # the outputs of the row-parallel regions and the embedding
            regathers = gathers if self.framework.sp_regathers_input else 0  # Megatron, in backward
            events.append(("reduce_scatter", scatters + gathers, x))  # forward, and the gathers' gradients
            events.append(("all_gather", gathers + scatters + regathers, x))
            norms = self.on_stage(stage, "norm_params")
            reads = self.framework.norm_gradient_all_reduces
            events.append(("optimizer_all_reduce", reads, norms * n["bytes.gradients"]))
        if head_loss:
            if uses_loss_parallel(layout):
                events.append(("all_reduce", 1, n["loss_reduction"]))
            else:
                events.append(("all_gather", 1, n["logits"]))
        return [event for event in events if event[1] and event[2]]

    def _all_to_all(self, stage: Stage) -> int:
        """One micro-batch's all-to-all payload on this rank (costmodel/layout/experts.py): per
        mixture-of-experts layer the counts (8 E), dispatch and combine forward and backward."""
        slots = self._layer_sum(stage, "routed_slots")
        layers = sum(count for key, count in self.layer_runs(stage).items() if self._part(key, "routed_slots"))
        if stage.last and self._part("head", "routed_slots"):  # a multi-token prediction module's experts
            slots += self._part("head", "routed_slots")
            layers += 1
        token = self.workload.bytes_per_element * self.cfg.d_model
        sent, received = slots * self.load.kept, slots * self.load.factor
        return int(layers * 8 * self.cfg.n_experts + math.ceil(2 * (sent + received) * token))

    def _data_parallel_groups(self, stage: Stage) -> dict[str, dict[str, int]]:
        """The data-parallel collectives by group: "dp", and under expert parallelism "edp" (the
        experts' own gradients over the dp / ep ranks that hold the same experts)."""
        if self.layout.ep == 1:
            return {"dp": self._data_parallel(stage)}
        experts = self.on_stage(stage, "expert_params")
        local = experts // self.layout.ep
        edp = self.layout.dp // self.layout.ep
        out = {"dp": self._data_parallel(stage, exclude=experts)}
        if edp > 1:
            out["edp"] = self._data_parallel(stage, params=local, ranks=edp)
        return out

    def _data_parallel(self, stage: Stage, exclude: int = 0, params: int | None = None,
                       ranks: int | None = None) -> dict[str, int]:
        """The data-parallel collectives of one step (FSDP2 and ZeRO-3 gather and scatter per
        micro-batch)."""
        layout, n, m, e = self.layout, self.numbers, self.layout.microbatches, self.workload.bytes_per_element
        dp = ranks or layout.shard_ranks
        grad = 4 if self._gradient_dtype == "fp32" else e
        if self.framework.sharding == "per_tensor":
            everything = dp * self.on_stage(stage, "padded")
            layers = dp * self._layer_sum(stage, "padded")
            backward = {None: layers, True: everything, False: 0}[
                False if layout.zero == 2 else layout.reshard_after_forward]
            return {"all_gather": m * e * (everything + backward), "reduce_scatter": m * 4 * everything}
        if params is None:
            params = self.on_stage(stage, "params") + self.tied_copy(stage) - exclude
        padded = dp * math.ceil(params / dp)
        if layout.zero == 0:
            return {"all_reduce": grad * params}
        if layout.zero in (1, 2):
            return {"reduce_scatter": grad * padded, "all_gather": e * padded}
        return {"all_gather": m * 2 * e * padded, "reduce_scatter": m * grad * padded}

    def wire(self, communication: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        """Bytes each rank puts on the wire, with the ring factors."""
        layout = self.layout
        sizes = {"tp": layout.tp, "dp": layout.shard_ranks, "pp": 2, "ep": layout.ep,
                 "edp": layout.dp // layout.ep, "cp": layout.cp}
        out: dict[str, dict[str, int]] = {}
        for group, kinds in communication.items():
            for kind, payload in kinds.items():
                factor = 1.0 if kind in ("send", "recv") else _ring(kind, sizes[group])
                out.setdefault(group, {})[kind] = round(payload * factor)
        return out

    # -- the answer ---------------------------------------------------------------------------

    @cached_property
    def per_stage(self) -> list[dict[str, Any]]:
        rows = []
        for stage in self.stages:
            communication = self.communication(stage)
            rows.append({"stage": stage.rank, "layers": sum(stage.layers),
                         "virtual_stage_layers": list(stage.layers),
                         "micro_batches_in_flight": list(stage.in_flight), **self.memory(stage),
                         "communication": communication, "wire": self.wire(communication)})
        return rows

    def to_dict(self) -> dict[str, Any]:
        top = self.per_stage[self.per_rank["stage"]]
        keys = ("weights", "gradients", "optimizer", "activations", "buffers", "total")
        return {
            "layout": self.layout.to_dict(self.workload.batch),
            "per_rank": {**{k: top[k] for k in keys}, "stage": top["stage"]},
            "stages": [{k: row[k] for k in ("stage", "layers", *keys, "virtual_stage_layers",
                                            "micro_batches_in_flight", "communication")}
                       for row in self.per_stage],
            "communication": top["communication"],
            "wire": top["wire"],
            "precision": self.framework.precision_for(self.workload.dtype),
            **({"experts": self.experts()} if self.load is not None else {}),
            **({"offload": self.offloaded(self.stages[top["stage"]])} if self.layout.offload != "none" else {}),
        }

    def experts(self) -> dict[str, Any]:
        """The mixture of experts under this layout (costmodel/layout/experts.py)."""
        load = self.load
        return {"ep": self.layout.ep, "experts_per_rank": self.cfg.n_experts // self.layout.ep,
                "expert_data_parallel": self.layout.dp // self.layout.ep,
                "load_factor": float(load.factor), "most_loaded_ep_rank": load.rank,
                "dropped_fraction": float(1 - load.kept), "capacity_factor": self.layout.capacity_factor}
