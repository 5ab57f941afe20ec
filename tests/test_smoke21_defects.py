"""A new user's twenty-first round (session 25; validate/FINDINGS.md "A new user's twenty-first round").
Each test failed before its fix; the numbers are exact, or the figure another command prints for the
same case."""

from __future__ import annotations

import pytest

from tests.cli_run import one_error_line, run_json

# 1. plan --json's split of a step: its parts add up to step_time, as simulate's do

PLAN_FP8 = ["--model", "llama3-8b", "--hardware", "h100", "--seq-len", "4096", "--framework", "megatron",
            "--fp8", "delayed", "--global-batch", "64"]


def test_plan_split_adds_up_to_the_step_simulate_times(capsys):
    """`plan --fp8 delayed --json`'s split left out the overlap contention (21.06 ms of a 1.1999 s step:
    compute 1.1058 + communication 0.0670 + optimizer 0.0060 = 1.1788 s) and autocast's casts, so its
    parts fell short of step_time, and report's step figure drew bars shorter than the step."""
    plan = run_json(["plan", *PLAN_FP8, "--gpus", "16", "--top", "1"], capsys)["feasible"][0]
    lay = plan["layout"]
    assert (lay["tp"], lay["pp"], lay["dp"], lay["zero"], lay["microbatches"]) == (1, 1, 16, 1, 4)
    sim = run_json(["simulate", "--train", *PLAN_FP8, "--dp", "16", "--zero", "1", "--microbatches", "4"], capsys)
    step = sim["step"]
    assert plan["step_time"] == step["seconds"]
    split = plan["split"]
    assert split["overlap_contention"] == step["overlap_contention_seconds"] > 0.02
    assert split["autocast"] == step["autocast_seconds"]
    assert split["communication"] == sum(step["exposed_communication_seconds"].values())
    assert sum(split.values()) == pytest.approx(plan["step_time"], rel=1e-12)


def test_report_step_figure_stacks_every_part():
    from reports import figures
    assert [name for name, _ in figures.STEP_PARTS] == [
        "compute", "communication", "bubble", "optimizer", "gradient_accumulation", "autocast",
        "overlap_contention"]
