"""Exact values of the cost tree's sympy expressions at given numbers, without sympy's arithmetic.

A caller that substitutes numbers into one expression many times (the kernel model's shapes, at every
leaf and context of a `simulate`; the longest context's bisection) paid mostly for sympy building its
own numbers: a substituted Min or Max alone costs about a millisecond. Here each expression is turned
once (cached by the expression) into nested Python closures over ints and Fractions, the operators'
exact meaning: the same rational value sympy's substitution gives. Nothing is printed or executed as
source. exact_value returns None where it cannot say (a node with no rule here, a symbol not given, a
value or a result that is not rational): the caller substitutes with sympy then.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction
from functools import lru_cache, reduce
from typing import Any, Callable

Closure = Callable[[dict], Any]


class _NoRule(Exception):
    """A node or a value this evaluator does not handle exactly."""


def exact_value(expr: Any, subs: dict) -> int | Fraction | None:
    """The expression's exact value at subs (symbols to ints, sympy Integers or Rationals), an int
    or a Fraction; None where it cannot say (the module's docstring)."""
    closure = _closure(expr)
    if closure is None:
        return None
    try:
        value = closure(subs)
    except (_NoRule, ZeroDivisionError):
        return None
    if type(value) is Fraction and value.denominator == 1:
        return value.numerator
    return value if type(value) in (int, Fraction) else None


def float_value(expr: Any, subs: dict) -> float:
    """The expression's value at subs as a float, rounded once: exact_value, else sympy's substitution
    (the kernel model's shapes and counts: kernel_time.leaves_time, tree_kernels.leaf_kernels)."""
    from sympy import sympify
    value = exact_value(expr := sympify(expr), subs)
    return float(expr.xreplace(subs) if value is None else value)


@lru_cache(maxsize=8192)
def _closure(expr: Any) -> Closure | None:
    try:
        return _build(expr)
    except _NoRule:
        return None


def _number(value: Any) -> int | Fraction:
    """A substituted value as exact Python."""
    if type(value) is int:
        return value
    if getattr(value, "is_Integer", False):
        return int(value)
    if getattr(value, "is_Rational", False):
        return Fraction(int(value.p), int(value.q))
    raise _NoRule(value)


def _power(base: Any, exponent: Any) -> Any:
    if type(exponent) is not int:
        raise _NoRule(exponent)  # a fractional power: irrational in general
    return base ** exponent if exponent >= 0 else Fraction(1) / Fraction(base) ** -exponent


def _build(expr: Any) -> Closure:
    import sympy as sp

    if isinstance(expr, (bool, sp.logic.boolalg.BooleanAtom)):
        truth = bool(expr)
        return lambda subs: truth
    if expr.is_Integer:
        constant: Any = int(expr)
        return lambda subs: constant
    if expr.is_Rational:
        constant = Fraction(int(expr.p), int(expr.q))
        return lambda subs: constant
    if expr.is_Symbol:
        def symbol(subs: dict) -> Any:
            if expr not in subs:
                raise _NoRule(expr)
            return _number(subs[expr])
        return symbol
    parts = [_build(arg) for arg in expr.args] if not isinstance(expr, sp.Piecewise) else None
    if expr.is_Add:
        return lambda subs: sum(part(subs) for part in parts)
    if expr.is_Mul:
        return lambda subs: reduce(operator.mul, (part(subs) for part in parts))
    if expr.is_Pow:
        if expr.exp.is_number and not expr.exp.is_Integer:
            raise _NoRule(expr)
        base, exponent = parts
        return lambda subs: _power(base(subs), exponent(subs))
    if isinstance(expr, sp.Piecewise):
        pieces = [(_build(value), _build(condition)) for value, condition in expr.args]

        def piecewise(subs: dict) -> Any:
            for value, condition in pieces:
                if condition(subs):
                    return value(subs)
            raise _NoRule(expr)  # no condition holds: sympy's value is undefined
        return piecewise
    simple = {sp.floor: math.floor, sp.ceiling: math.ceil, sp.Mod: operator.mod, sp.Min: min, sp.Max: max,
              sp.Eq: operator.eq, sp.Ne: operator.ne, sp.StrictGreaterThan: operator.gt,
              sp.GreaterThan: operator.ge, sp.StrictLessThan: operator.lt, sp.LessThan: operator.le,
              sp.And: lambda *a: all(a), sp.Or: lambda *a: any(a), sp.Not: operator.not_}
    for kind, function in simple.items():
        if isinstance(expr, kind):
            return lambda subs: function(*(part(subs) for part in parts))
    raise _NoRule(expr)
