"""A use of Zamba's shared attention-and-MLP block as leaves of the cost tree (a "shared" layer of
ModelConfig.mixer_layers), as transformers 5.24 runs it (models/zamba/modeling_zamba.py
ZambaHybridLayer, ZambaAttentionDecoderLayer; models/zamba2/modeling_zamba2.py likewise):

    t = cat(x, embeddings)                      # 2 d wide, no FLOPs
    t = o_proj(attention(input_layernorm(t)))   # RMSNorm of 2 d; q, k, v read 2 d; o_proj -> d
    t = down_proj(act(gate) * up)(pre_ff_layernorm(t))
    t = linear(t)                               # d x d, a weight of each use's own
    x = x + t                                   # into the next mixer's input (its norm reads it)

No residual add around the attention or the MLP. Heads are 2 d / h wide (attention_head_dim),
scores scaled by (head_dim / 2) ** -0.5 (a scale, as any). zamba2's uses also run LoRA adapters
(blocks/shared.py): on gate_up_proj's input, and on q, k, v's where use_shared_attention_adapter.

Weights: the block's leaves run L_sh times (each use) and hold B_sh copies (Leaf.holds: the
blocks, num_mem_blocks used in turn), so parameters, weight, gradient and optimizer bytes count
each block once, FLOPs, saved bytes and the KV cache each use (each use's layer index holds its
own keys and values in the DynamicCache). The adapters and the d x d linear are each use's own.
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from . import blocks as B
from . import symbols as S
from .leaf import Leaf, Leaves, Place

#: The attention's leaves that read the 2 d-wide concatenation (the norm before it, q/k/v).
_WIDENED = {"norm": "width", "qkv": "input_width"}


def _widened(leaf: Leaf) -> Leaf:
    """The leaf as it runs on the 2 d-wide concatenation (the norm's and q/k/v's input)."""
    block = dataclasses.replace(leaf.block, **{_WIDENED[leaf.name]: 2 * S.d})
    return dataclasses.replace(leaf, block=block, cost=block.cost())


def shared_layer(builder, layer: Place, seq: sp.Expr) -> Leaves:
    """One use of a shared block: its attention and MLP (their weights held B_sh times), the
    adapters where the model has them, the use's own d x d linear and the add into the next mixer's
    input (see the module docstring). builder: the TreeBuilder (costmodel/leaves.py) of the tree."""
    cfg, tokens = builder.cfg, S.b * seq
    attention_at = dataclasses.replace(layer, sublayer="shared_attention")
    cached = builder.cached_tokens(False)
    if builder.decode:
        attention = builder.attention(attention_at, seq, S.c, cross=False, cached=cached, kv_len=seq)
    else:
        attention = builder.attention(attention_at, seq, seq, cross=False, cached=cached)
    attention = [_widened(leaf) if leaf.name in _WIDENED else leaf for leaf in attention
                 if not isinstance(leaf.block, B.Residual)]
    mlp_at = dataclasses.replace(layer, sublayer="shared_mlp")
    mlp = [leaf for leaf in builder.ffn(mlp_at, tokens) if not isinstance(leaf.block, B.Residual)]
    block = [dataclasses.replace(leaf, holds=S.B_sh) for leaf in (*attention, *mlp)]
    own = dataclasses.replace(layer, sublayer="shared")
    adapters = []
    if cfg.shared_adapter_rank is not None:
        if cfg.shared_attention_adapters:  # after q, k, v (registered after o_proj: order of runs kept here)
            adapters.append(attention_at.leaf("qkv_adapters", B.SharedAdapter(tokens, 2 * S.d, 2 * S.d, copies=3)))
        adapters.append(mlp_at.leaf("gate_up_adapter", B.SharedAdapter(tokens, S.d, 2 * S.d_ff)))
    return [*block, *adapters,
            own.leaf("linear", B.EmbeddingProjection(tokens, S.d, S.d, input_kept=True)),
            own.leaf("join", B.Residual(tokens))]
