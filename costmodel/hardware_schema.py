"""A hardware file's schema: each field, its type, its range and what it means (docs/time.md prints
this table), and the check that gives one sentence per bad field (costmodel/hardware.py's
Hardware.from_dict runs it before reading a file).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import show
from .errors import unknown_field

#: The matmul dtypes a hardware file may give a peak for (fp8: E4M3/E5M2 tensor cores; int8: IMMA;
#: mxfp8: block-scaled FP8, a scale per 32 elements in the tensor core's own operands, as Blackwell's
#: tcgen05.mma kind::mxf8f6f4 runs it (--fp8 mxfp8); fp4: NVFP4/MXFP4 (E2M1) products, --fp8 nvfp4).
#: A GPU without block-scaled tensor cores (Hopper and earlier) has no mxfp8 key.
PEAK_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "mxfp8", "fp4")
#: The dtypes a run takes as --dtype (spec.DTYPE_BYTES's canonical names): a default_dtype must be one.
WORKLOAD_DTYPES = ("fp32", "fp16", "bf16")

#: The dtype whose measured matmul efficiency (MAMF, MSMF) stands in for a peak's where a hardware
#: file has none of its own: no public microbenchmark times MXFP8 or FP4 GEMMs on the presets'
#: GPUs, so they run at the FP8 tensor cores' measured fraction (an assumption, stated in
#: docs/time.md, not a fit), else at efficiency.compute as any dtype without one.
EFFICIENCY_STAND_IN = {"mxfp8": "fp8", "fp4": "fp8"}


#: The least peak FLOP/s and memory bandwidth a hardware file may state: 1e6 (1 MFLOP/s, 1 MB/s), so a
#: figure typed in TB/s, GB/s, TFLOP/s or GFLOP/s (4.8 or 4,800 for an H200's bandwidth: "prefill 931
#: years") is one error line. A check of the input's unit, not a fitted figure. It was 1e9, "below any
#: GPU's or CPU's", until `hardware --measure` on a 2-core machine shared by other jobs (session 44)
#: measured its decode chain's bandwidth at 0.51 GB/s (its copy at 2.6 GB/s): the file it had just
#: written was refused, and `hardware` said "local: not measured yet".
FLOOR = 1e6
BYTES_PER_S = "bytes per second: an H200's 4.8 TB/s is 4.8e12"
FLOP_PER_S = "FLOP/s: an H200's 989.4 TFLOP/s in bf16 is 9.894e14"
BYTES = "bytes: 141 GB is 141e9, 80 GiB 85899345920"


#: The fastest a PCIe link carries, per direction: PCIe 7.0 x16, 128 GT/s a lane x 16 lanes / 8 = 256 GB/s (512 GB/s
#: both ways; PCI-SIG's PCIe 7.0 specification, released June 2025). A node whose file says its GPUs meet over PCIe
#: only (interconnect intra_node_fabric "pcie") but states a faster link between them is two claims that cannot both
#: hold (an NVLink bridge or switch: 56-900 GB/s a direction among the presets), refused rather than one of them
#: silently winning. A bound on what a file may state, not a figure any time is computed with.
PCIE_MAX_BYTES_PER_S = 256e9
PCIE_HELP = "drop intra_node_fabric where NVLink (a bridge or a switch) joins the GPUs"


@dataclass(frozen=True)
class Field:
    kind: type  # float, int or str
    meaning: str
    required: bool = False
    low: float | None = None  # smallest allowed value (inclusive unless strict)
    strict: bool = False  # low is exclusive
    high: float | None = None  # largest allowed value (inclusive)
    units: str | None = None  # said beside a value under `low`: a figure typed in TB/s, TFLOP/s or GB

    def problem(self, name: str, value: Any) -> str | None:
        """What is wrong with `value` for this field, as a sentence; None when it is right."""
        if self.kind is str:
            if not isinstance(value, str):
                return f"{name} must be a string, got {show(value)}"
            # an empty name printed "llama3.1-8b on  (bf16, ..." and keyed the network lookup by ""
            return f"{name} must not be empty" if self.required and not value.strip() else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{name} must be a number, got {show(value)}"
        if self.kind is int and value != int(value):
            return f"{name} must be a whole number, got {show(value)}"
        if self.low is not None and (value <= self.low if self.strict else value < self.low):
            bound = "greater than" if self.strict else "at least"
            low = f"{int(self.low):,}" if self.low >= 1e6 and self.low == int(self.low) else f"{self.low:g}"
            return f"{name} must be {bound} {low}, got {show(value)}" + (f" ({self.units})" if self.units else "")
        if self.high is not None and value > self.high:
            return f"{name} must be at most {self.high:g}, got {show(value)}"
        return None


SCHEMA: dict[str, Field] = {
    "name": Field(str, "the name the CLI shows (not empty)", required=True),
    "description": Field(str, "the product, as its datasheet names it"),
    "source": Field(str, "where each number comes from"),
    "flops_per_s": Field(dict, f"dense matmul FLOP/s per dtype ({', '.join(PEAK_DTYPES)}); no sparsity",
                         required=True),
    "vector_flops_per_s": Field(float, "FLOP/s of the non-matmul ops (the FP32 non-tensor peak); 0: the fp32 peak", low=0),
    "bandwidth_bytes_per_s": Field(float, f"memory bandwidth, bytes/s (at least {FLOOR:,.0f}: a figure in TB/s or "
                                   "GB/s is refused, not timed as bytes)", required=True, low=FLOOR, units=BYTES_PER_S),
    "copy_bandwidth_bytes_per_s": Field(float, "a measured copy bandwidth (calibration, informational)", low=0),
    "memory_bytes": Field(int, "memory capacity, bytes (at least 1 GiB: a figure in GB is refused)", required=True,
                          low=2**30, units=BYTES),
    "device_memory_bytes": Field(int, "the memory the device reports to CUDA (torch.cuda.mem_get_info's total), "
                                 "bytes: below memory_bytes, as the driver keeps the rest; where given, every fit "
                                 "and serving budget is taken of it instead of memory_bytes (its source in "
                                 "`source`); omitted where no measurement is known", low=0, strict=True),
    "efficiency": Field(dict, "fractions of the peaks a run reaches: {compute, memory}, each in (0, 1]"),
    "matmul_efficiency": Field(dict, "per dtype, the fraction of its peak large matmuls reach (a "
                               "microbenchmark such as MAMF), each in (0, 1]; the kernel time model's GEMM efficiency"),
    "sustained_matmul_efficiency": Field(dict, "per dtype, the fraction of its peak matmuls hold under sustained "
                                         "full load (a microbenchmark such as MSMF), each in (0, 1]; the kernel "
                                         "time model's GEMM efficiency for training steps (omitted: matmul_efficiency x "
                                         "the architecture's measured MSMF / MAMF where kernel_facts.json "
                                         "has one, else matmul_efficiency)"),
    "gemm_efficiency_by_rows": Field(dict, "per dtype, {rows: the fraction of its peak a GEMM of that many rows "
                                     "(tokens) reaches}, each in (0, 1], measured (validate/calibrate.py on a "
                                     "CPU); the kernel time model's GEMM efficiency instead of tiles and waves"),
    "attention_efficiency_by_queries": Field(dict, "per dtype, {queries: the fraction of its peak a fused attention "
                                             "call of that many query rows reaches}, each in (0, 1], measured "
                                             "(validate/calibrate.py on a CPU: torch's sdpa); the kernel time model's "
                                             "attention efficiency instead of kernel_facts.json's"),
    "gemv_efficiency_by_inner": Field(dict, "per dtype, {K: the fraction of its peak a one-row product (a GEMV) of "
                                      "inner width K reaches}, each in (0, 1], measured (validate/calibrate.py on a "
                                      "CPU); a one-row GEMM's efficiency instead of gemm_efficiency_by_rows' at one row"),
    "cold_copies": Field(dict, "per copy op the paged cache's path runs (index_select: the cache's gather of the "
                         "keys; clone: repeat_kv's copy per query head), {s_per_call: a call's fixed seconds, "
                         "bytes_per_s: its rate for the bytes it reads and writes}, measured (validate/calibrate.py "
                         "cold_copies on a CPU: calls of several sizes with a 64 MiB read between them, T = "
                         "s_per_call + bytes / bytes_per_s fitted by least squares); where given, the serving step "
                         "charges each such copy that instead of its bytes at the bandwidth"),
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
    "host_module_call_s": Field(float, "the host CPU's time of one module call, seconds (a published microbenchmark: "
                                "a torch.nn.Linear forward's CPU time, TransformerEngine issue #2053); where given, "
                                "the kernel model prices the calls a Megatron-Core layer issues between its "
                                "MoE host syncs (kernel_facts.json megatron_host_calls) at it", low=0, strict=True),
    "engine_s_per_op": Field(float, "the host's time per aten op of transformers' continuous-batching engine's "
                             "steps, seconds (a microbenchmark: validate/calibrate.py engine_seconds_per_op, a "
                             "compute-free Llama's steps over the ops they dispatch); where given, the serving "
                             "step's counted engine ops take it in place of eager_op_s (module_s_per_op, else dispatch_s_per_op)",
                             low=0, strict=True),
    "gemv_bandwidth_bytes_per_s": Field(float, "the bandwidth a read-and-reduce stream reaches (a microbenchmark "
                                        "such as BabelStream's Dot), bytes/s: the kernel time model's rate for "
                                        "a GEMM's bytes (0 or omitted: bandwidth x efficiency's memory); at most "
                                        "bandwidth_bytes_per_s", low=0),
    "copy_stream_bandwidth_bytes_per_s": Field(float, "the bandwidth a stream that writes as much as it reads "
                                               "reaches (BabelStream's Copy, measured in the run that gives "
                                               "gemv_bandwidth_bytes_per_s), bytes/s: the kernel time model's rate "
                                               "for the bytes of a GEMM that writes more than it reads (the eager "
                                               "attention's score GEMM); omitted: gemv_bandwidth_bytes_per_s's "
                                               "rate for every GEMM; at most bandwidth_bytes_per_s",
                                               low=0, strict=True),
    "graph_kernel_s": Field(float, "GPU-side seconds each kernel replayed from a CUDA graph takes beyond its "
                            "work (a measured empty-kernel gap, its source in `source`); 0: none known", low=0),
    "dram_kernel_startup_s": Field(float, "fixed seconds a kernel streaming from DRAM takes beyond its bytes at the "
                                   "bandwidth and beyond graph_kernel_s (the intercept of T = a + V/b over "
                                   "DRAM-resident sizes, less graph_kernel_s; its source in `source`); "
                                   "charged to each GEMM and attention call; 0: none known", low=0),
    "default_dtype": Field(str, "the dtype a simulation uses when none is asked for; must have a peak (absent: the first of bf16, fp16 and fp32 the file has a peak for)"),
    "network_of": Field(str, "the preset whose measured collectives this GPU's nodes share (nccl_facts.json's "
                        "all-reduce curves, PyTorch's IntraNodeComm, the NVLink latency class, each keyed by a "
                        "preset's name); default: the file's own name. `hardware --show PRESET` writes it, so an "
                        "edited, renamed copy keeps them"),
    "cluster": Field(str, "a cluster whose collectives were measured across its nodes (nccl_facts.json's "
                     "cluster_busbw, by name; its nodes the file's network_of): an all-reduce, all-gather or "
                     "reduce-scatter spanning N of its nodes with all their GPUs, no larger than the measured size, "
                     "takes at least bytes x ring factor / the busbw measured at N nodes; one measured inside a "
                     "node (in_node) runs a group of its measured size at that share of the node's curve; "
                     "default: none"),
    "interconnect": Field(dict, "gpus_per_node, intra_node_bandwidth_bytes_per_s, "
                          "inter_node_bandwidth_bytes_per_s (per GPU, per direction), collective_latency_s, source"),
    "architecture": Field(str, "the GPU generation (volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3, cdna4): which "
                               "attention-kernel figures apply; "
                               "\"cpu\" for a CPU (each op runs in the thread that issues it)"),
    "sm_count": Field(int, "streaming multiprocessors (AMD: compute units); omitted where unknown", low=0, strict=True),
    "clock_mhz": Field(float, "the datasheet's boost clock, MHz; omitted where unknown", low=0, strict=True),
    "clock_limit_mhz": Field(float, "a clock limit (nvidia-smi -lgc); scales the compute peaks; omitted where none",
                             low=0, strict=True),
    "power_watts": Field(float, "the board power the datasheet's peaks are at, W; omitted where unknown", low=0,
                         strict=True),
    "power_limit_watts": Field(float, "a power cap (nvidia-smi -pl); scales the compute peaks as its cube root; "
                               "omitted where none", low=0, strict=True),
    "memory_reserve_bytes": Field(int, "memory no run can use: CUDA context, cuBLAS and NCCL workspaces; "
                                  "less than memory_bytes x serving_memory_utilization", low=0),
    "serving_memory_utilization": Field(float, "the fraction of memory a serving engine plans with "
                                        "(vLLM's gpu_memory_utilization; 0.9, vLLM's default, where a file states none)", low=0,
                                        strict=True, high=1),
    "price_per_gpu_hour": Field(float, "dollars per GPU-hour (optional: a rental price, its source in "
                                "`source`); what --price gives when not set; above 0, as --price (cost.py check_price)",
                                low=0, strict=True),
}
#: A hardware file's architecture as its vendor names the generation (the unsupported-dtype line); the
#: keys are the only values `architecture` takes: kernel_facts.json keys its attention and GEMV figures
#: by them, so a misspelt one ("hoper") silently dropped them (validate/FINDINGS.md, seventh round).
GENERATIONS = {"volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace", "hopper": "Hopper",
               "blackwell": "Blackwell", "cdna2": "CDNA 2", "cdna3": "CDNA 3", "cdna4": "CDNA 4",
               "cpu": "CPU"}
#: Whose GPUs each generation is (decode_codes.check_runs_on: an engine built for one vendor's).
VENDORS = {"volta": "nvidia", "turing": "nvidia", "ampere": "nvidia", "ada": "nvidia", "hopper": "nvidia",
           "blackwell": "nvidia", "cdna2": "amd", "cdna3": "amd", "cdna4": "amd", "cpu": "cpu"}
OPTIONAL_NUMBERS = ("architecture", "network_of", "cluster", "device_memory_bytes", "graph_kernel_s", "dram_kernel_startup_s", "sm_count", "dispatch_s_per_op", "module_s_per_op",
                    "engine_s_per_op", "host_module_call_s", "clock_mhz", "clock_limit_mhz",
                    "power_watts", "power_limit_watts", "memory_reserve_bytes", "serving_memory_utilization",
                    "price_per_gpu_hour", "gemv_bandwidth_bytes_per_s",
                    "copy_stream_bandwidth_bytes_per_s")
#: The fields a Hardware holds as 0 when its file does not give them: a file omits them where unknown
#: (Hardware.to_dict, so `hardware --show` and calibrate write no 0) and 0 in a file is refused, not
#: read as "not given" (an sm_count of 0 fell back to the roofline without a word: eleventh round).
UNSTATED_AS_ZERO = ("device_memory_bytes", "sm_count", "clock_mhz", "clock_limit_mhz", "power_watts", "power_limit_watts",
                    "copy_stream_bandwidth_bytes_per_s")
INTERCONNECT: dict[str, Field] = {
    "gpus_per_node": Field(int, "GPUs one node (NVLink domain) holds", low=1),
    "intra_node_bandwidth_bytes_per_s": Field(float, "between two GPUs of a node, per direction", low=0),
    "inter_node_bandwidth_bytes_per_s": Field(float, "between nodes, per GPU, per direction", low=0),
    "collective_latency_s": Field(float, "fixed latency of one collective call (inside a node without a measured "
                                 "busbw curve, sends, all-to-alls; across nodes NCCL's ring/tree steps instead)", low=0),
    "intra_node_fabric": Field(str, "\"pcie\" where a node's GPUs meet over PCIe only: rings take NCCL's PCIe latency "
                               "model (collectives.pcie_ring_seconds) in place of collective_latency_s; "
                               f"{PCIE_HELP} (a \"pcie\" node faster than PCIe 7.0 x16's 256 GB/s a direction, or "
                               "a copy of a PCIe preset edited faster than the preset's link, is refused)"),
    "gpus_per_host": Field(int, "GPUs one host holds where its NVLink domains are smaller (bridged pairs): a "
                           "collective past a node but inside the host runs NCCL's one ring through them at the PCIe "
                           "link, inter_node_bandwidth_bytes_per_s, and past the host the hosts are the nodes "
                           "(collectives.collective_seconds)", low=1),
    "source": Field(str, "where the interconnect's numbers come from"),
}


#: the fields `hardware NAME --json` adds to a hardware's row (cli/hardware.py hardware_row) that no file holds:
#: what the preset serves with (memory less the reserve, at serving_memory_utilization) and its other names
ROW_FIELDS = ("serving_memory_bytes", "aliases")


def schema_problems(data: Any) -> list[str]:
    """Every problem of a hardware file's JSON, one sentence each (empty: a valid file)."""
    if not isinstance(data, dict):
        return [f"a hardware file is a JSON object, got {type(data).__name__}"]
    problems = [unknown_field(k, SCHEMA) for k in data
                if k not in SCHEMA and not str(k).startswith("_")]
    if set(ROW_FIELDS) & set(data):  # `hardware h100 --json > f.json`: the listing's row, not a file
        problems.insert(0, f"{' and '.join(sorted(set(ROW_FIELDS) & set(data)))} are `hardware NAME --json`'s row, "
                           "which is not a hardware file: `hardware --show NAME` prints one to edit")
    problems += [f"{name} is missing" for name, spec in SCHEMA.items() if spec.required and name not in data]
    for name, spec in SCHEMA.items():
        if name in data and spec.kind is not dict:
            problems.append(spec.problem(name, data[name]))
    architecture = data.get("architecture")
    if isinstance(architecture, str) and architecture and architecture not in GENERATIONS:  # "": none stated
        problems.append(f"architecture {show(architecture)} is not one of {', '.join(GENERATIONS)}")
    problems += _peak_problems(data)
    problems += _section_problems(data, "efficiency", {k: Field(float, "", low=0, strict=True, high=1)
                                                      for k in ("compute", "memory")})
    if isinstance(data.get("efficiency"), dict):  # half of it read 1 for the other half, unsaid
        problems += [f"efficiency.{k} is missing (state compute and memory both, or leave efficiency out "
                     "for 1 and 1, the peaks)" for k in ("compute", "memory") if k not in data["efficiency"]]
    problems += _section_problems(data, "interconnect", INTERCONNECT)
    problems.append(_fabric_problem(data.get("interconnect")))
    for section in ("matmul_efficiency", "sustained_matmul_efficiency"):
        problems += _section_problems(data, section, {k: Field(float, "", low=0, strict=True, high=1)
                                                      for k in PEAK_DTYPES})
    problems += _rows_problems(data, "gemm_efficiency_by_rows", "rows")
    problems += _rows_problems(data, "attention_efficiency_by_queries", "queries")
    problems += _rows_problems(data, "gemv_efficiency_by_inner", "inner")
    problems += _cold_copy_problems(data)
    if not any(problems):
        problems += [_reserve_problem(data), _gemv_problem(data), _cluster_problem(data), *_limit_problems(data)]
    return [p for p in problems if p]


