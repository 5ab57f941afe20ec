"""Training at scale (wt40_scale, session 40): where a published source gives the same model and recipe
at several GPU counts, its scaling efficiency (the rate a GPU at N over the rate a GPU at the
smallest N) beside the kernel model's, and the model's step split at each N (the step `python cli.py
published` prices: compute, exposed tp, ep, cp, pp and dp communication, bubble, optimizer), so that
the term that grows in ours can be set beside the published loss.

    PYTHONPATH=. python validate/scale_efficiency.py              # every group, one line a row
    PYTHONPATH=. python validate/scale_efficiency.py mlperf-v3.1  # the groups of sources whose key starts so

A group: the training rows of costmodel/published_runs.json with one source (the id's first word), one
model and every stated field equal but the GPU count, the data-parallel degree, the global batch,
tokens and the published figures. No GPU needed; nothing here is fitted.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

from costmodel.config import ConfigError
from reports.published_runs import train_step, other_runs_data

#: the fields a group's rows may differ in (a weak- or strong-scaling series of one recipe)
VARYING = {"id", "gpus", "dp", "global_batch", "tokens", "dp_shard", "amended"}
PARTS = ("tp", "ep", "cp", "pp", "dp")


def groups(runs: list[dict]) -> list[list[dict]]:
    """The training rows grouped by (source, model, recipe), each group's rows by GPU count, only
    groups whose GPU counts differ."""
    found: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        if run["kind"] != "train":
            continue
        recipe = {k: v for k, v in run.items() if k not in VARYING and not k.startswith("published")}
        found[(run["id"].split()[0], run["model"], json.dumps(recipe, sort_keys=True))].append(run)
    return [sorted(rows, key=lambda r: (r["gpus"], r["id"])) for rows in found.values()
            if len({r["gpus"] for r in rows}) > 1]


def published_rate(run: dict) -> float:
    """The published rate a GPU in the row's unit (TFLOP/s or tokens/s a GPU), or its tokens a
    GPU-hour where it publishes GPU-hours: within a group, proportional to tokens a second a GPU."""
    for key in ("published_tflops_per_gpu", "published_tokens_per_s_per_gpu"):
        if key in run:
            return float(run[key])
    return run["tokens"] / run["published_gpu_hours"]


def split(step: dict) -> dict[str, float]:
    """The step's parts as fractions of its seconds."""
    exposed = step["exposed_communication_seconds"]
    parts = {"compute": step["compute_seconds"], **{p: exposed.get(p, 0.0) for p in PARTS},
             "bubble": step["bubble_seconds"], "optimizer": step["optimizer_seconds"]}
    return {name: seconds / step["seconds"] for name, seconds in parts.items()}


def group_rows(rows: list[dict], sources: dict) -> list[dict]:
    """Each row of a group: GPUs, published and our efficiency against the group's first row the
    model expresses, our step's split."""
    out, base = [], None
    for run in rows:
        try:
            step, _ = train_step(run, sources[run["id"].split()[0]], "kernels")
        except ConfigError as error:
            out.append({"id": run["id"], "gpus": run["gpus"], "not_expressible": str(error)})
            continue
        ours = step["tokens_per_second"] / run["gpus"]
        if base is None:
            base = (published_rate(run), ours)
        out.append({"id": run["id"], "gpus": run["gpus"], "global_batch": run["global_batch"],
                    "published_efficiency": published_rate(run) / base[0], "our_efficiency": ours / base[1],
                    "step_seconds": step["seconds"], "split": split(step)})
    return out


def summary(rows: list[dict]) -> str | None:
    """At the group's largest GPU count: how far the published efficiency falls below ours (points of
    the smallest count's rate a GPU) and the part of our step whose share grew most from the smallest."""
    priced = [row for row in rows if "not_expressible" not in row]
    if len(priced) < 2 or priced[-1]["gpus"] == priced[0]["gpus"]:
        return None
    first, last = priced[0], priced[-1]
    growth = {name: last["split"][name] - first["split"][name] for name in last["split"] if name != "compute"}
    term = max(growth, key=growth.get)
    below = 100 * (last["our_efficiency"] - last["published_efficiency"])
    grows = f"ours grows most in {term} ({growth[term]:+.3f} of the step)" if growth[term] >= 0.001 else \
        "no part of ours grows by 0.001 of the step"
    return f"  at {last['gpus']} GPUs the published efficiency is {below:+.1f} points below ours; {grows}"


def main(prefixes: list[str]) -> None:
    data = other_runs_data()
    chosen = [rows for rows in groups(data["runs"])
              if not prefixes or any(rows[0]["id"].startswith(prefix) for prefix in prefixes)]
    if not chosen:
        print(f"no group of published training rows has an id starting with {' or '.join(map(repr, prefixes))} "
              "(a source key, the first word of an id in costmodel/published_runs.json).", file=sys.stderr)
        sys.exit(2)
    for rows in chosen:
        print(f"{rows[0]['id'].split()[0]} {rows[0]['model']}:")
        priced = group_rows(rows, data["sources"])
        for row in priced:
            if "not_expressible" in row:
                print(f"  {row['gpus']:>6} {row['id']}: not expressible")
                continue
            parts = " ".join(f"{name} {share:.3f}" for name, share in row["split"].items() if share)
            print(f"  {row['gpus']:>6} gb {row['global_batch']:>5}: published {row['published_efficiency']:.3f}, "
                  f"ours {row['our_efficiency']:.3f}; step {row['step_seconds']:.3f} s = {parts}")
        if line := summary(priced):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
