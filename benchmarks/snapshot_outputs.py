"""Every preset's numbers, written to a folder, and two such folders compared byte for byte.

A change that should leave every number alone (a refactor, a move, a split) is checked by taking
a snapshot before and after and comparing them:

    python benchmarks/snapshot_outputs.py snapshot out/before          # on the old commit
    python benchmarks/snapshot_outputs.py snapshot out/after           # on the new one
    python benchmarks/snapshot_outputs.py compare out/before out/after # exit 1 if any file differs

A snapshot holds, for every preset, `estimate --json` at the default workload and with a data-
parallel layout (`--dp 1`, which adds the per-rank figures), `plan --json` for training on 8
H100s (decoders), the CSV tables of `report --no-measure` for the models named by
--report-models (reports draw figures, so only a few by default), and `simulate --json` for the
workloads in SIMULATE (dense, windowed, MoE below and beyond the 40 E tokens where the rerun's
expert count stops growing, MLA, an encoder-decoder, both time models, CUDA graphs). Each
command's stderr goes to a .err file beside it, so a changed warning shows too. Plans and reports
take a few minutes in all on 2 cores; --quick keeps to the estimates and the simulations;
--simulate-only to the simulations (a minute: for a change to simulate's speed).
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPORT_MODELS = ("gpt2", "llama2-7b")
PLAN = ["--hardware", "h100-sxm", "--gpus", "8", "--seq-len", "2048", "--global-batch", "64"]
#: simulate's workloads: (file name, arguments after `simulate`); the first five are those
#: benchmarks/bench_simulate_warm.py times.
SIMULATE = (
    ("qwen3-30b-a3b-b32", ["--model", "qwen3-30b-a3b", "--batch", "32", "--prompt", "1024", "--gen", "256"]),
    ("deepseek-v3-b32", ["--model", "deepseek-v3", "--batch", "32", "--prompt", "1024", "--gen", "256"]),
    ("gpt-oss-120b-b8", ["--model", "gpt-oss-120b", "--batch", "8", "--prompt", "1024", "--gen", "256"]),
    ("llama3.1-8b-b32", ["--model", "llama3.1-8b", "--batch", "32", "--prompt", "1024", "--gen", "256"]),
    ("gemma3-27b-32k", ["--model", "gemma3-27b", "--prompt", "32768", "--gen", "256"]),
    ("qwen3-30b-a3b-b1-short", ["--model", "qwen3-30b-a3b", "--prompt", "100", "--gen", "6000"]),
    ("mixtral-8x7b-roofline", ["--model", "mixtral-8x7b", "--batch", "4", "--prompt", "300", "--gen", "700",
                               "--time-model", "roofline"]),
    ("deepseek-v3-roofline-b1", ["--model", "deepseek-v3", "--prompt", "2000", "--gen", "20000",
                                 "--time-model", "roofline", "--hardware", "h200"]),
    ("gpt-oss-20b-graphs", ["--model", "gpt-oss-20b", "--batch", "16", "--prompt", "512", "--gen", "512",
                            "--cuda-graphs"]),
    ("mistral-7b-static", ["--model", "mistral-7b", "--prompt", "5000", "--gen", "4000", "--kv-cache", "static"]),
    ("deepseek-v2-lite-absorb", ["--model", "deepseek-v2-lite", "--batch", "8", "--prompt", "700", "--gen", "300",
                                 "--mla", "absorbed"]),
    ("t5-small", ["--model", "t5-small", "--batch", "2", "--prompt", "400", "--gen", "50"]),
    ("openai-gpt-cacheless", ["--config", "{openai_gpt}", "--prompt", "200", "--gen", "300", "--hardware", "a100-80gb"]),
    ("llama4-scout-fp32", ["--model", "llama4-scout", "--batch", "3", "--prompt", "333", "--gen", "77",
                           "--dtype", "fp32", "--time-model", "roofline"]),
)


def run(args: list[str]) -> tuple[int, str, str]:
    import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


def save(folder: Path, name: str, args: list[str]) -> None:
    code, out, err = run(args)
    (folder / f"{name}.json").write_text(out)
    (folder / f"{name}.err").write_text(f"exit {code}\n{err}")


def snapshot(folder: Path, quick: bool, report_models: list[str], simulate_only: bool = False) -> None:
    from costmodel.presets import load_preset, preset_names

    folder.mkdir(parents=True, exist_ok=True)
    openai_gpt = Path(tempfile.gettempdir()) / "costmodel-snapshot-openai-gpt.json"  # no KV cache: every step reruns
    openai_gpt.write_text('{"model_type": "openai-gpt", "vocab_size": 40478, "n_embd": 768, "n_head": 12, '
                          '"n_layer": 12, "n_positions": 512}')
    for name, args in SIMULATE:
        save(folder, f"simulate-{name}", ["simulate", *[a.format(openai_gpt=openai_gpt) for a in args], "--json"])
    if simulate_only:
        return
    for name in preset_names():
        save(folder, f"estimate-{name}", ["estimate", "--model", name, "--json"])
        save(folder, f"estimate-dp1-{name}", ["estimate", "--model", name, "--dp", "1", "--json"])
        if not quick and load_preset(name).architecture == "decoder":
            save(folder, f"plan-{name}", ["plan", "--model", name, *PLAN, "--json"])
    for name in [] if quick else report_models:
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run(["report", "--model", name, "--no-measure", "--out", tmp])
            (folder / f"report-{name}.err").write_text(f"exit {code}\n{err}".replace(tmp, "OUT"))
            for csv in sorted(Path(tmp).rglob("*.csv")):
                relative = csv.relative_to(tmp).as_posix().replace("/", "--")
                (folder / f"report-{name}--{relative}").write_bytes(csv.read_bytes())


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    differ = [n for n in names if not (before / n).exists() or not (after / n).exists()
              or not filecmp.cmp(before / n, after / n, shallow=False)]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names) - len(differ)} of {len(names)} files identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    take = sub.add_parser("snapshot", help="write every preset's outputs to a folder")
    take.add_argument("folder", type=Path)
    take.add_argument("--quick", action="store_true", help="estimates and simulations only")
    take.add_argument("--simulate-only", action="store_true", help="simulations only")
    take.add_argument("--report-models", default=",".join(REPORT_MODELS))
    both = sub.add_parser("compare", help="compare two snapshots file by file")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.action == "compare":
        return compare(args.before, args.after)
    snapshot(args.folder, args.quick, [m for m in args.report_models.split(",") if m], args.simulate_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
