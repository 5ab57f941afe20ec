"""Published formulas shown beside ours for comparison, never used as our numbers.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", Table 2:
activation bytes per layer with 2-byte activations and 1-byte dropout masks, s tokens, b
sequences, hidden size h, a heads (our n, b, d, h):
  attention  11 sbh + 5 as^2 b   (QKV input 2, Q and K 4, V 2, output-projection input 2, its
                                  dropout mask 1; softmax output 2, its dropout mask 1, dropout
                                  output 2, all times as^2 b)
  MLP        19 sbh              (input 2, GeLU input 8, GeLU output 8, dropout mask 1)
  two norms   4 sbh
  total      sbh (34 + 5 as/h); selective recomputation drops the as^2 b terms: 34 sbh; full
             recomputation keeps the layer input: 2 sbh.
In a dtype of e bytes the 2-byte terms scale and the masks stay 1 byte: sbh (16 e + 2) +
as^2 b (2 e + 1), selective sbh (16 e + 2), full e sbh; at e = 2 these are the paper's numbers.
"""

from __future__ import annotations

import sympy as sp

from . import symbols as S

KORTHIKANTI = "Korthikanti et al. 2022"


def korthikanti_activation_bytes(layers: int, recompute: str = "none") -> tuple[sp.Expr, str]:
    """Table 2's activation bytes for `layers` layers at one length, for a recomputation
    strategy, in the activation dtype (e bytes; masks 1 byte), and which variant it is."""
    sbh = S.n * S.b * S.d
    attention_matrices = S.h * S.b * S.n**2
    if recompute == "full":
        return layers * S.e * sbh, "full recomputation: e*sbh per layer"
    per_layer = (16 * S.e + 2) * sbh
    if recompute == "selective":
        return layers * per_layer, "selective recomputation: (16e + 2)*sbh per layer, 34*sbh in 2 bytes"
    per_layer += (2 * S.e + 1) * attention_matrices
    return layers * per_layer, "(16e + 2)*sbh + (2e + 1)*as^2*b per layer, sbh(34 + 5as/h) in 2 bytes"
