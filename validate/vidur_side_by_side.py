"""Vidur (Microsoft's LLM-serving simulator, MLSys'24) run beside `serve` on the same requests: the
same Poisson arrivals written as one trace for both, the same scheduler budgets, block size and
memory fraction, per-request TTFT / decode time / e2e percentiles and throughput, ours / Vidur's.
A comparison, nothing fitted.

Vidur is not a dependency: it runs from its own virtual environment (`--vidur-python`), on
profiles assembled from microsoft/vidur at VIDUR_COMMIT (`--vidur-git`, a bare git dir such as the
`fetch` tool's) plus a copy of the attention profile (`--attention`), which that repository holds
but a snapshot of it does not (files of 4 MiB and more are left out). Every profile file is
accepted only if its git blob id (SHA-1 of "blob <size>\\0" + content) equals the id microsoft/vidur's
tree names at VIDUR_COMMIT; its sha256 and size are printed beside it.

How the package index's vidur 0.0.26 finds profiles (its sklearn_execution_time_predictor.py,
_get_input_files): huggingface_hub.snapshot_download of the datasets named by
--random_forrest_execution_time_predictor_config_{model,network}_profiling_dataset into
<cache_dir>/profiling_data/{compute,network}/, reading mlp.csv.xz, attention.csv.xz (with a
config.json naming "model" and "device_sku") and all_reduce.csv.xz, send_recv.csv.xz (config.json
"sku"). With HF_HUB_OFFLINE=1 snapshot_download returns a hand-made cache of that layout, so no
code of vidur's is changed; the trace goes in through its trace_replay generator (columns Date,
Time, PromptTokenCount, CompletionTokenCount, every scale factor 1).

Scheduler pairs: Vidur's "vllm" replica scheduler batches whole prompts apart from decodes (vLLM
v0's policy), which is our `vllm-v0`; Vidur's "sarathi" (chunk 512) is our `sarathi`.

  python validate/vidur_side_by_side.py --check-data --vidur-git DIR [--attention FILE]
  python validate/vidur_side_by_side.py --vidur-python /work/vidur_venv/bin/python \\
      --vidur-git DIR --attention FILE [--rates 2,4,6] [--requests 300] [--out DIR]
Exit status 2 with one line when vidur or a verified profile is absent.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

VIDUR_COMMIT = "7d47513363ec447a741ac5e47241580b47724fbf"
TRACE_DATE = "2023-08-21"  # any string: the trace_replay generator keeps the rows of its --date


@dataclass(frozen=True)
class Case:
    """One setup both simulators run: Vidur's names and ours."""

    vidur_model: str
    vidur_device: str
    vidur_network: str
    model: str
    hardware: str
    tp: int


CASES = {
    "llama2-7b-a100": Case("meta-llama/Llama-2-7b-hf", "a100", "a100_dgx", "llama2-7b", "a100-80gb", 1),
    "llama2-7b-h100": Case("meta-llama/Llama-2-7b-hf", "h100", "h100_dgx", "llama2-7b", "h100-sxm", 1),
    "llama2-70b-a100-tp4": Case("meta-llama/Llama-2-70b-hf", "a100", "a100_dgx", "llama2-70b", "a100-80gb", 4),
}
# Vidur's scheduler name -> ours, and the budgets both get.
SCHEDULERS = {"vllm": "vllm-v0", "sarathi": "sarathi"}
MAX_NUM_SEQS = 128          # Vidur's batch_size_cap default (config.py BaseReplicaSchedulerConfig)
MAX_BATCHED_TOKENS = 4096   # Vidur's vllm max_tokens_in_batch default
SARATHI_CHUNK = 512         # Vidur's sarathi chunk_size default
BLOCK_SIZE = 16
GPU_MEMORY_UTILIZATION = 0.9


class Missing(Exception):
    """Vidur, a profile or a verified copy is absent: one line, exit status 2."""


def git_blob_id(data: bytes) -> str:
    """Git's object id of a file's content: SHA-1 of "blob <size>\\0" + content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def profile_paths(case: Case) -> dict[str, str]:
    compute = f"data/profiling/compute/{case.vidur_device}/{case.vidur_model}"
    network = f"data/profiling/network/{case.vidur_network}"
    return {"mlp": f"{compute}/mlp.csv", "attention": f"{compute}/attention.csv",
            "all_reduce": f"{network}/all_reduce.csv", "send_recv": f"{network}/send_recv.csv"}


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True)


def tree_blob(git_dir: Path, commit: str, path: str) -> str:
    """The blob id microsoft/vidur's tree names for `path` at `commit`."""
    found = _git(git_dir, "ls-tree", commit, "--", path)
    fields = found.stdout.decode().split()
    if found.returncode or len(fields) < 3:
        raise Missing(f"{path} is not in {git_dir} at {commit[:7]}.")
    return fields[2]


