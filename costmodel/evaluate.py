"""Numbers from the cost tree: exact integers by substitution, vectorised sweeps by lambdify.

exact() replaces every symbol by a Python integer, so counts stay exact at any size (no float ever
touches them). Sweep lambdifies a set of expressions once (cse=True, numpy) and is then called by
symbol name over whole arrays, so a grid of a million (n, b) points is one call.
"""

from __future__ import annotations

from typing import Any, Mapping

import sympy as sp

from . import symbols as S
from .config import ModelConfig, Workload
from .tree import CostModel, model_values, workload_values


def values(cfg: ModelConfig, workload: Workload) -> dict[sp.Symbol, int]:
    """Every symbol's value for a model and workload."""
    return {**model_values(cfg), **workload_values(cfg, workload)}


def _integers(subs: Mapping[sp.Symbol, int]) -> Mapping[sp.Symbol, sp.Integer]:
    if all(isinstance(v, sp.Integer) for v in subs.values()):
        return subs
    return {k: sp.Integer(v) for k, v in subs.items()}


def exact(expr: sp.Expr, subs: Mapping[sp.Symbol, int]) -> int:
    """The expression's value as a Python int; it must be an integer once substituted."""
    value = sp.sympify(expr).xreplace(_integers(subs))
    if not value.is_Integer:
        value = sp.nsimplify(value)
        if not value.is_Integer:
            raise ValueError(f"expression did not evaluate to an integer: {value}")
    return int(value)


def exact_rational(expr: sp.Expr, subs: Mapping[sp.Symbol, int]) -> sp.Rational:
    """The expression's exact value (a rational, for ratios such as the crossover length)."""
    return sp.Rational(sp.sympify(expr).xreplace(_integers(subs)))


_LAMBDIFIED: dict[tuple, object] = {}  # this process's functions, by their expressions


def _lambdified(expressions: tuple) -> object:
    """One numpy function of the workload symbols for these expressions, built once a process
    (printing and common-subexpression elimination are most of a sweep's cost; equal trees, as a
    model's roofline and kernel runs build, share one)."""
    if expressions not in _LAMBDIFIED:
        _LAMBDIFIED[expressions] = sp.lambdify(S.WORKLOAD_SYMBOLS, list(expressions), modules="numpy", cse=True)
    return _LAMBDIFIED[expressions]


class Sweep:
    """Named expressions of one model, lambdified once over the workload symbols.

    Example: Sweep(model, cfg, {"forward": model.total("flops_matmul")})(n=ns, b=bs)["forward"].
    Model dimensions are substituted first; the free symbols left are b, n, s, T, e.
    """

    def __init__(self, model: CostModel, expressions: Mapping[str, sp.Expr]):
        import numpy  # noqa: F401  (lambdify's backend; imported here, not by `estimate`)

        fixed = {k: sp.Integer(v) for k, v in model_values(model.cfg).items()}
        self.names = tuple(expressions)
        self.arguments = S.WORKLOAD_SYMBOLS
        reduced = tuple(sp.sympify(expressions[name]).xreplace(fixed) for name in self.names)
        self._function = _lambdified(reduced)

    def __call__(self, *, n, b=1, s=None, T=0, c=None, e=2) -> dict[str, "np.ndarray"]:
        """Evaluate on arrays (broadcast together); s and c default to n."""
        import numpy as np

        s = n if s is None else s
        c = n if c is None else c
        arrays = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (b, n, s, T, c, e)))
        results = self._function(*arrays)
        shape = arrays[0].shape
        return {name: _read_only(value, shape) for name, value in zip(self.names, results)}


def _read_only(value: Any, shape: tuple) -> "np.ndarray":
    """One result as a read-only float64 array of the sweep's shape: a view of it where it has that shape
    already (np.broadcast_to's own result, at a tenth of its cost: a sweep of a model's leaves returns
    thousands a call), else broadcast."""
    import numpy as np

    array = np.asarray(value, dtype=np.float64)
    if array.shape != shape:
        return np.broadcast_to(array, shape)
    view = array.view()
    view.flags.writeable = False
    return view
