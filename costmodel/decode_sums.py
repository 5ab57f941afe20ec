"""Sums over generation steps in closed form: `simulate --gen 100000000` answers at once.

A decode step's FLOPs and bytes, leaf by leaf, are polynomials in its context c (the prompt plus
the tokens so far), piecewise where a Min caps them (a sliding window caps the keys at w). The
same holds for a step without a KV cache, which reruns the decoder over its prefix, but for an MoE
layer's expert weights: its b c tokens touch E (1 - (1 - k/E)^(b c)) experts (blocks/experts.py
experts_touched), not a polynomial until the exponent stops at 40 E tokens, c = 40 E / b. Those
at most 40 E / b steps (10,240 for DeepSeek-V3 at batch 1) are summed one by one, in float64 over
one numpy array (compiled.numpy_source), whatever the number of steps beyond; every other quantity
keeps its exact closed form there. So the sum over steps c = lo..hi splits at the pieces'
breakpoints, and on each piece a polynomial of degree D sums exactly by Newton's forward
differences and the hockey-stick identity:

    f(a + j) = sum_k (Delta^k f)(a) * C(j, k),   sum_{j=j0..j1} C(j, k) = C(j1+1, k+1) - C(j0, k+1).

The expressions (every leaf's four kernel quantities, its run count, and each breakpoint as a
formula in the dimensions) are compiled once per model structure to exact integer Python
(costmodel/compiled.py); a sum then needs a few exact evaluations per piece, whatever the number
of steps. Roofline seconds sum the same way: each kernel takes max(FLOPs / peak, bytes /
bandwidth), and on a piece the sign of FLOPs / peak - bytes / bandwidth changes only at the real
roots of a polynomial, so each piece splits there too. roofline.stepwise_generation_seconds keeps
the step-by-step path that tests check these sums against, and that roofline.generation_seconds
takes where any other quantity is not a piecewise polynomial (NoClosedForm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from fractions import Fraction
from typing import Any

from . import compiled
from .config import ConfigError, ModelConfig, Workload

KERNEL_QUANTITIES = ("flops_matmul", "bytes_matmul", "flops_other", "bytes_other")
PHASES = ("decode", "rerun")  # a cached decode step; a step that reruns the decoder over its prefix
#: The highest degree in the context that a piece may have (attention over a prefix is quadratic);
#: one more sample checks it, so a formula of higher degree is an error, never a wrong sum.
MAX_DEGREE = 3


class NoClosedForm(ConfigError):
    """A step's cost is not a piecewise polynomial in its context (the caller sums the steps)."""