#: Hardware.serving_memory_utilization's default where a file states none: vLLM's own default
#: gpu_memory_utilization, 0.90 (vllm/engine/arg_utils.py EngineArgs; every preset states it), so a hand-written
#: or measured file's serve, plan --serve and inference verdicts plan with what vLLM plans with, not all the memory.
SERVING_MEMORY_UTILIZATION = 0.9


def serving_memory(memory_bytes: int, utilization: float, reserve_bytes: int) -> int:
    """The one rule for what a serving engine fills (weights, activation peak, KV cache), read by
    simulate's and plan's fits and serve's KV blocks: floor(memory x utilization) - reserve. vLLM's
    KV budget is total x gpu_memory_utilization - weights - activation peak - the non-torch memory
    the instance adds (vllm/utils.py memory_profiling); the reserve stands for that last term
    (docs/serving.md, "The KV budget": where each vLLM version puts the CUDA context). The memory
    is what the device reports where its file states it (Hardware.usable_memory_bytes)."""
    return math.floor(memory_bytes * utilization) - reserve_bytes


def clusters() -> dict[str, dict]:
    """The clusters nccl_facts.json measured collectives on (its "cluster_busbw"), by name."""
    facts = json.loads((Path(__file__).resolve().parent / "nccl_facts.json").read_text())
    return {name: cluster for name, cluster in facts["cluster_busbw"].items() if not name.startswith("_")}


