"""The base class of a serving step's time model (StepTime) and what both models share: the
leaf quantities a step sums (QUANTITIES), the CUDA-graph copy, a decode run's plans and the sum of
the context leaves over a step's sequences.

StepTime(...) builds the model time_model_for names; each model registers itself here by its
time_model when its class is defined (kernel_steptime.py, roofline_steptime.py), so this module
imports neither and neither imports the other (tests/test_imports.py). Callers import from
steptime.py, which imports both models, so both are registered before StepTime(...) is called.
"""

from __future__ import annotations

from typing import Any

from ..hardware import time_model_for
from .graphs import EAGER, CudaGraphs

QUANTITIES = ("flops_matmul", "bytes_matmul", "flops_other", "bytes_other")


class StepTime:
    """seconds(query, context): one step of sequences with query[i] new tokens attending to
    context[i] keys (its cached tokens plus the new ones); `emitting` of them produce a token.

    StepTime(...) builds the time model time_model_for(hardware, time_model) names: a
    KernelStepTime (the default where the hardware file has sm_count or gemm_efficiency_by_rows)
    or a RooflineStepTime."""

    time_model = ""
    graphs: CudaGraphs = EAGER  # the engine's CUDA graphs (graphs.py); eager unless with_graphs says
    models: dict[str, type] = {}  # time_model -> its subclass, filled as each is defined

    def __init_subclass__(cls, **options: Any):
        super().__init_subclass__(**options)
        if cls.time_model and cls.time_model not in StepTime.models:
            StepTime.models[cls.time_model] = cls

    def __new__(cls, *args: Any, **options: Any):
        """(cfg, hardware, dtype, efficiency, profile, tp, pp, time_model), as the subclasses take
        them; a subclass (or pickle) makes itself."""
        if cls is StepTime:
            hardware = args[1] if len(args) > 1 else options["hardware"]
            time_model = args[7] if len(args) > 7 else options.get("time_model")
            dtype = args[2] if len(args) > 2 else options.get("dtype", "bf16")
            cls = StepTime.models["kernels" if time_model_for(hardware, time_model, dtype) == "kernels" else "roofline"]
        return object.__new__(cls)

    def with_graphs(self, graphs: CudaGraphs) -> "StepTime":
        """This step model under an engine's CUDA graphs (graphs.py): a copy sharing its tables."""
        import copy

        timed = copy.copy(self)
        timed.graphs = graphs
        return timed

    def _run_plans(self, keys: Any, steps: int) -> tuple[list, Any]:
        """A decode run's plan for each step, and _fixed_seconds once per distinct plan (one figure
        where one plan serves every step)."""
        import numpy as np
        plans = self.graphs.run_plans(keys, steps)
        fixed = {plan: self._fixed_seconds(plan, len(keys), len(keys)) for plan in set(plans)}
        return plans, fixed[plans[0]] if len(fixed) == 1 else np.array([fixed[plan] for plan in plans])

    def context_sums(self, query: Any, context: Any, sizes: list | None = None) -> Any:
        """The context-dependent leaves' work summed over the step's sequences: a decode sequence's
        row read from the table over context, a prefill chunk's at its own (query, context).
        sizes: query as a list, where the caller has it."""
        if sizes is None:  # (one step's few dozen sequences: plain Python beats numpy's calls here)
            sizes = query.tolist()
        if max(sizes) == 1:  # decode only
            return self._decode_sum(context)
        chunks = [i for i, n in enumerate(sizes) if n != 1]
        first = chunks[0]
        if len(chunks) == len(sizes) - first:  # the chunks are the step's last sequences (most mixed steps)
            total = self._decode_sum(context[:first]) if first else 0.0
            return total + self._chunk_rows(query[first:], context[first:])
        decode = query == 1
        chunks = ~decode
        total = self._decode_sum(context[decode]) if decode.any() else 0.0
        return total + self._chunk_rows(query[chunks], context[chunks])

    def _decode_sum(self, contexts: Any) -> Any:
        """The decode sequences' rows summed, in their order (a model may read its table faster)."""
        return self._decode_rows(contexts).sum(axis=0)
