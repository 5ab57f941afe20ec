"""The measured rates the kernel-level time model reads beside a hardware file: the facts file
(kernel_facts.json, each entry with its source), a training step's sustained GEMM rate, the
log-linear reading of a measured table (costmodel/kernel_time.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from .config import ConfigError
from .hardware import Hardware
from .kernel_shapes import Gemm
from .kernel_facts_file import FACTS_PATH, kernel_facts  # noqa: F401 (read there, re-exported: its readers import it here)


def sustained_efficiency(hardware: Hardware, dtype: str) -> float | None:
    """The fraction of dtype's peak a training step's large GEMMs hold, the GPU saturated at its
    power limit: the hardware file's sustained_matmul_efficiency (MSMF) where it states one; else
    its burst rate (matmul_efficiency, MAMF) x the MSMF / MAMF one run measured on its
    architecture's sibling (kernel_facts.json "sustained_over_burst": the B200 for Blackwell, the
    H200 for Hopper); else None (no rate to hold: the caller keeps its burst one)."""
    stated = hardware.sustained_matmul_efficiency.get(dtype)
    if stated is not None:
        return stated
    burst = hardware.matmul_efficiency.get(dtype)
    pair = kernel_facts()["sustained_over_burst"].get(hardware.architecture, {}).get(dtype)
    if burst is None or pair is None:
        return None
    held, peak_burst = pair
    return burst * held / peak_burst


def log_linear(points: tuple[tuple[int, float], ...], x: int) -> float:
    """A measured table's value at x: log-linear in x between its points (sorted by x), the first
    or last value outside them."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, e0), (x1, e1) in zip(points, points[1:]):
        if x <= x1:
            return e0 + (e1 - e0) * math.log(x / x0) / math.log(x1 / x0)
    return points[-1][1]


def gemm_k_points(hardware: Hardware, dtype: str, fact: str = "gemm_efficiency_by_k") -> tuple[tuple[int, float], ...]:
    """A GEMM's rate by its inner width K relative to the large-GEMM rate, published for this
    hardware's architecture in `dtype` (kernel_facts.json "gemm_efficiency_by_k"), as (K, fraction)
    points by K; () where none is published. fact: another table of that form (architecture,
    dtypes, points), e.g. "grouped_gemm_efficiency" (by the rows an expert)."""
    for entry in kernel_facts()[fact]["values"]:
        if entry["architecture"] == hardware.architecture and dtype in entry["dtypes"]:
            return tuple(sorted((int(k), float(e)) for k, e in entry["points"].items()))
    return ()


def k_efficiency(points: tuple[tuple[int, float], ...], k: int) -> float:
    """A GEMM of inner width k's fraction of the large-GEMM rate (gemm_k_points, log-linear); 1 where none is published."""
    return log_linear(points, k) if points else 1.0


@dataclass(frozen=True)
class RowsRule:
    """A weight-only kernel's time by rows from its code: the weight read once every `rows_a_pass` rows
    (0: once whatever the rows), stated up to `max_rows` (0: any)."""
    rows_a_pass: int
    max_rows: int = 0

    def factor(self, m: int) -> float | None:
        """Its time at m rows over one row's: the passes over the weight; None above max_rows."""
        if self.max_rows and m > self.max_rows:
            return None
        return 1.0 if self.rows_a_pass == 0 else float(math.ceil(m / self.rows_a_pass))