def cluster_names() -> list[str]:
    """The clusters' names (nccl_facts.json "cluster_busbw")."""
    return list(clusters())


def _cluster_problem(data: dict) -> str | None:
    """A measured cluster, on the nodes it was measured on (the file's network_of, else its name: the
    name its collectives are looked up by), checked as the file is read, not only where a call
    happens to have the measured shape."""
    cluster = data.get("cluster")
    if not cluster:
        return None
    if cluster not in clusters():
        return f"cluster {show(cluster)} is not a measured cluster (nccl_facts.json cluster_busbw): one of {', '.join(cluster_names())}"
    network, measured = data.get("network_of") or data["name"], clusters()[cluster]["hardware"]
    if network not in measured:
        return (f"cluster {cluster} was measured on {', '.join(measured)} nodes, not {network}'s "
                f"(set network_of to the preset whose nodes these are)")
    per_node, node = (data.get("interconnect") or {}).get("gpus_per_node", 1), clusters()[cluster]["gpus_per_node"]
    if per_node != node:  # else no call would ever have the measured shape: the field would do nothing
        return f"cluster {cluster} was measured on nodes of {node} GPUs; this file's interconnect has {per_node} a node"
    return None


def _reserve_problem(data: dict) -> str | None:
    """The reserve must leave memory to plan with (else every fit reads a negative capacity);
    checked on fields already known to be numbers in range."""
    reserve = data.get("memory_reserve_bytes", 0)
    utilization = data.get("serving_memory_utilization", SERVING_MEMORY_UTILIZATION)
    if data.get("device_memory_bytes", 0) > data["memory_bytes"]:
        return (f"device_memory_bytes ({data['device_memory_bytes']}) must be at most memory_bytes "
                f"({data['memory_bytes']}): the device reports no more than it holds")
    field = "device_memory_bytes" if data.get("device_memory_bytes") else "memory_bytes"
    plannable = math.floor(data[field] * utilization)
    if reserve < plannable:
        return None
    return (f"memory_reserve_bytes ({reserve}) must be less than the memory a serving engine plans with, "
            f"{field} x serving_memory_utilization ({data[field]} x {utilization:g} = {plannable})")


