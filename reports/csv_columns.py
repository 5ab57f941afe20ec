"""CSV text of whole numeric columns at once (numpy), byte for byte as the per-value writer.

A sweep of a million points has fifteen million numbers; formatting them one by one in Python
took a minute. Here each column becomes a (rows, WIDTH) matrix of ASCII codes padded with NUL
bytes, a CSV row is the matrices side by side with commas and a newline, and the NULs are dropped
at the end (rows_text). The text of every value is what reports.output.number_text writes after
reports.sweep.plain: an integral float64 below 2**53 as an integer, any other as
format(value, ".15g").

".15g" needs the value correctly rounded to 15 significant digits. An integral float64 from
2**53 to 2**74 (the FLOP counts of a big grid) is m * 2**k with m < 2**53, and its rounding is
done exactly in int64 arithmetic (_round_integral). Any other value is multiplied (or divided)
by an exact power of ten in numpy's long double (64-bit mantissa on x86): within 2**-63 of the
exact product, so the rounding is certain unless the product lies within 1e-3 of a half. Those
few values, and any that are not finite, out of the range of the powers of ten, or on a machine
whose long double is a plain double, are formatted by Python itself (_python_text).
tests/test_reports_sweep.py compares the two ways on a million values.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

EXACT_INTEGERS = 2.0**53  # below this, every integral float64 is printed as an integer
WIDTH = 21  # sign, then '0.000' and 15 digits, or 15 digits with '.', 'e', sign, 2 digits

_TABLE = np.array([list(f"{i:04d}".encode()) for i in range(10_000)], dtype=np.uint8)
_TABLE_WORDS = _TABLE.view(np.uint32).ravel()  # four ASCII digits in one 4-byte word
_TWO_DIGITS = _TABLE[:100, 2:]
_POW10 = np.array([10**i for i in range(19)], dtype=np.int64)

# _round_integral: exact int64 arithmetic on integral values up to 2**74.
_INTEGRAL_LIMIT = 2.0**74
_POW10_FLOAT = np.array([float(10**i) for i in range(23)])  # each exact in float64
_POW5 = np.array([5**i for i in range(23)], dtype=np.int64)

# _round15: long double products with exact powers of ten.
_LONG = np.finfo(np.longdouble).nmant >= 63
_MAX_SCALE = 27  # 10**27 = 2**27 * 5**27 and 5**27 < 2**63: exact in a 64-bit mantissa
_POWERS = np.ones(_MAX_SCALE + 1, dtype=np.longdouble)
for _s in range(1, _MAX_SCALE + 1):
    _POWERS[_s] = _POWERS[_s - 1] * 10  # exact, step by step
_E_MIN, _E_MAX = 14 - _MAX_SCALE, 14 + _MAX_SCALE  # decimal exponents decided there


def _digits(values: np.ndarray, count: int) -> np.ndarray:
    """(rows, count) ASCII digits of non-negative int64 values, with leading zeros: four digits
    at a time, looked up as one 4-byte word."""
    chunks = -(-count // 4)
    words = np.empty((values.size, chunks), dtype=np.uint32)
    remaining = values.copy()
    for chunk in range(chunks - 1, -1, -1):
        words[:, chunk] = _TABLE_WORDS[remaining % 10_000]
        remaining //= 10_000
    return words.view(np.uint8).reshape(values.size, 4 * chunks)[:, 4 * chunks - count:]


def int_field(values: np.ndarray, digits: int | None = None,
              out: np.ndarray | None = None) -> np.ndarray:
    """(rows, 1 + digits) uint8: int64 values (not -2**63) as decimal text: a sign column, then
    the digits without leading zeros, NUL-padded. digits defaults to what the largest value
    needs; out, if given, is written in place (a slice of a row buffer)."""
    values = np.asarray(values, dtype=np.int64)
    magnitude = np.abs(values)
    length = np.maximum(np.searchsorted(_POW10, magnitude, side="right"), 1)  # 0 -> "0"
    if digits is None:
        digits = int(length.max(initial=1))
    if out is None:
        out = np.empty((values.size, 1 + digits), dtype=np.uint8)
    out[:, 0] = np.where(values < 0, ord("-"), 0)
    text = out[:, 1:]
    text[...] = _digits(magnitude, digits)
    leading = np.arange(digits, dtype=np.int8) < (digits - length).astype(np.int8)[:, None]
    np.putmask(text, leading, 0)
    return out


def float_field(values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(rows, WIDTH) uint8: each float64 as number_text(plain(value)) writes it. out, if given,
    must be zeros; it is written in place."""
    values = np.asarray(values, dtype=np.float64)
    if out is None:
        out = np.zeros((values.size, WIDTH), dtype=np.uint8)
    magnitude = np.abs(values)
    with np.errstate(invalid="ignore"):
        integral = np.floor(values) == values
    small = integral & (magnitude < EXACT_INTEGERS)
    large = integral & ~small & (magnitude < _INTEGRAL_LIMIT)
    rest = ~(small | large)
    if small.all():  # a whole chunk of exact integers (the common case): in place
        int_field(values.astype(np.int64), 16, out=out[:, :17])
        return out
    if small.any():
        out[small, :17] = int_field(values[small].astype(np.int64), 16)
    if large.any():
        digits, exponent = _round_integral(magnitude[large])
        out[large] = _scientific(digits, exponent, values[large] < 0)
    if rest.any():
        out[rest] = _g15_field(values[rest])
    return out


