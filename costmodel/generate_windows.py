"""The host time of an eager Hugging Face generate step that no kernel hides (kernel_facts.json
"generate_windows", counted by validate/generate_syncs.py under the release a decode code names).

A step reads the GPU a few times (the mask check at the forward's start, multinomial's checks when
sampling, the stopping check, the cache-position check): each read drains the GPU before the host
goes on. The forward's kernels run inside one window between reads; the other windows' ops are
issued one by one after the GPU has drained, so their host time adds to the step. With the host's
time an op t, a step of `ops` counted ops of which `serial` lie outside the forward's window takes
serial t + max(kernels, (ops - serial) t) = max(kernels + serial t, ops t): the serial time joins
the kernels' side of eager_ops.eager_step_seconds' rule (roofline.KernelSteps.decode_curve). A
host-bound step is unchanged; a GPU-bound one pays the serial ops too.

Where every layer reads the GPU (lit-gpt d16f924d), kernel_time.layer_windows_seconds times the step one window a layer.

It also gives the step's own ops as the release issues them, greedy or sampling as the checkpoint's
generation_config.json asks (SAMPLINGS): the logits processors, the softmax and multinomial's own
ops in place of an argmax (eager_ops.step_ops_split takes them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

#: How a decoding loop picks its token: "greedy" (GenerationConfig's default, what eager_step_ops
#: counts) or "sampled" (the checkpoint's generation_config.json: do_sample with its temperature,
#: top-k, top-p and penalties, as the counted entry states them).
SAMPLINGS = ("greedy", "sampled")


@dataclass(frozen=True)
class StepWindows:
    """One step's own ops as the release issues them (per_step; None where eager_step_ops' count is already
    the step as its code samples: lit-gpt's), the ops outside the forward's window (serial) and the
    device-to-host reads (syncs)."""
    per_step: int | None
    serial: int
    syncs: int


def check_sampling(sampling: str) -> None:
    """ConfigError (a ValueError) for a sampling not in SAMPLINGS: the caller's one line."""
    if sampling not in SAMPLINGS:
        raise ConfigError(f"sampling must be one of {', '.join(SAMPLINGS)}, got {sampling!r}.")


def step_windows(cfg: Any, implementation: str, attention: str, sampling: str = "greedy",
                 kv_cache: str = "dynamic") -> StepWindows | None:
    """The counted windows of a decoding step of this config's family under this code, attention and
    KV cache (kernel_facts.json "generate_windows": generate's default DynamicCache), or None where none
    is counted."""
    from .kernel_facts_file import matching_entry

    check_sampling(sampling)
    entry = matching_entry("generate_windows", cfg, lambda entry: (
        entry["name"] == implementation and entry["attention"] == attention and entry["kv_cache"] == kv_cache))
    counts = None if entry is None else entry.get(sampling)
    if counts is None:  # no entry, or one that counts another sampling (lit-gpt's generate always samples)
        return None
    own = int(counts["per_step"]) if "per_step" in counts else None
    return StepWindows(own, int(counts["serial_per_step"]), int(counts["syncs_per_step"]))