def copied_device_memory_problem(hardware: Any, preset: Any) -> str | None:
    """A copy of a preset (network_of names it) whose memory_bytes was edited but whose
    device_memory_bytes is still the preset's measured total: that total is the preset card's, and
    every fit would read it instead of the edited capacity (a 96 GB H100 copied from h100-sxm would
    plan with the SXM's 81,117 MiB)."""
    if not hardware.device_memory_bytes or hardware.device_memory_bytes != preset.device_memory_bytes \
            or hardware.memory_bytes == preset.memory_bytes:
        return None
    return (f"memory_bytes is {hardware.memory_bytes}, not {preset.name}'s {preset.memory_bytes}, but "
            f"device_memory_bytes is still {preset.name}'s measured {preset.device_memory_bytes}: remove it "
            "(none measured: memory_bytes) or set it to this card's")


def _fabric_problem(interconnect: Any) -> str | None:
    """A PCIe-only node (intra_node_fabric "pcie") whose link between two GPUs is faster than any PCIe link
    (PCIE_MAX_BYTES_PER_S): its rings would take PCIe's latencies at an NVLink bandwidth."""
    if not isinstance(interconnect, dict) or interconnect.get("intra_node_fabric") != "pcie":
        return None
    bandwidth = interconnect.get("intra_node_bandwidth_bytes_per_s", 0)
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) or not bandwidth > PCIE_MAX_BYTES_PER_S:
        return None  # not a number: the field's own check says so
    return (f"interconnect.intra_node_fabric is \"pcie\" but intra_node_bandwidth_bytes_per_s ({bandwidth:.4g}) is "
            f"faster than any PCIe link (PCIe 7.0 x16: {PCIE_MAX_BYTES_PER_S:.4g} a direction): {PCIE_HELP}, or "
            "state the PCIe link's bandwidth")


