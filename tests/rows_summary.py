"""Exact ratios and summary counts of a set of published sources' rows, as `published`'s summary counts them
(our speed over the published one; a GPU-hours row's published hours over ours; error |ratio - 1|, kernel
model; a decode row's tokens/s a sequence, reports/published_decode.decode_run): the helper of the per-session
summaries of unseen rows (tests/test_session*_rows_summary.py, tests/test_session30_unseen_rows.py)."""

from __future__ import annotations

import statistics

from reports.published_decode import decode_run
from reports.published_runs import COST_UNITS, TRAIN_UNITS, other_runs_data


def ratios(sources: tuple[str, ...], refused: dict[str, str] | None = None,
           tables: dict | None = None) -> dict[str, float]:
    """Each row of `sources` (its id's first word) -> ours / published, the GPU-hours rows inverted. With
    `refused` (a dict), a row the model cannot express (a ConfigError, as `published` marks it not expressible:
    a decode row, or a training row whose layout or kernel it has no figures for) goes there with its reason
    instead of raising. With `tables` (the published_tables fixture: `published`'s whole table, computed once a
    test process), the rows are read from its other_runs, which computed each with the same measure and the
    kernel model, instead of computed again."""
    from costmodel.config import ConfigError

    if tables is not None:
        return _read_ratios(sources, refused, tables["other_runs"])
    data = other_runs_data()
    out = {}
    for run in data["runs"]:
        source = run["id"].split()[0]
        if source not in sources:
            continue
        if run["kind"] == "decode":
            key, unit, measure = "published_tokens_per_s", "tokens/s", decode_run
        else:
            key = next(k for k in TRAIN_UNITS if k in run)
            unit, measure = TRAIN_UNITS[key]
        try:
            value = measure(run, data["sources"][source], "kernels")
        except ConfigError as error:
            if refused is None:
                raise
            refused[run["id"]] = str(error)
            continue
        out[run["id"]] = ratio(unit, run[key], value)
    return out


def ratio(unit: str, published: float, ours: float) -> float:
    """Ours / published, a speed's; a cost's (GPU-hours, COST_UNITS) published / ours."""
    return published / ours if unit in COST_UNITS else ours / published


def _read_ratios(sources: tuple[str, ...], refused: dict[str, str] | None, rows: list[dict]) -> dict[str, float]:
    """ratios() read from `published`'s other_runs rows (reports/published_runs.other_runs): the kernel model's
    figure, None with the reason where it could not express the row (not_expressible: both models' reasons)."""
    from costmodel.config import ConfigError

    out = {}
    for row in rows:
        if row["run"].split()[0] not in sources:
            continue
        if row["kernels"] is None:
            if refused is None:
                raise ConfigError(row["not_expressible"])
            refused[row["run"]] = row["not_expressible"]
            continue
        out[row["run"]] = ratio(row["unit"], row["published"], row["kernels"])
    return out


def stats(values: list[float]) -> tuple:
    """(rows, median error %, within 0.75-1.33x, within 10%, within 5%)."""
    errors = [abs(r - 1) for r in values]
    return (len(values), round(100 * statistics.median(errors), 1), sum(0.75 <= r <= 1.33 for r in values),
            sum(e <= 0.10 for e in errors), sum(e <= 0.05 for e in errors))
