"""DeepSeek-V3.2's lightning indexer (DeepSeek Sparse Attention), as transformers 5.24 runs it
(models/deepseek_v32/modeling_deepseek_v32.py, DeepseekV32Indexer): the block's parameters, matmul
FLOPs and its key cache. The sparse attention it feeds is the latent attention of mla.py and
attention.py's core, dense and masked (see LightningIndexer)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import Expr
from .attention import kv_cache_bytes
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_matrix


@dataclass(frozen=True)
class LightningIndexer(Block):
    """DeepseekV32Indexer: wq_b (r_q -> h_i d_i, from MLA's normed query latent), wk (d -> d_i, one
    key head) and its LayerNorm (weight and bias), weights_proj (d -> h_i, a weight per query head);
    RoPE on the first d_r of each query and key; the key cached (DynamicIndexedLayer.indexer_keys,
    b x tokens x d_i in the model's dtype). Scores: relu(q k^T) over every key (an fp32 matmul of
    2 h_i d_i FLOPs per query-key pair), summed over heads with the weights (a second matmul of
    2 h_i per pair), then the top index_topk keys per query.

    The forward runs under torch.no_grad: no gradient reaches its weights, and it keeps nothing for
    backward (backward FLOPs and saved bytes 0). transformers then folds the chosen keys into the
    mask of eager/sdpa attention, which still computes every score (n_q x n_k, the causal mask
    ignored as for every model here): the sparse attention costs what DeepSeek-V3's dense one does.
    """

    q_tokens: Expr  # queries scored (b n; b in a decode step)
    k_len: Expr  # keys each query scores (the prompt, or the cache c in a decode step)
    kv_tokens: Expr  # tokens whose indexer key is computed here
    cached_tokens: Expr  # tokens whose indexer key stays cached
    profile: Profile = Profile()
    title = "lightning indexer (DeepSeek Sparse Attention)"

    def projections(self) -> tuple[tuple[Expr, Expr, Expr], ...]:
        """(tokens, input width, output width) of wq_b, wk and weights_proj, in registration order."""
        return ((self.q_tokens, S.r_q, S.h_i * S.d_i), (self.kv_tokens, S.d, S.d_i),
                (self.q_tokens, S.d, S.h_i))

    def scoring_flops(self) -> Expr:
        """The two products over every query-key pair: q k^T per head (d_i), then the heads' weighted sum."""
        return 2 * self.q_tokens * self.k_len * S.h_i * (S.d_i + 1)

    def activation_products(self) -> tuple[tuple[Expr, Expr, Expr, Expr], ...]:
        """torch.matmul's batched products, one per query: its h_i heads against every key (fp32 in
        the code), then the heads' weights against those scores (scoring_flops, as GEMMs)."""
        return ((S.h_i, self.k_len, S.d_i, self.q_tokens), (1, self.k_len, S.h_i, self.q_tokens))

    def cost(self) -> Cost:
        wq_b, wk, weights = self.projections()
        projected = sum(linear_flops(*p)[0] for p in (wq_b, wk, weights))
        tensors = (Tensor(S.h_i * S.d_i, S.r_q), Tensor(S.d_i, S.d), Tensor(S.d_i), Tensor(S.d_i),
                   Tensor(S.h_i, S.d))
        return make_cost(
            tensors=tensors,
            matrices=[weight_matrix(d_in, d_out) for _, d_in, d_out in (wq_b, wk, weights)],
            matrix_tokens=[tokens for tokens, _, _ in (wq_b, wk, weights)],
            flops_matmul=projected + self.scoring_flops(),
            elements=[("layernorm", self.kv_tokens * S.d_i), ("relu", self.q_tokens * S.h_i * self.k_len)],
            kv_cache_bytes=kv_cache_bytes(S.b * self.cached_tokens * S.d_i, self.profile),
            bytes_matmul=sum(linear_bytes(*p) for p in (wq_b, wk, weights))
            + 4 * self.q_tokens * (S.h_i * S.d_i + self.k_len * (S.h_i + 1)) + 4 * S.b * self.k_len * S.d_i,
        )
