"""Doge with dense layers (costmodel/hf_llama_variants.py: model_type "doge") against transformers
5.24's DogeForCausalLM built from the same config dict: parameters (dt_proj and A a layer, two
residual d-vectors), buffers, validate's rows under eager attention and sdpa (whose trained mask
sends it to its fp32 math path), a cached decode step's and a prefill's FLOPs (dt_proj runs on every
cached key), the cache after a prefill, bytes saved for backward, and the configs refused in one line.
"""

from __future__ import annotations

import json

import pytest

from tests.family_checks import assert_estimate_refuses, family_checks
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="doge", vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
             head_dim=10, intermediate_size=37, num_hidden_layers=2, max_position_embeddings=64,
             keep_window_size=64, tie_word_embeddings=False)

CONFIGS = {
    # grouped KV (3 query heads a KV head), head_dim 10 beside hidden/heads 8, an untied head
    "doge": dict(_BASE),
    # multi-head (4 of 12), attention_bias (q, k, v, dt_proj, o) and mlp_bias, tied, three layers,
    # DogeConfig's keep_window_size 2048
    "doge-bias": dict(_BASE, num_attention_heads=4, num_key_value_heads=4, head_dim=12, attention_bias=True,
                      mlp_bias=True, tie_word_embeddings=True, num_hidden_layers=3, keep_window_size=2048),
}


CHECKS = family_checks(CONFIGS, ids={"bytes_saved_for_backward": ("b,n", "dtype", "attention", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and DogeConfig()'s dense defaults (d 1,024, 32 layers, 8 heads,
    intermediate 2,048, vocabulary 32,768, untied), the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    # 2 * 99 * 48 + 2 * (2 * 48 * 60 + 2 * 48 * 20 + 3 * 48 * 37 + 20 * 2 + 2 + 2 * 10 + 4 * 48) + 48: dt_proj
    # (h_kv d_h x h_kv), A (h_kv), the q/k norms (d_h each), two norms and two residual vectors (d each)
    assert counts == [36_076, 50_622]
    default = transformers.AutoConfig.for_model("doge").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "doge"}) == 403_055_872


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """The rotary inverse frequencies (inv_freq and original_inv_freq, fp32)."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs > 0


# validate's rows (validate/hf_llama_variants.py writes the config.json back; bf16 under FakeTensorMode, b 2,
# n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs (dt_proj's included), other ops'
# elements, bytes saved for backward and the KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


@pytest.mark.slow
def test_validate_rows_exact_on_real_tensors_in_fp32():
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS["doge"], "doge")


# A cached decode step at three cache lengths (dt_proj over all c keys) and a prefill.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's training forward with its loss against the tree's activations: the dynamic mask's dt_proj input
# copy, softplus, exp and the bool causal condition; the residual products keep the stream; sdpa runs its math
# path in fp32 (the mask needs gradients).
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = {"eager": 109_840, "sdpa": 118_912}


@pytest.mark.parametrize("attention", sorted(BYTES_SAVED))
def test_bytes_saved_exact_integer(attention):
    """The first odd config at b 2, n 9 in bf16."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["doge"], name="x"), seq_len=9, batch=2, dtype="bf16",
                    attention=attention).to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED[attention]


@pytest.mark.parametrize("fields,words", [
    (dict(_BASE, is_moe=True), "is_moe (Doge's CDMoE, product-key experts) is not modelled for doge"),
    (dict(_BASE, sliding_window=8), "a sliding_window is not modelled for doge"),
    (dict(_BASE, keep_window_size=16), "keep_window_size (16) below max_position_embeddings (64)"),
    (dict(_BASE, hidden_dropout=0.1), "a nonzero hidden_dropout is not modelled for doge"),
    (dict(_BASE, attention_dropout=0.1), "a nonzero attention_dropout is not modelled for doge"),
])
def test_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


@pytest.mark.parametrize("args,words", [
    (["estimate", "--tp", "2"], "tp = 2 splits Doge's dynamic mask"),
    (["validate", "--target", "reference", "--seq-len", "8"], "the reference implementation does not build"),
])
def test_what_is_not_modelled_is_refused(args, words, tmp_path, capsys):
    """Tensor parallelism (dt_proj reads every KV head's values) and the project's reference model."""
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["doge"]))
    code, out, err = run_main([*args, "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err, err


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["doge"].items() if k != "model_type"}
    bare["architectures"] = ["DogeForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["doge"], name="x")


@pytest.mark.parametrize("op", ["softplus", "exp"])
def test_mask_elements_are_the_ops_the_class_runs(op):
    """Output elements of aten's softplus and exp in one eager fp32 forward (b 2, n 9) of the real
    class: one a key and KV head (2) a layer (2), against the tree's dynamic_mask leaf."""
    pytest.importorskip("transformers")
    from tests.test_hf_gpt_oss import _hf_elements, _tree_elements

    hf = _hf_elements(CONFIGS["doge"], 2, 9, (op,))
    assert hf[op] == _tree_elements(CONFIGS["doge"], 2, 9)[op] == 2 * 9 * 2 * 2
