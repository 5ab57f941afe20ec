"""Step time of a training layout: each stage's roofline compute, the communication that cannot
overlap, the pipeline bubble and the optimizer; MFU and HFU.

Nothing here is a formula of a block. A stage's micro-batch time is its leaves' training work
(costmodel/layout/parts.py: forward, backward, the recomputed forward) at the roofline's two kernels
per block (costmodel/hardware.kernel_times), plus the per-block overhead. Collectives, under both
time models, take NCCL's achievable bus bandwidth at their message size, hierarchically when their
group spans nodes (costmodel/collectives.py); the groups are laid out tensor-parallel ranks first,
then data-parallel, then pipeline (Megatron's order).

The overlap model (stated conventions, not measurements; each settable with Overlap):
- tensor-parallel collectives and pipeline sends are on the critical path (exposed); under full
  recomputation the re-run forward's tensor-parallel collectives count again
  (ParallelEstimate.recomputed_collectives);
- the gradient all-reduce or reduce-scatter of DDP and ZeRO-1/2 overlaps the last micro-batch's
  backward (two thirds of its compute); ZeRO-1/2's parameter all-gather after the optimizer step
  is exposed;
- FSDP2 and ZeRO-3 gather and scatter each micro-batch while it computes (prefetch): only what
  exceeds its compute is exposed; FSDP2's one call per unit (ParallelEstimate.data_parallel_calls),
  each paying its latency, the root's and first layer's exposed, and its copy-out and reduce-scatter
  copy-in on the compute stream, each micro-batch, memory-bound (layout/fsdp_copies.py);
- the pipeline bubble is Layout.bubble() micro-batches of the slowest stage ((p - 1)/v for
  GPipe, 1F1B and interleaving; a third of 1F1B's for ZB-H1 and DualPipeV, a sixth for ZB-V);
  under Overlap.ep those micro-batches run alone (the combined 1F1B's warm-up and cool-down), their
  all-to-all exposed;
- expert parallelism's all-to-alls are exposed, except under DualPipeV, which hides them behind
  the other chunk's compute (DeepSeek-V3 report, section 3.2.1), and the stated share Overlap.ep
  of what Megatron-Core's combined 1F1B's paired steps hide (--overlap-moe-expert-parallel-comm;
  its warm-up forwards and cool-down backwards run alone, exposed; in a paired step the MoE layers'
  comm and compute streams are walked phase by phase, the compute beside an exchange on the SMs
  the dispatcher leaves: layout/combined_1f1b.py, StepTime.ep_paired_hidden);
- the optimizer step is a memory-bound pass over the rank's shard, as a fused optimizer makes it (Megatron-LM's
  fp16 optimizer: its five passes; nanotron's ZeRO-1: its copy loop; torchtitan's AdamW and clipping: torch_optimizer.py;
  Megatron-LM's step, Layout.optimizer_step "megatron-lm": its gradient buffer's zero, NaN check and scale: megatron_step.py);
- under torch.autocast (`autocast=True`: fp32 parameters, as PyTorch Lightning's precision "bf16"
  runs them) each micro-batch casts the rank's weights and their gradients and accumulates the
  gradients in fp32 (autocast_bytes_per_parameter in costmodel/precision.py), a memory-bound
  pass on the critical path;
- pipelined steps (facts of Megatron-LM's code, ParallelEstimate.pipeline_exchange): the sends
  block (exposed), scattered over the tensor-parallel ranks and all-gathered on the receiver where
  the framework does (Framework.pp_scatter_gather); a tied embedding's gradient is all-reduced
  between the first and the last stage once a step, exposed; in fp16, where the framework does not
  fuse gradient accumulation into the weight-gradient GEMM, each micro-batch after the first adds
  its gradient in place, a memory-bound pass (Framework.fp16_gradient_accumulation; under
  autocast that pass is autocast's);
- DeepSpeed's pipeline engine (Framework.pp_partition_meta, pp_output_regather,
  pp_reduce_after_backward, bf16_pipeline_optimizer): a partition meta sent with each tensor, each
  sent output all-gathered again before its backward, the data-parallel gradients reduced after
  the last backward (no overlap), and in bf16 the BF16_Optimizer's fp32 accumulation at the end of
  every micro-batch's backward (in the micro-batch's time, so in the bubble's too) and its passes
  over the fp32 gradient once a step (with the optimizer).
MFU counts the model FLOPs of a named convention (costmodel/model_flops.py: dense or causal; no
recomputation, not even flash's recompute of Q K^T); HFU counts what the kernels execute, the
recomputed forwards included.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

from ..collectives import collective_seconds, ring_factor
from ..config import ConfigError
from ..hardware import Efficiency, Hardware
from ..model_flops import check_convention
from ..quantized_matmul import runs_w8a8, w8a8_peak
from ..spec import RECOMPUTED_LAYERS
from .fp8 import RECIPES
from .dtensor_copies import copy_seconds as dtensor_copy_seconds
from .dp_time import DataParallelTime
from .fsdp_copies import copy_seconds
from .megatron_step import step_seconds as megatron_step_seconds
from ..embedding_grad import dense_grad_bytes
from .overlap import Overlap, check_ep_overlap  # noqa: F401 (Overlap)
from .rank import ParallelEstimate, Stage
from .roofline_parts import roofline_part_seconds
from .zero_optimizer import gather_copy_seconds


class StepTime(DataParallelTime):
    """The step time of one ParallelEstimate on one machine."""
    traced_ring = False  # torch's CP ring under torch.compile, its collectives waited at once (layout/context.py)

    def __init__(self, estimate: ParallelEstimate, hardware: Hardware, efficiency: Efficiency | None = None,
                 flops_convention: str = "dense", cuda_graphs: bool = False, overlap: Overlap | None = None,
                 autocast: bool = False):
        self.estimate, self.hardware = estimate, hardware
        self.autocast = autocast
        self.overlap = overlap or Overlap()
        layout = estimate.layout
        if self.overlap.params and not (layout.framework == "megatron" and layout.zero in (1, 2)):
            raise ConfigError("--param-gather-overlap is Megatron-Core's --overlap-param-gather, the parameter "
                              "all-gather of its distributed optimizer (--framework megatron --zero 1 or 2); "
                              f"this layout ({layout.framework}, ZeRO {layout.zero}) has none to overlap.")
        if not self.overlap.align_grad and not (layout.framework == "megatron" and layout.schedule == "interleaved"):
            raise ConfigError("--no-align-grad-reduce moves each model chunk's gradient reduce in Megatron-Core's "
                              "interleaved schedule (--framework megatron --schedule interleaved); this layout "
                              f"({layout.framework}, {layout.schedule}) has no chunks to align.")
        if self.overlap.ep:
            check_ep_overlap(estimate)
        self.flops_convention = check_convention(flops_convention)
        # Launch overhead per block; none for decode steps replayed from a CUDA graph. What such a
        # replay still takes per kernel (hardware.graph_kernel_s) needs the kernels: the kernel
        # model's KernelStepTime charges it (part_kernels); the roofline states no kernels.
        self.overhead_s = 0.0 if cuda_graphs and estimate.phase == "decode" else hardware.overhead_s_per_block
        self.graph_kernel_s = 0.0
        eff = efficiency or Efficiency(**hardware.efficiency)
        dtype = estimate.workload.dtype
        self.peak = hardware.peak(dtype)
        self.flops_per_s = self.peak * eff.compute
        self.fp8_per_s = None
        if estimate.layout.fp8 is not None:  # the linear layers' products at the recipe's peak (layout/fp8.py:
            hardware.require_fp8(estimate.layout.fp8)  # fp8; mxfp8 or fp4 for the block-scaled recipes)
            self.fp8_per_s = hardware.flops_per_s[RECIPES[estimate.layout.fp8].peak] * eff.compute
        self.vector_per_s = hardware.vector_flops_per_s * eff.compute
        self.bytes_per_s = hardware.bandwidth_bytes_per_s * eff.memory
        # fp8 weights (inference) run W8A8 where the hardware has an FP8 peak and --fp8-gemm allows
        # it (quantized_matmul.runs_w8a8), as on one device.
        self.w8a8 = estimate.phase != "train" and runs_w8a8(estimate.workload.weight_format, hardware)
        self.w8a8_per_s = w8a8_peak(hardware, eff) if self.w8a8 else None
        layout = estimate.layout
        # Expert parallelism (layout/experts.py): the ep group is ep neighbouring ranks of those it
        # is drawn from (Layout.expert_ranks); the expert-data-parallel group strides over the rest,
        # tp x cp x dp neighbouring GPUs in all (Megatron-Core's expert grid, order tp-cp-ep-dp-pp).
        # Context parallelism's ranks sit between tp and dp (Megatron's order tp-cp-dp-pp); the
        # gradients are reduced over dp x cp.
        # Hybrid sharding's mesh is (replicate, shard), the shard group innermost (neighbours,
        # within a node where tp x dp_shard x cp fits one); the replicas stride over all of dp.
        shard = layout.shard_ranks
        self.spans = {"tp": layout.tp, "dp": layout.tp * shard, "pp": layout.gpus,
                      "dp_replicate": layout.tp * layout.dp * layout.cp,
                      "ep": layout.ep_span, "edp": layout.tp * layout.cp * layout.dp,
                      "cp": layout.tp * layout.cp, "etp": layout.expert_tp}  # the experts' etp neighbouring ranks
        self.worlds = {"tp": layout.tp, "dp": shard, "dp_replicate": layout.replicas, "pp": 2, "ep": layout.ep,
                       "edp": layout.expert_shard_ranks,
                       "cp": layout.cp, "etp": layout.expert_tp}
        # Delayed scaling's amax reduction group (Megatron-Core parallel_state.get_amax_reduction_group
        # with_context_parallel=True: TP x DP x CP, its tensor_and_data_parallel_group_with_cp, since
        # core_r0.11.0; TP x CP under --tp-only-amax-red, core_r0.8.0's only group), neighbouring ranks;
        # under --fp8-autocast (FSDP2, PP 1) the default group, every rank: the same product.
        self.worlds["amax"] = self.spans["amax"] = layout.tp * layout.cp * (1 if layout.tp_only_amax_red else layout.dp)

    def collective(self, group: str, kind: str, payload: float, calls: int = 1) -> float:
        """Seconds of `calls` collectives moving `payload` bytes in all: the one communication
        model (costmodel/collectives.py), under every time model. kind: a collective, or one of
        the tensor-parallel all-reduces tensor_parallel_collectives names by its tensor
        ("loss_all_reduce", "optimizer_all_reduce"), whose dtype (collective_dtype) decides
        whose code runs it under Layout.all_reduce "intra-node"."""
        dtype = self.estimate.collective_dtype(group, kind)
        kind = "all_reduce" if kind in ("loss_all_reduce", "optimizer_all_reduce") else kind
        if not payload or not ring_factor(kind, self.worlds[group]):
            return 0.0
        return collective_seconds(self.hardware, kind, payload, self.worlds[group], self.spans[group], calls,
                                  self.estimate.layout.all_reduce, dtype)

    def flex_dispatch(self, payload: float) -> float:
        """Seconds of the flex dispatcher's dispatches and combines whose inputs are `payload` bytes
        (each token once): the expected copies over the inter-node link and NVLink for the EP
        group's ranks a node (costmodel/layout/experts.py flex_copies) times the payload."""
        if not payload:
            return 0.0
        from .experts import check_dispatcher_peers, flex_seconds

        cfg = self.estimate.cfg
        rates = check_dispatcher_peers(self.estimate.layout, self.hardware)
        return flex_seconds(self.hardware, payload, cfg.n_experts, cfg.top_k, cfg.expert_groups,
                            cfg.expert_groups_per_token, self.worlds["ep"], self.spans["ep"], rates)

    @cached_property
    def part_seconds(self) -> dict[str, tuple[float, int]]:
        """Per part (one run of its leaves): its kernels' roofline seconds, and how many run an op
        (overhead); attention_seconds and expert_seconds beside (layout/roofline_parts.py)."""
        out, self.attention_seconds, self.expert_seconds = roofline_part_seconds(self)
        return out

    @property
    def part_kernels(self) -> dict[str, int]:
        """Per part (one run of its leaves): the kernels it launches; the roofline states none."""
        return {}

    @cached_property
    def part_reruns(self) -> dict[str, int]:
        """Per part (one run of its leaves): how many of its leaves a recomputation reruns the forward of
        (the work's "rerun": Leaf.rerun runs an op), each launching its kernels once more."""
        out: dict[str, int] = {}
        for leaf in self.estimate.structure["work"]:
            out[leaf["key"]] = out.get(leaf["key"], 0) + int(leaf.get("rerun", False))
        return out

    def compute(self, stage: Stage) -> float:
        """One micro-batch's forward (and backward, training) on one rank of this pipeline stage: the parts'
        seconds and the leaves' launches, each active leaf's once a pass (3 in training: a backward runs about
        twice the forward's ops) and once more where a recomputation reruns its forward (part_reruns: Megatron's
        CheckpointFunction.backward calls ctx.run_function(*detached_inputs) again, megatron/mpu/random.py at
        cbad126, as torch.utils.checkpoint does: the forward's kernels launched again)."""
        seconds, active, kernels, reruns = 0.0, 0, 0, 0
        for key, count in self.part_runs(stage).items():
            part, blocks = self.part_seconds.get(key, (0.0, 0))
            seconds += count * part
            active += count * blocks
            kernels += count * self.part_kernels.get(key, 0)
            reruns += count * self.part_reruns.get(key, 0)
        passes = 3 if self.estimate.phase == "train" else 1  # a backward runs about twice the forward's ops
        return seconds + (passes * active + reruns) * self.overhead_s + passes * kernels * self.graph_kernel_s

    def recomputed_layers_share(self) -> float:
        """Under full recomputation of N layers, the layers the pipeline recomputes (N of each
        stage's, stages.stage_kinds) over the tree's N (its recomputed_flops counts N layers); else 1."""
        estimate = self.estimate
        recomputed = estimate.workload.recompute_layers
        if recomputed is None or estimate.phase != "train":
            return 1.0
        keys = [key for key, (_, kind) in estimate.structure["layers"].items() if kind == RECOMPUTED_LAYERS]
        return sum(estimate.layer_runs(stage).get(key, 0) for stage in estimate.stages for key in keys) / recomputed

    def part_runs(self, stage: Stage) -> dict[str, int]:
        """How many times each part's leaves run on this rank in one micro-batch."""
        runs: dict[str, int] = {"shared": len(stage.layers), **self.estimate.layer_runs(stage)}
        if stage.first:
            runs["embedding"] = 1
        if stage.last:
            runs["tail"] = runs["head"] = 1
        return runs

    def tensor_parallel(self, stage: Stage) -> tuple[float, float]:
        """Seconds of a micro-batch's tensor-parallel collectives, and of the step's (SP's norm gradients)."""
        per_microbatch = per_step = 0.0
        collectives = self.estimate.tensor_parallel_collectives(stage) + self.estimate.recomputed_collectives(stage)
        for kind, calls, payload in collectives:
            if kind == "optimizer_all_reduce":
                per_step += self.collective("tp", kind, calls * payload, calls)
            else:
                per_microbatch += self.collective("tp", kind, calls * payload, calls)
        return per_microbatch, per_step

    def stage(self, stage: Stage) -> dict[str, float]:
        """One micro-batch of this rank: compute, tensor-parallel and pipeline communication."""
        layout, m = self.estimate.layout, self.estimate.layout.microbatches
        communication = self.estimate.communication(stage)
        tp_microbatch, tp_step = self.tensor_parallel(stage) if layout.tp > 1 else (0.0, 0.0)
        exchange = self.pipeline(stage)
        # Expert parallelism's all-to-alls are on the critical path, but for Overlap.ep's share.
        all_to_all = self.collective("ep", "all_to_all", communication.get("ep", {}).get("all_to_all", 0) / m) \
            + self.flex_dispatch(communication.get("ep", {}).get("flex", 0) / m)
        if layout.expert_split == "etp":  # the dispatcher's gather and scatter (layout/experts.py): on its path
            calls, payload = self.estimate.expert_tensor_parallel(stage)
            all_to_all += sum(self.collective("etp", kind, payload, calls) for kind in ("all_gather", "reduce_scatter"))
        compute = self.compute(stage)
        fused_calls = None
        if self.overlap.async_tp or self.overlap.ub:  # what Async TP's fused ops (layout/async_tp.py) or TE's
            from . import async_tp, ub_overlap  # userbuffers ops (layout/ub_overlap.py) hide and add

            fused, added = (async_tp if self.overlap.async_tp else ub_overlap).stage_terms(self, stage)
            compute += added  # Async TP's DTensor cats taken into its fused ops
            fused_calls = async_tp.fused_calls(self, stage) if self.overlap.async_tp else None
        # Delayed scaling's amax all-reduces (ParallelEstimate.amax_reductions): synchronous, on the
        # critical path, each latency-bound.
        amax = sum(self.collective("amax", "all_reduce", payload) for payload in self.estimate.amax_reductions(stage))
        # What each collective hides under the micro-batch's compute, in turn, never more than the
        # compute left: DualPipe's all-to-alls (a chunk's beside another's compute) or Overlap.ep's
        # share of them (Megatron-Core's combined 1F1B, the same idea), a ring's sends
        # (beside the attention on the block before, eager; an all-gather hides nothing), the tp and pp shares.
        left = compute
        if layout.schedule == "dualpipev":
            hidden_ep = min(all_to_all, left)
        else:  # the combined 1F1B's paired steps only (ep_paired_shares), what their paired layers hide
            all_to_all_share, compute_share = self.ep_paired_shares(stage) if self.overlap.ep else (0.0, 0.0)
            paired, beside = self.ep_paired_hidden(stage, all_to_all) if self.overlap.ep else (0.0, 0.0)
            hidden_ep = min(self.overlap.ep * all_to_all_share * paired, compute_share * left)
        left -= hidden_ep if layout.schedule == "dualpipev" else min(left, self.overlap.ep * all_to_all_share * beside)
        context = hidden_sends = 0.0
        cp = communication.get("cp", {})
        if cp:
            attention = sum(count * self.attention_seconds.get(key, 0.0)
                            for key, count in self.part_runs(stage).items())
            gathered = self.collective("cp", "all_gather", cp.get("all_gather", 0) / m)
            sent = self.collective("cp", "send", cp.get("send", 0) / m)
            # the Mamba-2 mixers' all-to-alls (layout/context.py): on the mixer's path, exposed
            mixers = self.collective("cp", "all_to_all", cp.get("all_to_all", 0) / m)
            hidden_sends = 0.0 if self.traced_ring else min(sent, attention, left)
            left -= hidden_sends
            context = gathered + sent - hidden_sends + mixers
        op_by_op = self.overlap.async_tp or self.overlap.ub
        hidden_tp = min(fused if op_by_op else self.overlap.tp * tp_microbatch, tp_microbatch, left)
        left -= hidden_tp
        hidden_pp = min(self.overlap.pp * exchange, left)
        hidden = hidden_ep + hidden_sends + hidden_tp + hidden_pp
        return {"compute": compute, "tp": tp_microbatch - hidden_tp, "ep": all_to_all - hidden_ep, "cp": context,
                "pp": exchange - hidden_pp, "tp_step": (1 - self.overlap.tp) * tp_step, "hidden_ep": hidden_ep,
                "amax": amax, "host": 0.0,  # the host's exposed time (KernelStepTime's MoE host syncs)
                "pp_step": self.tied_embedding(stage), "accumulation": self.gradient_accumulation(stage),
                "accumulation_microbatch": self.microbatch_accumulation(stage),
                "fsdp_copies": copy_seconds(self.estimate, stage, self.bytes_per_s),
                # DTensor's cat around each sequence-sharded TP collective (layout/dtensor_copies.py)
                "dtensor_copies": dtensor_copy_seconds(self.estimate, stage, self.bytes_per_s, fused_calls),
                # what runs hidden under this micro-batch's compute, and under the step's; the compute
                # beside it runs slower (Overlap.slowdown: the collectives' kernels hold SMs)
                "hidden": hidden, "hidden_step": self.overlap.tp * tp_step,
                # (the combined 1F1B's hidden all-to-all is net of its own SMs' cost: ep_paired_hidden)
                # (Async TP's copies run on copy engines, no SM held; userbuffers' SMs are split: their modules)
                "contention": self.overlap.contention((hidden if layout.schedule == "dualpipev" else hidden - hidden_ep)
                                                      - (hidden_tp if op_by_op else 0.0))}

    def ep_paired_hidden(self, stage: Stage, all_to_all: float) -> tuple[float, float]:
        """All-to-all seconds a paired step of the combined 1F1B hides, and the compute beside (paired_hidden)."""
        from .ep_paired import paired_hidden

        return paired_hidden(self, stage, all_to_all)

    def ep_paired_shares(self, stage: Stage) -> tuple[float, float]:
        """The shares of the expert all-to-all and of the compute in paired steps (layout/ep_paired.py)."""
        from .ep_paired import paired_shares

        return paired_shares(self, stage)

    def pipeline(self, stage: Stage) -> float:
        """Seconds of one micro-batch's pipeline exchange on this rank, exposed (Megatron-LM's
        sends block: p2p_communication.py waits on them and synchronizes): its sends, each a
        send/receive pair on a full-duplex link, and under scatter/gather the receivers'
        all-gathers over the tensor-parallel group (ParallelEstimate.pipeline_exchange)."""
        sends, gathers = self.pipeline_parts(stage)
        return sends + gathers

    def pipeline_parts(self, stage: Stage) -> tuple[float, float]:
        """pipeline()'s two terms, seconds a micro-batch: (the sends, the scatter/gather all-gathers)."""
        crossings, sent, gathered = self.estimate.pipeline_exchange(stage)
        if not crossings:
            return 0.0, 0.0
        # DeepSpeed's partition metas, sent beside each tensor, and its outputs gathered again
        metas, meta_bytes, regathers = self.estimate.pipeline_extras(stage)
        boundary = self.estimate.numbers["boundary"]
        return (self.collective("pp", "send", crossings * sent + metas * meta_bytes, crossings + metas),
                self.collective("tp", "all_gather", crossings * gathered + regathers * boundary,
                                (crossings if gathered else 0) + regathers))

    def tied_embedding(self, stage: Stage) -> float:
        """Seconds of the step's tied-embedding gradient all-reduce between the first and the
        last stage (exposed: Megatron-LM runs it after the backward, before the optimizer)."""
        return self.collective("pp", "all_reduce", self.estimate.tied_embedding_gradient(stage))

    def rank_params(self, stage: Stage) -> int:  # the stage's share and its copy of a tied embedding
        return self.estimate.on_stage(stage, "params") + self.estimate.tied_copy(stage)

    def gradient_accumulation(self, stage: Stage) -> float:
        """Seconds of one step's gradient accumulation passes where the framework does not fuse
        them into the weight-gradient GEMM (Framework.fp16_gradient_accumulation, fp16): each
        micro-batch after the first adds its gradient into the held one, reading both and
        writing one, 3 x the gradient dtype's bytes per parameter of the rank, memory-bound."""
        estimate, m = self.estimate, self.estimate.layout.microbatches
        params = self.rank_params(stage)
        framework, stages = estimate.framework, estimate.framework.fp16_accumulation_stages
        if m == 1 or estimate.workload.dtype != "fp16" or framework.fp16_gradient_accumulation is None \
                or self.autocast or (stages is not None and estimate.layout.zero not in stages):
            return 0.0  # (autocast_casts accumulates in fp32 itself)
        from ..step_bytes import in_place_add_bytes

        return (m - 1) * in_place_add_bytes(estimate.workload.bytes_per_element) * params / self.bytes_per_s

    def microbatch_accumulation(self, stage: Stage) -> float:
        """Seconds of the pass each micro-batch's backward ends with on this rank, where the
        framework runs one (0 elsewhere): DeepSpeed's BF16_Optimizer casts the rank's gradients to
        fp32 and adds them into its fp32 gradients (precision.bf16_optimizer_microbatch_bytes),
        memory-bound, inside the pipeline engine's backward step, so the bubble's micro-batches
        carry it too. With it, the embedding's dense gradient (costmodel/embedding_grad.py: torch's zeroed
        table, Megatron-Core's add into main_grad), on the first stage."""
        estimate = self.estimate
        embedding = dense_grad_bytes(estimate, stage, self.autocast) / self.bytes_per_s
        if not estimate.runs_bf16_optimizer or self.autocast:
            return embedding
        from ..step_bytes import bf16_optimizer_microbatch_bytes

        per_parameter = bf16_optimizer_microbatch_bytes(estimate.workload.bytes_per_element)
        return embedding + per_parameter * self.rank_params(stage) / self.bytes_per_s

    def optimizer(self, stage: Stage) -> float:
        """The optimizer's pass over the parameters this rank updates."""
        estimate = self.estimate
        params = self.rank_params(stage)
        sharded = estimate.layout.zero >= 1 or estimate.framework.sharding == "per_tensor"
        updated = math.ceil(params / estimate.layout.optimizer_ranks) if sharded else params
        layout = estimate.layout
        if layout.ep > 1:  # the rank's own experts, sharded over the expert-data-parallel group
            experts = estimate.on_stage(stage, "expert_params")
            local = experts // layout.ep
            updated = (math.ceil((params - experts) / layout.optimizer_ranks) + math.ceil(local / layout.expert_data_parallel)
                       if sharded else params - experts + local)
        seconds = updated * self.step_traffic() / self.bytes_per_s
        if estimate.runs_bf16_optimizer and not self.autocast:  # its passes over the whole fp32 gradient
            from ..step_bytes import bf16_optimizer_step_bytes

            seconds += params * bf16_optimizer_step_bytes(estimate.workload.bytes_per_element) / self.bytes_per_s
        if layout.optimizer_step == "megatron-lm":  # Megatron-LM's passes over its gradient buffer (megatron_step.py)
            from ..step_bytes import framework_step_bytes  # fp16: its passes hold the clipping's norm already

            own_passes = not self.autocast and framework_step_bytes(estimate) is not None
            seconds += megatron_step_seconds(params, updated, int(estimate.numbers["bytes.gradients"]), layout.dp,
                                             estimate.workload.dtype != "fp16", self.bytes_per_s, not own_passes,
                                             layout.megatron_release)
        return seconds + gather_copy_seconds(self, stage)  # nanotron's ZeRO-1 copies its gathered slices back

    def step_traffic(self) -> float:
        """Bytes the optimizer step moves per parameter it updates: one fused pass over the
        parameter's copies (ParamBytes.step_traffic), or the framework's own passes where it runs
        them (step_bytes.framework_step_bytes: Megatron-LM's fp16, DeepSpeed ZeRO-3's); with
        Megatron-Core's bf16 gradient reduce (Layout.grad_reduce_dtype) the gradient's cast to fp32
        too, whose copy the fused pass reads in place of the bf16 one (megatron_gradient_cast_bytes);
        with a precision-aware optimizer's narrower state (precision_aware_change), that state read
        and written once."""
        estimate = self.estimate
        from ..step_bytes import framework_step_bytes  # Megatron-LM's fp16 passes, DeepSpeed ZeRO-3's, torch's
        passes = None if self.autocast else framework_step_bytes(estimate)
        if passes is not None:
            return passes
        traffic = float(estimate.numbers["step_traffic"]) + 2 * estimate.precision_aware_change
        if estimate.gradient_cast_at_step:  # bf16 main_grad: cast to fp32, which the fused step then reads
            from ..step_bytes import FP32, megatron_gradient_cast_bytes

            traffic += megatron_gradient_cast_bytes(estimate.workload.bytes_per_element) + FP32 \
                - estimate.numbers["bytes.gradients"]
        return traffic

    def autocast_casts(self, stage: Stage) -> float:
        """Seconds of a step's autocast traffic on this rank (0 without autocast): every weight it
        holds cast and its gradient cast back and accumulated, once per micro-batch."""
        if not self.autocast:
            return 0.0
        from ..step_bytes import autocast_bytes_per_parameter

        estimate = self.estimate
        params = self.rank_params(stage)
        per_parameter = autocast_bytes_per_parameter(estimate.layout.microbatches,
                                                     estimate.workload.bytes_per_element)
        return params * per_parameter / self.bytes_per_s

    def token(self) -> dict[str, Any]:
        """Serving (an estimate of the decode phase): seconds per output token of the whole batch,
        the stages run one after the other, each with its tensor-parallel all-reduces, its expert
        all-to-alls and context-parallel exchange (each apart: an all-to-all is not an all-reduce),
        and the activations sent from stage to stage."""
        estimate, layout = self.estimate, self.estimate.layout
        stages = [self.stage(stage) for stage in estimate.stages]
        compute = sum(times["compute"] for times in stages)
        tp = sum(times["tp"] for times in stages)
        ep = sum(times["ep"] for times in stages)  # the experts' all-to-alls, exposed (not all-reduces)
        cp = sum(times["cp"] for times in stages)  # the context-parallel key/value exchange, exposed
        pp = sum(times["pp"] for times in stages)
        seconds = compute + tp + ep + cp + pp
        batch = estimate.workload.batch * layout.dp
        return {"seconds_per_token": seconds, "compute_seconds": compute,
                "tp_all_reduce_seconds": tp, "ep_all_to_all_seconds": ep, "cp_seconds": cp,
                "pp_seconds": pp, "tokens_per_second": batch / seconds}

    def step(self) -> dict[str, Any]:
        """Seconds per step and their split; MFU and HFU; tokens per second."""
        estimate, layout = self.estimate, self.estimate.layout
        m, p = layout.microbatches, layout.pp
        # The slowest rank is the first (the most layers and the embeddings), the last (the head)
        # or an inner one (it sends both ways): one of each kind stands for the rest.
        ranks = sorted({0, min(1, p - 1), p - 1})
        stages = [(estimate.stages[r], self.stage(estimate.stages[r])) for r in ranks]
        parts = ("compute", "tp", "ep", "cp", "pp", "amax", "contention", "accumulation_microbatch", "host",
                 "fsdp_copies", "dtensor_copies")
        slowest_stage, slowest = max(stages, key=lambda item: sum(item[1][k] for k in parts))
        per_microbatch = sum(slowest[k] for k in parts)
        # The bubble's passes are the pipeline's fill and drain: under the combined 1F1B (Overlap.ep)
        # warm-up forwards and cool-down backwards, which run alone, their all-to-all exposed.
        alone = 0.0 if layout.schedule == "dualpipev" else slowest["hidden_ep"]
        bubble = layout.bubble() * (per_microbatch + alone)
        splits = [(self.data_parallel_split(stage, times["compute"]), times) for stage, times in stages]
        dp = max(exposed for (exposed, _), _ in splits)
        # The step's own hidden collectives (data-parallel, the step's tensor-parallel ones) slow the
        # compute they run under as the micro-batches' do (in per_microbatch): the most any rank hides.
        hidden_step = max(times["hidden_step"] + dp_hidden for (_, dp_hidden), times in splits)
        hidden = m * slowest["hidden"] + hidden_step
        contention = m * slowest["contention"] + self.overlap.contention(hidden_step)
        optimizer = max(self.optimizer(stage) for stage, _ in stages)
        tp_step = max(times["tp_step"] for _, times in stages)
        pp_step = max(times["pp_step"] for _, times in stages)
        accumulation = max(times["accumulation"] for _, times in stages)  # per step (m * per_microbatch has the rest)
        casts = max(self.autocast_casts(stage) for stage, _ in stages)
        seconds = m * per_microbatch + bubble + dp + optimizer + tp_step + pp_step + accumulation + casts \
            + self.overlap.contention(hidden_step)
        numbers = estimate.numbers
        causal = "" if self.flops_convention == "dense" else "_causal"
        # Per rank at n / cp; the attention core's queries see all n keys: cp times the tree's.
        extra = layout.cp - 1
        model_flops = (numbers["model_flops" + causal] + extra * numbers["attention_flops" + causal]) \
            * m * layout.dp * layout.cp
        hardware_flops = (numbers["executed_flops"] + extra * numbers["attention_executed_flops"]
                          + numbers["recomputed_flops"] * self.recomputed_layers_share()) * m * layout.dp * layout.cp
        tokens = estimate.workload.batch * estimate.workload.dimensions(estimate.cfg)["n"] * m * layout.dp
        capacity = self.hardware.datasheet_peak(estimate.workload.dtype) * layout.gpus  # MFU's denominator
        return {
            "seconds": seconds,
            "compute_seconds": m * slowest["compute"],
            # expert and context parallelism's own entries where the layout has them
            "exposed_communication_seconds": {"tp": m * slowest["tp"] + tp_step,
                                              **({"ep": m * slowest["ep"]} if layout.ep > 1 else {}),
                                              **({"cp": m * slowest["cp"]} if layout.cp > 1 else {}),
                                              "pp": m * slowest["pp"] + pp_step, "dp": dp,
                                              **({"amax": m * slowest["amax"]} if slowest["amax"] else {})},
            "bubble_seconds": bubble,
            "optimizer_seconds": optimizer,
            "gradient_accumulation_seconds": accumulation + m * slowest["accumulation_microbatch"],
            "autocast_seconds": casts,
            **({"host_sync_seconds": m * slowest["host"]} if slowest["host"] else {}),
            **({"fsdp_copy_seconds": m * slowest["fsdp_copies"]} if slowest["fsdp_copies"] else {}),
            **({"dtensor_copy_seconds": m * slowest["dtensor_copies"]} if slowest["dtensor_copies"] else {}),
            "hidden_communication_seconds": hidden,
            "overlap_contention_seconds": contention,
            "bubble_fraction": layout.bubble() / m,
            "slowest_stage": slowest_stage.rank,
            "mfu": model_flops / (seconds * capacity),
            "hfu": hardware_flops / (seconds * capacity),
            "model_flops": model_flops,
            "flops_convention": self.flops_convention,
            "tokens_per_second": tokens / seconds,
            "tflops_per_gpu": hardware_flops / seconds / layout.gpus / 1e12,
        }
