"""The MoE training rows of `python cli.py published` grouped by what they share (session 44,
wt44_moetrain): source, framework, GPU, EP dispatcher, EP size, model; per group its rows, the median
of our speed over the published one, how many fall within 0.75-1.33x and how many are too fast or too
slow. Then the same release's Blackwell row beside its H100 row for one model (Megatron-Bridge's
tables), published and ours: where the model over-rates Blackwell's speed-up for one model and not
for the others, the missing term is in what that model alone runs.

    PYTHONPATH=. python validate/moe_groups.py                       # computes every published row (minutes)
    PYTHONPATH=. python validate/moe_groups.py --json published.json # a saved `python cli.py published --json`
    PYTHONPATH=. python validate/moe_groups.py --by model,hardware    # one grouping (its keys joined by commas)

Nothing here is fitted; the rows and the model's figures are published's own.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from typing import Any, Callable

from reports.published_rows import stated

#: The attributes a row is grouped by (each a row's own value, else its source's, else the default).
KEYS = ("source", "framework", "hardware", "dispatcher", "ep", "model", "fp8")

#: The groupings printed without --by.
GROUPINGS = (("source",), ("framework", "hardware"), ("dispatcher", "hardware"), ("source", "hardware", "dispatcher"),
             ("model", "hardware"))

BLACKWELL = ("b200", "gb200", "gb300")


def moe_rows(tables: dict[str, Any], data: dict[str, Any]) -> list[dict[str, Any]]:
    """The MoE training rates `summary_by_kind` counts (kind "MoE training", a kernel-model figure, not
    GPU-hours), each with its grouping attributes and ratio (our speed over the published one)."""
    runs = {run["id"]: run for run in data["runs"]}
    rows = []
    for row in tables["other_runs"]:
        if row["kind"] != "MoE training" or row["kernels"] is None or row["unit"] == "GPU-hours":
            continue
        run = runs[row["run"]]
        source_id = run["id"].split()[0]
        source = data["sources"][source_id]
        rows.append({"id": run["id"], "source": source_id, "framework": stated(run, source, "framework", "megatron"),
                     "hardware": stated(run, source, "hardware"),
                     "dispatcher": stated(run, source, "ep_dispatcher", "alltoall"),
                     "ep": stated(run, source, "ep", 1), "model": stated(run, source, "model"),
                     "fp8": stated(run, source, "fp8"), "unit": row["unit"], "published": row["published"],
                     "ours": row["kernels"], "ratio": row["kernels"] / row["published"]})
    return rows


def group_table(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """One line a group of rows sharing `keys`, largest first: rows, median ratio, lowest and highest,
    within 0.75-1.33x, too fast (ratio > 1) and too slow."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[key] for key in keys)].append(row["ratio"])
    lines = [{"group": group, "rows": len(ratios), "median": statistics.median(ratios), "lowest": min(ratios),
              "highest": max(ratios), "within": sum(0.75 <= r <= 1.33 for r in ratios),
              "fast": sum(r > 1 for r in ratios), "slow": sum(r < 1 for r in ratios)}
             for group, ratios in groups.items()]
    return sorted(lines, key=lambda line: (-line["rows"], str(line["group"])))


def _release_model(row: dict[str, Any]) -> tuple[str, str, str] | None:
    """A Megatron-Bridge row's (source, release or card, model): the performance table's release
    ("megatron-bridge-moe 26.04.01 nemotron-3-nano mxfp8 8xgb200") or the model card's table
    ("megatron-bridge-cards nemotron-3-super perf bf16 64xh100"); None for other sources."""
    words = row["id"].split()
    if words[0] == "megatron-bridge-moe":
        return words[0], words[1], row["model"]
    if words[0] == "megatron-bridge-cards":
        return words[0], words[2], row["model"]
    return None


