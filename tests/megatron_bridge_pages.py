"""What the two typed Megatron-Bridge pages' tests share (tests/test_published_dense_runs.py,
tests/test_published_moe_runs.py): a typed line's cells by column name, and the runs file's rows
with one source's entry."""

from __future__ import annotations

from costmodel.config import ConfigError
from reports.published_runs import other_runs_data, train_setup


def named_cells(header_line: str, values: list[str], heading: str) -> dict[str, str]:
    """The line's cell values by the header's column names; the table's heading as System (or as
    Model where the table has a System column)."""
    names = [c.strip() for c in header_line.strip("|").split("|")]
    cells = dict(zip(names, values, strict=True))
    cells["System" if "System" not in cells else "Model"] = heading
    return cells


def runs_and_source(source: str) -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"][source]


def refusal(run: dict, source: dict) -> str | None:
    """None where the row builds (model, layout, setup); else the model's refusal."""
    try:
        train_setup(run, source)
    except ConfigError as error:
        return str(error)
    return None
