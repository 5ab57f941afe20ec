"""How far the most loaded expert-parallel rank sits above the balanced share under Megatron-Core's
forced load balancing (issue 18, wt33_moe): a size check, not a term of the model.

Megatron-Bridge's MoE benchmark pages ("we force-balance the token distribution among experts") and
the other forced-routing sources of costmodel/published_runs.json run `moe_router_force_load_balancing`:
TopKRouter.forward replaces the router's logits by `apply_random_logits` (megatron/core/transformer/moe/
router.py line 861, NVIDIA/Megatron-LM at d98e8a64dd), RandomSTE, `logits.clone().normal_()` under the
expert-parallel RNG tracker (moe_utils.py lines 1258-1278: a different seed on each rank). Each token's top k of
E i.i.d. normal logits is then a uniform k-subset of the experts (with group-limited routing, G groups of
E / G: a uniform t-subset of the groups, then, as layout/experts.py's flex_copies takes it, a uniform
k-subset of their t E / G experts). The routing is balanced only in expectation: per layer and micro-batch
the rank that holds the most slots sets the layer's grouped GEMMs and all-to-all (every rank waits for
the combine).

Per token, X_r = the token's slots on rank r (the E / ep consecutive experts r E / ep ...):
ungrouped, hypergeometric, mean k K / E, variance k (K/E)(1 - K/E)(E - k)/(E - 1) with K = E / ep;
grouped (K <= E / G, the rank's experts inside one group), mixed over the group being chosen (t / G):
E[X^2] = (t / G)(v + m^2) with m, v the hypergeometric moments over the pool P = t E / G.
A rank's count over the N = ep x tokens-per-rank tokens of the EP group is a sum of N i.i.d. X: mean
N E[X], variance N Var(X); the ep counts sum to N k, so they are equicorrelated (-1 / (ep - 1)), and to
the normal approximation E[max_r] = mean + sd x e(ep), e(n) = E[max of n i.i.d. N(0, 1)] (the
centred equicorrelated vector has the law of sd sqrt(n / (n - 1)) (Z - Zbar), whose max has the mean
sd e(n), as E[max Z_i - Zbar] = e(n) and Var(Z_i - Zbar) = (n - 1)/n). The factor is E[max] / mean.
`monte_carlo` draws the routing itself (normal logits, top-k; groups by their top k/t sum, as
Megatron-Core's group_limited_topk, moe_utils.py line 673) for a check.

    python -m validate.forced_routing     # the published layouts' factors (module table ROWS)
"""

from __future__ import annotations

import math
from fractions import Fraction


def slot_moments(n_experts: int, top_k: int, ep: int, groups: int = 1, chosen: int = 1) -> tuple[Fraction, Fraction]:
    """(E[X], Var(X)) of one token's slots on one EP rank, exactly (module docstring)."""
    per_rank, per_group = n_experts // ep, n_experts // groups
    if n_experts % ep or n_experts % groups or (groups > 1 and per_group % per_rank):
        raise ValueError("the ranks' experts must tile the groups")
    pool = chosen * per_group
    share = Fraction(per_rank, pool)
    mean = top_k * share
    var = top_k * share * (1 - share) * Fraction(pool - top_k, pool - 1) if pool > 1 else Fraction(0)
    picked = Fraction(chosen, groups)
    first, second = picked * mean, picked * (var + mean ** 2)
    return first, second - first ** 2


def expected_max_normal(n: int, points: int = 40001) -> float:
    """E[max of n i.i.d. standard normals]: the integral of x n phi(x) Phi(x)^(n-1) over [-12, 12] by
    Simpson's rule (points odd)."""
    lo, hi = -12.0, 12.0
    h = (hi - lo) / (points - 1)
    total = 0.0
    for i in range(points):
        x = lo + i * h
        f = x * n * math.exp(-x * x / 2) / math.sqrt(2 * math.pi) * (0.5 * (1 + math.erf(x / math.sqrt(2)))) ** (n - 1)
        total += f * (1 if i in (0, points - 1) else 4 if i % 2 else 2)
    return total * h / 3


def load_factor(n_experts: int, top_k: int, ep: int, tokens_per_rank: int, groups: int = 1, chosen: int = 1) -> float:
    """The most loaded rank's expected slots over the balanced share, normal approximation."""
    mean, var = slot_moments(n_experts, top_k, ep, groups, chosen)
    tokens = ep * tokens_per_rank
    return 1 + math.sqrt(tokens * float(var)) * expected_max_normal(ep) / (tokens * float(mean))


def monte_carlo(n_experts: int, top_k: int, ep: int, tokens_per_rank: int, groups: int = 1, chosen: int = 1,
                trials: int = 40, seed: int = 0) -> float:
    """The same factor drawn: normal logits, top-k (group-limited as Megatron-Core's group_limited_topk)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tokens, per_group = ep * tokens_per_rank, n_experts // groups
    out = []
    for _ in range(trials):
        logits = rng.standard_normal((tokens, n_experts))
        if groups > 1:
            best = np.sort(logits.reshape(tokens, groups, per_group), axis=2)[:, :, -(top_k // chosen):].sum(2)
            keep = np.argsort(-best, axis=1)[:, :chosen]
            mask = np.full((tokens, groups), -np.inf)
            np.put_along_axis(mask, keep, 0.0, axis=1)
            logits = logits + np.repeat(mask, per_group, axis=1)
        top = np.argpartition(-logits, top_k, axis=1)[:, :top_k]
        counts = np.bincount((top // (n_experts // ep)).ravel(), minlength=ep)
        out.append(counts.max() / (tokens * top_k / ep))
    return float(np.mean(out))


#: name, E, k, ep, tokens a rank routes a micro-batch (MBS x sequence / (tp under parallel folding)),
#: groups, groups chosen: the forced-routing published layouts' families
ROWS = (
    ("Qwen3 30B-A3B, EP 16, MBS 1, 4,096", 128, 8, 16, 4096, 1, 1),
    ("Qwen3 30B-A3B, EP 8, MBS 4 (GB200)", 128, 8, 8, 16384, 1, 1),
    ("Qwen3 235B-A22B, EP 32, TP 2 folded, MBS 1", 128, 8, 32, 2048, 1, 1),
    ("GPT-OSS 120B, EP 8, MBS 1 (H100)", 128, 4, 8, 4096, 1, 1),
    ("GPT-OSS 120B, EP 64, MBS 4 (GB200)", 128, 4, 64, 16384, 1, 1),
    ("DeepSeek-V3, EP 64, MBS 1", 256, 8, 64, 4096, 8, 4),
    ("DeepSeek-V3, EP 32, MBS 1", 256, 8, 32, 4096, 8, 4),
    ("Mixtral 8x7B, EP 8, MBS 1", 8, 2, 8, 4096, 1, 1),
)


def main() -> None:
    for name, experts, top_k, ep, tokens, groups, chosen in ROWS:
        line = f"{name:44s} {load_factor(experts, top_k, ep, tokens, groups, chosen):.4f}"
        if ep * tokens * experts <= 2 ** 25:
            line += f"  (drawn: {monte_carlo(experts, top_k, ep, tokens, groups, chosen):.4f})"
        print(line)


if __name__ == "__main__":
    main()
