"""What one rank of a layout sends per training step (or decode step): its collectives' payloads, and the bytes on the wire.

A collective's payload is its full buffer: the output of an all-gather, the input of a
reduce-scatter, the buffer of an all-reduce, the tensor of a send or receive. Wire bytes apply
the ring algorithm's factors: 2(w - 1)/w for an all-reduce, (w - 1)/w for an all-gather or a
reduce-scatter over w ranks. Counts of collectives and the frameworks' rules only: the payloads
are sums of the parts' quantities (costmodel/layout/parts.py) over what a rank holds
(costmodel/layout/rank.py, whose ParallelEstimate these methods are part of).
"""

from __future__ import annotations

import math

from ..spec import RECOMPUTED_LAYERS, RECOMPUTED_PARTS
from .experts import expert_width
from .fp8 import FP8_PARAM_BYTES
from .fsdp_pipeline import gathers, pipelined
from .parts import LATENT_GATHERS, Stage, uses_loss_parallel
from .replicated_kv import kv_gradient_all_reduce
from .zero_optimizer import all_reduces, flat_calls

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def ring(kind: str, world: int) -> float:
    """Wire bytes per payload byte: 2(w - 1)/w for an all-reduce, (w - 1)/w for an all-gather,
    a reduce-scatter or an all-to-all (a rank's own share stays)."""
    if world <= 1:
        return 0.0
    return 2 * (world - 1) / world if kind == "all_reduce" else (world - 1) / world


