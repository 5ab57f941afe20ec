"""Hardware as data: the presets' peaks (costmodel/hardware/*.json) and this machine's calibration.

A Hardware is a machine's dense matmul FLOP/s per dtype, the vector FLOP/s of the other ops, memory
bandwidth and capacity, the fractions of those peaks a real run reaches, and a fixed overhead per
block. `local` is this machine, measured by validate/calibrate.py and cached. Pure data: the
roofline that divides by these rates is costmodel/simulate.py.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError, show

HARDWARE_DIR = Path(__file__).resolve().parent / "hardware"


def local_cache_path() -> Path:
    """Where the `local` calibration is cached (XDG cache directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "transformer-costmodel" / "local.json"


@dataclass(frozen=True)
class Hardware:
    """A machine's peaks: dense matmul FLOP/s per dtype, the vector FLOP/s of the other ops, memory
    bandwidth and capacity."""

    name: str
    description: str
    flops_per_s: dict[str, float]
    bandwidth_bytes_per_s: float
    memory_bytes: int
    efficiency: dict[str, float] = field(default_factory=lambda: {"compute": 1.0, "memory": 1.0})
    source: str = ""
    overhead_s_per_block: float = 0.0  # launch/dispatch time of one block's ops
    # FLOP/s of the non-matmul ops: a GPU's non-tensor FP32 peak (norms and softmax compute in fp32
    # in these implementations whatever the dtype). Omitted (0): the fp32 matmul peak.
    vector_flops_per_s: float = 0.0
    # The dtype a simulation uses when none is asked for: bf16 for the GPUs, the dtype `local`
    # was calibrated in (its first measured dtype) for this machine.
    default_dtype: str = "bf16"
    # The interconnect (per GPU, per direction): GPUs a node holds, the bandwidth between two of
    # them and between nodes, and a fixed latency per collective call.
    gpus_per_node: int = 1
    intra_node_bandwidth_bytes_per_s: float = 0.0
    inter_node_bandwidth_bytes_per_s: float = 0.0
    collective_latency_s: float = 0.0
    # Dollars per GPU-hour (optional: a rental price, with its source in `source`); None: unknown.
    price_per_gpu_hour: float | None = None

    def link(self, span: int) -> float:
        """The bandwidth of a group that spans `span` consecutive GPUs (within a node, or not)."""
        bandwidth = (self.intra_node_bandwidth_bytes_per_s if span <= self.gpus_per_node
                     else self.inter_node_bandwidth_bytes_per_s)
        if not bandwidth > 0:
            raise ConfigError(f"hardware {self.name}: no interconnect bandwidth for a group of {span} GPUs.")
        return bandwidth

    def __post_init__(self) -> None:
        if not self.vector_flops_per_s > 0:
            object.__setattr__(self, "vector_flops_per_s", self.peak("fp32"))

    def peak(self, dtype: str) -> float:
        if dtype not in self.flops_per_s:
            if self.name == "local":
                raise ConfigError(
                    f"hardware 'local' was calibrated for {', '.join(self.flops_per_s)} only; run "
                    f"`python cli.py hardware --measure --dtype {dtype}` to measure {dtype}."
                )
            raise ConfigError(f"hardware {self.name}: no peak FLOP/s for {dtype}.")
        return self.flops_per_s[dtype]

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str) -> "Hardware":
        try:
            return cls(
                name=str(data["name"]),
                description=str(data.get("description", data["name"])),
                flops_per_s={str(k): float(v) for k, v in data["flops_per_s"].items()},
                bandwidth_bytes_per_s=float(data["bandwidth_bytes_per_s"]),
                memory_bytes=int(data["memory_bytes"]),
                efficiency={str(k): float(v) for k, v in data.get("efficiency", {}).items()}
                or {"compute": 1.0, "memory": 1.0},
                source=str(data.get("source", "")),
                overhead_s_per_block=float(data.get("overhead_s_per_block", 0.0)),
                default_dtype=str(data.get("default_dtype", "bf16")),
                **_interconnect(data.get("interconnect") or {}),
                vector_flops_per_s=float(data.get("vector_flops_per_s", 0.0)),
                price_per_gpu_hour=(None if data.get("price_per_gpu_hour") is None
                                    else float(data["price_per_gpu_hour"])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ConfigError(f"{source}: not a hardware description ({error}).") from None


def _interconnect(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "gpus_per_node": int(data.get("gpus_per_node", 1)),
        "intra_node_bandwidth_bytes_per_s": float(data.get("intra_node_bandwidth_bytes_per_s", 0.0)),
        "inter_node_bandwidth_bytes_per_s": float(data.get("inter_node_bandwidth_bytes_per_s", 0.0)),
        "collective_latency_s": float(data.get("collective_latency_s", 0.0)),
    }


def hardware_names() -> list[str]:
    return sorted(p.stem for p in HARDWARE_DIR.glob("*.json")) + ["local"]


def load_hardware(name: str) -> Hardware:
    """A hardware preset; `local` is read from the calibration cache (see validate/calibrate.py)."""
    if name == "local":
        path = local_cache_path()
        if not path.is_file():
            raise ConfigError(
                "hardware 'local' is not calibrated yet; run `python cli.py hardware --measure`."
            )
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ConfigError(f"{path}: unreadable ({error}); run `python cli.py hardware --measure`.") from None
        if isinstance(data, dict) and "vector_flops_per_s" not in data:
            raise ConfigError(f"{path} predates the vector peak; run `python cli.py hardware --measure` again.")
        return Hardware.from_dict(data, source=str(path))
    path = HARDWARE_DIR / f"{name}.json"
    if "/" in name or not path.is_file():
        import difflib

        close = difflib.get_close_matches(name, hardware_names(), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else f" Known: {', '.join(hardware_names())}."
        raise ConfigError(f"unknown hardware {show(name)}.{hint}")
    return Hardware.from_dict(json.loads(path.read_text()), source=str(path))


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the peaks a real run reaches (stated, settable)."""

    compute: float = 1.0
    memory: float = 1.0

    def __post_init__(self) -> None:
        for name in ("compute", "memory"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value <= 1):
                raise ConfigError(f"{name} efficiency must be in (0, 1], got {show(value)}.")


def kernel_times(f_mm: Any, b_mm: Any, f_o: Any, b_o: Any, peak: float, vector: float,
                 bandwidth: float) -> tuple[Any, Any, Any]:
    """Compute time, memory time and busy time of a block's two kernels: its matrix products at
    the matmul peak, then its other ops at the vector peak, each max(compute, memory). Floats or
    numpy arrays (a sweep over lengths)."""
    mm_compute, mm_memory = f_mm / peak, b_mm / bandwidth
    other_compute, other_memory = f_o / vector, b_o / bandwidth
    if isinstance(mm_compute, float) and isinstance(other_compute, float):
        maximum = max
    else:
        import numpy as np

        maximum = np.maximum
    busy = maximum(mm_compute, mm_memory) + maximum(other_compute, other_memory)
    return mm_compute + other_compute, mm_memory + other_memory, busy
