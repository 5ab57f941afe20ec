"""Fixtures shared by several test files."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def gloo() -> dict[str, list[dict]]:
    """Every small distributed case (tests/distributed_cases.py) run once on 2 gloo ranks:
    {case: [rank 0's result, rank 1's result]}."""
    from tests.distributed_cases import GLOO_CASES
    from validate.distributed.launch import run_gloo, run_jobs

    names = list(GLOO_CASES)
    by_rank = run_gloo(run_jobs, 2, [GLOO_CASES[name] for name in names], timeout_s=300)
    return {name: [by_rank[r][i] for r in range(2)] for i, name in enumerate(names)}
