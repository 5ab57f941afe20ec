"""The serving tables' first-computed figures, one rule for every table's tests: a table's FIRST list of (row, metric,
published, ours) summarised as reports/serving_published.py summarises it, docs/serving.md's summary row checked against
a summary, and the table run now as the command runs it, each figure against the first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def first_summary(source: str, rows: list) -> tuple[list, dict]:
    """(the Comparisons, `source`'s summary) of a FIRST list as the printer fed it."""
    from reports.serving_published import Comparison, summarise

    fed = [Comparison(source, row, metric, published, ours) for row, metric, published, ours in rows]
    return fed, summarise(fed)[source]


def assert_docs_row(source: str, summary: dict) -> None:
    """docs/serving.md's summary row of `source`: comparisons, median error %, within 0.75-1.33x, lowest, highest."""
    text = (ROOT / "docs" / "serving.md").read_text()
    row = re.search(rf"^\| {re.escape(source)} \| (\d+) \| ([\d.]+)% \| (\d+) \| ([\d.]+) \| ([\d.]+) \|", text, re.M)
    assert row, source
    assert (int(row[1]), int(row[3])) == (summary["comparisons"], summary["within_0.75_1.33"]), source
    assert float(row[2]) == pytest.approx(100 * summary["median_error"], abs=0.05), source
    assert (float(row[4]), float(row[5])) == (round(summary["lowest"], 2), round(summary["highest"], 2)), source


def assert_figures_now(selector: str, rows: list, abs_tol: float) -> None:
    """The table run as `python benchmarks/serve_published.py <selector>` runs it: its rows in FIRST's order, each
    figure as first computed to 0.05% (or abs_tol)."""
    import benchmarks.serve_published as serve_published
    from reports.serving_published import collect

    fed = collect([serve_published.SELECTORS[selector][0]])
    assert [(c.source, c.row, c.metric, c.published) for c in fed] == [(selector,) + row[:3] for row in rows]
    for c, (row, metric, _, ours) in zip(fed, rows):
        assert c.ours == pytest.approx(ours, rel=5e-4, abs=abs_tol), (row, metric)
