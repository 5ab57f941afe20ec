"""Per-rank memory and communication of a layout: the cost tree's parts, placed on the ranks and summed.

The parts (costmodel/layout/parts.py: embedding, shared, layer, tail, head) hold the leaves'
per-rank quantities as expressions. This module places the parts on the pipeline stages,
multiplies by the micro-batches a stage holds (costmodel/layout/spec.py), shards the parameter
state over dp as the framework does (costmodel/layout/frameworks.py): what a rank holds. What it
sends, each collective's payload and its wire bytes, is costmodel/layout/communication.py's part of
ParallelEstimate; which layers each stage holds, costmodel/layout/stages.py. Formulas stay in the
blocks: here are only sums and the frameworks' sharding rules.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

from .. import offload
from ..config import ConfigError, ModelConfig, Workload
from ..module_recompute import check_recompute_framework, check_recomputed_modules
from .communication import RankCommunication
from .experts import check_flex_load, expert_load, fsdp_gathered, fsdp_split
from .fp8 import RECIPES, TE_GEMMS_PER_DENSE_LAYER, amax_reduction_bytes, fp8_parameter_saving
from .fp8_options import FP8_AUTOCASTS, head_in_fp8
from .frameworks import FRAMEWORKS, Framework
from .parts import Stage, evaluate_parts, model_dimensions, part_evaluator, part_of, uses_loss_parallel
from .spec import Layout
from .stages import kind_runs, pipeline_stages

#: What other modules import from here besides ParallelEstimate (layout/kernel_step.py, layout/time.py).
__all__ = ["FRAMEWORKS", "ParallelEstimate", "Stage", "part_of", "uses_loss_parallel"]


def check_pure_precision(pure_precision: bool, dtype: str, phase: str = "train") -> None:
    """Pure precision is a training step's 16-bit state (plan refuses it once, before its search)."""
    if pure_precision and (phase != "train" or dtype == "fp32"):
        raise ConfigError("layout: pure precision (--pure-precision) is a training step's 16-bit state, bf16 or fp16 "
                          "weights, gradients and moments; " + ("a serving rank holds its weights in --dtype "
                          "anyway (drop it)." if phase != "train" else "in fp32 every copy is fp32 already (drop it)."))


def check_grad_reduce_dtype(grad_reduce_dtype: str | None, dtype: str) -> None:
    """A gradient reduce dtype is modelled for bf16 training (plan refuses it once, before its search)."""
    if grad_reduce_dtype is not None and dtype != "bf16":
        raise ConfigError(f"layout: the gradient reduce dtype (--grad-reduce-dtype) is modelled for bf16 "
                          f"training, where Megatron-Core and FSDP2 choose it; not for {dtype}.")


