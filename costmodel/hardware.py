"""Hardware as data: the presets (costmodel/hardware/*.json), a user's own file, and this machine's
calibration, all in one documented schema (docs/time.md, "The hardware file").

A Hardware is a machine's dense matmul FLOP/s per dtype (fp8 where the GPU has it), the vector
FLOP/s of the other ops, memory bandwidth and capacity, the fractions of those peaks a real run
reaches, a fixed overhead per block, its interconnect, a clock or power limit that scales the
compute peaks, and the memory a run cannot use (the CUDA context's reserve; a serving engine's
utilisation fraction). `local` is this machine, measured by validate/calibrate.py and cached.
Every field is checked when the file is read: one sentence per bad field, all on one line.
Pure data: the roofline that divides by these rates is costmodel/roofline_model.py; the schema
is hardware_schema.py, the presets' names and aliases hardware_presets.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError, show
from .kernel_facts_file import borrowed_host_op_s
# Finding a hardware by name (hardware_presets.py), re-exported where callers have always imported it.
from .hardware_presets import (HARDWARE_ALIASES_FILE, HARDWARE_DIR, close_presets, hardware_aliases,  # noqa: F401
                               hardware_names, is_hardware_path, local_cache_path, normalized_name, preset_key,
                               preset_names, refuse_a_count, refused_hardware_names)
from .hardware_schema import (EFFICIENCY_STAND_IN, GENERATIONS, INTERCONNECT, OPTIONAL_NUMBERS, UNSTATED_AS_ZERO, VENDORS,  # noqa: F401
                              PEAK_DTYPES, SCHEMA, SERVING_MEMORY_UTILIZATION, Field, schema_problems,
                              copied_device_memory_problem, copied_fabric_problem, default_dtype_of,
                              serving_memory)  # the schema and serving_memory, re-exported
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
    # The kernel model charges it to each GEMM and attention call (weights, KV caches: DRAM). 0: none.
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
    # "pcie" where a node's GPUs meet over PCIe only (no NVLink, no NVSwitch): its rings' collectives take NCCL's
    # own latency model for a PCIe ring (collectives.pcie_ring_seconds) in place of collective_latency_s.
    intra_node_fabric: str = ""
    # GPUs one host holds where its NVLink domains (gpus_per_node) are smaller, as NVLink bridges join an A100 PCIe
    # box's GPUs in pairs: a collective past a node but inside the host runs NCCL's one ring through the host's GPUs,
    # at its slowest hop, the PCIe link (collectives.collective_seconds). 0: a host is a node.
    gpus_per_host: int = 0
    # The preset whose measured collectives (nccl_facts.json, keyed by preset names) this GPU's
    # nodes share; "" means the file's own name (network_name). cluster: the cluster whose collectives
    # were measured across its nodes (nccl_facts.json "cluster_busbw"; collectives.cluster_busbw) or inside
    # one (its "in_node": collectives.in_node_fraction); "": none.
    network_of: str = ""
    cluster: str = ""
    # Streaming multiprocessors (compute units on AMD): what GEMM wave quantization divides over.
    sm_count: int = 0
    # Clocks and power: the datasheet's boost clock and board power, and a limit a user sets
    # (`nvidia-smi -lgc` / `-pl`). The compute peaks scale with the clock (see clock_scale).
    clock_mhz: float = 0.0
    clock_limit_mhz: float = 0.0
    power_watts: float = 0.0
    power_limit_watts: float = 0.0
    # Memory a run cannot use (CUDA context, cuBLAS and NCCL workspaces), the share a serving engine
    # fills (vLLM's gpu_memory_utilization), what the device reports to CUDA (mem_get_info; 0: unknown).
    memory_reserve_bytes: int = 0
    serving_memory_utilization: float = SERVING_MEMORY_UTILIZATION
    device_memory_bytes: int = 0
    # The fraction of each dtype's peak that large matmuls reach (a microbenchmark, with its
    # source): the kernel-level time model's GEMM efficiency (costmodel/kernel_time.py).
    matmul_efficiency: dict[str, float] = field(default_factory=dict)
    # The fraction of each dtype's peak matmuls hold under sustained full load, once the board sits
    # at its power limit and the clock below boost (MSMF, a microbenchmark): the kernel model's GEMM
    # efficiency for training steps, which run the GPU saturated. Omitted for a dtype: matmul_efficiency
    # x the architecture's measured MSMF / MAMF (kernel_rates.sustained_efficiency), else matmul_efficiency.
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
    # Per dtype, a one-row product's (a GEMV's) fraction of that dtype's peak by its inner width K,
    # measured at a few widths (validate/calibrate.py on a CPU, beside the rows table's chain: the
    # BLAS runs one row as a GEMV, one dot product of K per output, whose rate per byte falls with K
    # on a CPU). Where given, a one-row GEMM's efficiency instead of the rows table's at one row.
    # ((K, efficiency), ...) by K.
    gemv_efficiency_by_inner: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    # The time one eager PyTorch op takes to dispatch (a microbenchmark): on a CPU, what an eager
    # leaf pays per op it launches (kernel_facts.json "eager_ops") instead of one overhead_s_per_block;
    # on a GPU, the host's time per op of an eager step, which runs alongside the GPU's
    # (kernel_time.host_bound_seconds). None: not measured (eager_op_s: a GPU borrows one).
    dispatch_s_per_op: float | None = None
    # The host's time per aten op in eager module code (a microbenchmark: validate/calibrate.py
    # module_seconds_per_op, transformers' Llama decoder layers at one token): where given, the op
    # time of a counted eager implementation's ops in place of dispatch_s_per_op (eager_op_s).
    module_s_per_op: float | None = None
    # The host's time per aten op of transformers' continuous-batching engine's steps (a
    # microbenchmark: validate/calibrate.py engine_seconds_per_op): where given, the serving step's
    # counted engine ops take it in place of eager_op_s (engine_op_s).
    engine_s_per_op: float | None = None
    host_module_call_s: float | None = None  # a module call's host CPU time (hardware_schema.py; layout/host_syncs.py)
    # Per copy op of the paged cache's path (index_select: the cache's gather of the keys; clone:
    # repeat_kv's copy per query head), (seconds a call takes beyond its bytes, the rate of the bytes
    # it reads and writes), measured cold (validate/calibrate.py cold_copies on a CPU: calls of several
    # sizes with a 64 MiB read between them, least squares). Where given, the serving step charges
    # each such copy calls x the first + bytes / the second (serving/eager_step.py) instead of its
    # bytes at the bandwidth. Empty: the bandwidth.
    cold_copies: dict[str, tuple[float, float]] = field(default_factory=dict)
    # The bandwidth a kernel that streams memory once and reduces it on chip reaches (a GEMV's
    # weights: a read-and-reduce microbenchmark such as BabelStream's Dot, with its source): the
    # kernel-level time model's rate for the bytes of a GEMM. 0: bandwidth x efficiency's memory.
    gemv_bandwidth_bytes_per_s: float = 0.0
    # The bandwidth a stream that writes as much as it reads reaches (BabelStream's Copy, from the run that
    # gives gemv_bandwidth): the kernel-level time model's rate for the bytes of a GEMM that writes more
    # than it reads (KernelTimer.gemm_bytes_seconds). 0: not measured (gemv_bandwidth's rate for every GEMM).
    copy_stream_bandwidth_bytes_per_s: float = 0.0
    # The GPU generation (volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3): which published attention-kernel
    # efficiencies apply (costmodel/kernel_facts.json). Empty: none do.
    architecture: str = ""
    # Dollars per GPU-hour (optional: a rental price, with its source in `source`); None: unknown.
    price_per_gpu_hour: float | None = None
    # The path of the user's hardware file this was read from (load_hardware_file), "" for a preset or `local`:
    # what names it on a command line, where its `name` is no preset (simulate's advice named a file's
    # "my-h100", which plan and estimate then refused as unknown hardware). Not part of the hardware.
    file: str = field(default="", compare=False)

    @property
    def argument(self) -> str:
        """What `--hardware` takes to name this hardware again: the file it was read from, else its name."""
        return self.file or self.name

    def input_fields(self) -> dict[str, str]:
        """A result's `inputs` naming this hardware: its name, and the file it was read from where it was
        (`hardware_file`, which reports/simulate_text.py's advice names)."""
        return {"hardware": self.name, **({"hardware_file": self.file} if self.file else {})}

    @property
    def eager_op_s(self) -> float | None:
        """The time each op of a counted eager implementation pays (kernel_facts.json "eager_ops" on
        a CPU, "eager_step_ops" on a GPU: both count the ops of a model's module code): the module
        code's time per op where the file measures it, else the bare op's dispatch time; where it
        states neither, a GPU borrows the project's H200 host's (host_op_borrowed), a CPU has None
        (the launch per leaf stands)."""
        own = self.module_s_per_op if self.module_s_per_op is not None else self.dispatch_s_per_op
        return borrowed_host_op_s() if self.host_op_borrowed else own

    @property
    def host_op_borrowed(self) -> bool:
        """Whether eager_op_s is borrowed (kernel_facts.json "eager_host_op_default"): a GPU whose
        file states neither module_s_per_op nor dispatch_s_per_op; the host is not the GPU's own."""
        return self.issues_ahead and self.module_s_per_op is None and self.dispatch_s_per_op is None

    @property
    def engine_op_s(self) -> float | None:
        """The time each op of transformers' continuous-batching engine's step pays (kernel_facts.json
        "eager_ops", the engine's counted ops): engine_s_per_op where the file measures it, else eager_op_s."""
        return self.engine_s_per_op if self.engine_s_per_op is not None else self.eager_op_s

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
            where = "within" if span <= self.gpus_per_node else "across"
            raise ConfigError(f"hardware {self.name}: no interconnect bandwidth for a group of {span} GPUs ({where} "
                              f"nodes of {self.gpus_per_node}); a hardware file's interconnect states gpus_per_node, "
                              "intra_node_bandwidth_bytes_per_s and inter_node_bandwidth_bytes_per_s (per GPU, per "
                              "direction; docs/time.md).")
        return bandwidth

    def __post_init__(self) -> None:
        if self.intra_node_fabric not in ("", "pcie"):
            raise ConfigError(f"hardware {self.name}: interconnect intra_node_fabric must be \"pcie\" (a node whose GPUs "
                              f"meet over PCIe only) or left out, got {show(self.intra_node_fabric)}.")
        if self.gpus_per_host and (self.gpus_per_host <= self.gpus_per_node or self.intra_node_fabric):
            raise ConfigError(f"hardware {self.name}: interconnect gpus_per_host ({self.gpus_per_host}) names a host "
                              f"of NVLink domains larger than a node of {self.gpus_per_node} GPUs and joined over "
                              "PCIe; give more GPUs than gpus_per_node, without intra_node_fabric, or leave it out.")
        if not self.vector_flops_per_s > 0:
            object.__setattr__(self, "vector_flops_per_s", self.flops_per_s.get("fp32", 0.0))
        if not self.vector_flops_per_s > 0:
            raise ConfigError(f"hardware {self.name}: no vector_flops_per_s and no fp32 peak to stand for it (the "
                              f"non-matmul ops' rate); give vector_flops_per_s.")
        presets = preset_names()  # not `local`: it is measured here, not a preset
        named = preset_key(self.network_of or self.name)  # as --hardware reads it: 'H100-SXM', 'h100' (round 23)
        if named in presets:  # a preset: its own measurements, or those network_of names
            object.__setattr__(self, "network_of", named)
        elif self.network_of:
            raise ConfigError(f"hardware {self.name}: network_of {show(self.network_of)} is not a preset; it names the "
                              f"preset whose measured collectives this GPU's nodes share: one of {', '.join(presets)}.")
        scale = self.clock_scale
        if scale != 1.0:  # the peaks as this limit runs them; the datasheet's stay in `source`
            object.__setattr__(self, "flops_per_s", {k: v * scale for k, v in self.flops_per_s.items()})
            object.__setattr__(self, "vector_flops_per_s", self.vector_flops_per_s * scale)

    def replace(self, **changes: Any) -> "Hardware":
        """This hardware with `changes` in place (dataclasses.replace), from its datasheet peaks:
        __post_init__ scales the peaks by a clock or power limit, so replacing the scaled ones
        would scale them twice (a 500 W file read as 500^(2/3) of 700 W). A changed limit
        applies anew."""
        import dataclasses

        return dataclasses.replace(self, **{**self.datasheet_rates(), **changes})

    def datasheet_rates(self) -> dict[str, Any]:
        """The compute peaks as the datasheet gives them, whatever clock or power limit this file
        runs at (the one place a limit is undone): flops_per_s and vector_flops_per_s."""
        scale = self.clock_scale
        return {"flops_per_s": {k: v / scale for k, v in self.flops_per_s.items()},
                "vector_flops_per_s": self.vector_flops_per_s / scale}

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
    def usable_memory_bytes(self) -> int:
        """What every fit is taken of: the device's reported memory where known, else the capacity."""
        return self.device_memory_bytes or self.memory_bytes

    @property
    def training_memory_bytes(self) -> int:
        """What a training run can allocate: the device's memory less the reserve."""
        return self.usable_memory_bytes - self.memory_reserve_bytes

    @property
    def serving_memory_bytes(self) -> int:
        """What a serving engine plans with at the file's utilisation (serving_memory)."""
        return serving_memory(self.usable_memory_bytes, self.serving_memory_utilization, self.memory_reserve_bytes)

    def peak(self, dtype: str) -> float:
        if dtype not in self.flops_per_s:
            if self.name == "local":
                raise ConfigError(
                    f"hardware 'local' was calibrated for {', '.join(self.flops_per_s)} only; run "
                    f"`python cli.py hardware --measure --dtype {dtype}` to measure {dtype}."
                )
            raise ConfigError(self.missing_peak(dtype))
        return self.flops_per_s[dtype]

    @property
    def network_name(self) -> str:
        """The name nccl_facts.json's measured collectives are looked up by: network_of, else this
        file's own name."""
        return self.network_of or self.name

    def datasheet_peak(self, dtype: str) -> float:
        """The datasheet's peak for dtype, whatever clock or power limit this file runs at: the
        denominator of MFU and HFU, as papers divide by it (a capped GPU's utilisation reads lower,
        not the same)."""
        self.peak(dtype)  # raises: the dtype has no peak here
        return self.datasheet_rates()["flops_per_s"][dtype]

    @property
    def generation(self) -> str:
        """The architecture as its vendor names it ("CDNA 3", "Hopper"); "" where the file names none."""
        return GENERATIONS.get(self.architecture, self.architecture)

    @property
    def vendor(self) -> str | None:
        """Whose GPU this is ("nvidia", "amd", "cpu": hardware_schema.VENDORS); None where the file names no
        architecture."""
        return VENDORS.get(self.architecture)

    def missing_peak(self, dtype: str) -> str:
        """The one line a dtype without a peak here gets: the GPU, its generation (which says why:
        Volta and Turing have no BF16 tensor cores, nothing before Ada/Hopper FP8) and the dtype to
        give instead, this hardware's default where it has one."""
        generation = self.generation
        why = f" ({generation})" if generation else ""
        other = self.default_dtype if self.default_dtype in self.flops_per_s and self.default_dtype != dtype else None
        other = other or next((d for d in ("bf16", "fp16", "fp32") if d in self.flops_per_s and d != dtype), None)
        advice = f"; use --dtype {other}" if other else ""
        return f"{self.name} has no {dtype} peak{why}{advice}."

    def require_fp8(self, recipe: str | None) -> None:
        """Refuse FP8 (or FP4) training (--fp8 RECIPE) on hardware without the peak the recipe's
        GEMMs run at (layout/fp8.py Recipe.peak: fp8; mxfp8 and fp4 for the block-scaled recipes,
        which only Blackwell's tensor cores run), in one line, before the layout's own checks (whose
        advice, --dtype bf16, a V100 would refuse next)."""
        if recipe is None:
            return
        from .layout.fp8 import RECIPES

        peak = RECIPES[recipe].peak if recipe in RECIPES else "fp8"  # an unknown name: the layout's line
        if peak in self.flops_per_s:
            return
        generation = GENERATIONS.get(self.architecture)
        kind = {"fp8": "FP8", "mxfp8": "block-scaled (MXFP8)", "fp4": "FP4"}[peak]
        if peak == "fp8":
            why = f" ({generation} has no FP8 tensor cores)" if generation and generation != "CPU" else ""
            instead = "leave --fp8 out"
        else:
            # NVIDIA's generations before Blackwell (sm_100) have none; others' (AMD's) not stated here
            why = f" ({generation} has no {kind} tensor cores: Blackwell, sm_100, and later)" \
                if self.architecture in ("volta", "turing", "ampere", "ada", "hopper") else ""
            instead = "use --fp8 current" if "fp8" in self.flops_per_s else "leave --fp8 out"
        raise ConfigError(f"hardware {self.name}: no {kind} peak (flops_per_s[\"{peak}\"]) for --fp8 {recipe}{why}; "
                          f"add it to its hardware file or {instead}.")

    def efficiency_dtype(self, dtype: str) -> str:
        """The dtype whose measured GEMM efficiency (matmul_efficiency, sustained_matmul_efficiency)
        times dtype's GEMMs: dtype itself where the file measures it, else the dtype that stands in
        for it (hardware_schema.EFFICIENCY_STAND_IN: mxfp8 and fp4 take fp8's), else dtype."""
        if dtype in self.matmul_efficiency or dtype in self.sustained_matmul_efficiency:
            return dtype
        return EFFICIENCY_STAND_IN.get(dtype, dtype)

    def require_peak(self, dtype: str) -> None:
        """Refuse a dtype this hardware has no peak for, in one line (missing_peak), before a command
        builds anything on it; a name that is no dtype at all is workload.check_dtype's line
        (`costmodel.simulate(..., dtype="bf17")` and `costmodel.serve` read "h100-sxm has no bf17 peak
        (Hopper); use --dtype bf16", as if the GPU lacked a real dtype; plan has checked it since session 36)."""
        from .workload import check_dtype

        check_dtype("dtype", dtype)
        if dtype not in self.flops_per_s:
            self.peak(dtype)  # raises: `local`'s line (measure it), or missing_peak's

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
            default_dtype=str(default_dtype_of(data)),
            vector_flops_per_s=float(data.get("vector_flops_per_s", 0.0)),
            gpus_per_node=int(network.get("gpus_per_node", 1)),
            intra_node_bandwidth_bytes_per_s=float(network.get("intra_node_bandwidth_bytes_per_s", 0.0)),
            inter_node_bandwidth_bytes_per_s=float(network.get("inter_node_bandwidth_bytes_per_s", 0.0)),
            collective_latency_s=float(network.get("collective_latency_s", 0.0)),
            intra_node_fabric=str(network.get("intra_node_fabric", "")),
            gpus_per_host=int(network.get("gpus_per_host", 0)),
            matmul_efficiency={str(k): float(v) for k, v in data.get("matmul_efficiency", {}).items()},
            sustained_matmul_efficiency={str(k): float(v)
                                         for k, v in data.get("sustained_matmul_efficiency", {}).items()},
            gemm_efficiency_by_rows={str(dtype): tuple(sorted((int(m), float(e)) for m, e in table.items()))
                                     for dtype, table in data.get("gemm_efficiency_by_rows", {}).items()},
            attention_efficiency_by_queries={
                str(dtype): tuple(sorted((int(m), float(e)) for m, e in table.items()))
                for dtype, table in data.get("attention_efficiency_by_queries", {}).items()},
            gemv_efficiency_by_inner={
                str(dtype): tuple(sorted((int(k), float(e)) for k, e in table.items()))
                for dtype, table in data.get("gemv_efficiency_by_inner", {}).items()},
            cold_copies={str(op): (float(stated["s_per_call"]), float(stated["bytes_per_s"]))
                         for op, stated in data.get("cold_copies", {}).items()},
            **{name: SCHEMA[name].kind(data[name]) for name in OPTIONAL_NUMBERS if name in data},
        )

    def to_dict(self) -> dict[str, Any]:
        """The hardware file of this Hardware (at its datasheet peaks: a clock or power limit is
        written as the limit, not folded into the peaks)."""
        out: dict[str, Any] = {
            "name": self.name, "description": self.description, **self.datasheet_rates(),
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
        if self.intra_node_fabric:
            out["interconnect"]["intra_node_fabric"] = self.intra_node_fabric
        if self.gpus_per_host:
            out["interconnect"]["gpus_per_host"] = self.gpus_per_host
        if self.sustained_matmul_efficiency:
            out["sustained_matmul_efficiency"] = dict(self.sustained_matmul_efficiency)
        if self.gemm_efficiency_by_rows:
            out["gemm_efficiency_by_rows"] = {dtype: {str(m): e for m, e in table}
                                              for dtype, table in self.gemm_efficiency_by_rows.items()}
        if self.attention_efficiency_by_queries:
            out["attention_efficiency_by_queries"] = {dtype: {str(m): e for m, e in table}
                                                      for dtype, table in self.attention_efficiency_by_queries.items()}
        if self.gemv_efficiency_by_inner:
            out["gemv_efficiency_by_inner"] = {dtype: {str(k): e for k, e in table}
                                               for dtype, table in self.gemv_efficiency_by_inner.items()}
        if self.cold_copies:
            out["cold_copies"] = {op: {"s_per_call": fixed, "bytes_per_s": rate}
                                  for op, (fixed, rate) in self.cold_copies.items()}
        out.update({name: getattr(self, name) for name in OPTIONAL_NUMBERS if getattr(self, name) is not None
                    and not (name in UNSTATED_AS_ZERO and getattr(self, name) == 0)})  # unknown: omitted
        # network_of: a preset's name only, so that an edited, renamed copy keeps its measured collectives
        return {key: value for key, value in out.items() if value or key not in ("network_of", "cluster")}

# ---------------------------------------------------------------------------------------------
# Reading a hardware: a preset's name in any spelling (hardware_presets.py), `local`, or a path to a
# hardware file.

def load_hardware(name: str) -> Hardware:
    """A hardware preset (any case) or one of its aliases (hardware_aliases.json), a path to a
    hardware file, or `local` (read from the calibration cache, see validate/calibrate.py)."""
    if is_hardware_path(name):
        return load_hardware_file(Path(name))
    key = preset_key(name)  # a refused name is no alias (refused_hardware_names checks)
    if key in refused_hardware_names():
        raise ConfigError(f"hardware {show(name)} {refused_hardware_names()[key]}.")
    if key == "local":
        return _load_local()
    path = HARDWARE_DIR / f"{key}.json"
    if not path.is_file() and "," in name:  # 'h100-sxm,a100-80gb' suggested the V100s
        raise ConfigError(f"--hardware {show(name)}: one GPU here; several, comma-separated, are compared by plan --serve --rate only.")
    if not path.is_file():
        refuse_a_count(name, key)
        from .presets import resolve_name  # a model typed where the GPU goes (--hardware llama3-8b)

        if (model := resolve_name(name)) is not None:
            said = f" ({model})" if model != name.strip().casefold() else ""  # a preset's own name not said twice
            raise ConfigError(f"unknown hardware {show(name)}: {show(name)} names a model{said}, not a GPU; it goes "
                              "to --model, and --hardware takes a GPU preset (`hardware`) or a hardware file (.json).")
        close = close_presets(key)
        hint = f" Did you mean {', '.join(close)}?" if close else f" Known: {', '.join(hardware_names())}."
        raise ConfigError(f"unknown hardware {show(name)}.{hint} A path to a hardware file (.json) is also taken.")
    return Hardware.from_dict(json.loads(path.read_text()), source=str(path))


def load_hardware_file(path: Path) -> Hardware:
    """A user's hardware file (the schema of docs/time.md)."""
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a hardware file (.json).")
    if not path.is_file():
        raise ConfigError(f"hardware file {show(str(path))} does not exist.")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(f"{path}: not JSON ({str(error).splitlines()[0]}).") from None
    hardware = Hardware.from_dict(data, source=str(path))
    _check_copied_preset(hardware, path)
    return hardware.replace(file=str(path))  # from the datasheet peaks: a capped file's limit applied once


def _check_copied_preset(hardware: Hardware, path: Path) -> None:
    """A copy of a preset (`hardware --show` writes network_of) with its bandwidth edited but the
    preset's measured GEMV rate kept: that rate is the preset card's (BabelStream's Dot), and the
    kernel model reads a GEMM's bytes at it, not at the edited bandwidth (torchao's 2.4 TB/s H100
    with the SXM's 3.02 TB/s decoded 8% faster than at its own). Likewise its measured device
    memory (copied_device_memory_problem) and its PCIe fabric (copied_fabric_problem)."""
    name = hardware.network_of
    if not name or (hardware.gemv_bandwidth_bytes_per_s <= 0 and hardware.copy_stream_bandwidth_bytes_per_s <= 0
                    and not hardware.device_memory_bytes and not hardware.intra_node_fabric):  # same-named copies too (round 23)
        return
    preset = load_hardware(name)
    for problem in (copied_device_memory_problem(hardware, preset), copied_fabric_problem(hardware, preset)):
        if problem:
            raise ConfigError(f"hardware file {show(str(path))}: {problem}.")
    if hardware.bandwidth_bytes_per_s == preset.bandwidth_bytes_per_s:
        return
    for field_name, unset in (("gemv_bandwidth_bytes_per_s", "set it to 0 (none measured: bandwidth x efficiency.memory)"),
                              ("copy_stream_bandwidth_bytes_per_s", "leave it out (none measured: the GEMV rate)")):
        rate = getattr(hardware, field_name)
        if 0 < rate == getattr(preset, field_name):
            raise ConfigError(f"hardware file {show(str(path))}: bandwidth_bytes_per_s is {hardware.bandwidth_bytes_per_s:.4g}, "
                              f"not {name}'s {preset.bandwidth_bytes_per_s:.4g}, but {field_name} is still "
                              f"{name}'s measured {rate:.4g}: {unset} or to this card's.")


def _load_local() -> Hardware:
    path = local_cache_path()
    if not path.is_file():
        raise ConfigError("hardware 'local' is not calibrated yet; run `python cli.py hardware --measure`.")
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