def verified(git_dir: Path, commit: str, path: str, copy: Path | None = None) -> dict:
    """The file's bytes, from the git dir where it holds the blob, else from `copy`, accepted only
    if its blob id is the tree's."""
    blob = tree_blob(git_dir, commit, path)
    held = _git(git_dir, "cat-file", "blob", blob)
    if held.returncode == 0:
        data, source = held.stdout, f"{git_dir} blob"
    elif copy is None:
        raise Missing(f"{path}: blob {blob} is named by the tree at {commit[:7]} but absent from {git_dir} "
                      "(a snapshot leaves out files of 4 MiB and more); give a copy with --attention.")
    else:
        try:
            data = copy.read_bytes()
        except OSError as error:
            raise Missing(f"cannot read {copy} ({error.strerror}).") from None
        source = str(copy)
    if git_blob_id(data) != blob:
        raise Missing(f"{source}: blob id {git_blob_id(data)} is not microsoft/vidur's {blob} for {path}.")
    return {"path": path, "blob": blob, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "source": source, "data": data}


def check_data(git_dir: Path, case: Case, attention: Path | None) -> list[dict]:
    """Every profile the case needs, verified; Missing names the first that is not."""
    return [verified(git_dir, VIDUR_COMMIT, path, attention if kind == "attention" else None)
            for kind, path in profile_paths(case).items()]


def write_hf_cache(cache_dir: Path, case: Case, files: list[dict]) -> tuple[str, str]:
    """The verified profiles laid out as huggingface_hub's cache of two local dataset repos, the
    layout vidur 0.0.26's snapshot_download reads offline; returns their repo ids."""
    slug = case.vidur_model.replace("/", "-").lower()
    repos = {"compute": (f"local/vidur-mlsys24-{slug}-{case.vidur_device}",
                         {"model": case.vidur_model, "device_sku": case.vidur_device}),
             "network": (f"local/vidur-mlsys24-{case.vidur_network}", {"sku": case.vidur_network})}
    by_name = {Path(f["path"]).name: f["data"] for f in files}
    wanted = {"compute": ("mlp.csv", "attention.csv"), "network": ("all_reduce.csv", "send_recv.csv")}
    for kind, (repo_id, config) in repos.items():
        root = cache_dir / "profiling_data" / kind / ("datasets--" + repo_id.replace("/", "--"))
        snapshot = root / "snapshots" / VIDUR_COMMIT
        snapshot.mkdir(parents=True, exist_ok=True)
        (root / "refs").mkdir(exist_ok=True)
        (root / "refs" / "main").write_text(VIDUR_COMMIT)
        (snapshot / "config.json").write_text(json.dumps(config))
        for name in wanted[kind]:
            (snapshot / f"{name}.xz").write_bytes(lzma.compress(by_name[name]))
    return repos["compute"][0], repos["network"][0]


def arrivals(rate: float, count: int, prompt: int, output: int, seed: int) -> list:
    """The requests both simulators get: our Poisson generator's (costmodel/serving/workload.py)."""
    from costmodel.serving.workload import Lengths, poisson

    return poisson(rate, count, Lengths("fixed", prompt), Lengths("fixed", output), seed)


def write_traces(requests: list, jsonl: Path, vidur_csv: Path) -> None:
    """One set of requests as our --trace JSONL and as Vidur's trace_replay CSV."""
    with jsonl.open("w") as out:
        for r in requests:
            out.write(json.dumps({"arrival": r.arrival_s, "prompt_tokens": r.prompt_tokens,
                                  "output_tokens": r.output_tokens}) + "\n")
    with vidur_csv.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Date", "Time", "PromptTokenCount", "CompletionTokenCount"])
        for r in requests:
            writer.writerow([TRACE_DATE, repr(r.arrival_s), r.prompt_tokens, r.output_tokens])


