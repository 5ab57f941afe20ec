"""The kernel model's published rows outside 0.75-1.33x (and at its edges, 1.2-1.33x and 0.75-0.83x), grouped by
source, framework, hardware and sign: the table validate/FINDINGS.md's "Dense training rows outside the band"
section prints, read from `python cli.py published --json`'s other_runs (ratio = our speed / published; the
GPU-hours rows apart, as summary_by_kind leaves them).

    python cli.py published --json > /tmp/published.json
    PYTHONPATH=. python validate/band_groups.py /tmp/published.json [--kind "dense training"] [--rows]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

from reports.published_runs import COST_UNITS, KINDS, other_runs_data
from reports.published_rows import stated

#: The bands, in the order the table prints them: (name, lowest ratio, highest ratio), half-open where they meet.
BANDS = (("over", 1.33, float("inf")), ("high edge", 1.2, 1.33), ("low edge", 0.75, 0.83), ("under", 0.0, 0.75))


def band(ratio: float) -> str | None:
    """The band of one ratio (our speed / published), None inside 0.83-1.2x. 1.33 and 0.75 count as inside the
    band, as ratio_counts' within_0.75_1.33 counts them."""
    if ratio > 1.33:
        return "over"
    if ratio < 0.75:
        return "under"
    if ratio >= 1.2:
        return "high edge"
    if ratio <= 0.83:
        return "low edge"
    return None


def layout_text(run: dict[str, Any], source: dict[str, Any]) -> str:
    """A run's layout as typed: "tp T pp P dp D zero Z" (the defaults reports.published_runs.train_run takes)."""
    tp, pp, dp = (stated(run, source, key, 1) for key in ("tp", "pp", "dp"))
    return f"tp{tp} pp{pp} dp{dp} zero {stated(run, source, 'zero', 1)}"


def groups(other_runs: list[dict[str, Any]], kind: str = "dense training") -> list[dict[str, Any]]:
    """The rows of one kind off the band's middle, grouped by (band, source, framework, hardware): each group's
    rows, lowest and highest ratio and layouts, the bands in BANDS' order and the largest group first."""
    data = other_runs_data()
    found: dict[tuple[str, str, str, str], list[tuple[str, float, str]]] = defaultdict(list)
    for row in other_runs:
        if row.get("kind") != kind or row.get("kernels") is None or row.get("unit") in COST_UNITS:
            continue
        ratio = row["kernels"] / row["published"]
        name = band(ratio)
        if name is None:
            continue
        run = next(r for r in data["runs"] if r["id"] == row["run"])
        source_id = row["run"].split()[0]
        source = data["sources"][source_id]
        key = (name, source_id, stated(run, source, "framework", "megatron"), stated(run, source, "hardware"))
        found[key].append((row["run"], ratio, layout_text(run, source)))
    order = [name for name, _, _ in BANDS]
    out = [{"band": key[0], "source": key[1], "framework": key[2], "hardware": key[3], "rows": len(rows),
            "lowest": min(r for _, r, _ in rows), "highest": max(r for _, r, _ in rows),
            "layouts": sorted({layout for _, _, layout in rows}), "runs": [run for run, _, _ in rows],
            "ratios": [ratio for _, ratio, _ in rows]}
           for key, rows in found.items()]
    return sorted(out, key=lambda g: (order.index(g["band"]), -g["rows"], g["source"], g["hardware"]))


def markdown(found: list[dict[str, Any]], rows: bool = False) -> str:
    """The groups as a Markdown table, one line a group; rows: each run beneath its group, with its ratio."""
    lines = ["| band | source | framework | GPU | rows | range | layouts |", "|---|---|---|---|---|---|---|"]
    for g in found:
        lines.append(f"| {g['band']} | {g['source']} | {g['framework']} | {g['hardware']} | {g['rows']} | "
                     f"{g['lowest']:.2f}-{g['highest']:.2f} | {'; '.join(g['layouts'])} |")
        if rows:
            lines += [f"|  | {run} |  |  |  | {ratio:.3f} |  |" for run, ratio in zip(g["runs"], g["ratios"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("published_json", help="the output of `python cli.py published --json`")
    parser.add_argument("--kind", default="dense training", choices=KINDS)
    parser.add_argument("--rows", action="store_true", help="each run beneath its group, with its ratio")
    args = parser.parse_args(argv)
    try:
        with open(args.published_json) as handle:
            other = json.load(handle)["other_runs"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"band_groups: {args.published_json} is not `published --json`'s output ({error}).", file=sys.stderr)
        return 2
    found = groups(other, args.kind)
    print(markdown(found, args.rows))
    for name, _, _ in BANDS:
        print(f"{name}: {sum(g['rows'] for g in found if g['band'] == name)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
