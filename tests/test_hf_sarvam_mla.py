"""Sarvam's MLA models (costmodel/hf_more_types.py: model_type "sarvam_mla") against transformers
5.24's DeepseekV3ForCausalLM built from a SarvamMLAConfig dict: parameters (SarvamMLAConfig()'s
defaults and two odd configs, one in the original sarvam-105b config's names), buffers, validate's
rows under eager attention and sdpa, bytes saved for backward, a decode step's and a prefill's
FLOPs, and the cache after a prefill."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_class_default_total, assert_counts_exact, family_checks
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="sarvam_mla", vocab_size=99, hidden_size=48, num_attention_heads=6,
             num_hidden_layers=3, max_position_embeddings=64, intermediate_size=37, kv_lora_rank=12,
             qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=7, moe_intermediate_size=16,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # SarvamMLAConfig's choices: queries without a low rank (q_lora_rank null), one expert group,
    # the first layer dense; 8 experts of 16, top 3, one shared.
    "sarvam_mla": dict(_BASE, n_routed_experts=8, num_experts_per_tok=3),
    # The original sarvam-105b config's names (num_experts, num_shared_experts: SarvamMLAConfig's
    # attribute_map) and its legacy head_dim (kv_lora_rank + qk_rope_head_dim, dropped by the
    # class); a query rank of 20, 4 groups (top 2), two shared experts, two dense layers,
    # attention biases, a tied head.
    "sarvam_mla-original": dict(_BASE, num_experts=8, num_shared_experts=2, head_dim=16, q_lora_rank=20,
                                n_group=4, topk_group=2, num_experts_per_tok=2, first_k_dense_replace=2,
                                attention_bias=True, tie_word_embeddings=True),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and SarvamMLAConfig()'s (sarvamai/sarvam-105b's shapes: 32 layers
    of hidden 4,096, 64 heads of latent attention without a query rank, 128 experts of 2,048 (top
    8) and one shared after one dense layer of 16,384, vocabulary 262,144, untied), the meta
    models' (transformers 5.24)."""
    # The first: 2*99*48 + 48 + 3*(6,612 attention: 48*6*10 + 48*(12+4) + 12 + 12*6*(6+7) + 6*7*48;
    # 96 norms) + 3*48*37 (the dense layer) + 2*(8*48 router + 8*3*48*16 experts + 3*48*16 shared)
    assert_counts_exact(CONFIGS, [77_244, 57_156])
    assert_class_default_total("sarvam_mla", 106_031_763_456)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs > 0


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate writes DeepSeek-V3's config.json back, the
# same class): parameters, matmul FLOPs, other ops, bytes saved, KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


# The class built from the sarvam_mla dict itself: bytes saved for backward (eager) and the cache after a
# prefill.
test_saved_bytes_and_cache_from_the_sarvam_config = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


def test_the_released_files_deepseek_yarn_rope_scaling_reads():
    """sarvam-105b's config.json writes rope_scaling {"type": "deepseek_yarn", ...}, which
    SarvamMLAConfig converts to YaRN's rope_parameters: the parameters and the rotary buffers (YaRN's
    inv_freq over qk_rope_head_dim) equal the class's."""
    pytest.importorskip("transformers")
    yarn = dict(type="deepseek_yarn", factor=40, original_max_position_embeddings=4096, beta_fast=32,
                beta_slow=1, mscale=1.0, mscale_all_dim=1.0)
    fields = dict(CONFIGS["sarvam_mla-original"], rope_scaling=yarn, rope_theta=10000)
    assert estimated_total(fields, "x") == hf_meta_count(fields) == 57_156
    ours, theirs = buffer_bytes_both(fields, "x")
    assert ours == theirs > 0
