"""Salesforce's CTRL (costmodel/hf_xglm.py: model_type "ctrl") against transformers 5.24's
CTRLLMHeadModel built from the same config dict: parameters (CTRLConfig()'s defaults and odd configs),
buffers (its fp32 sinusoid table), validate's rows under eager attention and sdpa, bytes saved for
backward, the cache after a prefill, a decode step's and a prefill's FLOPs, and the configs refused in
one line."""

from __future__ import annotations

import pytest

from tests.family_checks import (assert_class_default_total, assert_counts_exact, family_checks,
                                 refused_in_one_line)
from tests.family_configs import CORE_QUANTITIES, buffer_bytes_both, estimated_total

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


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_validate_rows_exact(name, attention):
    """validate's rows, every formula equal to its measurement, measured in a fresh interpreter:
    inside a long test process the eager row's bytes saved for backward read 48 bytes fewer in two
    of five full runs (102,244 against 102,292, which a fresh process measures every time; the
    cause, some state earlier tests leave, is not found yet: validate/FINDINGS.md, session 25)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("transformers")
    code = ("import json, sys; from tests.family_configs import odd_config_rows; "
            "rows = odd_config_rows(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]); "
            "print(json.dumps([sorted({r.quantity for r in rows}), "
            "[[r.quantity, r.formula, r.measured] for r in rows if r.difference != 0]]))")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code, json.dumps(CONFIGS[name]), name, attention],
                          cwd=root, capture_output=True, text=True, check=True)
    quantities, off = json.loads(done.stdout.strip().splitlines()[-1])
    assert CORE_QUANTITIES <= set(quantities) and off == []  # the rows that differ, formula beside measurement


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
