"""The data-parallel collectives of a training step under the overlap model (costmodel/layout/time.py's
docstring: DDP's and ZeRO-1/2's gradient collectives under the last micro-batch's backward, FSDP2's and
ZeRO-3's per micro-batch under its compute, Megatron-Core's interleaved chunks one by one with
layout/dp_overlap.py, DeepSpeed's pipeline engine after the last backward): seconds exposed and hidden.

A base of StepTime (it reads the StepTime's estimate, overlap and collective()), apart so that the step's
other terms have room in time.py.
"""

from __future__ import annotations

from .fp8 import FP8_PARAM_BYTES
from .fsdp_copies import edge_seconds
from .fsdp_pipeline import step_reduce
from .overlap import gathers_per_microbatch, reduces_after_backward
from .rank import Stage


class DataParallelTime:
    """StepTime's data-parallel terms: data_parallel, data_parallel_split, interleaved_data_parallel."""

    def data_parallel(self, stage: Stage, compute: float) -> float:
        """Exposed seconds of the step's data-parallel collectives (see the overlap model)."""
        return self.data_parallel_split(stage, compute)[0]

    def data_parallel_split(self, stage: Stage, compute: float) -> tuple[float, float]:
        """Seconds of the step's data-parallel collectives, (exposed, hidden under compute)."""
        layout, m = self.estimate.layout, self.estimate.layout.microbatches
        if not layout.reduces_gradients:
            return 0.0, 0.0
        communication = self.estimate.communication(stage)
        # Megatron-FSDP's HFSDP collectives over the replicas run once a step (megatron_fsdp.py)
        once = ("dp_replicate",) if layout.megatron_fsdp else ()
        groups = [(group, kind, value) for group in ("dp", "dp_replicate", "edp") if group not in once
                  for kind, value in communication.get(group, {}).items()]
        per_microbatch = gathers_per_microbatch(layout)
        reduced, groups = step_reduce(self, stage, groups)  # FSDP2 under torch's pipelining: once a step
        if per_microbatch:
            # one call per FSDP2 unit (layer, root) and micro-batch (data_parallel_calls)
            each = sum(self.collective(group, kind, value / m, self.estimate.data_parallel_calls(stage, group, kind))
                       for group, kind, value in groups)
            edge = min(each, edge_seconds(self, stage)) if self.overlap.prefetch else 0.0  # FSDP2's first units
            exposed = edge + max(0.0, each - edge - compute) if self.overlap.prefetch else each
            # once a step: the gradient shard's reduce-scatter after the last micro-batch's backward and the
            # weights' all-gather before the first forward, each beside one micro-batch's own under its compute
            step = sum(self.collective(group, kind, value) for group in once for kind, value in communication.get(group, {}).items())
            step_exposed = max(0.0, each + step - compute) - max(0.0, each - compute) if self.overlap.prefetch else step
            return m * exposed + step_exposed + reduced, m * (each - exposed) + step - step_exposed
        gradients = sum(self.collective(group, kind, value, self.estimate.data_parallel_calls(stage, group, kind))
                        for group, kind, value in groups if kind in ("all_reduce", "reduce_scatter"))
        parameters = sum(self.collective(group, kind, value, self.estimate.data_parallel_calls(stage, group, kind))
                         for group, kind, value in groups if kind == "all_gather")  # flat: 1 call, InternLM's: zero_optimizer.py
        # DeepSpeed's pipeline engine reduces after the schedule's last backward: nothing overlaps
        after_backward = reduces_after_backward(layout)
        if layout.schedule == "interleaved" and layout.framework == "megatron" and not after_backward:
            return self.interleaved_data_parallel(stage, compute, groups, gradients, parameters)
        exposed = max(0.0, gradients - (0.0 if after_backward else self.overlap.dp) * compute)
        gathered = max(0.0, parameters - self.overlap.params * compute / 3)  # under the first forward
        return exposed + gathered, gradients - exposed + parameters - gathered

    def interleaved_data_parallel(self, stage: Stage, compute: float, groups: list[tuple[str, str, int]],
                                  gradients: float, parameters: float) -> tuple[float, float]:
        """data_parallel_split under Megatron-Core's interleaved schedule, (exposed, hidden): each
        model chunk's gradient collective from the end of its last backward (r backwards later on
        pipeline rank r under Overlap.align_grad) under the chunk-backwards left on the rank, and each chunk's parameter
        all-gather under the forwards before its first (layout/dp_overlap.py). A chunk-backward is
        Overlap.dp of a micro-batch's compute over v, a chunk-forward Overlap.params of a third of
        it over v (the conventions of the other schedules, chunk by chunk). Without the overlap
        (Overlap.dp or Overlap.params 0) the whole buffer's collective is exposed, as elsewhere.
        Each chunk's payload is the group's payload times the chunk's share of the rank's
        parameters (the experts' for the experts' group; the tied embedding's copy with the last
        chunk), of its parameters' bytes for the all-gather under --fp8-param-gather."""
        from .dp_overlap import gather_exposure, gradient_exposure

        estimate, layout = self.estimate, self.estimate.layout
        chunks, group = layout.virtual_stages, layout.pp  # Megatron's microbatch_group_size_per_vp_stage
        experts = estimate.on_chunks(stage, "expert_params")
        rest = [params - expert for params, expert in zip(estimate.on_chunks(stage, "params"), experts)]
        rest[-1] += estimate.tied_copy(stage)
        gathered_rest = rest  # under --fp8-param-gather each chunk's gather weighs its bytes (layout/fp8.py)
        if layout.fp8_param_gather:
            e = estimate.workload.bytes_per_element
            fp8 = [f - expert for f, expert in zip(estimate.on_chunks(stage, "fp8_params"), experts)]
            gathered_rest = [e * r - (e - FP8_PARAM_BYTES) * f for r, f in zip(rest, fp8)]

        def per_chunk(gather: bool) -> list[float]:
            out = [0.0] * chunks
            for name, kind, value in groups:
                if (kind == "all_gather") != gather:
                    continue
                weights = experts if name == "edp" else gathered_rest if gather else rest
                for chunk in range(chunks) if sum(weights) else ():
                    out[chunk] += self.collective(name, kind, value * weights[chunk] / sum(weights))
            return out

        exposed = hidden = 0.0
        if self.overlap.dp:
            reduced = per_chunk(gather=False)
            late = sum(gradient_exposure(reduced, self.overlap.dp * compute / chunks, group, stage.rank,
                                         self.overlap.align_grad))
            exposed, hidden = late, sum(reduced) - late
        else:
            exposed = gradients
        if self.overlap.params:
            gathered = per_chunk(gather=True)
            waited = sum(gather_exposure(gathered, self.overlap.params * compute / (3 * chunks), group, stage.rank))
            exposed, hidden = exposed + waited, hidden + sum(gathered) - waited
        else:
            exposed += parameters
        return exposed, hidden
