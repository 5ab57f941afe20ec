"""formula == measurement against Hugging Face's own classes (code nobody here wrote).

For each odd-sized config (tests/odd_configs.py) the class a user trains is built from the config
under FakeTensorMode (no weights, no memory) and measured: parameters, matmul FLOPs of a forward
and of its backward (FlopCounterMode, eager attention), and the KV cache after a prefill and three
decode steps, at two (n, b) with b > 1, in fp32 and bf16 (tests/golden/hf_parity.py). Every
comparison is exact. tests/test_golden.py compares the formulas with the measurements recorded in
tests/golden/hf_parity.json; here (slow) the classes are measured again and must give the record.
"""

from __future__ import annotations

import pytest

from tests.golden import read, stale
from tests.golden.hf_parity import CASES, NAME, measure

pytestmark = pytest.mark.measured


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[name for name, _, _ in CASES])
def test_params_flops_and_kv_cache_equal_hugging_face(case):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    name, cfg, dtype = case
    assert measure(cfg, dtype) == read(NAME)["cases"][name], stale(NAME)
