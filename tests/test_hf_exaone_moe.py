"""EXAONE-MoE (costmodel/hf_moe_more.py: model_type "exaone_moe") against transformers 5.24's
ExaoneMoeForCausalLM built from the same config dict: parameters and buffers (windows with NoPE
full layers, dense layers first, grouped routing, a tied head, the class default with every
layer sparse), validate's rows (matmul FLOPs forward and backward, other ops' elements, bytes
saved for backward under eager and sdpa, the KV cache), a cached decode step's and a prefill's
FLOPs, the cache after a prefill, and the configs refused in one line (a dense full-attention
layer beside expert layers; a null window, which the configuration class refuses). Dense layers
beside windows on some layers (the class's defaults, K-EXAONE's) take Llama 4 Maverick's kinds.
"""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses, family_checks
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="exaone_moe", vocab_size=99, hidden_size=48, num_attention_heads=6,
             intermediate_size=37, num_hidden_layers=5, max_position_embeddings=64, pad_token_id=None,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # every layer sparse: top 3 of 8 experts of 16 in 4 groups (top 2), two shared (one MLP of 32),
    # head_dim 10 (not 48 / 6), 2 KV heads; a window of 6 on all but every third layer (those NoPE)
    "exaone_moe": dict(_BASE, num_key_value_heads=2, head_dim=10, num_experts=8, n_group=4, topk_group=2,
                       num_experts_per_tok=3, num_shared_experts=2, moe_intermediate_size=16,
                       first_k_dense_replace=0, sliding_window=6, sliding_window_pattern=3),
    # the first layer dense (mlp_layer_types) and every layer sliding (all RoPE); weights not
    # renormalised, a tied head, 3 KV heads of hidden/heads = 8
    "exaone_moe-dense-first": dict(_BASE, num_key_value_heads=3, num_experts=4, num_experts_per_tok=2,
                                   moe_intermediate_size=24, mlp_layer_types=["dense"] + ["sparse"] * 4,
                                   sliding_window=7, layer_types=["sliding_attention"] * 5,
                                   norm_topk_prob=False, tie_word_embeddings=True),
    # layer_types given (sliding, full, sliding, sliding, full), one KV head, experts everywhere
    "exaone_moe-listed": dict(_BASE, num_key_value_heads=1, head_dim=10, num_experts=4, num_experts_per_tok=2,
                              moe_intermediate_size=16, first_k_dense_replace=0, sliding_window=5,
                              layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                           "sliding_attention", "full_attention"]),
    # K-EXAONE's layout (ExaoneMoeConfig's default): layer 0 dense and sliding, windows on all but every
    # third layer (the full ones NoPE, with experts): Llama 4 Maverick's kinds dense, moe, moe_nope
    "exaone_moe-dense-windows": dict(_BASE, num_key_value_heads=2, head_dim=10, num_experts=8, num_experts_per_tok=3,
                                     moe_intermediate_size=16, first_k_dense_replace=1, sliding_window=6,
                                     sliding_window_pattern=3),
    # two dense layers by mlp_layer_types, layer_types given (full on layers 2 and 4), grouped routing
    "exaone_moe-dense-listed": dict(_BASE, num_key_value_heads=3, num_experts=4, n_group=2, topk_group=1,
                                    num_experts_per_tok=2, moe_intermediate_size=24, sliding_window=5,
                                    mlp_layer_types=["dense"] * 2 + ["sparse"] * 3,
                                    layer_types=["sliding_attention", "sliding_attention", "full_attention",
                                                 "sliding_attention", "full_attention"]),
}


