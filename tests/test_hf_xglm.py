"""XGLM (costmodel/hf_xglm.py: model_type "xglm") against transformers 5.24's XGLMForCausalLM built
from the same config dict: parameters, buffers (the sinusoidal table of P + 2 rows), validate's rows
under eager attention (the class has no sdpa path: matmul FLOPs forward and backward, other ops' elements, bytes saved for backward with the scores'
clamp at finfo.min, the KV cache), a cached decode step's and a prefill's FLOPs, the cache after a
prefill, and the configs refused in one line.
"""

from __future__ import annotations

import json

import pytest

from tests.family_checks import assert_estimate_refuses, family_checks
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="xglm", vocab_size=99, d_model=48, attention_heads=6, ffn_dim=37, num_layers=3,
             max_position_embeddings=64)

CONFIGS = {
    # XGLMConfig's layout: embeddings times sqrt(d), a tied head, gelu, dropout 0.1 everywhere
    "xglm": dict(_BASE),
    # unscaled embeddings, an untied head, relu, no dropout, two layers
    "xglm-untied": dict(_BASE, scale_embedding=False, tie_word_embeddings=False, activation_function="relu",
                        dropout=0.0, attention_dropout=0.0, num_layers=2),
}


CHECKS = family_checks(CONFIGS, ids={"validate_rows_exact": ("name",),
                                     "bytes_saved_for_backward": ("b,n", "dtype", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and XGLMConfig()'s (facebook/xglm-564M: d 1,024, 24 layers, 16 heads,
    ffn 4,096, vocabulary 256,008, tied), the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    assert counts == [44_559, 36_074]  # 99*48 (+ 99*48 untied) + L*13,237 + 96
    default = transformers.AutoConfig.for_model("xglm").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "xglm"}) == 564_463_616


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """XGLMSinusoidalPositionalEmbedding holds max_position_embeddings + 2 rows (offset 2) in the model
    dtype: (64 + 2) x 48 x 2 bytes of bf16. The tree's SinusoidalPositions held P rows, 2 d bytes
    short, until session 22 passed position_offset 2 to it."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == 66 * 48 * 2


# validate's rows (validate/hf_xglm.py writes the config.json back; bf16 under FakeTensorMode, b 2, n 12, 2
# generated tokens, eager attention): parameters, forward and backward matmul FLOPs, other ops' elements,
# bytes saved for backward and the KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


@pytest.mark.slow
def test_validate_rows_exact_on_real_tensors_in_fp32():
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS["xglm"], "xglm")


# A cached decode step at three cache lengths and a prefill, against the decode tree.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


# Every layer's keys and values after a prefill.
test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's eager training forward with its loss against the tree's activations: the clamp torch.max(scores
# + mask, finfo.min) keeps the masked scores and its 0-d fp32 bound in every layer (facts.scores_clamped_min:
# b h n^2 e + 4 bytes a layer short without it), the loss its fp32 logits (facts.loss_dtype).
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = 96_280


def test_bytes_saved_exact_integer():
    """The first odd config at b 2, n 9 in bf16."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["xglm"], name="x"), seq_len=9, batch=2, dtype="bf16",
                    attention="eager").to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED


@pytest.mark.parametrize("fields,words", [
    (dict(_BASE, add_cross_attention=True), "add_cross_attention is not modelled for xglm"),
    (dict(_BASE, layerdrop=0.1), "a nonzero layerdrop is not modelled for xglm"),
    (dict(_BASE, activation_dropout=0.1), "a nonzero activation_dropout is not modelled for xglm"),
    (dict(_BASE, activation_function="silu"), "unsupported activation_function 'silu' for xglm"),
    (dict(_BASE, d_model=50), "d_model (50) is not divisible by attention_heads (6)"),
])
def test_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


def test_sdpa_is_refused(tmp_path, capsys):
    """XGLMPreTrainedModel declares no _supports_sdpa: --attention sdpa is one error line, status 2."""
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["xglm"]))
    code, out, err = run_main(["estimate", "--config", str(path), "--attention", "sdpa"], capsys)
    assert code == 2 and err.count("\n") == 1 and "_supports_sdpa is False" in err, err


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["xglm"].items() if k != "model_type"}
    bare["architectures"] = ["XGLMForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["xglm"], name="x")