@dataclass(frozen=True)
class WeightOnlyKernel:
    """A weight-only GEMV kernel on one GPU: the tokens its figure covers, the bytes/s it moves a large
    weight at, and (where measured) its rate by thread blocks an SM: `block_columns` output columns a
    block at one token, `by_blocks` the (blocks on `measured_sms` SMs, fraction of `rate`) points."""
    tokens: int
    rate: float
    block_columns: int = 0
    by_blocks: tuple[tuple[float, float], ...] = ()
    measured_sms: int = 0
    cap: float = math.inf  # the GPU's GEMV rate, where `rate` is the SMs' (the DRAM binds above it)
    # by kernel (QuantLayout.kernel): its time at M rows over one row's, (M, factor) points or the rows a pass
    by_rows: dict[str, "tuple[tuple[int, float], ...] | RowsRule"] = field(default_factory=dict)

    def rows_factor(self, kernel: str | None, m: int) -> float | None:
        """This dtype's product of m rows under `kernel` over its one-row time (kernel_facts.json
        "weight_only_by_rows"): measured points, log-linear between them and the last held beyond (no kernel
        runs faster with more rows); or the weight read once every `rows_a_pass` rows (ceil(m / it); 0: once);
        1 within `tokens` where no table is stated; None beyond them or a table's `max_rows` (the tile model)."""
        table = self.by_rows.get(kernel or "")
        if isinstance(table, tuple):
            return log_linear(table, m)
        if isinstance(table, RowsRule):
            return table.factor(m)
        return 1.0 if m <= self.tokens else None

    def rate_at(self, n: int, sms: int) -> float:
        """Its bytes/s for a weight of n output columns on `sms` SMs: log-linear in the blocks an SM
        between the measured points (the blocks the measured GPU would hold as many of an SM), the end
        values beyond them; at most `cap`."""
        if not self.by_blocks:
            return min(self.cap, self.rate)
        blocks = math.ceil(n / self.block_columns) * self.measured_sms / sms
        return min(self.cap, self.rate * log_linear(self.by_blocks, blocks))


def weight_only_rates(entries: list[dict[str, Any]], hardware: Hardware,
                      gemv_bandwidth: float) -> dict[str, WeightOnlyKernel]:
    """A weight-only GEMV kernel's published or measured speed on this hardware's architecture
    (kernel_facts.json "weight_only_gemv"), by weight dtype. An entry's `bandwidth_fraction`: that
    fraction of the GPU's GEMV rate; its `bytes_per_s`, measured on a GPU of `measured_sms` SMs at
    `measured_clock_mhz` (a rate the SMs set, the DRAM being faster): that rate per SM and clock on
    this GPU's SMs and clock, or its GEMV rate where that is lower (the DRAM then binds). An entry
    naming its die (`sm_counts`: the SM counts of that die's parts in the architecture, what a hardware
    file carries of the die whatever its name) is theirs alone and replaces the architecture's entry of
    its dtype there."""
    rates = {}
    for entry in sorted(entries, key=lambda e: "sm_counts" in e):  # a die's own entries last: they win
        die = entry.get("sm_counts", [hardware.sm_count])
        if entry["architecture"] != hardware.architecture or hardware.sm_count not in die:
            continue
        cap = math.inf
        if "bytes_per_s" in entry:
            scale = hardware.sm_count * hardware.clock_mhz / (entry["measured_sms"] * entry["measured_clock_mhz"])
            rate, cap = float(entry["bytes_per_s"]) * scale, gemv_bandwidth
        else:
            rate = gemv_bandwidth * float(entry["bandwidth_fraction"])
        points = tuple(sorted((float(x), float(f)) for x, f in entry.get("by_blocks", {}).items()))
        rates[entry["weight_dtype"]] = WeightOnlyKernel(int(entry["tokens"]), rate, int(entry.get("block_columns", 0)),
                                                        points, int(entry.get("measured_sms", 0)), cap,
                                                        by_rows_tables(hardware, entry["weight_dtype"]))
    return rates


