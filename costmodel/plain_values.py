"""The Python API's values as JSON and Python hold them: plain() turns a notebook's numpy scalars into the
Python numbers they stand for, finite() makes a result JSON's own (no infinity). No imports of the project:
spec's dataclass checks (spec.spell_fields) and the API's doors (plain.plain_arguments) both use them."""

from __future__ import annotations

from typing import Any


def plain(value: Any) -> Any:
    """value with every numpy scalar (np.int64, np.float32, np.bool_) turned into Python's own
    number, inside lists, tuples and dicts too; anything else (an array, a string) as it is."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return value.item()
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(plain(item) for item in value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def finite(value: Any, nan: bool = False) -> Any:
    """JSON has no infinity: an unbounded figure (a crossover that never comes) becomes null, and
    with nan=True so does a NaN (a percentile of no requests)."""
    if isinstance(value, float) and (value in (float("inf"), float("-inf")) or nan and value != value):
        return None
    if isinstance(value, dict):
        return {k: finite(v, nan) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v, nan) for v in value]
    return value
