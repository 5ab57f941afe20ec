"""Which code runs a decode, and what KV cache it keeps: the one rule every decode path takes
(simulate, a layout's decode, serve and plan --serve, the roofline and the kernel model alike).

A code (spec.DECODE_CODES, simulate's --decode-code; a serve scheduler's engine) states two facts,
each with its source in decode_codes.json: which heads its cache holds (transformers' class's, as
facts.json says, or the model's KV heads), and whether its attention kernel reads a quantized cache
(--kv-dtype) as stored or is handed it dequantized. The Profile carries the code
(blocks.base.Profile.decode_code) and takes both from here: the cache's size
(blocks.attention.kv_cache_bytes) and the bytes an element the attention reads
(AttentionCore.cache_element_bytes) then follow from the same profile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import ConfigError

DATA = Path(__file__).resolve().parent / "decode_codes.json"
DEFAULT = "transformers"


@dataclass(frozen=True)
class CacheCode:
    """One code's KV cache: `class_heads`, the heads transformers' class caches (facts.json
    kv_cache_heads; False: the model's KV heads); `reads_as_stored`, its attention reads a
    quantized cache at the cache's bytes an element (False: in the activations' dtype)."""

    name: str
    class_heads: bool
    reads_as_stored: bool


@lru_cache(maxsize=None)
def _data() -> dict:
    return json.loads(DATA.read_text())


def codes() -> tuple[str, ...]:
    """Every code the table states."""
    return tuple(_data()["codes"])


@lru_cache(maxsize=None)
def cache_code(name: str) -> CacheCode:
    """The KV cache of code `name` (a "base" entry takes its base's facts); ConfigError if unknown."""
    table = _data()["codes"]
    if name not in table:
        raise ConfigError(f"decode code must be one of {', '.join(table)}, got {name!r}.")
    entry = table[name]
    facts = table[entry["base"]] if "base" in entry else entry
    return CacheCode(name, facts["heads"] == "class", facts["quantized_read"] == "as_stored")


def scheduler_code(scheduler: str) -> str:
    """The code a serve scheduler's engine runs (decode_codes.json "schedulers")."""
    return _data()["schedulers"][scheduler]


def serving_code(scheduler: str | None, given: str | None = None) -> str:
    """The code a serving path decodes with, the one rule of serve, plan --serve and plan --serve --rate:
    the code typed (--decode-code, checked against the table), else the scheduler's engine's
    (scheduler_code), else, where no scheduler runs (plan --serve's layouts, timed as simulate times
    one), simulate's default: Hugging Face generate's (DEFAULT). A typed code under a scheduler keeps
    that scheduler's schedule and takes the code's cache and kernels (TensorRT-LLM's static batches:
    the static schedule, the tensorrt-llm code)."""
    if given is None:
        return DEFAULT if scheduler is None else scheduler_code(scheduler)
    name = cache_code(given).name
    own = _data()["own_code_only"].get(scheduler)
    if own is not None and name != own:
        raise ConfigError(f"--decode-code {name}: the {scheduler} scheduler is transformers' continuous batching, "
                          f"which runs its own code ({own}, decode_codes.json own_code_only); Hugging Face generate "
                          f"under {name} is --scheduler static.")
    return name


def serving_cache(scheduler: str | None, code: str) -> str:
    """The KV cache a serving step keeps (the tree's kv_cache): Hugging Face generate's static batch under a
    transformers release (runs_classes) keeps generate's default DynamicCache, whose update concatenates each
    step's keys and values onto the layer's whole cache (transformers 5.24 cache_utils DynamicLayer.update:
    torch.cat, as simulate's default dynamic cache counts it); every engine, and gpt-fast's and TensorRT-LLM's
    preallocated caches, write in place ("static")."""
    return "dynamic" if scheduler == "static" and runs_classes(code) else "static"


def runs_classes(name: str) -> bool:
    """Whether code `name` runs transformers' classes as they are (transformers and its releases: a
    "base" of transformers), so that their facts hold (Llama 4's every token through every expert), where
    an engine's or gpt-fast's code routes each token to its top k (blocks.base.Profile.routed_experts)."""
    entry = _data()["codes"].get(name, {})
    return entry.get("base", name) == DEFAULT


def caches_kv_heads(name: str, class_heads: str) -> bool:
    """Whether code `name` caches the model's KV heads where transformers' class caches `class_heads`
    (facts.json kv_cache_heads: "query" for a class that broadcasts K and V to every query head): the
    one rule Profile.facts and tree_options both take."""
    return class_heads != "kv" and not cache_code(name).class_heads


def tree_options(cfg, workload) -> dict:
    """What the workload's decode code changes in cfg's cost tree, for the caches' keys beside
    Workload.options(): nothing where it caches as transformers' class does and reads as
    transformers does (so that those keys stay as they were), else the facts that differ."""
    from .facts import facts_for

    code = cache_code(workload.decode_code)
    out = {}
    if workload.kv_dtype is not None and code.reads_as_stored:
        out["kv_read_as_stored"] = True
    if caches_kv_heads(workload.decode_code, facts_for(workload.impl, cfg.family).kv_cache_heads):
        out["kv_cache_heads"] = "kv"
    return out


def check_runs_on(name: str, hardware, option: str) -> None:
    """A code that runs on one vendor's GPUs only (decode_codes.json "gpus": TensorRT-LLM's, NVIDIA's, its
    "gpus_source") refused in one line on another's, where the hardware file names its architecture
    (`serve --scheduler trtllm --hardware mi300x` simulated an engine no ROCm build runs; Hardware.vendor).
    option: what was typed (`--scheduler trtllm`, `--decode-code tensorrt-llm`)."""
    table = _data()["codes"]
    wanted = table.get(table.get(name, {}).get("base", name), {}).get("gpus")
    vendor = getattr(hardware, "vendor", None)
    if wanted is not None and vendor is not None and vendor != wanted:
        raise ConfigError(f"{option}: {name} runs on {wanted.upper()} GPUs only (decode_codes.json); {hardware.name} "
                          f"is {hardware.generation}: use an engine that runs there (--scheduler vllm; simulate's "
                          "default --decode-code transformers).")
