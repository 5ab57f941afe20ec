"""wt35_review2's checks of wt35_user's and wt35_remat's merged rules: each test failed before its fix."""

from __future__ import annotations

import pytest

from costmodel.api import load_model
from costmodel.config import ConfigError, Workload
from reports.text import significant


@pytest.mark.parametrize("load", [
    (0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.0, 0.0),            # sums to 0.9999999999999999 in floats
    (0.5, 1 / 6, 1 / 6, 1 / 6, 0.0, 0.0, 0.0, 0.0),
    (0.5,) + (1 / 14,) * 7,                               # sums to 0.9999999999999998
])
def test_a_share_of_exactly_one_over_top_k_is_a_routing_a_router_can_make(load):
    # Mixtral (top 2): expert 0 receiving every token once is half the routed slots, the bound itself; the
    # typed decimals' float sum fell a rounding below 1 and the check refused it as "50.0% ... more than 1/2".
    Workload(expert_load=load).check_expert_load(load_model("mixtral-8x7b"))


def test_a_share_above_one_over_top_k_is_still_refused():
    with pytest.raises(ConfigError, match="50.1% of the routed slots is more than 1 / top_k = 1/2"):
        Workload(expert_load=(0.501, 0.099, 0.1, 0.1, 0.1, 0.1, 0.0, 0.0)).check_expert_load(
            load_model("mixtral-8x7b"))


@pytest.mark.parametrize("value, digits, text", [
    (1.2345e-5, 3, "0.0000123"),      # read '1.23e-05': the docstring promises no exponent
    (1.2345e-5, 4, "0.00001234"),
    (-1.2345e-5, 3, "-0.0000123"),
    (0.00012345, 3, "0.000123"),      # unchanged
    (0.5587, 4, "0.5587"),
    (44305.2, 3, "44,305"),
    (999.95, 3, "1,000"),
])
def test_significant_never_writes_an_exponent(value, digits, text):
    assert significant(value, digits) == text


@pytest.mark.parametrize("framework", ["megatron", "deepspeed"])
def test_a_jax_remat_policy_is_refused_on_a_framework_that_runs_no_jax(framework, capsys):
    # `simulate --train --recompute jax-qkv --framework megatron --dp 2` priced a JAX policy inside Megatron's
    # step (237 ms), a run no code makes; torchtitan-op, the other op policy, is refused beside any framework
    # but its own in the same check. The JAX sources are laid out as fsdp2 (XLA's SPMD sharding).
    from costmodel.layout import Layout, ParallelEstimate

    for policy in ("jax-dots", "jax-qkv", "jax-qkv-out"):
        with pytest.raises(ConfigError, match=f"recompute '{policy}' is a JAX remat policy, which {framework}"):
            ParallelEstimate(load_model("llama2-7b"), Workload(seq_len=2048, recompute=policy, attention="flash"),
                             Layout(dp=2, framework=framework, zero=1))
    ParallelEstimate(load_model("llama2-7b"), Workload(seq_len=2048, recompute="jax-qkv", attention="flash"),
                     Layout(dp=2, framework="fsdp2", zero=3))
