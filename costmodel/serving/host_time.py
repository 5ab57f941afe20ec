"""An engine's host time a step (host_time.json: vLLM's versions, Sarathi-Serve's engine): the CPU's
scheduling, input building, output processing and engine loop between forward passes, which the step
time model (steptime.py: the GPU's kernels) leaves out; each version names the serve schedulers whose
engine it is (host_time_schedulers). A named per-step term, apart from the eager op time a leaf pays (Hardware.engine_op_s,
inside the forward).

The one rule, per engine version: the host milliseconds of a step of b sequences are
H(b) = fixed + per_sequence x b (the line through the version's profiled points: least squares; one
point, through the origin), from the lowest profiled point up. Below it, where a version's file gives a
measured small batch (host_time.json "small_batch": one part's ms at b0 sequences, H(b0) = ms / that
part's profiled share), H runs straight from H(b0) to the line's value at the lowest profiled point
(the line's fixed part is an extrapolation there; issue 6913 measures far less at batch 1). H splits
into parts by their profiled shares, and a step whose GPU
kernels take g seconds takes

    g + serial + (decision if the step starts a scheduling decision) + max(0, overlapped - g)

where serial, decision and overlapped are the H(b) shares of the parts the version runs that way
(host_time.json "modes"): every step; once per decision (the first step of a multi-step window;
every step without windows); beside the next step's GPU work (asynchronous output processing: the
CPU bounds the step only where it takes longer)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import ConfigError, show

HOST_TIME_FILE = Path(__file__).resolve().parent / "host_time.json"
MODES = ("serial", "decision", "overlapped")
NO_HOST_TIME = "none"


@lru_cache(maxsize=1)
def host_time_file() -> dict[str, Any]:
    """host_time.json, read once."""
    return json.loads(HOST_TIME_FILE.read_text(encoding="utf-8"))


def host_time_facts() -> dict[str, Any]:
    """host_time.json's versions."""
    return host_time_file()["versions"]


@lru_cache(maxsize=1)
def release_rules() -> tuple[dict[str, str], ...]:
    """host_time.json's rules from a vLLM release to the profile its runs take."""
    return tuple(host_time_file()["releases"]["rules"])


def release_key(release: str) -> tuple[int, ...]:
    """A release's numbers ('0.6.4', 'v0.7.3' -> (0, 6, 4), (0, 7, 3)), so releases compare in order."""
    try:
        return tuple(int(part) for part in release.removeprefix("v").split("."))
    except ValueError:
        raise ConfigError(f"a vLLM release is numbers joined by dots, like 0.6.4; got {show(release)}.") from None


def host_time_for_release(engine: str, release: str) -> str:
    """The host_time.json version a run of vLLM `release` on its `engine` ('v0' or 'v1') takes, by the file's
    release rules (V0 before 0.6.0: vllm-v0.5.4; V0 from 0.6.0: vllm-v0.6.0; V1: none)."""
    key = release_key(release)
    for rule in release_rules():
        if rule["engine"] == engine and release_key(rule["from"]) <= key < release_key(rule["before"]):
            return rule["host_time"]
    raise ConfigError(f"no host-time rule covers vLLM {show(release)} on engine {show(engine)} (host_time.json releases).")


#: serve's scheduler -> the vLLM engine it models (the release rules' "engine")
SCHEDULER_ENGINES = {"vllm-v0": "v0", "vllm": "v1"}
#: serve's --host-time names a release as pip pins it: vllm==0.6.3
RELEASE_PREFIX = "vllm=="


def profile_for(version: str | None, scheduler: str) -> str | None:
    """serve's --host-time: a host_time.json profile as named, or `vllm==RELEASE` resolved by the release rules
    for the engine `scheduler` models (vllm-v0: V0, vllm: V1), as the published vLLM runs take theirs."""
    if version is None or not version.startswith(RELEASE_PREFIX):
        return version
    if scheduler not in SCHEDULER_ENGINES:
        raise ConfigError(f"--host-time {version} is vLLM's host time a step, modelled for the vllm and vllm-v0 "
                          f"schedulers only, not {scheduler}.")
    return host_time_for_release(SCHEDULER_ENGINES[scheduler], version.removeprefix(RELEASE_PREFIX))


def host_time_schedulers(version: str) -> tuple[str, ...]:
    """The serve schedulers whose engine a host_time.json version times (its "schedulers")."""
    return tuple(host_time_facts()[version]["schedulers"])


def host_versions() -> tuple[str, ...]:
    """The versions serve's host_time option takes (besides none)."""
    return tuple(host_time_facts())


def line_through(points: list[list[float]]) -> tuple[float, float]:
    """(fixed ms, per-sequence ms) of the least-squares line through (sequences, ms) points; one
    point: the line through the origin."""
    if len(points) == 1:
        (sequences, ms), = points
        return 0.0, ms / sequences
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in points)
             / sum((x - mean_x) ** 2 for x, _ in points))
    return mean_y - slope * mean_x, slope


