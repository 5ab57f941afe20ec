"""How fast `plan` is on presets of every kind, not only the README's llama2-70b (bench_plan.py):
dense GQA, sliding-window / local-global attention, MoE, latent attention (MLA), a hybrid Mamba
model and an encoder, each at 8 and 64 GPUs (mixtral-8x7b also at 32, where a user found it
slow) under both time models, with plan's default options (`python cli.py plan --model M
--gpus G [--time-model T]`).

Each model runs in its own interpreter (`cli.main` called in process, its output captured):
- cold: the model's first call in that interpreter, per (GPUs, time model): imports, the
  preset and every per-model cache filled (the compiled-expression disk cache as it is; the
  model's earlier configurations in the same interpreter have filled the per-model caches, so
  only the first row of each model is a fresh interpreter's);
- warm: the median wall of the --rounds calls after it (the first of them with --json).

With --save DIR each configuration's text and --json outputs are written there (the text of the
cold call, the JSON of the first warm one), so that two commits can be compared byte for byte:

    python benchmarks/bench_plan_models.py --save /tmp/before        # on the old commit
    python benchmarks/bench_plan_models.py --save /tmp/after         # on the new one
    diff -r /tmp/before /tmp/after

    python benchmarks/bench_plan_models.py [--rounds 3] [--models a,b] [--time-model roofline|kernels|both]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (preset, kind, GPU counts): a few presets of each kind of model plan meets.
MODELS = (
    ("llama3-8b", "dense GQA", (8, 64)),
    ("gemma2-9b", "sliding window (alternating)", (8, 64)),
    ("gemma3-4b", "local/global 5:1", (8, 64)),
    ("mixtral-8x7b", "MoE (8 experts)", (8, 32, 64)),
    ("qwen3-30b-a3b", "MoE (128 experts)", (8, 64)),
    ("deepseek-v2-lite", "MLA + MoE", (8, 64)),
    ("deepseek-v3", "MLA + MoE + MTP", (8, 64)),
    ("nemotron-3-nano", "hybrid Mamba/attention/MoE", (8, 64)),
    ("bert-base-uncased", "encoder", (8, 64)),
)


def call(args: list[str]) -> tuple[float, int, str, str]:
    """One in-process call of the CLI: (wall seconds, exit code, stdout, stderr)."""
    import cli

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return time.perf_counter() - start, code, out.getvalue(), err.getvalue()


def one_model(model: str, gpus_list: list[int], time_models: list[str], rounds: int, save: Path | None) -> list:
    """The rows of one model, measured in this interpreter."""
    rows = []
    for gpus in gpus_list:
        for time_model in time_models:
            args = ["plan", "--model", model, "--gpus", str(gpus), "--time-model", time_model]
            cold, code, text, err = call(args)
            walls = []
            for index in range(rounds):
                wall, code_json, out_json, err_json = call(args + ["--json"] if index == 0 else args)
                walls.append(wall)
                if index == 0:
                    json_out = (code_json, out_json, err_json)
            if save is not None:
                stem = save / f"{model}-{gpus}-{time_model}"
                stem.with_suffix(".txt").write_text(f"exit {code}\n{text}\nSTDERR\n{err}")
                stem.with_suffix(".json").write_text(f"exit {json_out[0]}\n{json_out[1]}\nSTDERR\n{json_out[2]}")
            rows.append({"model": model, "gpus": gpus, "time_model": time_model, "cold": cold,
                         "warm": statistics.median(walls), "walls": walls})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="", help="comma-separated presets (default: every one in MODELS)")
    parser.add_argument("--time-model", choices=("roofline", "kernels", "both"), default="both")
    parser.add_argument("--save", type=Path, help="write each configuration's text and --json outputs here")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child: one model, rows as JSON on stdout
    args = parser.parse_args()
    time_models = ["roofline", "kernels"] if args.time_model == "both" else [args.time_model]
    kinds = {name: (kind, gpus) for name, kind, gpus in MODELS}
    if args.one:
        rows = one_model(args.one, list(kinds[args.one][1]), time_models, args.rounds, args.save)
        print(json.dumps(rows))
        return
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
    names = [m for m in args.models.split(",") if m] or list(kinds)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.rounds} warm rounds")
    print(f"{'model':<20} {'kind':<28} {'GPUs':>4} {'time model':<9} {'cold s':>7} {'warm s':>7}")
    for name in names:
        child = [sys.executable, __file__, "--one", name, "--rounds", str(args.rounds),
                 "--time-model", args.time_model] + (["--save", str(args.save)] if args.save else [])
        rows = json.loads(subprocess.run(child, cwd=ROOT, check=True, capture_output=True, text=True).stdout)
        for row in rows:
            print(f"{name:<20} {kinds[name][0]:<28} {row['gpus']:>4} {row['time_model']:<9} "
                  f"{row['cold']:7.2f} {row['warm']:7.2f}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
