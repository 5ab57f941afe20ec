"""Zamba2's per-use LoRA adapters on a shared block's projections (transformers 5.24
models/zamba2/modeling_zamba2.py: Zamba2Attention's linear_q/k/v_adapter_list, Zamba2MLP's
gate_up_proj_adapter_list): nn.Sequential(Linear(d_in, r, bias=False), Linear(r, d_out,
bias=False)) on the projection's input, its output added to the projection's. Each use of a
shared block runs its own adapters (costmodel/shared_block.py places them, one set a use)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import Expr, elementwise_bytes
from .base import Block, Cost, LinearOp, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix


@dataclass(frozen=True)
class SharedAdapter(Block):
    """`copies` adapters d_in -> r_sh -> d_out on tokens (zamba2's q, k and v adapters: 3 of
    2d -> r -> 2d; the MLP's: d -> r -> 2 d_ff), each output added to its projection's. Kept for
    backward: each second linear's r-wide input (the first reads the norm's output, kept there)."""

    tokens: Expr
    d_in: Expr
    d_out: Expr
    copies: int = 1
    title = "LoRA adapter"

    def linear_ops(self) -> tuple[LinearOp, ...]:
        return tuple(op for i in range(self.copies) for op in (
            LinearOp(f"adapter_{i}_down", self.tokens, self.d_in, S.r_sh),
            LinearOp(f"adapter_{i}_up", self.tokens, S.r_sh, self.d_out)))

    def cost(self) -> Cost:
        down, down_back = linear_flops(self.tokens, self.d_in, S.r_sh)
        up, up_back = linear_flops(self.tokens, S.r_sh, self.d_out)
        added = self.copies * self.tokens * self.d_out
        return make_cost(
            tensors=[Tensor(rows, cols) for _ in range(self.copies)
                     for rows, cols in ((S.r_sh, self.d_in), (self.d_out, S.r_sh))],
            matrices=[weight_matrix(self.d_in, S.r_sh, self.copies), weight_matrix(S.r_sh, self.d_out, self.copies)],
            flops_matmul=self.copies * (down + up),
            flops_matmul_backward=self.copies * (down_back + up_back),
            elements=[("add", added)],
            saved_bytes=self.copies * S.e * self.tokens * S.r_sh,
            bytes_matmul=self.copies * (linear_bytes(self.tokens, self.d_in, S.r_sh)
                                        + linear_bytes(self.tokens, S.r_sh, self.d_out)),
            bytes_other=elementwise_bytes(added, reads=2),
        )