def rows_text(prefix: bytes, ints: Sequence[np.ndarray], floats: Sequence[np.ndarray]) -> bytes:
    """CSV rows: the prefix (a field already quoted, the same on every row), the int64 columns,
    then the float64 columns, comma-separated, each row ending in '\n'. The fields are written
    side by side into one NUL-padded buffer, and the NULs dropped."""
    if b"\0" in prefix:
        raise ValueError("a CSV field holds a NUL byte")
    rows = len((*ints, *floats)[0])
    digits = [int(np.searchsorted(_POW10, np.abs(v).max(initial=0), side="right")) or 1
              for v in ints]
    widths = [len(prefix), *(1 + d for d in digits), *([WIDTH] * len(floats))]
    buffer = np.zeros((rows, sum(widths) + len(widths)), dtype=np.uint8)
    ends = np.cumsum(np.array(widths) + 1)  # one past each field's separator
    buffer[:, ends - 1] = ord(",")
    buffer[:, -1] = ord("\n")
    buffer[:, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    for index, values in enumerate(ints, start=1):
        start = ends[index - 1]
        int_field(values, digits[index - 1], out=buffer[:, start: start + widths[index]])
    for index, values in enumerate(floats, start=1 + len(ints)):
        start = ends[index - 1]
        float_field(values, out=buffer[:, start: start + WIDTH])
    flat = buffer.ravel()
    return flat[flat != 0].tobytes()


# ---------------------------------------------------------------------------------------------
# format(value, ".15g") for a column


def _round_integral(magnitude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exactly rounded 15 significant digits q (int64) and decimal exponent e of integral
    float64 values from 2**53 to 2**74: q = round-half-even(v / 10**(e - 14))."""
    exponent = np.searchsorted(_POW10_FLOAT, magnitude, side="right") - 1  # exact comparisons
    dropped = exponent - 14  # decimal digits rounded away, 1 to 8
    fraction, power = np.frexp(magnitude)
    mantissa = (fraction * 2.0**53).astype(np.int64)  # v = mantissa * 2**(power - 53)
    shift = power - 53 - dropped  # v / 10**dropped = mantissa * 2**shift / 5**dropped
    five = _POW5[dropped]
    # shift >= 0: divide mantissa * 2**shift by the odd 5**dropped (never a tie).
    up = np.maximum(shift, 0)
    whole, rest = np.divmod(mantissa, five)
    rest <<= up
    by_five = (whole << up) + rest // five + (2 * (rest % five) > five)
    # shift < 0: divide mantissa by 5**dropped * 2**-shift, ties to even.
    divisor = five << np.maximum(-shift, 0)
    whole, rest = np.divmod(mantissa, divisor)
    twice = 2 * rest
    by_both = whole + ((twice > divisor) | ((twice == divisor) & (whole % 2 == 1)))
    digits = np.where(shift >= 0, by_five, by_both)
    carry = digits == 10**15
    return np.where(carry, 10**14, digits), exponent + carry


def _scientific(digits: np.ndarray, exponent: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """'d.dddddddddddddde+XX' (trailing zeros and a bare point dropped) for 15 digits, 0 <= e < 100."""
    out = np.zeros((digits.size, WIDTH), dtype=np.uint8)
    out[:, 0] = np.where(negative, ord("-"), 0)
    text = _digits(digits, 15)
    out[:, 1] = text[:, 0]
    out[:, 2] = ord(".")
    after = text[:, 1:]
    last = np.where(after != ord("0"), np.arange(14, dtype=np.int8), -1).max(axis=1)
    out[:, 3:17] = np.where(np.arange(14) > last[:, None], 0, after)  # no trailing zeros
    out[last < 0, 2] = 0  # every digit after the point was zero
    out[:, 17] = ord("e")
    out[:, 18] = np.where(exponent < 0, ord("-"), ord("+"))
    out[:, 19:21] = _TWO_DIGITS[np.abs(exponent)]
    return out


def _g15_field(values: np.ndarray) -> np.ndarray:
    """(rows, WIDTH) uint8 of format(v, '.15g') for float64 values that are not exact integers."""
    magnitude = np.abs(values)
    digits, exponent, sure = _round15(magnitude)
    out = _compose(digits, exponent, values < 0)
    for row in np.flatnonzero(~sure):
        out[row] = _python_text(float(values[row]))
    return out


def _round15(magnitude: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each |v|: its 15 significant digits q (10**14 <= q < 10**15, int64, correctly rounded),
    its decimal exponent e (v ~ q * 10**(e - 14)) and whether both are certain."""
    rows = magnitude.size
    finite = np.isfinite(magnitude) & (magnitude > 0)
    if not _LONG:
        return np.full(rows, 10**14, np.int64), np.zeros(rows, np.int64), np.zeros(rows, bool)
    safe = np.where(finite, magnitude, 1.0)
    exponent = np.floor(np.log10(safe)).astype(np.int64)
    wide = safe.astype(np.longdouble)
    for _ in range(3):  # log10 can be one off next to a power of ten
        scaled, in_range = _scale(wide, 14 - exponent)
        low, high = in_range & (scaled < 1e14), in_range & (scaled >= 1e15)
        if not (low | high).any():
            break
        exponent = exponent - low + high
    whole = np.floor(scaled)
    fraction = scaled - whole
    sure = finite & in_range & (np.abs(fraction - 0.5) > 1e-3) & (whole >= 1e14) & (whole < 1e15)
    digits = np.where(sure, whole, 1e14).astype(np.int64) + (sure & (fraction > 0.5))
    carry = digits == 10**15  # 999999999999999.7 -> 1.00000000000000e+15
    digits = np.where(carry, 10**14, digits)
    return digits, exponent + carry, sure


def _scale(wide: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """wide * 10**shift, one rounding in long double, and where |shift| is within the exact
    powers of ten."""
    in_range = np.abs(shift) <= _MAX_SCALE
    power = _POWERS[np.minimum(np.abs(shift), _MAX_SCALE)]
    return np.where(shift >= 0, wide * power, wide / power), in_range


# Characters a row draws from: its 15 digits (0-14), then these, then its exponent's two digits.
_POINT, _ZERO, _E, _PLUS, _MINUS, _TENS, _ONES, _NUL, _SIGN = range(15, 24)


def _template(exponent: int) -> tuple[list[int], list[int], int]:
    """For '.15g' of a value with this decimal exponent: where each output column takes its
    character from (pool indices), which of the 15 digits it shows (-1: none), and how many
    digits stand before the point (a point with no digit after it is dropped)."""
    if -4 <= exponent < 15:  # fixed notation
        if exponent >= 0:
            chars = list(range(exponent + 1)) + [_POINT] + list(range(exponent + 1, 15))
            shown = list(range(exponent + 1)) + [-1] + list(range(exponent + 1, 15))
            before = exponent + 1
        else:
            zeros = -exponent - 1
            chars = [_ZERO, _POINT] + [_ZERO] * zeros + list(range(15))
            shown = [-1, -1] + [-1] * zeros + list(range(15))
            before = 0
    else:  # d.dddddddddddddde+XX
        sign = _MINUS if exponent < 0 else _PLUS
        chars = [0, _POINT] + list(range(1, 15)) + [_E, sign, _TENS, _ONES]
        shown = [0, -1] + list(range(1, 15)) + [-1] * 4
        before = 1
    padding = WIDTH - 1 - len(chars)
    return [_SIGN] + chars + [_NUL] * padding, [-1] + shown + [-1] * padding, before


_EXPONENTS = range(_E_MIN, _E_MAX + 1)
_CHARS = np.array([_template(e)[0] for e in _EXPONENTS], dtype=np.intp)
_SHOWN = np.array([_template(e)[1] for e in _EXPONENTS], dtype=np.int64)
_BEFORE = np.array([_template(e)[2] for e in _EXPONENTS], dtype=np.int64)
_POINT_COLUMN = np.array([_template(e)[0].index(_POINT) for e in _EXPONENTS], dtype=np.intp)


def _compose(digits: np.ndarray, exponent: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The '.15g' text of q * 10**(e - 14), trailing zeros (and a bare point) dropped."""
    rows = digits.size
    pool = np.zeros((rows, 24), dtype=np.uint8)
    pool[:, :15] = _digits(digits, 15)
    pool[:, _POINT], pool[:, _ZERO], pool[:, _E] = ord("."), ord("0"), ord("e")
    pool[:, _PLUS], pool[:, _MINUS] = ord("+"), ord("-")
    size = np.abs(exponent)
    pool[:, _TENS], pool[:, _ONES] = 48 + size // 10 % 10, 48 + size % 10
    pool[:, _SIGN] = np.where(negative, ord("-"), 0)
    trailing = np.cumprod(pool[:, 14::-1] == ord("0"), axis=1).sum(axis=1)
    kept = 15 - trailing  # significant digits shown
    index = np.clip(exponent, _E_MIN, _E_MAX) - _E_MIN
    out = np.take_along_axis(pool, _CHARS[index], axis=1)
    before = _BEFORE[index]
    out[_SHOWN[index] >= np.maximum(kept, before)[:, None]] = 0  # zeros after the point only
    bare = kept <= before
    out[np.flatnonzero(bare), _POINT_COLUMN[index[bare]]] = 0
    return out


def _python_text(value: float) -> np.ndarray:
    """One value the long-double way cannot decide, as Python formats it."""
    text = format(value, ".15g").encode("ascii")
    row = np.zeros(WIDTH, dtype=np.uint8)
    row[: len(text)] = np.frombuffer(text, dtype=np.uint8)
    return row
