"""The experts that T tokens touch (blocks/experts.py experts_touched): the expectation under uniform
random top-k routing, E (1 - (1 - k/E)^T), which sets the routed experts' weight bytes and the
grouped GEMM's expert count. Exact at one token (k experts), all E at many, and the formula itself
checked against simulated routing."""

import math

import numpy as np
import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.blocks import Experts
from costmodel.blocks.experts import experts_touched

# Odd sizes no real model has: hidden 37, expert width 11, 13 experts, top-3, 2-byte weights.
ODD = {S.d: 37, S.d_x: 11, S.E: 13, S.k: 3, S.e: 2}


def test_one_token_reads_exactly_its_k_experts():
    """At T = 1 the count is k before any number is substituted (Min(1, 40 E) is 1 for E >= 1, and
    E (1 - (1 - k/E)) is k), so a batch-1 decode step reads k experts' weights exactly:
    e (k x 3 d d_x + k (2 d + 3 d_x)) = 2 (3 x 1,221 + 3 x 107) = 7,968 bytes."""
    assert experts_touched(sp.Integer(1)) == S.k
    cost = Experts(S.b * S.n).cost()
    at_one = {S.b: 1, S.n: 1}
    assert cost.matrix_read_share.xreplace(at_one) == S.k / S.E
    assert sp.expand(cost.bytes_matmul.xreplace(at_one)
                     - S.e * (S.k * 3 * S.d * S.d_x + S.k * (2 * S.d + 3 * S.d_x))) == 0
    assert cost.bytes_matmul.xreplace({**at_one, **ODD}) == 2 * (3 * 3 * 37 * 11 + 3 * (2 * 37 + 3 * 11)) == 7968


def test_two_tokens_touch_fewer_than_their_slots():
    """Two tokens' top-3 of 13: 13 (1 - (10/13)^2) = 13 x 69/169 = 69/13 = 5.31 experts, not the 6
    slots (on average they share 6 - 69/13 = 9/13 of an expert)."""
    assert experts_touched(sp.Integer(2)).xreplace(ODD) == sp.Rational(69, 13)


def test_many_tokens_read_every_expert():
    """From 40 E tokens the exponent stops (the missed share (1 - k/E)^T <= e^-40 < 2^-53): every
    expert's weights, in double precision, and a training step's millions of tokens evaluate at
    once, exactly (a power of 520, not of 4 million)."""
    cost = Experts(S.b * S.n).cost()
    for tokens in (40 * 13, 4096 * 1024):
        at = {**ODD, S.b: tokens, S.n: 1}
        assert float(experts_touched(sp.Integer(tokens)).xreplace(ODD)) == 13.0
        assert float(cost.matrix_read_share.xreplace(at)) == 1.0
    numeric = sp.lambdify([S.E, S.k, S.b], experts_touched(S.b))
    assert numeric(256, 8, 10**12) == 256.0 and numeric(256, 8, 1) == 8.0


@pytest.mark.parametrize("experts, k, tokens, expected", [
    (256, 8, 25, 140.2468),  # DeepSeek-V3 at batch 25: the worst case read 200
    (128, 8, 8, 51.6199),  # Qwen3-30B-A3B at batch 8: 64
    (8, 2, 4, 5.46875),  # Mixtral at batch 4: 8 (exactly 8 (1 - (3/4)^4) = 175/32)
])
def test_simulated_uniform_routing_touches_the_expected_count(experts, k, tokens, expected):
    """Each of T tokens picks k distinct experts uniformly at random (the k smallest of E random
    keys), 4,000 trials with a fixed seed: the mean distinct count is within 1% of the formula (its
    standard error is about 0.1 here, 1% is 0.05-1.4)."""
    formula = float(experts_touched(sp.Integer(tokens)).xreplace({S.E: experts, S.k: k}))
    assert formula == pytest.approx(expected, abs=1e-4)
    rng = np.random.default_rng(0)
    counts = []
    for _ in range(4):  # chunks of 1,000 trials
        keys = rng.random((1000, tokens, experts))
        chosen = np.argpartition(keys, k, axis=-1)[..., :k].reshape(1000, tokens * k)
        touched = np.zeros((1000, experts), dtype=bool)
        np.put_along_axis(touched, chosen, True, axis=1)
        counts.append(touched.sum(axis=1))
    mean = float(np.concatenate(counts).mean())
    assert mean == pytest.approx(formula, rel=0.01)
    assert mean < min(experts, tokens * k) or math.isclose(formula, experts)