class ParallelEstimate(RankCommunication):
    """Per-rank memory and communication of one model, workload and layout (exact integers)."""

    def __init__(self, cfg: ModelConfig, workload: Workload, layout: Layout, phase: str = "train"):
        """phase "train" (a training step) or "decode" (one decode step at the workload's
        context: serving)."""
        layout.check(cfg, inference=phase != "train")
        workload = workload.for_training() if phase == "train" else workload
        self.quantized = workload.weight_dtype is not None
        if phase == "train" and (self.quantized or workload.kv_dtype is not None):
            raise ConfigError("layout: quantized weights and KV caches are inference formats; training on "
                              "quantized weights (QLoRA) in a layout is not modelled (`finetune` on one device).")
        workload.check_expert_load(cfg)
        if phase == "train" and not layout.vocab_parallel and layout.tp > 1:
            raise ConfigError("layout: a replicated vocabulary (vocab_parallel false, --replicated-vocab) is "
                              "modelled for decoding only; a training layout splits the embedding and head by tp.")
        if phase != "train" and layout.dp_shard:
            raise ConfigError("layout: hybrid sharding (--dp-shard) shards a training step's state; serving replicas "
                              "hold their weights whole (drop --dp-shard).")
        if layout.fp8 is not None and workload.dtype != "bf16":
            raise ConfigError(f"layout: FP8 training runs beside bf16 weights and activations; use --dtype bf16, "
                              f"not {workload.dtype}.")
        if layout.precision_aware_optimizer is not None and (workload.dtype != "bf16" or workload.optimizer != "adamw"):
            raise ConfigError(f"layout: the precision-aware optimizer (--precision-aware-optimizer) is modelled for "
                              f"bf16 training with Adam, as Megatron-Core runs it; not {workload.dtype} with "
                              f"{workload.optimizer}.")
        check_grad_reduce_dtype(layout.grad_reduce_dtype, workload.dtype)
        check_pure_precision(layout.pure_precision, workload.dtype, phase)
        if layout.fp32_norm_input and workload.impl == "hf":  # the kernel model's measured eager ops have none
            raise ConfigError("layout: --fp32-norm-input is InternLM's layer (each norm on an fp32 copy of its input); "
                              "Hugging Face's class (--impl hf, deepspeed's and fsdp2's default) normalizes its "
                              "input as it is: use --impl megatron (--framework megatron's default) or drop the option.")
        if phase == "train":  # the model's parts first (a dense model's refusal names them), then the framework
            check_recomputed_modules(cfg, workload.recompute)
            check_recompute_framework(workload.recompute, layout.framework, layout.tp)
            from .hf_moe_loop import check as check_moe_loop

            check_moe_loop(workload, layout)  # under either time model (session 36's kernel model only)
        if layout.pp > 1 and layout.framework == "fsdp2" and cfg.tie_embeddings and cfg.head == "lm":
            raise ConfigError("layout: torch.distributed.pipelining splits an untied model; this one ties its "
                              "output projection to the embedding (use megatron or deepspeed).")
        self.cfg, self.workload, self.layout = cfg, workload, layout
        self.framework: Framework = FRAMEWORKS[layout.framework]
        self.phase = phase
        self._memo: dict[Any, Any] = {}
        evaluate, self.structure = part_evaluator(cfg, workload, layout, phase)
        values = {**model_dimensions(cfg), **workload.dimensions(cfg), "tp": layout.tp, "dp": layout.shard_ranks}
        if layout.cp > 1:  # each rank holds n / cp tokens of every sequence (layout/context.py)
            from .context import check_workload

            ulysses = layout.cp_rotate == "a2a" and layout.framework == "deepspeed"  # no load-balanced chunks
            check_workload(workload, layout.cp, layout.tp if layout.sp else 1, chunks=1 if ulysses else 2)
            values["n"] //= layout.cp
        self.values = values  # one rank's values (the kernel model's shapes: layout/kernel_step.py)
        self.numbers = evaluate_parts(evaluate, tuple(values.items()))
        self.load = expert_load(cfg.n_experts, layout.ep, workload.expert_load, layout.capacity_factor,
                                layout.pad_to_capacity) \
            if cfg.moe else None
        if self.load is not None and layout.ep > 1:
            check_flex_load(self.load, layout.ep_dispatcher)
        if self.quantized:
            self._check_groups()

    def _check_groups(self) -> None:
        """Whole groups on each row-parallel shard (quantization.check_shard_groups), the widths
        from the parts' row_parallel_width expressions (layout/parts.py)."""
        from ..quantization import check_shard_groups

        widths = [v for k, v in self.numbers.items() if k.startswith("row_parallel_width.")]
        check_shard_groups(self.workload.weight_format, widths, self.layout.tp)

    @property
    def _gradient_dtype(self) -> str:
        return self.framework.gradient_dtype_for(self.workload.dtype, self.layout.grad_reduce_dtype,
                                                 self.layout.pure_precision)

    @property
    def gradient_cast_at_step(self) -> bool:
        """Megatron-Core's optimizer casts each updated parameter's bf16 gradient to fp32 at the step
        (Framework.gradient_cast_at_step): 4 bytes a parameter the rank updates, beside the buffer."""
        # Megatron-FSDP hands the optimizer its main-gradient shard as it is (megatron_fsdp.py)
        return self.phase == "train" and not self.layout.megatron_fsdp and self.framework.gradient_cast_at_step(
            self.workload.dtype, self.layout.grad_reduce_dtype, self.layout.precision_aware_optimizer)

    def part(self, key: str, quantity: str) -> int:
        return self.numbers.get(f"{key}.{quantity}", 0)

    @cached_property
    def stages(self) -> list[Stage]:
        layout = self.layout
        layer_keys = tuple((key, tuple(kind)) for key, kind in self.structure["layers"].items())
        recomputed = self.workload.recompute_layers if self.phase == "train" else None
        return list(pipeline_stages(self.cfg, layer_keys, tuple(self.structure["stacks"]), recomputed, layout.pp,
                            layout.virtual_stages, layout.schedule, layout.microbatches, layout.stage_layers))

    def layer_runs(self, stage: Stage) -> dict[str, int]:
        """How many layers of each part key the rank runs per micro-batch."""
        return dict(kind_runs(stage.kinds))

    def layer_sum(self, stage: Stage, quantity: str) -> int:
        """A layer quantity over the stage's layers, each kind of layer its own."""
        return sum(count * self.part(key, quantity) for key, count in kind_runs(stage.kinds))

    def _largest_layer(self, quantity: str) -> int:
        """The quantity of the largest kind of layer (the one a framework gathers or rebuilds)."""
        return max((self.part(key, quantity) for key in self.structure["layers"]), default=0)

    def on_stage(self, stage: Stage, quantity: str, per_stage: bool = False) -> int:
        """A quantity over the parts a pipeline rank holds (shared parts once per virtual stage
        when per_stage); kept with the numbers (PartNumbers.sums), whose other layouts ask again."""
        shared = len(stage.layers) if per_stage else 1
        key = (quantity, shared, stage.kinds, stage.first, stage.last)
        sums = self.numbers.sums
        total = sums.get(key)
        if total is None:
            total = self.layer_sum(stage, quantity) + self.part("shared", quantity) * shared
            if stage.first:
                total += self.part("embedding", quantity)
            if stage.last:
                total += self.part("tail", quantity) + self.part("head", quantity)
            sums[key] = total
        return total

    def on_chunks(self, stage: Stage, quantity: str) -> tuple[int, ...]:
        """on_stage's quantity split over the rank's (virtual) stages, in its order (chunk 0 first):
        each chunk's layers, the shared parts with chunk 0, the embedding with the first stage's
        chunk, the tail and head with the last's."""
        chunks = len(stage.kinds)
        out = []
        for index, kinds in enumerate(stage.kinds):
            total = sum(count * self.part(key, quantity) for key, count in kinds)
            if index == 0:
                total += self.part("shared", quantity)
                total += self.part("embedding", quantity) if stage.first else 0
            if index == chunks - 1 and stage.last:
                total += self.part("tail", quantity) + self.part("head", quantity)
            out.append(total)
        return tuple(out)

    def tied_copy(self, stage: Stage) -> int:
        """The last stage's copy of a tied embedding (pp > 1): its table elements."""
        if self.layout.pp > 1 and self.structure["tied"] and stage.last and not stage.first:
            return self.numbers["embedding_table"]
        return 0

    # -- state ------------------------------------------------------------------------------

    def weight_bytes(self, stage: Stage) -> int:
        """Bytes of the weights one rank of this stage holds whole (serving: dp is replicas):
        quantized weights (inference) as the rank's shards store them, each with its own scales and
        zeros (Leaf.weight_part at the rank's substitution); the rest, and a tied embedding's copy,
        in the dtype's bytes per parameter. Under expert parallelism a rank holds E / ep of the routed
        experts (the serving replicas are its data-parallel ranks), as a training rank does
        (_expert_parallel_state)."""
        tied = self.numbers["bytes.weights"] * self.tied_copy(stage)
        ep = self.layout.ep
        if self.quantized:
            experts = self.on_stage(stage, "expert_weight_bytes") if ep > 1 else 0
            return self.on_stage(stage, "weight_bytes") - experts + experts // ep + tied
        experts = self.on_stage(stage, "expert_params") if ep > 1 else 0
        return self.numbers["bytes.weights"] * (self.on_stage(stage, "params") - experts + experts // ep) + tied

    def state(self, stage: Stage) -> dict[str, int]:
        """Weights, gradients and optimizer state of one rank of this pipeline stage, sharded
        over dp as the framework shards them (rank 0 of the data-parallel group: the most
        loaded, holding every padded row); quantized weights (inference) whole on each replica."""
        layout = self.layout
        w, g, o = self._per_param()
        if self.quantized:
            return {"weights": self.weight_bytes(stage), "gradients": 0, "optimizer": 0}
        params = self.on_stage(stage, "params") + self.tied_copy(stage)
        gradient_params = self.on_stage(stage, "gradient_params") + self.tied_copy(stage)
        tensors = self.on_stage(stage, "tensors")
        dp = layout.shard_ranks
        per_tensor = self.framework.sharding == "per_tensor"
        if layout.ep > 1 and not per_tensor:
            return self._expert_parallel_state(stage, params, gradient_params)
        if per_tensor and dp > 1:
            padded = self.on_stage(stage, "padded") if layout.ep == 1 else sum(fsdp_split(self, stage, "stage"))
            out = {"weights": w * padded, "gradients": g * padded, "optimizer": o * padded}
        else:
            shard = math.ceil(params / dp)
            zero = layout.zero if self.framework.sharding == "flat" else 0
            optimizer_shard = math.ceil(params / layout.optimizer_ranks)  # HFSDP: over all of dp (megatron_fsdp.py)
            out = {"weights": w * (shard if zero >= 3 else params),
                   "gradients": g * (math.ceil(gradient_params / dp) if zero >= 2 else gradient_params),
                   "optimizer": o * (optimizer_shard if zero >= 1 else params)}
            if zero in self.framework.fp32_gradient_partition_stages and self.workload.dtype != "fp32":
                out["gradients"] += 4 * shard  # the fp32 gradient partition step() allocates
            if self.gradient_cast_at_step:  # the fp32 copies of the gradients the rank updates
                out["gradients"] += 4 * (shard if zero >= 1 else params)
            if self.runs_bf16_optimizer:  # DeepSpeed's BF16_Optimizer: the rank's whole gradient in fp32,
                out["gradients"] += 4 * dp * shard  # fp32_groups_gradients_flat, zeros_like its padded bf16 flat
            out["weights"] -= self.fp8_parameter_saving(stage)
        if self.structure["step_counters"]:
            out["optimizer"] += 4 * tensors
        return offload.device_state(out, layout)

    def offloaded(self, stage: Stage) -> dict[str, Any]:
        """Host and NVMe bytes and PCIe traffic of one rank's offloaded state (costmodel/offload.py)."""
        n = self.numbers
        per_param = {"weights": n["bytes.weights"], "gradients": n["bytes.gradients"],
                     "optimizer": n["bytes.optimizer"]}
        return offload.offloaded(self.layout, self.on_stage(stage, "params") + self.tied_copy(stage), per_param)

    def _per_param(self, precision_aware: bool = True) -> tuple[int, int, int]:
        """Bytes per parameter of the weights, gradients and optimizer state: an FP8 recipe may
        keep AdamW's moments narrower (costmodel/layout/fp8.py), Megatron-Core's precision-aware
        optimizer its moments or master copy (frameworks.py PRECISION_AWARE_OPTIMIZERS: each
        given dtype in place of the policy's; unless precision_aware is False)."""
        n = self.numbers
        w, g, o = n["bytes.weights"], n["bytes.gradients"], n["bytes.optimizer"]
        recipe = self.fp8_recipe
        kind = self.precision_aware if precision_aware else None
        if kind is None and (recipe is None or recipe.moment_bytes is None):
            return w, g, o
        from ..precision import OPTIMIZERS  # imports sympy: only where a dtype changes

        moments, moment = OPTIMIZERS[self.workload.optimizer].moments, n["bytes.moment"]
        master = o - moments * moment
        if recipe is not None and recipe.moment_bytes is not None:
            moment = recipe.moment_bytes
        if kind is not None:
            moment = moment if kind.moment_bytes is None else kind.moment_bytes
            master = master if kind.master_bytes is None else kind.master_bytes
        return w, g, master + moments * moment

    @property
    def precision_aware(self) -> Any:
        """The layout's precision-aware optimizer (frameworks.py PrecisionAwareOptimizer) in a
        training step, else None."""
        from .frameworks import PRECISION_AWARE_OPTIMIZERS

        name = self.layout.precision_aware_optimizer
        return PRECISION_AWARE_OPTIMIZERS[name] if name is not None and self.phase == "train" else None

    @property
    def precision_aware_change(self) -> int:
        """Bytes a parameter the precision-aware optimizer adds to the rank's optimizer state
        (negative: removes); 0 without it. The step reads and writes that state once
        (ParamBytes.step_traffic), so its traffic moves by twice this (time.py step_traffic)."""
        if self.precision_aware is None:
            return 0
        return self._per_param()[2] - self._per_param(precision_aware=False)[2]

    @property
    def fp8_recipe(self) -> Any:
        return RECIPES[self.layout.fp8] if self.layout.fp8 else None

    def fp8_parameters(self, stage: Stage) -> tuple[int, int]:
        """Under --fp8-param-gather (Layout.fp8_param_gather, layout/fp8.py FP8_PARAM_RECIPES), the
        stage's parameters held in FP8: (the rest's, the routed experts' before expert parallelism
        divides them); (0, 0) without it or outside training."""
        if not self.layout.fp8_param_gather or self.phase != "train":
            return 0, 0
        experts = self.on_stage(stage, "expert_params")
        return self.on_stage(stage, "fp8_params") - experts, experts

    def fp8_parameter_saving(self, stage: Stage) -> int:
        """Bytes of weights the rank does not hold under --fp8-param-gather: its FP8 parameters take
        FP8_PARAM_BYTES each, not the dtype's (no bf16 copy kept: layout/fp8.py)."""
        if self.layout.framework == "fsdp2":  # torchao's float8 all-gather: the shards stay as FSDP2 holds them
            return 0
        dense, experts = self.fp8_parameters(stage)
        return fp8_parameter_saving(self.numbers["bytes.weights"], dense + experts // self.layout.ep)

    def amax_reductions(self, stage: Stage) -> list[int]:
        """Delayed scaling's amax all-reduces on this rank in one micro-batch, the bytes of each
        (layout/fp8.py amax_reduction_bytes): Megatron-Core opens one fp8_autocast per model chunk's
        TransformerBlock forward (transformer_block.py), and Transformer Engine all-reduces the
        chunk's forward amaxes at its exit and its backward amaxes in the chunk's backward
        (reduce_and_update_fp8_tensors), so two a chunk; under FSDP2 the training script's autocast
        (Layout.fp8_autocast, layout/fp8_options.py FP8_AUTOCASTS: its forward and backward
        reductions a micro-batch over the whole model, PP 1); none outside training, without delayed
        scaling, or where the chunk has no FP8 GEMM. A layer's GEMMs:
        TE_GEMMS_PER_DENSE_LAYER, or in a mixture-of-experts layer the attention's two and the
        experts' fc1 and fc2, one GEMM a local expert each (TEGroupedLinear), and a shared expert's two; the
        output head's one where the script's autocast runs it in FP8 (layout/fp8_options.py head_fp8)."""
        layout, cfg = self.layout, self.cfg
        if layout.fp8 != "delayed" or self.phase != "train":
            return []
        forward_reductions, backward_reductions = 1, 1  # Megatron-Core's: one each a chunk
        if layout.fp8_autocast is not None:
            scope = FP8_AUTOCASTS[layout.fp8_autocast]
            forward_reductions, backward_reductions = scope.forward_reductions, scope.backward_reductions
        local = cfg.n_experts // layout.ep if cfg.n_experts else 0

        def gemms(key: str) -> int:
            if not self.part(key, "fp8_params"):
                return 0
            if not self.part(key, "expert_params"):
                return TE_GEMMS_PER_DENSE_LAYER
            return 2 + 2 * local + (2 if cfg.d_shared else 0)

        out = []
        head = int(stage.last and head_in_fp8(layout))  # the head's te.LayerNormLinear, in the last chunk's autocast
        for index, kinds in enumerate(stage.kinds):
            count = sum(runs * gemms(key) for key, runs in kinds) + (head if index == len(stage.kinds) - 1 else 0)
            if count:
                payload = amax_reduction_bytes(count)
                out += [payload["forward"]] * forward_reductions + [payload["backward"]] * backward_reductions
        return out

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
        sharded over the expert-data-parallel group (Layout.expert_data_parallel), the rest over
        dp x cp (Layout.shard_ranks); under Megatron-FSDP the weights and gradients too, over the
        shard groups (Layout.shard_ranks and expert_shard_ranks), the optimizer state over all of
        dp x cp and of the expert-data-parallel group (HFSDP: costmodel/layout/megatron_fsdp.py)."""
        layout = self.layout
        w, g, o = self._per_param()
        experts = self.on_stage(stage, "expert_params")
        local = experts // layout.ep
        if layout.megatron_fsdp:
            groups = ((params - experts, gradient_params - experts, layout.shard_ranks, layout.optimizer_ranks),
                      (local, local, layout.expert_shard_ranks, layout.expert_data_parallel))
        else:  # Megatron-Core's distributed optimizer, DeepSpeed: over dp x cp and the expert-data-parallel group
            groups = ((params - experts, gradient_params - experts, layout.shard_ranks, layout.shard_ranks),
                      (local, local, layout.expert_data_parallel, layout.expert_data_parallel))
        out = {"weights": 0, "gradients": 0, "optimizer": 0}
        for held, gradient_held, ranks, optimizer_ranks in groups:
            shard = math.ceil(held / optimizer_ranks)
            out["weights"] += w * (math.ceil(held / ranks) if layout.zero >= 3 else held)
            out["gradients"] += g * (math.ceil(gradient_held / ranks) if layout.zero >= 2 else gradient_held)
            out["optimizer"] += o * (shard if layout.zero >= 1 else held)
            if layout.zero in self.framework.fp32_gradient_partition_stages and self.workload.dtype != "fp32":
                out["gradients"] += 4 * shard
            if self.gradient_cast_at_step:  # the fp32 copies of the gradients the rank updates
                out["gradients"] += 4 * (shard if layout.zero >= 1 else held)
        out["weights"] -= self.fp8_parameter_saving(stage)
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
                per_microbatch += math.ceil((self.load.factor - 1) * self.layer_sum(one, "expert_saved"))
            edge_inputs = (self.part("embedding", "inputs") if first else 0) + (
                self.part("head", "inputs") if last else 0)
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
        (the current and the prefetched one; DeepSpeed's buckets, not measured), and under
        Megatron-FSDP the layer's unsharded gradient too, in the reduce dtype, which its
        reduce-scatter reads (param_and_grad_buffer.py _bucket_group_gradient_reduce: fetch_bucket
        of the gradient buffer); a layer's routed experts the rank's E / ep."""
        layout = self.layout
        own = self.on_stage(stage, "buffers", per_stage=True)
        dp = layout.shard_ranks
        if dp == 1:
            return own
        if self.framework.sharding == "per_tensor":
            e = self.workload.bytes_per_element
            layer = dp * self._largest_layer("padded")
            root = dp * (self.on_stage(stage, "padded") - self.layer_sum(stage, "padded"))
            everything = dp * self.on_stage(stage, "padded")
            if layout.ep > 1:  # the experts gathered over dp / ep (layout/experts.py)
                layer, root, everything = (fsdp_gathered(self, stage, s) for s in ("largest", "root", "stage"))
            unsharded = (everything if layout.zero == 2 or layout.reshard_after_forward is False
                         else layer if layout.reshard_after_forward else root + layer)
            return own + e * unsharded + e * layer + 4 * layer
        if layout.zero >= 3:
            layer = max((self.part(key, "params") - self.part(key, "expert_params")
                         + self.part(key, "expert_params") // layout.ep for key in self.structure["layers"]), default=0)
            gathered = 2 * self.workload.bytes_per_element * layer
            if layout.megatron_fsdp:
                gathered += (4 if self._gradient_dtype == "fp32" else self.workload.bytes_per_element) * layer
            return own + gathered
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

    # -- the answer ---------------------------------------------------------------------------

    @cached_property
    def per_stage(self) -> list[dict[str, Any]]:
        rows = []
        for stage in self.stages:
            communication = self.communication(stage)
            unit = self.cfg.pipeline_unit  # the model's decoder layers, as --stage-layers counts them
            rows.append({"stage": stage.rank, "layers": sum(stage.layers) // unit,
                         "virtual_stage_layers": [n // unit for n in stage.layers],
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
            "precision": self.framework.precision_for(self.workload.dtype, self.layout.grad_reduce_dtype,
                                                      self.layout.pure_precision),
            **({"experts": self.experts()} if self.load is not None else {}),
            **({"offload": self.offloaded(self.stages[top["stage"]])} if self.layout.offload != "none" else {}),
        }

    def experts(self) -> dict[str, Any]:
        """The mixture of experts under this layout (costmodel/layout/experts.py)."""
        load = self.load
        return {"ep": self.layout.ep, "experts_per_rank": self.cfg.n_experts // self.layout.ep,
                "expert_data_parallel": self.layout.expert_data_parallel,
                "load_factor": float(load.factor), "most_loaded_ep_rank": load.rank,
                "dropped_fraction": float(1 - load.kept), "capacity_factor": self.layout.capacity_factor,
                "ep_dispatcher": self.layout.ep_dispatcher}
