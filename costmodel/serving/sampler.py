"""What a serving engine's sampler adds to a step after its LM head: the passes its code makes over
the sampled rows' logits and the tensor-parallel gather that brings them to the sampler, priced
from sampler_passes.json (each engine's passes per sampling mode, with the code they were read in).

- Each pass is one memory-bound kernel over B x V logits (B: the step's sampled rows, V: the model's
  vocabulary): its bytes read and written per logit x B x V at the step model's memory bandwidth
  (the kernel model's KernelTimer.pointwise_seconds; the roofline's bandwidth x memory efficiency).
  The passes run eagerly after the forward's CUDA graph (graphs.py: vLLM captures the model forward
  only): under the kernel model they pay one eager launch (KernelTimer.launch_seconds), as every eager
  leaf does.
- tp > 1: the head's B x ceil(V / tp) logits a rank are gathered (vLLM V1's all-gather to every rank,
  V0's gather to the driver) through collectives.collective_seconds, payload B x tp x ceil(V / tp) x
  the dtype's bytes (the gathered tensor, as layout/communication.py prices a forward's logits).

Sampled wraps a StepTime (as state_slots.StateTraffic does) and adds this to every step's seconds and
every decode run's. Engines without an entry in sampler_passes.json pay nothing (not read)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import ConfigError, show

FACTS = Path(__file__).with_name("sampler_passes.json")


@lru_cache(maxsize=1)
def sampler_facts() -> dict[str, Any]:
    return json.loads(FACTS.read_text())


SAMPLING_MODES: tuple[str, ...] = tuple(sampler_facts()["modes"])


def check_sampling(sampling: str) -> None:
    """A sampling mode sampler_passes.json prices, or a ConfigError."""
    if sampling not in SAMPLING_MODES:
        raise ConfigError(f"sampling must be one of {', '.join(SAMPLING_MODES)}, got {show(sampling)}.")


@dataclass(frozen=True)
class SamplerPasses:
    """One engine's passes in one sampling mode: (op, bytes read, bytes written) per logit, "e" for
    the logits' element bytes; gather: the collective kind that brings a tp head's logits together."""

    engine: str
    mode: str
    passes: tuple[tuple[str, Any, Any], ...]
    gather: str

    def pass_bytes(self, e: int) -> tuple[int, ...]:
        """Bytes each pass moves per logit, the logits' dtype at e bytes."""
        value = lambda b: e if b == "e" else int(b)  # noqa: E731
        return tuple(value(read) + value(write) for _, read, write in self.passes)

    def bytes_per_logit(self, e: int) -> int:
        return sum(self.pass_bytes(e))


def sampler_passes(engine: str, mode: str = "random") -> SamplerPasses | None:
    """The engine's passes in `mode` (None where sampler_passes.json has no entry for the engine)."""
    check_sampling(mode)
    entry = sampler_facts()["engines"].get(engine)
    if entry is None:
        return None
    return SamplerPasses(engine, mode, tuple((p["op"], p["read"], p["write"]) for p in entry["modes"][mode]),
                         entry["gather"])


@dataclass(frozen=True)
class SamplerCost:
    """Seconds of an engine's sampling of `rows` rows: passes over rows x vocab logits of e bytes,
    on a hardware at bandwidth bytes/s, launch_s once (eager), and the tp gather."""

    passes: SamplerPasses
    vocab: int
    e: int
    tp: int
    hardware: Any
    bandwidth: float
    launch_s: float = 0.0
    # seconds() by rows: a pure function of them, asked once a step (the same figures, computed once)
    _by_rows: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def pass_seconds(self, rows: int) -> float:
        return sum(b * rows * self.vocab for b in self.passes.pass_bytes(self.e)) / self.bandwidth

    def gather_seconds(self, rows: int) -> float:
        from ..collectives import collective_seconds

        if self.tp <= 1:
            return 0.0
        payload = rows * self.tp * -(-self.vocab // self.tp) * self.e
        return collective_seconds(self.hardware, "all_gather", payload, self.tp, self.tp)

    def seconds(self, rows: int) -> float:
        seconds = self._by_rows.get(rows)
        if seconds is None:
            seconds = self._by_rows[rows] = (0.0 if rows <= 0 else
                                             self.pass_seconds(rows) + self.launch_s + self.gather_seconds(rows))
        return seconds


def sampler_cost(step: Any, engine: str, mode: str, cfg: Any, hardware: Any, efficiency: Any, tp: int) -> SamplerCost | None:
    """The engine's sampler on this step model's hardware (None where the engine's is not priced):
    the kernel model's bandwidth and eager launch, else the hardware's bandwidth x memory efficiency."""
    from ..config import DTYPE_BYTES
    from ..hardware import Efficiency

    passes = sampler_passes(engine, mode)
    if passes is None:
        return None
    timer = getattr(step, "timer", None)
    if timer is not None:
        bandwidth, launch = timer.bandwidth, timer.launch_seconds(len(passes.passes))
    else:
        bandwidth = hardware.bandwidth_bytes_per_s * (efficiency or Efficiency(**hardware.efficiency)).memory
        launch = 0.0
    return SamplerCost(passes, cfg.vocab_size, DTYPE_BYTES[step.dtype], tp, hardware, bandwidth, launch)


class Sampled:
    """A StepTime whose steps also sample their emitting rows (SamplerCost.seconds); everything else
    is the wrapped StepTime's."""

    def __init__(self, step: Any, cost: SamplerCost):
        self.step, self.cost = step, cost

    def __getattr__(self, name: str) -> Any:
        if name in ("step", "cost"):  # (unpickling: before __init__'s attributes exist)
            raise AttributeError(name)
        return getattr(self.step, name)

    def with_graphs(self, graphs: Any) -> "Sampled":
        return Sampled(self.step.with_graphs(graphs), self.cost)

    def seconds(self, query: Any, context: Any, emitting: int | None = None) -> float:
        rows = len(query) if emitting is None else emitting
        return self.step.seconds(query, context, emitting) + self.cost.seconds(rows)

    def decode_run(self, keys: Any, steps: int) -> Any:
        return self.step.decode_run(keys, steps) + self.cost.seconds(len(keys))


def with_sampler(step: Any, scheduler: str, sampling: str, cfg: Any, hardware: Any, efficiency: Any, tp: int) -> Any:
    """The step model with the scheduler's engine's sampler (the step itself where it is not priced, or
    where a wrapper of it already samples: a search passes back the step it built)."""
    inner = step
    while inner is not None:
        if isinstance(inner, Sampled):
            return step
        inner = vars(inner).get("step")
    cost = sampler_cost(step, scheduler, sampling, cfg, hardware, efficiency, tp)
    return step if cost is None else Sampled(step, cost)
