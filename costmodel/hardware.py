"""Hardware as data: the presets (costmodel/hardware/*.json), a user's own file, and this machine's
calibration, all in one documented schema (docs/time.md, "The hardware file").

A Hardware is a machine's dense matmul FLOP/s per dtype (fp8 where the GPU has it), the vector
FLOP/s of the other ops, memory bandwidth and capacity, the fractions of those peaks a real run
reaches, a fixed overhead per block, its interconnect, a clock or power limit that scales the
compute peaks, and the memory a run cannot use (the CUDA context's reserve; a serving engine's
utilisation fraction). `local` is this machine, measured by validate/calibrate.py and cached.
Every field is checked when the file is read: one sentence per bad field, all on one line.
Pure data: the roofline that divides by these rates is costmodel/roofline_model.py.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError, show
from .spec import CANONICAL_DTYPE, DEFAULT_TIME_MODEL, TIME_MODELS  # the time models and the default (spec.py says why)



def time_model_for(hardware: "Hardware", time_model: str | None = None, dtype: str | None = None) -> str:
    """The time model a command runs: the one asked for, else the default; the roofline for a
    hardware with neither sm_count (the kernel model's tiles per wave) nor a measured GEMM
    efficiency by rows (gemm_efficiency_by_rows, which times GEMMs without tiles) in `dtype`
    (any dtype where none is named), the one case the default cannot serve (a user file or an
    older calibration without them, or `local` calibrated in another dtype)."""
    if time_model is not None:
        if time_model not in TIME_MODELS:
            raise ConfigError(f"time model must be one of {', '.join(TIME_MODELS)}, got {show(time_model)}.")
        return time_model
    rows = hardware.gemm_efficiency_by_rows
    if dtype is not None:
        rows = rows.get(CANONICAL_DTYPE.get(dtype, dtype))
    return DEFAULT_TIME_MODEL if hardware.sm_count or rows else "roofline"

HARDWARE_DIR = Path(__file__).resolve().parent / "hardware"

#: The matmul dtypes a hardware file may give a peak for (fp8: E4M3/E5M2 tensor cores; int8: IMMA).
PEAK_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def local_cache_path() -> Path:
    """Where the `local` calibration is cached (XDG cache directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "transformer-costmodel" / "local.json"


@dataclass(frozen=True)
class Hardware:
    """A machine's peaks: dense matmul FLOP/s per dtype, the vector FLOP/s of the other ops, memory
    bandwidth and capacity; its interconnect; the limits a run works under."""

    name: str
    description: str
    flops_per_s: dict[str, float]
    bandwidth_bytes_per_s: float
    memory_bytes: int
    efficiency: dict[str, float] = field(default_factory=lambda: {"compute": 1.0, "memory": 1.0})
    source: str = ""
    overhead_s_per_block: float = 0.0  # launch/dispatch time of one block's ops
    # The GPU-side time each kernel of a CUDA graph's replay still takes beyond its own work (the
    # grid's launch and the previous kernel's drain; a microbenchmark, with its source). The CPU's
    # launch cost (overhead_s_per_block) is what a graph removes; this it keeps. 0: none known.
    graph_kernel_s: float = 0.0
    # The fixed time a kernel streaming its operands from DRAM takes beyond its bytes at the
    # bandwidth and beyond graph_kernel_s (the first bytes' latency, the last wave's drain): the
    # intercept a of T = a + V / b fitted to a streaming kernel's times at DRAM-resident sizes, less
    # the file's graph_kernel_s (so graph_kernel_s + this = a; a microbenchmark, with its source).
    # The kernel model charges it to each GEMM and attention call (weights and KV caches live in
    # DRAM). 0: none.
    dram_kernel_startup_s: float = 0.0
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
    # Streaming multiprocessors (compute units on AMD): what GEMM wave quantization divides over.
    sm_count: int = 0
    # Clocks and power: the datasheet's boost clock and board power, and a limit a user sets
    # (`nvidia-smi -lgc` / `-pl`). The compute peaks scale with the clock (see clock_scale).
    clock_mhz: float = 0.0
    clock_limit_mhz: float = 0.0
    power_watts: float = 0.0
    power_limit_watts: float = 0.0
    # Memory a run cannot use: the CUDA context, cuBLAS and NCCL workspaces (every run), and the
    # share a serving engine leaves free (vLLM's gpu_memory_utilization).
    memory_reserve_bytes: int = 0
    serving_memory_utilization: float = 1.0
    # The fraction of each dtype's peak that large matmuls reach (a microbenchmark, with its
    # source): the kernel-level time model's GEMM efficiency (costmodel/kernel_time.py).
    matmul_efficiency: dict[str, float] = field(default_factory=dict)
    # The fraction of each dtype's peak matmuls hold under sustained full load, once the board sits
    # at its power limit and the clock below boost (MSMF, a microbenchmark): the kernel model's GEMM
    # efficiency for training steps, which run the GPU saturated. Omitted for a dtype: matmul_efficiency.
    sustained_matmul_efficiency: dict[str, float] = field(default_factory=dict)
    # Per dtype, a GEMM's fraction of that dtype's peak by its rows (M, the tokens), measured at a
    # few row counts (validate/calibrate.py on a CPU, where a few rows reach neither the large-GEMM
    # rate nor the weights' streaming rate): where given, the kernel model's GEMM time instead of
    # the GPU's tiles and waves (kernel_time.KernelTimer). ((rows, efficiency), ...) by rows.
    gemm_efficiency_by_rows: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    # Per dtype, a fused attention call's fraction of that dtype's peak by its query rows (n_q),
    # measured at a few query counts (validate/calibrate.py on a CPU: torch's sdpa, whose rate
    # follows its queries as a GEMM's follows its rows): where given, the kernel model's attention
    # efficiency instead of kernel_facts.json's published GPU figures. ((queries, efficiency), ...).
    attention_efficiency_by_queries: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    # The time one eager PyTorch op takes to dispatch (a microbenchmark): on a CPU, with the ops
    # each leaf launches (kernel_facts.json "eager_ops"), what an eager leaf pays instead of one
    # overhead_s_per_block; on a GPU, the host's time per op of an eager step, which runs
    # alongside the GPU's (kernel_time.host_bound_seconds). None: not measured (the launch per
    # leaf stands).
    dispatch_s_per_op: float | None = None
    # The host's time per aten op in eager module code (a microbenchmark: validate/calibrate.py
    # module_seconds_per_op, transformers' Llama decoder layers at one token and a tiny width, their
    # forward over the ops it dispatches): what an op inside a model's nn.Modules pays beyond a bare
    # op's dispatch (module calls, F.linear's arguments, the views around each product). Where
    # given, the op time of a counted eager implementation's ops, which are module code, in place
    # of dispatch_s_per_op (eager_op_s; docs/time.md). None: dispatch_s_per_op stands.
    module_s_per_op: float | None = None
    # The bandwidth a kernel that streams memory once and reduces it on chip reaches (a GEMV's
    # weights: a read-and-reduce microbenchmark such as BabelStream's Dot, with its source): the
    # kernel-level time model's rate for the bytes of a GEMM. 0: bandwidth x efficiency's memory.
    gemv_bandwidth_bytes_per_s: float = 0.0
    # The GPU generation (ampere, ada, hopper, blackwell, cdna3): which published attention-kernel
    # efficiencies apply (costmodel/kernel_facts.json). Empty: none do.
    architecture: str = ""
    # Dollars per GPU-hour (optional: a rental price, with its source in `source`); None: unknown.
    price_per_gpu_hour: float | None = None

    @property
    def eager_op_s(self) -> float | None:
        """The time each op of a counted eager implementation pays (kernel_facts.json "eager_ops" on
        a CPU, "eager_step_ops" on a GPU: both count the ops of a model's module code): the module
        code's time per op where the file measures it, else the bare op's dispatch time; None where
        it states neither (the launch per leaf stands)."""
        return self.module_s_per_op if self.module_s_per_op is not None else self.dispatch_s_per_op

    @property
    def issues_ahead(self) -> bool:
        """Whether the host drives this device asynchronously (a GPU: kernels queued on a stream
        while the host goes on) rather than running each op in its own thread: a CPU, which its
        file names by architecture "cpu" (`hardware --measure` on a CPU writes it) or, in files
        written before that field, by a GEMM table by rows."""
        return self.architecture != "cpu" and self.sm_count > 0 and not self.gemm_efficiency_by_rows

    def link(self, span: int) -> float:
        """The bandwidth of a group that spans `span` consecutive GPUs (within a node, or not)."""
        bandwidth = (self.intra_node_bandwidth_bytes_per_s if span <= self.gpus_per_node
                     else self.inter_node_bandwidth_bytes_per_s)
        if not bandwidth > 0:
            raise ConfigError(f"hardware {self.name}: no interconnect bandwidth for a group of {span} GPUs.")
        return bandwidth

    def __post_init__(self) -> None:
        if not self.vector_flops_per_s > 0:
            object.__setattr__(self, "vector_flops_per_s", self.flops_per_s.get("fp32", 0.0))
        if not self.vector_flops_per_s > 0:
            raise ConfigError(f"hardware {self.name}: no vector_flops_per_s and no fp32 peak to stand for it (the "
                              f"non-matmul ops' rate); give vector_flops_per_s.")
        scale = self.clock_scale
        if scale != 1.0:  # the peaks as this limit runs them; the datasheet's stay in `source`
            object.__setattr__(self, "flops_per_s", {k: v * scale for k, v in self.flops_per_s.items()})
            object.__setattr__(self, "vector_flops_per_s", self.vector_flops_per_s * scale)

    @property
    def clock_scale(self) -> float:
        """The fraction of the datasheet's compute peaks a clock or power limit leaves.

        A clock limit scales them by limit / boost clock (tensor-core throughput is per clock).
        A power limit alone scales them by (limit / board power)^(1/3): dynamic power goes as
        f V^2 and voltage roughly with frequency, so the clock goes as the cube root of power (a
        stated first-order model, docs/time.md). Memory bandwidth does not scale (HBM has its
        own clock)."""
        if self.clock_limit_mhz and self.clock_mhz:
            return min(1.0, self.clock_limit_mhz / self.clock_mhz)
        if self.power_limit_watts and self.power_watts:
            return min(1.0, (self.power_limit_watts / self.power_watts) ** (1 / 3))
        return 1.0

    @property
    def training_memory_bytes(self) -> int:
        """What a training run can allocate: the capacity less the reserve."""
        return self.memory_bytes - self.memory_reserve_bytes

    @property
    def serving_memory_bytes(self) -> int:
        """What a serving engine plans with: the utilisation fraction of the capacity, less the
        reserve (vLLM counts the CUDA context and other non-torch memory inside its fraction)."""
        return math.floor(self.memory_bytes * self.serving_memory_utilization) - self.memory_reserve_bytes

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
    def from_dict(cls, data: Any, source: str) -> "Hardware":
        """A Hardware from a hardware file's JSON, every field checked (one sentence per bad
        field, all on one line); `source` names the file in the message."""
        problems = schema_problems(data)
        if problems:
            raise ConfigError(f"{source}: not a valid hardware file: {'; '.join(problems)}.")
        network = data.get("interconnect") or {}
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
            vector_flops_per_s=float(data.get("vector_flops_per_s", 0.0)),
            gpus_per_node=int(network.get("gpus_per_node", 1)),
            intra_node_bandwidth_bytes_per_s=float(network.get("intra_node_bandwidth_bytes_per_s", 0.0)),
            inter_node_bandwidth_bytes_per_s=float(network.get("inter_node_bandwidth_bytes_per_s", 0.0)),
            collective_latency_s=float(network.get("collective_latency_s", 0.0)),
            matmul_efficiency={str(k): float(v) for k, v in data.get("matmul_efficiency", {}).items()},
            sustained_matmul_efficiency={str(k): float(v)
                                         for k, v in data.get("sustained_matmul_efficiency", {}).items()},
            gemm_efficiency_by_rows={str(dtype): tuple(sorted((int(m), float(e)) for m, e in table.items()))
                                     for dtype, table in data.get("gemm_efficiency_by_rows", {}).items()},
            attention_efficiency_by_queries={
                str(dtype): tuple(sorted((int(m), float(e)) for m, e in table.items()))
                for dtype, table in data.get("attention_efficiency_by_queries", {}).items()},
            **{name: SCHEMA[name].kind(data[name]) for name in OPTIONAL_NUMBERS if name in data},
        )

    def to_dict(self) -> dict[str, Any]:
        """The hardware file of this Hardware (at its datasheet peaks: a clock or power limit is
        written as the limit, not folded into the peaks)."""
        scale = self.clock_scale
        out: dict[str, Any] = {
            "name": self.name, "description": self.description,
            "flops_per_s": {k: v / scale for k, v in self.flops_per_s.items()},
            "vector_flops_per_s": self.vector_flops_per_s / scale,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s, "memory_bytes": self.memory_bytes,
            "efficiency": dict(self.efficiency), "matmul_efficiency": dict(self.matmul_efficiency),
            "source": self.source,
            "overhead_s_per_block": self.overhead_s_per_block, "default_dtype": self.default_dtype,
            "interconnect": {
                "gpus_per_node": self.gpus_per_node,
                "intra_node_bandwidth_bytes_per_s": self.intra_node_bandwidth_bytes_per_s,
                "inter_node_bandwidth_bytes_per_s": self.inter_node_bandwidth_bytes_per_s,
                "collective_latency_s": self.collective_latency_s,
            },
        }
        if self.sustained_matmul_efficiency:
            out["sustained_matmul_efficiency"] = dict(self.sustained_matmul_efficiency)
        if self.gemm_efficiency_by_rows:
            out["gemm_efficiency_by_rows"] = {dtype: {str(m): e for m, e in table}
                                              for dtype, table in self.gemm_efficiency_by_rows.items()}
        if self.attention_efficiency_by_queries:
            out["attention_efficiency_by_queries"] = {dtype: {str(m): e for m, e in table}
                                                      for dtype, table in self.attention_efficiency_by_queries.items()}
        out.update({name: getattr(self, name) for name in OPTIONAL_NUMBERS if getattr(self, name) is not None})
        return out


# ---------------------------------------------------------------------------------------------
# The schema: each field, its type, its range and what it means (docs/time.md prints this table).

@dataclass(frozen=True)
class Field:
    kind: type  # float, int or str
    meaning: str
    required: bool = False
    low: float | None = None  # smallest allowed value (inclusive unless strict)
    strict: bool = False  # low is exclusive
    high: float | None = None  # largest allowed value (inclusive)

    def problem(self, name: str, value: Any) -> str | None:
        """What is wrong with `value` for this field, as a sentence; None when it is right."""
        if self.kind is str:
            return None if isinstance(value, str) else f"{name} must be a string, got {show(value)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{name} must be a number, got {show(value)}"
        if self.kind is int and value != int(value):
            return f"{name} must be a whole number, got {show(value)}"
        if self.low is not None and (value <= self.low if self.strict else value < self.low):
            bound = "greater than" if self.strict else "at least"
            return f"{name} must be {bound} {self.low:g}, got {show(value)}"
        if self.high is not None and value > self.high:
            return f"{name} must be at most {self.high:g}, got {show(value)}"
        return None


SCHEMA: dict[str, Field] = {
    "name": Field(str, "the name the CLI shows", required=True),
    "description": Field(str, "the product, as its datasheet names it"),
    "source": Field(str, "where each number comes from"),
    "flops_per_s": Field(dict, f"dense matmul FLOP/s per dtype ({', '.join(PEAK_DTYPES)}); no sparsity",
                         required=True),
    "vector_flops_per_s": Field(float, "FLOP/s of the non-matmul ops (the FP32 non-tensor peak); 0: the fp32 peak", low=0),
    "bandwidth_bytes_per_s": Field(float, "memory bandwidth, bytes/s", required=True, low=0, strict=True),
    "copy_bandwidth_bytes_per_s": Field(float, "a measured copy bandwidth (calibration, informational)", low=0),
    "memory_bytes": Field(int, "memory capacity, bytes", required=True, low=0, strict=True),
    "efficiency": Field(dict, "fractions of the peaks a run reaches: {compute, memory}, each in (0, 1]"),
    "matmul_efficiency": Field(dict, "per dtype, the fraction of its peak large matmuls reach (a "
                               "microbenchmark such as MAMF), each in (0, 1]; the kernel time model's GEMM efficiency"),
    "sustained_matmul_efficiency": Field(dict, "per dtype, the fraction of its peak matmuls hold under sustained "
                                         "full load (a microbenchmark such as MSMF), each in (0, 1]; the kernel "
                                         "time model's GEMM efficiency for training steps (omitted: matmul_efficiency)"),
    "gemm_efficiency_by_rows": Field(dict, "per dtype, {rows: the fraction of its peak a GEMM of that many rows "
                                     "(tokens) reaches}, each in (0, 1], measured (validate/calibrate.py on a "
                                     "CPU); the kernel time model's GEMM efficiency instead of tiles and waves"),
    "attention_efficiency_by_queries": Field(dict, "per dtype, {queries: the fraction of its peak a fused attention "
                                             "call of that many query rows reaches}, each in (0, 1], measured "
                                             "(validate/calibrate.py on a CPU: torch's sdpa); the kernel time model's "
                                             "attention efficiency instead of kernel_facts.json's"),
    "overhead_s_per_block": Field(float, "fixed launch time of one block's kernels, seconds", low=0),
    "dispatch_s_per_op": Field(float, "time one eager PyTorch op takes to dispatch, seconds (a microbenchmark); "
                               "on a CPU an eager leaf pays it per op it launches (kernel_facts.json eager_ops); "
                               "on a GPU an eager decode step takes the longer of its kernels and its ops at this "
                               "time (kernel_facts.json eager_step_ops)", low=0),
    "module_s_per_op": Field(float, "the host's time per aten op in eager module code, seconds (a microbenchmark: "
                             "validate/calibrate.py module_seconds_per_op, transformers' Llama decoder layers at one "
                             "token and a tiny width, their forward over the ops it dispatches); where given, a "
                             "counted eager implementation's ops (module code) take it in place of dispatch_s_per_op "
                             "(so 0 is refused: it would make every such op free)", low=0, strict=True),
    "gemv_bandwidth_bytes_per_s": Field(float, "the bandwidth a read-and-reduce stream reaches (a microbenchmark "
                                        "such as BabelStream's Dot), bytes/s: the kernel time model's rate for "
                                        "a GEMM's bytes (0 or omitted: bandwidth x efficiency's memory)", low=0),
    "graph_kernel_s": Field(float, "GPU-side seconds each kernel replayed from a CUDA graph takes beyond its "
                            "work (a measured empty-kernel gap, its source in `source`); 0: none known", low=0),
    "dram_kernel_startup_s": Field(float, "fixed seconds a kernel streaming from DRAM takes beyond its bytes at the "
                                   "bandwidth and beyond graph_kernel_s (the intercept of T = a + V/b over "
                                   "DRAM-resident sizes, less graph_kernel_s; its source in `source`); "
                                   "charged to each GEMM and attention call; 0: none known", low=0),
    "default_dtype": Field(str, "the dtype a simulation uses when none is asked for; must have a peak"),
    "interconnect": Field(dict, "gpus_per_node, intra_node_bandwidth_bytes_per_s, "
                          "inter_node_bandwidth_bytes_per_s (per GPU, per direction), collective_latency_s, source"),
    "architecture": Field(str, "the GPU generation (ampere, ada, hopper, blackwell, cdna3): which attention-kernel figures apply; "
                               "\"cpu\" for a CPU (each op runs in the thread that issues it)"),
    "sm_count": Field(int, "streaming multiprocessors (AMD: compute units)", low=0),
    "clock_mhz": Field(float, "the datasheet's boost clock, MHz", low=0),
    "clock_limit_mhz": Field(float, "a clock limit (nvidia-smi -lgc); scales the compute peaks", low=0),
    "power_watts": Field(float, "the board power the datasheet's peaks are at, W", low=0),
    "power_limit_watts": Field(float, "a power cap (nvidia-smi -pl); scales the compute peaks as its cube root", low=0),
    "memory_reserve_bytes": Field(int, "memory no run can use: CUDA context, cuBLAS and NCCL workspaces; "
                                  "less than memory_bytes x serving_memory_utilization", low=0),
    "serving_memory_utilization": Field(float, "the fraction of memory a serving engine plans with "
                                        "(vLLM's gpu_memory_utilization)", low=0, strict=True, high=1),
    "price_per_gpu_hour": Field(float, "dollars per GPU-hour (optional: a rental price, its source in "
                                "`source`); what --price gives when not set", low=0),
}
OPTIONAL_NUMBERS = ("architecture", "graph_kernel_s", "dram_kernel_startup_s", "sm_count", "dispatch_s_per_op", "module_s_per_op", "clock_mhz", "clock_limit_mhz",
                    "power_watts", "power_limit_watts", "memory_reserve_bytes", "serving_memory_utilization",
                    "price_per_gpu_hour", "gemv_bandwidth_bytes_per_s")
INTERCONNECT: dict[str, Field] = {
    "gpus_per_node": Field(int, "GPUs one node (NVLink domain) holds", low=1),
    "intra_node_bandwidth_bytes_per_s": Field(float, "between two GPUs of a node, per direction", low=0),
    "inter_node_bandwidth_bytes_per_s": Field(float, "between nodes, per GPU, per direction", low=0),
    "collective_latency_s": Field(float, "fixed latency of one collective call", low=0),
    "source": Field(str, "where the interconnect's numbers come from"),
}


def schema_problems(data: Any) -> list[str]:
    """Every problem of a hardware file's JSON, one sentence each (empty: a valid file)."""
    if not isinstance(data, dict):
        return [f"a hardware file is a JSON object, got {type(data).__name__}"]
    problems = [f"unknown field {show(k)} (known: {', '.join(SCHEMA)})" for k in data
                if k not in SCHEMA and not str(k).startswith("_")]
    problems += [f"{name} is missing" for name, spec in SCHEMA.items() if spec.required and name not in data]
    for name, spec in SCHEMA.items():
        if name in data and spec.kind is not dict:
            problems.append(spec.problem(name, data[name]))
    problems += _peak_problems(data)
    problems += _section_problems(data, "efficiency", {k: Field(float, "", low=0, strict=True, high=1)
                                                      for k in ("compute", "memory")})
    problems += _section_problems(data, "interconnect", INTERCONNECT)
    for section in ("matmul_efficiency", "sustained_matmul_efficiency"):
        problems += _section_problems(data, section, {k: Field(float, "", low=0, strict=True, high=1)
                                                      for k in PEAK_DTYPES})
    problems += _rows_problems(data, "gemm_efficiency_by_rows", "rows")
    problems += _rows_problems(data, "attention_efficiency_by_queries", "queries")
    if not any(problems):
        problems.append(_reserve_problem(data))
    return [p for p in problems if p]


def _reserve_problem(data: dict) -> str | None:
    """The reserve must leave memory to plan with (else every fit reads a negative capacity);
    checked on fields already known to be numbers in range."""
    reserve = data.get("memory_reserve_bytes", 0)
    utilization = data.get("serving_memory_utilization", Hardware.serving_memory_utilization)
    plannable = math.floor(data["memory_bytes"] * utilization)
    if reserve < plannable:
        return None
    return (f"memory_reserve_bytes ({reserve}) must be less than the memory a serving engine plans with, "
            f"memory_bytes x serving_memory_utilization ({data['memory_bytes']} x {utilization:g} = {plannable})")


def _rows_problems(data: dict, field_name: str, counted: str) -> list[str | None]:
    """A table of efficiency by a count (gemm_efficiency_by_rows: rows; attention_efficiency_by_queries:
    queries): {dtype: {count: efficiency}}, the count a whole number >= 1 (as JSON writes it, a
    string), each efficiency in (0, 1]."""
    tables = data.get(field_name)
    if tables is None:
        return []
    if not isinstance(tables, dict):
        return [f"{field_name} must be an object of dtype: {{{counted}: efficiency}}, got {show(tables)}"]
    problems: list[str | None] = []
    what = {"rows": "a row count", "queries": "a query count"}[counted]
    for dtype, table in tables.items():
        name = f"{field_name}.{dtype}"
        if dtype not in PEAK_DTYPES:
            problems.append(f"{field_name} has an unknown dtype {show(dtype)} (known: {', '.join(PEAK_DTYPES)})")
        elif not isinstance(table, dict) or not table:
            problems.append(f"{name} must be a non-empty object of {counted}: efficiency, got {show(table)}")
        else:
            problems += [f"{name} has {what} {show(m)} that is not a whole number of at least 1"
                         for m in table if not _row_count(m)]
            problems += [Field(float, "", low=0, strict=True, high=1).problem(f"{name}.{m}", e) for m, e in table.items()]
    return problems


def _row_count(m: Any) -> bool:
    """A row count as a table's key: a whole number >= 1, or its digits (JSON's keys are strings)."""
    if isinstance(m, str):
        return m.isdigit() and int(m) >= 1
    return isinstance(m, int) and not isinstance(m, bool) and m >= 1


def _peak_problems(data: dict) -> list[str | None]:
    peaks = data.get("flops_per_s")
    if peaks is None:
        return []
    if not isinstance(peaks, dict) or not peaks:
        return [f"flops_per_s must be an object of dtype: FLOP/s, got {show(peaks)}"]
    problems = [f"flops_per_s has an unknown dtype {show(k)} (known: {', '.join(PEAK_DTYPES)})"
                for k in peaks if k not in PEAK_DTYPES]
    problems += [Field(float, "", low=0, strict=True).problem(f"flops_per_s.{k}", v) for k, v in peaks.items()]
    default = data.get("default_dtype", "bf16")
    if isinstance(default, str) and default not in peaks and "default_dtype" in data:
        problems.append(f"default_dtype {show(default)} has no peak in flops_per_s")
    return problems


def _section_problems(data: dict, section: str, fields: dict[str, Field]) -> list[str | None]:
    value = data.get(section)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{section} must be an object, got {show(value)}"]
    problems: list[str | None] = [f"{section} has an unknown field {show(k)} (known: {', '.join(fields)})"
                                  for k in value if k not in fields]
    problems += [fields[k].problem(f"{section}.{k}", v) for k, v in value.items() if k in fields]
    return problems


# ---------------------------------------------------------------------------------------------
# Finding a hardware: a preset's name (any case), `local`, or a path to a hardware file.

def hardware_names() -> list[str]:
    return sorted(p.stem for p in HARDWARE_DIR.glob("*.json")) + ["local"]


def normalized_name(name: str) -> str:
    """A preset's name as typed any way: case, spaces and underscores do not matter."""
    return "-".join(name.strip().lower().replace("_", " ").split())


def is_hardware_path(name: str) -> bool:
    return name.endswith(".json") or os.sep in name or "/" in name


def load_hardware(name: str) -> Hardware:
    """A hardware preset (any case), a path to a hardware file, or `local` (read from the
    calibration cache, see validate/calibrate.py)."""
    if is_hardware_path(name):
        return load_hardware_file(Path(name))
    key = normalized_name(name)
    if key == "local":
        return _load_local()
    path = HARDWARE_DIR / f"{key}.json"
    if not path.is_file():
        import difflib

        close = difflib.get_close_matches(key, hardware_names(), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else f" Known: {', '.join(hardware_names())}."
        raise ConfigError(f"unknown hardware {show(name)}.{hint} A path to a hardware file (.json) is also taken.")
    return Hardware.from_dict(json.loads(path.read_text()), source=str(path))


def load_hardware_file(path: Path) -> Hardware:
    """A user's hardware file (the schema of docs/time.md)."""
    if not path.is_file():
        raise ConfigError(f"hardware file {show(str(path))} does not exist.")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(f"{path}: not JSON ({str(error).splitlines()[0]}).") from None
    return Hardware.from_dict(data, source=str(path))


def _load_local() -> Hardware:
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


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the peaks a real run reaches (stated, settable). `given`: the fractions a user
    set (--compute-efficiency / --memory-efficiency); the kernel model keeps a hardware file's
    measured rate for the other (its MAMF for GEMMs, its read-and-reduce rate for a GEMM's bytes)."""

    compute: float = 1.0
    memory: float = 1.0
    given: tuple[str, ...] = ("compute", "memory")

    def __post_init__(self) -> None:
        unknown = set(self.given) - {"compute", "memory"}
        if unknown:
            raise ConfigError(f"efficiency: 'given' names compute and memory only, got {sorted(unknown)}.")
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
