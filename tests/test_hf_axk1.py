"""SK Telecom's A.X K1 (costmodel/hf_more_types.py: model_type "axk1") against transformers 5.24's
AXK1ForCausalLM built from the same config dict: parameters (AXK1Config()'s defaults and two odd
configs), buffers, validate's rows under eager attention and sdpa, bytes saved for backward (the
post_mlp_layernorm after the experts in the expert layers), a decode step's and a prefill's FLOPs, the
cache after a prefill, and the configs refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import (assert_class_default_total, assert_counts_exact, family_checks,
                                 refused_in_one_line)
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="axk1", vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=6,
             num_hidden_layers=3, max_position_embeddings=64, intermediate_size=37, kv_lora_rank=12,
             qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=7, moe_intermediate_size=16, q_lora_rank=20,
             n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=3, bos_token_id=None,
             eos_token_id=None)

CONFIGS = {
    # AXK1Config's layout: one dense layer first (first_k_dense_replace's default 1), then experts
    # (8 of 16, top 3 in 2 of 4 groups, one shared), each MoE block ending in post_mlp_layernorm
    "axk1": dict(_BASE),
    # mlp_layer_types given (two dense layers), two shared experts, attention biases, a tied head
    "axk1-two-dense": dict(_BASE, mlp_layer_types=["dense", "dense", "sparse"], n_shared_experts=2,
                           attention_bias=True, tie_word_embeddings=True),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and AXK1Config()'s (skt/A.X-K1's shapes: 61 layers of hidden 7,168,
    64 heads of latent attention with a query rank of 1,536, 192 experts of 2,048 (top 8 in 4 of 8
    groups) and one shared after one dense layer of 18,432, vocabulary 163,840, untied), the meta
    models' (transformers 5.24)."""
    # The first: 2*99*48 + 48 + 3*(attention and its two norms) + 48*37*3 (the dense layer)
    # + 2*(8*48 router + 8*3*48*16 experts + 3*48*16 shared + 48 post_mlp_layernorm)
    assert_counts_exact(CONFIGS, [75_240, 57_204])
    assert_class_default_total("axk1", 518_983_052_288)


def test_the_output_norm_is_in_the_expert_layers_only():
    """One RMSNorm of d per expert layer: the counts less the same model without it (DeepSeek-V3's
    tree) are 48 per expert layer (2 and 1 of them)."""
    from costmodel import estimate
    from costmodel.hf import from_hf_config

    for name, expert_layers in (("axk1", 2), ("axk1-two-dense", 1)):
        cfg = from_hf_config(CONFIGS[name], name=name)
        assert cfg.moe_output_norm and cfg.n_decoder_layers - cfg.n_dense_layers == expert_layers
        without = estimate(cfg.replace(moe_output_norm=False)).to_dict()["params"]["total"]
        assert estimate(cfg).to_dict()["params"]["total"] - without == 48 * expert_layers


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs > 0


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate/hf_more_types.py writes the axk1 config.json
# back): parameters, matmul FLOPs, other ops, bytes saved, KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


# The class built from the axk1 dict itself: bytes saved for backward (eager) and the cache after a prefill.
test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_refused_in_one_line = refused_in_one_line(CONFIGS["axk1"], [
    ({"q_lora_rank": None}, "q_lora_rank null is not what axk1's class builds"),
    ({"moe_layer_freq": 2, "num_hidden_layers": 4},  # dense, dense, sparse, dense
     "mlp_layer_types with a dense layer after a sparse one is not modelled for axk1"),
])


def test_architectures_alone():
    fields = {k: v for k, v in CONFIGS["axk1"].items() if k != "model_type"}
    assert estimated_total(dict(fields, architectures=["AXK1ForCausalLM"]), "x") == 75_240


def test_moe_layer_freq_read_as_the_class_derives_it():
    """AXK1Config derives mlp_layer_types from first_k_dense_replace and moe_layer_freq when a config
    gives no list: at 3 layers, freq 2 and first 1 make dense, dense, sparse (the second odd config's
    layers, 57,204 parameters with its other fields)."""
    fields = {k: v for k, v in CONFIGS["axk1-two-dense"].items() if k != "mlp_layer_types"}
    fields.update(moe_layer_freq=2, first_k_dense_replace=1)
    assert estimated_total(fields, "x") == hf_meta_count(fields) == 57_204