def _expressions(cfg: ModelConfig, phase: str, attention: str, kv_cache: str, mla: str = "naive"
                 ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Per leaf: its four kernel quantities and its run count, in the context symbol x (c for a
    decode step with n = 1; n = c for a rerun), and the breakpoints where a Min/Max/Piecewise in
    them switches, each solved for x. Constants: the leaves' paths, whether each runs an op, and
    the quantities with a power of x (an MoE rerun's experts, blocks/experts.py experts_touched),
    which are also compiled to floats over arrays of contexts (compiled.numpy_source)."""
    import sympy as sp

    from . import symbols as S
    from .tree import CostModel, generate_logits_to_keep, profile_for

    workload = Workload(attention=attention, mla=mla)
    # an uncached step of HF generate (a rerun) computes the last position's logits only
    profile = profile_for(cfg, workload, dropout=False, kv_cache=kv_cache,
                          logits_to_keep=generate_logits_to_keep(cfg, workload.impl))
    if phase == "decode":
        model = CostModel(cfg, profile, phase="decode")
        leaves, context = model.leaves, {S.n: sp.Integer(1)}
    else:
        model = CostModel(cfg, profile, phase="prefill")
        leaves, context = model.select(stack="decoder"), {S.c: S.n}
    x = S.c if phase == "decode" else S.n
    expressions: dict[str, Any] = {}
    paths, active = [], []
    for leaf in leaves:
        paths.append(leaf.path)
        active.append(bool(leaf.cost.is_active()))
        expressions[f"{leaf.path}|count"] = leaf.count
        for quantity in KERNEL_QUANTITIES:
            expressions[f"{leaf.path}|{quantity}"] = sp.sympify(leaf.total(quantity)).xreplace(context)
    breaks = sorted(_breakpoints(list(expressions.values()), x), key=sp.default_sort_key)
    for i, point in enumerate(breaks):
        expressions[f"break|{i}"] = point
    powered = {name: expression for name, expression in expressions.items()
               if any(x in power.exp.free_symbols for power in sp.sympify(expression).atoms(sp.Pow))}
    return expressions, {"paths": paths, "active": active, "breaks": len(breaks),
                         "variable": str(x), "powered": sorted(powered)}, powered


def _breakpoints(expressions: list[Any], x: Any) -> set[Any]:
    """Where a Min, Max or Piecewise condition in the expressions switches, as formulas for x."""
    import sympy as sp

    points: set[Any] = set()

    def solve(difference: Any) -> None:
        poly = sp.Poly(sp.expand(difference), x)
        if poly.degree() > 1:
            raise NoClosedForm(f"a cap that is not linear in the context ({difference}).")
        if poly.degree() == 1:
            slope, offset = poly.all_coeffs()
            points.add(sp.simplify(-offset / slope))

    for expression in expressions:
        for node in sp.preorder_traversal(sp.sympify(expression)):
            if not isinstance(node, sp.Basic) or x not in node.free_symbols:
                continue
            if isinstance(node, (sp.Min, sp.Max)):
                for i, first in enumerate(node.args):
                    for second in node.args[i + 1:]:
                        solve(first - second)
            elif isinstance(node, sp.Piecewise):
                for _, condition in node.args:
                    if isinstance(condition, sp.core.relational.Relational):
                        solve(condition.lhs - condition.rhs)
                    elif condition is not sp.true:
                        raise NoClosedForm(f"a condition on the context ({condition}).")
            elif isinstance(node, (sp.floor, sp.ceiling)):
                raise NoClosedForm(f"a rounding of the context ({node}).")
    return points


@dataclass(frozen=True)
class Rates:
    """The roofline's rates: the matmul peak, the vector peak and the bandwidth (each times its
    efficiency), and the fixed overhead per block run."""

    matmul_flops_per_s: float
    vector_flops_per_s: float
    bytes_per_s: float
    overhead_s: float


class StepSums:
    """Exact sums over contexts lo..hi of one phase's per-leaf quantities, and its roofline seconds."""

    def __init__(self, cfg: ModelConfig, phase: str, attention: str = "eager",
                 kv_cache: str = "dynamic", mla: str = "naive"):
        if phase not in PHASES:
            raise ConfigError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}.")
        key = {"model": cfg.structure(), "layers": cfg.n_layers, "phase": phase,
               "attention": attention, "kv_cache": kv_cache, "mla": mla}
        module = compiled.cached_module("stepsums", key, lambda: _expressions(cfg, phase, attention, kv_cache, mla))
        self.evaluate, self.evaluate_arrays, constants = module.evaluate, module.evaluate_arrays, module.CONSTANTS
        self.paths: list[str] = constants["paths"]
        #: quantities with a power of the context (_expressions): not polynomial below the cap
        self.powered: frozenset[str] = frozenset(constants["powered"])
        self.active: list[bool] = constants["active"]
        self.n_breaks: int = constants["breaks"]
        self.variable: str = constants["variable"]
        self.dimensions = cfg.dimensions()

    def at(self, context: int, batch: int, source_len: int, bytes_per_element: int) -> dict[str, Any]:
        """Every compiled quantity of one step at this context, exactly."""
        values = {**self.dimensions, "b": batch, "s": source_len, "T": 0, "e": bytes_per_element,
                  "n": 1, "c": context}
        values[self.variable] = context
        return self.evaluate(values)

    def pieces(self, lo: int, hi: int, **workload: int) -> list[tuple[int, int]]:
        """lo..hi cut where a cap switches: on each piece every quantity is one polynomial."""
        first = self.at(lo, **workload)
        cuts = sorted({math.floor(first[f"break|{i}"]) for i in range(self.n_breaks)})
        bounds, start = [], lo
        for cut in cuts:
            if start <= cut < hi:
                bounds.append((start, cut))
                start = cut + 1
        return bounds + [(start, hi)]

    def arrays(self, start: int, end: int, names: list[str], batch: int, source_len: int,
               bytes_per_element: int) -> dict[str, Any]:
        """The named quantities at every context start..end in float64, one vectorised call
        (compiled.numpy_source): for the powered ones, which are not polynomial there."""
        import numpy as np

        if not names:
            return {}
        contexts = np.arange(start, end + 1, dtype=np.float64)
        values = {**self.dimensions, "b": batch, "s": source_len, "T": 0, "e": bytes_per_element,
                  "n": 1, "c": contexts}
        values[self.variable] = contexts
        out = self.evaluate_arrays(values)
        return {name: np.broadcast_to(out[name], contexts.shape) for name in names}

    def newton(self, start: int, end: int, **workload: int) -> tuple[dict[str, list[Any]], list[str]]:
        """Forward differences Delta^0..Delta^D at start for every quantity that is a polynomial
        on the piece (D: MAX_DEGREE, or the piece's length minus one when it is shorter: then they
        interpolate it exactly), and the names of those that are not: only a powered quantity may
        be (the experts that a rerun's prefix of b c tokens touches, E (1 - (1 - k/E)^(b c)),
        blocks/experts.py experts_touched, until b c reaches 40 E tokens, where the exponent stops;
        so at most 40 E / b steps). Any other raises NoClosedForm: the caller sums every step."""
        degree = min(MAX_DEGREE, end - start)
        samples = [self.at(start + j, **workload) for j in range(degree + 1)]
        check = self.at(start + degree + 1, **workload) if end - start > degree else None
        differences: dict[str, list[Any]] = {}
        stepwise: list[str] = []
        for name in samples[0]:
            row = [s[name] for s in samples] + ([check[name]] if check is not None else [])
            column = []
            while row:
                column.append(row[0])
                row = [b - a for a, b in zip(row, row[1:])]
            if check is not None and column[-1] != 0:
                if name not in self.powered:
                    raise NoClosedForm(f"{name} is not a polynomial of degree <= {MAX_DEGREE} in the context.")
                stepwise.append(name)
                continue
            differences[name] = column[:degree + 1]
        return differences, stepwise

    def totals(self, lo: int, hi: int, **workload: int) -> dict[str, Any]:
        """Sum over contexts lo..hi of every leaf quantity: exact ints or Fractions, but a float
        for a powered quantity summed over a piece where it is not a polynomial (newton)."""
        out: dict[str, Any] = {}
        for start, end in self.pieces(lo, hi, **workload):
            differences, stepwise = self.newton(start, end, **workload)
            for name, column in differences.items():
                if not name.startswith("break|"):
                    out[name] = out.get(name, 0) + _sum_newton(column, 0, end - start)
            for name, values in self.arrays(start, end, stepwise, **workload).items():
                out[name] = out.get(name, 0) + float(values.sum())
        return {k: (v.numerator if isinstance(v, Fraction) and v.denominator == 1 else v)
                for k, v in out.items()}

    def seconds(self, lo: int, hi: int, rates: Rates, **workload: int) -> float:
        """Roofline seconds of the steps at contexts lo..hi: per leaf and kernel,
        max(FLOPs / peak, bytes / bandwidth), plus the overhead of the leaves that run an op.
        A kernel with a quantity that is not polynomial on a piece takes the max step by step
        there, over float arrays (arrays; the polynomial one from its Newton form)."""
        import numpy as np

        total = 0.0
        for start, end in self.pieces(lo, hi, **workload):
            differences, stepwise = self.newton(start, end, **workload)
            arrays = self.arrays(start, end, stepwise, **workload)
            for path, active in zip(self.paths, self.active):
                for kind, peak in (("matmul", rates.matmul_flops_per_s),
                                   ("other", rates.vector_flops_per_s)):
                    flops, moved = f"{path}|flops_{kind}", f"{path}|bytes_{kind}"
                    if flops in arrays or moved in arrays:
                        f, m = (arrays[q] if q in arrays else _newton_values(differences[q], end - start)
                                for q in (flops, moved))
                        total += float(np.maximum(f / peak, m / rates.bytes_per_s).sum())
                    else:
                        total += _sum_max(differences[flops], peak, differences[moved], rates.bytes_per_s,
                                          end - start)
                if active:
                    total += rates.overhead_s * differences[f"{path}|count"][0] * (end - start + 1)
        return total


