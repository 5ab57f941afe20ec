"""Multi-query attention under tensor parallelism in training: the one key/value head replicated on
every tensor-parallel rank, as bigcode's Megatron-LM fork trains it (--attention-head-type
multiquery; StarCoderBase at TP 4). The one place for that rule: which training layouts take it
(tensor_split.tensor_split_error is asked as inference asks it, split.kv_heads_per_rank then gives each rank
the one head), and the collective it adds (layout/communication.py tensor_parallel_collectives).

bigcode-project/Megatron-LM at 7c325cd3, megatron/model/transformer.py ParallelAttention:
- lines 627-641: under 'multiquery' the query is a ColumnParallelLinear (h / tp heads a rank) and
  the key/value projection `self.key_value = get_linear_layer(hidden_size, 2 * kv_channels)`, a plain
  nn.Linear every rank holds whole (its weights and bias replicated: one head's k and v a rank, the
  per-rank parameters split.kv_heads_per_rank gives, which each rank's data-parallel group reduces);
- lines 778-793: every rank runs that projection on all its tokens (the per-rank FLOPs of one head,
  duplicated over the tp ranks), then, without sequence parallelism,
  copy_to_tensor_model_parallel_region(mixed_kv_layer): identity forward, an all-reduce of the
  [s, b, 2 x d_head] gradient over the tensor-parallel group in backward ("Reduce the KV gradients in
  the tensor-parallel direction ... the sum over attn heads happens in the attn weight gradient"),
  once a layer a micro-batch; the weight gradient is then the same on every rank (no further reduce).
Not modelled (refused in one line): sequence parallelism with it (the fork then runs the projection
on the rank's s / tp tokens, gathers its output with gather_from_sequence_parallel_region and
all-reduces the weight gradients once a step, megatron/optimizer/optimizer.py
allreduce_key_value_grads, lines 255-278), other frameworks, context parallelism, and more than one
key/value head below tp: Megatron-Core (NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/
attention.py lines 353-364 and 1851-1874, transformer_config.py 1458-1466: num_query_groups a
multiple or a divisor of tp) keeps linear_qkv split over the ranks (no replicated weights) and
all-gathers its whole output along the last dimension each forward, then slices the rank's group,
another rule.
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError


def replicates_kv_head(cfg: Any, layout: Any, inference: bool) -> bool:
    """Whether a training layout holds the one key/value head of a multi-query model on each of its
    tp ranks (bigcode's rule); refuses, in one line, the training layouts below the key/value heads
    that no modelled code runs (where the model's other sizes split: else tensor_split.tensor_split_error's
    refusal, in its order)."""
    heads = cfg.n_kv_heads
    if inference or layout.tp <= 1 or heads is None or heads % layout.tp == 0 or cfg.global_kv_heads is not None:
        return False
    from .tensor_split import tensor_split_error

    if tensor_split_error(cfg, layout.tp, inference=True) is not None:
        return False  # another size tp ranks cannot split: the layout's own refusal names it first
    if heads != 1 or layout.framework != "megatron" or layout.sp or layout.cp > 1:
        raise ConfigError(
            f"layout: tp = {layout.tp} does not divide the key/value heads ({heads}) of model {cfg.name}: training "
            "below the key/value heads is modelled for one head (multi-query) as bigcode's Megatron-LM replicates it "
            "(--framework megatron, no sequence or context parallelism); Megatron-Core's num_query_groups < tp "
            "(linear_qkv's output all-gathered) is not modelled; for inference use simulate without --train, "
            "serve or plan --serve.")
    return True


def kv_gradient_all_reduce(cfg: Any, phase: str, tp: int, boundary: int) -> int:
    """Bytes of the all-reduce each attention layer's backward runs over the tensor-parallel group
    for the replicated key/value projection's output gradient ([s, b, 2 x d_head], the activation
    dtype: `boundary`, one sublayer's input, x 2 d_head / d); 0 where the head is not replicated."""
    if phase != "train" or tp <= 1 or cfg.n_kv_heads != 1:
        return 0
    return boundary * 2 * cfg.d_head // cfg.d_model