class RankCommunication:
    """ParallelEstimate's communication: the payloads a rank of a pipeline stage sends, by group
    and collective, and their wire bytes. A part of ParallelEstimate (costmodel/layout/rank.py),
    whose sums over a rank's parts (on_stage, tied_copy, layer_runs, the part numbers) it reads."""

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

        layout, m = self.layout, self.layout.microbatches
        if layout.tp > 1:
            for kind, calls, payload in self.tensor_parallel_collectives(stage):
                if kind == "optimizer_all_reduce":  # once per step, not per micro-batch
                    add("tp", "all_reduce", calls * payload)
                else:
                    add("tp", "all_reduce" if kind == "loss_all_reduce" else kind, m * calls * payload)
        if layout.cp > 1 and self.phase == "train":
            from .context import exchange, mamba_exchange

            attention = self.layer_count(stage, "attentions")  # the layers that attend
            # full recomputation re-runs a recomputed layer's forward, its exchange with it
            full = self.workload.recompute == "full"
            recomputed = self.layer_count(stage, "attentions", recomputed_only=True) if full else 0
            moved = exchange(self.cfg, self.workload, layout.cp, layout.cp_rotate, attention, layout.tp,
                             layout.cp_kv_heads, recomputed,
                             transformer_engine=layout.framework == "megatron") if attention else {}
            mixers = self.layer_count(stage, "mamba_mixers")
            if mixers:  # Megatron-Core's all-to-alls around each Mamba-2 mixer
                rerun = self.layer_count(stage, "mamba_mixers", recomputed_only=True) if full else 0
                for kind, value in mamba_exchange(self.cfg, self.workload, layout.cp, mixers, layout.tp, rerun).items():
                    moved[kind] = moved.get(kind, 0) + value  # beside the attention's (--cp-rotate a2a)
            for kind, value in moved.items():
                add("cp", kind, m * value)
        if layout.reduces_gradients:
            for group, kinds in self._data_parallel_groups(stage).items():
                for kind, value in kinds.items():
                    add(group, kind, value)
        if layout.ep > 1:
            add("ep", "all_to_all", m * self._all_to_all(stage))
            if layout.ep_dispatcher != "alltoall":
                add("ep", "flex", m * self._flex_dispatch(stage))
            if layout.expert_split == "etp":  # the dispatcher's gather and scatter over the experts' etp ranks
                _, payload = self.expert_tensor_parallel(stage)
                add("etp", "all_gather", m * payload)
                add("etp", "reduce_scatter", m * payload)
        if layout.pp > 1:
            crossings, sent, gathered = self.pipeline_exchange(stage)
            add("pp", "send", m * sent * crossings)
            add("pp", "recv", m * sent * crossings)
            add("tp", "all_gather", m * gathered * crossings)  # scatter/gather's receivers
            metas, meta_bytes, regathers = self.pipeline_extras(stage)
            add("pp", "send", m * metas * meta_bytes)
            add("pp", "recv", m * metas * meta_bytes)
            add("tp", "all_gather", m * regathers * self.numbers["boundary"])  # DeepSpeed's output, again
            add("pp", "all_reduce", self.tied_embedding_gradient(stage))
        return out

    def pipeline_exchange(self, stage: Stage) -> tuple[int, int, int]:
        """One micro-batch's pipeline sends on this rank: how many tensors it sends (as many as
        it receives), the bytes of each, and the bytes each receiver all-gathers over the
        tensor-parallel group (0 unless the framework scatters and gathers).
        Each (virtual) stage sends its output forward unless it is the last and its input's
        gradient backward unless it is the first (training: inference sends forward only); it
        receives as much (FINDINGS 10.4). A send
        is the boundary (b n d elements); under sequence parallelism the rank's 1/tp shard of
        it; without, Megatron-LM's scatter/gather (Framework.pp_scatter_gather) sends 1/tp of
        it from each tensor-parallel rank and all-gathers the whole on the receiver (training
        steps; a decode step's sends are left as they were)."""
        layout = self.layout
        if layout.pp == 1:
            return 0, 0, 0
        crossings = 0
        for index in layout.stages_of(stage.rank):  # a V's turn (stage p - 1 to p) stays on a rank
            crossings += (int(index < layout.stages - 1 and layout.rank_of(index + 1) != stage.rank)
                          + int(self.phase == "train" and index > 0 and layout.rank_of(index - 1) != stage.rank))
        boundary = self.numbers["boundary"]
        if layout.sp:
            return crossings, boundary // layout.tp, 0
        if self.framework.pp_scatter_gather and layout.tp > 1 and self.phase == "train":  # decode: not modelled
            return crossings, boundary // layout.tp, boundary
        return crossings, boundary, 0

    def pipeline_extras(self, stage: Stage) -> tuple[int, int, int]:
        """DeepSpeed's pipeline engine beyond pipeline_exchange, one micro-batch on this rank
        (Framework.pp_partition_meta, pp_output_regather; training with tensor parallelism, no
        sequence parallelism): how many partition metas it sends (one with each tensor it sends:
        PartitionedTensor.to_meta()), the bytes of each (a LongTensor of the boundary's rank, its
        three sizes, the parts, the rank and the tp + 1 partition offsets: 8 (7 + tp) bytes), and
        how many times it all-gathers the whole boundary again (once for each output it sent
        forward, before that micro-batch's backward)."""
        layout, framework = self.layout, self.framework
        if layout.pp == 1 or layout.tp == 1 or layout.sp or self.phase != "train":
            return 0, 0, 0
        crossings = self.pipeline_exchange(stage)[0]
        metas = crossings if framework.pp_partition_meta else 0
        forward = sum(int(index < layout.stages - 1 and layout.rank_of(index + 1) != stage.rank)
                      for index in layout.stages_of(stage.rank))
        return metas, 8 * (7 + layout.tp) if metas else 0, forward if framework.pp_output_regather else 0

    @property
    def runs_bf16_optimizer(self) -> bool:
        """DeepSpeed's BF16_Optimizer (Framework.bf16_pipeline_optimizer): bf16, pipeline
        parallelism and the optimizer state sharded as ZeRO-1 shards it."""
        layout = self.layout
        return (self.framework.bf16_pipeline_optimizer and self.workload.dtype == "bf16" and layout.pp > 1
                and layout.zero == 1 and self.phase == "train")

    def tied_embedding_gradient(self, stage: Stage) -> int:
        """Bytes of the step's all-reduce of a tied word embedding's gradient between the first
        and the last pipeline stage, which both hold it (Megatron-LM training.py train_step,
        after the data-parallel all-reduce and before the optimizer, commit cbad126): the
        rank's V / tp rows in the gradient dtype; 0 on the other ranks, and on a rank that holds
        both (a V schedule's rank 0)."""
        if not (self.layout.pp > 1 and self.structure["tied"] and stage.first != stage.last):
            return 0
        fp32 = self._gradient_dtype == "fp32" or self.runs_bf16_optimizer  # the BF16_Optimizer's _hp_grad
        width = 4 if fp32 else self.workload.bytes_per_element
        return int(width * self.numbers["embedding_table"])

    def layer_count(self, stage: Stage, name: str, recomputed_only: bool = False) -> int:
        """How many of `name` (row_outputs, column_inputs, sublayers, latents) the stage's layers
        hold, summed over its layers of each kind (recomputed_only: those full recomputation of N
        layers recomputes, Workload.recompute_layers)."""
        counts = self.structure["counts"]
        return sum(count * counts.get(key, {}).get(name, 0) for key, count in self.layer_runs(stage).items()
                   if not recomputed_only or self.recomputed_kind(key))

    def recomputed_kind(self, key: str) -> bool:
        """Whether full recomputation re-runs the layers of part key `key`: every kind when it
        recomputes all layers, else only the kind of the N it recomputes (Workload.recompute_layers)."""
        return self.workload.recompute_layers is None or self.structure["layers"][key][1] == RECOMPUTED_LAYERS

    def recomputed_collectives(self, stage: Stage) -> list[tuple[str, int, int]]:
        """The collectives a recomputed forward runs again, per micro-batch: under full
        recomputation each layer's forward is re-run in the backward, its tensor-parallel
        collectives with it (Megatron-LM's mpu.checkpoint, megatron/mpu/random.py
        CheckpointFunction.backward re-runs the checkpointed layers' forward, commit 83c4d95 of
        June 2021; torch.utils.checkpoint does the same): the row-parallel outputs' all-reduces,
        or under sequence parallelism their reduce-scatters and the column-parallel inputs'
        all-gathers. The embedding and the head are not recomputed; selective recomputation
        re-runs only the attention core, which has none. torchtitan's op policy (costmodel/
        op_checkpoint.py) keeps the reduce-scatters' outputs (its _save_list): under sequence
        parallelism only the all-gathers rerun; without it, the all-reduces (not in the list).
        Latent attention under sequence parallelism: full recomputation reruns its forward
        gathers, a recomputation of its up-projections their own (latent_collectives)."""
        if self.phase != "train":
            return []
        if self.layout.tp > 1 and self.cfg.d_shared and "moe_layer" in RECOMPUTED_PARTS[self.workload.recompute]:
            from ..config import ConfigError

            raise ConfigError(f"recompute {self.workload.recompute!r} reruns {self.cfg.name}'s shared experts with "
                              "their MoE layer, and their tensor-parallel collectives rerun with them are not "
                              "modelled; use --tp 1 or another recomputation.")
        if self.layout.sp and "up_projections" in RECOMPUTED_PARTS[self.workload.recompute]:
            return self.latent_collectives(stage, passes=("up_projections",))  # their checkpoint's gathers
        if self.workload.recompute not in ("full", "torchtitan-op"):
            return []
        x, rows = self.numbers["boundary"], self.layer_count(stage, "row_outputs", recomputed_only=True)
        events = [("all_reduce", rows, x)] if not self.layout.sp else \
            [("reduce_scatter", rows if self.workload.recompute == "full" else 0, x),
             ("all_gather", self.layer_count(stage, "sublayers", recomputed_only=True), x),
             *self.latent_collectives(stage, passes=("forward",), recomputed_only=True)]
        return [event for event in events if event[1] and event[2]]

    def latent_collectives(self, stage: Stage, passes: tuple[str, ...], recomputed_only: bool = False
                           ) -> list[tuple[str, int, int]]:
        """Latent attention's collectives under sequence parallelism, one micro-batch's, per pass:
        "forward" all-gathers the query latent, the key/value latent and the RoPE key
        (LatentAttention.sequence_parallel_gathers, the part quantities LATENT_GATHERS); "backward"
        reduce-scatters their gradients and, where the framework regathers a column-parallel
        layer's input for its weight gradient (Megatron: Transformer Engine's column-parallel
        up-projections keep their input's shard), gathers the two latents again; "up_projections"
        the recomputed up-projections' own all-gathers of the two latents (Megatron-Core's
        mla_up_proj checkpoint reruns linear_q_up_proj and linear_kv_up_proj, which gather inside;
        the RoPE key was gathered before it). Each call moves one layer's tensor (the stage's
        latent attention layers are alike)."""
        layers = self.layer_count(stage, "latents", recomputed_only)
        if not layers:
            return []
        every = self.layer_count(stage, "latents")
        q, kv, rope = (self.layer_sum(stage, name) // every for name in LATENT_GATHERS)
        events = []
        if "forward" in passes:
            events += [("all_gather", layers, q), ("all_gather", layers, kv), ("all_gather", layers, rope)]
        if "backward" in passes:
            events += [("reduce_scatter", layers, q), ("reduce_scatter", layers, kv), ("reduce_scatter", layers, rope)]
            if self.framework.sp_regathers_input:
                events += [("all_gather", layers, q), ("all_gather", layers, kv)]
        if "up_projections" in passes:
            events += [("all_gather", layers, q), ("all_gather", layers, kv)]
        return [event for event in events if event[2]]

    def tensor_parallel_collectives(self, stage: Stage) -> list[tuple[str, int, int]]:
        """One micro-batch's tensor-parallel collectives as (kind, calls, payload of each call);
        "optimizer_all_reduce" (the norms' gradients) once per step; "loss_all_reduce" the
        vocabulary-parallel loss's all-reduces (each an all-reduce: collective_dtype says of what)."""
        n, layout = self.numbers, self.layout
        x = n["boundary"]

        def per_layer(name: str) -> int:
            return self.layer_count(stage, name)

        rows, columns, sublayers = per_layer("row_outputs"), per_layer("column_inputs"), per_layer("sublayers")
        first = int(stage.first)
        head_loss = int(stage.last and self.cfg.head == "lm")
        events: list[tuple[str, int, int]] = []
        if self.phase != "train":  # a forward (decode, prefill): the row-parallel outputs, then the logits gathered
            # A replicated vocabulary (Layout.vocab_parallel False, gpt-fast's tp.py) looks up the
            # embedding and computes every logit on each rank: neither collective runs.
            vocabulary = int(layout.vocab_parallel)
            events.append(("all_reduce", rows + first * vocabulary, x))
            if head_loss and vocabulary:
                events.append(("all_gather", 1, n["logits"]))
            return [event for event in events if event[1] and event[2]]
        if not layout.sp:
            # Forward: the row-parallel outputs and the embedding's; backward: the inputs of the
            # column-parallel layers and of the head.
            events.append(("all_reduce", rows + first + columns + head_loss, x))
            kv = kv_gradient_all_reduce(self.cfg, self.phase, layout.tp, x)  # a replicated K/V head (replicated_kv.py)
            if kv:
                events.append(("all_reduce", per_layer("attentions"), kv))
            latents = per_layer("latents")  # latent attention: its latents' gradient, each layer
            if latents:
                events.append(("all_reduce", latents, self.layer_sum(stage, "latent_gradient") // latents))
        else:
            gathers = sublayers + head_loss  # the inputs of the column-parallel regions
            scatters = rows + first  # the outputs of the row-parallel regions and the embedding
            regathers = gathers if self.framework.sp_regathers_input else 0  # Megatron, in backward
            events.append(("reduce_scatter", scatters + gathers, x))  # forward, and the gathers' gradients
            events.append(("all_gather", gathers + scatters + regathers, x))
            norms = self.on_stage(stage, "norm_params")
            reads = self.framework.norm_gradient_all_reduces
            events.append(("optimizer_all_reduce", reads, norms * n["bytes.gradients"]))
            events += self.latent_collectives(stage, passes=("forward", "backward"))
        if head_loss:
            if uses_loss_parallel(layout):
                events.append(("loss_all_reduce", 1, n["loss_reduction"]))
            else:
                events.append(("all_gather", 1, n["logits"]))
        return [event for event in events if event[1] and event[2]]

    def collective_dtype(self, group: str, kind: str) -> str:
        """The dtype of the tensor a collective of this group moves, which decides whether
        PyTorch's IntraNodeComm reduces it (bf16 only; costmodel/collectives.py): the
        vocabulary-parallel loss's max, sum and target logit in fp32 (parts.py loss_reduction);
        the norms' gradients under SP in the tree's gradient bytes (4: fp32); the data-parallel and
        tied-embedding gradients in the framework's gradient dtype; everything else (the
        tensor-parallel activations and their gradients) in the activations' dtype."""
        activations = self.workload.dtype
        if kind == "loss_all_reduce" or group == "amax":  # and delayed scaling's amaxes
            return "fp32"
        if kind == "optimizer_all_reduce":
            return "fp32" if self.numbers["bytes.gradients"] == 4 else activations
        if group in ("dp", "dp_replicate", "edp", "pp") and kind in ("all_reduce", "reduce_scatter"):
            return "fp32" if self._gradient_dtype == "fp32" else activations
        return activations

    def _expert_exchanges(self, stage: Stage) -> list[tuple[int, int, int, int]]:
        """Per kind of mixture-of-experts layer on this stage (and a multi-token prediction
        module's experts on the last): (layers, forwards, passes, routed slots of a micro-batch).
        forwards: the forward and, under full recomputation or Megatron-Core's "moe" module
        (spec.RECOMPUTED_PARTS "moe_layer": every MoE layer, the MTP depths' too), its re-run in
        backward (each sends the counts); passes: those and the backward, each a dispatch and a combine."""
        rerun = self.phase == "train" and self.workload.recompute == "full"
        moe_rerun = int(self.phase == "train" and "moe_layer" in RECOMPUTED_PARTS[self.workload.recompute])
        backward = int(self.phase == "train")  # inference (decode, prefill) runs the forward only
        out = []
        for key, count in self.layer_runs(stage).items():
            slots = self.part(key, "routed_slots")
            if not slots:  # a dense layer
                continue
            forwards = 1 + max(int(rerun and self.recomputed_kind(key)), moe_rerun)
            out.append((count, forwards, forwards + backward, slots))
        if stage.last and self.part("head", "routed_slots"):  # the MTP depths' (the head part holds every run)
            depths = max(self.cfg.mtp_layers, 1)
            out.append((depths, 1 + moe_rerun, 1 + moe_rerun + backward, self.part("head", "routed_slots") // depths))
        return out

    def _all_to_all(self, stage: Stage) -> int:
        """One micro-batch's all-to-all payload on this rank (costmodel/layout/experts.py): per
        mixture-of-experts layer the counts (8 E), dispatch and combine forward and (training) backward; and
        under full recomputation the recomputed layers' counts, dispatch and combine again (the
        checkpointed forward re-run in backward, as recomputed_collectives says for the
        tensor-parallel ones; measured: validate/distributed/experts.py, ExpertCase.checkpoint).
        Under the flex dispatcher only the counts: its tokens are _flex_dispatch's."""
        token = self.workload.bytes_per_element * expert_width(self.cfg)
        slot_bytes = 0 if self.layout.ep_dispatcher != "alltoall" else (self.load.sent + self.load.factor) * token
        counts = 8 * self.cfg.n_experts
        total = sum(layers * (counts * forwards + passes * slots * slot_bytes)
                    for layers, forwards, passes, slots in self._expert_exchanges(stage))
        return int(math.ceil(total))

    def expert_tensor_parallel(self, stage: Stage) -> tuple[int, int]:
        """One micro-batch's all-gathers (and as many reduce-scatters) over the expert-tensor-parallel
        group under expert tensor parallelism (layout/experts.py, "Expert tensor parallelism"): per
        mixture-of-experts layer and pass (forward, backward, a recomputed forward) one of each, of the
        etp ranks' received slots, etp S f d e bytes (the gathered tensor). (calls, payload of all of them)."""
        token = self.workload.bytes_per_element * expert_width(self.cfg)
        exchanges = self._expert_exchanges(stage)
        calls = sum(layers * passes for layers, _, passes, _ in exchanges)
        payload = sum(layers * passes * self.layout.expert_tp * slots * self.load.factor * token
                      for layers, _, passes, slots in exchanges)
        return calls, int(math.ceil(payload))

    def _flex_dispatch(self, stage: Stage) -> int:
        """One micro-batch's flex-dispatcher payload on this rank (layout/experts.py, "The flex
        dispatcher"): each dispatch and each combine takes the rank's tokens once (routed slots /
        top_k, d x e bytes each), forward and (training) backward, and again where recomputed."""
        token = self.workload.bytes_per_element * expert_width(self.cfg)
        return sum(layers * passes * 2 * (slots // self.cfg.top_k) * token
                   for layers, _, passes, slots in self._expert_exchanges(stage))

    def _data_parallel_groups(self, stage: Stage) -> dict[str, dict[str, int]]:
        """The data-parallel collectives by group: "dp", and under expert parallelism "edp" (the
        experts' own gradients over the dp / ep ranks that hold the same experts)."""
        dense_fp8, experts_fp8 = self.fp8_parameters(stage)
        if self.layout.ep == 1:
            return {"dp": self._data_parallel(stage, fp8=dense_fp8 + experts_fp8), **self._replicas(stage)}
        edp = self.layout.expert_data_parallel
        if self.framework.sharding == "per_tensor":  # FSDP2: torchtitan's placement (layout/experts.py)
            from .experts import fsdp_split

            (rest, experts), (rest_layers, expert_layers) = (fsdp_split(self, stage, s) for s in ("stage", "layers"))
            out = {"dp": self._data_parallel(stage, padded=(rest, rest_layers))}
            if edp > 1:
                out["edp"] = self._data_parallel(stage, ranks=edp, padded=(experts, expert_layers))
            return out
        experts = self.on_stage(stage, "expert_params")
        local = experts // self.layout.ep
        if self.layout.megatron_fsdp:  # the experts' inner group under HFSDP (Layout.expert_shard_ranks)
            edp = self.layout.expert_shard_ranks
        out = {"dp": self._data_parallel(stage, exclude=experts, fp8=dense_fp8)} if self.layout.shard_ranks > 1 else {}
        if edp > 1:
            out["edp"] = self._data_parallel(stage, params=local, ranks=edp, fp8=experts_fp8 // self.layout.ep)
        return {**out, **self._replicas(stage, experts=experts)}

    def _replicas(self, stage: Stage, experts: int = 0) -> dict[str, dict[str, int]]:
        """Hybrid sharding (Layout.dp_shard, FSDP2's HSDP): after each reduce-scatter over the shard
        group, the rank's gradient shard (the reduce-scatter's input over dp_shard x cp, in the
        reduce dtype) is all-reduced over the replicas, dp / dp_shard ranks holding the same shard
        (torch 2.13 torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce:
        reduce_scatter_tensor on reduce_scatter_group, then dist.all_reduce(reduce_output,
        group=all_reduce_group)); per micro-batch as the reduce-scatters are. Megatron-FSDP's HFSDP
        (costmodel/layout/megatron_fsdp.py) instead, once a step, reduce-scatters the rank's inner
        gradient shard over the replicas (in the reduce dtype) and all-gathers its updated weights
        back (in the weights' dtype): the shards of the rest over dp_shard x cp and, under expert
        parallelism, of the rank's experts (`experts`: the stage's) over the experts' inner group."""
        layout = self.layout
        if layout.replicas == 1:
            return {}
        if layout.megatron_fsdp:
            params = self.on_stage(stage, "params") + self.tied_copy(stage) - experts
            inner = math.ceil(params / layout.shard_ranks)
            if experts:
                inner += math.ceil(experts // layout.ep / layout.expert_shard_ranks)
            grad = 4 if self._gradient_dtype == "fp32" else self.workload.bytes_per_element
            return {"dp_replicate": {"reduce_scatter": grad * inner,
                                     "all_gather": self.workload.bytes_per_element * inner}}
        scattered = self._data_parallel(stage)["reduce_scatter"]
        return {"dp_replicate": {"all_reduce": scattered // self.layout.shard_ranks}}

    def _data_parallel(self, stage: Stage, exclude: int = 0, params: int | None = None,
                       ranks: int | None = None, padded: tuple[int, int] | None = None, fp8: int = 0) -> dict[str, int]:
        """The data-parallel collectives of one step (FSDP2 and ZeRO-3 gather and scatter per
        micro-batch); FSDP2's `padded`: the rank's padded elements of the stage and of its layers,
        where expert parallelism splits them (layout/experts.py fsdp_split); `fp8`: how many of the
        parameters are FP8 (--fp8-param-gather: gathered at FP8_PARAM_BYTES, layout/fp8.py). FSDP2 under
        torch's pipelining (layout/fsdp_pipeline.py): its reduce-scatters once a step, and at --zero 2
        its gathers as often as the pipeline runtime unshards the rank's stages."""
        layout, m, e = self.layout, self.layout.microbatches, self.workload.bytes_per_element
        dp = ranks or layout.shard_ranks
        grad = 4 if self._gradient_dtype == "fp32" else e
        if self.framework.sharding == "per_tensor":
            stage_padded, layer_padded = padded or (self.on_stage(stage, "padded"), self.layer_sum(stage, "padded"))
            everything, layers = dp * stage_padded, dp * layer_padded
            reshard = False if layout.zero == 2 else layout.reshard_after_forward
            backward = {None: layers, True: everything, False: 0}[reshard]
            # torchao's float8 all-gather (layout/fp8_options.py): the layers' FP8 weights at FP8_PARAM_BYTES
            light = (e - FP8_PARAM_BYTES) * fp8
            whole, again = e * everything - light, e * backward - (light if backward else 0)
            if pipelined(layout, self.framework):  # torch's pipeline runtime (layout/fsdp_pipeline.py)
                local = layout.virtual_stages if layout.schedule == "interleaved" else 1
                gathered = (whole * gathers(layout, stage.rank) // local if reshard is False
                            else m * (whole + again))
                return {"all_gather": gathered, "reduce_scatter": grad * everything}
            return {"all_gather": m * (whole + again), "reduce_scatter": m * grad * everything}
        if params is None:
            params = self.on_stage(stage, "params") + self.tied_copy(stage) - exclude
        padded = dp * math.ceil(params / dp)
        if layout.zero == 0:
            return {"all_reduce": grad * params}
        if self.runs_bf16_optimizer:  # its fp32 gradient all-reduced whole in bf16, then the bf16 shards gathered
            return {"all_reduce": e * padded, "all_gather": e * padded}
        if all_reduces(layout):  # nanotron's and InternLM's ZeRO-1: the whole gradient all-reduced (layout/zero_optimizer.py)
            return {"all_reduce": grad * params, "all_gather": e * padded - (e - FP8_PARAM_BYTES) * fp8}
        if layout.zero in (1, 2):
            return {"reduce_scatter": grad * padded, "all_gather": e * padded - (e - FP8_PARAM_BYTES) * fp8}
        return {"all_gather": m * 2 * e * padded, "reduce_scatter": m * grad * padded}

    def data_parallel_calls(self, stage: Stage, group: str, kind: str) -> int:
        """How many calls one micro-batch's `kind` over data-parallel `group` is issued as. FSDP2
        (per-tensor sharding) runs one collective per fully_shard unit, each layer (torchtitan's
        and llm-foundry's per-block wrapping) and the root (embeddings, final norm, head) where the
        stage holds it (torch 2.13 torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:
        FSDPParamGroup.unshard, one foreach all-gather, and post_backward, one reduce-scatter,
        per group): every unit's all-gather in forward, again in backward for each resharded one
        (the layers; the root too under reshard_after_forward True; none at --zero 2), a
        reduce-scatter (or HSDP's all-reduce over the replicas) per unit; the experts' own group
        (edp) one per MoE layer. Flat sharding (DeepSpeed, Megatron-FSDP): 1 (their buckets are
        not counted, a stated simplification), but InternLM's ZeRO-1 (layout/zero_optimizer.py flat_calls)."""
        if self.framework.sharding != "per_tensor":
            return flat_calls(self, stage, group, kind)
        runs = self.layer_runs(stage)
        if group == "edp":
            layers = sum(count for key, count in runs.items() if self.part(key, "expert_params"))
            root = 0
        else:
            layers = sum(runs.values())
            root = int(self.on_stage(stage, "padded") > self.layer_sum(stage, "padded"))
        if kind != "all_gather":
            return max(1, layers + root)
        again = {None: layers, True: layers + root, False: 0}[
            False if self.layout.zero == 2 else self.layout.reshard_after_forward]
        return max(1, layers + root + again)

    def wire(self, communication: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        """Bytes each rank puts on the wire, with the ring factors. The flex dispatcher's ("flex")
        depend on the ranks a node holds, which the hardware file says: layout/time.py's
        flex_dispatch reads them (layout/experts.py flex_copies), so they are left out here."""
        layout = self.layout
        sizes = {"tp": layout.tp, "dp": layout.shard_ranks, "dp_replicate": layout.replicas, "pp": 2, "ep": layout.ep,
                 "edp": layout.expert_shard_ranks, "cp": layout.cp, "etp": layout.expert_tp}
        out: dict[str, dict[str, int]] = {}
        for group, kinds in communication.items():
            for kind, payload in kinds.items():
                if kind == "flex":
                    continue
                factor = 1.0 if kind in ("send", "recv") else ring(kind, sizes[group])
                out.setdefault(group, {})[kind] = round(payload * factor)
        return out