def vidur_command(python: str, case: Case, scheduler: str, trace_csv: Path, repos: tuple[str, str],
                  cache_dir: Path, out_dir: Path, max_tokens: int = 4096) -> list[str]:
    """Vidur's command line for one run (flag names from `python -m vidur.main --help`, 0.0.26)."""
    predictor = "--random_forrest_execution_time_predictor_config_"
    args = {"--replica_config_model_name": case.vidur_model, "--replica_config_device": case.vidur_device,
            "--replica_config_network_device": case.vidur_network,
            "--replica_config_tensor_parallel_size": case.tp, "--replica_config_num_pipeline_stages": 1,
            # Vidur 0.0.26 plans its cache with total memory x (1 - memory_margin_fraction)
            # (vidur/utils/memory_planner.py); its gpu_memory_utilization is read by the profilers only
            "--cache_config_memory_margin_fraction": round(1 - GPU_MEMORY_UTILIZATION, 6),
            "--cache_config_block_size": BLOCK_SIZE, "--cluster_config_num_replicas": 1,
            "--replica_scheduler_config_type": scheduler,
            "--request_generator_config_type": "trace_replay",
            "--trace_request_generator_config_trace_file": trace_csv,
            "--trace_request_generator_config_date": TRACE_DATE,
            "--trace_request_generator_config_prefill_scale_factor": 1,
            "--trace_request_generator_config_decode_scale_factor": 1,
            "--trace_request_generator_config_time_scale_factor": 1,
            # the replay clips a prompt so that prompt + output <= max_tokens (4,096 by default)
            "--trace_request_generator_config_max_tokens": max_tokens,
            "--execution_time_predictor_config_type": "random_forrest",
            predictor + "model_profiling_dataset": repos[0], predictor + "network_profiling_dataset": repos[1],
            predictor + "cache_dir": cache_dir, predictor + "num_training_job_threads": 2,
            "--metrics_config_output_dir": out_dir}
    if scheduler == "vllm":
        args.update({"--vllm_scheduler_config_batch_size_cap": MAX_NUM_SEQS,
                     "--vllm_scheduler_config_max_tokens_in_batch": MAX_BATCHED_TOKENS})
    else:
        args.update({"--sarathi_scheduler_config_batch_size_cap": MAX_NUM_SEQS,
                     "--sarathi_scheduler_config_chunk_size": SARATHI_CHUNK})
    return [python, "-m", "vidur.main", *(str(x) for pair in args.items() for x in pair)]


# Vidur's request_metrics.csv columns (vidur/metrics/metrics_store.py, 0.0.26) and ours: TTFT is
# arrival to the prefill's end; "decode" is (completion - prefill end) / output tokens, Vidur's
# decode_time_execution_plus_preemption_normalized, computed from our frame the same way.
VIDUR_COLUMNS = {"ttft": "prefill_e2e_time", "decode": "decode_time_execution_plus_preemption_normalized",
                 "e2e": "request_e2e_time"}


def percentile(values: list[float], p: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), p))


def summarize_vidur(rows: list[dict], arrival: list[float]) -> dict:
    """p50/p99 of each metric (seconds) and output-token throughput over the span from the first
    arrival to the last completion (arrival + e2e)."""
    out = {}
    for name, column in VIDUR_COLUMNS.items():
        values = [float(r[column]) for r in rows]
        out[f"{name}_p50"], out[f"{name}_p99"] = percentile(values, 50), percentile(values, 99)
    ends = [a + float(r["request_e2e_time"]) for a, r in zip(arrival, rows)]
    out["span_s"] = max(ends) - min(arrival)
    return out


def summarize_ours(frame, output_tokens: int) -> dict:
    values = {"ttft": list(frame["ttft_s"]), "decode": list((frame["e2e_s"] - frame["ttft_s"]) / output_tokens),
              "e2e": list(frame["e2e_s"])}
    out = {}
    for name, series in values.items():
        out[f"{name}_p50"], out[f"{name}_p99"] = percentile(series, 50), percentile(series, 99)
    out["span_s"] = float(frame["finish_s"].max() - frame["arrival_s"].min())
    return out


