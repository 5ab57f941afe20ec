"""Small expression pieces the formulas share: element sizes by dtype name and conditional terms.

blocks/ and kernels.py build their formulas from these and from costmodel.symbols; nothing here
is a formula of a block, only how a dtype or a condition reads as an expression.
"""

from __future__ import annotations

import sympy as sp

from . import symbols as S
from .spec import DTYPE_BYTES

Expr = sp.Expr
ZERO = sp.Integer(0)
FP32 = DTYPE_BYTES["fp32"]  # bytes of an fp32 element: tensors some implementations upcast regardless of dtype
INDEX = 8  # bytes of an int64 token id or label

#: Bytes per element of each dtype name a fact may use ("activation": the workload's dtype, e).
DTYPE_BYTES = {"activation": S.e, "fp32": sp.Integer(FP32), "int64": sp.Integer(INDEX),
               "int32": sp.Integer(4), "bool": sp.Integer(1)}


def dtype_bytes(name: str) -> Expr:
    """Bytes of one element of a dtype named by a fact."""
    return DTYPE_BYTES[name]


def unless_fp32(x: Expr) -> Expr:
    """x when activations are narrower than fp32, else 0: a low-precision copy of an fp32 tensor
    exists only when the activation dtype is not fp32 itself."""
    return sp.Piecewise((ZERO, sp.Eq(S.e, FP32)), (x, True))


def if_fp32(x: Expr) -> Expr:
    """x when activations are fp32, else 0: a tensor that is kept only where an upcast to fp32 is
    the tensor itself rather than a new copy (the complement of unless_fp32)."""
    return sp.Piecewise((x, sp.Eq(S.e, FP32)), (ZERO, True))


def if_batch_of_one(x: Expr) -> Expr:
    """x when b = 1, else 0 (a view that stays a view only for a single sequence)."""
    return sp.Piecewise((x, sp.Eq(S.b, 1)), (ZERO, True))


def elementwise_bytes(elements: Expr, reads: int = 1) -> Expr:
    """Traffic of an elementwise op: `reads` inputs read, one output written."""
    return S.e * (reads + 1) * elements


#: DeepSeek-V3's fine-grained activation quantization (technical report, section 3.3.2): one fp32
#: scale per 1 x 128 tile of a row.
TILE = 128


def tiled_bytes(rows: Expr, width: Expr, bits: int = 8) -> Expr:
    """A rows x width activation cached at `bits` per element (8: FP8; 12: DeepSeek-V3's E5M6)
    with an fp32 scale per 1 x 128 tile of each row (costmodel/layout/fp8.py, "blockwise")."""
    return sp.Rational(bits, 8) * rows * width + FP32 * rows * sp.ceiling(width / TILE)
