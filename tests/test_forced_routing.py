"""validate/forced_routing.py: the most loaded EP rank under Megatron-Core's forced load balancing
(RandomSTE's normal logits, a uniform top-k), a size check beside the model's balanced experts
(validate/FINDINGS.md, "Expert load imbalance", wt33_moe)."""

import math
from fractions import Fraction
from itertools import combinations

from validate.forced_routing import expected_max_normal, load_factor, monte_carlo, slot_moments


def _enumerated(subsets: list[tuple[int, ...]], rank: set[int]) -> tuple[Fraction, Fraction]:
    counts = [len(rank.intersection(s)) for s in subsets]
    mean = Fraction(sum(counts), len(counts))
    return mean, Fraction(sum(c * c for c in counts), len(counts)) - mean ** 2


def test_slot_moments_match_enumeration():
    """E = 8, top 2, EP 4 (rank 0 holds experts 0, 1): all 28 pairs, 9/28 the hypergeometric variance
    2 (1/4)(3/4)(6/7); grouped, 4 groups of 2 (one a rank), 2 chosen, then 2 of their 4 experts: all
    6 x 6 draws, variance 2/3 - 1/4 = 5/12."""
    assert slot_moments(8, 2, 4) == _enumerated(list(combinations(range(8), 2)), {0, 1}) == (Fraction(1, 2),
                                                                                            Fraction(9, 28))
    draws = [pair for groups in combinations(range(4), 2)
             for pair in combinations([e for g in groups for e in (2 * g, 2 * g + 1)], 2)]
    assert slot_moments(8, 2, 4, groups=4, chosen=2) == _enumerated(draws, {0, 1}) == (Fraction(1, 2), Fraction(5, 12))


def test_expected_max_of_normals():
    """E[max] of 2 and 3 standard normals: 1/sqrt(pi) and 3/(2 sqrt(pi))."""
    assert abs(expected_max_normal(2) - 1 / math.sqrt(math.pi)) < 1e-12
    assert abs(expected_max_normal(3) - 1.5 / math.sqrt(math.pi)) < 1e-12


def test_published_layouts_sit_one_percent_above_balance():
    """Qwen3 30B-A3B at EP 16, MBS 1, 4,096 tokens (the H100 rows): 65,536 tokens an EP group, sd
    sqrt(65,536 x 0.4429) = 170.4 slots over a mean 32,768, x e(16) = 1.766: 1.0092; DeepSeek-V3 at
    EP 64 (groups 8, 4 chosen) 1.0132."""
    assert abs(load_factor(128, 8, 16, 4096) - 1.009182015) < 1e-9
    assert abs(load_factor(256, 8, 64, 4096, groups=8, chosen=4) - 1.013206079) < 1e-9


def test_normal_approximation_against_drawn_routings():
    """Mixtral's 8 experts, top 2, EP 8 at 4,096 tokens a rank: drawn 1.0147 (400 routings, two seeds
    agree to 2e-5), the normal approximation 1.0136 (its skew left out); a grouped tiny case too."""
    assert abs(monte_carlo(8, 2, 8, 4096, trials=200, seed=1) - load_factor(8, 2, 8, 4096)) < 0.002
    assert abs(monte_carlo(8, 2, 4, 1024, groups=4, chosen=2, trials=200) - load_factor(8, 2, 4, 1024, 4, 2)) < 0.002
