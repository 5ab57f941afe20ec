"""GraniteMoeSWA (costmodel/hf_moe_extra.py: model_type "granitemoe_swa") against transformers 5.24's
GraniteMoeSWAForCausalLM built from the same config dict: parameters and buffers (Granite's
multipliers, windows by layer_types, a learned sink per head, a RoPE base per layer with NoPE
layers, one rotary table per distinct base beside the unused global one, the class default),
validate's rows under eager attention (the class has no sdpa path: matmul FLOPs forward and
backward, other ops' elements, bytes saved for backward with the sinks' logsumexp scaling, the KV
cache), a cached decode step's and a prefill's FLOPs, the cache after a prefill, and the configs
refused in one line.
"""

from __future__ import annotations

import pytest

from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_rows_exact, assert_saved_bytes_exact,
                                  buffer_bytes_both, estimated_total, hf_meta_count, odd_config_rows)

_BASE = dict(model_type="granitemoe_swa", vocab_size=99, hidden_size=48, num_attention_heads=6,
             num_key_value_heads=2, intermediate_size=24, num_hidden_layers=5, max_position_embeddings=64,
             num_local_experts=5, num_experts_per_tok=2, bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # the class's rule: layer 0 and 4 full, the rest a window of 5; one base (two rotary sets)
    "granitemoe_swa": dict(_BASE, sliding_window=5),
    # every layer sliding, NoPE on layers 1 and 3, two bases (three sets), Granite's multipliers,
    # q/k/v/o biases, a shared MLP of 16, a tied head
    "granitemoe_swa-nope": dict(_BASE, sliding_window=4, layer_types=["sliding_attention"] * 5,
                             layer_rope_theta=[10000, 0, 500, 0, 10000], embedding_multiplier=2.0,
                             attention_multiplier=0.3, residual_multiplier=0.5, logits_scaling=4.0,
                             tie_word_embeddings=True, attention_bias=True, shared_intermediate_size=16),
    # NoPE exactly on the full layers (0 and 4), one KV head, the top 1 expert
    "granitemoe_swa-nope-full": dict(_BASE, sliding_window=6, layer_rope_theta=[0, 10000, 10000, 10000, 0],
                                  num_key_value_heads=1, num_experts_per_tok=1),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_the_class(name):
    assert estimated_total(CONFIGS[name], name) == hf_meta_count(CONFIGS[name])


def test_parameters_exact_integers():
    """The odd configs' counts and GraniteMoeSWAConfig()'s (d 4,096, 32 layers, 32 heads, 8 experts
    of 11,008, the top 2, vocabulary 32,000, untied; 32 sinks a layer), the meta models'
    (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    assert counts == [128_382, 135_790, 124_542]
    default = transformers.AutoConfig.for_model("granitemoe_swa").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "granitemoe_swa"}) == 37_039_117_312


@pytest.mark.parametrize("name,expected", [("granitemoe_swa", 64), ("granitemoe_swa-nope", 96),
                                           ("granitemoe_swa-nope-full", 64)])
def test_buffers_equal_the_class(name, expected):
    """inv_freq and original_inv_freq (fp32, head_dim / 2 each) of the unused global rotary_emb and
    of one rotary_embs entry per distinct non-zero base."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_validate_rows_exact(name):
    """validate's rows (validate/hf_moe_extra.py writes the config.json back; bf16 under
    FakeTensorMode, b 2, n 12, 2 generated tokens, eager attention): parameters, forward and
    backward matmul FLOPs, other ops' elements, bytes saved for backward and the KV cache."""
    assert_rows_exact(odd_config_rows(CONFIGS[name], name, "eager"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["granitemoe_swa", "granitemoe_swa-nope"])
def test_validate_rows_exact_on_real_tensors_in_fp32(name):
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_and_prefill_flops(name):
    """A cached decode step at three cache lengths and a prefill, against the decode tree."""
    assert_decode_flops_exact(CONFIGS[name], name)
    assert_prefill_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Every layer's keys and values after a prefill (a sliding layer's storage the whole prompt)."""
    assert_cache_after_prefill_exact(CONFIGS[name], name, dtype)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_for_backward(name, dtype):
    """The class's eager training forward with its loss against the tree's activations: the sinks'
    logsumexp keeps the masked scores and its result, the fp32 sigmoid its output, the product the
    weighted sum's output and (narrower than fp32) the cast scale (blocks/attention.py
    Softmax.lse_sink_cost)."""
    assert_saved_bytes_exact(CONFIGS[name], name, dtype, attention="eager")


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = 246_992


def test_bytes_saved_exact_integer():
    """The first odd config at b 2, n 9 in bf16."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["granitemoe_swa"], name="x"), seq_len=9, batch=2, dtype="bf16",
                    attention="eager").to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED


@pytest.mark.parametrize("fields,words", [
    (dict(CONFIGS["granitemoe_swa"], sliding_window=None), "sliding_window is null"),
    (dict(CONFIGS["granitemoe_swa"], layer_rope_theta=[0] * 5), "no RoPE anywhere"),
    (dict(CONFIGS["granitemoe_swa"], layer_rope_theta=[1, 2]), "layer_rope_theta must list"),
    (dict(CONFIGS["granitemoe_swa"], layer_rope_theta=[10000, 0, 10000, 10000, 10000]), "layers without RoPE beside windows"),
    (dict(CONFIGS["granitemoe_swa"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for granitemoe_swa"),
])
def test_refused_in_one_line(fields, words, tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1 and words in err, err


def test_sdpa_is_refused(tmp_path, capsys):
    """GraniteMoeSWAPreTrainedModel._supports_sdpa is False: --attention sdpa is one error line, status 2
    (after the window's warning, which the CLI prints for any sliding-window model)."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["granitemoe_swa"]))
    code, out, err = run_main(["estimate", "--config", str(path), "--attention", "sdpa"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "_supports_sdpa is False" in errors[0], err


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["granitemoe_swa"].items() if k != "model_type"}
    bare["architectures"] = ["GraniteMoeSWAForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["granitemoe_swa"], name="x")
