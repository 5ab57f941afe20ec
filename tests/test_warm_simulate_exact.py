"""The warm `simulate`'s shortcuts (wt30_speed, session 30) give the figures the slow paths gave, exactly:
exact_eval.exact_value against sympy's substitution, the MoE rerun's expert bytes printed as a product of
factors (no quotient over E^T), and a simulate repeated in one process, with other workloads between,
against its first answer. benchmarks/snapshot_outputs.py --simulate-only compares fourteen workloads'
JSON byte for byte between two trees; benchmarks/bench_simulate_warm.py times them."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp

from costmodel import compiled, exact_eval
from costmodel import symbols as S
from costmodel.blocks.experts import experts_touched
from tests.cli_run import run_main

# DeepSeek-V3's routing (E 256, k 8) and its hidden size, the exponent held at 40 E = 10,240 tokens
EXPERTS = {S.E: 256, S.k: 8, S.d: 7168, S.b: 32}
BYTES = S.L_dec * S.e * (S.d * experts_touched(S.b * S.n) + S.k * S.n)


@pytest.mark.parametrize("n", [1, 7, 319, 320, 321, 1025])
def test_the_experts_touched_bytes_equal_sympys_below_and_beyond_the_cap(n):
    subs = {S.L_dec: 58, S.e: 2, S.n: n, **EXPERTS}
    value = exact_eval.exact_value(BYTES, subs)
    assert type(value) is Fraction  # (1 - 1/32)^T: never an integer
    assert value == sp.Rational(BYTES.xreplace({k: sp.Integer(v) for k, v in subs.items()}))
    assert float(value) == float(BYTES.xreplace({k: sp.Integer(v) for k, v in subs.items()}))


def test_the_power_of_a_token_count_is_a_power_of_a_fraction_not_a_quotient_over_e_to_the_t():
    """One quotient over E^T reduced two numbers of T log2(E) bits (81,920 each at T = 10,240, E = 256)
    by their gcd at every evaluation: a third of a warm simulate of DeepSeek-V3. The product of the
    factors raises (E - k)/E, reduced once, to T."""
    code = compiled.to_python(BYTES)
    assert "E ** min" not in code and "_div((-1 * k), E)) ** min(" in code


def test_exact_value_takes_rationals_and_says_none_where_it_cannot():
    window = sp.Min(S.c, S.w) * S.h_kv * S.d_h + sp.Piecewise((S.c, S.c > S.w), (0, True)) / 3
    subs = {S.c: sp.Integer(5000), S.w: sp.Integer(4096), S.h_kv: sp.Integer(8), S.d_h: sp.Rational(128, 3)}
    assert exact_eval.exact_value(window, subs) == sp.Rational(window.xreplace(subs)) == Fraction(4096 * 8 * 128 + 5000, 3)
    assert exact_eval.exact_value(S.c * S.w, {S.c: 2}) is None  # w not given: sympy's substitution says what it says
    assert exact_eval.exact_value(S.c * S.w, {S.c: 2, S.w: sp.Float(1.5)}) is None  # not a rational
    assert exact_eval.exact_value(sp.sqrt(S.c), {S.c: 4}) is None  # no rule for a fractional power
    assert exact_eval.exact_value(S.c ** S.w, {S.c: 2, S.w: sp.Rational(1, 2)}) is None  # nor at run time
    assert exact_eval.exact_value(S.c ** S.w, {S.c: 2, S.w: -3}) == Fraction(1, 8)  # (Python's 2 ** -3: a float)
    assert exact_eval.exact_value(sp.Piecewise((S.c, S.c > S.w)), {S.c: 1, S.w: 2}) is None  # undefined
    assert exact_eval.exact_value(sp.floor(S.c / 3) + sp.Mod(S.c, 3), {S.c: 10}) == 4


def test_a_warm_simulate_answers_as_the_first_call_did(capsys):
    """Every shared piece (trees, sweeps, compiled codes) is keyed by all it depends on: the same command
    after others on the same model (another batch, prompt, hardware, dtype, time model) prints the
    first call's JSON byte for byte."""
    args = ["simulate", "--model", "qwen3-30b-a3b", "--batch", "32", "--prompt", "1024", "--gen", "256", "--json"]
    code, first, _ = run_main(args, capsys)
    assert code == 0
    for other in (["--batch", "8"], ["--prompt", "300"], ["--hardware", "h200"], ["--dtype", "fp32"],
                  ["--time-model", "roofline"]):
        changed = list(args)
        for flag, value in zip(other[::2], other[1::2]):
            if flag in changed:
                changed[changed.index(flag) + 1] = value
            else:
                changed[-1:-1] = [flag, value]
        code, out, _ = run_main(changed, capsys)
        assert code == 0 and out != first
    code, again, _ = run_main(args, capsys)
    assert code == 0 and again == first
    assert json.loads(first)["decode"]["decode_steps"] == 255
