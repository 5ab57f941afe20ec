"""The host's term of an eager serving step on a GPU, as simulate weighs it (eager_ops.eager_step_seconds):
the host issues the step's ops while the GPU runs the kernels queued so far, so a step takes the longer
of its kernels (less their per-block launches, which the host's term stands for, each kernel keeping its GPU-side
launch cost: KernelTimer.stream_seconds, as simulate's eager steps keep it) and its ops at the
hardware's op time (Hardware.eager_op_s: the file's, else the borrowed kernel_facts.json
"eager_host_op_default", Hardware.host_op_borrowed).

Which serving steps take it: those of a code whose ops are counted, run eagerly, on a GPU, under the
kernel model (the roofline counts no ops; a CPU runs each op in its thread: steptime.py charges the
engine's per-leaf ops there):
- static (Hugging Face generate's batch): the decoding loop's counted step (kernel_facts.json "eager_step_ops",
  implementation: the replica's decode code, Profile.decode_code, transformers unless --decode-code names
  another: eager_ops.step_ops, the count simulate's one-GPU steps take under that code), the same count for
  its prefill and each decode step, at any batch (one op per tensor, not per row); a code whose ops are not
  counted (tensorrt-llm, gpt-fast-mixtral) none, its eager leaves keeping the per-block launch overhead, as
  simulate's steps under it do;
- hf-fifo, hf-prefill-first (transformers' continuous batching): the engine's counted ops per leaf
  (kernel_facts.json "eager_ops", what steptime.py charges on a CPU): each leaf that runs in the step
  once, and the attention module's case by the step's mix (eager_step.EagerStep.case);
- vllm, vllm-v0, sarathi, orca, trtllm: none. vLLM's eager step (--cuda-graphs off, enforce_eager; v0's
  steps past max_seq_len_to_capture) runs its own module code, whose ops are not counted, so its eager
  leaves keep the per-block launch overhead, as simulate's steps of a code not counted do.
"""

from __future__ import annotations

from typing import Any

from ..eager_ops import eager_implementation, eager_step_seconds, step_ops
from .eager_step import CHARGED, EagerStep

#: The schedulers whose step runs a code with counted ops, and whose: "generate" or "engine".
COUNTED_CODE = {"static": "generate", "hf-fifo": "engine", "hf-prefill-first": "engine"}


class HostBound:
    """A StepTime (built without per-block launches) whose steps take the longer of their kernels and
    `ops(query, context, emitting)` x op_s (eager_ops.eager_step_seconds, the rule simulate's steps take)."""

    def __init__(self, step: Any, ops: Any, op_s: float, code: str = ""):
        self.step, self.ops, self.op_s, self.code = step, ops, op_s, code

    def __getattr__(self, name: str) -> Any:
        if name == "step":  # (unpickling: before __init__'s attributes exist)
            raise AttributeError(name)
        return getattr(self.step, name)

    def with_graphs(self, graphs: Any) -> "HostBound":
        return HostBound(self.step.with_graphs(graphs), self.ops, self.op_s, self.code)

    def seconds(self, query: Any, context: Any, emitting: int | None = None) -> float:
        import numpy as np

        query = np.asarray(query, dtype=np.int64)
        emitting = len(query) if emitting is None else emitting
        return eager_step_seconds(self.step.seconds(query, context, emitting), 0.0,
                                  self.ops(query, np.asarray(context), emitting) * self.op_s)

    def decode_run(self, keys: Any, steps: int) -> Any:
        import numpy as np

        keys = np.asarray(keys, dtype=np.int64)
        ones = np.ones(len(keys), dtype=np.int64)
        host = np.array([self.ops(ones, keys + i, len(keys)) for i in range(steps)]) * self.op_s
        return eager_step_seconds(self.step.decode_run(keys, steps), 0.0, host)


