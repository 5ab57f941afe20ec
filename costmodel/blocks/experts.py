"""A mixture of experts' expert blocks: the routed experts (and the expected count a batch touches),
experts every token runs, nemotron_h's latent projections (moe_latent_size) and Qwen2-MoE's
shared-expert gate (router.py holds the router, ffn.py the dense FFN).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import symbols as S
from ..terms import INDEX, ZERO, Expr, dtype_bytes, elementwise_bytes, tiled_bytes
from .base import (Block, Cost, LinearOp, Profile, Tensor, linear_bytes, linear_flops, make_cost,
                   weight_and_bias, weight_matrix)


#: Tokens per expert (T / E) beyond which experts_touched stops counting them: the share an expert
#: misses, (1 - k/E)^T <= exp(-k T / E), is at most e^-40 < 2^-53 there (k >= 1), below double
#: precision, and capping the exponent spares an exact power of a training step's millions of tokens.
SATURATING_TOKENS_PER_EXPERT = 40


def experts_touched(tokens: Expr) -> Expr:
    """The expected number of distinct experts that T = `tokens` tokens route to, each token
    choosing its k distinct experts of E uniformly at random, independently of the others (what a
    load-balanced router gives on average; the occupancy expectation of balls into bins): a token
    misses a given expert with probability C(E-1, k) / C(E, k) = 1 - k/E, so

        E [1 - (1 - k/E)^T]

    experts are touched: k exactly at T = 1 (a batch-1 decode step), E to double precision once
    T k >> E (a prefill, a training step), and fewer than the worst case min(E, T k) in between
    (DeepSeek-V3, E = 256, k = 8, at 25 tokens: 140.2, not 200). Real routers are imbalanced, which
    concentrates the slots on fewer experts: the count they touch is lower still, so this is an
    upper estimate of the typical count at a batch, no longer the worst case. The exponent stops
    at SATURATING_TOKENS_PER_EXPERT x E tokens (the same count in double precision)."""
    return S.E * (1 - (1 - S.k / S.E) ** sp.Min(tokens, SATURATING_TOKENS_PER_EXPERT * S.E))


@dataclass(frozen=True)
class Experts(Block):
    """The routed experts of a mixture-of-experts layer: E SwiGLU FFNs of inner width d_x, stored
    as gate_up_proj (E, 2 d_x, d) and down_proj (E, d, d_x), run by torch._grouped_mm over the
    S = tokens k routed slots (transformers' default experts kernel, integrations/moe.py).

    Without a capacity limit every slot runs one expert, so the FLOPs are S times one expert's,
    whatever the routing; the load per expert (expert_flops) is what the routing decides. Kept for
    backward (FINDINGS 11.3): the int64 slot permutation, its inverse and the token of each slot
    (24 S), the int32 group offsets (one per expert, shared by both grouped products), the gathered
    input (S, d), the gate_up output (SiLU keeps its gate half, a view of all of it), the SiLU
    output, the product, the down output and the routing weights (facts.routing_weights_dtype).
    With DeepSeek-V3's FP8 activations (Profile.fp8_activations) the gathered input and the
    gate_up output (SwiGLU's input) are kept in FP8 with their tiles' scales, the SiLU output and
    the product not at all (recomputed_part).
    A token uses k of the E experts: the other E - k are its inactive parameters.
    Not gated (nemotron_h's NemotronHExperts: up_proj (E, d_x, d), a squared ReLU, down_proj): two
    matrices an expert; its parameters and matmul FLOPs are proven, its kept bytes are SwiGLU's
    accounting with one d_x-wide input (not measured). width: what the experts read and write, d,
    or a latent d_l (nemotron_h's moe_latent_size: NemotronHExperts' up_proj (E, d_x, d_l); the
    tokens are dispatched, gathered and combined in it, LatentProjection before and after).
    """

    tokens: Expr
    profile: Profile = Profile()
    bias: bool = False  # gate_up and down biases per expert, (E, 2 d_x) and (E, d) (gpt-oss)
    clamped: bool = False  # gpt-oss's clamped SwiGLU in place of SiLU(gate) * up
    gated: bool = True  # False: up, relu2, down (nemotron_h)
    width: Expr = S.d  # the experts' input and output width (S.d_l: a latent MoE)
    # LongCat-Flash: Z zero-compute experts beside the E, each a gate_up row block never run (the class
    # allocates E + Z of them); every slot is taken to land on a real expert (the FLOPs' upper bound)
    zero_experts: bool = False
    title = "routed experts"

    @property
    def inputs(self) -> int:
        """The d -> d_x matrices of one expert: gate and up, or up alone."""
        return 2 if self.gated else 1

    def recomputed_part(self) -> Cost | None:
        """What reruns in backward: with DeepSeek-V3's FP8 activations (Profile.fp8_activations;
        report section 3.3.3, "we cache the inputs of the SwiGLU operator and recompute its output
        in the backward pass") the SiLU and the product over the S d_x hidden values; under
        Megatron-Core's moe_act recomputation (Profile.recomputes("moe_act"), spec.RECOMPUTED_PARTS:
        TEGroupedMLP's activation under CheckpointWithoutOutput) the gated activation as glu runs
        it, once more; else nothing."""
        if self.profile.recomputes("moe_act"):
            elements, _, moved = self.glu(self.tokens * S.k)
            return make_cost(elements=elements, bytes_other=moved)
        if not self.profile.fp8_activations:
            return None
        hidden = self.tokens * S.k * S.d_x
        return make_cost(elements=[("silu", hidden), ("mul", hidden)],
                         bytes_other=elementwise_bytes(hidden, reads=2))

    def expert_flops(self, routed_tokens: Expr) -> Expr:
        """Forward matmul FLOPs of one expert given the tokens routed to it."""
        return 2 * routed_tokens * (self.inputs + 1) * self.width * S.d_x

    def glu(self, slots: Expr) -> tuple[list[tuple[str, Expr]], Expr, Expr]:
        """(elements, bytes saved, traffic) of the gating between the two grouped products over
        the slots' d_x hidden values. SwiGLU: SiLU(gate) * up, SiLU keeping its gate (a view of
        the gate_up output, counted with it) and the product both factors. gpt-oss's clamped
        SwiGLU (GptOssExperts._apply_gate): two clamps (each keeps its input, views of the
        gate_up output), gate * alpha, a sigmoid (keeps its output), gate * sigmoid (keeps the
        clamped gate), up + 1, and (up + 1) * glu (keeps both): four hidden tensors beside the
        down product's input, where SwiGLU keeps one. A fused gated activation (facts.fused_swiglu:
        Megatron-Core's weighted_bias_swiglu_impl, and weighted_bias_quick_geglu_impl for the
        clamped one under bias_activation_fusion, megatron/core/transformer/moe/experts.py
        TEGroupedMLP bias_act_func) reads the gate_up output and writes its product in one pass,
        and keeps only its input (the gate_up output, counted with it)."""
        hidden = slots * S.d_x
        if not self.gated:  # relu2: a relu, then its square
            return [("relu", hidden), ("mul", hidden)], S.e * hidden, elementwise_bytes(hidden)
        elements = ([("silu", hidden), ("mul", hidden)] if not self.clamped else
                    [("clamp_max", hidden), ("clamp", hidden), ("mul", 3 * hidden), ("sigmoid", hidden),
                     ("add", hidden)])
        if self.profile.facts.fused_swiglu:
            return elements, ZERO, elementwise_bytes(hidden, reads=2)
        if not self.clamped:
            if self.profile.facts.swiglu_clamped_copies:  # the clamped gate and up, kept
                return ([*elements, ("clamp_max", hidden), ("clamp", hidden)], 3 * S.e * hidden,
                        elementwise_bytes(hidden, reads=2))
            return elements, S.e * hidden, elementwise_bytes(hidden, reads=2)
        return (elements, 4 * S.e * hidden,
                2 * elementwise_bytes(hidden) + 2 * elementwise_bytes(hidden)
                + elementwise_bytes(hidden) + 2 * elementwise_bytes(hidden, reads=2))

    def bias_bytes(self, slots: Expr) -> tuple[Expr, Expr]:
        """(forward, backward) traffic of adding the two grouped products' biases (facts.expert_bias).
        "add" (transformers): each bias added in place to its product's output, 2 d_x + d values a slot
        read twice and written once, backward twice that. "megatron" (TEGroupedMLP, the fact's source):
        fc1's inside the fused activation (its E x 2 d_x values left out); fc2's by _apply_bias: b * p in
        fp32 (4), the output read (e) plus that product read (4) and the sum written in fp32 (4), the cat
        (4 + 4), the cast back (4 + e): (24 + 2 e) bytes a value of the S d; its autograd as measured
        (validate/gpt_oss_megatron_ops.py): the gradient cast to fp32 (e + 4), per expert the cast back
        (4 + e), grad * p (8) and its row sum (4), grad * b (8) and its sum (4), the split's cat (2 e): 32 + 4 e."""
        if self.profile.facts.expert_bias == "megatron":
            return (24 + 2 * S.e) * slots * self.width, (32 + 4 * S.e) * slots * self.width
        forward = elementwise_bytes(slots * (2 * S.d_x + self.width), reads=2)
        return forward, 2 * forward

    def dispatch_bytes(self) -> tuple[Expr, Expr | None]:
        """(forward, backward) traffic of taking the S = T k slots of T tokens to their experts and
        back, as the code does it (facts.expert_dispatch); backward None: the convention, twice.
        "index_add" (transformers): the experts' outputs times the routing weights, then index_add
        into the layer's output, S d values read twice and written once; "loop" (DBRX's loop over
        the experts hit, one matmul each) and "parallel_experts" (JetMoE's) move the same. "alltoall_permute"
        (Megatron-Core's all-to-all dispatcher under moe_permute_fusion, the fact's source): the
        permute reads T d and writes S d; with more than one local expert (E > ep) the received
        chunks are sorted by expert (S d read, S d written) and sorted back after the experts (the
        same); the unpermute reads S d and writes T d: e d (2 T + 6 S), e d (2 T + 2 S) with one
        local expert. Each pass's backward is its inverse permutation, the same bytes. Left out:
        the routing weights, row maps and counts that travel beside (at most 4 bytes a slot)."""
        slots = self.tokens * S.k
        if self.profile.facts.expert_dispatch in ("index_add", "loop", "parallel_experts"):
            return elementwise_bytes(slots * self.width, reads=2), None
        passes = sp.Piecewise((6, S.E > self.profile.expert_parallel), (2, True))
        moved = S.e * self.width * (2 * self.tokens + passes * slots)
        return moved, moved

    def dispatcher_saved_bytes(self) -> Expr:
        """Of the bytes cost() keeps, those on the slots of the tokens this rank routes, which stay
        with it: the slot indices (3 INDEX a slot), the routing weights and the down output the
        combine weights (it multiplies the probabilities after the experts' output is back home).
        Under expert tensor parallelism the rest (the gathered input, gate_up, the down input) is on
        the etp ranks' gathered rows; these are not: Megatron-Core's MoEAlltoAllTokenDispatcher
        reduce-scatters the down output over the etp group and all-to-alls it home before unpermute
        applies the probabilities (token_dispatcher.py token_unpermutation at core_v0.12.0: "Unpermutation
        1: AlltoAll output to output", unpermute(..., probs=self.probs)). Measured on gloo:
        validate/distributed/expert_tensor_parallel.py measure_expert_saved, layout/parts.py takes it."""
        if self.profile.recomputes("moe_layer"):
            return ZERO
        return self._dispatcher_bytes(self.tokens * S.k)

    def _dispatcher_bytes(self, slots: Expr) -> Expr:
        return (3 * INDEX + dtype_bytes(self.profile.facts.routing_weights_dtype)) * slots + S.e * slots * self.width

    def cost(self) -> Cost:
        slots = self.tokens * S.k
        forward = self.expert_flops(slots)
        weights = dtype_bytes(self.profile.facts.routing_weights_dtype)
        # the slot indices, the routing weights and the down output (dispatcher_saved_bytes), the group offsets
        saved = self._dispatcher_bytes(slots) + 4 * S.E
        if self.profile.facts.expert_dispatch in ("loop", "parallel_experts"):
            # DBRX's loop over the experts hit (no grouped_mm): each expert's rows from one
            # nonzero() (two int64 a slot), its gathered input, and its weighted output too (index_add
            # keeps its source); JetMoE's JetMoeParallelExperts the same: the sort's int64 order (the
            # gates' gather keeps it) and each slot's token (the inputs' gather and index_add keep it)
            saved = 2 * INDEX * slots + weights * slots + 2 * S.e * slots * self.width
        glu_elements, glu_saved, glu_moved = self.glu(slots)
        if self.profile.fp8_activations:  # the gathered input and SwiGLU's input in FP8 (the down output above)
            saved += tiled_bytes(slots, self.width) + tiled_bytes(slots, 2 * S.d_x)
        else:  # the gathered input, the gate_up output, the gating, the down input (the down output above)
            saved += S.e * slots * (self.width + (self.inputs + 1) * S.d_x) + glu_saved
            if self.profile.recomputes("moe_act"):  # the down input discarded, rebuilt (recomputed_part)
                saved -= S.e * slots * S.d_x + glu_saved
        one_expert = (self.inputs + 1) * self.width * S.d_x
        biases = 2 * S.d_x + self.width if self.bias else ZERO
        # The experts that get a slot, each read once. Under expert parallelism a rank's E / ep
        # experts take the slots of ep ranks' tokens: (E / ep) (1 - (1 - k/E)^(ep T)) of them.
        ep = self.profile.expert_parallel
        read = experts_touched(self.tokens * ep) / ep
        elements = [*glu_elements, ("mul", slots * self.width), ("add", slots * self.width)]
        stored = S.E + S.Z if self.zero_experts else S.E  # gate_up's experts (LongCat's zero ones too)
        tensors = [Tensor(stored, self.inputs * S.d_x * self.width), Tensor(S.E, self.width * S.d_x)]
        if self.bias:  # registered gate_up_proj, its bias, down_proj, its bias
            tensors = [tensors[0], Tensor(S.E, 2 * S.d_x), tensors[1], Tensor(S.E, self.width)]
            # each bias gathered per slot by the sorted expert ids (kept: one int64 per slot),
            # added in place to its product's output
            saved += INDEX * slots
            elements.append(("add", slots * (2 * S.d_x + self.width)))
        biases_moved, biases_back = self.bias_bytes(slots) if self.bias else (ZERO, ZERO)
        dispatch, dispatch_back = self.dispatch_bytes()
        if self.profile.recomputes("moe_layer"):  # the MoE layer checkpointed whole: nothing kept
            saved = ZERO
        return make_cost(
            tensors=tensors,
            # each expert's own matrices
            matrices=[weight_matrix(self.width, self.inputs * S.d_x, S.E),
                      weight_matrix(S.d_x, self.width, S.E)],
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            elements=elements,
            saved_bytes=saved,
            inactive_params=(S.E - S.k) * (one_expert + biases) + (stored - S.E) * self.inputs * S.d_x * self.width,
            # Traffic: each expert that gets a slot reads its weights once (experts_touched: the
            # expected count under uniform random top-k routing; k at one token, all E at many).
            bytes_matmul=S.e * (read * one_expert + slots * (2 * self.width + (self.inputs + 1) * S.d_x)),
            matrix_read_share=read / S.E,
            bytes_other=glu_moved + biases_moved + dispatch,
            backward_bytes_other=None if dispatch_back is None else 2 * glu_moved + biases_back + dispatch_back,
        )


@dataclass(frozen=True)
class EveryTokenExperts(Experts):
    """Routed experts that run every token through every expert (facts.experts_every_token,
    Llama 4's Llama4TextExperts): the input repeated E times and multiplied by each token's
    router score (a column of E tokens), then bmm by gate_up_proj (E, d, 2 d_x), SiLU times the
    up half, bmm by down_proj (E, d_x, d), and the E outputs summed. S = tokens E slots, so the
    FLOPs are E / k times the routed ones whatever the routing. Kept for backward: the repeated
    input and the score column (the multiply's two factors), its product (the first bmm's input),
    the gate_up output (SiLU's input and the up half, one tensor), the SiLU output and the product
    (the second bmm's input): e S (2 d + 1 + 4 d_x). A token still uses k experts' weights (its
    active parameters); every expert's matrices are read."""

    title = "routed experts (every token)"

    def cost(self) -> Cost:
        slots = self.tokens * S.E
        forward = self.expert_flops(slots)
        one_expert = 3 * S.d * S.d_x
        return make_cost(
            tensors=[Tensor(S.E, 2 * S.d_x * S.d), Tensor(S.E, S.d * S.d_x)],
            matrices=[weight_matrix(S.d, self.inputs * S.d_x, S.E), weight_matrix(S.d_x, S.d, S.E)],
            flops_matmul=forward,
            flops_matmul_backward=2 * forward,
            elements=[("silu", slots * S.d_x), ("mul", slots * S.d_x + slots * S.d),
                      ("add", slots * S.d)],
            saved_bytes=S.e * slots * (2 * S.d + 1 + 4 * S.d_x),
            inactive_params=(S.E - S.k) * one_expert,
            bytes_matmul=S.e * (S.E * one_expert + slots * (2 * S.d + 3 * S.d_x)),
            # the repeat, the scaling, SiLU and the product, the sum of the E outputs
            bytes_other=elementwise_bytes(slots * S.d) + elementwise_bytes(slots * S.d, reads=2)
            + elementwise_bytes(slots * S.d_x, reads=2) + elementwise_bytes(slots * S.d),
        )


@dataclass(frozen=True)
class LatentProjection(Block):
    """A latent mixture of experts' projection around its routed experts (nemotron_h's
    moe_latent_size, transformers 5.24 NemotronHMoE): fc1_latent_proj d -> d_l on every token
    before the experts, fc2_latent_proj d_l -> d on their combined output after; nn.Linear with
    mlp_bias. The router and the shared expert read the d-wide input. Kept for backward: fc2 its
    d_l-wide input; fc1's input is the layer's normed input, which the norm counts (not measured:
    blocks/mamba.py's layers are compared for parameters, FLOPs and caches only). recomputed:
    Megatron-Core's "moe" recomputation reruns both with their MoE layer (MoELayer.preprocess and
    postprocess run inside its custom_forward), so fc2 keeps nothing then."""

    tokens: Expr
    d_in: Expr
    d_out: Expr
    bias: bool = False
    input_kept: bool = False  # fc2: its input is the experts' output, kept here
    recomputed: bool = False  # rerun with its MoE layer (spec.RECOMPUTED_PARTS "moe_layer")
    title = "latent projection"

    def linear_ops(self) -> tuple[LinearOp, ...]:
        return (LinearOp("latent", self.tokens, self.d_in, self.d_out, self.bias),)

    def cost(self) -> Cost:
        forward, backward = linear_flops(self.tokens, self.d_in, self.d_out)
        return make_cost(
            tensors=weight_and_bias(self.d_in, self.d_out, self.bias),
            matrices=[weight_matrix(self.d_in, self.d_out)],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            saved_bytes=S.e * self.tokens * self.d_in if self.input_kept and not self.recomputed else ZERO,
            bytes_matmul=linear_bytes(self.tokens, self.d_in, self.d_out),
        )


@dataclass(frozen=True)
class SharedExpertGate(Block):
    """Qwen2-MoE's gate on the shared expert: sigmoid(x w), w of d -> 1, times the shared expert's
    output. The product keeps both factors: the sigmoid (one per token) and that output."""

    tokens: Expr
    title = "shared expert gate"

    def cost(self) -> Cost:
        forward, backward = linear_flops(self.tokens, S.d, 1)
        return make_cost(
            tensors=[Tensor(sp.Integer(1), S.d)],  # nn.Linear(d, 1): one row of d
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("sigmoid", self.tokens), ("mul", self.tokens * S.d)],
            saved_bytes=S.e * self.tokens + S.e * self.tokens * S.d,
            bytes_matmul=linear_bytes(self.tokens, S.d, 1),
            bytes_other=elementwise_bytes(self.tokens * S.d, reads=2),
        )
