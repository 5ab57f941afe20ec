"""Cohere2-MoE (costmodel/hf_classic_more.py: model_type "cohere2_moe") against transformers 5.24's
Cohere2MoeForCausalLM built from the same config dict: parameters and buffers (Cohere 2's parallel
layers, windows and NoPE full layers, a head_dim of its own, Mixtral's experts behind a top-k
softmax router, shared experts summed in, the class default), validate's rows (matmul FLOPs forward
and backward, other ops' elements, bytes saved for backward under eager and sdpa, the KV cache), a
cached decode step's and a prefill's FLOPs, the cache after a prefill, and the configs refused in
one line (dense prefix layers, the sigmoid selection, the "average" combination, RMSNorms).
"""

from __future__ import annotations

import pytest

from tests.family_checks import family_checks, refused_in_one_line
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="cohere2_moe", vocab_size=99, hidden_size=48, num_attention_heads=6,
             intermediate_size=24, num_hidden_layers=5, max_position_embeddings=64, pad_token_id=None,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # top 2 of 5 experts of 24, head_dim 10 (not 48 / 6), 2 KV heads; a window of 6 on all but
    # every third layer (those NoPE); no shared experts (the class's default)
    "cohere2_moe": dict(_BASE, num_key_value_heads=2, head_dim=10, num_experts=5, num_experts_per_tok=2,
                        sliding_window=6, sliding_window_pattern=3),
    # two shared experts summed in, biases on q, k, v and o, an untied head, logit_scale 0.25
    "cohere2_moe-shared": dict(_BASE, num_key_value_heads=3, head_dim=8, num_experts=4, num_experts_per_tok=3,
                               num_shared_experts=2, shared_expert_combination_strategy="sum",
                               sliding_window=7, attention_bias=True, tie_word_embeddings=False,
                               logit_scale=0.25),
    # every layer sliding (RoPE everywhere), one KV head of 12, the top 1 of 4
    "cohere2_moe-all-sliding": dict(_BASE, num_key_value_heads=1, head_dim=12, num_experts=4,
                                    num_experts_per_tok=1, sliding_window=5,
                                    layer_types=["sliding_attention"] * 5),
}


CHECKS = family_checks(CONFIGS, ids={"validate_rows_exact": ("attention", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and the class default's (Cohere2MoeConfig(): d 8,192, 40 layers,
    8 experts of 22,528, the top 2, vocabulary 256,000, tied), the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    assert counts == [131_040, 115_440, 149_712]
    default = transformers.AutoConfig.for_model("cohere2_moe").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "cohere2_moe"}) == 190_004_928_512


@pytest.mark.parametrize("name,expected", [("cohere2_moe", 40), ("cohere2_moe-shared", 32),
                                           ("cohere2_moe-all-sliding", 48)])
def test_buffers_equal_the_class(name, expected):
    """The rotary tables' inv_freq and original_inv_freq (fp32, head_dim / 2 each)."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


# validate's rows (validate/hf_classic_more.py writes the config.json back; bf16 under FakeTensorMode, b 2, n
# 12, 2 generated tokens): parameters, forward and backward matmul FLOPs, other ops' elements, bytes saved for
# backward and the KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cohere2_moe", "cohere2_moe-shared"])
def test_validate_rows_exact_on_real_tensors_in_fp32(name):
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS[name], name)


# A cached decode step at three cache lengths and a prefill, against the decode tree.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


# Every layer's keys and values after a prefill (a sliding layer's storage the whole prompt).
test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's training forward with its loss against the tree's activations (Cohere's fp32 Python LayerNorm,
# the router's fp32 softmax over the k: costmodel/facts.json).
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = 342_896


def test_bytes_saved_exact_integer():
    """The first odd config at b 2, n 9 in fp32."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["cohere2_moe"], name="x"), seq_len=9, batch=2, dtype="fp32").to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED


test_refused_in_one_line = refused_in_one_line(CONFIGS["cohere2_moe"], [
    (dict(mlp_layer_types=["dense"] + ["sparse"] * 4), "mlp_layer_types other than sparse"),
    (dict(first_k_dense_replace=1), "first_k_dense_replace (dense prefix layers)"),
    (dict(rms_norm_eps=1e-5), "rms_norm_eps (RMSNorms"),
    (dict(expert_selection_fn="sigmoid"), "expert_selection_fn 'sigmoid'"),
    (dict(num_shared_experts=1), "shared_expert_combination_strategy 'average'"),
    (dict(num_experts_per_tok=6), "num_experts_per_tok (6) is more than num_experts (5)"),
    (dict(sliding_window=None), "sliding_window null"),
    (dict(layer_types=["full_attention"] * 5), "no sliding_attention layer"),
    (dict(num_experts=0), "num_experts must be at least 1"),
])


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["cohere2_moe"].items() if k != "model_type"}
    bare["architectures"] = ["Cohere2MoeForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["cohere2_moe"], name="x")
