"""A layout's step time with the kernel-level model (`simulate --time-model kernels` with a layout,
`plan --time-model kernels`, and the `published` comparison's second column).

The same StepTime (costmodel/layout/time.py: stages, bubble, overlap conventions, optimizer, and
the one communication model, costmodel/collectives.py), with one part replaced: a part's compute
is its leaves' kernels on one tensor-parallel rank (costmodel/kernel_time.py: GEMM tiles and waves
at the measured large-GEMM efficiency, attention's executed FLOPs), the leaves' shapes the rank's
share (layout/split.py's substitution: h -> h / tp, d_ff -> d_ff / tp, the vocabulary, and the
tokens of the norms and adds under sequence parallelism) at the rank's n (n / cp under context
parallelism). What a layout does to a leaf's time is the roofline's rule, from the same work
entries' flags (layout/roofline_parts.py: leaf_factor, fp8_share): the attention core cp times the rank's
tree's, the experts at the most loaded EP rank's share, and under --fp8 the linear layers' GEMMs
at the FP8 peak and its large-GEMM efficiency (a second KernelTimer; memory-bound kernels as bf16).

Fast enough for plan, which times hundreds of layouts: a rank's kernels are read from the cost tree
once per what they depend on, kept in this process and on disk (layout/rank_kernel_cache.py);
a kernel's seconds are kept per KernelTimer (one per hardware and dtype). A warm plan imports no
sympy.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ..attention_kernels import DEFAULT_KERNEL
from ..eager_ops import eager_step_seconds
from ..hardware import Efficiency, Hardware
from ..kernel_facts_file import fuses_qkv, host_op_fields
from ..kernel_time import (AttentionCall, Gemm, KernelTimer, Pointwise, MatmulCompute,
                           check_kernel_model, kernels_seconds)
from .fp8 import RECIPES
from .parts import Stage
from .rank import ParallelEstimate
from .rank_kernel_cache import Entry, rank_kernels
from .gpt_oss_eager import stage_seconds as gpt_oss_seconds
from .host_syncs import moe_layers
from .grouped_quantize import applies as quantize_applies, stage_seconds as quantize_stage_seconds
from .permute_fusion import applies as permute_applies, stage_seconds as permute_stage_seconds
from .router_fusion import applies as router_applies, stage_seconds as router_stage_seconds
from .roofline_parts import fp8_share, leaf_factor
from .step_parts import eager_launch_seconds, host_bound_parts, stream_seconds
from .time import StepTime

_PARTS: dict[tuple, tuple[dict[str, tuple[float, int]], dict[str, float]]] = {}  # a rank's parts, per timers
_TIMERS: dict[tuple, tuple[Hardware, KernelTimer]] = {}


def _timer(hardware: Hardware, dtype: str, attention: str, efficiency: Efficiency | None,
           compiled: bool, matmul_dtype: str | None = None, sustained: bool = False,
           w8a8: bool = False, attention_kernel: str = DEFAULT_KERNEL, decode_kernel: str | None = None,
           operand_bytes: float | None = None) -> KernelTimer:
    """One KernelTimer (and so one memo of kernel seconds) per hardware object and options."""
    key = (id(hardware), dtype, attention, efficiency, compiled, matmul_dtype, sustained, w8a8, attention_kernel,
           decode_kernel, operand_bytes)
    held = _TIMERS.get(key)
    if held is None or held[0] is not hardware:
        held = _TIMERS[key] = (hardware, KernelTimer(hardware, dtype, attention, efficiency=efficiency,
                                                     compiled=compiled, matmul_dtype=matmul_dtype,
                                                     sustained=sustained, w8a8=w8a8,
                                                     attention_kernel=attention_kernel, decode_kernel=decode_kernel,
                                                     operand_bytes=operand_bytes))
    return held[1]


def training_host_ops(estimate: ParallelEstimate, timer: KernelTimer, autocast: bool = False) -> tuple[int, int] | None:
    """The ops an eager training step issues on each rank's host, where the kernel model weighs them
    against its kernels, as (the layers' ops, the step's own) (eager_ops.training_step_ops_split: per
    layer x the layers, plus the step's own; one GPU's count): a training step, no FP8, not compiled,
    not under autocast, on a hardware that issues ahead and states an op's time
    (KernelTimer.host_s_per_op); else None. A rank of any layout issues its stage's share of them
    (stage_host_ops): each data-parallel rank runs the whole step, each tensor-parallel rank every
    layer's module code on its shards, each pipeline stage its layers'. The count is the plain loop's
    (forward, backward, torch's AdamW), so a lower bound wherever the step issues more, which only adds
    ops: the collectives' calls (tp, dp, pp), recomputation's second forward, micro-batches' passes,
    FSDP2's hooks, DeepSpeed's engine, a pipeline's embedding and per-stage optimizer (the step's own
    ops are counted on the last stage alone)."""
    if (estimate.phase != "train" or timer.host_s_per_op is None or autocast
            or estimate.layout.fp8 is not None):
        return None
    from ..eager_ops import training_step_ops_split

    return training_step_ops_split(estimate.cfg, estimate.workload)


def inference_host_ops(estimate: ParallelEstimate, implementation: str | None) -> tuple[int, int] | None:
    """The ops one eager inference step (a prefill or a decode step) issues on each tensor-parallel
    rank's hosts, where the kernel model weighs them against the rank's kernels (KernelStepTime.token),
    as (the layers' ops, the step's own): the counted decoding step of `implementation`
    (eager_ops.step_ops_split, kernel_facts.json "eager_step_ops": per layer x the layers, plus the
    step's own; what one GPU's simulate counts), the same on every tensor-parallel rank (each runs
    every layer's module code on its shards). The tensor-parallel all-reduce calls' ops are not added:
    no count of them is measured (gpt-fast's funcol.all_reduce and its wait are a few ops a layer), so
    the count is a lower bound at tp > 1. None: no implementation named, not an inference phase, or
    no counted implementation matches. A code whose every layer reads the GPU (DecodeStepOps.syncs_per_layer:
    lit-gpt d16f924d) is refused in its eager decode steps: one GPU's simulate times them a window a layer
    (generate_windows.layer_windows_seconds), which a stage's one max(kernels, host) would drop."""
    if implementation is None or estimate.phase == "train":
        return None
    from ..config import ConfigError
    from ..eager_ops import decode_step_ops, step_ops_split
    from ..spec import DEFAULT_FP8_GEMM

    workload = estimate.workload
    quantization = {"weight_dtype": workload.weight_dtype,
                    "fp8_gemm": None if workload.fp8_gemm == DEFAULT_FP8_GEMM else workload.fp8_gemm}
    counted = decode_step_ops(estimate.cfg, implementation, workload.dtype, workload.attention, workload.kv_cache,
                              quantization)
    if estimate.phase == "decode" and counted is not None and counted.syncs_per_layer:  # (the prefill: one window)
        raise ConfigError(f"--decode-code {implementation}: its step reads the GPU in every layer, timed one window "
                          f"a layer by simulate on one GPU (no layout: --tp, --pp, --dp), not by a layout's step.")
    return step_ops_split(estimate.cfg, implementation, workload.dtype, workload.attention, workload.kv_cache,
                          quantization)


def stage_host_ops(estimate: ParallelEstimate, split: tuple[int, int], stage: Any) -> float:
    """A pipeline stage's share of the step's ops (inference_host_ops' or training_host_ops' split):
    its layers' share of the layers' ops (by their number: exact where every layer counts the same
    ops), and the step's own ops (the embedding, the final norm, the head, the loop's sampling or the
    loss and the optimizer's per-list calls) on the last stage; with no pipeline the whole count."""
    layers, own = split
    if estimate.layout.pp == 1:
        return layers + own
    total = sum(len(s.layers) for s in estimate.stages)
    return layers * len(stage.layers) / total + (own if stage.last else 0)


class KernelStepTime(StepTime):
    """StepTime with kernel-level compute (communication as every StepTime's)."""

    def __init__(self, estimate: ParallelEstimate, hardware: Hardware, efficiency: Efficiency | None = None,
                 flops_convention: str = "dense", cuda_graphs: bool = False, overlap: Any = None,
                 compiled: bool = False, autocast: bool = False, attention_kernel: str = DEFAULT_KERNEL,
                 host_syncs: tuple[str, ...] | None = (), implementation: str | None = None,
                 decode_kernel: str | None = None, moe_op_fuser: bool = False):
        """attention_kernel: the fused attention kernel the run calls (KernelTimer's). host_syncs: the
        CUDA graph scopes a Megatron-Core training run captures (default none: eager), each
        micro-batch adding what its MoE layers' host syncs expose (layout/host_syncs.py: Megatron's
        default, priced where the hardware states a module call's host time); cuda_graphs: the whole
        iteration captured (no sync); None: the host runs ahead (no host term). implementation:
        the code an inference step runs (spec.DECODE_CODES), whose counted ops an eager step's host
        issues (inference_host_ops; token); None: no host term. decode_kernel: the kernel a decode step's
        attention runs (KernelTimer's; kernel_facts.json decode_attention_kernels), a decode step's only.
        moe_op_fuser: Megatron-Core's use_transformer_engine_op_fuser (layout/gpt_oss_eager.py)."""
        super().__init__(estimate, hardware, efficiency, flops_convention, cuda_graphs, overlap, autocast)
        # a training step captured whole (cuda_graphs) syncs nowhere: Megatron's full_iteration scope
        self.host_syncs = host_syncs if host_syncs is None or not cuda_graphs else (*host_syncs, "full_iteration")
        self.implementation = implementation
        self.moe_op_fuser = moe_op_fuser
        self.traced_ring = compiled and estimate.layout.framework == "fsdp2"  # torch's CP ring compiled (context.py)
        self.fused_qkv = fuses_qkv(implementation)  # gpt-fast's wqkv: one GEMM (rank_kernels)
        self.replayed = cuda_graphs and estimate.phase == "decode"  # a decode step from a CUDA graph: no host term
        check_kernel_model(hardware)
        # A decode step replayed from a CUDA graph: each kernel's GPU-side gap (kernel_time.KernelTimer).
        self.graph_kernel_s = hardware.graph_kernel_s if cuda_graphs and estimate.phase == "decode" else 0.0
        workload = estimate.workload
        # A training step keeps the GPU saturated: its GEMMs at the sustained (power-limited)
        # matmul efficiency where the hardware file states one (kernel_time.KernelTimer).
        sustained = estimate.phase == "train"
        # Quantized weights: each GEMM reads the rank's shard as stored (tree_kernels._gemms at the
        # rank's shapes); fp8 weights W8A8 where StepTime found the hardware runs it.
        self.timer = _timer(hardware, workload.dtype, workload.attention, efficiency, compiled, sustained=sustained,
                            w8a8=self.w8a8, attention_kernel=attention_kernel,
                            decode_kernel=decode_kernel if estimate.phase == "decode" else None)
        self.attention_kernel = attention_kernel
        # --fp8: the linear layers' GEMMs on the recipe's tensor cores (layout/fp8.py Recipe.peak: fp8,
        # mxfp8 or fp4, at that peak's measured efficiency or fp8's: Hardware.efficiency_dtype;
        # StepTime checked the peak), their operands read as the recipe casts them (Recipe.gemm_operand_bytes).
        recipe = None if estimate.layout.fp8 is None else RECIPES[estimate.layout.fp8]
        self.fp8_timer = None if recipe is None else \
            _timer(hardware, workload.dtype, workload.attention, efficiency, compiled,
                   matmul_dtype=recipe.peak, sustained=sustained,
                   attention_kernel=attention_kernel, operand_bytes=recipe.gemm_operand_bytes)
        # ... and the recipe's casts beside them, memory-bound at the dtype's timer (layout/fp8.py).
        self.casts = fp8_casts(estimate, hardware)

    @cached_property
    def prices_host_syncs(self) -> bool:
        """Whether each micro-batch adds its MoE layers' exposed host time (layout/host_syncs.py): a
        Megatron-Core training step whose MoE layers sync, on a hardware that states a module call's
        host time (host_module_call_s; elsewhere step() says the term is left out)."""
        from .host_syncs import applies

        return (self.host_syncs is not None and applies(self.estimate, self.host_syncs)
                and self.hardware.host_module_call_s is not None)

    def stage(self, stage: Any) -> dict[str, float]:
        """StepTime's stage, with the host time the MoE layers' syncs expose (prices_host_syncs)."""
        times = super().stage(stage)
        # Megatron-Core's unfused router, permutations, per-expert casts (layout/router_fusion.py, permute_fusion.py,
        fuser = self.moe_op_fuser  # grouped_quantize.py)
        if router_applies(self.estimate) or permute_applies(self.estimate) or quantize_applies(self.estimate, fuser):
            layers, bandwidth = moe_layers(self.estimate, stage), self.timer.bandwidth
            times["compute"] += (router_stage_seconds(self.estimate, self.hardware, layers, bandwidth)
                                 + permute_stage_seconds(self.estimate, self.hardware, layers, bandwidth)
                                 + quantize_stage_seconds(self.estimate, self.hardware, layers, fuser))
        # ... and GPT-OSS's eager clamp and rotary embedding beside its fused kernels (layout/gpt_oss_eager.py)
        times["compute"] += gpt_oss_seconds(self.estimate, self.hardware, stage, self.timer.bandwidth, fuser)
        if self.prices_host_syncs:
            from .host_syncs import stage_host_seconds

            gpu = sum(times[k] for k in ("compute", "tp", "ep", "cp", "amax"))
            times["host"] = stage_host_seconds(self.estimate, self.hardware, stage, gpu, self.host_syncs)
        return times

    def host_syncs_note(self) -> dict[str, str]:
        """The step's note where its MoE layers sync but the hardware states no module call's time."""
        from .host_syncs import applies

        if self.host_syncs is None or self.prices_host_syncs or not applies(self.estimate, self.host_syncs):
            return {}
        return {"host_syncs_note": f"the MoE layers' host syncs are not priced: the hardware file "
                                   f"{self.hardware.name} states no host_module_call_s (a module call's host time)."}

    def step(self) -> dict[str, Any]:
        """StepTime's step (with host_syncs_note where its MoE layers' syncs are left out); an eager
        training step of a counted implementation on a GPU (an op's host time: Hardware.eager_op_s,
        the file's or borrowed, "op_time_note" says so) takes the longer of its kernels (less the
        slowest stage's per-block launches in each pass it charges, m micro-batches and the bubble's,
        which the host's term stands for, each kernel keeping its GPU-side launch cost in each pass:
        step_parts.stream_seconds, as a decoding step's kernels keep it) and the busiest rank's ops at that time (training_host_ops,
        stage_host_ops; eager_ops.eager_step_seconds, as an eager decoding step does): a rank cannot
        finish its step before its host has issued it. One GPU: its whole step. "host" says which."""
        step = {**super().step(), **self.host_syncs_note()}
        split = training_host_ops(self.estimate, self.timer, self.autocast)
        if split is None:
            return step
        estimate, layout = self.estimate, self.estimate.layout
        ops = max(stage_host_ops(estimate, split, stage) for stage in estimate.stages)
        host = self.timer.host_seconds(ops)
        # the launches of the stage StepTime.step charges per micro-batch, m times and the bubble's, less what its
        # kernels keep on the GPU's side (the one rule: KernelTimer.stream_seconds, step_parts.stream_seconds)
        slowest = estimate.stages[step["slowest_stage"]]
        per_microbatch = eager_launch_seconds(self, slowest) - stream_seconds(self, slowest, passes=3)
        kernels = step["seconds"] - (launches := (layout.microbatches + layout.bubble()) * per_microbatch)
        seconds = eager_step_seconds(step["seconds"], launches, host)
        tokens = step["tokens_per_second"] * step["seconds"]
        scale = step["seconds"] / seconds
        step.update(seconds=seconds, tokens_per_second=tokens / seconds, mfu=step["mfu"] * scale,
                    hfu=step["hfu"] * scale, tflops_per_gpu=step["tflops_per_gpu"] * scale,
                    host={"ops_per_step": ops, "seconds_per_step": host, "kernels_seconds": kernels,
                          "without_host_seconds": step["seconds"], "bound": host >= kernels,
                          **host_op_fields(self.hardware)},
                    **host_bound_parts(step, per_microbatch, layout.microbatches, layout.bubble(), seconds, kernels))
        return step

    def token(self) -> dict[str, Any]:
        """StepTime's token; an eager inference step on a GPU (not compiled; a decode step not replayed
        from a CUDA graph) whose ops are counted (inference_host_ops) takes, on each stage, the longer
        of its kernels with their exposed communication (less the per-block launches, which the host's
        term stands for) and its hosts' ops (stage_host_ops) at the hardware's eager_op_s (the file's or
        borrowed), as one GPU's eager step does (eager_ops.eager_step_seconds): at tp 1 the same
        seconds. The stages one after the other (a stage's host issues once its input is on the way: a
        pipeline does not hide the host). "host" says which bound."""
        token = super().token()
        estimate = self.estimate
        split = None if self.replayed else inference_host_ops(estimate, self.implementation)
        if split is None or self.timer.host_s_per_op is None:
            return token
        compute = seconds = kernels_total = host_total = 0.0
        bound = False
        stage_ops = [stage_host_ops(estimate, split, stage) for stage in estimate.stages]
        for stage, ops in zip(estimate.stages, stage_ops):
            times = self.stage(stage)
            launches = self.overhead_s * sum(count * self.part_seconds.get(key, (0.0, 0))[1]
                                             for key, count in self.part_runs(stage).items())
            # the kernels alone: the host's ops stand for the launches, not for the GPU-side cost each kernel keeps
            # (the one rule: KernelTimer.stream_seconds, step_parts.stream_seconds)
            gaps = stream_seconds(self, stage)
            stage_compute = times["compute"] - launches + gaps
            kernels = stage_compute + times["tp"] + times["ep"] + times["cp"] + times["pp"]  # StepTime.token's order
            host = ops * self.timer.host_s_per_op
            compute, kernels_total, host_total = compute + stage_compute, kernels_total + kernels, host_total + host
            seconds += eager_step_seconds(kernels, 0.0, host)
            bound = bound or host >= kernels
        token.update(seconds_per_token=seconds, compute_seconds=compute,
                     tokens_per_second=estimate.workload.batch * estimate.layout.dp / seconds,
                     host={"ops_per_step": sum(split), "seconds_per_step": host_total,
                           "kernels_seconds": kernels_total, "bound": bound, **host_op_fields(self.hardware),
                           # under a pipeline each rank issues its stage's share, the stages one after the other: the
                           # busiest rank's ops ("6,136 ops on each rank's host" was the whole step's at pp 2)
                           **({"ops_per_rank": round(max(stage_ops))} if estimate.layout.pp > 1 else {})})
        return token

    @cached_property
    def kernel_entries(self) -> list[Entry]:
        """The rank's leaves' kernels as this step's timer runs them (rank_kernels; read by layout/async_tp.py)."""
        timer = self.timer
        return rank_kernels(self.estimate, timer.fused_attention, timer.compiled, self.autocast, self.fused_qkv)

    @cached_property
    def part_kernels(self) -> dict[str, int]:
        """Per part (one run of its leaves on one rank): the kernels its leaves launch (launches_of)."""
        out: dict[str, int] = {}
        for key, _, launches, kernels in rank_kernels(self.estimate, self.timer.fused_attention, self.timer.compiled,
                                                      self.autocast, self.fused_qkv):
            out[key] = out.get(key, 0) + (len(kernels) if launches else 0)
        return out

    @cached_property
    def part_reruns(self) -> dict[str, int]:
        """Per part (one run of its leaves on one rank): its launching leaves whose forward a recomputation
        reruns (rerun_kernels: any), each paying its launches once more (StepTime.compute)."""
        out: dict[str, int] = {}
        if self.estimate.phase != "train":
            return out
        for key, rerun, launches, _ in rank_kernels(self.estimate, self.timer.fused_attention, self.timer.compiled,
                                                     self.autocast, self.fused_qkv):
            out[key] = out.get(key, 0) + int(bool(launches and rerun))
        return out

    @cached_property
    def part_seconds(self) -> dict[str, tuple[float, int]]:
        """Per part (one run of its leaves on one rank): the kernels' seconds and how many of
        its leaves run any kernel (what the per-block overhead is paid for); attention_seconds:
        the attention core's share of each part (what a context-parallel ring's sends overlap)."""
        timer, fp8_timer, estimate = self.timer, self.fp8_timer, self.estimate
        entries = rank_kernels(estimate, timer.fused_attention, timer.compiled, self.autocast, self.fused_qkv)
        work = estimate.structure["work"]
        if [w["key"] for w in work] != [entry[0] for entry in entries]:
            raise AssertionError("the kernel model's leaves are not the layout's work entries, in order.")
        rules = tuple((leaf_factor(w, estimate), fp8_share(w, estimate)) for w in work)
        casts = leaf_casts(self.casts, work, estimate.layout)
        memo = (id(entries), id(timer), id(fp8_timer), rules, casts)
        if memo not in _PARTS:
            _PARTS[memo] = _parts(entries, rules, timer, fp8_timer, estimate.phase == "train",
                                  [w.get("attention_core", False) for w in work], casts,
                                  [w.get("experts", False) for w in work])
        out, self.attention_seconds, self.expert_seconds, self.leaf_seconds = _PARTS[memo]
        out = self._with_sequential_experts(out, entries, work, rules)
        out = self._with_ring_steps(self._with_ring_merges(out, entries, work), entries, work)
        return self._with_all_to_all_call(out, entries, work)

    def _with_sequential_experts(self, out: dict[str, tuple[float, int]], entries: list[Entry],
                                 work: list[dict], rules: tuple) -> dict[str, tuple[float, int]]:
        """Without --moe-grouped-gemm, Megatron-Core's SequentialMLP on each routed-expert leaf: its experts' own
        GEMMs, the loop's copies and launches (layout/sequential_mlp.py), times the leaf's layout factor; under impl hf
        transformers' loop over every expert, with its host syncs (layout/hf_moe_loop.py)."""
        from . import hf_moe_loop, sequential_mlp

        rule = next((m for m in (sequential_mlp, hf_moe_loop) if m.applies(self.estimate)), None)
        if rule is None:
            return out
        layer_seconds = rule.layer_seconds
        out, self.expert_seconds, self.leaf_seconds = dict(out), dict(self.expert_seconds), list(self.leaf_seconds)
        for index, ((key, rerun, _, kernels), entry, (factor, fp8)) in enumerate(zip(entries, work, rules)):
            if entry.get("experts") and any(isinstance(k, Gemm) and k.count > 1 for k in kernels):
                timer = self.fp8_timer if fp8 and self.fp8_timer is not None else self.timer
                delta = factor * layer_seconds(self.estimate, self.hardware, kernels, rerun, timer)
                total, active = out[key]
                out[key] = (total + delta, active)
                self.leaf_seconds[index] += delta
                self.expert_seconds[key] = self.expert_seconds.get(key, 0.0) + delta
        return out

    def _with_ring_steps(self, out: dict[str, tuple[float, int]], entries: list[Entry],
                         work: list[dict]) -> dict[str, tuple[float, int]]:
        """Under context parallelism the ring's cp - 1 unmasked half-block calls in place of cp - 1 of
        the tree's causal calls, where the kernel publishes unmasked figures (layout/ring_steps.py);
        the forward's again where the layer is recomputed."""
        layout = self.estimate.layout
        if layout.cp == 1 or self.estimate.phase != "train" or layout.cp_rotate == "a2a":
            return out
        from .ring_steps import ring_step_delta, unmasked_points

        points = unmasked_points(self.attention_kernel, self.hardware.architecture)
        if points is None:
            return out
        return self._with_core_delta(out, entries, work,
                                     lambda call: ring_step_delta(call, layout.cp, self.timer, points))

    def _with_all_to_all_call(self, out: dict[str, tuple[float, int]], entries: list[Entry],
                              work: list[dict]) -> dict[str, tuple[float, int]]:
        """Under --cp-rotate a2a a rank runs one causal call over all n tokens of its heads / cp
        (context.all_to_all_call) in place of the tree's call at n / cp that leaf_factor counts cp
        times: the same FLOPs, at the kernel's efficiency at n keys; the forward's again where the
        layer is recomputed."""
        layout = self.estimate.layout
        if layout.cp == 1 or self.estimate.phase != "train" or layout.cp_rotate != "a2a":
            return out
        from .context import all_to_all_call

        def delta(call: AttentionCall) -> tuple[float, ...]:
            whole = all_to_all_call(call, self.estimate.cfg, layout)
            seconds = self.timer.attention_seconds
            return tuple(seconds(whole, backward) - layout.cp * seconds(call, backward) for backward in (False, True))

        return self._with_core_delta(out, entries, work, delta)

    def _with_core_delta(self, out: dict[str, tuple[float, int]], entries: list[Entry], work: list[dict],
                         delta_of: Any) -> dict[str, tuple[float, int]]:
        """Each attention core's part plus delta_of(its call): (forward, backward) seconds, the
        forward's twice where the layer is recomputed; added to the core's own seconds
        (compute_by_block) and to those a ring's sends hide under (time.py)."""
        out, self.attention_seconds = dict(out), dict(self.attention_seconds)  # not the memo's own
        self.leaf_seconds = list(self.leaf_seconds)
        for index, ((key, rerun, _, kernels), entry) in enumerate(zip(entries, work)):
            calls = [kernel for kernel in kernels if isinstance(kernel, AttentionCall)]
            if entry.get("attention_core") and calls:
                forward, backward = delta_of(calls[0])
                total, active = out[key]
                delta = forward * (2 if rerun else 1) + backward
                out[key] = (total + delta, active)
                self.leaf_seconds[index] += delta
                self.attention_seconds[key] = self.attention_seconds.get(key, 0.0) + delta
        return out

    def compute_by_block(self, stage: Stage) -> dict[str, float]:
        """One micro-batch's compute() on this pipeline rank by block (a leaf's path, summed over the
        rank's layers), largest first: the part_seconds split by leaf, an attention core's scores,
        softmax and weighted sum as one (a fused kernel runs them in one call), and what compute()
        adds beyond the leaves' kernels (the launches, FSDP2's ring merges) as "launches and other".
        Which block is to blame for the compute."""
        _ = self.part_seconds  # fills leaf_seconds
        runs, blocks = self.part_runs(stage), {}
        for leaf, seconds in zip(self.estimate.structure["work"], self.leaf_seconds):
            path = leaf["path"].rsplit(".", 1)[0] + ".core" if leaf.get("attention_core") else leaf["path"]
            if runs.get(leaf["key"]) and seconds:
                blocks[path] = blocks.get(path, 0.0) + runs[leaf["key"]] * seconds
        rest = self.compute(stage) - sum(blocks.values()) - (  # less the launches an eager step's host stands for
            eager_launch_seconds(self, stage) - stream_seconds(self, stage, passes=3)
            if training_host_ops(self.estimate, self.timer, self.autocast) else 0.0)
        if rest > 0:
            blocks["launches and other"] = rest
        return dict(sorted(blocks.items(), key=lambda item: -item[1]))

    def _with_ring_merges(self, out: dict[str, tuple[float, int]], entries: list[Entry],
                          work: list[dict]) -> dict[str, tuple[float, int]]:
        """Under context parallelism each attention core's ring also moves memory-bound passes
        beside its attention calls, at the timer's bandwidth, the forward's again where the layer
        is recomputed: torch's ring (FSDP2's framework: context_parallel) merges its blocks in fp32
        (context.ring_merge_bytes); Transformer Engine's (Megatron's p2p ring) copies half-blocks,
        corrects its output and accumulates dq and dkv in the attention's dtype
        (context.te_ring_bytes)."""
        layout = self.estimate.layout
        if layout.cp == 1 or self.estimate.phase != "train" or layout.framework not in ("fsdp2", "megatron"):
            return out
        if layout.framework == "megatron" and layout.cp_rotate != "ring":
            return out  # Transformer Engine's all-gather path (AttnFuncWithCPAndKVAllGather) not read
        from .context import ring_merge_bytes, te_ring_bytes

        merges = ring_merge_bytes if layout.framework == "fsdp2" else te_ring_bytes
        forward, backward = merges(self.estimate.cfg, self.estimate.workload, layout.cp, layout.tp, layout.cp_kv_heads)
        out = dict(out)
        for (key, rerun, _, kernels), entry in zip(entries, work):
            # the core's leaves share one fused call: the merges go with the leaf that runs it
            if entry.get("attention_core") and any(isinstance(kernel, AttentionCall) for kernel in kernels):
                total, active = out[key]
                passes = forward * (2 if rerun else 1) + backward
                out[key] = (total + passes / self.timer.bandwidth, active)
        return out


def fp8_casts(estimate: ParallelEstimate, hardware: Hardware) -> tuple | None:
    """What a training step's FP8 casts depend on (layout/fp8.py cast_bytes): the recipe's passes,
    whether the GPU needs column-major copies, the micro-batches, tp, sequence parallelism and FP8
    parameters (Layout.fp8_param_gather);
    None where nothing is cast or no source states the recipe's casts."""
    from .fp8_casts import CAST_PASSES, FRAMEWORK_CAST_PASSES, NON_TN_FP8_ARCHITECTURES
    from .fp8_options import fp8_parameters_held

    layout = estimate.layout
    casts = (None if layout.fp8 is None or estimate.phase != "train"
             else FRAMEWORK_CAST_PASSES.get((layout.fp8, layout.framework), CAST_PASSES[layout.fp8]))
    if casts is None:
        return None
    if layout.fp8_autocast is not None:  # the training script's te.Linear layers (layout/fp8_options.py)
        from dataclasses import replace

        from .fp8_options import FP8_AUTOCASTS

        scope = FP8_AUTOCASTS[layout.fp8_autocast]
        casts = replace(casts, fused_norm=scope.fused_norm, weight_once_per_step=scope.weight_once_per_step,
                        fused_activation=scope.fused_activation)
    return (casts, hardware.architecture not in NON_TN_FP8_ARCHITECTURES, layout.microbatches, layout.tp,
            bool(layout.sp), fp8_parameters_held(layout))


def leaf_casts(casts: tuple | None, work: list[dict], layout: Any) -> tuple:
    """Each leaf's casts (fp8_casts): the output head's where the training script runs it in FP8 under its
    autocast (layout/fp8_options.py head_fp8), its weight cast every micro-batch unless the scope caches it."""
    from dataclasses import replace

    from .fp8_options import FP8_AUTOCASTS, head_in_fp8

    if casts is None or not head_in_fp8(layout):
        return (casts,) * len(work)
    scope = FP8_AUTOCASTS[layout.fp8_autocast]
    head = (replace(casts[0], weight_once_per_step=scope.head_weight_once_per_step),) + casts[1:]
    return tuple(head if entry.get("head") else casts for entry in work)


def cast_kernel(gemms: list, casts: tuple | None, rerun: bool) -> list[Pointwise]:
    """The recipe's casts beside a leaf's FP8 GEMMs, as one memory-bound kernel (forward, backward)."""
    from .fp8_casts import cast_bytes

    shaped = [g for g in gemms if isinstance(g, Gemm)]  # MatmulCompute: no shapes, nothing charged
    if casts is None or not shaped:
        return []
    recipe, needs_tn, microbatches, tp, sp, fp8_params = casts
    forward, backward = cast_bytes(shaped, recipe, needs_tn=needs_tn, microbatches=microbatches, tp=tp,
                                   sequence_parallel=sp, rerun=rerun, fp8_params=fp8_params)
    return [Pointwise(forward, 0.0, backward)]


def _parts(entries: list[Entry], rules: tuple[tuple[float, float], ...], timer: KernelTimer,
           fp8_timer: KernelTimer | None, training: bool, attention: list[bool], casts: tuple = (),
           experts: list[bool] | None = None
           ) -> tuple[dict[str, tuple[float, int]], dict[str, float], dict[str, float], list[float]]:
    """Each part's seconds and active leaves, its attention core's seconds, its routed experts'
    (what the combined 1F1B's mlp phases run) and each leaf's: a leaf's kernels times its layout
    factor, an FP8 leaf's GEMMs on the FP8 timer and its recipe's casts (leaf_casts: one a leaf) on the dtype's."""
    out: dict[str, tuple[float, int]] = {}
    leaves: list[float] = []
    attention_seconds: dict[str, float] = {}
    expert_seconds: dict[str, float] = {}
    experts = experts or [False] * len(entries)
    casts = casts or (None,) * len(entries)
    def run(kernels: list, training: bool, fp8: bool, leaf: tuple | None, rerun: bool = False) -> float:
        if not fp8:
            return kernels_seconds(kernels, timer, training)
        gemms = [k for k in kernels if isinstance(k, (Gemm, MatmulCompute))]
        others = [k for k in kernels if not isinstance(k, (Gemm, MatmulCompute))]
        others += cast_kernel(gemms, leaf, rerun)
        return kernels_seconds(gemms, fp8_timer, training) + kernels_seconds(others, timer, training)

    for (key, rerun, launches, kernels), (factor, share), core, routed, leaf in zip(entries, rules, attention, experts,
                                                                                  casts):
        seconds = 0.0  # share of the leaf's runs in the FP8 recipe (its casts included), the rest at the dtype's
        for part, fp8 in ((share, True), (1.0 - share, False)):
            if part > 0:
                seconds += part * (run(kernels, training, fp8, leaf)
                                   + (run(rerun, False, fp8, leaf, rerun=True) if training else 0.0))
        seconds *= factor
        leaves.append(seconds)
        if core:
            attention_seconds[key] = attention_seconds.get(key, 0.0) + seconds
        if routed:
            expert_seconds[key] = expert_seconds.get(key, 0.0) + seconds
        total, active = out.get(key, (0.0, 0))
        out[key] = (total + seconds, active + int(launches))
    return out, attention_seconds, expert_seconds, leaves


def kernel_step(estimate: ParallelEstimate, hardware: Hardware, **options: Any) -> dict[str, Any]:
    return KernelStepTime(estimate, hardware, **options).step()
