"""The values a prefill or a decode step evaluates the cost tree's leaves at, for the kernel model
(costmodel/kernel_time.py re-exports it). Apart from costmodel/kernel_shapes.py, whose plain shapes the
blocks import: these values need the tree, which imports the blocks.
"""

from __future__ import annotations

from typing import Any

from .config import DTYPE_BYTES, Workload


def inference_subs(cfg: Any, dtype: str, batch: int, seq_len: int, context: int | None = None,
                   source_len: int | None = None) -> dict:
    """The values a prefill (context None) or a decode step at `context` keys evaluates at (sympy and the
    tree imported here: a warm plan, which imports kernel_time, imports no sympy)."""
    import sympy as sp

    from . import symbols as S
    from .tree import model_values

    values = {**model_values(cfg), S.b: batch, S.n: seq_len, S.T: 0,
              S.s: seq_len if source_len is None else source_len,
              S.c: seq_len if context is None else context, S.e: DTYPE_BYTES[Workload(dtype=dtype).dtype]}
    return {k: sp.Integer(v) for k, v in values.items()}
