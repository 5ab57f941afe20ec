"""Vidur's published per-operation GPU profiles (Microsoft, MLSys'24) against the kernel model:
kernel-level evidence for the GEMV rate, the tile model, the DRAM startup and the per-kernel floor,
and for the small all-reduces' model. Never fitted to an end-to-end run.

The data: microsoft/vidur, commit 7d47513, data/profiling/compute/{a100,h100}/<model>/mlp.csv
(per-op times in ms of one transformer block's non-attention ops by num_tokens and
num_tensor_parallel_workers; fp16 weights, measured on one GPU with the weights sharded as tp would
shard them) and data/profiling/network/{a100_dgx,h100_dgx}/all_reduce.csv (fp16 all-reduces by
size in bytes and ranks). How they were measured (the repository's code at that commit):
  - compute: vidur/profiling/mlp/mlp_wrapper.py runs the block in eager PyTorch (no CUDA graph,
    torch.float16, sarathi-serve's ColumnParallelLinear/RowParallelLinear, RMSNorm, SiluAndMul:
    vLLM's kernels), 20 active steps under torch.profiler ("record_function", the default); each op's
    time is the sum of the CUDA kernels' durations its record_function range launched
    (vidur/profiling/utils/record_function_tracer.py): GPU kernel time, no launch gaps, in the
    profiler's 1 us resolution; median over the 20 steps;
  - all-reduce: vidur/profiling/collectives (torch.distributed.all_reduce, NCCL, graphs disabled,
    DISABLE_GRAPH = True), the median NCCL kernel duration of 11 calls under the Kineto profiler,
    the median over 3 such steps; `size` is bytes (2 x fp16 elements);
  - the GPUs: README.md "A100 80GB DGX" and "H100 DGX"; docs/profiling.md: the compute folder is
    per SKU, shared by the DGX and pairwise-NVLink nodes; vidur/config/device_sku_config.py states
    the H100 SKU as 80 GB and 1000 fp16 TFLOPS (the SXM part; the NVL has 94 GB), which is what we
    take; the repository does not state the torch, CUDA or driver version.
Ours: KernelTimer.gemm_seconds (no launch term: Vidur times kernels, not launches) for the
projections at M = num_tokens, pointwise_seconds for the norm, the activation and the add, on
a100-80gb and h100-sxm in fp16; collectives.collective_seconds for the all-reduces.

  python validate/vidur_profiles.py                 # the tables, from validate/vidur_profiles.json
  python validate/vidur_profiles.py --gemv          # the one-row streaming rate fitted per GPU
  python validate/vidur_profiles.py --by-k          # the projections' measured rate by inner width K
  python validate/vidur_profiles.py --extract DIR   # rewrite the json from a vidur checkout (bare git dir)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import subprocess
import sys
from pathlib import Path

from costmodel.collectives import collective_seconds
from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer, Pointwise

DATA = Path(__file__).resolve().parent / "vidur_profiles.json"
COMMIT = "7d47513"
GPUS = {"a100": "a100-80gb", "h100": "h100-sxm"}
NETWORKS = {"a100_dgx": "a100-80gb", "h100_dgx": "h100-sxm"}
MODELS = ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf", "codellama/CodeLlama-34b-Instruct-hf",
          "internlm/internlm-20b", "Qwen/Qwen-72B")
OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "input_layernorm", "mlp_act", "add")
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SHAPE = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp")
MAX_ALL_REDUCE_BYTES = 1 << 20
# L2 on the A100 is 40 MB, on the H100 50 MB: a weight of twice that streams from DRAM.
STREAMING_BYTES = 100e6


def _show(repo: Path, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{COMMIT}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def extract(repo: Path) -> dict:
    """The rows this script uses, from a checkout of microsoft/vidur at COMMIT: per GPU and model,
    each (num_tokens, tp) in TOKENS x {1, 2, 4, 8}, each op's median in ms (the median of the
    file's duplicate rows, where it profiled a point twice); the all-reduces of at most 1 MiB
    inside one node."""
    compute: dict = {}
    for gpu in GPUS:
        for model in MODELS:
            rows = list(csv.DictReader(io.StringIO(_show(repo, f"data/profiling/compute/{gpu}/{model}/mlp.csv"))))
            points: dict = {}
            for row in rows:
                tokens, tp = int(row["num_tokens"]), int(row["num_tensor_parallel_workers"])
                if tokens in TOKENS:
                    points.setdefault((tokens, tp), []).append(row)
            shape = {k: (rows[0][k] == "True" if k == "use_gated_mlp" else int(rows[0][k])) for k in SHAPE}
            compute.setdefault(gpu, {})[model] = {"shape": shape, "points": [
                {"num_tokens": t, "tp": tp, **{op: statistics.median(float(r[f"time_stats.{op}.median"]) for r in rs)
                                               for op in OPS}}
                for (t, tp), rs in sorted(points.items())]}
    network = {}
    for name in NETWORKS:
        rows = csv.DictReader(io.StringIO(_show(repo, f"data/profiling/network/{name}/all_reduce.csv")))
        network[name] = [{"bytes": int(r["size"]), "ranks": int(r["num_workers"]),
                          "median_ms": float(r["time_stats.all_reduce.median"])}
                         for r in rows if int(r["devices_per_node"]) == int(r["num_workers"])
                         and int(r["size"]) <= MAX_ALL_REDUCE_BYTES]
    return {"source": f"microsoft/vidur commit {COMMIT}: data/profiling/compute/<gpu>/<model>/mlp.csv "
                      "(time_stats.<op>.median, ms) and data/profiling/network/<node>/all_reduce.csv "
                      "(time_stats.all_reduce.median, ms; size in bytes; rows inside one node); "
                      "extracted by validate/vidur_profiles.py --extract",
            "compute": compute, "all_reduce": network}


def load() -> dict:
    return json.loads(DATA.read_text())


def gemms(shape: dict, tokens: int, tp: int) -> dict[str, Gemm]:
    """The four projections of one block as Vidur's model shards them (column-parallel QKV and
    up/gate, row-parallel output and down)."""
    d, head = shape["n_embd"], shape["n_embd"] // shape["n_head"]
    qkv = (shape["n_head"] + 2 * shape["n_kv_head"]) * head
    up = shape["n_expanded_embd"] * (2 if shape["use_gated_mlp"] else 1)
    return {"attn_pre_proj": Gemm(tokens, qkv // tp, d), "attn_post_proj": Gemm(tokens, d, d // tp),
            "mlp_up_proj": Gemm(tokens, up // tp, d), "mlp_down_proj": Gemm(tokens, d, shape["n_expanded_embd"] // tp)}


def pointwise(shape: dict, tokens: int, tp: int, element: int = 2) -> dict[str, Pointwise]:
    """The memory-bound ops' bytes: RMSNorm reads and writes the activation (its weight too), SiLU-and-
    multiply reads the two halves and writes one, the residual add reads two and writes one."""
    d, f = shape["n_embd"], shape["n_expanded_embd"] // tp
    return {"input_layernorm": Pointwise(element * (2 * tokens * d + d), 4 * tokens * d),
            "mlp_act": Pointwise(element * 3 * tokens * f, 5 * tokens * f),
            "add": Pointwise(element * 3 * tokens * d, tokens * d)}


def op_ratios(data: dict) -> list[dict]:
    """Every (gpu, model, num_tokens, tp, op): ours and Vidur's seconds."""
    out = []
    for gpu, models in data["compute"].items():
        timer = KernelTimer(load_hardware(GPUS[gpu]), dtype="fp16")
        for model, entry in models.items():
            for p in entry["points"]:
                kernels = {**gemms(entry["shape"], p["num_tokens"], p["tp"]),
                           **pointwise(entry["shape"], p["num_tokens"], p["tp"])}
                for op, kernel in kernels.items():
                    if p[op] > 0:
                        out.append({"gpu": gpu, "model": model, "num_tokens": p["num_tokens"], "tp": p["tp"],
                                    "op": op, "ours_s": timer.seconds(kernel), "vidur_s": p[op] * 1e-3})
    return out


