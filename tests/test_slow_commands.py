"""The commands a new user found slow (validate/FINDINGS.md, wt32_speed): plot params' counts
compiled to plain Python (reports/series.py param_numbers) give sympy's integers, the cost tree's
expressions substituted exactly, group by group; the reference model's measurements run on one
CPU thread (reports/measured.py build_model) and count what they counted on several."""

from __future__ import annotations

import pytest

from costmodel.evaluate import exact
from costmodel.presets import load_preset
from costmodel.tree import model_values
from reports import series


@pytest.mark.parametrize("name", ["gpt2", "t5-small", "mixtral-8x7b", "bert-base-uncased"])
def test_compiled_counts_are_the_trees(name, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a cold cache: the module is built here
    cfg = load_preset(name)
    subs = model_values(cfg)
    expected = {label: exact(expr, subs) for label, expr in series.param_expressions(cfg).items()}
    assert series.param_numbers(cfg) == expected
    assert list(series.param_groups(cfg)) == [label for label, _ in series.PARAM_GROUPS]


def test_published_totals():
    # GPT-2 small: 124,439,808 parameters (Hugging Face's gpt2, tied head counted once);
    # Mixtral 8x7B: 46,702,792,704 in all, 12,879,925,248 used per token (Mistral AI's
    # "12.9B active" of the release notes)
    assert series.total_params(load_preset("gpt2")) == 124_439_808
    mixtral = load_preset("mixtral-8x7b")
    assert series.total_params(mixtral) == 46_702_792_704
    assert series.active_params(mixtral) == 12_879_925_248
    assert series.active_params(load_preset("gpt2")) is None


@pytest.mark.measured
def test_measurements_run_on_one_thread_and_count_the_same():
    torch = pytest.importorskip("torch")
    from reports.measured import build_model, measure_generation, tiny

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        build_model(tiny(load_preset("gpt2")))
        assert torch.get_num_threads() == 1
        counted = measure_generation(tiny(load_preset("gpt2")), 3)
    finally:
        torch.set_num_threads(threads)
    # gpt2-tiny's counts per step as `plot generation -m gpt2 --csv` gave them on two threads before
    # (cumulative 210,048 / 631,168 / 1,264,384 without a cache, 210,048 / 420,608 / 631,680 with one),
    # equal to the cost tree's columns of the same rows
    assert counted == {"without_cache": [210_048, 421_120, 633_216], "with_cache": [210_048, 210_560, 211_072]}