@dataclass(frozen=True)
class HostTime:
    """One version's host time a step: H(b) = fixed_s + per_sequence_s x b, its shares by mode."""

    version: str
    fixed_s: float
    per_sequence_s: float
    serial: float  # shares of H(b), summing to 1
    decision: float
    overlapped: float
    profiled_from: int = 0  # the lowest profiled sequences; below it, the straight run from the small batch
    small_sequences: int = 0  # b0 of the measured small batch (0: none; the line holds at every b)
    small_s: float = 0.0  # H(b0)

    def seconds(self, sequences: int) -> float:
        """H(b): the host seconds of a step of `sequences` sequences (the line from the lowest profiled point
        up; below it, straight from the measured small batch's H(b0) to the line's value there)."""
        if self.small_sequences and sequences < self.profiled_from:
            top = self.fixed_s + self.per_sequence_s * self.profiled_from
            return self.small_s + (top - self.small_s) * (sequences - self.small_sequences) / (
                self.profiled_from - self.small_sequences)
        return self.fixed_s + self.per_sequence_s * sequences

    def step(self, gpu_s: Any, sequences: int, decides: bool = True) -> Any:
        """Seconds of steps whose kernels take gpu_s (a number or an array), each of `sequences`
        sequences; decides: each starts a scheduling decision."""
        import numpy as np

        host = self.seconds(sequences)
        waited = host * (self.serial + (self.decision if decides else 0.0))
        return gpu_s + waited + np.maximum(0.0, host * self.overlapped - gpu_s)

    def window(self, gpu_s: Any, sequences: int) -> Any:
        """Seconds of a multi-step window's steps (gpu_s: an array, one per step): the decision's
        host time on its first step only."""
        import numpy as np

        times = np.array(self.step(np.asarray(gpu_s, dtype=float), sequences, decides=False), dtype=float)
        times[0] += self.seconds(sequences) * self.decision
        return times

    def static_run(self, prefill_s: float, decode_s: float, steps: int, shortest_s: float,
                   sequences: int) -> tuple[float, float]:
        """(prefill, decode) seconds of a static batch's generation on this engine (LLM.generate's loop, one
        engine step at a time, each a scheduling decision: no multi-step window): the prefill one step of
        `sequences` sequences through step(), then `steps` decode steps of them, decode_s their kernels in all,
        shortest_s the shortest's (the first's: a step attends no less context than the one before). Each decode
        step adds step()'s host term, the same for every step where the overlapped part fits the shortest step;
        where it does not, the steps' own times are needed (refused, one line)."""
        if steps and self.seconds(sequences) * self.overlapped > shortest_s:
            raise ConfigError(f"{self.version}'s overlapped host time at {sequences} sequences exceeds the shortest "
                              "decode step: a static run's host term needs each step's time.")
        extra = float(self.step(shortest_s, sequences)) - shortest_s if steps else 0.0
        return float(self.step(prefill_s, sequences)), decode_s + steps * extra

    def describe(self) -> dict[str, Any]:
        """The setup's fields: the version, its line and how its parts run."""
        return {"host_time": self.version, "host_fixed_ms": round(1e3 * self.fixed_s, 4),
                "host_per_sequence_us": round(1e6 * self.per_sequence_s, 4),
                **({"host_small_batch": [self.small_sequences, round(1e3 * self.small_s, 4), self.profiled_from]}
                   if self.small_sequences else {}),
                "host_shares": {"serial": round(self.serial, 4), "decision": round(self.decision, 4),
                                "overlapped": round(self.overlapped, 4)}}


def host_time(version: str | None) -> HostTime | None:
    """The HostTime of a host_time.json version; None for none (kernels only). An unknown name is one
    ConfigError naming the versions."""
    if version is None or version == NO_HOST_TIME:
        return None
    facts = host_time_facts()
    if version not in facts:
        raise ConfigError(f"--host-time must be {NO_HOST_TIME}, one of {', '.join(facts)} or {RELEASE_PREFIX}RELEASE "
                          f"(host_time.json's release rules), got {show(version)}.")
    entry = facts[version]
    costs = facts[entry["same_costs_as"]] if "same_costs_as" in entry else entry
    fixed_ms, per_sequence_ms = line_through(costs["points_ms"])
    parts = costs["parts_ms"]
    total = sum(parts.values())
    shares = {mode: sum(ms for part, ms in parts.items() if entry["modes"][part] == mode) / total for mode in MODES}
    small = costs.get("small_batch")
    small_ms = small["ms"] * total / parts[small["part"]] if small else 0.0
    return HostTime(version, fixed_ms / 1e3, per_sequence_ms / 1e3, shares["serial"], shares["decision"],
                    shares["overlapped"], min(b for b, _ in costs["points_ms"]), small["sequences"] if small else 0,
                    small_ms / 1e3)