def copied_fabric_problem(hardware: Any, preset: Any) -> str | None:
    """A copy of a PCIe preset (network_of names it) whose intra_node_bandwidth_bytes_per_s was edited above the
    preset's PCIe link while intra_node_fabric "pcie" was kept: the card's PCIe link is the preset's, so a faster
    link is another fabric (an NVLink bridge: a copy of rtx-4090 at a 3090 pair's 56.25 GB/s), whose rings
    would still take PCIe's latencies. Below the preset's link (a measured PCIe rate) the copy stands."""
    if not (preset.intra_node_fabric == hardware.intra_node_fabric == "pcie") \
            or hardware.intra_node_bandwidth_bytes_per_s <= preset.intra_node_bandwidth_bytes_per_s:
        return None
    return (f"intra_node_bandwidth_bytes_per_s is {hardware.intra_node_bandwidth_bytes_per_s:.4g}, above "
            f"{preset.name}'s PCIe link ({preset.intra_node_bandwidth_bytes_per_s:.4g} a direction), but "
            f"intra_node_fabric is still {preset.name}'s \"pcie\": {PCIE_HELP}, or state a PCIe rate no faster "
            f"than {preset.name}'s")


def _limit_problems(data: dict) -> list[str]:
    """A clock or power limit scales the peaks by limit / the clock or power it caps (Hardware.clock_scale):
    without that figure it was read as no limit at all, without a word (round 23)."""
    return [f"{limit} needs {capped} (the {what} it caps) to scale the peaks" for limit, capped, what in
            (("power_limit_watts", "power_watts", "board power"), ("clock_limit_mhz", "clock_mhz", "boost clock"))
            if data.get(limit) and not data.get(capped)]


