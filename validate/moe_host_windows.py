"""The MoE layers' host sync windows of every Megatron MoE training row (`published`'s default).

    PYTHONPATH=. python validate/moe_host_windows.py [--row ID ...]

Per row, on the slowest pipeline rank, one micro-batch: the host calls its layers issue forward and
backward (costmodel/layout/host_syncs.py, kernel_facts.json megatron_host_calls, after the row's
CUDA graph scopes), the host's forward time at the hardware's host_module_call_s against the GPU's
forward (a third of the rank's compute and exposed communication), what the windows add, ours /
published speed without and with the term, and the time a call would need for the forward windows
alone to reach the published step (the host-bound reading of session 22). An unknown row: one
`error:` line, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from costmodel.layout.host_syncs import stage_calls, syncs
from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, run_kind, stated, train_setup


def megatron_moe_rows() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The MoE training rows of published_runs.json that run Megatron-Core and publish tokens/s."""
    data = other_runs_data()
    rows = []
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        if (run["kind"] == "train" and run_kind(run, source) == "MoE training"
                and stated(run, source, "framework", "megatron") == "megatron" and "published_tokens_per_s_per_gpu" in run):
            rows.append((run, source))
    return rows


def row_windows(run: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """One row's windows, or its reason where the model cannot express it."""
    from costmodel.config import ConfigError

    try:
        estimate, hardware, options = train_setup(run, source)
        plain = step_time(estimate, hardware, time_model="kernels", host_syncs=None, **options).step()
    except ConfigError as error:
        return {"run": run["id"], "not_expressible": str(error)}
    if hardware.host_module_call_s is None:  # priced nowhere (KernelStepTime.host_syncs_note)
        return {"run": run["id"], "not_expressible": f"{hardware.name} states no host_module_call_s"}
    dropped = stated(run, source, "moe_token_drop", False)
    scopes = tuple(stated(run, source, "cuda_graph_scope", ()))
    timed = step_time(estimate, hardware, time_model="kernels", host_syncs=None if dropped else scopes, **options)
    step = timed.step()
    stage = estimate.stages[step["slowest_stage"]]
    times = timed.stage(stage)
    gpu = sum(times[k] for k in ("compute", "tp", "ep", "cp", "amax"))
    forward, backward = stage_calls(estimate, stage, scopes)
    per_call = hardware.host_module_call_s
    m = estimate.layout.microbatches
    published = run["published_tokens_per_s_per_gpu"]
    published_step = run["global_batch"] * run["seq_len"] / run["gpus"] / published
    # the per-call time at which the forward windows alone fill the published step's micro-batches
    needed = (published_step / m - 2 * gpu / 3) / forward if forward else None
    synced = syncs(estimate.cfg, estimate.layout, scopes) and not dropped
    return {"run": run["id"], "hardware": hardware.name, "scopes": "drop-and-pad" if dropped else "+".join(scopes) or "eager",
            "syncs": synced, "calls_forward": forward, "calls_backward": backward, "per_call_us": per_call * 1e6,
            "host_forward_ms": forward * per_call * 1e3, "gpu_forward_ms": gpu / 3 * 1e3,
            "added_s": step.get("host_sync_seconds", 0.0),
            "before": plain["tokens_per_second"] / run["gpus"] / published,
            "after": step["tokens_per_second"] / run["gpus"] / published,
            "needed_us": needed * 1e6 if needed is not None else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", action="append", help="a run id of costmodel/published_runs.json (repeatable)")
    args = parser.parse_args(argv)
    rows = megatron_moe_rows()
    if args.row:
        known = {run["id"]: (run, source) for run, source in rows}
        unknown = [row for row in args.row if row not in known]
        if unknown:
            print(f"error: {unknown[0]!r} is not a Megatron MoE training row of costmodel/published_runs.json.", file=sys.stderr)
            return 2
        rows = [known[row] for row in args.row]
    print("| row | graphs | calls fwd / bwd a micro-batch | us a call | host fwd ms | GPU fwd ms | added s | "
          "ours / published before | after | us a call to fill the published step |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run, source in rows:
        w = row_windows(run, source)
        if "not_expressible" in w:
            print(f"| {w['run']} | not expressible: {w['not_expressible']} | | | | | | | | |")
            continue
        needed = f"{w['needed_us']:.1f}" if w["needed_us"] is not None else "-"
        print(f"| {w['run']} | {w['scopes']} | {w['calls_forward']:,} / {w['calls_backward']:,} | {w['per_call_us']:.2f} | "
              f"{w['host_forward_ms']:.2f} | {w['gpu_forward_ms']:.2f} | {w['added_s']:.3f} | {w['before']:.2f} | "
              f"{w['after']:.2f} | {needed} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
