"""Apertus 1.5's language model (costmodel/hf_llama_variants.py: model_type "apertus1p5_text", read
as Apertus) against transformers 5.24's Apertus1p5TextForCausalLM built from the same config dict:
parameters and buffers, the class's training forward (bytes saved for backward), a cached decode
step's and a prefill's FLOPs, the cache after a prefill; validate's rows (which build the family's
class, ApertusForCausalLM, whose subclass this is with the same modules while the head is not
pruned); a pruned head (output_vocab_size) refused in one line.
"""

from __future__ import annotations

import json

import pytest

from tests.family_checks import family_checks
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="apertus1p5_text", vocab_size=99, hidden_size=48, num_attention_heads=6,
             intermediate_size=37, num_hidden_layers=2, max_position_embeddings=64, pad_token_id=None,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # per-head q/k norms, an ungated xIELU MLP, GQA, an untied head (the class's default)
    "apertus1p5": dict(_BASE, num_key_value_heads=2),
    # biases on q, k, v and o, three KV heads, a tied head, output_vocab_size equal to the vocabulary
    "apertus1p5-biases": dict(_BASE, num_key_value_heads=3, attention_bias=True, tie_word_embeddings=True,
                              output_vocab_size=99),
}


CHECKS = family_checks(CONFIGS, ids={"validate_rows_exact": ("name",)})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and Apertus1p5TextConfig()'s (Apertus's 8B layout with a vocabulary
    of 266,752, untied), the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    assert counts == COUNTS
    default = transformers.AutoConfig.for_model("apertus1p5_text").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "apertus1p5_text"}) == 8_091_086_912


#: test_parameters_exact_integers's counts of CONFIGS, in sorted order: 2 layers of q/k/v/o
#: (2,304 + 768 + 768 + 2,304; with three KV heads and biases 7,056), q/k norms 16, up/down 3,552,
#: xIELU's two scalars and two norms' 96, beside 99 x 48 embeddings (and an untied head) and a norm of 48.
COUNTS = [29_172, 26_244]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """RoPE's inv_freq and original_inv_freq, and each layer's xIELU beta and eps."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs > 0


# validate's rows (bf16 under FakeTensorMode, b 2, n 12, 2 generated tokens, eager attention).
test_validate_rows_exact = CHECKS.validate_rows_exact


# A cached decode step at three cache lengths and a prefill, against the decode tree.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_cache_after_prefill = CHECKS.cache_after_prefill


# Apertus1p5TextForCausalLM's own training forward with its loss.
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


@pytest.mark.parametrize("pruned", [98, 1])
def test_a_pruned_head_is_refused_in_one_line(pruned, tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(CONFIGS["apertus1p5"], output_vocab_size=pruned)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err
    assert f"output_vocab_size {pruned} (a head pruned below vocab_size 99)" in err


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["apertus1p5"].items() if k != "model_type"}
    bare["architectures"] = ["Apertus1p5TextForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["apertus1p5"], name="x")
