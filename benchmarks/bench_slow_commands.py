"""How long the commands a new user found slow take (validate/FINDINGS.md, "New user, round 31"):
`plot params`, `plot generation`, `claims` and `plan --serve --rate` (docs/commands.md's example).

Each command runs in a fresh interpreter, as a user types it, round after round with a warm
compiled-expression cache (one first run, with an empty cache, on its own: what the cache saves).
Per command: the median wall time and the median CPU time of the process and its children (user +
system: plan --serve --rate's search runs in a process pool), the range beside them, and the
machine's cores and load average before and after (on a shared machine the wall time moves with
the load; the CPU time much less).

Session 33 (wt33_house; validate/FINDINGS.md), warm medians of 3, wall / CPU, load 8-11 on 2 shared cores,
before = 85d5f640: plan --serve --rate 29.69 s / 9.81 s -> 25.78 s / 9.54 s; plot params (no code changed)
11.15 s / 3.69 s -> 7.24 s / 3.50 s. At that load compare the CPU times. Session 35 (wt35_speed), `--only rate
--against d8c22cc2 --rounds 3`, load 5.5-7.9: plan --serve --rate 29.62 s / 10.66 s -> 22.39 s / 7.65 s, byte-identical.

    python benchmarks/bench_slow_commands.py [--rounds 3] [--only params,generation,claims,rate]
    python benchmarks/bench_slow_commands.py --only readme   # every command the README's tour prints
    python benchmarks/bench_slow_commands.py --only rate --against main   # before (a git ref) and after

`--against REF` also runs each command from REF's tree (git archive into the run's folder), the
two interleaved round by round (before, then after: the load moves both alike), and prints both
medians; their outputs (stdout) are compared, and a difference is printed.

`readme` stands for the README's tour (its "A short tour" block and its first command), each timed
the same way; `estimate --config` reads a Llama-2-7b config.json written into the run's folder (the
fields of meta-llama/Llama-2-7b-hf's), and `report` and `sweep` write into that folder too.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


#: meta-llama/Llama-2-7b-hf's config.json, the fields the reader takes (for `estimate --config`).
LLAMA2_7B_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                    "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
                    "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
                    "rms_norm_eps": 1e-05, "hidden_act": "silu", "tie_word_embeddings": False, "rope_theta": 10000.0}


def readme_commands(out: Path) -> dict[str, list[str]]:
    """The README's tour, as it prints it (`costmodel X` run as `python cli.py X`)."""
    import json

    config = out / "config.json"
    config.write_text(json.dumps(LLAMA2_7B_CONFIG))
    tour = {
        "estimate": "estimate --model llama2-7b",
        "estimate-json": "estimate --model llama2-7b --seq-len 4096 --batch 8 --dtype bf16 --json",
        "estimate-config": f"estimate --config {config} --seq-len 2048",
        "estimate-layout": "estimate --model llama2-70b --tp 8 --pp 4 --dp 2 --sp --microbatches 16 --zero 1",
        "formulas": "formulas --model llama2-7b --block attention --latex",
        "simulate": "simulate --model llama2-7b --hardware h100-sxm --prompt 2048 --gen 256 --batch 8",
        "plan": "plan --model llama2-70b --hardware h100-sxm --gpus 64 --seq-len 4096 --global-batch 1024",
        "validate": "validate --model gpt2 --target reference --device cpu",
        "report": f"report --model llama2-7b --out {out / 'llama2-7b'}",
        "sweep": f"sweep --model llama2-7b --seq-len 128:131072:x2 --batch 1,8 --csv {out / 'sweep.csv'}",
        "serve": "serve --model llama3-8b --hardware h100-sxm --rate 5",
        "serve-closed": "serve --model llama3-8b --concurrency 32 --requests 640",
        "finetune": "finetune --model llama2-7b --method qlora --hardware rtx-4090",
    }
    return {name: [sys.executable, "cli.py", *line.split()] for name, line in tour.items()}


def commands(out: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "cli.py"]
    return {**readme_commands(out),
        "params": cli + ["plot", "params", "-o", str(out / "params.png")],
        "generation": cli + ["plot", "generation", "-m", "gpt2", "-o", str(out / "generation.png")],
        "claims": cli + ["claims"],
        "rate": cli + ["plan", "--model", "llama3-70b", "--serve", "--rate", "20", "--slo-ttft", "2",
                       "--slo-tpot", "0.1", "--hardware", "h100-sxm,a100-80gb"],
    }


def run(argv: list[str], env: dict[str, str], root: Path = ROOT, outputs: list | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its children), run from `root`; its stdout
    appended to `outputs` where given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if outputs is not None:
        outputs.append(done.stdout)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def medians(rounds: list[tuple[float, float]]) -> str:
    walls, cpus = [r[0] for r in rounds], [r[1] for r in rounds]
    return (f"median {statistics.median(walls):6.2f} s wall ({min(walls):.2f}-{max(walls):.2f}), "
            f"{statistics.median(cpus):6.2f} s CPU ({min(cpus):.2f}-{max(cpus):.2f})")


def checkout(ref: str, out: Path) -> Path:
    """REF's tree (git archive), in out/before."""
    tree = out / "before"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def compare(name: str, label: str, argv: list[str], env: dict[str, str], rounds: int, before: Path) -> None:
    """Before (from `before`) and after, interleaved round by round; medians of each, and whether
    their outputs are the same bytes."""
    outputs: dict[str, list] = {"before": [], "after": []}
    times: dict[str, list] = {"before": [], "after": []}
    for side, root in (("before", before), ("after", ROOT)):
        run(argv, env, root)  # a first run each: the compiled-expression cache warm for both
    for _ in range(rounds):
        for side, root in (("before", before), ("after", ROOT)):
            times[side].append(run(argv, env, root, outputs[side]))
    same = len(set(outputs["before"] + outputs["after"])) == 1
    print(f"{label:19s} before: {medians(times['before'])}")
    print(f"{'':19s} after:  {medians(times['after'])}; outputs {'byte-identical' if same else 'DIFFER'}; "
          f"load {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="params,generation,claims,rate",
                        help="comma-separated: params, generation, claims, rate, readme (the README's tour) "
                             "or one of its commands (estimate, simulate, plan, serve, ...)")
    parser.add_argument("--against", metavar="REF", help="also time a git ref's tree, interleaved (before / after)")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="costmodel-slow-"))
    cache = out / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    table = commands(out)
    names = [name.strip() for name in args.only.split(",")]
    names = [each for name in names for each in (readme_commands(out) if name == "readme" else [name])]
    unknown = [name for name in names if name not in table]
    if unknown:
        shutil.rmtree(out, ignore_errors=True)  # (the tour's config.json is already written there)
        parser.error(f"--only: unknown {', '.join(unknown)} (choose from {', '.join(table)})")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.rounds} rounds")
    try:
        before = checkout(args.against, out) if args.against else None
        for name in names:
            label = {"params": "plot params", "generation": "plot generation", "claims": "claims",
                     "rate": "plan --serve --rate"}.get(name, name)
            if before is not None:
                compare(name, label, table[name], env, args.rounds, before)
                continue
            cold = run(table[name], env)
            rounds = [run(table[name], env) for _ in range(args.rounds)]
            print(f"{label:19s} first run {cold[0]:6.2f} s wall {cold[1]:6.2f} s CPU; warm: {medians(rounds)}; "
                  f"load {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
