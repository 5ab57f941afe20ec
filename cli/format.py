"""The text tables of models, published, hardware and validate: rows in, lines out (the commands
only gather the rows). The other commands' text is reports/text.py's
(simulate's reports/simulate_text.py's, plan's reports/plan_text.py's)."""

from __future__ import annotations

from typing import Any

from reports.text import binary_bytes, count, si, table


def render_models(rows: list[dict[str, Any]]) -> str:
    """One line per preset, with its aliases."""
    return table(
        ["model", "family", "architecture", "params", "layers", "d", "heads", "kv", "context",
         "positions", "aliases"],
        ([r["name"], r["family"], r["architecture"], count(r["params"]), r["layers"], r["d_model"],
          r["heads"], r["kv_heads"], r["context"], r["position"], ", ".join(r["aliases"])]
         for r in rows),
        align="lllrrrrrrll",
    )


def render_hardware(rows: list[dict[str, Any]], note_local: bool = True) -> str:
    """One line per hardware: peaks, bandwidth, memory, efficiencies and other names. The 16-bit
    column is bf16's peak, or fp16's marked so where the GPU has no bf16 tensor cores (V100, T4).
    note_local: say how to measure `local` when the list lacks it (the whole list's)."""

    def peak(r: dict[str, Any], dtype: str) -> str:
        flops = r["flops_per_s"]
        if dtype == "bf16" and "bf16" not in flops and "fp16" in flops:
            return si(flops["fp16"], "FLOP/s") + " (fp16)"
        return si(flops[dtype], "FLOP/s") if dtype in flops else ("not measured" if r["name"] == "local" else "-")

    text = table(
        ["hardware", "fp8", "bf16", "fp32", "vector", "bandwidth", "memory", "efficiency (compute/memory)",
         "description", "aliases"],
        ([r["name"], *(peak(r, d) for d in ("fp8", "bf16", "fp32")),
          si(r["vector_flops_per_s"], "FLOP/s"), si(r["bandwidth_bytes_per_s"], "B/s"),
          binary_bytes(r["memory_bytes"]),
          f"{r['efficiency'].get('compute', 1):g} / {r['efficiency'].get('memory', 1):g}", r["description"],
          ", ".join(r["aliases"])]
         for r in rows),
        align="lrrrrrrlll",
    )
    if note_local and "local" not in {r["name"] for r in rows}:
        from costmodel.hardware import local_cache_path

        text += ("\n(local: measured, but its file does not load: `--hardware local` says why; `python cli.py hardware "
                 "--measure` measures again)" if local_cache_path().is_file() else
                 "\n(local: not measured yet; `python cli.py hardware --measure`)")
    return text


def render_validation(cfg: Any, chosen: str, device: str, workload: Any, rows: list[Any]) -> str:
    """One model's rows of formula against measurement, under a line saying what was measured."""
    head = (f"{cfg.name}: {chosen} on {device}, n={workload.seq_len}"
            + (f", m={workload.decoder_len}" if cfg.architecture == "encoder-decoder" else "")
            + f", b={workload.batch}, {workload.dtype}, {workload.attention}, T={workload.gen_tokens}")
    return head + "\n" + table(
        ["quantity", "block", "formula", "measured", "difference", "relative", "status"],
        ([r.quantity, r.block, f"{r.formula:,}", f"{r.measured:,}", f"{r.difference:,}",
          f"{r.relative:.2e}", "ok" if r.ok else "MISMATCH"] for r in rows),
        align="llrrrrl",
    )


def _ratio(r: dict, key: str) -> str:
    return f"{r[key]:,.1f} ({r[key] / r['published']:.2f}x)" if r[key] is not None else "not expressible"


