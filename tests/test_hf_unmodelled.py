"""Model types transformers 5.24 runs that no block here expresses (costmodel/hf_unmodelled.py):
their config.json is one `error:` line, exit 2, naming the type and what it lacks. Since session 26
(jetmoe, longcat_flash read) the table is empty; the refusal itself is checked on an entry added for
the test."""

from __future__ import annotations

import json


def test_no_type_is_refused_as_unmodelled_today():
    from costmodel.hf_unmodelled import UNMODELLED_TYPES

    assert UNMODELLED_TYPES == {}


def test_an_unmodelled_type_is_refused_in_one_line_naming_what_it_lacks(tmp_path, capsys, monkeypatch):
    from costmodel.hf_unmodelled import UNMODELLED_TYPES
    from tests.cli_run import run_main

    monkeypatch.setitem(UNMODELLED_TYPES, "llama", "its blocks are missing (a test's entry).")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama"}))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err
    assert "model_type 'llama' is not modelled: its blocks are missing" in err, err
