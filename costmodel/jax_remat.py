"""JAX's rematerialisation policies as the JAX training recipes set them (--recompute jax-dots, jax-qkv,
jax-qkv-out): which of a layer's linear outputs jax.checkpoint keeps, as a rule over the tree's linear ops
(Block.linear_ops). costmodel/op_checkpoint.py applies the rule (what is kept, what reruns) with the
op policies' one machinery, so time and saved bytes follow from the same leaves.

The code:
- jax.checkpoint_policies (jax/_src/ad_checkpoint.py): dots_saveable(prim) is True for dot_general and
  conv_general_dilated, False for every other primitive; checkpoint_dots = dots_saveable;
  save_only_these_names(*names) saves only the values tagged by checkpoint_name with one of the names.
  A value the backward needs that the policy does not save is recomputed from the layer's input (the
  remat's argument, kept); a value the backward does not need is neither kept nor rerun.
- Praxis (google/praxis praxis/layers/checkpoint_policy.py, custom_policy): SAVE_DOT_ONLY ->
  jax.checkpoint_policies.checkpoint_dots ("jax-dots"); SAVE_QKV_OUT_PROJ -> save_only_these_names(
  'combined_qkv_proj', 'out_proj') ("jax-qkv-out"). Paxml's GPU configs with ENABLE_TE=1 run Transformer
  Engine's flax TransformerLayer (google/paxml paxml/contrib/gpu/scripts_gpu/te_helper.py, TEInstalledHelper
  .get_stack_transformer), whose MultiHeadAttention tags its fused QKV output 'combined_qkv_proj' and its
  output projection 'out_proj' (NVIDIA/TransformerEngine transformer_engine/jax/flax/transformer.py,
  checkpoint_name(qkv_proj, 'combined_qkv_proj') and checkpoint_name(out, 'out_proj')).
- MaxText (AI-Hypercomputer/maxtext MaxText/layers/models.py, Decoder: cfg.remat_policy; later decoders.py): "save_qkv_proj" ->
  save_only_these_names('query_proj', 'value_proj', 'key_proj', 'qkv_proj') ("jax-qkv");
  "save_dot_except_mlp" adds 'out_proj' ("jax-qkv-out"); "full" -> nothing_saveable (--recompute full).

Over the tree's leaves: kept, each linear op the rule names (its output, e.dtype bytes); rerun, every other
op of the layer up to its last saved tensor, a fused attention kernel too (cuDNN's or Transformer Engine's
fused attention is a custom call, neither a dot_general nor tagged, so no policy here keeps its output or
log-sum-exp: its forward runs again in backward, from the kept q, k, v); the layer's last linear (the FFN's
down projection) neither reruns nor is kept, its output read by no backward (jax.checkpoint saves only the
residuals the backward reads, and its rematerialised forward is dead-code eliminated to what the backward
reads: the closing residual add's output is the next layer's kept input; a dropout between them reads its
mask, which reruns from the key, not the projection's output: op_checkpoint.checkpointed_layer). Under "jax-dots" an eager
attention core's two batched products are dot_generals the policy would keep, which the leaves do not
split from its softmax: refused (JaxPolicy.needs_fused_attention).
Not modelled: a biased linear's bias add, a separate op after the dot_general in JAX (rerun in the model
with its kept product: tokens x d_out elements); XLA's fusion of the rerun elementwise ops into their
consumers (each rerun op is priced as the tree prices its forward).
"""

from __future__ import annotations

from dataclasses import dataclass

#: the names of the q, k and v projections (or their fused one) in the tree (blocks/attention.py)
QKV = frozenset({"q", "k", "v", "qkv"})


@dataclass(frozen=True)
class JaxPolicy:
    """A JAX remat policy over a layer's linear ops: `kept` the op names whose outputs it saves (None:
    every dot_general's); `needs_fused_attention` where an eager core's products would be kept."""

    name: str
    kept: frozenset[str] | None
    needs_fused_attention: bool = False

    def keeps(self, op_name: str) -> bool:
        return self.kept is None or op_name in self.kept


POLICIES = {
    "jax-dots": JaxPolicy("jax-dots", None, needs_fused_attention=True),
    "jax-qkv": JaxPolicy("jax-qkv", QKV),
    "jax-qkv-out": JaxPolicy("jax-qkv-out", QKV | {"out"}),
}