@lru_cache(maxsize=256)
def step_sums(cfg: ModelConfig, phase: str, attention: str = "eager", kv_cache: str = "dynamic",
              mla: str = "naive") -> StepSums:
    """One StepSums per frozen config and options, shared by the callers that only read it (a StepSums
    holds nothing a sum changes): a table of decode rows built one for each row's generation, its
    compiled module's key (the config's structure) and dimensions again each time."""
    return StepSums(cfg, phase, attention, kv_cache, mla)


def _sum_newton(column: list[Any], j0: int, j1: int) -> Any:
    """sum_{j=j0..j1} f(j) for f(j) = sum_k column[k] * C(j, k)."""
    return sum(delta * (math.comb(j1 + 1, k + 1) - math.comb(j0, k + 1))
               for k, delta in enumerate(column) if delta)


def _newton_values(column: list[Any], last: int) -> Any:
    """f(j) for j = 0..last in float64, f(j) = sum_k column[k] * C(j, k)."""
    import numpy as np

    j = np.arange(last + 1, dtype=np.float64)
    return sum((float(delta) * _binomial(j, k) for k, delta in enumerate(column)), np.zeros_like(j))


def _power_basis(column: list[Any]) -> list[float]:
    """The Newton form's coefficients in powers of j, highest first (for numpy.roots)."""
    out = [0.0] * len(column)
    for k, delta in enumerate(column):
        for i, coefficient in enumerate(_BASIS_FLOATS[k]):
            out[len(column) - 1 - i] += float(delta) * coefficient
    return out


