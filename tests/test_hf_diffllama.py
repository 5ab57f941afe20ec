"""DiffLlama (costmodel/hf_llama_variants.py: model_type "diffllama") against transformers 5.24's
DiffLlamaForCausalLM built from the same config dict: parameters (Llama's and four d_h-vectors of
lambda a layer), buffers, validate's rows under eager attention and sdpa (the second kernel call's
matmul FLOPs forward and backward, both softmaxes' elements, bytes saved for backward with the
group norm's fp32 input, the KV cache), a cached decode step's and a prefill's FLOPs, the cache
after a prefill, and the configs refused in one line.
"""

from __future__ import annotations

import json

import pytest

from tests.family_checks import family_checks, refused_in_one_line
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="diffllama", vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
             head_dim=10, intermediate_size=37, num_hidden_layers=2, max_position_embeddings=64,
             tie_word_embeddings=False)

CONFIGS = {
    # grouped KV (3 query heads a KV head), head_dim 10 beside hidden/heads 8, an untied head
    "diffllama": dict(_BASE),
    # multi-head (4 of 12, head_dim from hidden/heads), biases on q, k, v and o, tied, three layers
    "diffllama-bias": dict(_BASE, num_attention_heads=4, num_key_value_heads=4, head_dim=None,
                           attention_bias=True, tie_word_embeddings=True, num_hidden_layers=3),
}


CHECKS = family_checks(CONFIGS, ids={"bytes_saved_for_backward": ("b,n", "dtype", "attention", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and DiffLlamaConfig()'s (d 2,048, 16 layers, 32 heads, intermediate
    8,192, vocabulary 32,000, untied), the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    # untied 2 * 99 * 48 + 2 * (2 * 48 * 60 + 2 * 48 * 20 + 3 * 48 * 37 + 4 * 10 + 2 * 48) + 48, and tied
    # 99 * 48 + 3 * (4 * (48 * 48 + 48) + 3 * 48 * 37 + 4 * 12 + 2 * 48) + 48: the lambdas are 4 d_h a layer
    assert counts == [35_840, 49_440]
    default = transformers.AutoConfig.for_model("diffllama").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "diffllama"}) == 1_204_885_504


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """The rotary inverse frequencies (inv_freq and original_inv_freq, fp32)."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs > 0


# validate's rows (validate/hf_llama_variants.py writes the config.json back; bf16 under FakeTensorMode, b 2,
# n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs (two kernel calls a layer), other
# ops' elements, bytes saved for backward and the KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


@pytest.mark.slow
def test_validate_rows_exact_on_real_tensors_in_fp32():
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS["diffllama"], "diffllama")


# A cached decode step at three cache lengths and a prefill, against the decode tree.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


# Every layer's keys and values after a prefill (the values are split only as they are read).
test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's training forward with its loss against the tree's activations: eagerly the second call copies
# the queries and repeated keys again; sdpa keeps them once, for both calls.
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = {"eager": 124_656, "sdpa": 94_416}


@pytest.mark.parametrize("attention", sorted(BYTES_SAVED))
def test_bytes_saved_exact_integer(attention):
    """The first odd config at b 2, n 9 in bf16."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["diffllama"], name="x"), seq_len=9, batch=2, dtype="bf16",
                    attention=attention).to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED[attention]


def test_second_call_in_the_attention_flops():
    """The n^2 d term counts both kernel calls: twice Llama's 4 b n^2 h d_h a layer."""
    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(CONFIGS["diffllama"], name="x")
    tree = CostModel(cfg, profile_for(cfg))
    subs = values(cfg, Workload(seq_len=12, batch=2, dtype="bf16"))
    assert exact(tree.attention_flops(), subs) == 2 * 2 * (4 * 2 * 12 * 12 * 6 * 10)


test_refused_in_one_line = refused_in_one_line(_BASE, [
    (dict(num_key_value_heads=3, num_attention_heads=6), "even num_attention_heads (6) and num_key_value_heads (3)"),
    (dict(num_attention_heads=3, num_key_value_heads=None, head_dim=16), "even num_attention_heads (3)"),
    (dict(attention_dropout=0.1), "a nonzero attention_dropout is not supported by diffllama"),
])


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["diffllama"].items() if k != "model_type"}
    bare["architectures"] = ["DiffLlamaForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["diffllama"], name="x")


@pytest.mark.parametrize("args,words", [
    (["estimate", "--tp", "2"], "tp = 2 splits DiffLlama's differential attention"),
    (["validate", "--target", "reference", "--seq-len", "8"], "the reference implementation does not build differential_attention"),
])
def test_what_is_not_modelled_is_refused(args, words, tmp_path, capsys):
    """Tensor parallelism (head i is subtracted from head i + h/2, which another rank holds) and the
    project's reference model (no differential attention) are one error line each, status 2."""
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["diffllama"]))
    code, out, err = run_main([*args, "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err, err
