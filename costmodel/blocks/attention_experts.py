"""JetMoE's mixture of attention heads (transformers 5.24 modeling_jetmoe.py JetMoeMoA, run by
JetMoeAttention; ModelConfig.attention_experts): E experts each own a query projection d -> h_kv d_h
and an output projection h_kv d_h -> d; the layer's router (blocks/router.py Router, JetMoeTopKGating)
picks each token's top k, so a token's k query groups are its h = k h_kv query heads, which attend
to the h_kv heads of one shared kv_proj's keys and values repeated k times (copies, whatever k).

Both projections run as JetMoeParallelExperts: the S = T k slots sorted by expert, each expert one
F.linear over its own rows (a Python loop), the outputs concatenated. Every slot runs one expert,
so the FLOPs are S times one expert's whatever the routing: 2 T k d h_kv d_h = 2 T d h d_h a way,
a dense projection's. One leaf each way:

  map     (JetMoeMoA.map) the inputs gathered by slot (layer_input[batch_index], which keeps the
          int64 batch_index), the query projection, the queries put back in token order
          (index_add into zeros by index_sorted_experts; that int64 index, which the router's
          gather of the gates keeps too, is counted here once). Kept: the two indices, the
          gathered input, e S d, and the projection's output, e S h_kv d_h (index_add keeps its
          source: torch 2.13's IndexAddBackward0 saves it).
  reduce  (JetMoeMoA.reduce) the attention's output gathered by slot (the index keeps only its
          index, counted in map), the output projection, the product with the gates (keeps both
          factors: the projection's output, e S d, and the gates, e S), index_add by batch_index
          into the layer's output (keeps its source, the product, e S d). Kept: the gathered
          input, e S h_kv d_h, the two factors and the product.
          Its d-wide bias is blocks/norms.OutputBias, a leaf of its own.

Measured: tests/test_hf_jetmoe.py (every validate row on the CPU's real tensors; routing is
data-dependent, `expert_size.tolist()`, which FakeTensorMode cannot run).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import INDEX, Expr, elementwise_bytes
from .base import Block, Cost, Profile, Tensor, make_cost, weight_matrix
from .experts import experts_touched


@dataclass(frozen=True)
class AttentionExperts(Block):
    """One way of JetMoE's mixture of attention heads: "map" (queries) or "reduce" (outputs)."""

    tokens: Expr
    side: str  # "map" or "reduce"
    profile: Profile = Profile()
    title = "attention experts"

    @property
    def widths(self) -> tuple[Expr, Expr]:
        """(input, output) width of one expert's projection."""
        group = S.h_kv * S.d_h
        return (S.d, group) if self.side == "map" else (group, S.d)

    def cost(self) -> Cost:
        slots = self.tokens * S.k
        d_in, d_out = self.widths
        forward = 2 * slots * d_in * d_out
        read = experts_touched(self.tokens)
        if self.side == "map":
            saved = 2 * INDEX * slots + S.e * slots * (S.d + d_out)
            elements = [("add", slots * d_out)]  # index_add into zeros
            moved = elementwise_bytes(slots * d_in) + elementwise_bytes(slots * d_out, reads=2)
        else:
            saved = S.e * slots * (d_in + 2 * S.d + 1)
            elements = [("mul", slots * S.d), ("add", slots * S.d)]  # the gates, index_add
            moved = elementwise_bytes(slots * d_in) + 2 * elementwise_bytes(slots * S.d, reads=2)
        return make_cost(
            tensors=[Tensor(S.E, d_in * d_out)],
            matrices=[weight_matrix(d_in, d_out, S.E)],
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            elements=elements,
            saved_bytes=saved,
            inactive_params=(S.E - S.k) * d_in * d_out,
            # each expert that gets a slot reads its matrix once (blocks/experts.py experts_touched)
            bytes_matmul=S.e * (read * d_in * d_out + slots * (d_in + d_out)),
            matrix_read_share=read / S.E,
            bytes_other=moved,
        )
