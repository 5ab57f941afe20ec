"""The kernel model's eager training step against the second H200 gpu_check run
(benchmarks/results_gpu_check_2{,_bf16,_sdpa}.json, 18 rows): each row's measured step beside
the kernel model as recorded on the H200 (train_kernel_model_s: benchmarks/h200-measured.json,
host term included) and as this tree computes it now, on the same hardware file and the same
rule (gpu_check.kernel_training), with the measured eager implementation (kernel_facts.json
"eager_training_bytes") it now matches, if any. Nothing is fitted: the difference is only the
bytes the measured eager aten ops move.

    python -m validate.eager_bytes_table      # validate/FINDINGS.md, "Eager training bytes ... session 22"
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ("results_gpu_check_2.json", "results_gpu_check_2_bf16.json", "results_gpu_check_2_sdpa.json")


def table() -> str:
    """The table's Markdown lines."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_check import kernel_training, recorded_run

    from costmodel.eager_ops import eager_training_implementation
    from costmodel.hardware import load_hardware

    hardware = load_hardware(str(ROOT / "benchmarks" / "h200-measured.json"))
    lines = ["| file | model | dtype, attention | b x n | measured | model, recorded | model, now | "
             "recorded/meas | now/meas | bound now | measured bytes of |", "|" + "---|" * 11]
    for name in RESULTS:
        for r in json.loads((ROOT / "benchmarks" / name).read_text())["rows"]:
            cfg, workload = recorded_run(r)
            now = kernel_training(cfg, workload, hardware)
            measured, recorded = r["train_step_s"], r["train_kernel_model_s"]
            entry = eager_training_implementation(cfg, workload)
            host = now["host"]
            bound = "-" if host is None else ("host" if host["bound"] else "kernels")
            lines.append(
                f"| {name[len('results_gpu_check'):-len('.json')]} | {r['model']} | {r['dtype']}, {r['attention']} | "
                f"{r['batch']}x{r['seq_len']} | {measured * 1e3:.1f} ms | {recorded * 1e3:.1f} ms | "
                f"{now['seconds'] * 1e3:.1f} ms | {recorded / measured:.2f} | {now['seconds'] / measured:.2f} | "
                f"{bound} | {entry['name'] if entry else 'the tree'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
