"""Aria's language model (costmodel/hf_moe_extra.py: model_type "aria_text") against transformers
5.24's AriaTextForCausalLM built from the same config dict: parameters and buffers, validate's rows
(eager and sdpa: matmul FLOPs forward and backward, other ops' elements, bytes saved for backward,
the KV cache), a cached decode step's and a prefill's FLOPs, the cache after a prefill, the class's
own training forward in fp32 and bf16, and the configs refused in one line.
"""

from __future__ import annotations

import pytest

from tests.family_checks import family_checks, refused_in_one_line
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="aria_text", vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
             intermediate_size=16, num_hidden_layers=2, max_position_embeddings=64, moe_num_experts=4,
             moe_topk=2, pad_token_id=None, bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # top 2 of 4 experts of 16 and one shared expert of 16 (experts' widths multiples of 8:
    # torch._grouped_mm needs 16-byte row strides)
    "aria_text": dict(_BASE, moe_num_shared_experts=1),
    # three of 5, a shared MLP of two experts' width with biases (mlp_bias), a head_dim of 10, tied
    "aria_text-bias": dict(_BASE, moe_num_experts=5, moe_topk=3, moe_num_shared_experts=2, mlp_bias=True,
                           head_dim=10, tie_word_embeddings=True),
    # no shared experts
    "aria_text-unshared": dict(_BASE, moe_num_shared_experts=0),
}


CHECKS = family_checks(CONFIGS, ids={"validate_rows_exact": ("attention", "name"),
                                     "bytes_saved_for_backward": ("dtype", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and AriaTextConfig()'s (d 4,096, 32 layers, 8 experts of 4,096 top 2,
    a shared MLP of 8,192, vocabulary 32,000, untied), the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)] == COUNTS
    default = transformers.AutoConfig.for_model("aria_text").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "aria_text"}) == 18_517_069_824


#: test_parameters_exact_integers's counts in sorted order (aria_text: 2 layers of attention 6,144, a
#: router of 4 x 48, four experts of 3 x 48 x 16, a shared 3 x 48 x 16, two norms; 99 x 48 twice, a norm;
#: unshared: 2 x 2,304 fewer).
COUNTS = [45_456, 53_312, 40_848]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs > 0


# validate's rows (validate/hf_moe_extra.py writes the config.json back; bf16 under FakeTensorMode, b 2, n 12,
# 2 generated tokens).
test_validate_rows_exact = CHECKS.validate_rows_exact


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's eager training forward with its loss (the router's top-k softmax in the model's dtype: facts
# routing_weights_dtype).
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


test_refused_in_one_line = refused_in_one_line(_BASE, [
    (dict(moe_topk=5), "moe_topk (5) is more than moe_num_experts (4)"),
    (dict(hidden_act="gelu"), "unsupported hidden_act 'gelu' for aria_text"),
    (dict(moe_num_shared_experts=-1), "moe_num_shared_experts"),
    (dict(moe_num_shared_experts=0, mlp_bias=True), "mlp_bias with moe_num_shared_experts 0 is not modelled"),
])


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["aria_text"].items() if k != "model_type"}
    bare["architectures"] = ["AriaTextForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["aria_text"], name="x")
