"""Why decoding rows come out too fast, across sources (wt43_decodegap): every decoding row of
costmodel/published_runs.json under the kernel model, its ratio (ours / published tokens/s, as
`python cli.py published` computes it: reports/published_decode.decode_generation), the time the
published rate leaves beyond ours, and our step's parts (one GPU: validate/time_breakdown.decode_step_split
at the generation's middle context; tensor parallelism: the layout model's compute and all-reduce), with
the row's attributes (decode code and mode, whether the host is priced, GPU, weights, KV cache, batch, context,
regime). Grouped by each attribute, the too-fast rows (ratio > 1.33) show which attribute and which part of the step carry the gap.

    PYTHONPATH=. python validate/decode_gap.py                 # the grouped tables
    PYTHONPATH=. python validate/decode_gap.py --rows          # and one line a row
    PYTHONPATH=. python validate/decode_gap.py --json out.json # every row's fields, for a diff

Nothing here is fitted: the "factor" columns say how much one part of our step would have to grow to
close a row's gap, a diagnosis, never a rate for the model (validate/FINDINGS.md, session 43).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from typing import Any

from costmodel.config import ConfigError

TOO_FAST = 1.33  # `published`'s band, 0.75-1.33x
PARTS = ("weights", "attention", "memory-bound", "launches", "host", "all-reduce", "other")


def _engine(run: dict, source: dict, settings: dict) -> str:
    """The code a row is priced as (not always its engine: llama.cpp, AutoAWQ or TGI rows state TensorRT-LLM's decode
    code, the cache read as stored; spec.DECODE_CODES): its implementation, vLLM by release where stated, and
    eager / CUDA graphs / compiled."""
    from reports.published_rows import stated

    name = settings["implementation"]
    if (release := stated(run, source, "vllm_release")) is not None:
        name = f"vllm {release}"
    mode = "compiled" if settings["compiled"] else "graphs" if settings["cuda_graphs"] else "eager"
    return f"{name} {mode}"


def _host(settings: dict, parts: dict) -> str:
    """Whether our step prices the host: compiled or graphed (no host term), eager with the host's ops counted
    (eager_ops.step_ops: a counted implementation), eager without (another family, quantized weights...:
    each kernel's launch alone), or a tensor-parallel step (the layout model's)."""
    if settings["compiled"] or settings["cuda_graphs"]:
        return "graphs or compiled"
    if "host counted" not in parts:
        return "eager, tensor-parallel"
    return "eager, host ops counted" if parts["host counted"] else "eager, host ops not counted (launches only)"


def _weights(run: dict, settings: dict, quantization: dict) -> str:
    """The weights as stored and run: a quantized dtype with its layout (the kernel), else the dtype."""
    dtype = quantization.get("weight_dtype")
    if dtype is None:
        return settings["dtype"] + (" fp8-gemm" if quantization.get("fp8_gemm") else "")
    return dtype + (f" {quantization['quant_layout']}" if "quant_layout" in quantization else "")


def _bucket(value: int, edges: tuple[int, ...]) -> str:
    """The bucket of `value` among `edges` (each an upper bound), as 'a-b'."""
    low = 1
    for edge in edges:
        if value <= edge:
            return f"{low}-{edge}" if low != edge else str(edge)
        low = edge + 1
    return f">{edges[-1]}"


def step_parts(run: dict, source: dict, settings: dict) -> dict[str, float]:
    """Seconds of one decode step by part (PARTS; 'host' where the eager host is counted), at the middle of
    the generation. One GPU: decode_step_split's kinds, the DRAM startups with the weights; the host part
    is the time the host's ops take beyond the kernels (a host-bound step), 0 where the kernels are longer.
    Tensor parallelism: the layout model's token, its compute as 'weights' (not split further there)."""
    from reports.published_decode import decode_layout_run, vllm_host_time

    engine_host = vllm_host_time(run, source)  # vLLM's host time a step where the row states its release
    waited = 0.0 if engine_host is None else \
        engine_host.seconds(settings["batch"]) * (engine_host.serial + engine_host.decision)
    if run["tp"] > 1:
        token = decode_layout_run(run, source, "kernels")["token"]
        return {"weights": token["compute_seconds"], "all-reduce": token["tp_all_reduce_seconds"], "host": waited}
    parts = _one_gpu_parts(run, source, settings)
    parts["host"] = parts.get("host", 0.0) + waited
    return parts


