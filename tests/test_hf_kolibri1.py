"""Aleph Alpha's Kolibri-1 (costmodel/hf_more_types.py: model_type "kolibri1") against transformers
5.24's Kolibri1ForCausalLM built from the same config dict: parameters (Kolibri1Config()'s defaults and
two odd configs), buffers, validate's rows under eager attention and sdpa, bytes saved for backward
(its router: the top k of the fp32 logits plus a bias, then a sigmoid over those k; its bf16 weight
copied to fp32 each forward), a decode step's and a prefill's FLOPs, the cache after a prefill, and the
configs refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import (assert_class_default_total, assert_counts_exact, family_checks,
                                 refused_in_one_line)
from tests.family_configs import buffer_bytes_both, estimated_total

_BASE = dict(model_type="kolibri1", vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
             head_dim=10, num_hidden_layers=5, max_position_embeddings=64, moe_intermediate_size=16,
             shared_expert_intermediate_size=24, num_experts=8, num_experts_per_tok=3, sliding_window=4)

CONFIGS = {
    # Kolibri1Config's layout: a window on all but every fifth layer (the fifth full and NoPE), the
    # weights not renormalised (norm_topk_prob False), an untied head
    "kolibri1": dict(_BASE),
    # layer_types given (full in the middle), renormalised weights, a tied head, three layers
    "kolibri1-tied": dict(_BASE, norm_topk_prob=True, num_hidden_layers=3, tie_word_embeddings=True,
                          layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and Kolibri1Config()'s (50 layers of hidden 2,560, 48 heads of 128 and 4
    KV heads, 384 experts of 512 (top 6) and a shared SwiGLU of 512 in every layer, vocabulary
    128,000, untied), the meta models' (transformers 5.24)."""
    # per layer: attention 48*60 + 2*48*20 + 60*48 + q/k norms 20 + four norms 192; router 8*48;
    # experts 8*3*48*16; shared 3*48*24: 31,036; the first: 2*99*48 + 48 + 5*31,036
    assert_counts_exact(CONFIGS, [160_372, 95_292])
    assert_class_default_total("kolibri1", 78_103_055_360)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """RoPE's inv_freq and its copy (fp32, d_h/2 each) and every layer's fp32
    e_score_correction_bias of E: 2*4*5 + 5*4*8 and 2*4*5 + 3*4*8."""
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == {"kolibri1": 200, "kolibri1-tied": 136}[name]


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate/hf_more_types.py writes the kolibri1
# config.json back): parameters, matmul FLOPs, other ops, bytes saved, KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


# The class built from the kolibri1 dict itself: bytes saved for backward (eager) and the cache after a
# prefill. Before the router's own accounting the tree was short by the gathered fp32 logits (tokens x E x 4
# bytes a layer) and, in bf16, by the weight's fp32 copy (E x d x 4 bytes a layer).
test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


def test_the_router_terms():
    """The router's saved bytes at b 2, n 9, bf16 (18 tokens, E 8, k 3, d 48): the gathered logits
    18*8*4, the indices 18*3*8, the sigmoid 18*3*4, the fp32 input copy 18*48*4 and the weight's fp32
    copy 8*48*4; renormalised (the tied config), the sum 18*4 more."""
    from costmodel import estimate

    def router(name):
        rows = estimate(dict(CONFIGS[name], name=name), seq_len=9, batch=2, dtype="bf16").to_dict()
        held = rows["memory"]["activations_by_block"]  # by layer kind: sliding and full
        return held["decoder.sliding_layer.ffn.router"] + held["decoder.full_layer.ffn.router"]

    layer = 18 * 8 * 4 + 18 * 3 * 8 + 18 * 3 * 4 + 18 * 48 * 4 + 8 * 48 * 4
    assert router("kolibri1") == 5 * layer
    assert router("kolibri1-tied") == 3 * (layer + 18 * 4)


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_refused_in_one_line = refused_in_one_line(CONFIGS["kolibri1"], [
    ({"hidden_act": "gelu"}, "hidden_act 'gelu' is not modelled for kolibri1"),
    ({"sliding_window": None}, "sliding_window is null, which transformers 5.24's Kolibri1Model cannot run"),
])


def test_architectures_alone():
    fields = {k: v for k, v in CONFIGS["kolibri1"].items() if k != "model_type"}
    assert estimated_total(dict(fields, architectures=["Kolibri1ForCausalLM"]), "x") == 160_372
