"""The facts file (kernel_facts.json, each entry with its source), read once; and the one fact a
hardware file borrows from it: the host's time an eager op takes where a GPU's file states none
(Hardware.eager_op_s). Apart from kernel_rates.py, which reads Hardware, so that hardware.py can
read it too."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

FACTS_PATH = Path(__file__).resolve().parent / "kernel_facts.json"


@lru_cache(maxsize=None)
def kernel_facts() -> dict[str, Any]:
    return json.loads(FACTS_PATH.read_text())


def borrowed_host_op_s() -> float:
    """The host's seconds an eager op takes that a GPU file stating none borrows (kernel_facts.json
    "eager_host_op_default": the project's own H200 host measurement, module_s_per_op)."""
    return float(kernel_facts()["eager_host_op_default"]["value"])


def borrowed_host_note(op_s: float) -> str:
    """What every output that times an eager step at the borrowed op time says (simulate's text and
    JSON, plan's note, a training step's host): the figure, whose host it is, and how to state one's own."""
    return (f"host time an op: {op_s * 1e6:.2f} us, borrowed from the project's H200 host measurement; your "
            "host may differ (a hardware file's module_s_per_op or dispatch_s_per_op, or simulate's "
            "--host-op-time, states its own)")


def host_op_fields(hardware: Any) -> dict[str, Any]:
    """The op time an eager step's "host" entry reports (simulate's JSON, a layout's step or token):
    Hardware.eager_op_s, whether it is borrowed (Hardware.host_op_borrowed), and where it is, the note."""
    op_s, borrowed = hardware.eager_op_s, hardware.host_op_borrowed
    return {"op_seconds": op_s, "op_time_borrowed": borrowed,
            **({"op_time_note": borrowed_host_note(op_s)} if borrowed else {})}


def weighs_host(result: Any) -> bool:
    """Whether a simulate result weighs an eager step's counted ops at the op time anywhere: a "host"
    entry (host_op_fields' steps: one GPU's prefill and decode, a layout's prefill, token and
    training step) whose ops are counted."""
    if isinstance(result, dict):
        host = result.get("host")
        if isinstance(host, dict) and host.get("ops_per_step") is not None:
            return True
        return any(weighs_host(value) for value in result.values())
    if isinstance(result, list):
        return any(weighs_host(value) for value in result)
    return False


def fuses_qkv(implementation: str | None) -> bool:
    """Whether a decoding implementation's code runs Q, K and V as one GEMM (kernel_facts.json
    "fused_projections": gpt-fast's and torchao's wqkv); False for any other code or none."""
    return "qkv" in kernel_facts()["fused_projections"]["implementations"].get(implementation or "", ())


def matching_entry(table: str, cfg: Any, runs: Any) -> dict | None:
    """The first implementation of kernel_facts.json's `table` whose family and stated config
    fields are this config's and whose own conditions `runs(entry)` holds; None where none does
    (eager_ops' counted tables and generate_windows')."""
    for entry in kernel_facts()[table]["implementations"]:
        if (cfg.family == entry["family"] and runs(entry)
                and all(getattr(cfg, name) == value for name, value in entry["config"].items())):
            return entry
    return None
