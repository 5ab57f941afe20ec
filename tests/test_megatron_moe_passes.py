"""Megatron-Core's routed-expert memory-bound passes (issue 18, Megatron-Bridge's MoE rows): the
all-to-all dispatcher's fused permute, sort-chunks and unpermute (facts.expert_dispatch
"alltoall_permute"), the fused gated activation (facts.fused_swiglu) and the experts' fp32 bias
pass (facts.expert_bias) in blocks/experts.py Experts, as exact bytes on a small odd layer, worked by hand from the code the facts cite
(NVIDIA/Megatron-LM d98e8a64dd token_dispatcher.py, experts.py at d98e8a64dd and 44151194; Transformer Engine d0067d0d
transformer_engine/common/triton/permutation.py)."""

from __future__ import annotations

import pytest

from costmodel import symbols as S
from costmodel.blocks import Experts
from costmodel.blocks.base import Profile

# 1 x 12 tokens, d 64, 6 experts of width 24, top 2: S = 24 slots; bf16 (2 bytes)
VALUES = {S.b: 1, S.n: 12, S.d: 64, S.d_x: 24, S.E: 6, S.k: 2, S.e: 2}


def _cost(impl: str, family: str, ep: int = 1, gpt_oss: bool = False):
    profile = Profile(impl=impl, family=family, expert_parallel=ep)
    cost = Experts(tokens=S.b * S.n, profile=profile, bias=gpt_oss, clamped=gpt_oss).cost()
    return tuple(int(x.xreplace(VALUES)) for x in (cost.bytes_other, cost.bytes_other_backward, cost.saved_bytes))


@pytest.mark.parametrize("ep, forward, backward", [
    # E = 6 > ep = 1: permute 2 (12 + 24) 64 = 4,608, the two sorts 2 x 2 x 24 x 64 = 12,288, the
    # unpermute 4,608: 21,504; the fused SwiGLU reads 2 x 24 x 24 and writes 24 x 24: 3,456.
    # Backward: each permutation's inverse, the same 21,504, and the activation's 2 x 3,456.
    (1, 3_456 + 21_504, 2 * 3_456 + 21_504),
    # E = ep = 6: one local expert a rank, no sort (num_local_experts > 1 is false):
    # 2 x 64 x (2 x 12 + 2 x 24) = 9,216
    (6, 3_456 + 9_216, 2 * 3_456 + 9_216),
])
def test_megatron_alltoall_dispatch_is_its_passes_in_bytes(ep, forward, backward):
    assert _cost("megatron", "qwen3_moe", ep)[:2] == (forward, backward)


def test_transformers_experts_keep_their_index_add_and_unfused_passes():
    """transformers (impl hf) is as it was: SwiGLU 3,456, the weighted index_add over the 24 x 64
    outputs read twice and written once, 2 x 3 x 1,536 = 9,216; backward twice the forward. It
    keeps the SiLU output (2 x 576 = 1,152 bytes) beside 3 x 8 x 24 int64 maps, 4 x 6 int32
    offsets, the gathered input, gate_up output, down input and output 2 x 24 x (128 + 72) = 9,600
    and bf16 routing weights 48: 11,400."""
    assert _cost("hf", "qwen3_moe") == (12_672, 25_344, 11_400)


def test_megatron_fused_activation_keeps_only_its_input():
    """Megatron's weighted_bias_swiglu_impl keeps the gate_up output only: 576 + 24 + 9,600 and
    fp32 routing weights 4 x 24 = 96: 10,296, the SiLU output's 1,152 not kept."""
    assert _cost("megatron", "qwen3_moe")[2] == 10_296


def test_gpt_oss_clamped_activation_fused_and_fp32_bias_under_megatron():
    """gpt-oss's clamped SwiGLU with biases. transformers: the op-by-op chain moves 16 x 2 x 576 =
    18,432, the two bias adds over 24 x (48 + 64) values read twice, written once 16,128, the
    index_add 9,216: 43,776. Megatron (facts expert_bias, fused_swiglu): the clamped activation
    with fc1's bias in one pass (weighted_bias_quick_geglu_impl) 3,456; fc2's bias by _apply_bias
    in fp32, b * p written 4, t + it read 2 + 4 written 4, the cat 4 + 4, the cast 4 + 2: 28 bytes
    a value of 24 x 64, 43,008; the dispatcher's 21,504: 67,968; backward 2 x 3,456, _apply_bias's
    autograd as measured (validate/gpt_oss_megatron_ops.py) 32 + 4 x 2 = 40 bytes a value, 61,440, and
    21,504: 89,856. Kept: transformers' four hidden tensors 4 x 1,152 are gone under Megatron
    (15,048 -> 10,488 with the bias gather's 8 x 24 int64 and fp32 routing weights)."""
    assert _cost("hf", "gpt_oss", gpt_oss=True) == (43_776, 87_552, 15_048)
    assert _cost("megatron", "gpt_oss", gpt_oss=True) == (3_456 + 43_008 + 21_504, 2 * 3_456 + 61_440 + 21_504, 10_488)
