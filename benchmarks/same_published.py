"""Whether two dumps of `python cli.py published --json` hold the same figures, bit for bit.

A change that only makes `published` faster must leave every figure it prints as it was: dump the table
on the commit before the change and after it, then compare. Every number is compared exactly (a float by
its bits, float.hex: 0.1 + 0.2 differs from 0.3 here; NaN equals NaN), every string and null as it is,
every list's length and every object's keys; each difference is printed with its path, and the exit
status is 1 where any is found (2 for a file that cannot be read).

    python cli.py published --json > before.json     # on the base commit
    python cli.py published --json > after.json      # on the change
    python benchmarks/same_published.py before.json after.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Iterator


def differences(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Each place where b differs from a: its path and both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in b or key not in a:
                yield f"{path}/{key}: only in {'the first' if key in a else 'the second'}"
            else:
                yield from differences(a[key], b[key], f"{path}/{key}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path}: {len(a)} items, then {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, f"{path}[{i}]")
    elif type(a) is not type(b):
        yield f"{path}: {a!r} ({type(a).__name__}), then {b!r} ({type(b).__name__})"
    elif isinstance(a, float):
        if not (a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))):
            yield f"{path}: {a!r}, then {b!r}"
    elif a != b:
        yield f"{path}: {a!r}, then {b!r}"


def count_numbers(value: Any) -> int:
    """How many numbers the dump holds (what the comparison covered)."""
    if isinstance(value, dict):
        return sum(count_numbers(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_numbers(v) for v in value)
    return int(isinstance(value, (int, float)) and not isinstance(value, bool))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python benchmarks/same_published.py BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    dumps = []
    for name in argv:
        try:
            dumps.append(json.loads(Path(name).read_text()))
        except (OSError, ValueError) as error:
            print(f"cannot read {name} as JSON: {error}", file=sys.stderr)
            return 2
    found = list(differences(*dumps))
    for line in found[:50]:
        print(line)
    if found:
        print(f"{len(found)} differences" + (" (the first 50 shown)" if len(found) > 50 else ""))
        return 1
    print(f"identical: {count_numbers(dumps[0]):,} numbers, every one bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
