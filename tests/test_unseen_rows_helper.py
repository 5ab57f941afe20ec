"""tests/unseen_rows.py, the unseen-row tests' shared helper: its groups and summaries on made-up ratios, and that a
wrong figure or a group left unstated fails."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_summaries, decode_groups, runs_of, source_of, summary, train_groups

EVERY = {"src-a m1": 0.8, "src-a m2": 1.0, "src-b m1": 1.2, "gpu-hours-x 7b": 1.5, "src-c m1": 1.04}


def test_summary_counts_as_published_does():
    # errors 0.2, 0, 0.2, 0.5, 0.04: median 0.2; 0.8, 1.0, 1.2, 1.04 within 0.75-1.33x; 1.0 and 1.04 within 10% and 5%
    assert summary(list(EVERY.values())) == ((5, 20.0, 4, 2, 2), (0.8, 1.5))


def test_the_groups():
    assert decode_groups(EVERY, ("src-a", "src-b")) == {"all": list(EVERY), "src-a": ["src-a m1", "src-a m2"],
                                                        "src-b": ["src-b m1"]}
    assert train_groups(EVERY, ("src-a",)) == {"training rates": ["src-a m1", "src-a m2", "src-b m1", "src-c m1"],
                                               "src-a": ["src-a m1", "src-a m2"], "GPU-hours": ["gpu-hours-x 7b"]}


def test_a_wrong_figure_or_an_unstated_group_fails():
    groups = {"all": list(EVERY), "src-b": ["src-b m1"]}
    assert_summaries(EVERY, groups, {"all": ((5, 20.0, 4, 2, 2), (0.8, 1.5)), "src-b": ((1, 20.0, 1, 0, 0), (1.2, 1.2))})
    with pytest.raises(AssertionError, match="src-b"):
        assert_summaries(EVERY, groups, {"all": ((5, 20.0, 4, 2, 2), (0.8, 1.5)), "src-b": ((1, 20.0, 1, 0, 0), (1.2, 1.3))})
    with pytest.raises(AssertionError, match="src-b"):
        assert_summaries(EVERY, groups, {"all": ((5, 20.0, 4, 2, 2), (0.8, 1.5))})


def test_a_sources_runs_are_those_its_id_names():
    """The first word of an id, not a prefix: bloom-prequel's 19 rows, not bloom-prequel-200b's 47."""
    assert len(runs_of("bloom-prequel")) == 19 and len(runs_of("bloom-prequel-200b")) == 47
    assert "tr11-176B-ml/chronicles-prequel.md" in source_of("bloom-prequel")["source"]
    assert "tr11-200B-ml/chronicles-prequel.md" in source_of("bloom-prequel-200b")["source"]
