"""One published row's step, or one `simulate --json` line, under several Layout.optimizer_step values:
the setup tests/test_megatron_step.py and tests/test_torch_optimizer_step.py share (what each value adds
to the optimizer's seconds is what they assert)."""

from __future__ import annotations

import dataclasses
import json

from costmodel.layout import ParallelEstimate
from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, train_setup


def row_setup(row: str, source: str):
    """The published row `row` of `source` as `published` builds it: (estimate, hardware, step options)."""
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == row)
    return train_setup(run, data["sources"][source])


def row_steps(row: str, source: str, names: tuple[str, ...], **layout_changes) -> dict[str, dict]:
    """The kernel model's step() of the row under each optimizer_step in `names` (and layout_changes)."""
    estimate, hardware, options = row_setup(row, source)
    steps = {}
    for name in names:
        layout = dataclasses.replace(estimate.layout, optimizer_step=name, **layout_changes)
        steps[name] = step_time(ParallelEstimate(estimate.cfg, estimate.workload, layout), hardware,
                                time_model="kernels", **options).step()
    return steps


def simulate_optimizer_seconds(capsys, base: list[str], extras: list[list[str]]) -> list[float]:
    """`simulate ... --json`'s step optimizer_seconds for base + each of extras (each must exit 0)."""
    import cli

    seconds = []
    for extra in extras:
        assert cli.main(base + extra) == 0
        seconds.append(json.loads(capsys.readouterr().out)["step"]["optimizer_seconds"])
    return seconds
