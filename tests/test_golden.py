"""The formulas against measurements recorded in tests/golden/ (no torch needed).

Each golden file holds what Hugging Face's own classes measured for a set of odd configs
(tests/golden/hf_families.py: every family's config.json dicts; tests/golden/hf_parity.py: the
odd ModelConfigs in fp32 and bf16). Here the estimate must give the recorded numbers exactly; the
slow tier (tests/test_hf_families_parity.py, tests/test_hf_parity.py) measures the classes again
and must find the same records, so a file that no longer matches the code fails there.
"""

from __future__ import annotations

import pytest

from tests.golden import hf_families, hf_parity, read

FAMILY_IDS = [name for name, _ in hf_families.CASES]
PARITY_IDS = [name for name, _, _ in hf_parity.CASES]


@pytest.fixture(scope="module")
def families() -> dict:
    return read(hf_families.NAME)["cases"]


@pytest.fixture(scope="module")
def parity() -> dict:
    return read(hf_parity.NAME)["cases"]


@pytest.mark.parametrize("name, ids", [(hf_families.NAME, FAMILY_IDS), (hf_parity.NAME, PARITY_IDS)])
def test_each_golden_file_holds_every_case_once_and_its_versions(name, ids):
    golden = read(name)
    assert sorted(golden["cases"]) == sorted(ids)
    assert sorted(golden["versions"]) == ["torch", "transformers"]


@pytest.mark.parametrize("case", hf_families.CASES, ids=FAMILY_IDS)
def test_family_config_equals_the_recorded_measurement(case, families):
    """Parameters; forward and backward matmul FLOPs and bytes saved for backward (bf16 and fp32)
    at two workloads; the KV cache after the prefill and each of three decode steps."""
    name, config = case
    assert hf_families.formula(config) == families[name], name


@pytest.mark.parametrize("case", hf_parity.CASES, ids=PARITY_IDS)
def test_odd_config_equals_the_recorded_measurement(case, parity):
    """Parameters, forward and backward matmul FLOPs and the KV cache after three decode steps,
    at two workloads."""
    name, cfg, dtype = case
    assert hf_parity.formula(cfg, dtype) == parity[name], name
