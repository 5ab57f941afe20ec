"""GPT-NeoX-Japanese (costmodel/hf_gpt_neox_japanese.py: model_type "gpt_neox_japanese") against
transformers 5.24's GPTNeoXJapaneseForCausalLM built from the same config dict: parameters
(GPTNeoXJapaneseConfig()'s defaults and odd configs; the last layer's dense_bias), buffers, validate's
rows (its eager attention, the only path), bytes saved for backward (its dropout sites: the
probabilities and each sublayer's output, not the embeddings), the cache after a prefill, a decode
step's and a prefill's FLOPs, and the configs refused in one line."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_checks import (assert_class_default_total, assert_counts_exact, family_checks,
                                 refused_in_one_line)
from tests.family_configs import buffer_bytes_both, estimated_total

_BASE = dict(model_type="gpt_neox_japanese", vocab_size=99, hidden_size=48, num_attention_heads=6,
             num_hidden_layers=3, max_position_embeddings=64, intermediate_multiple_size=3,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # GPTNeoXJapaneseConfig's layout: attention_dropout 0.1 on the probabilities, no hidden dropout, RoPE
    # over the whole head, gelu, a tied head
    "gptnj": dict(_BASE),
    # hidden_dropout 0.1 on both sublayers' outputs, none on the probabilities, RoPE on half of each head
    # (rotary_pct), relu, an untied head, two layers
    "gptnj-dropout": dict(_BASE, hidden_dropout=0.1, attention_dropout=0.0, rotary_pct=0.5, hidden_act="relu",
                          tie_word_embeddings=False, num_hidden_layers=2),
}


CHECKS = family_checks(CONFIGS, ids={"validate_rows_exact": ("name",)})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and GPTNeoXJapaneseConfig()'s (32 layers of hidden 2,560, 32 heads, an MLP
    of 4 x 2,560, vocabulary 32,000, tied: abeja/gpt-neox-japanese-2.7b's shape), the meta models'."""
    # a layer: query_key_value 48*144, dense 48*48, two LayerNorms 4*48, the MLP 2*48*144: 23,232; the
    # first: 99*48 + 3*23,232 + 48 (the last layer's dense_bias) + 2*48 (the final LayerNorm); the second
    # 2*99*48 + 2*23,232 + 48 + 2*48
    assert_counts_exact(CONFIGS, [74_592, 56_112])
    assert_class_default_total("gpt_neox_japanese", 2_598_837_760)


@pytest.mark.parametrize("name, expected", [("gptnj", 32), ("gptnj-dropout", 16)])
def test_buffers_equal_the_class(name, expected):
    """RoPE's fp32 inv_freq and its copy: 2*4*(rotary width / 2)."""
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


# validate's rows (b 2, n 12, bf16, 2 generated tokens, eager: the class has no other path;
# validate/hf_gpt_neox_japanese.py writes the config.json back): parameters, matmul FLOPs, other ops, bytes
# saved, KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


def test_the_last_layers_bias():
    """One d-wide bias on the last layer's attention output (dense_bias): d parameters and, at b 2, n 9,
    one add of 2*9*48 elements, in the tree's own leaf."""
    from costmodel import estimate

    rows = estimate(dict(CONFIGS["gptnj"], name="x"), seq_len=9, batch=2).to_dict()
    assert rows["params"]["by_block"]["decoder.last_out_bias"] == 48


test_refused_in_one_line = refused_in_one_line(CONFIGS["gptnj"], [
    ({"hidden_act": "tanh"}, "unsupported hidden_act 'tanh' for gpt_neox_japanese"),
    ({"num_attention_heads": 5}, "hidden_size (48) is not divisible by num_attention_heads (5)"),
    ({"rotary_pct": 0.01}, "partial_rotary_factor leaves 0 rotary dimensions per head"),
])


def test_sdpa_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["gptnj"]))
    code, _, err = run_main(["estimate", "--config", str(path), "--attention", "sdpa"], capsys)
    assert code == 2 and err.count("\n") == 1


def test_architectures_alone():
    fields = {k: v for k, v in CONFIGS["gptnj"].items() if k != "model_type"}
    assert estimated_total(dict(fields, architectures=["GPTNeoXJapaneseForCausalLM"]), "x") == 74_592
