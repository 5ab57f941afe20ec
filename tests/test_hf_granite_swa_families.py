"""GraniteSWA (costmodel/hf_llama_variants.py: model_type "granite_swa") and GraniteMoeSWA
(costmodel/hf_moe_extra.py: "granitemoe_swa") against transformers 5.24's GraniteSWAForCausalLM and
GraniteMoeSWAForCausalLM built from the same config dicts: parameters and buffers (Granite's
multipliers, windows by layer_types, a learned sink per head, a RoPE base per layer with NoPE
layers, one rotary table per distinct base beside the unused global one, the class default),
validate's rows under eager attention (the classes have no sdpa path: matmul FLOPs forward and
backward, other ops' elements, bytes saved for backward with the sinks' logsumexp scaling, the KV
cache), a cached decode step's and a prefill's FLOPs, the cache after a prefill, and the configs
refused in one line. One table holds what differs between the two types (FAMILIES); the
validate rows are written back by each type's writer (validate/hf_llama_variants.py,
validate/hf_moe_extra.py).
"""

from __future__ import annotations

import json

import pytest

from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_rows_exact, assert_saved_bytes_exact,
                                  buffer_bytes_both, estimated_total, hf_meta_count, odd_config_rows)


def _configs(base: dict, nope: dict, nope_full: dict) -> dict[str, dict]:
    """The three odd configs of a type: the class's rule (layers 0 and 4 full, the rest a window of
    5; one base, two rotary sets); every layer sliding with NoPE on layers 1 and 3, two bases (three
    sets) and Granite's multipliers; NoPE exactly on the full layers (0 and 4), one KV head."""
    kind = base["model_type"]
    return {
        kind: dict(base, sliding_window=5),
        f"{kind}-nope": dict(base, sliding_window=4, layer_types=["sliding_attention"] * 5,
                             layer_rope_theta=[10000, 0, 500, 0, 10000], embedding_multiplier=2.0,
                             attention_multiplier=0.3, residual_multiplier=0.5, logits_scaling=4.0,
                             attention_bias=True, **nope),
        f"{kind}-nope-full": dict(base, sliding_window=6, layer_rope_theta=[0, 10000, 10000, 10000, 0],
                                  num_key_value_heads=1, **nope_full),
    }


_SHAPE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2, num_hidden_layers=5,
              max_position_embeddings=64, bos_token_id=None, eos_token_id=None)

#: by model type: the odd configs; their parameter counts (sorted by name) and buffer bytes, the
#: meta models' (transformers 5.24); the class default's count; estimate's bytes saved for backward
#: of the first config at b 2, n 9 in bf16 (test_bytes_saved_for_backward proves it equal to the
#: class's); the class names' stem.
FAMILIES = {
    # GraniteSWAConfig(): d 2,560, 24 layers, 20 heads, 4 KV heads, vocabulary 100,352, tied; 20 sinks a layer.
    # The -nope config adds an MLP bias and an untied head.
    "granite_swa": dict(
        configs=_configs(dict(_SHAPE, model_type="granite_swa", intermediate_size=37),
                         dict(tie_word_embeddings=False, mlp_bias=True), {}),
        counts=[62_670, 68_672, 58_830], default=2_144_463_840, buffers=[64, 96, 64],
        bytes_saved=197_572, stem="GraniteSWA"),
    # GraniteMoeSWAConfig(): d 4,096, 32 layers, 32 heads, 8 experts of 11,008, the top 2, vocabulary
    # 32,000, untied; 32 sinks a layer. The -nope config adds a shared MLP of 16 and a tied head, the
    # -nope-full config routes to the top 1 expert.
    "granitemoe_swa": dict(
        configs=_configs(dict(_SHAPE, model_type="granitemoe_swa", intermediate_size=24, num_local_experts=5,
                              num_experts_per_tok=2),
                         dict(tie_word_embeddings=True, shared_intermediate_size=16), dict(num_experts_per_tok=1)),
        counts=[128_382, 135_790, 124_542], default=37_039_117_312, buffers=[64, 96, 64],
        bytes_saved=246_992, stem="GraniteMoeSWA"),
}

CONFIGS = {name: config for family in FAMILIES.values() for name, config in family["configs"].items()}
ODD = sorted(CONFIGS)


