"""The tests each Hugging Face family's file declares the same way, built once for its CONFIGS.

`family_checks(CONFIGS)` returns the parametrized test functions (a new set per call, so each
module's marks are its own); the family's file binds each into its namespace where it declares it,
`test_validate_rows_exact = CHECKS.validate_rows_exact`, so pytest collects it there, in that order
and under the same id as a test written out in the file. What a family alone has (exact integers,
buffers, refusals) stays in its file.

- parameters_equal_the_class: our count == the meta model's (tests/family_configs.py)
- validate_rows_exact: validate's rows (b 2, n 12, bf16, 2 generated tokens) under each attention
- saved_bytes_and_cache: bytes saved for backward (eager, b 2, n 9) and the cache after a prefill;
  saved_bytes, cache_after_prefill each alone; bytes_saved_for_backward over the attentions and
  (batch, tokens) pairs its ids name
- decode_and_prefill_flops: a decode step's and a prefill's FLOPs; prefill_flops alone where the
  class holds no cache to decode from

`real_config_checks(REAL, EXACT)` returns the two tests over a file's real config.json files (the
Hub's, as published): the meta model's count == the file's exact integer, and the file read without
its model_type (architectures alone) is the same ModelConfig.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from tests.cli_run import run_main
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_rows_exact, assert_saved_bytes_exact,
                                  estimated_total, hf_meta_count, odd_config_rows)

DTYPES = ["fp32", "bf16"]
ATTENTIONS = ["eager", "sdpa"]
#: (batch, tokens) pairs of the bytes-saved tests that run two shapes
BATCH_TOKENS = [(2, 9), (1, 5)]

#: each check's id parts in order (the first stands first in the id: the innermost parametrize), as
#: most files write them; a file that wrote another order names its own in `ids`
DEFAULT_IDS = {
    "parameters_equal_the_class": ("name",),
    "validate_rows_exact": ("name", "attention"),
    "saved_bytes_and_cache": ("name", "dtype"),
    "saved_bytes": ("name", "dtype"),
    "cache_after_prefill": ("dtype", "name"),
    "bytes_saved_for_backward": ("attention", "dtype", "name"),
    "decode_and_prefill_flops": ("name",),
    "prefill_flops": ("name",),
}


def family_checks(configs: dict[str, dict[str, Any]], ids: dict[str, tuple[str, ...]] | None = None
                  ) -> SimpleNamespace:
    """The standard tests over sorted(configs), under eager and sdpa attention. ids: a check's id
    parts in order where the file's differ from DEFAULT_IDS; a rows or bytes-saved test without
    "attention" runs eager (the class has no other path, or the file measures eager alone), a
    bytes-saved test without "b,n" runs at b 2, n 9."""
    values = {"name": sorted(configs), "dtype": DTYPES, "b,n": BATCH_TOKENS, "attention": ATTENTIONS}
    order = dict(DEFAULT_IDS, **(ids or {}))

    def over(check: str, test):
        for axis in order[check]:  # applied first, it stands first in the id
            test = pytest.mark.parametrize(axis, values[axis])(test)
        return test

    def parameters_equal_the_class(name):
        pytest.importorskip("transformers")
        assert estimated_total(configs[name], name) == hf_meta_count(configs[name])

    def rows_eager(name):
        pytest.importorskip("transformers")
        assert_rows_exact(odd_config_rows(configs[name], name, "eager"))

    def rows(name, attention):
        pytest.importorskip("transformers")
        assert_rows_exact(odd_config_rows(configs[name], name, attention))

    def saved_bytes_and_cache(name, dtype):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype)
        assert_cache_after_prefill_exact(configs[name], name, dtype)

    def saved_bytes(name, dtype):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype)

    def saved_bytes_eager(name, dtype):  # its own function: a mark stays on the function it marks
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype)

    def saved_bytes_under(name, dtype, attention):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype, attention=attention)

    def saved_bytes_at(name, dtype, b, n):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype, b=b, n=n)

    def saved_bytes_at_under(name, dtype, b, n, attention):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype, b=b, n=n, attention=attention)

    def cache_after_prefill(name, dtype):
        pytest.importorskip("transformers")
        assert_cache_after_prefill_exact(configs[name], name, dtype)

    def decode_and_prefill_flops(name):
        pytest.importorskip("transformers")
        assert_decode_flops_exact(configs[name], name)
        assert_prefill_flops_exact(configs[name], name)

    def prefill_flops(name):
        pytest.importorskip("transformers")
        assert_prefill_flops_exact(configs[name], name)

    bytes_saved = {frozenset({"name", "dtype"}): saved_bytes_eager,
                   frozenset({"name", "dtype", "attention"}): saved_bytes_under,
                   frozenset({"name", "dtype", "b,n"}): saved_bytes_at,
                   frozenset({"name", "dtype", "b,n", "attention"}): saved_bytes_at_under,
                   }[frozenset(order["bytes_saved_for_backward"])]
    rows_test = rows if "attention" in order["validate_rows_exact"] else rows_eager
    return SimpleNamespace(
        parameters_equal_the_class=over("parameters_equal_the_class", parameters_equal_the_class),
        validate_rows_exact=over("validate_rows_exact", rows_test),
        saved_bytes_and_cache=over("saved_bytes_and_cache", saved_bytes_and_cache),
        saved_bytes=over("saved_bytes", saved_bytes),
        cache_after_prefill=over("cache_after_prefill", cache_after_prefill),
        bytes_saved_for_backward=over("bytes_saved_for_backward", bytes_saved),
        decode_and_prefill_flops=over("decode_and_prefill_flops", decode_and_prefill_flops),
        prefill_flops=over("prefill_flops", prefill_flops))


def assert_counts_exact(configs: dict[str, dict[str, Any]], counts: list[int]) -> None:
    """The meta models' parameter counts of sorted(configs) == ours == the file's exact integers."""
    pytest.importorskip("transformers")
    names = sorted(configs)
    theirs = [hf_meta_count(configs[name]) for name in names]
    assert theirs == [estimated_total(configs[name], name) for name in names] == counts


def assert_class_default_total(model_type: str, total: int) -> None:
    """The class's default config (its full dict, its diff dict, the bare model_type) counts `total`,
    ours and the meta model's."""
    transformers = pytest.importorskip("transformers")
    default = transformers.AutoConfig.for_model(model_type)
    for fields in (default.to_dict(), default.to_diff_dict(), {"model_type": model_type}):
        assert estimated_total(fields, "x") == total
    assert hf_meta_count({"model_type": model_type}) == total


