"""The `sweep` command's side of a sweep: reading the grid's axes, and writing the result.

The grid itself is costmodel.grid (the cost tree's expressions, lambdified once and evaluated in
one vectorised call); this module parses '128:131072:x2' ranges and writes the frame as CSV or
JSON. Values are float64: exact to about 16 significant digits (`estimate --json` gives exact
integers for one point).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from costmodel import grid
from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.grid import MAX_POINTS, QUANTITIES, SweepResult, expressions  # noqa: F401

from costmodel.sizes import LENGTH_FORMS, parse_length

from .output import ReportInputError

MAX_VALUES = 1_000_000  # values of one axis


def parse_values(text: str, option: str, lengths: bool = False) -> list[int]:
    """Integers from 'a,b,c', 'start:stop' (step 1), 'start:stop:+k' or 'start:stop:k' (step k)
    and 'start:stop:xk' (times k), or comma-separated mixtures; sorted, without duplicates.
    lengths: each value and bound may also be a length as costmodel/sizes.py reads one (4k:128k:x2)."""
    values: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ReportInputError(f"{option} {text!r}: an empty item; use e.g. 1,8 or 128:4096:x2.")
        if ":" not in item:
            values.add(_positive(item, option, text, lengths))
            continue
        # a length's step too (4k:64k:+4k, as its bounds); a factor stays a plain number (x2)
        match = re.fullmatch(r"(\d+[kKmM]?):(\d+[kKmM]?)(?::(x(?=\d+$)|\+?)(\d+[kKmM]?))?" if lengths
                             else r"(\d+):(\d+)(?::([x+]?)(\d+))?", item)
        if not match:
            raise ReportInputError(
                f"{option} {text!r}: cannot read {item!r}; use start:stop, start:stop:+step or "
                "start:stop:xfactor (e.g. 128:131072:x2)."
            )
        start, stop = parse_length(match[1]), parse_length(match[2])
        kind, step = match[3] or "+", parse_length(match[4] or "1")
        if start < 1 or stop < start:
            raise ReportInputError(f"{option} {text!r}: a range needs 1 <= start <= stop.")
        if (kind == "x" and step < 2) or step < 1:
            raise ReportInputError(f"{option} {text!r}: the step must be >= 1 and a factor >= 2.")
        if kind == "+" and (stop - start) // step + 1 > MAX_VALUES:
            raise ReportInputError(f"{option} {text!r}: more than {MAX_VALUES:,} values.")
        if kind == "x":
            value = start
            while value <= stop:
                values.add(value)
                value *= step
        else:
            values.update(range(start, stop + 1, step))
    return sorted(values)


def _positive(item: str, option: str, text: str, lengths: bool = False) -> int:
    try:
        value = parse_length(item) if lengths else int(item)
    except ValueError:
        raise ReportInputError(f"{option} {text!r}: {item!r} is not {'a length: ' + LENGTH_FORMS if lengths else 'an integer'}.") from None
    if value < 1:
        raise ReportInputError(f"{option} {text!r}: values must be at least 1, got {value}.")
    return value


def run(cfg: ModelConfig, workload: Workload, seq_lens: list[int], batches: list[int]) -> SweepResult:
    """Every column on the grid (costmodel.grid.run); a grid too large is one error line."""
    try:
        return grid.run(cfg, workload, seq_lens, batches)
    except ConfigError as error:
        raise ReportInputError(str(error)) from None


def plain(value: float) -> int | float:
    """Integral float64 values below 2**53 as ints (exact), others as floats."""
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


CHUNK_ROWS = 1 << 14  # rows formatted at once: about 5 MB of text, whatever the grid


def csv_chunks(result: SweepResult) -> Iterator[bytes]:
    """The sweep's frame (SweepResult.frame(), what costmodel.sweep() returns) as CSV, piece by
    piece: the header, then CHUNK_ROWS rows at a time, each value written as
    output.number_text(plain(value)) would write it (reports.csv_columns)."""
    from .csv_columns import rows_text
    from .output import csv_text as to_csv

    frame = result.frame()
    names = list(frame.columns[3:])
    yield to_csv(list(frame.columns), []).encode("utf-8")
    model = to_csv([result.model], [])[:-1].encode("utf-8")  # quoted as the csv module would
    axes = [frame["seq_len"].to_numpy(), frame["batch"].to_numpy()]
    columns = [frame[name].to_numpy() for name in names]
    for start in range(0, len(frame), CHUNK_ROWS):
        rows = slice(start, start + CHUNK_ROWS)
        yield rows_text(model, [axis[rows] for axis in axes], [column[rows] for column in columns])


def csv_text(result: SweepResult) -> str:
    return b"".join(csv_chunks(result)).decode("utf-8")


def write_csv(result: SweepResult, path: str) -> None:
    """The CSV written as it is formatted, into a file that appears whole or not at all."""
    from .output import atomic_file

    with atomic_file(path) as stream:
        for chunk in csv_chunks(result):
            stream.write(chunk)


def write_npz(result: SweepResult, path: str) -> None:
    """The grid as columns in numpy's .npz (uncompressed): seq_len and batch (int64), every
    quantity (float64, as evaluated), and the model, column names and units as strings.
    `dict(numpy.load(path))` gives them back; pandas.DataFrame of that is the CSV's table."""
    import numpy as np

    from .output import atomic_file

    names = list(result.columns)
    with atomic_file(path) as stream:
        np.savez(stream, model=np.array(result.model), columns=np.array(["seq_len", "batch", *names]),
                 units=np.array(["token", "sequence", *(dict(QUANTITIES)[n] for n in names)]),
                 seq_len=result.seq_lens, batch=result.batches,
                 **{name: result.columns[name] for name in names})


def json_data(result: SweepResult) -> dict[str, Any]:
    w = result.workload
    names = list(result.columns)
    columns = [result.columns[name].tolist() for name in names]
    return {
        "model": result.model,
        "workload": {"dtype": w.dtype, "impl": w.impl, "attention": w.attention,
                     "recompute": w.recompute, "optimizer": w.optimizer, "gen_tokens": w.gen_tokens,
                     **{k: getattr(w, k) for k in ("weight_dtype", "weight_group", "weight_dtype_source", "kv_dtype")
                        if getattr(w, k) is not None}},  # the inference weights, as estimate's inputs
        "units": dict(QUANTITIES),
        "note": "float64 values (exact integers below 2**53); `estimate --json` is exact.",
        "columns": ["seq_len", "batch", *names],
        "rows": [[n, b, *(plain(c[i]) for c in columns)]
                 for i, (n, b) in enumerate(zip(result.seq_lens.tolist(), result.batches.tolist()))],
    }
