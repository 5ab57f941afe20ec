"""Which leaves tensor and sequence parallelism split, as data: a substitution per block class.

Tensor parallelism (Megatron's column/row split; DTensor's ColwiseParallel/RowwiseParallel) divides
a block's heads (h; h_kv as kv_heads_per_rank says: one head, replicated, where tp exceeds them
in inference), FFN widths (d_ff; a shared expert's d_s and each routed expert's d_x,
the experts split as a dense FFN is, without expert parallelism) or vocabulary (V) by tp; every
other block is replicated (norms, residual adds, dropout, positions, a router, the biases of
row-parallel layers, latent attention's down-projections to its ranks, which have no split
dimension). A Mamba-2 mixer splits its heads and its groups of B and C (mamba_split).
Sequence parallelism additionally divides the tokens (n, and s on an
encoder) of the blocks that run between the parallel regions: norms, residual adds, dropouts,
the embeddings' adds and a layer's checkpoint, and latent attention's latents (rank_leaf: the
down-projections and their norms on the rank's tokens, as Megatron-Core runs them). A leaf's
per-rank cost is its cost with these symbols replaced; no block is written twice.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

import sympy as sp

from .. import blocks as B
from .. import symbols as S

#: Block class -> what tensor parallelism divides by tp.
TP_SPLITS: dict[type, str] = {
    B.QKVProjection: "heads",
    B.RotaryEmbedding: "heads",
    B.AttentionScores: "heads",
    B.Softmax: "heads",
    B.WeightedSum: "heads",
    B.SharedAttentionMask: "heads",
    B.RelativePositionBias: "heads",
    B.AttentionOutput: "heads",
    B.HeadNorms: "heads",
    B.LatentAttention: "heads",
    B.Mamba2Mixer: "mamba",
    B.AttentionOutputGate: "heads",  # q_proj's gate half, column-parallel with the queries
    B.FeedForward: "ffn",
    B.Experts: "ffn",
    B.TokenEmbedding: "vocabulary",
    B.LMHead: "vocabulary",
    B.CrossEntropy: "loss",  # the vocabulary, when the loss runs on the rank's shard
    B.LogitSoftcap: "loss",  # runs on the gathered logits unless the loss is vocabulary-parallel
    B.LogitScale: "loss",  # the same logits as the soft cap (Granite's logits_scaling)
}

#: Blocks whose tokens sequence parallelism divides by tp.
SP_SPLITS = (B.Norm, B.Residual, B.Dropout, B.LayerCheckpoint, B.SublayerInput, B.LearnedPositions,
             B.SinusoidalPositions, B.TokenTypes)


#: Blocks parallel folding runs unsplit on a rank's sequence-parallel tokens (the MoE layer's norm
#: and residual are SP_SPLITS already): no all-gather before them, no reduce-scatter after. A shared
#: expert is not one: Megatron-Core's SharedExpertMLP is a dense MLP on the attention's TP group
#: (`tp_group=pg_collection.tp`, megatron/core/transformer/moe/shared_experts.py at 0065cf8a), its
#: fc1 column-parallel (all-gathers the SP tokens), its fc2 row-parallel (reduce-scatters them),
#: d_s split by tp. Its gate (Qwen2-MoE) reads the un-gathered hidden_states, `linear(hidden_states,
#: self.gate_weight)`, and scales the reduce-scattered output: the SP tokens, its weight marked
#: `sequence_parallel` (gradient all-reduced over tp with the norms'). A latent mixture of experts'
#: projections (TELinear, parallel_mode "duplicated", megatron/core/transformer/moe/moe_layer.py
#: at d98e8a64dd) run as the router does, unsplit, their weights likewise marked `sequence_parallel`
#: (extensions/transformer_engine.py lines 1313-1316, same commit).
FOLDED_BLOCKS = (B.Router, B.LatentProjection, B.Experts, B.SharedExpertGate)


def kv_heads_per_rank(kv_heads: Any, tp: Any) -> Any:
    """The key/value heads one tensor-parallel rank holds, what every per-rank quantity reads (the
    k/v projection's weights and GEMM, the KV cache, the attention kernel's KV heads): kv_heads / tp
    where tp divides them; one where tp is a multiple of them, that head replicated over
    tp / kv_heads ranks, as vLLM serves it (QKVParallelLinear: num_kv_heads = 1 and
    num_kv_head_replicas = divide(tp_size, total_num_kv_heads) when tp_size >= total_num_kv_heads,
    vllm/model_executor/layers/linear.py at 0036d38; ModelConfig.get_num_kv_heads:
    max(1, total_num_kv_heads // tensor_parallel_size), vllm/config/model.py at 0052a5b). Layout
    checks (tensor_split.tensor_split_error) allow no other tp, and training only the first. Two ints give
    an int, anything else a sympy expression (max(1, kv_heads / tp) equals both cases)."""
    if isinstance(kv_heads, int) and isinstance(tp, int):
        return max(1, kv_heads // tp)
    return sp.Max(1, sp.sympify(kv_heads) / tp)


def mamba_split(tp: Any) -> dict[sp.Symbol, Any]:
    """A rank's share of a Mamba-2 mixer at tp ranks: H_m / tp heads and G_m / tp groups, as
    Megatron-Core's MambaMixer builds it (NVIDIA/Megatron-LM megatron/core/ssm/mamba_mixer.py at
    d98e8a64, MambaMixer.__init__): in_proj a ColumnParallelLinear whose z, x, B, C, dt blocks are
    each split (partition_sizes d_inner / tp, d_inner / tp, ngroups / tp x d_state twice,
    nheads / tp); conv1d's weight and bias over the rank's d_inner / tp + 2 ngroups / tp x d_state
    channels; dt_bias, A_log and D over its nheads / tp heads; the gated RMSNorm over its
    d_inner / tp channels in groups of d_inner / ngroups (group_size d_inner_local_tp //
    ngroups_local_tp: each group whole on one rank, no collective); out_proj a RowParallelLinear
    (input_is_parallel) from the rank's d_inner / tp. Nothing of the mixer is replicated (it asserts
    no bias). Every per-rank quantity of the block (parameters, FLOPs, saved bytes, the cache,
    mamba_kernels' shapes) is its expression at these values; tp must divide both
    (tensor_split.tensor_split_sizes)."""
    return {S.H_m: S.H_m / tp, S.G_m: S.G_m / tp}


def heads_split(tp: Any) -> dict[sp.Symbol, Any]:
    """A rank's attention heads at tp ranks (a symbol or an int): h / tp query heads, and
    kv_heads_per_rank key/value heads, of every layer kind: h_kv, and h_kvg where the full layers
    have their own (Gemma 4's num_global_key_value_heads, MiMo-V2-Flash's full layers), split as
    vLLM's QKVParallelLinear splits each layer's own total_num_kv_heads. A fresh dict (callers add
    to it) of expressions built once per tp: sympy's Max, which proves its arguments apart, cost
    a plan's first run more than a minute when built for every leaf of every rank shape."""
    return dict(_heads_split(tp))


@lru_cache(maxsize=64)
def _heads_split(tp: Any) -> dict[sp.Symbol, Any]:
    return {S.h: S.h / tp, S.h_kv: kv_heads_per_rank(S.h_kv, tp), S.h_kvg: kv_heads_per_rank(S.h_kvg, tp)}


def local_vocabulary(vocabulary: str) -> sp.Expr:
    """The rows of the vocabulary a tensor-parallel rank holds: Megatron pads V to a multiple of
    128 tp (make-vocab-size-divisible-by 128); DTensor's Shard(0) keeps ceil(V / tp) rows;
    "replicated" (gpt-fast's tp.py, which shards neither the embedding nor the head) all V."""
    if vocabulary == "replicated":
        return S.V
    if vocabulary == "pad128":
        return sp.ceiling(S.V / (128 * S.tp)) * 128
    return sp.ceiling(S.V / S.tp)


def substitution(block: B.Block, *, sp_on: bool, vocabulary: str, loss_parallel: bool,
                 encoder: bool, expert_split: str = "", etp: int = 1) -> dict[sp.Symbol, sp.Expr]:
    """The symbols to replace in one block's cost for its per-rank share (the outputs an op policy
    keeps of a block: that block's). expert_split (Layout.expert_split, costmodel/layout/experts.py):
    under parallel folding ("folded") the router and the routed experts run whole on the rank's n / tp
    sequence-parallel tokens; under expert tensor parallelism ("etp", etp ranks: Layout.etp) the router
    likewise, the routed experts on d_x / etp of each expert's width and the etp ranks' tokens
    all-gathered, n etp / tp (n where etp = tp)."""
    if isinstance(block, B.KeptOutputs):
        block = block.source
    if expert_split == "etp" and isinstance(block, B.Experts):
        return {S.d_x: S.d_x / etp, S.n: S.n * etp / S.tp}
    if expert_split and isinstance(block, FOLDED_BLOCKS):
        return {S.n: S.n / S.tp}
    kind = TP_SPLITS.get(type(block))
    subs: dict[sp.Symbol, sp.Expr] = {}
    if kind == "heads":
        subs = heads_split(S.tp)
    elif kind == "mamba":
        subs = mamba_split(S.tp)
    elif kind == "ffn":
        subs = {S.d_ff: S.d_ff / S.tp, S.d_s: S.d_s / S.tp, S.d_x: S.d_x / S.tp}
    elif (kind == "vocabulary" or (kind == "loss" and loss_parallel)) and vocabulary != "replicated":
        subs = {S.V: local_vocabulary(vocabulary)}
    if sp_on and isinstance(block, SP_SPLITS):
        subs[S.s if encoder else S.n] = (S.s if encoder else S.n) / S.tp
    return subs


def rank_leaf(leaf: Any, sp_on: bool) -> Any:
    """The leaf a rank runs before substitution: itself, but under sequence parallelism latent
    attention's with its latents computed on the rank's n / tp tokens (LatentAttention.latent_share).
    Megatron-Core builds linear_q_down_proj and linear_kv_down_proj as TELinear with
    parallel_mode="duplicated" (whole weights on every tp rank) and feeds them the un-gathered
    sequence-parallel hidden states; q_layernorm and kv_layernorm run on their outputs; the
    column-parallel up-projections then all-gather the latents (megatron/core/transformer/
    multi_latent_attention.py MLASelfAttention._qkv_down_projection and
    get_query_key_value_tensors, megatron/core/extensions/transformer_engine.py TELinear, at
    d98e8a64). What recomputation reruns follows: all of the new cost, or its recomputed part."""
    block = leaf.block
    if not (sp_on and isinstance(block, B.LatentAttention)):
        return leaf
    shared = replace(block, latent_share=1 / S.tp)
    cost = shared.cost()
    # (an op policy, --recompute torchtitan-op, is refused for latent attention by the tree itself)
    rerun = None if leaf.rerun is None else cost if leaf.rerun is leaf.cost else shared.recomputed_part()
    return replace(leaf, block=shared, cost=cost, rerun=rerun)


def column_inputs(block: B.Block, column_layers: str, gated: bool, expert_split: str = "") -> int:
    """How many column-parallel linears read this block's input (each all-reduces its input
    gradient in backward without SP): 1 for Megatron's fused layers; DTensor's separate q, k, v
    (3; 1 when the projection itself is fused) and gate, up (2; 1 ungated). A mixture of experts
    counts once for its routed and shared experts (they read the same input); latent attention's
    replicated down-projections none (its latents' gradient is all-reduced instead), a direct
    query projection one; under parallel folding the routed experts none and a shared expert its
    own (FOLDED_BLOCKS: it alone stays under tp); under expert tensor parallelism the same (the
    dispatcher gathers and scatters the routed experts' tokens: layout/communication.py)."""
    if expert_split and isinstance(block, FOLDED_BLOCKS):
        return 0
    if isinstance(block, B.QKVProjection):
        return 1 if column_layers == "fused" or block.fused else 3
    if isinstance(block, (B.FeedForward, B.Experts)) and (expert_split or not is_shared_expert(block)):
        return 1 if column_layers == "fused" or not gated else 2
    if isinstance(block, B.LatentAttention):
        return 0 if block.q_lora else 1
    return int(isinstance(block, B.Mamba2Mixer))  # its in_proj


def row_outputs(block: B.Block, expert_split: str = "") -> int:
    """Row-parallel outputs a block ends in (each all-reduced in forward without SP): the
    attention's output projection and the FFN's, a mixture of experts' routed and shared experts
    reduced together (under parallel folding the routed experts none, a shared expert its own), a
    Mamba-2 mixer's out_proj."""
    if expert_split and isinstance(block, FOLDED_BLOCKS):
        return 0
    if isinstance(block, (B.AttentionOutput, B.Mamba2Mixer)):  # a Mamba-2 mixer's out_proj
        return 1
    return int(isinstance(block, (B.FeedForward, B.Experts)) and (bool(expert_split) or not is_shared_expert(block)))


def is_shared_expert(block: B.Block) -> bool:
    return isinstance(block, B.FeedForward) and block.width == S.d_s


def local(expr: Any, subs: dict) -> sp.Expr:
    return sp.sympify(expr).xreplace(subs) if subs else sp.sympify(expr)


def split_inputs(matrices: Any, subs: dict) -> list[Any]:
    """The input widths K of a leaf's matrices ((rows, cols, count), Cost.matrices) that tensor
    parallelism splits at `subs` (row-parallel: the attention's and the FFN's output projections):
    a quantized format with groups along K needs whole groups of them on each rank."""
    return [cols for _, cols, _ in matrices if local(cols, subs) != cols]