def cli_total(fields: dict[str, Any], tmp_path, capsys) -> int:
    """`estimate --config --json`'s parameter total for `fields` written as a config.json."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    return json.loads(out)["params"]["total"]


def assert_estimate_refuses(fields: dict[str, Any], words: str, tmp_path, capsys) -> None:
    """`estimate --config` of `fields` written as a config.json exits 2 with nothing on stdout and one
    `error:` line on stderr holding `words`."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert (code, out) == (2, "") and err.startswith("error:") and err.count("\n") == 1 and words in err, err


def refused_in_one_line(fields: dict[str, Any], cases: list[tuple[dict[str, Any], str]]):
    """A test that writes `fields` with each case's change as a config.json and expects `estimate` to
    refuse it as assert_estimate_refuses checks; the cases stay in the file."""
    @pytest.mark.parametrize("change, words", cases)
    def refused(tmp_path, capsys, change, words):
        assert_estimate_refuses(dict(fields, **change), words, tmp_path, capsys)

    return refused


def real_config_checks(real: dict[str, dict[str, Any]], exact: dict[str, int]) -> SimpleNamespace:
    """The two tests over sorted(real): equals_hugging_face (the meta model of each config.json,
    `architectures` dropped, counts exact[name]) and architectures_alone_name_the_model_type (the
    config without its model_type reads as the same ModelConfig)."""
    @pytest.mark.parametrize("name", sorted(real))
    def equals_hugging_face(name):
        pytest.importorskip("transformers")
        assert hf_meta_count({k: v for k, v in real[name].items() if k != "architectures"}) == exact[name]

    @pytest.mark.parametrize("name", sorted(real))
    def architectures_alone_name_the_model_type(name):
        from costmodel.hf import from_hf_config

        bare = {k: v for k, v in real[name].items() if k != "model_type"}
        assert from_hf_config(bare, name=name) == from_hf_config(real[name], name=name)

    return SimpleNamespace(equals_hugging_face=equals_hugging_face,
                           architectures_alone_name_the_model_type=architectures_alone_name_the_model_type)
