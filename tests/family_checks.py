"""The tests each Hugging Face family's file declares the same way, built once for its CONFIGS.

`family_checks(CONFIGS, attentions)` returns the parametrized test functions (a new set per call, so
each module's marks are its own); the family's file binds each into its namespace where it declares
it, `test_validate_rows_exact = CHECKS.validate_rows_exact`, so pytest collects it there, in that
order and under the same id as a test written out in the file. What a family alone has (exact
integers, buffers, refusals) stays in its file.

- parameters_equal_the_class[name]: our count == the meta model's (tests/family_configs.py)
- validate_rows_exact[name-attention] (or [name] where the class has eager attention alone):
  validate's rows (b 2, n 12, bf16, 2 generated tokens) under each attention
- saved_bytes_and_cache[name-dtype]: bytes saved for backward (eager, b 2, n 9) and the cache after a
  prefill; saved_bytes[name-dtype] where the class holds no cache
- decode_and_prefill_flops[name]: a decode step's and a prefill's FLOPs; prefill_flops[name] alone
  where the class has no cache to decode from
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Sequence

import pytest

from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_rows_exact, assert_saved_bytes_exact,
                                  estimated_total, hf_meta_count, odd_config_rows)

DTYPES = ["fp32", "bf16"]


def family_checks(configs: dict[str, dict[str, Any]],
                  attentions: Sequence[str] | None = ("eager", "sdpa")) -> SimpleNamespace:
    """The standard tests over sorted(configs); attentions None: the class runs eager alone and the
    rows test takes the name only."""
    names = sorted(configs)

    @pytest.mark.parametrize("name", names)
    def parameters_equal_the_class(name):
        pytest.importorskip("transformers")
        assert estimated_total(configs[name], name) == hf_meta_count(configs[name])

    if attentions is None:
        @pytest.mark.parametrize("name", names)
        def validate_rows_exact(name):
            pytest.importorskip("transformers")
            assert_rows_exact(odd_config_rows(configs[name], name, "eager"))
    else:
        @pytest.mark.parametrize("attention", list(attentions))
        @pytest.mark.parametrize("name", names)
        def validate_rows_exact(name, attention):
            pytest.importorskip("transformers")
            assert_rows_exact(odd_config_rows(configs[name], name, attention))

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("name", names)
    def saved_bytes_and_cache(name, dtype):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype)
        assert_cache_after_prefill_exact(configs[name], name, dtype)

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("name", names)
    def saved_bytes(name, dtype):
        pytest.importorskip("transformers")
        assert_saved_bytes_exact(configs[name], name, dtype)

    @pytest.mark.parametrize("name", names)
    def decode_and_prefill_flops(name):
        pytest.importorskip("transformers")
        assert_decode_flops_exact(configs[name], name)
        assert_prefill_flops_exact(configs[name], name)

    @pytest.mark.parametrize("name", names)
    def prefill_flops(name):
        pytest.importorskip("transformers")
        assert_prefill_flops_exact(configs[name], name)

    return SimpleNamespace(parameters_equal_the_class=parameters_equal_the_class,
                           validate_rows_exact=validate_rows_exact,
                           saved_bytes_and_cache=saved_bytes_and_cache, saved_bytes=saved_bytes,
                           decode_and_prefill_flops=decode_and_prefill_flops, prefill_flops=prefill_flops)
