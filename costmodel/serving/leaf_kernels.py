"""One leaf's kernels as the serving step reads them (costmodel/serving/steptime.py's kernel
model): fitted once as affine in a step's query tokens n and keys c, so a step builds its kernels
without sympy (steptime.py's docstring, "Step times are cached or vectorised")."""

from __future__ import annotations

from typing import Any

import sympy as sp

from .. import symbols as S
from ..kernel_time import leaf_kernels

#: The (n, c) points a leaf's kernels are read at to fit each field as a + b n + d c (the first
#: three), and checked at (the rest) before the fit stands for the tree.
FIT_POINTS = ((2, 3), (3, 3), (2, 4))
CHECK_POINTS = ((1, 1), (5, 17), (64, 300), (4096, 8191))


class LeafKernels:
    """One leaf's kernels (tree_kernels.leaf_kernels) at b = 1, n query tokens and c keys: each
    numeric field of each kernel fitted as a + b n + d c from the tree at FIT_POINTS and checked
    at CHECK_POINTS, so a step builds kernels without sympy; a leaf whose fields are not affine
    (experts touched at a token count, a window's min) is read from the tree at each (n, c) and
    kept."""

    def __init__(self, leaf: Any, subs: dict, fused_attention: bool, local: dict | None, fused_qkv: bool = False):
        """fused_qkv: the decode code runs Q, K and V as one GEMM (kernel_facts_file.fuses_qkv), as simulate's steps."""
        self.leaf, self.subs, self.fused, self.local, self.fused_qkv = leaf, subs, fused_attention, local, fused_qkv
        self.read: dict[tuple[int, int], list] = {}
        self.fit = self._fit()

    def _tree(self, n: int, c: int) -> list:
        if (n, c) not in self.read:
            subs = {**self.subs, S.n: sp.Integer(n), S.c: sp.Integer(c)}
            self.read[(n, c)] = leaf_kernels(self.leaf, subs, self.fused, self.local, fused_qkv=self.fused_qkv)
        return self.read[(n, c)]

    def _fit(self) -> list | None:
        import dataclasses

        (n0, c0), (n1, _), (_, c2) = FIT_POINTS
        base, along_n, along_c = (self._tree(*p) for p in FIT_POINTS)
        if not (len(base) == len(along_n) == len(along_c)) or \
                any(type(k) is not type(x) or type(k) is not type(y) for k, x, y in zip(base, along_n, along_c)):
            return None
        fit = []
        for k, x, y in zip(base, along_n, along_c):
            fields = {}
            for f in dataclasses.fields(k):
                v0, vn, vc = getattr(k, f.name), getattr(x, f.name), getattr(y, f.name)
                if isinstance(v0, bool) or not isinstance(v0, (int, float)) or v0 is None:
                    if not (v0 == vn == vc):
                        return None
                    fields[f.name] = (v0, 0, 0)
                else:
                    b, d = (vn - v0) / (n1 - n0), (vc - v0) / (c2 - c0)
                    a = v0 - b * n0 - d * c0
                    if isinstance(v0, int):
                        a, b, d = int(a), int(b), int(d)
                    fields[f.name] = (a, b, d)
            fit.append((type(k), fields))
        self.fit = fit
        for n, c in CHECK_POINTS:  # the fit must give the tree's kernels exactly
            if self(n, c) != self._tree(n, c):
                return None
        self.read.clear()
        return fit

    def __call__(self, n: int, c: int) -> list:
        if self.fit is None:
            return self._tree(n, c)
        return [kind(**{name: (a if b == d == 0 else a + b * n + d * c) for name, (a, b, d) in fields.items()})
                for kind, fields in self.fit]
