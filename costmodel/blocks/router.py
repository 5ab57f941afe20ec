"""What a mixture-of-experts layer runs before its experts: the router (logits, scores, top k) and the
training-only noise some models multiply into the layer's input (ffn.py holds the dense FFN,
experts.py the experts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import symbols as S
from ..terms import FP32, INDEX, ZERO, Expr, dtype_bytes, elementwise_bytes, unless_fp32
from .base import Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost


@dataclass(frozen=True)
class InputNoise(Block):
    """Training-only noise on a mixture-of-experts layer's input (PhiMoE's input_jitter_noise,
    DBRX's moe_jitter_eps): facts.moe_input_noise_multiplies times, the input is
    multiplied in place by a fresh tensor of uniform noise in its dtype, which the multiply keeps
    for backward (the input's gradient is the incoming one times it). Nothing runs at inference."""

    tokens: Expr
    profile: Profile = Profile()
    title = "MoE input noise"

    def cost(self) -> Cost:
        values = self.profile.facts.moe_input_noise_multiplies * self.tokens * S.d
        return make_cost(elements=[("mul", values)], saved_bytes=S.e * values,
                         bytes_other=elementwise_bytes(values))


@dataclass(frozen=True)
class Router(Block):
    """A mixture-of-experts router: logits d -> E for every token, then the top k experts.

    "softmax" (Mixtral, Qwen2-MoE): an fp32 softmax over the logits and its top k. "sigmoid"
    (DeepSeek-V3): fp32 sigmoid scores, plus a bias for the choice only (e_score_correction_bias,
    a buffer of E in facts.score_bias_dtype), the top k within the best groups. "sigmoid_topk" (Llama 4): the top k
    of the logits scattered into a row of -inf, then an fp32 sigmoid over all E (the others 0);
    the scatter keeps the top-k indices the top-k keeps (one tensor). Kept for backward (FINDINGS 11.3): the
    fp32 probabilities, the int64 top-k indices, and where the weights are renormalised
    (renormalize) their fp32 sum and values; a router run in fp32 (facts.router_dtype) keeps an fp32
    copy of its input in a narrower model. Its input is the norm's output, kept there. The group
    choice keeps tensors too, but no path from the loss reaches them: they are freed (11.5).
    "sparsemixer" (PhiMoE's, k = 2; tests/test_hf_moe_extra.py's validate rows).
    "topk_then_sigmoid" (Kolibri-1's Kolibri1TopKRouter): the top k of the fp32 logits plus the bias
    buffer, then an fp32 sigmoid over the k chosen logits only (tests/test_hf_kolibri1.py).
    "topk_softmax" (gpt-oss's GptOssTopKRouter): logits with a bias (a parameter of E, `bias`),
    their top k, a softmax over those k in the router's dtype; it keeps the int64 top-k indices and
    the k weights (measured: tests/test_hf_gpt_oss.py's validate rows), in fp32 where
    facts.topk_softmax_fp32 (GraniteMoE's logits cast first; tests/test_hf_moe_extra.py).
    ERNIE 4.5 MoE's softmax router (facts.score_bias_parameter, facts.topk_sum_clamped) adds a
    frozen parameter of E, counted with the parameters, and clamps the top-k sum below, which
    keeps the clamp's fp32 input too (tests/test_hf_moe_extra.py); AFMoE's sigmoid router holds
    its bias as such a parameter too, not a buffer (tests/test_hf_new_moe.py).
    """

    tokens: Expr
    kind: str = "softmax"
    renormalize: bool = True
    profile: Profile = Profile()
    bias: bool = False  # a bias of E on the logits (gpt-oss)
    # False: no other block keeps the router's input (the pre-norm's output), so an fp32 router's
    # copy of it is kept whatever the activation dtype (the norm keeps no output then)
    input_kept: bool = True
    # LongCat-Flash: its zero-compute experts are routed to as the others are: logits d -> E + Z
    zero_experts: bool = False
    title = "router"

    @property
    def choices(self) -> Expr:
        """The experts it scores: E, or E + Z with zero-compute experts."""
        return S.E + S.Z if self.zero_experts else S.E

    @property
    def frozen_score_bias(self) -> bool:
        """A softmax or sigmoid router's score-correction bias held as a frozen parameter (ERNIE 4.5
        MoE's; AFMoE's expert_bias) rather than a buffer."""
        return self.kind in ("softmax", "sigmoid") and self.profile.facts.score_bias_parameter

    def cost(self) -> Cost:
        choices = self.choices
        forward, backward = linear_flops(self.tokens, S.d, choices)
        tokens = self.tokens
        if self.kind == "topk_softmax":
            # gpt-oss: topk over the logits keeps its int64 indices, the softmax over the k chosen
            # logits its output in the router's dtype; the weights need no renormalising.
            softmax = "fp32" if self.profile.facts.topk_softmax_fp32 else self.profile.facts.router_dtype
            saved = INDEX * tokens * S.k + dtype_bytes(softmax) * tokens * S.k
            elements = [("softmax", tokens * S.k)]
        elif self.kind == "topk_then_sigmoid":
            # Kolibri-1's router: the top k of the fp32 logits plus e_score_correction_bias (an add
            # over E kept nowhere), the chosen logits gathered (the gather keeps the logits it reads
            # and the int64 indices) and their fp32 sigmoid (kept: its output), renormalised (the
            # division keeps the sum).
            saved = (FP32 * tokens * choices + INDEX * tokens * S.k + FP32 * tokens * S.k
                     + (FP32 * tokens if self.renormalize else 0))
            elements = [("add", tokens * choices), ("sigmoid", tokens * S.k)]
        elif self.kind == "sparsemixer":
            # PhiMoE's sparsemixer, twice (one expert each, k = 2): a masked_fill keeps its bool
            # mask of the logits, the softmax (in the logits' dtype) its output, the choice its
            # int64 index, and PhimoeMultiplier its gathered weight (training: a random choice).
            saved = S.k * (tokens * choices * (1 + S.e) + INDEX * tokens + S.e * tokens)
            elements = [("softmax", S.k * tokens * choices)]
        else:
            scores = dtype_bytes(self.profile.facts.router_scores_dtype)
            saved = scores * tokens * choices + INDEX * tokens * S.k
            if self.profile.facts.router_softplus_scores:  # softplus's input beside sqrt's output
                saved += scores * tokens * choices
            if self.renormalize:
                saved += scores * tokens + scores * tokens * S.k
                if self.profile.facts.topk_sum_clamped:  # the clamp's input, beside its output
                    saved += FP32 * tokens
            elements = [("sigmoid" if self.kind == "sigmoid_topk" else self.kind, tokens * choices)]
            if self.profile.facts.router_softplus_scores:  # sqrt(softplus(logits)) in place of the sigmoid
                elements = [("softplus", tokens * choices), ("sqrt", tokens * choices)]
        if self.profile.facts.router_dtype == "fp32":
            saved += unless_fp32(FP32 * tokens * S.d) if self.input_kept else FP32 * tokens * S.d
            if self.profile.facts.router_weight_cast_fp32:  # the weight's fp32 copy, kept by the linear
                saved += unless_fp32(FP32 * choices * S.d)
        if self.profile.recomputes("moe_layer"):  # the MoE layer checkpointed whole: nothing kept
            saved = ZERO
        return make_cost(
            tensors=[Tensor(choices, S.d), *([Tensor(choices)] if self.bias else []),
                     *([Tensor(choices)] if self.frozen_score_bias else [])],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=elements,
            saved_bytes=saved,
            bytes_matmul=linear_bytes(tokens, S.d, choices),
            bytes_other=elementwise_bytes(tokens * choices),
            buffer_bytes=(dtype_bytes(self.profile.facts.score_bias_dtype) * choices
                          if (self.kind in ("sigmoid", "topk_then_sigmoid") or self.profile.facts.softmax_score_bias)
                          and not self.frozen_score_bias else 0),
        )


def router_reads_norm_alone(cfg: Any, facts: Any) -> bool:
    """Whether an fp32 router alone reads the pre-norm's output beside routed experts, which
    gather their rows anew, so that nothing keeps the output itself (Router.input_kept False;
    ERNIE 4.5 MoE without shared experts, facts.router_input_alone; measured:
    tests/test_hf_moe_extra.py's validate rows). cfg: the ModelConfig."""
    return (facts.router_input_alone and facts.router_dtype == "fp32" and not cfg.d_shared
            and cfg.d_latent is None and not facts.experts_every_token
            and cfg.norm_position == "pre" and not cfg.parallel_attention and cfg.input_norms
            and not cfg.post_sublayer_norm)
