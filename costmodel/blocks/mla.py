"""Multi-head latent attention's projections (DeepSeek-V2/V3), naive or absorbed; its scores,
softmax and weighted sum are attention.py's blocks with latent=True.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import FP32, ZERO, Expr, elementwise_bytes
from .attention import kv_cache_bytes
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_and_bias, weight_matrix
from .norms import norm_saved


@dataclass(frozen=True)
class LatentAttention(Block):
    """Multi-head latent attention's projections (DeepSeek-V2/V3, modeling_deepseek_v3.py).

    Queries: d -> r_q (q_a_proj), an RMSNorm, r_q -> h d_h (q_b_proj); or d -> h d_h directly
    (q_proj) without a query rank. Keys and values: d -> r_kv + d_r (kv_a_proj_with_mqa), the r_kv
    latent normed (kv_a_layernorm) and cached with the d_r RoPE key; every attention step then
    up-projects every latent it attends to, r_kv -> h (d_h - d_r + d_v) (kv_b_proj), so a decode
    step re-projects the whole cache (up_tokens = b c). The cache per token per layer is r_kv + d_r
    values, one head.

    absorbed (how inference engines run it; DeepSeek-V2, arXiv:2405.04434, section 2.1.2: W_UK
    "can be absorbed into W_Q" and W_UV into W_O; vLLM's MLA attention backend,
    vllm/attention/backends/mla): kv_b_proj's two halves are applied to the queries and to the
    attention's output instead of the cache. Each query head's d_h - d_r non-rotated part goes
    through W_UK (-> r_kv) and each head's r_kv-wide weighted sum through W_UV (-> d_v): 2 q_tokens
    h r_kv (d_h - d_r + d_v) FLOPs, whatever the context; no latent is up-projected (up_tokens
    unused) and the core attends with one shared head of r_kv + d_r (values: its first r_kv).

    Kept for backward beyond the norms and the attention core: q_b's input (the normed query
    latent); kv_a_layernorm in fp32, whose input is a view of kv_a's whole r_kv + d_r output in an
    fp32 model and an fp32 copy of the latent otherwise, its rsqrt, its cast output and kv_b's
    input (the normed latent); at b = 1 the kept V is a view of kv_b's whole output (the keys'
    d_h - d_r part with it).
    """

    q_tokens: Expr
    kv_tokens: Expr  # tokens whose latent is computed here
    up_tokens: Expr  # tokens whose latent kv_b up-projects (all the keys attended)
    cached_tokens: Expr = ZERO
    q_lora: bool = True
    bias: bool = False  # attention_bias: q_a_proj and kv_a_proj_with_mqa (and o_proj)
    profile: Profile = Profile()
    absorbed: bool = False
    # The share of q_tokens and kv_tokens whose latents this rank computes: 1, or 1 / tp under
    # sequence parallelism (sequence_parallel_share), where Megatron-Core runs the down-projections
    # duplicated on the rank's sequence-parallel tokens and the latents' norms on them too; the
    # up-projections read the all-gathered latents of every token.
    latent_share: Expr = sp.Integer(1)
    title = "latent attention projections (MLA)"

    @property
    def q_latent_tokens(self) -> Expr:
        """The tokens whose query latent (q_a_proj and its norm) this rank computes."""
        return self.q_tokens * self.latent_share

    @property
    def kv_latent_tokens(self) -> Expr:
        """The tokens whose key/value latent (kv_a_proj_with_mqa and its norm) this rank computes."""
        return self.kv_tokens * self.latent_share

    def absorbed_flops(self, q_fwd: Expr, kv_fwd: Expr) -> Expr:
        """Forward FLOPs of the absorbed form: the query and latent projections, then W_UK on each
        query head's non-rotated part and W_UV on each head's latent-wide output."""
        return q_fwd + kv_fwd + 2 * self.q_tokens * S.h * S.r_kv * (S.d_h - S.d_r + S.d_v)

    def up_projections(self) -> tuple[tuple[Expr, Expr, Expr], tuple[Expr, Expr, Expr]]:
        """The up-projections as (tokens, input width, output width): the queries' (q_b_proj from
        the r_q latent, or q_proj from d without a query rank) and kv_b_proj (r_kv -> every head's
        non-rotated key and value)."""
        return ((self.q_tokens, S.r_q if self.q_lora else S.d, S.h * S.d_h),
                (self.up_tokens, S.r_kv, S.h * (S.d_h - S.d_r + S.d_v)))

    def dequantized_matrices(self) -> frozenset[int]:
        """Absorbed, kv_b_proj (the last of its matrices): vLLM's MLA backend multiplies 16-bit
        copies of it, W_UK and W_UV, as bmm's ("we currently do not have quantized bmm's which are
        needed for `W_UV` and `W_UK_T`, we just store fp16/bf16 copies and perform the bmm's in
        16-bit": MLACommonImpl.process_weights_after_loading, vllm/v1/attention/backends/mla/
        common.py, commit 37fa5c0). Naive, it is a Linear over the keys' latents, as vLLM's
        prefill path runs it (self.kv_b_proj(kv_c_normed)), quantized like the others."""
        return frozenset({3 if self.q_lora else 2}) if self.absorbed else frozenset()

    def norm_elements(self) -> list[tuple[str, Expr]]:
        """Its RMSNorms' elements: q_a_layernorm (with a query rank) and kv_a_layernorm."""
        return [("rmsnorm", self.q_latent_tokens * S.r_q if self.q_lora else 0),
                ("rmsnorm", self.kv_latent_tokens * S.r_kv)]

    def scale_elements(self) -> Expr:
        """LongCat-Flash's LoRA scales (facts.mla_lora_scales): the query's two parts times
        sqrt(d / r_q) and the normed latent times sqrt(d / r_kv), by Python floats: one product an
        element, none kept for backward."""
        if not self.profile.facts.mla_lora_scales:
            return ZERO
        return self.q_tokens * S.h * S.d_h + self.kv_latent_tokens * S.r_kv

    def cost(self) -> Cost:
        nope = S.d_h - S.d_r
        q_up, kv_up = self.up_projections()
        up_width = kv_up[2]
        q_up_tensor, kv_up_tensor = (Tensor(d_out, d_in) for _, d_in, d_out in (q_up, kv_up))
        q_up_fwd = linear_flops(*q_up)[0]
        if self.q_lora:
            q_tensors = (*weight_and_bias(S.d, S.r_q, self.bias), Tensor(S.r_q), q_up_tensor)
            q_down = [weight_matrix(S.d, S.r_q)]
            q_fwd = linear_flops(self.q_latent_tokens, S.d, S.r_q)[0] + q_up_fwd
        else:
            q_tensors = (q_up_tensor,)
            q_down = []
            q_fwd = q_up_fwd
        kv_fwd = linear_flops(self.kv_latent_tokens, S.d, S.r_kv + S.d_r)[0]
        up_fwd = linear_flops(*kv_up)[0]
        forward = q_fwd + kv_fwd + up_fwd
        tensors = (*q_tensors, *weight_and_bias(S.d, S.r_kv + S.d_r, self.bias), Tensor(S.r_kv), kv_up_tensor)
        absorbed = self.absorbed_flops(q_fwd, kv_fwd)
        # Activations the projections read and write besides the weights: naive, kv_b reads every
        # latent attended and writes its keys and values; absorbed, W_UK reads the queries'
        # non-rotated parts and writes latent-wide queries, W_UV reads the latent-wide outputs and
        # writes d_v-wide ones.
        up_bytes = (S.e * self.q_tokens * S.h * (nope + 2 * S.r_kv + S.d_v) if self.absorbed
                    else S.e * self.up_tokens * (S.r_kv + up_width))
        # kv_b_proj last (dequantized_matrices): its rows are the keys it up-projects, or,
        # absorbed, the queries W_UK and W_UV multiply (the same FLOPs).
        return make_cost(
            tensors=tensors,
            matrices=[*q_down, weight_matrix(*q_up[1:]), weight_matrix(S.d, S.r_kv + S.d_r),
                      weight_matrix(*kv_up[1:])],
            matrix_tokens=[*([self.q_latent_tokens] if self.q_lora else []), q_up[0], self.kv_latent_tokens,
                           self.q_tokens if self.absorbed else self.up_tokens],
            variants=[("absorbed", absorbed)],
            flops_matmul=absorbed if self.absorbed else forward,
            flops_matmul_backward=2 * forward,
            elements=[*self.norm_elements(), ("mul", self.scale_elements())],
            bytes_other=elementwise_bytes(self.scale_elements()),
            saved_bytes=self.saved(),
            kv_cache_bytes=kv_cache_bytes(S.b * self.cached_tokens * (S.r_kv + S.d_r), self.profile),
            bytes_matmul=(S.e * sp.Add(*(t.elements for t in tensors))
                          + S.e * (self.q_latent_tokens if self.q_lora else self.q_tokens) * S.d
                          + S.e * self.q_tokens * S.h * S.d_h
                          + S.e * self.kv_latent_tokens * (S.d + S.r_kv + S.d_r) + up_bytes),
        )

    def latent_gradient_bytes(self) -> Expr:
        """The latents read by the head-split up-projections (q_b_proj and kv_b_proj): under tensor
        parallelism each rank's backward gives a partial gradient of them, which is all-reduced."""
        return S.e * (self.q_tokens * S.r_q if self.q_lora else ZERO) + S.e * self.up_tokens * S.r_kv

    def replicated_params(self) -> Expr:
        """Its parameters tensor parallelism leaves whole on every rank: the down-projections (with
        their biases) and the latents' norms, all but the up-projections. Under sequence
        parallelism each rank's gradient of them is its own tokens' (TELinear's "duplicated" mode
        marks the weights `sequence_parallel`, all-reduced over tp with the norms' by
        finalize_model_grads._allreduce_non_tensor_model_parallel_grads, Megatron-LM d98e8a64)."""
        (_, q_in, q_out), (_, kv_in, kv_out) = self.up_projections()
        return sp.Add(*(t.elements for t in self.cost().tensors)) - q_in * q_out - kv_in * kv_out

    def sequence_parallel_gathers(self) -> tuple[Expr, Expr, Expr]:
        """Bytes of each all-gather over the sequence-parallel ranks a forward runs (each its
        gathered tensor, every token), as Megatron-Core's MLASelfAttention runs it with
        Transformer Engine (megatron/core/transformer/multi_latent_attention.py at d98e8a64):
        linear_q_up_proj, column-parallel, gathers the normed r_q-wide query latent (without a
        query rank linear_q_proj gathers the d-wide hidden states); linear_kv_up_proj the normed
        r_kv-wide latent; gather_from_sequence_parallel_region the d_r-wide RoPE key, which every
        head reads. The backward reduce-scatters the gradient of each."""
        return (S.e * self.q_tokens * (S.r_q if self.q_lora else S.d), S.e * self.kv_tokens * S.r_kv,
                S.e * self.kv_tokens * S.d_r)

    def recomputed_part(self) -> Cost | None:
        """What recomputation reruns of these projections (None: nothing): its own norms
        (Profile.recomputes("norms"), or with the up-projections, inside whose checkpoint they run:
        spec.RECOMPUTED_PARTS) and the up-projections, q_b_proj (q_proj without a query
        rank) and kv_b_proj (Profile.recomputes("up_projections")); never the down-projections."""
        norms, up = self.profile.recomputes("norms"), self.profile.recomputes("up_projections")
        if not (norms or up):
            return None
        elements = self.norm_elements()
        if not up:
            return make_cost(elements=elements)
        projections = self.up_projections()
        return make_cost(
            matrices=[weight_matrix(d_in, d_out) for _, d_in, d_out in projections], elements=elements,
            matrix_tokens=[tokens for tokens, _, _ in projections],
            flops_matmul=sp.Add(*(linear_flops(*p)[0] for p in projections)),
            bytes_matmul=sp.Add(*(linear_bytes(*p) for p in projections)))

    def saved(self) -> Expr:
        """Kept for backward (the class's docstring). Recomputed up-projections (recompute
        "deepseek" or "mla-up-proj", whose latent norms rerun with them) keep only their checkpoint's inputs: the
        latents before their norms, q_a_proj's r_q-wide output (without a query rank, q_proj's
        d-wide input) and kv_a_proj's whole r_kv + d_r output (the RoPE key with it); the queries,
        keys and values they output are rebuilt (AttentionCore.inputs_rebuilt). (No recomputation
        reruns the norms without the up-projections: spec.RECOMPUTED_PARTS.)"""
        facts, tokens = self.profile.facts, self.kv_latent_tokens
        if self.profile.recomputes("up_projections"):  # the RoPE key all-gathered under SP: every token's
            return (S.e * self.q_latent_tokens * (S.r_q if self.q_lora else S.d) + S.e * tokens * S.r_kv
                    + S.e * self.kv_tokens * S.d_r)
        kernel = self.profile.kernel()
        saved = ZERO
        if self.q_lora:  # q_a_layernorm, its output kept by q_b_proj
            saved += norm_saved("rmsnorm", self.q_latent_tokens, S.r_q, facts)
        if facts.norm_dtype == "fp32":
            latent_input = sp.Piecewise((FP32 * tokens * (S.r_kv + S.d_r), sp.Eq(S.e, FP32)),
                                        (FP32 * tokens * S.r_kv, True))
            saved += latent_input + FP32 * tokens + S.e * tokens * S.r_kv
        else:
            saved += S.e * tokens * (2 * S.r_kv + S.d_r) + S.e * tokens
        saved += S.e * tokens * S.r_kv  # kv_b_proj's input: the normed latent (under SP its shard, regathered)
        return saved + kernel.value_view_saved(S.e * self.up_tokens * S.h * (S.d_h - S.d_r))