def read_vidur_metrics(out_dir: Path, count: int) -> list[dict]:
    """request_metrics.csv of the newest run under out_dir, its rows by request id."""
    found = sorted(out_dir.rglob("request_metrics.csv"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise Missing(f"vidur wrote no request_metrics.csv under {out_dir}.")
    with found[-1].open() as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(float(r["Request Id"])))
    if len(rows) != count:
        raise Missing(f"{found[-1]} holds {len(rows)} requests, the trace {count}.")
    return rows


def table(results: list[dict]) -> str:
    """The side-by-side table (milliseconds; throughput in output tokens/s)."""
    metrics = [f"{m}_{p}" for m in VIDUR_COLUMNS for p in ("p50", "p99")]
    lines = ["| case | scheduler | rate | metric | Vidur | ours | ours / Vidur |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for m in metrics + ["tokens_per_s"]:
            scale = 1 if m == "tokens_per_s" else 1e3
            v, o = r["vidur"][m] * scale, r["ours"][m] * scale
            lines.append(f"| {r['case']} | {r['scheduler']} | {r['rate']:g} | {m} | {v:.1f} | {o:.1f} | {o / v:.2f} |")
    return "\n".join(lines)


def run_ours(case: Case, scheduler: str, jsonl: Path, output: int) -> tuple[dict, float]:
    """`serve` on the trace with Vidur's budgets: its summary and wall seconds."""
    from costmodel.serving.api import serve

    start = time.perf_counter()
    run = serve(case.model, case.hardware, trace=str(jsonl), scheduler=SCHEDULERS[scheduler], tp=case.tp,
                dtype="fp16", max_num_seqs=MAX_NUM_SEQS,
                max_batched_tokens=SARATHI_CHUNK if scheduler == "sarathi" else MAX_BATCHED_TOKENS,
                block_size=BLOCK_SIZE, gpu_memory_utilization=GPU_MEMORY_UTILIZATION, prefix_caching=False)
    return summarize_ours(run.requests, output), time.perf_counter() - start


def run_one(args, case_name: str, scheduler: str, rate: float, files: list[dict], work: Path) -> dict:
    case = CASES[case_name]
    requests = arrivals(rate, args.requests, args.prompt, args.output, args.seed)
    jsonl, trace_csv = work / f"trace_{rate:g}.jsonl", work / f"trace_{rate:g}.csv"
    write_traces(requests, jsonl, trace_csv)
    cache = work / "vidur_cache"
    repos = write_hf_cache(cache, case, files)
    out_dir = work / f"vidur_{case_name}_{scheduler}_{rate:g}"
    longest = max(r.prompt_tokens + r.output_tokens for r in requests)  # so that the replay clips nothing
    command = vidur_command(args.vidur_python, case, scheduler, trace_csv, repos, cache, out_dir,
                            max_tokens=max(4096, longest))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)
    vidur_s = time.perf_counter() - start
    if done.returncode:
        raise Missing(f"vidur exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    rows = read_vidur_metrics(out_dir, len(requests))
    vidur = summarize_vidur(rows, [r.arrival_s for r in requests])
    ours, ours_s = run_ours(case, scheduler, jsonl, args.output)
    tokens = args.requests * args.output
    vidur["tokens_per_s"], ours["tokens_per_s"] = tokens / vidur["span_s"], tokens / ours["span_s"]
    return {"case": case_name, "scheduler": scheduler, "rate": rate, "vidur": vidur, "ours": ours,
            "vidur_wall_s": vidur_s, "ours_wall_s": ours_s, "command": command}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vidur-git", type=Path, required=True, help="bare git dir of microsoft/vidur")
    p.add_argument("--attention", type=Path, help="a copy of the case's attention.csv")
    p.add_argument("--vidur-python", help="the python of the venv vidur is installed in")
    p.add_argument("--check-data", action="store_true", help="only verify the profiles")
    p.add_argument("--case", choices=sorted(CASES), default="llama2-7b-a100")
    p.add_argument("--schedulers", default="vllm", help="comma-separated: vllm, sarathi")
    p.add_argument("--rates", default="2,4,6")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--output", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        if not (args.vidur_git / "HEAD").exists():
            raise Missing(f"{args.vidur_git} is not a git dir (fetch github:microsoft/vidur).")
        case = CASES[args.case]
        for kind, path in profile_paths(case).items():
            try:
                f = verified(args.vidur_git, VIDUR_COMMIT, path, args.attention if kind == "attention" else None)
                print(f"ok  {path}  blob {f['blob']}  {f['bytes']} bytes  sha256 {f['sha256']}  ({f['source']})")
            except Missing as error:
                print(f"--  {error}")
        files = check_data(args.vidur_git, case, args.attention)
        if args.check_data:
            return 0
        if not args.vidur_python:
            raise Missing("--vidur-python is needed to run vidur.")
        probe = subprocess.run([args.vidur_python, "-c", "import vidur.main"], capture_output=True)
        if probe.returncode:
            raise Missing(f"{args.vidur_python} cannot import vidur (pip install vidur in its own venv).")
        schedulers = [s for s in args.schedulers.split(",") if s]
        if not schedulers or any(s not in SCHEDULERS for s in schedulers):
            raise Missing(f"--schedulers takes {', '.join(SCHEDULERS)}; got {args.schedulers!r}.")
        try:
            rates = [float(r) for r in args.rates.split(",")]
        except ValueError:
            raise Missing(f"--rates takes numbers separated by commas; got {args.rates!r}.") from None
        with tempfile.TemporaryDirectory() as tmp:
            work = (args.out or Path(tmp)).resolve()
            work.mkdir(parents=True, exist_ok=True)
            results = [run_one(args, args.case, s, rate, files, work) for s in schedulers for rate in rates]
    except Missing as error:
        print(error, file=sys.stderr)
        return 2
    print(table(results))
    for r in results:
        print(f"{r['case']} {r['scheduler']} {r['rate']:g}/s: vidur {r['vidur_wall_s']:.1f} s wall, "
              f"ours {r['ours_wall_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