def _one_gpu_parts(run: dict, source: dict, settings: dict) -> dict[str, Any]:
    """step_parts on one GPU: decode_step_split's kinds."""
    from validate.time_breakdown import decode_step_split

    # a static cache_size (torchao's --cache_size) is attended whole every step; else the tokens so far, mid-generation
    split = decode_step_split(run, source, context=settings["cache_size"] or settings["prompt"] + settings["gen"] // 2)
    parts = {"weights": split.get("weight GEMMs", 0.0) + split.get("DRAM startups", 0.0),
             "attention": split.get("attention", 0.0), "memory-bound": split.get("memory-bound", 0.0),
             "launches": split.get("launches", 0.0), "gbps": split["weights GB/s"]}
    host = split.get("host (eager ops, alongside)")
    parts["host counted"] = host is not None or "step (its windows)" in split
    if host is not None:  # eager_ops.eager_step_seconds: max(kernels - launches, host)
        kernels = parts["weights"] + parts["attention"] + parts["memory-bound"]
        parts["host ops"] = host  # the host's whole issue time (its ops x eager_op_s), for the implied op time
        parts["host"] = max(0.0, host - kernels)
        parts["launches"] = 0.0  # the host's term stands for them, host-bound or not (the rule above)
    if "step (its windows)" in split:  # a layer-synchronised step: its windows beyond the kernels
        kernels = sum(parts[k] for k in ("weights", "attention", "memory-bound", "launches"))
        parts["host"] = max(0.0, split["step (its windows)"] - kernels)
    return parts


def decode_row(run: dict, source: dict) -> dict[str, Any]:
    """One decoding row's ratio, its gap in seconds a decode step, its step's parts and its attributes."""
    from reports.published_decode import decode_generation, decode_setup, sequence_rate

    cfg, hardware, settings, quantization = decode_setup(run, source)
    generation, s = decode_generation(run, source, "kernels")
    ours = sequence_rate(generation, source["rate"], s["prompt"], s["gen"], s["batch"])
    ratio = ours / run["published_tokens_per_s"]
    timed = generation["decode_seconds"] if source["rate"] == "decode" else generation["end_to_end_seconds"]
    steps = max(1, generation["decode_steps"])
    parts = step_parts(run, source, settings)
    # the generation's mean decode step beyond the split's parts at one context ('other': what simulate adds there,
    # a static cache's copies of every key, eager_ops.step_copies, or the contexts' spread about the middle one)
    mean_step = generation["decode_seconds"] / steps if generation["decode_steps"] else 0.0
    parts["other"] = max(0.0, mean_step - sum(parts.get(k, 0.0) for k in PARTS))
    step = sum(parts.get(k, 0.0) for k in PARTS)
    gap = (ratio - 1.0) * timed / steps  # the published rate's seconds beyond ours, a decode step's share
    prefill = generation["end_to_end_seconds"] - generation["decode_seconds"]
    main = max(PARTS, key=lambda k: parts.get(k, 0.0))
    implied = None
    if parts.get("host", 0.0) > 0 and "host ops" in parts:  # host-bound: the published step is the host's alone
        # the time an op the published rate implies, were the whole gap the host's (hardware.eager_op_s x the ratio)
        implied = hardware.eager_op_s * (parts["host ops"] + gap) / parts["host ops"]
    return {"id": run["id"], "source": run["id"].split()[0], "ratio": ratio, "step_ms": step * 1e3,
            "gap_ms": gap * 1e3, "parts_ms": {k: parts.get(k, 0.0) * 1e3 for k in PARTS},
            "weights_gbps": parts.get("gbps"),
            "decode code": _engine(run, source, settings), "gpu": hardware.name, "tp": run["tp"],
            "weights": _weights(run, settings, quantization),
            "kv": quantization.get("kv_dtype", settings["dtype"]), "batch": _bucket(s["batch"], (1, 8, 64)),
            "context": _bucket(s["cache_size"] or s["prompt"] + s["gen"], (512, 2048, 8192)), "rate": source["rate"],
            "prefill share": _bucket(round(100 * prefill / generation["end_to_end_seconds"]), (5, 20, 50)),
            "regime": main, "model": cfg.name, "host": _host(settings, parts),
            "gpu and host": f"{hardware.name}, {_host(settings, parts)}",
            "op_us": hardware.eager_op_s * 1e6 if "host ops" in parts else None,
            "implied_op_us": implied * 1e6 if implied is not None else None}


def decode_rows() -> list[dict[str, Any]]:
    """Every expressible decoding row of costmodel/published_runs.json (decode_row)."""
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    rows = []
    for run in data["runs"]:
        if run["kind"] != "decode":
            continue
        try:
            rows.append(decode_row(run, data["sources"][run["id"].split()[0]]))
        except ConfigError:  # `published` lists it as not expressible
            continue
    return rows


def factor(row: dict, part: str) -> float | None:
    """How many times its size `part` would have to be to close `row`'s gap alone (None where it is 0)."""
    size = row["parts_ms"][part]
    return 1.0 + row["gap_ms"] / size if size > 0 else None


ATTRIBUTES = ("host", "source", "decode code", "gpu", "weights", "kv", "batch", "context", "tp", "regime", "rate", "prefill share",
              "gpu and host")
#: Attributes listed whole (every value with 10 rows or more, too fast or not): the same GPU's rows by how the host
#: is priced, so a GPU's bandwidth is judged on its graphed rows beside its eager ones.
WHOLE = {"gpu and host": 10}


def group_table(rows: list[dict], attribute: str, least: int = 3, rows_least: int = 0) -> list[tuple]:
    """Per value of `attribute` among the rows: rows, too fast, median ratio (all of them), the too-fast
    rows' median share of their step in each of the two largest parts, and the median factor the largest
    part would need. Values with fewer than `least` too-fast rows or fewer than `rows_least` rows left out
    (a value with no too-fast row: its parts and factor empty)."""
    groups: dict[Any, list[dict]] = defaultdict(list)
    for row in rows:
        groups[row[attribute]].append(row)
    table = []
    for value, members in groups.items():
        fast = [row for row in members if row["ratio"] > TOO_FAST]
        if len(fast) < least or len(members) < rows_least:
            continue
        shares = {part: statistics.median(row["parts_ms"][part] / row["step_ms"] for row in fast) for part in PARTS} \
            if fast else {}
        top = sorted(shares, key=lambda part: -shares[part])[:2]
        needed = [f for row in fast if (f := factor(row, top[0])) is not None]
        table.append((str(value), len(members), len(fast), statistics.median(row["ratio"] for row in members),
                      statistics.median(row["ratio"] for row in fast) if fast else None, top,
                      [shares[part] for part in top], statistics.median(needed) if needed else None))
    return sorted(table, key=lambda item: (-item[2], item[0]) if rows_least == 0 else item[0])


def print_tables(rows: list[dict]) -> None:
    fast = [row for row in rows if row["ratio"] > TOO_FAST]
    print(f"{len(rows)} decoding rows; {len(fast)} too fast (> {TOO_FAST}x), "
          f"{sum(row['ratio'] < 0.75 for row in rows)} too slow; median |error| "
          f"{statistics.median(abs(row['ratio'] - 1) for row in rows):.1%}")
    for attribute in ATTRIBUTES:
        print(f"\n## by {attribute}: value | rows | too fast | median ratio (all / too fast) | the too-fast rows' "
              "two largest parts (median share of the step) | the largest's factor to close the gap")
        limits = {"least": 0, "rows_least": WHOLE[attribute]} if attribute in WHOLE else {}
        for value, n, n_fast, median, median_fast, top, shares, needed in group_table(rows, attribute, **limits):
            parts = ", ".join(f"{part} {share:.0%}" for part, share in zip(top, shares))
            fast = f"{median_fast:5.2f}" if median_fast is not None else "    -"
            print(f"{value[:60]:60s} {n:4d} {n_fast:4d}  {median:5.2f} / {fast}  {parts:32s} "
                  + (f"x{needed:.2f}" if needed is not None else "-"))
    print("\n## host-bound eager rows: gpu | decode code | rows | median ratio | our op time, us | the op time the published "
          "rate implies, us (lowest, median, highest)")
    for gpu, code, n, median, ours, low, mid, high in implied_host_table(rows):
        print(f"{gpu:12s} {code:28s} {n:4d}  {median:5.2f}  {ours:5.2f}  {low:5.2f} {mid:5.2f} {high:5.2f}")


def implied_host_table(rows: list[dict]) -> list[tuple]:
    """The host-bound eager rows (ours: the host's ops beyond the kernels) by GPU and decode code: rows, median
    ratio, the op time we take (Hardware.eager_op_s) and the range and median of the op time each row's published
    rate implies were its whole gap the host's. A diagnosis of where the host term would have to be, not a rate.
    Rows past 8,192 tokens or with a static cache's copies ('other' over 5% of the step) left out: their gap grows
    with the context (the kernels over the cache), not with the step's ops."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        short = row["context"] != ">8192" and row["parts_ms"]["other"] <= 0.05 * row["step_ms"]
        if row["implied_op_us"] is not None and short:
            groups[(row["gpu"], row["decode code"])].append(row)
    table = []
    for (gpu, code), members in sorted(groups.items(), key=lambda item: -len(item[1])):
        implied = sorted(row["implied_op_us"] for row in members)
        table.append((gpu, code, len(members), statistics.median(row["ratio"] for row in members),
                      members[0]["op_us"], implied[0], statistics.median(implied), implied[-1]))
    return table


def print_rows(rows: list[dict]) -> None:
    for row in sorted(rows, key=lambda row: -row["ratio"]):
        parts = " ".join(f"{part} {ms:.2f}" for part, ms in row["parts_ms"].items() if ms > 0)
        speed = f" at {row['weights_gbps']:.0f} GB/s" if row["weights_gbps"] else ""
        print(f"{row['ratio']:5.2f}  gap {row['gap_ms']:7.2f} ms a step; ours {row['step_ms']:7.2f} ms: {parts}{speed}; "
              f"{row['decode code']}, {row['gpu']}, {row['weights']}, kv {row['kv']}, batch {row['batch']}, "
              f"context {row['context']}  | {row['id']}")


USAGE = "usage: python validate/decode_gap.py [--rows] [--json PATH]"


def main(argv: list[str]) -> int:
    rows_too, path = False, None
    args = list(argv)
    while args:
        argument = args.pop(0)
        if argument == "--rows":
            rows_too = True
        elif argument == "--json" and args:
            path = args.pop(0)
        else:
            print(f"unknown argument {argument!r}. {USAGE}", file=sys.stderr)
            return 2
    handle = None
    if path:  # opened before the rows are computed (minutes): a path that cannot be written is one line at once
        try:
            handle = open(path, "w")
        except OSError as error:
            print(f"--json {path}: {error.strerror}.", file=sys.stderr)
            return 2
    rows = decode_rows()
    if handle is not None:
        with handle:
            json.dump(rows, handle, indent=1)
    if rows_too:
        print_rows(rows)
    print_tables(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
