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
    aliases = json.loads((PRESET_DIR / "aliases.json").read_text()).get(name, [])
    for alias in aliases:  # each Hub id (a base model and its -Instruct share the shapes; OPT-175B
        # and GPT-3 were never on the Hub)
        code, out, err = run_main(["estimate", "--model", alias, "--seq-len", "512", "--json"], capsys)
        assert code == 0, err
        assert json.loads(out)["params"]["total"] == REQUESTED[name]


@pytest.mark.parametrize("name", ["llama3.1-8b", "llama3.1-70b", "llama3.2-1b", "llama3.2-3b"])
def test_llama_3_presets_answer_to_the_base_and_the_instruct_id(name):
    aliases = json.loads((PRESET_DIR / "aliases.json").read_text())[name]
    base = next(alias for alias in aliases if not alias.endswith("-Instruct"))
    assert base + "-Instruct" in aliases


def test_deepseek_v2_lite_preset_is_the_survey_s_released_config():
    """The preset and tests/test_hf_survey_released.py REAL_ADDED hold the same released config.json
    (deepseek-ai/DeepSeek-V2-Lite): every field both give has one value, and q_lora_rank is among
    them (a preset without it reads DeepseekV2Config's default 1536, a query LoRA the model lacks)."""
    from tests.test_hf_survey_released import REAL_ADDED

    preset = json.loads((PRESET_DIR / "deepseek-v2-lite.json").read_text())
    real = REAL_ADDED["deepseek-v2-lite"]
    shared = sorted(set(preset) & set(real))
    assert "q_lora_rank" in shared and preset["q_lora_rank"] is None
    assert {key: preset[key] for key in shared} == {key: real[key] for key in shared}
    # A field only one of them gives is the class's default in the other.
    defaults = pytest.importorskip("transformers").DeepseekV2Config().to_dict()
    for key in sorted(set(real) - set(preset)):
        assert defaults.get(key) == real[key], key
