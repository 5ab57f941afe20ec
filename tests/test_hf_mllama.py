"""Llama 3.2 Vision's language model on text (costmodel/hf_more_types.py: model_type "mllama") against
transformers 5.24's MllamaForCausalLM, which AutoModelForCausalLM builds from the same config dict's
text_config: parameters (MllamaConfig()'s defaults and odd configs: the cross-attention layers held,
the token table 8 rows wider than the head), buffers, validate's rows under eager attention and sdpa,
bytes saved for backward, the cache after a prefill, a decode step's and a prefill's FLOPs (text
prompts: MllamaTextModel skips a cross-attention layer without image states), and the configs refused
in one line."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_checks import assert_class_default_total, assert_counts_exact, family_checks
from tests.family_configs import buffer_bytes_both

_TEXT = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2, intermediate_size=37,
             num_hidden_layers=4, max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2)

#: vocab_size at the top as well, where the measurement helpers read it (the reader reads text_config).
CONFIGS = {
    # one cross-attention layer (index 1) among four, GQA 6/2, head 8
    "mllama": dict(model_type="mllama", vocab_size=99, text_config=dict(_TEXT, cross_attention_layers=[1])),
    # two cross-attention layers (0 and 3) among five, one KV head, llama3 RoPE scaling
    "mllama-two": dict(model_type="mllama", vocab_size=99,
                       text_config=dict(_TEXT, num_hidden_layers=5, cross_attention_layers=[0, 3], num_key_value_heads=1,
                                        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0,
                                                         "factor": 8.0, "low_freq_factor": 1.0,
                                                         "high_freq_factor": 4.0,
                                                         "original_max_position_embeddings": 16})),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and MllamaConfig()'s (40 layers of hidden 4,096, 8 of them
    cross-attention, 32 heads and 8 KV heads, a SwiGLU of 14,336, vocabulary 128,256 (+8 token rows),
    untied: Llama 3.2 11B Vision's language model), the meta models'."""
    # a self-attention layer: q 48*48, k and v 48*16 each, o 48*48, two norms 96, SwiGLU 3*48*37: 11,568;
    # a cross-attention layer the same plus its q/k norms 2*8 and two gates: 11,586; the table (99+8)*48,
    # the head 99*48, the final norm 48: 3*11,568 + 11,586 + 107*48 + 99*48 + 48. The second (one KV head:
    # k and v 48*8): 3*10,800 + 2*10,818 + 107*48 + 99*48 + 48
    assert_counts_exact(CONFIGS, [56_226, 63_972])
    assert_class_default_total("mllama", 9_775_192_080)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate/hf_more_types.py writes the mllama
# config.json back, its cross-attention layers last): parameters, matmul FLOPs, other ops, bytes saved, KV
# cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


def test_the_hubs_file_names_text_prompts():
    """meta-llama/Llama-3.2-11B-Vision's config.json holds a vision_config too: the estimate is the language
    model's on text prompts, and its name says so."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(dict(CONFIGS["mllama"], vision_config={}), name="m")
    assert cfg.name == "m (language model, text prompts)" and cfg.family == "mllama"
    assert (cfg.n_decoder_layers, cfg.idle_cross_layers, cfg.embedding_extra_rows) == (3, 1, 8)


@pytest.mark.parametrize("change, words", [
    ({"tie_word_embeddings": True}, "tie_word_embeddings is not modelled for mllama"),
    ({"cross_attention_layers": [4]}, "cross_attention_layers must list distinct layer indices below"),
    ({"cross_attention_layers": [0, 1, 2, 3]}, "leaving a self-attention layer"),
    ({"dropout": 0.1}, "a nonzero dropout is not modelled for mllama"),
    ({"head_dim": 10}, "head_dim 10 is not hidden_size / num_attention_heads (8)"),
])
def test_refused_in_one_line(tmp_path, capsys, change, words):
    path = tmp_path / "config.json"
    data = dict(CONFIGS["mllama"], text_config=dict(CONFIGS["mllama"]["text_config"], **change))
    path.write_text(json.dumps(data))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err