def gemv_fit(data: dict, gpu: str) -> tuple[float, float, int]:
    """Vidur's one-row products whose weights stream from DRAM (at least STREAMING_BYTES): the
    least-squares line time = a + bytes / b over them, every model and tp; (a seconds, b bytes/s,
    the number of products). bytes: the weight and the row in and out, fp16."""
    xs, ys = [], []
    for entry in data["compute"][gpu].values():
        for p in entry["points"]:
            if p["num_tokens"] != 1:
                continue
            for op, g in gemms(entry["shape"], 1, p["tp"]).items():
                moved = 2 * (g.k * g.n + g.k + g.n)
                if moved >= STREAMING_BYTES:
                    xs.append(moved)
                    ys.append(p[op] * 1e-3)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, 1 / slope, len(xs)


#: The inner widths by_k bands the projections into (each K goes to the largest band at or below it).
K_BANDS = (512, 1024, 2048, 4096, 8192, 16384)


def tflops(g: Gemm, seconds: float) -> float:
    return 2 * g.m * g.n * g.k / seconds / 1e12


def k_sweep(data: dict, gpu: str, tokens: int = 4096) -> list[dict]:
    """The one projection that sweeps K at a fixed output: the attention output (row-parallel, K =
    d / tp, N = d) of each model at `tokens` rows, its measured TFLOP/s at each tp."""
    out = []
    for model, entry in data["compute"][gpu].items():
        for p in entry["points"]:
            if p["num_tokens"] == tokens:
                g = gemms(entry["shape"], tokens, p["tp"])["attn_post_proj"]
                out.append({"model": model, "tp": p["tp"], "n": g.n, "k": g.k,
                            "tflops": tflops(g, p["attn_post_proj"] * 1e-3)})
    return out


