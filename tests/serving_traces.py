"""What the serving tests share: requests from (arrival, prompt tokens, output tokens) rows, and a step
time that counts steps (every step one second)."""

from __future__ import annotations

from costmodel.serving.workload import Request

ONE_STEP = lambda query, keys, emitting: 1.0  # noqa: E731  (time counted in steps)


def requests(*rows: tuple[float, int, int]) -> list[Request]:
    return [Request(i, float(a), p, o) for i, (a, p, o) in enumerate(rows)]