def by_rows_tables(hardware: Hardware, dtype: str) -> dict[str, "tuple[tuple[int, float], ...] | RowsRule"]:
    """Each weight-only kernel's time by rows on this hardware (kernel_facts.json "weight_only_by_rows"), by
    kernel: the points by_rows_points derives from its architecture's figure (a die's own, `sm_counts`, wins),
    or its `rows_a_pass` (a rule from the code; with `max_rows`, no entry above them: None there)."""
    tables: dict[str, tuple[tuple[int, float], ...] | RowsRule] = {}
    for entry in sorted(kernel_facts()["weight_only_by_rows"]["entries"], key=lambda e: "sm_counts" in e):
        if entry["weight_dtype"] != dtype or entry["architecture"] not in ("any", hardware.architecture) \
                or hardware.sm_count not in entry.get("sm_counts", [hardware.sm_count]):
            continue
        tables[entry["kernel"]] = RowsRule(int(entry["rows_a_pass"]), int(entry.get("max_rows", 0))) \
            if "rows_a_pass" in entry else by_rows_points(entry)
    return tables


def by_rows_points(entry: dict[str, Any]) -> tuple[tuple[int, float], ...]:
    """A measured entry's (M, time at M over time at one row) points: each size's speed-up over fp16 at its
    reference rows over its speed-up at M (the fp16 call flat in M: memory-bound), the mean over the sizes
    (one size: its own; a figure of kernels by name: the entry's `line`, torch-nightly unless it names
    another), 1 at and below the reference rows."""
    published = entry["published"]
    batches, lines = published["batches"], published["speedup_over_fp16"]
    sizes = [line for name, line in lines.items() if name.isdigit()] or [lines[entry.get("line", "torch-nightly")]]
    ref = batches.index(entry["reference_rows"])
    return tuple((m, 1.0 if m <= batches[ref] else max(1.0, sum(line[ref] / line[i] for line in sizes) / len(sizes)))
                 for i, m in enumerate(batches))


def w8a8_small_rows_rate(hardware: Hardware, dtype: str, gemv_bandwidth: float) -> tuple[int, float] | None:
    """The bytes/s a W8A8 GEMM of `dtype` weights moves at up to its kernel's measured rows on this hardware
    (kernel_facts.json "w8a8_small_rows": that fraction of the GPU's GEMV rate), as (max_rows, rate); None
    where no entry holds for this architecture and SM count (the GEMV rate then, as for any GEMM)."""
    for entry in kernel_facts()["w8a8_small_rows"]["entries"]:
        if entry["weight_dtype"] == dtype and entry["architecture"] == hardware.architecture \
                and hardware.sm_count in entry.get("sm_counts", [hardware.sm_count]):
            return int(entry["max_rows"]), gemv_bandwidth * float(entry["bandwidth_fraction"])
    return None


def unquantized_gemv(gemm: Gemm, rows_table: bool) -> Gemm | None:
    """The unquantized GEMV a one-row product of quantized weights is never timed above, where no
    weight-only kernel is published for it (kernel_facts.json "weight_only_gemv" has none for this
    architecture and dtype: an L4, an MI300X, a user's file): the same shape in the data's dtype, which
    KernelTimer.gemm_seconds times as a GEMV (its bytes at the GEMV rate or its FLOPs at the vector peak).
    The tile model it otherwise takes pads the one row to a tile of 64 and more rows at the tensor cores'
    rate, which no weight-only GEMV kernel does; a published one reads its fewer bytes at 0.44-0.93 of the
    GEMV rate (0.27 of the bytes at 4 bits: 0.29-0.61 of the GEMV's time), so the unquantized GEMV's time is
    an upper bound, not a rate. None: the product has more rows, unquantized weights, or a rows table (a CPU)."""
    if gemm.m != 1 or gemm.weight_dtype is None or rows_table:
        return None
    return replace(gemm, weight_bytes=None, weight_dtype=None, quantizes_input=False)


def check_kernel_model(hardware: Hardware) -> None:
    if not (hardware.sm_count or hardware.gemm_efficiency_by_rows):
        raise ConfigError(f"hardware {hardware.name}: the kernel time model needs sm_count (tiles per wave) "
                          "or a measured gemm_efficiency_by_rows.")
