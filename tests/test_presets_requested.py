"""The presets users asked for (families already supported), each its released config.json as a
stored copy holds it (sources in tests/published.py): the tree's parameter count equals the class
transformers builds from it (tests/published.py REQUESTED; the class itself is built in the slow
tests/test_presets_issue14.py, which iterates FLAGSHIPS), the model card's figure agrees within its
rounding, and `estimate --model NAME` (and its Hub id) runs through the CLI."""

from __future__ import annotations

import json

import pytest

from costmodel import estimate
from costmodel.presets import PRESET_DIR
from tests.cli_run import run_main
from tests.published import REQUESTED, REQUESTED_ACTIVE, REQUESTED_CARDS


@pytest.mark.parametrize("name", sorted(REQUESTED))
def test_requested_preset_counts_the_class_parameters(name):
    params = estimate(name, seq_len=8).to_dict()["params"]
    assert params["total"] == REQUESTED[name]
    assert params.get("active") == REQUESTED_ACTIVE.get(name)


@pytest.mark.parametrize("name", sorted(REQUESTED_CARDS))
def test_requested_preset_agrees_with_its_model_card(name):
    total, active, unit, _source = REQUESTED_CARDS[name]
    assert abs(REQUESTED[name] - total) < unit
    if active is not None:
        assert abs(REQUESTED_ACTIVE[name] - active) < unit


@pytest.mark.parametrize("name", sorted(REQUESTED))
def test_estimate_runs_by_name_and_by_hub_id(name, capsys):
    code, out, err = run_main(["estimate", "--model", name, "--seq-len", "512", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == REQUESTED[name]
    aliases = json.loads((PRESET_DIR / "aliases.json").read_text())[name]
    code, out, err = run_main(["estimate", "--model", aliases[0], "--seq-len", "512", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == REQUESTED[name]
