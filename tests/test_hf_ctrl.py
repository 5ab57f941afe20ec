"""Salesforce's CTRL (costmodel/hf_xglm.py: model_type "ctrl") against transformers 5.24's
CTRLLMHeadModel built from the same config dict: parameters (CTRLConfig()'s defaults and odd configs),
buffers (its fp32 sinusoid table), validate's rows under eager attention and sdpa, bytes saved for
backward, the cache after a prefill, a decode step's and a prefill's FLOPs, and the configs refused in
one line."""

from __future__ import annotations

import pytest

from tests.family_checks import (assert_class_default_total, assert_counts_exact, family_checks,
                                 refused_in_one_line)
from tests.family_configs import buffer_bytes_both, estimated_total

_BASE = dict(model_type="ctrl", vocab_size=99, n_embd=48, n_head=6, dff=37, n_layer=3, n_positions=64)

CONFIGS = {
    # CTRLConfig's layout: dropout 0.1 (its default) on the embeddings' sum and each sublayer's output,
    # a tied head with its own bias
    "ctrl": dict(_BASE),
    # no dropout, an untied head, two layers, 4 heads of 12
    "ctrl-untied": dict(_BASE, resid_pdrop=0.0, embd_pdrop=0.0, tie_word_embeddings=False, n_layer=2, n_head=4),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and CTRLConfig()'s (48 layers of n_embd 1,280, 16 heads, dff 8,192,
    vocabulary 246,534, tied, the head's bias: Salesforce/ctrl's 1.6B), the meta models'."""
    # a layer: Wq, Wk, Wv, dense 4*(48*48 + 48), two LayerNorms 4*48, the MLP 48*37 + 37 + 37*48 + 48:
    # 13,237; the first: 99*48 + 99 (the head's bias) + 2*48 (the final LayerNorm) + 3*13,237; the second
    # 2*99*48 + 99 + 2*48 + 2*13,237
    assert_counts_exact(CONFIGS, [44_658, 36_173])
    assert_class_default_total("ctrl", 1_637_964_550)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """The sinusoid table, fp32 whatever the model dtype (facts sinusoid_buffer_fp32): 4*64*48."""
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == 12_288


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate/hf_xglm.py writes the ctrl config.json back):
# parameters, matmul FLOPs, other ops, bytes saved, KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_refused_in_one_line = refused_in_one_line(CONFIGS["ctrl"], [
    ({"embd_pdrop": 0.2}, "resid_pdrop 0.1 and embd_pdrop 0.2 differ; ctrl is modelled with one dropout"),
    ({"resid_pdrop": "x"}, "field 'resid_pdrop' must be a number, got 'x'"),
    ({"n_head": 5}, "n_embd (48) is not divisible by n_head (5)"),
])


def test_architectures_alone():
    fields = {k: v for k, v in CONFIGS["ctrl"].items() if k != "model_type"}
    assert estimated_total(dict(fields, architectures=["CTRLLMHeadModel"]), "x") == 44_658
