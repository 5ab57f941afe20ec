"""Gemma 3n's AltUp streams and LAuReL residual (ModelConfig.altup_inputs, A; laurel_rank, r;
transformers 5.24 models/gemma3n/modeling_gemma3n.py, Gemma3nTextModel, Gemma3nTextAltUp and
Gemma3nTextLaurelBlock).

Before the layers (AltUpEmbedding): A - 1 bias-free d -> d projections of the scaled token
embeddings (altup_projections), each rescaled to the embeddings' root-mean-square, stacked with them
into A streams; the model's two scalar buffers of the per-layer inputs (per_layer_projection_scale
and per_layer_input_scale) live here too. After the layers (AltUpUnembedding): A - 1 more d -> d
projections of streams 1..A-1 (altup_unembed_projections), rescaled, and the mean of the A streams
before the final norm.

In each layer (AltUpLayer): predict (an RMSNorm of the active stream times the router's 1/d
buffer, a d -> A router and tanh, an A -> A^2 linear to coefficients, the streams (b, n, d, A) times
each token's (A, A) matrix, plus the streams) and correct (the router again on the layer's output,
an A -> A linear plus 1, the innovation repeated over the A streams, times its coefficient, plus the
predictions), then the active stream times correct_output_scale. LAuReL (Laurel): a d -> r -> d
low-rank branch on the normed active stream, an RMSNorm, added to it.

Only parameters, buffers and matmul FLOPs are checked against the class
(tests/test_hf_gemma3n.py); the elementwise ops below are stated per output element but not
measured, and no bytes are saved for backward (estimates of activations for gemma3n_text are refused).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import Expr
from .base import Block, Cost, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix


def _projections(tokens: Expr) -> tuple[Expr, Expr]:
    """A - 1 bias-free d -> d projections of tokens rows."""
    forward, backward = linear_flops(tokens, S.d, S.d)
    return (S.A_u - 1) * forward, (S.A_u - 1) * backward


@dataclass(frozen=True)
class AltUpEmbedding(Block):
    """The A - 1 extra streams made from the token embeddings."""

    tokens: Expr
    title = "AltUp stream projections"

    def cost(self) -> Cost:
        forward, backward = _projections(self.tokens)
        wide = self.tokens * S.d
        return make_cost(
            tensors=[Tensor((S.A_u - 1) * S.d, S.d)],  # A - 1 (d, d) weights, as one for FSDP's rows
            matrices=[weight_matrix(S.d, S.d, S.A_u - 1)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            # the target and each stream's magnitude (square, mean, root), the rescale (mul, div)
            elements=[("mul", (2 * S.A_u - 1) * wide + 2 * (S.A_u - 1) * wide)],
            bytes_matmul=(S.A_u - 1) * linear_bytes(self.tokens, S.d, S.d),
            buffer_bytes=2 * S.e,  # per_layer_projection_scale and per_layer_input_scale
        )


@dataclass(frozen=True)
class AltUpUnembedding(Block):
    """Streams 1..A-1 projected back, rescaled, and the mean of the A streams."""

    tokens: Expr
    title = "AltUp stream unprojections"

    def cost(self) -> Cost:
        forward, backward = _projections(self.tokens)
        wide = self.tokens * S.d
        return make_cost(
            tensors=[Tensor((S.A_u - 1) * S.d, S.d)],
            matrices=[weight_matrix(S.d, S.d, S.A_u - 1)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("mul", (2 * S.A_u - 1) * wide + 2 * (S.A_u - 1) * wide), ("add", S.A_u * wide)],
            bytes_matmul=(S.A_u - 1) * linear_bytes(self.tokens, S.d, S.d),
        )


@dataclass(frozen=True)
class AltUpLayer(Block):
    """One layer's predict and correct over the A streams."""

    tokens: Expr
    title = "AltUp predict and correct"

    def cost(self) -> Cost:
        router, router_backward = linear_flops(self.tokens, S.d, S.A_u)  # run twice: predict and correct
        predict, predict_backward = linear_flops(self.tokens, S.A_u, S.A_u ** 2)
        correct, correct_backward = linear_flops(self.tokens, S.A_u, S.A_u)
        # each token's (d, A) streams times its (A, A) coefficients: both sides train
        mix, mix_backward = linear_flops(self.tokens * S.d, S.A_u, S.A_u)
        streams = self.tokens * S.A_u * S.d
        return make_cost(
            tensors=[Tensor(S.d), Tensor(S.A_u, S.A_u), Tensor(S.A_u ** 2, S.A_u), Tensor(S.A_u, S.d), Tensor(S.d)],
            matrices=[weight_matrix(S.A_u, S.A_u), weight_matrix(S.A_u, S.A_u ** 2), weight_matrix(S.d, S.A_u)],
            matrix_tokens=[self.tokens, self.tokens, 2 * self.tokens],
            flops_matmul=2 * router + predict + correct + mix,
            flops_matmul_backward=2 * router_backward + predict_backward + correct_backward + mix_backward,
            elements=[("rmsnorm", 2 * self.tokens * S.d), ("tanh", 2 * self.tokens * S.A_u),
                      ("add", 2 * streams + self.tokens * S.d), ("mul", streams + 3 * self.tokens * S.d)],
            bytes_matmul=2 * linear_bytes(self.tokens, S.d, S.A_u) + linear_bytes(self.tokens, S.A_u, S.A_u ** 2)
            + linear_bytes(self.tokens, S.A_u, S.A_u) + S.e * 3 * streams,
            buffer_bytes=S.e,  # router_input_scale
        )


@dataclass(frozen=True)
class Laurel(Block):
    """The learned augmented residual: d -> r -> d, an RMSNorm, an add."""

    tokens: Expr
    title = "LAuReL low-rank residual"

    def cost(self) -> Cost:
        left, left_backward = linear_flops(self.tokens, S.d, S.r_la)
        right, right_backward = linear_flops(self.tokens, S.r_la, S.d)
        wide = self.tokens * S.d
        return make_cost(
            tensors=[Tensor(S.r_la, S.d), Tensor(S.d, S.r_la), Tensor(S.d)],
            matrices=[weight_matrix(S.d, S.r_la), weight_matrix(S.r_la, S.d)],
            flops_matmul=left + right,
            flops_matmul_backward=left_backward + right_backward,
            # its norm and add, and the layer's (attention + residual + LAuReL) / sqrt(2)
            elements=[("rmsnorm", wide), ("add", 2 * wide), ("mul", wide)],
            bytes_matmul=linear_bytes(self.tokens, S.d, S.r_la) + linear_bytes(self.tokens, S.r_la, S.d),
        )