@pytest.mark.parametrize("name", ODD)
def test_parameters_equal_the_class(name):
    assert estimated_total(CONFIGS[name], name) == hf_meta_count(CONFIGS[name])


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_parameters_exact_integers(kind):
    """The odd configs' counts and the class default's, the meta models' (transformers 5.24)."""
    transformers = pytest.importorskip("transformers")
    family = FAMILIES[kind]
    configs = family["configs"]
    counts = [hf_meta_count(configs[name]) for name in sorted(configs)]
    assert counts == [estimated_total(configs[name], name) for name in sorted(configs)]
    assert counts == family["counts"]
    default = transformers.AutoConfig.for_model(kind).to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": kind}) == family["default"]


@pytest.mark.parametrize("name,expected", [(name, bytes_) for family in FAMILIES.values()
                                           for name, bytes_ in zip(sorted(family["configs"]), family["buffers"])])
def test_buffers_equal_the_class(name, expected):
    """inv_freq and original_inv_freq (fp32, head_dim / 2 each) of the unused global rotary_emb and
    of one rotary_embs entry per distinct non-zero base."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


@pytest.mark.parametrize("name", ODD)
def test_validate_rows_exact(name):
    """validate's rows (the type's writer writes the config.json back; bf16 under FakeTensorMode,
    b 2, n 12, 2 generated tokens, eager attention): parameters, forward and backward matmul FLOPs,
    other ops' elements, bytes saved for backward and the KV cache."""
    assert_rows_exact(odd_config_rows(CONFIGS[name], name, "eager"))


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for kind in sorted(FAMILIES) for name in (kind, f"{kind}-nope")])
def test_validate_rows_exact_on_real_tensors_in_fp32(name):
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", ODD)
def test_decode_and_prefill_flops(name):
    """A cached decode step at three cache lengths and a prefill, against the decode tree."""
    assert_decode_flops_exact(CONFIGS[name], name)
    assert_prefill_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", ODD)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Every layer's keys and values after a prefill (a sliding layer's storage the whole prompt)."""
    assert_cache_after_prefill_exact(CONFIGS[name], name, dtype)


@pytest.mark.parametrize("name", ODD)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_for_backward(name, dtype):
    """The class's eager training forward with its loss against the tree's activations: the sinks'
    logsumexp keeps the masked scores and its result, the fp32 sigmoid its output, the product the
    weighted sum's output and (narrower than fp32) the cast scale (blocks/attention.py
    Softmax.lse_sink_cost)."""
    assert_saved_bytes_exact(CONFIGS[name], name, dtype, attention="eager")


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_bytes_saved_exact_integer(kind):
    """The first odd config at b 2, n 9 in bf16."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS[kind], name="x"), seq_len=9, batch=2, dtype="bf16",
                    attention="eager").to_dict()
    assert ours["memory"]["activations"] == FAMILIES[kind]["bytes_saved"]


@pytest.mark.parametrize("kind,change,words", [
    (kind, change, words.format(kind=kind)) for kind in sorted(FAMILIES) for change, words in (
        (dict(sliding_window=None), "sliding_window is null"),
        (dict(layer_rope_theta=[0] * 5), "no RoPE anywhere"),
        (dict(layer_rope_theta=[1, 2]), "layer_rope_theta must list"),
        (dict(layer_rope_theta=[10000, 0, 10000, 10000, 10000]), "layers without RoPE beside windows"),
        (dict(hidden_act="gelu"), "unsupported hidden_act 'gelu' for {kind}"),
    )])
def test_refused_in_one_line(kind, change, words, tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(CONFIGS[kind], **change)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_sdpa_is_refused(kind, tmp_path, capsys):
    """GraniteSWAPreTrainedModel._supports_sdpa and GraniteMoeSWAPreTrainedModel's are False: --attention sdpa is one error line, status 2
    (after the window's warning, which the CLI prints for any sliding-window model)."""
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS[kind]))
    code, out, err = run_main(["estimate", "--config", str(path), "--attention", "sdpa"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "_supports_sdpa is False" in errors[0], err


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_architectures_name_the_type(kind):
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS[kind].items() if k != "model_type"}
    bare["architectures"] = [f"{FAMILIES[kind]['stem']}ForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS[kind], name="x")