def engine_ops(step: Any, entry: dict) -> Any:
    """ops(query, context, emitting) of transformers' engine's step (kernel_facts.json "eager_ops"):
    each leaf's counted ops once a run (the tokens' leaves where the step has tokens, the head's
    where it emits, the context leaves once: the sequences' attention is one call), plus the
    attention module's case against the charged one, a layer each (eager_step.EagerStep.case)."""
    counts = entry["ops"]

    def total(group: str) -> int:
        return sum(count * counts.get(type(kernels.leaf.block).__name__, 0) for kernels, count in step.groups[group])

    tokens, head, context = total("tokens"), total("head"), total("context")
    stated = entry.get("cases", {}).get("WeightedSum", {})
    charged = stated.get(CHARGED, {}).get("ops", 0)
    layers = sum(count for kernels, count in step.groups["context"]
                 if type(kernels.leaf.block).__name__ == "WeightedSum")
    extra = {name: layers * (case["ops"] - charged) for name, case in stated.items() if isinstance(case, dict)}

    def ops(query: Any, keys: Any, emitting: int) -> int:
        return (tokens * bool(query.sum()) + head * bool(emitting) + context
                + extra.get(EagerStep.case(query, keys), 0))
    return ops


def host_bound(step: Any, cfg: Any, hardware: Any, scheduler: str, graphs: Any, profile: Any, make_step: Any) -> Any:
    """`step` with the host's term where the scheduler's code is counted and runs eagerly on a GPU
    under the kernel model (the module's docstring); else `step` as it is. profile: the replica's
    (its attention and weight format pick the count); make_step(hardware): a StepTime of the same
    model on that hardware, here one without per-block launches (the host's term stands for them) whose
    kernels keep their GPU-side launch cost (make_step(..., stream=True): KernelStepTime's stream, the rule
    simulate's eager steps take, KernelTimer.stream_seconds)."""
    code = COUNTED_CODE.get(scheduler)
    if (code is None or graphs.mode != "none" or step.time_model != "kernels" or not hardware.issues_ahead
            or hardware.eager_op_s is None):
        return step
    fmt = profile.weight_format
    if code == "generate":
        count = step_ops(cfg, profile.decode_code, step.dtype, profile.attention, "dynamic",
                         {"weight_dtype": fmt.dtype} if fmt is not None else None)
        if count is None:
            return step
        return HostBound(make_step(hardware.replace(overhead_s_per_block=0.0), stream=True),
                         lambda query, keys, emitting: count, hardware.eager_op_s, code)
    entry = eager_implementation(cfg, profile.attention, fmt)
    if entry is None:
        return step
    bare = make_step(hardware.replace(overhead_s_per_block=0.0), stream=True)
    return HostBound(bare, engine_ops(bare, entry), hardware.engine_op_s, code)


def refuse_uncounted_parts(cfg: Any, code: str, dtype: str, attention: str) -> None:
    """One line where the decode code's eager step has parts simulate times and a serving step does not
    (eager_ops.step_copies: transformers 4.46's Qwen2 flash path repeats the cached K/V heads; step_syncs:
    transformers 4.51's Qwen3-MoE loop syncs with the host each expert): serve would drop them."""
    from ..config import ConfigError
    from ..eager_ops import step_copies, step_syncs

    parts = [what for what, stated in (("copies of the cache", step_copies(cfg, code, attention)),
                                       ("host syncs", step_syncs(cfg, code, dtype, attention, "dynamic"))) if stated]
    if parts:
        raise ConfigError(f"--decode-code {code}: its eager step's {' and '.join(parts)} for {cfg.name} are timed by "
                          f"simulate --decode-code {code}, not by a serving step (costmodel/serving/host_step.py).")


def host_fields(step: Any, hardware: Any) -> dict[str, Any] | None:
    """serve's setup "host": whose counted ops a HostBound step's host issues, at which op time, and
    (kernel_facts_file.host_op_fields) whether that time is borrowed; None for any other step."""
    from ..kernel_facts_file import host_op_fields

    inner = step
    while not isinstance(inner, HostBound) and hasattr(inner, "step"):  # under StateTraffic
        inner = inner.step
    if not isinstance(inner, HostBound):
        return None
    return {"code": inner.code, **host_op_fields(hardware), "op_seconds": inner.op_s}
