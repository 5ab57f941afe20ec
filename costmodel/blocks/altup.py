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

What backward keeps (measured with validate's saved-tensor hooks, tests/test_hf_gemma3n.py), T
tokens: before the layers, each extra stream's square and rescaled projection (its sum of squares
clamped and its root: T each) and once the target root-mean-square (the mean and its root), and in
fp32 the embeddings the projections read (Gemma 4's first norm keeps them in the model's dtype; no
norm reads them here). In a layer: the A streams (T A d, whose view the coefficient product keeps),
two router norms (predict's on a view of the streams, correct's on the layer's output, which it
keeps), each router's input and fp32 tanh (cast back below fp32), the T (A, A) coefficients, the
clamped correction weight, the correction coefficients plus 1, the innovation repeated over the A
streams, the cloned active stream that correct_output_scale multiplies and, in fp32, the rest of the
predictions tensor the attention's input norm keeps a view of (the tree's norm counts T d of it).
After the layers: the last layer's streams and what the rescale keeps again. LAuReL keeps its rank-r
input and its norm's work (its input fp32, its output read by an add). The class is transformers'
only code for Gemma 3n: the norms' facts are gemma3n_text's under impl "hf" (GEMMA3N).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from .. import symbols as S
from ..terms import FP32, Expr, if_fp32, unless_fp32
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix
from .norms import norm_saved

#: The profile Gemma 3n's blocks run under: transformers' code (Gemma3nRMSNorm: fp32 statistics,
#: the weight cast to fp32, pow's input kept).
GEMMA3N = Profile(family="gemma3n_text")


def _projections(tokens: Expr) -> dict[str, Any]:
    """A - 1 bias-free d -> d projections of tokens rows (the streams' projections in, or back out):
    their weights, FLOPs and bytes, as make_cost's fields."""
    forward, backward = linear_flops(tokens, S.d, S.d)
    return dict(tensors=[Tensor((S.A_u - 1) * S.d, S.d)],  # A - 1 (d, d) weights, as one for FSDP's rows
                matrices=[weight_matrix(S.d, S.d, S.A_u - 1)],
                flops_matmul=(S.A_u - 1) * forward, flops_matmul_backward=(S.A_u - 1) * backward,
                bytes_matmul=(S.A_u - 1) * linear_bytes(tokens, S.d, S.d))


def _rescaled_saved(tokens: Expr) -> Expr:
    """What rescaling the A - 1 projected streams to a target's root-mean-square keeps: per stream
    its square's input, the clamped mean and its root, and the product the division reads (T d, T,
    T, T d); once, where a stream is rescaled, the target's mean and root (the product's factor)."""
    per_stream = 2 * S.e * tokens * S.d + 2 * S.e * tokens
    return (S.A_u - 1) * per_stream + sp.Min(S.A_u - 1, 1) * 2 * S.e * tokens


def _router_saved(tokens: Expr) -> Expr:
    """One run of the modality router past its norm: its input (the normed stream times the
    router_input_scale), tanh's fp32 result and, below fp32, its cast back."""
    return S.e * tokens * S.d + FP32 * tokens * S.A_u + unless_fp32(S.e * tokens * S.A_u)


@dataclass(frozen=True)
class AltUpEmbedding(Block):
    """The A - 1 extra streams made from the token embeddings."""

    tokens: Expr
    title = "AltUp stream projections"

    def cost(self) -> Cost:
        wide = self.tokens * S.d
        return make_cost(
            **_projections(self.tokens),
            # the target and each stream's magnitude (square, mean, root), the rescale (mul, div)
            elements=[("mul", (2 * S.A_u - 1) * wide + 2 * (S.A_u - 1) * wide)],
            saved_bytes=if_fp32(S.e * wide) + _rescaled_saved(self.tokens),
            buffer_bytes=2 * S.e,  # per_layer_projection_scale and per_layer_input_scale
        )


@dataclass(frozen=True)
class AltUpUnembedding(Block):
    """Streams 1..A-1 projected back, rescaled, and the mean of the A streams."""

    tokens: Expr
    title = "AltUp stream unprojections"

    def cost(self) -> Cost:
        wide = self.tokens * S.d
        return make_cost(
            **_projections(self.tokens),
            elements=[("mul", (2 * S.A_u - 1) * wide + 2 * (S.A_u - 1) * wide), ("add", S.A_u * wide)],
            # the last layer's streams (the target's square reads a view of them) where any is rescaled
            saved_bytes=sp.Min(S.A_u - 1, 1) * S.A_u * S.e * wide + _rescaled_saved(self.tokens),
        )


@dataclass(frozen=True)
class AltUpLayer(Block):
    """One layer's predict and correct over the A streams."""

    tokens: Expr
    profile: Profile = GEMMA3N
    title = "AltUp predict and correct"

    def saved(self) -> Expr:
        """Bytes kept for backward (module docstring): the streams, two router norms and routers,
        the coefficients, the innovation, the scaled clone, and in fp32 the wider predictions view."""
        tokens, facts, recomputed = self.tokens, self.profile.facts, self.profile.recomputes("norms")
        streams = S.A_u * S.e * tokens * S.d
        norms = sum(norm_saved("rmsnorm", tokens, S.d, facts, input_kept=kept, output_kept=False,
                               recomputed=recomputed) for kept in (False, True))  # predict's, correct's
        coefficients = S.e * tokens * S.A_u ** 2 + S.e * S.A_u ** 2 + S.e * S.A_u * tokens
        return (streams + norms + 2 * _router_saved(tokens) + coefficients + streams + S.e * tokens * S.d
                + if_fp32((S.A_u - 1) * S.e * tokens * S.d))

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
            saved_bytes=self.saved(),
            bytes_matmul=2 * linear_bytes(self.tokens, S.d, S.A_u) + linear_bytes(self.tokens, S.A_u, S.A_u ** 2)
            + linear_bytes(self.tokens, S.A_u, S.A_u) + S.e * 3 * streams,
            buffer_bytes=S.e,  # router_input_scale
        )


@dataclass(frozen=True)
class Laurel(Block):
    """The learned augmented residual: d -> r -> d, an RMSNorm, an add."""

    tokens: Expr
    profile: Profile = GEMMA3N
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
            # the right linear's input and the norm's work (its input kept, its output read by an add);
            # the left linear's input is the attention's (the input norm's output)
            saved_bytes=S.e * self.tokens * S.r_la + norm_saved(
                "rmsnorm", self.tokens, S.d, self.profile.facts, output_kept=False,
                recomputed=self.profile.recomputes("norms")),
            bytes_matmul=linear_bytes(self.tokens, S.d, S.r_la) + linear_bytes(self.tokens, S.r_la, S.d),
        )
