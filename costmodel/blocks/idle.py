"""Layers whose parameters a model holds but does not run on text alone: Mllama's cross-attention
layers (transformers 5.24 models/mllama/modeling_mllama.py MllamaTextModel.forward skips a layer of
config.cross_attention_layers while there are no cross-attention states, as on a text prompt). Their
parameters count (weights, gradients, optimizer states); they do no work and keep nothing."""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from .base import Block, Cost, Tensor, make_cost


@dataclass(frozen=True)
class IdleCrossLayers(Block):
    """`count` MllamaCrossAttentionDecoderLayers: q, k, v and o projections (no biases), RMSNorms on
    each query and key head, the input and post-attention RMSNorms, two one-element tanh gates and a
    SwiGLU MLP, each layer's tensors apart (as FSDP shards them)."""

    count: int
    title = "idle cross-attention layers"

    def cost(self) -> Cost:
        one = [Tensor(S.h * S.d_h, S.d), Tensor(S.h_kv * S.d_h, S.d), Tensor(S.h_kv * S.d_h, S.d),
               Tensor(S.d, S.h * S.d_h), Tensor(S.d_h), Tensor(S.d_h), Tensor(S.d), Tensor(sp.Integer(1)),
               Tensor(S.d_ff, S.d), Tensor(S.d_ff, S.d), Tensor(S.d, S.d_ff), Tensor(S.d), Tensor(sp.Integer(1))]
        return make_cost(tensors=one * self.count)