def blackwell_pairs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each Blackwell row beside every H100 row of the same source, release (or card) and model, both
    in tokens a second a GPU: the published speed-up (Blackwell over H100), ours, and ours over the
    published one (above 1: the model over-rates Blackwell's speed-up for this model)."""
    by_key: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        key = _release_model(row)
        if key is not None and row["unit"] == "tokens/s per GPU":
            by_key[key].append(row)
    pairs = []
    for key, group in sorted(by_key.items()):
        for hopper in (r for r in group if r["hardware"] == "h100-sxm"):
            for blackwell in (r for r in group if r["hardware"] in BLACKWELL):
                published = blackwell["published"] / hopper["published"]
                ours = blackwell["ours"] / hopper["ours"]
                pairs.append({"key": key, "blackwell": blackwell["id"], "h100": hopper["id"],
                              "published": published, "ours": ours, "over": ours / published})
    return pairs


def pairs_by_model(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pairs' `over` (ours over published Blackwell speed-up) by model: pairs, median, range."""
    by_model: dict[str, list[float]] = defaultdict(list)
    for pair in pairs:
        by_model[pair["key"][2]].append(pair["over"])
    return [{"model": model, "pairs": len(v), "median": statistics.median(v), "lowest": min(v), "highest": max(v)}
            for model, v in sorted(by_model.items(), key=lambda kv: -statistics.median(kv[1]))]


def _print_table(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> None:
    print(f"by {', '.join(keys)}: group | rows | median ratio | range | within 0.75-1.33x | too fast / too slow")
    for line in group_table(rows, keys):
        print(f"  {' / '.join(map(str, line['group'])):58s} {line['rows']:4d}  {line['median']:.2f}  "
              f"{line['lowest']:.2f}-{line['highest']:.2f}  {line['within']:4d}  {line['fast']}/{line['slow']}")
    print()


def _tables(path: str | None) -> dict[str, Any]:
    if path is not None:
        with open(path) as handle:
            return json.load(handle)
    from reports.published_runs import other_runs

    return {"other_runs": other_runs()}


def _refuse(line: str) -> None:
    print(f"moe_groups.py: {line}", file=sys.stderr)
    sys.exit(2)


def parse(argv: list[str]) -> tuple[str | None, tuple[tuple[str, ...], ...]]:
    """--json FILE and --by KEY[,KEY...]; a bad argument: one line, exit status 2."""
    path, groupings = None, GROUPINGS
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag not in ("--json", "--by"):
            _refuse(f"unknown argument {flag!r}; takes --json FILE and --by KEY[,KEY...] (keys: {', '.join(KEYS)})")
        if not args:
            _refuse(f"{flag} needs a value")
        value = args.pop(0)
        if flag == "--json":
            path = value
            continue
        keys = tuple(k for k in re.split(r"[,\s]+", value) if k)
        if not keys or any(k not in KEYS for k in keys):
            _refuse(f"--by takes {', '.join(KEYS)}; got {value!r}")
        groupings = (keys,)
    return path, groupings


def main(argv: list[str] | None = None, tables: Callable[[str | None], dict[str, Any]] = _tables) -> None:
    from reports.published_runs import other_runs_data

    path, groupings = parse(sys.argv[1:] if argv is None else argv)
    try:
        rows = moe_rows(tables(path), other_runs_data())
    except (OSError, ValueError, KeyError, TypeError) as error:
        _refuse(f"cannot read {path!r} as `python cli.py published --json`: {error}")
    print(f"{len(rows)} MoE training rates (ratio: our speed over the published one)\n")
    for keys in groupings:
        _print_table(rows, keys)
    if groupings is GROUPINGS:
        pairs = blackwell_pairs(rows)
        print("the same release's Blackwell row over its H100 row, by model: pairs | ours over published speed-up "
              "(median, range)")
        for line in pairs_by_model(pairs):
            print(f"  {line['model']:28s} {line['pairs']:3d}  {line['median']:.2f}  {line['lowest']:.2f}-{line['highest']:.2f}")


if __name__ == "__main__":
    main()
