"""The eager training step's host term against the H200 runs recorded by benchmarks/gpu_check.py
(benchmarks/results_gpu_check{,_bf16,_sdpa}.json): a Markdown table of each training row's
measured seconds beside the roofline as recorded (the h200 preset), the kernel model without and
with the host term on benchmarks/h200-measured.json (its module_s_per_op, 6.55 us), and the same
rule with each run's own measured module_s_per_op (a sensitivity, not a fit).

    python -m validate.training_host_table      # validate/FINDINGS.md, "The host term of an eager training step"
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ("results_gpu_check.json", "results_gpu_check_bf16.json", "results_gpu_check_sdpa.json")


def table() -> str:
    """The table's Markdown lines."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_check import kernel_training, recorded_run

    from costmodel.hardware import load_hardware

    hardware = load_hardware(str(ROOT / "benchmarks" / "h200-measured.json"))
    lines = ["| file | model | b x n | measured | roofline (h200) | kernel model, old | host ops | ops x op time | "
             "kernel model, new | old/meas | new/meas | bound | run's op time | new, run's op | /meas |",
             "|" + "---|" * 15]
    for name in RESULTS:
        recorded = json.loads((ROOT / "benchmarks" / name).read_text())
        op = recorded["host_per_op"]["module_s_per_op"]
        for r in recorded["rows"]:
            step = kernel_training(*recorded_run(r), hardware)
            host, measured = step["host"], r["train_step_s"]
            old, new = host["without_host_seconds"], step["seconds"]
            run = max(host["kernels_seconds"], host["ops_per_step"] * op)
            lines.append(
                f"| {name[len('results_gpu_check'):-len('.json')] or '_fp32'} | {r['model']} | {r['batch']}x{r['seq_len']} | "
                f"{measured * 1e3:.1f} ms | {r['train_roofline_s'] * 1e3:.1f} ms | {old * 1e3:.1f} ms | "
                f"{host['ops_per_step']:,} | {host['seconds_per_step'] * 1e3:.1f} ms | {new * 1e3:.1f} ms | "
                f"{old / measured:.2f} | {new / measured:.2f} | {'host' if host['bound'] else 'kernels'} | "
                f"{op * 1e6:.2f} us | {run * 1e3:.1f} ms | {run / measured:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