CHECKS = family_checks(CONFIGS, ids={"validate_rows_exact": ("attention", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts, the meta models' (transformers 5.24)."""
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    # the dense-windows config: a layer's attention and norms: q 2,880, k and v 960 each, o 2,880,
    # q/k norms 20, two norms 96 (7,796); the dense MLP 3*48*37; an expert layer's router 8*48, experts
    # 8*3*48*16 and shared 3*48*16 (21,120); untied: 2*99*48 + 48 + 7,796 + 5,328 + 4*(7,796 + 21,120)
    assert counts == [165_652, 115_136, 107_744, 138_340, 102_292]


@pytest.mark.parametrize("name,expected", [("exaone_moe", 200), ("exaone_moe-dense-first", 96),
                                           ("exaone_moe-listed", 120), ("exaone_moe-dense-windows", 168),
                                           ("exaone_moe-dense-listed", 80)])
def test_buffers_equal_the_class(name, expected):
    """The rotary tables (bf16) and each sparse layer's fp32 e_score_correction_bias."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


def test_class_default_with_every_layer_sparse():
    """ExaoneMoeConfig() with first_k_dense_replace 0 (d 4,096, 32 layers, 64 experts of 1,024,
    one shared, vocabulary 102,400; windows on all but every fourth layer): the meta model's count."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("exaone_moe", first_k_dense_replace=0).to_dict()
    fields.pop("mlp_layer_types")  # the default's list says layer 0 is dense; the override does not reach it
    assert estimated_total(fields, "x") == hf_meta_count({"model_type": "exaone_moe", "first_k_dense_replace": 0})
    assert estimated_total(fields, "x") == 29_167_464_448


# validate's rows (validate/hf_llama_variants.py writes the config.json back; bf16 under FakeTensorMode, b 2,
# n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs, other ops' elements, bytes saved
# for backward and the KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


@pytest.mark.slow
@pytest.mark.parametrize("name", ["exaone_moe", "exaone_moe-dense-first"])
def test_validate_rows_exact_on_real_tensors_in_fp32(name):
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS[name], name)


# A cached decode step at three cache lengths and a prefill, against the decode tree.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


# Every layer's keys and values after a prefill (a sliding layer's storage the whole prompt).
test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's training forward with its loss against the tree's activations (fp32 RMSNorms, softmax, loss and
# router, as dots1's: costmodel/facts.json).
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = 522_380


def test_bytes_saved_exact_integer():
    """The first odd config at b 2, n 9 in fp32."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["exaone_moe"], name="x"), seq_len=9, batch=2, dtype="fp32").to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED


@pytest.mark.parametrize("fields,words", [
    (dict(CONFIGS["exaone_moe"], first_k_dense_replace=3),
     "a full-attention (NoPE) layer among exaone_moe's 3 dense layers"),
    (dict(CONFIGS["exaone_moe"], sliding_window=None), "sliding_window null is refused"),
    (dict(CONFIGS["exaone_moe"], n_group=3), "num_experts (8) is not divisible by n_group (3)"),
    (dict(CONFIGS["exaone_moe"], num_experts=0), "num_experts must be at least 1, got 0"),
    (dict(CONFIGS["exaone_moe"], num_shared_experts=0), "num_shared_experts must be at least 1"),
    (dict(CONFIGS["exaone_moe"], layer_types=["full_attention"] * 5), "no RoPE"),
    (dict(CONFIGS["exaone_moe"], sliding_window_pattern="LLG"), "layer_types"),
    (dict(CONFIGS["exaone_moe"], mlp_layer_types=["sparse", "dense", "sparse", "sparse", "sparse"]),
     "dense layer after a sparse one"),
    (dict(CONFIGS["exaone_moe"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for exaone_moe"),
])
def test_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


def test_the_class_default():
    """ExaoneMoeConfig()'s own defaults (K-EXAONE's layout: layer 0 dense and sliding, windows on all but
    every fourth layer, the full ones NoPE with experts; d 4,096, 32 layers, 64 experts of 1,024, one
    shared, vocabulary 102,400): the meta model's count, from to_dict and to_diff_dict alike. Refused
    (before session 25) as dense layers beside windows on some layers."""
    transformers = pytest.importorskip("transformers")
    default = transformers.AutoConfig.for_model("exaone_moe")
    for fields in (default.to_dict(), default.to_diff_dict()):
        assert estimated_total(fields, "x") == 28_550_639_616
    assert hf_meta_count({"model_type": "exaone_moe"}) == 28_550_639_616


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["exaone_moe"].items() if k != "model_type"}
    bare["architectures"] = ["ExaoneMoeForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["exaone_moe"], name="x")
