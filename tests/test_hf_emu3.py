"""BAAI's Emu3 (costmodel/hf_more_types.py: model_type "emu3") against transformers 5.24's
Emu3ForCausalLM, which AutoModelForCausalLM builds from the same config dict's text_config: parameters
(Emu3Config()'s defaults and odd configs), buffers, validate's rows under eager attention and sdpa,
bytes saved for backward (its dropout on each sublayer's output, Emu3DecoderLayer.dropout, beside the
probabilities'), the cache after a prefill, a decode step's and a prefill's FLOPs, and the configs
refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import (assert_class_default_total, assert_counts_exact, family_checks,
                                 refused_in_one_line)
from tests.family_configs import buffer_bytes_both

_TEXT = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2, head_dim=10,
             intermediate_size=37, num_hidden_layers=3, max_position_embeddings=64, pad_token_id=0,
             bos_token_id=1, eos_token_id=2)

#: vocab_size at the top as well, where the measurement helpers read it (Emu3Config keeps it as an
#: attribute; the reader reads text_config only).
CONFIGS = {
    # Emu3TextConfig's layout: dropout 0.1 (its default) on the probabilities and both sublayers' outputs,
    # an untied head
    "emu3": dict(model_type="emu3", vocab_size=99, text_config=dict(_TEXT)),
    # biases on q, k, v and o and on the MLP, no dropout, a tied head, two layers
    "emu3-bias": dict(model_type="emu3", vocab_size=99,
                      text_config=dict(_TEXT, attention_bias=True, mlp_bias=True, attention_dropout=0.0,
                                       tie_word_embeddings=True, num_hidden_layers=2)),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and Emu3Config()'s (32 layers of hidden 4,096, 32 heads and 8 KV heads of
    128, a SwiGLU of 14,336, vocabulary 184,622, untied: Emu3-Chat's language model), the meta models'
    (transformers 5.24)."""
    # a layer: q 48*60, k and v 48*20 each, o 60*48, two norms 2*48, SwiGLU 3*48*37: 13,104; the first:
    # 2*99*48 + 48 + 3*13,104; the second adds biases 60 + 2*20 + 48 and 2*37 + 48 a layer, tied:
    # 99*48 + 48 + 2*13,374
    assert_counts_exact(CONFIGS, [48_864, 31_548])
    assert_class_default_total("emu3", 8_492_011_520)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """RoPE's fp32 inv_freq and its copy: 2*4*5."""
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == 40


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate/hf_more_types.py writes the emu3 config.json
# back): parameters, matmul FLOPs, other ops, bytes saved, KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_refused_in_one_line = refused_in_one_line(CONFIGS["emu3"], [
    ({"text_config": [1]}, "an emu3 config is read as its language model, text_config, which must be an object"),
    ({"text_config": dict(_TEXT, hidden_act="tanh")}, "unsupported hidden_act 'tanh'"),
])


def test_the_hubs_file_names_the_language_model():
    """BAAI/Emu3-Chat-hf's config.json holds a vq_config too (the image tokenizer of
    Emu3ForConditionalGeneration): the estimate is the language model's, and its name says so."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(dict(CONFIGS["emu3"], vq_config={}), name="m")
    assert cfg.name == "m (language model)" and cfg.family == "emu3"
    assert from_hf_config(CONFIGS["emu3"], name="m").name == "m"