def _gemv_problem(data: dict) -> str | None:
    """A read-and-reduce stream reads memory, so it reaches at most the memory bandwidth (the presets'
    BabelStream Dot rates are 0.73-0.90 of it); a rate above it made the kernel model's GEMMs faster
    than their bytes allow; so does a copy stream's. Checked on fields already known to be numbers in range."""
    bandwidth = data["bandwidth_bytes_per_s"]
    for name, stream, unset in (("gemv_bandwidth_bytes_per_s", "a read-and-reduce stream", "set it to 0 (none "
                                 "measured: bandwidth x efficiency.memory)"),
                                ("copy_stream_bandwidth_bytes_per_s", "a copy stream", "leave it out (none "
                                 "measured: the GEMV rate)")):
        rate = data.get(name, 0)
        if rate > bandwidth:
            return (f"{name} ({rate:.4g}) must be at most bandwidth_bytes_per_s ({bandwidth:.4g}): {stream} "
                    f"moves memory at no more than its bandwidth; {unset} or to this card's measured rate")
    return None


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
    what = {"rows": "a row count", "queries": "a query count", "inner": "an inner width"}[counted]
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


#: The copy ops cold_copies may state: the paged cache's gather and repeat_kv's copy (kernel_facts.json
#: eager_ops "copies" names each part's op), and each op's two numbers.
COLD_COPY_OPS = ("index_select", "clone")
COLD_COPY_FIELDS = {"s_per_call": Field(float, "", low=0), "bytes_per_s": Field(float, "", low=0, strict=True)}