def ratios_by_k(data: dict, min_tokens: int = 1024) -> dict[tuple[str, int], list[float]]:
    """ours / Vidur of the four projections at >= min_tokens rows (past the tile model's wave
    quantization's largest steps), by (gpu, K band)."""
    out: dict = {}
    for r in op_ratios(data):
        if r["op"].endswith("proj") and r["num_tokens"] >= min_tokens:
            k = gemms(data["compute"][r["gpu"]][r["model"]]["shape"], r["num_tokens"], r["tp"])[r["op"]].k
            band = max(b for b in K_BANDS if b <= k)
            out.setdefault((r["gpu"], band), []).append(r["ours_s"] / r["vidur_s"])
    return out


def large_rates(data: dict, gpu: str, tokens: int = 4096) -> list[float]:
    """The measured TFLOP/s of every projection at `tokens` rows, every model and tp."""
    return [tflops(g, p[op] * 1e-3) for entry in data["compute"][gpu].values() for p in entry["points"]
            if p["num_tokens"] == tokens for op, g in gemms(entry["shape"], tokens, p["tp"]).items()]


def by_k_report(data: dict) -> str:
    lines = ["the attention output at 4,096 rows (K = d / tp, N = d): measured TFLOP/s by K, and over tp 1's (K = d)"]
    for gpu in GPUS:
        rows = k_sweep(data, gpu)
        for model in MODELS:
            r = sorted((x for x in rows if x["model"] == model), key=lambda x: x["k"])
            top = r[-1]["tflops"]
            lines.append(f"{gpu:5} {model:38} N {r[0]['n']:5}  " + "  ".join(
                f"K {x['k']:5}: {x['tflops']:5.0f} ({x['tflops'] / top:.2f})" for x in r))
    lines += ["", "ours / Vidur of the four projections at >= 1,024 rows, by K band (min, quartiles, max)"]
    for (gpu, band), r in sorted(ratios_by_k(data).items()):
        lines.append(f"{gpu:5} K {band:>5}+ {len(r):>3} {_quantiles(r)}")
    lines += ["", "every projection at 4,096 rows: measured TFLOP/s against the hardware file's large-GEMM rate"]
    for gpu, name in GPUS.items():
        hw, r = load_hardware(name), large_rates(data, gpu)
        burst = hw.flops_per_s["fp16"] * hw.matmul_efficiency["fp16"] / 1e12
        lines.append(f"{gpu:5} n {len(r)}  median {statistics.median(r):5.1f}  (min {min(r):.0f}, max {max(r):.0f})"
                     f"  file's burst rate {burst:.1f}: median / burst {statistics.median(r) / burst:.3f}")
    return "\n".join(lines)