# C(j, k) as polynomials in j: 1, j, (j^2 - j)/2, (j^3 - 3j^2 + 2j)/6; _power_basis's, lowest power first, as
# the floats it multiplies by (float of each Fraction, taken once)
_BASIS_FLOATS = tuple(tuple(float(c) for c in reversed(b)) for b in (
    [1], [1, 0], [Fraction(1, 2), Fraction(-1, 2), 0], [Fraction(1, 6), Fraction(-1, 2), Fraction(1, 3), 0]))


def _sum_max(flops: list[Any], peak: float, moved: list[Any], bandwidth: float, last: int) -> float:
    """sum_{j=0..last} max(flops(j) / peak, moved(j) / bandwidth), the two given in Newton form:
    the piece splits at the real roots of their difference, and each part sums one of them."""
    import numpy as np

    difference = [float(f) / peak - float(m) / bandwidth for f, m in zip(flops, moved)]
    cuts = {0, last + 1}
    if any(difference[1:]):
        for root in np.roots(_power_basis(difference)):
            if abs(root.imag) < 1e-9 and 0 < root.real < last:
                cuts.update({math.floor(root.real), math.floor(root.real) + 1})
    bounds = sorted(cuts)
    total = 0.0
    for j0, j_end in zip(bounds, bounds[1:]):
        j1 = j_end - 1
        if j1 < j0:
            continue
        middle = (j0 + j1) / 2
        compute_bound = sum(d * _binomial(middle, k) for k, d in enumerate(difference)) >= 0
        if compute_bound:
            total += float(_sum_newton(flops, j0, j1)) / peak
        else:
            total += float(_sum_newton(moved, j0, j1)) / bandwidth
    return total


def _binomial(j: float, k: int) -> float:
    """C(j, k) for a real j (the Newton basis evaluated between integers)."""
    out = 1.0
    for i in range(k):
        out *= (j - i) / (i + 1)
    return out