def _cold_copy_problems(data: dict) -> list[str | None]:
    """cold_copies: {op: {s_per_call >= 0, bytes_per_s > 0}}, both numbers given, op one of COLD_COPY_OPS."""
    ops = data.get("cold_copies")
    if ops is None:
        return []
    if not isinstance(ops, dict):
        return [f"cold_copies must be an object of op: {{s_per_call, bytes_per_s}}, got {show(ops)}"]
    problems: list[str | None] = []
    for op, stated in ops.items():
        name = f"cold_copies.{op}"
        if op not in COLD_COPY_OPS:
            problems.append(f"cold_copies has an unknown op {show(op)} (known: {', '.join(COLD_COPY_OPS)})")
        elif not isinstance(stated, dict):
            problems.append(f"{name} must be an object of s_per_call and bytes_per_s, got {show(stated)}")
        else:
            problems += [f"{name} has an unknown field {show(k)} (known: {', '.join(COLD_COPY_FIELDS)})"
                         for k in stated if k not in COLD_COPY_FIELDS]
            problems += [f"{name}.{k} is missing" for k in COLD_COPY_FIELDS if k not in stated]
            problems += [COLD_COPY_FIELDS[k].problem(f"{name}.{k}", v)
                         for k, v in stated.items() if k in COLD_COPY_FIELDS]
    return problems