def render_published(tables: dict[str, list[dict[str, Any]]]) -> str:
    """Narayanan et al.'s Table 1, Korthikanti et al.'s Table 5, the other runs and the frontier."""
    narayanan = table(
        ["model", "tp x pp x dp", "GPUs", "batch", "parameters", "Eq. (2)", "TFLOP/s published",
         "TFLOP/s roofline", "roofline / published", "kernels (default) / published"],
        ([r["model"], r["layout"], r["gpus"], r["batch"], f"{r['params']:,}", f"{r['params_eq2']:,}",
          r["tflops_published"], f"{r['tflops_ours']:.0f}", f"{r['tflops_ours'] / r['tflops_published']:.2f}",
          f"{r['tflops_kernels'] / r['tflops_published']:.2f}"] for r in tables["narayanan_2021_table_1"]))
    korthikanti = table(
        ["model", "GPUs", "full recompute published", "roofline", "kernels (default)",
         "SP + selective published", "roofline", "kernels (default)", "MFU published", "roofline",
         "kernels", "HFU published", "roofline", "kernels"],
        ([r["model"], r["gpus"], f"{r['full_published']:.2f} s", f"{r['full_ours']:.2f} s",
          f"{r['full_kernels']:.2f} s", f"{r['present_published']:.2f} s", f"{r['present_ours']:.2f} s",
          f"{r['present_kernels']:.2f} s",
          f"{r['mfu_published']:.1f}%", f"{r['mfu_ours']:.1f}%", f"{r['mfu_kernels']:.1f}%",
          f"{r['hfu_published']:.1f}%", f"{r['hfu_ours']:.1f}%", f"{r['hfu_kernels']:.1f}%"]
         for r in tables["korthikanti_2022_table_5"]))
    others = table(["run", "unit", "published", "roofline", "kernels (default)"],
                   ([r["run"], r["unit"], f"{r['published']:,}", _ratio(r, "roofline"), _ratio(r, "kernels")]
                    for r in tables["other_runs"]))
    frontier = table(
        ["run", "layout", "GPUs", "quantity", "published", "roofline", "roofline / published",
         "kernels (default)", "kernels / published", "memory"],
        ([r["run"], r["layout"], r["gpus"], r["quantity"], f"{r['published']:,.0f}",
          f"{r['ours']:,.0f}", f"{r['ratio']:.2f}", f"{r['kernels']:,.0f}", f"{r['kernels_ratio']:.2f}",
          f"{r['memory_gib']:.1f} GiB" + ("" if r["fits"] else f" ({r['over_gib']:.1f} over)")]
         for r in tables["frontier"]))
    def counts(name: str, summary: dict) -> Any:
        return table(
            [name, "comparisons", "median error", "range", "within 0.75-1.33x", "within 5%", "within 10%"],
            ([key, s["comparisons"], f"{100 * s['median_error']:.1f}%", f"{s['lowest']:.2f}-{s['highest']:.2f}",
              s["within_0.75_1.33"], s["within_5%"], s["within_10%"]] for key, s in summary.items()))
    return "\n".join([
        "Narayanan et al. 2021, Table 1 (A100 80GB, full recomputation, fp16): TFLOP/s per GPU with recomputation; "
        "parameters ours vs their Eq. (2), which leaves out the final LayerNorm (2h)",
        narayanan, "",
        "Korthikanti et al. 2022, Table 5 (tp 8, no data parallelism): seconds per iteration, and MFU/HFU of "
        "sequence parallelism + selective recomputation",
        korthikanti, "",
        "More published runs (costmodel/published_runs.json: sources and stated layouts), ours under the roofline "
        "and the kernel-level time model (docs/time.md); a GPU-hours row's ratio is ours over the published hours "
        "(above 1: slower)",
        others, "",
        "Frontier runs (what each assumes: docs/layouts.md)",
        frontier, "",
        "All comparisons above but the frontier runs (ratio: our speed over the published one; error: |ratio - 1|); "
        "the whole runs' GPU-hours apart from the rates, their ratio as a speed too (published hours over ours, the "
        "inverse of their rows')",
        counts("time model", tables["summary"]), "",
        "The kernel model's comparisons by kind (its rates above, the GPU-hours rows apart)",
        counts("kind", tables["summary_by_kind"]),
    ])