def all_reduce_rows(data: dict, max_bytes: int = 65536) -> list[dict]:
    out = []
    for node, rows in data["all_reduce"].items():
        hw = load_hardware(NETWORKS[node])
        for r in rows:
            if 2048 <= r["bytes"] <= max_bytes and r["ranks"] in (2, 4, 8):
                out.append({**r, "node": node, "ours_s": collective_seconds(hw, "all_reduce", r["bytes"], r["ranks"], r["ranks"]),
                            "vidur_s": r["median_ms"] * 1e-3})
    return out


def _quantiles(values: list[float]) -> str:
    values = sorted(values)
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return f"{values[0]:6.2f} {q[0]:6.2f} {q[1]:6.2f} {q[2]:6.2f} {values[-1]:6.2f}"


def report(data: dict) -> str:
    lines = ["ours / Vidur median, per op kind and GPU (min, quartiles, max over models and tp)",
             f"{'gpu':5} {'op':16} {'tokens':>6} {'n':>3}    min     q1    med     q3    max"]
    rows = op_ratios(data)
    for gpu in GPUS:
        for op in OPS:
            for band in ((1, 1), (2, 8), (16, 64), (128, 512), (1024, 4096)):
                r = [x["ours_s"] / x["vidur_s"] for x in rows
                     if x["gpu"] == gpu and x["op"] == op and band[0] <= x["num_tokens"] <= band[1]]
                if r:
                    lines.append(f"{gpu:5} {op:16} {band[0]:>3}-{band[1]:<4} {len(r):>3} {_quantiles(r)}")
    lines += ["", "all-reduce, ours / Vidur median (sizes 2-64 KB), and Vidur's median time (us)",
              f"{'node':9} {'ranks':>5} {'n':>3}    min     q1    med     q3    max   vidur us (min..max)"]
    ar = all_reduce_rows(data)
    for node in NETWORKS:
        for ranks in (2, 4, 8):
            r = [x for x in ar if x["node"] == node and x["ranks"] == ranks]
            if r:
                us = sorted(x["vidur_s"] * 1e6 for x in r)
                ours = sorted(x["ours_s"] * 1e6 for x in r)
                lines.append(f"{node:9} {ranks:>5} {len(r):>3} {_quantiles([x['ours_s'] / x['vidur_s'] for x in r])}"
                             f"   {us[0]:.0f}..{us[-1]:.0f} (median {statistics.median(us):.0f}; ours {ours[0]:.0f}..{ours[-1]:.0f})")
    return "\n".join(lines)


def gemv_report(data: dict) -> str:
    lines = []
    for gpu, name in GPUS.items():
        a, b, n = gemv_fit(data, gpu)
        hw = load_hardware(name)
        lines.append(f"{gpu}: {n} one-row products of >= {STREAMING_BYTES / 1e6:.0f} MB: time = {a * 1e6:.2f} us + bytes / "
                     f"{b / 1e9:.1f} GB/s ({b / hw.bandwidth_bytes_per_s:.3f} of {name}'s "
                     f"{hw.bandwidth_bytes_per_s / 1e9:.0f} GB/s; file's gemv rate "
                     f"{hw.gemv_bandwidth_bytes_per_s / 1e9:.1f} GB/s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extract", type=Path, metavar="DIR", help="a microsoft/vidur git directory")
    parser.add_argument("--gemv", action="store_true", help="the one-row streaming rate fitted per GPU")
    parser.add_argument("--by-k", action="store_true", help="the projections' measured rate by inner width K")
    args = parser.parse_args(argv)
    if args.extract:
        if not (args.extract / "HEAD").exists() and not (args.extract / ".git").exists():
            print(f"{args.extract} is not a git directory of microsoft/vidur.", file=sys.stderr)
            return 2
        DATA.write_text(json.dumps(extract(args.extract), indent=0) + "\n")
        print(f"wrote {DATA}")
        return 0
    data = load()
    print(gemv_report(data) if args.gemv else by_k_report(data) if args.by_k else report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