def _row_count(m: Any) -> bool:
    """A row count as a table's key: a whole number >= 1, or its digits (JSON's keys are strings)."""
    if isinstance(m, str):
        return m.isdigit() and int(m) >= 1
    return isinstance(m, int) and not isinstance(m, bool) and m >= 1


def default_dtype_of(data: dict) -> Any:
    """A hardware file's default_dtype: the one it states, else the first of bf16, fp16 and fp32 it has a peak
    for (a file of fp16 and fp32 peaks only, a V100's or T4's, defaulted to bf16, which every simulate without
    --dtype then refused: "has no bf16 peak; use --dtype fp16"), else bf16."""
    if "default_dtype" in data:
        return data["default_dtype"]
    peaks = data.get("flops_per_s")
    return next((d for d in ("bf16", "fp16", "fp32") if isinstance(peaks, dict) and d in peaks), "bf16")


def _peak_problems(data: dict) -> list[str | None]:
    peaks = data.get("flops_per_s")
    if peaks is None:
        return []
    if not isinstance(peaks, dict) or not peaks:
        return [f"flops_per_s must be an object of dtype: FLOP/s, got {show(peaks)}"]
    problems = [f"flops_per_s has an unknown dtype {show(k)} (known: {', '.join(PEAK_DTYPES)})"
                for k in peaks if k not in PEAK_DTYPES]
    problems += [Field(float, "", low=FLOOR, units=FLOP_PER_S).problem(f"flops_per_s.{k}", v) for k, v in peaks.items()]
    default = default_dtype_of(data)
    if isinstance(default, str) and default not in WORKLOAD_DTYPES and "default_dtype" in data:
        # fp8 has a peak but is no --dtype: it passed here and every command then blamed the workload
        problems.append(f"default_dtype {show(default)} is not a dtype a run takes ({', '.join(WORKLOAD_DTYPES)})")
    elif isinstance(default, str) and default not in peaks and "default_dtype" in data:
        problems.append(f"default_dtype {show(default)} has no peak in flops_per_s")
    return problems


def _section_problems(data: dict, section: str, fields: dict[str, Field]) -> list[str | None]:
    value = data.get(section)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{section} must be an object, got {show(value)}"]
    problems: list[str | None] = [f"{section} has an {unknown_field(k, fields)}" for k in value if k not in fields]
    problems += [fields[k].problem(f"{section}.{k}", v) for k, v in value.items() if k in fields]
    return problems
