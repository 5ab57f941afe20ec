"""Where the kernel-level time model spends each published run's time (issue 18, second round):
per run, the kernels that dominate, so a ratio in `python cli.py published` can be traced to
one assumption. Batch-1 decoding on one GPU: one decode step split into weight GEMMs, attention
calls, memory-bound kernels and launches, with the weights' effective bandwidth; decoding with
tensor parallelism: compute against all-reduce; training: compute, exposed communication, bubble
and optimizer of the step.

    PYTHONPATH=. python validate/time_breakdown.py

No GPU needed; nothing here is fitted (docs/time.md, validate/FINDINGS.md "Issue 18").
"""

from __future__ import annotations

from collections import defaultdict

from costmodel.config import Workload
from costmodel.kernel_time import AttentionCall, Gemm, KernelTimer, inference_subs, leaf_kernels
from costmodel.layout import Layout
from costmodel.layout.timing import simulate_decode
from costmodel.presets import load_preset
from costmodel.roofline import Roofline
from reports.published_runs import run_hardware, train_run, other_runs_data


def decode_step_split(run: dict, source: dict, context: int) -> dict[str, float]:
    """Seconds of one batch-1 decode step at `context` keys by kernel kind (one GPU)."""
    cfg, hardware = load_preset(run["model"]), run_hardware(source)
    quantization = {k: run[k] for k in ("weight_dtype", "weight_group") if k in run}
    roof = Roofline(cfg, hardware, "bf16", None, source["attention"], source["kv_cache"],
                    source["cuda_graphs"], quantization)
    timer = KernelTimer(hardware, "bf16", source["attention"], cuda_graphs=source["cuda_graphs"])
    subs = inference_subs(cfg, "bf16", source["batch"], 1, context=context)
    split: dict[str, float] = defaultdict(float)
    weight_bytes = 0.0
    for leaf in roof.decoder_tree().leaves:
        count = int(float(leaf.count.xreplace(subs))) if hasattr(leaf.count, "xreplace") else int(leaf.count)
        kernels = leaf_kernels(leaf, subs, timer.fused_attention)
        for kernel in kernels:
            kind = ("weight GEMMs" if isinstance(kernel, Gemm) else
                    "attention" if isinstance(kernel, AttentionCall) else "memory-bound")
            split[kind] += count * timer.seconds(kernel)
            if isinstance(kernel, Gemm):
                weight_bytes += count * (kernel.weight_bytes if kernel.weight_bytes is not None
                                         else timer.element_bytes * kernel.k * kernel.n)
        if kernels:
            split["launches"] += count * timer.launch_s
    split["weights GB/s"] = weight_bytes / split["weight GEMMs"] / 1e9
    return dict(split)


def main() -> None:
    data = other_runs_data()
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        if run["kind"] == "decode" and run["tp"] == 1:
            split = decode_step_split(run, source, context=source["prompt"] + source["gen"] // 2)
            published_ms = 1e3 / run["published_tokens_per_s"]
            parts = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in split.items() if k != "weights GB/s")
            print(f"{run['id']}: published {published_ms:.2f} ms a token; ours {parts}; "
                  f"weights at {split['weights GB/s']:.0f} GB/s")
        elif run["kind"] == "decode" and "weight_dtype" not in run:
            cfg, hardware = load_preset(run["model"]), run_hardware(source)
            workload = Workload(seq_len=source["prompt"], gen_tokens=source["gen"], batch=source["batch"],
                                attention=source["attention"], precision="pure", kv_cache=source["kv_cache"])
            token = simulate_decode(cfg, workload, Layout(tp=run["tp"]), hardware,
                                    cuda_graphs=source["cuda_graphs"], time_model="kernels")["token"]
            print(f"{run['id']}: published {1e3 / run['published_tokens_per_s']:.2f} ms a token; ours compute "
                  f"{token['compute_seconds'] * 1e3:.2f} ms, all-reduce {token['tp_all_reduce_seconds'] * 1e3:.2f} ms")
        elif run["kind"] == "train":
            print(f"{run['id']}: published {run['published_tflops_per_gpu']} TFLOP/s; ours "
                  f"{train_run(run, source, 'kernels'):.0f} (kernel model)")


if __name__ == "__main__":
    main()
