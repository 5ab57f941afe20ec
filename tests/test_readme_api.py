"""The README's "Python API" section runs as printed: each line of its example is executed in turn,
a line whose comment starts with a number evaluates to that number, every `costmodel.NAME` it calls
is public (costmodel.__all__) and documented, and the workload keywords it lists are Workload's
fields. The package docstring's example names only public functions too."""

from __future__ import annotations

import ast
import inspect
import re
import warnings
from pathlib import Path

import costmodel
from costmodel.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
SECTION = ROOT.joinpath("README.md").read_text(encoding="utf-8").split("## Python API", 1)[1].split("\n## ", 1)[0]
EXAMPLE = re.search(r"```python\n(.*?)```", SECTION, re.S).group(1)


def _statements() -> list[tuple[str, str]]:
    """(code, comment) of each line of the example."""
    out = []
    for line in EXAMPLE.splitlines():
        code, _, comment = line.partition("#")
        if code.strip():
            out.append((code.strip(), comment.strip()))
    return out


def test_the_readme_example_runs_and_gives_the_numbers_it_prints():
    import pandas as pd

    scope: dict = {}
    shown = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for code, comment in _statements():
            if isinstance(ast.parse(code).body[0], ast.Expr):
                value = eval(code, scope)  # noqa: S307 (the README's own example)
                number = re.match(r"(\d[\d,]*)\b", comment)
                if number:
                    shown[code] = (value, int(number.group(1).replace(",", "")))
                if "DataFrame" in comment:
                    assert isinstance(value, pd.DataFrame) and len(value), code
            else:
                exec(code, scope)  # noqa: S102
    # "Warnings (a sequence past a model's context) are Python warnings": the sweep's 8192 > 4096
    assert [str(w.message) for w in caught] == [
        "sequence length 8192 is beyond the context of model 'llama2-7b' (4096 tokens)."]
    # Llama 2 7B: 32 layers x (4 x 4096^2 attention + 3 x 4096 x 11008 MLP + 2 x 4096 norms)
    # + 2 x 32000 x 4096 (untied embedding and head) + 4096 (final norm)
    assert 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096 == 6_738_415_616
    assert {code: pair[0] for code, pair in shown.items()} == {code: pair[1] for code, pair in shown.items()}
    assert list(shown) == ['result.to_dict()["params"]["total"]']


def test_every_name_the_examples_call_is_public_and_documented():
    package_example = costmodel.__doc__.split("\n\n")[1]
    called = set(re.findall(r"costmodel\.([a-z_]+)\(", EXAMPLE + package_example))
    assert called == {"estimate", "sweep", "serve", "simulate", "plan"}
    for name in called:
        assert name in costmodel.__all__ and inspect.getdoc(getattr(costmodel, name)), name
    assert not re.search(r"\b_[a-z]", EXAMPLE + package_example)  # no private helper to call
    result = costmodel.estimate("gpt2")
    for method in re.findall(r"result\.([a-z_]+)\(", EXAMPLE):
        assert inspect.getdoc(getattr(type(result), method)), method


def test_the_keywords_the_readme_lists_are_workload_fields():
    keywords = re.search(r"the keywords are `Workload`'s fields\s+\(`costmodel/workload.py`: (.*?)\)", SECTION, re.S)
    listed = re.findall(r"`([a-z_]+)`", keywords.group(1))
    assert listed == ["seq_len", "tgt_len", "batch", "dtype", "gen_tokens", "impl", "attention", "recompute",
                      "optimizer", "precision"]
    assert set(listed) <= set(Workload.__dataclass_fields__)
    from costmodel.config import ModelConfig  # the README's `costmodel.config.ModelConfig`

    assert "costmodel.config.ModelConfig" in SECTION and inspect.getdoc(ModelConfig)
