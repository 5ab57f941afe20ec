"""The text of `plan --serve --rate` (cli/plan.py delegates here): the capacity search of
costmodel.serving.capacity run, then its table of deployments, or its --json; the setup lines it
shares with `serve` are reports/serving.py's."""

from __future__ import annotations

import json
from typing import Any

import click

from costmodel.checkpoint import weights_note
from costmodel.config import ConfigError
from costmodel.json_units import JSON_UNITS

from .output import ReportInputError, finite
from .serving import backend_line, code_line, fp8_gemm_line
from .text import significant


def render_capacity(result: dict[str, Any], top: int = 10) -> str:
    t = result["target"]
    lines = [f"deployments for {t['rate']} req/s within p99 TTFT <= {t['slo_ttft']} s and p99 TPOT <= "
             f"{t['slo_tpot']} s ({result['scheduler']} scheduler; prompt {t['prompt']}, output {t['output']} tokens; "
             f"{t['requests']} simulated requests per point); {result['configurations']} configurations, "
             f"{len(result['feasible'])} meet it",
             *([f"SGLang release: {result['engine_release']} ({result['engine_release_source']})"]
               if result.get("engine_release") else []),
             *([note] if (note := weights_note(result.get("weight_dtype"), result.get("weight_dtype_source"))) else []),
             *([code_line(result["decode_code"], result["scheduler"])] if result.get("decode_code") else []),
             *(fp8_gemm_line({**setup, "hardware": name}) for name, setup in result.get("fp8_gemms", {}).items()),
             *backend_line(result.get("attention_backend")),
             f"{'gpus':>5} {'hardware':<12}{'tp':>3}{'pp':>3}{'replicas':>9}{'seqs':>6}{'tokens':>7}{'p99 TTFT ms':>12}"
             f"{'p99 TPOT ms':>12}{'$/h':>8}{'$/M out':>9}"]
    for row in result["feasible"][:top]:
        price = f"{row['dollars_per_hour']:.2f}" if row["dollars_per_hour"] else "-"
        per_million = row.get("dollars_per_million_output_tokens")
        per_million = significant(per_million) if per_million else "-"
        lines.append(f"{row['gpus']:>5} {row['hardware']:<12}{row['tp']:>3}{row['pp']:>3}{row['replicas']:>9}"
                     f"{row['max_num_seqs']:>6}{row['max_batched_tokens']:>7}{1e3 * row['p99_ttft_s']:>12.0f}"
                     f"{1e3 * row['p99_tpot_s']:>12.1f}{price:>8}{per_million:>9}")
    priced = [row for row in result["feasible"][:top] if row.get("dollars_per_million_output_tokens")]
    if priced:  # which rate the price per token is over (metrics.sustained_output)
        run = sum(row["sustained_basis"] == "run" for row in priced)
        lines.append("$/M out: over the output rate each deployment sustains: the offered "
                     f"{t['rate']:g} req/s x the mean output tokens where it keeps up"
                     + (f"; {run} row(s) over the run's throughput (a queue that never emptied)" if run else
                        " (every row shown)"))
    reasons = sorted({r["reason"].split(":")[0] for r in result["infeasible"]})
    if reasons:  # whole reasons up to ~300 characters (a cut at 300 left "(more do not help)" as "(mor)")
        shown = [reason for i, reason in enumerate(reasons) if len("; ".join(reasons[:i + 1])) <= 300] or reasons[:1]
        left = len(reasons) - len(shown)
        rest = f"; {left} more reason{'s' if left > 1 else ''} in --json's infeasible" if left else ""
        lines.append(f"not feasible: {len(result['infeasible'])} ({'; '.join(shown)}{rest})")
    if not result["feasible"] and result["infeasible"]:  # the reasons above stop at their ':', what to do with them
        widest = max(result["infeasible"], key=lambda r: (r.get("tp", 1) * r.get("pp", 1), r.get("tp", 1)))
        lines.append(f"widest tried, tp {widest.get('tp', 1)} x pp {widest.get('pp', 1)} (tp within a node; pp as --pp gives, "
                     f"1 by default): {widest['reason']}")
    return "\n".join(lines)


def plan_capacity_command(cfg: Any, hardware_names: str, rate: float, slo_ttft: float | None,
                          slo_tpot: float | None, requests: int, prompt: str, gen: str, tp: int | None,
                          top: int, as_json: bool, processes: int | None = None, mla: str = "absorbed",
                          pp: int | None = None, ray_address: str | None = None, cuda_graphs: str = "auto",
                          price: float | None = None, json_top: int | None = None, **formats: Any) -> bool:
    """`plan --serve --rate`: the search and its table (cli/plan.py's plan delegates here), and
    whether any deployment meets the targets (plan exits 1 when none does, as when no layout fits);
    json_top: --top when typed (--json then keeps that many feasible rows; else all);
    formats: weight_dtype, weight_group, kv_dtype, fp8_gemm, time_model, as serve takes them."""
    from costmodel.hardware import load_hardware
    from costmodel.serving.capacity import Target, plan_capacity

    if slo_ttft is None or slo_tpot is None:
        raise ReportInputError("plan --serve --rate needs --slo-ttft and --slo-tpot (seconds).")
    try:
        hardwares = [load_hardware(name.strip()) for name in hardware_names.split(",")]
        result = plan_capacity(cfg, hardwares, Target(rate, slo_ttft, slo_tpot, requests, str(prompt), str(gen)),
                               tps=[tp] if tp else None, pps=[pp] if pp else None, processes=processes, mla=mla,
                               ray_address=ray_address, cuda_graphs=cuda_graphs, price=price, **formats)
    except ConfigError as error:
        raise ReportInputError(str(error)) from None
    met = bool(result["feasible"])
    if as_json and json_top is not None:  # --top typed beside --json: its rows, as the table's
        result = {**result, "feasible": result["feasible"][:json_top]}
    click.echo(json.dumps(finite({**result, "units": JSON_UNITS["plan --serve --rate"]}, nan=True), indent=2)
               if as_json else render_capacity(result, top))
    return met
