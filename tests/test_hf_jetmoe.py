"""JetMoE (costmodel/hf_jetmoe.py: model_type "jetmoe") against transformers 5.24's JetMoeForCausalLM
built from the same config dict: parameters and buffers (JetMoeConfig's defaults, jetmoe-8b's shape and
three odd configs), validate's rows on the CPU's real tensors (matmul FLOPs forward and backward, the
profiler's second count, other ops' elements, bytes saved for backward, the KV cache) under eager and
sdpa in bf16 and fp32, a cached decode step's and a prefill's FLOPs, the cache after a prefill, and the
configs refused in one line.

Its mixture of attention heads (blocks/attention_experts.py) and MLP experts route each token to k of E
experts by data-dependent sizes (`expert_size.tolist()`), which FakeTensorMode cannot run, so every
measurement here runs real tensors. The routing decides only which expert runs a slot: every slot runs
one, so FLOPs and bytes are the same whatever the router picks (the measured counts equal the tree's at
random weights and tokens)."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_class_default_total, assert_counts_exact, family_checks, refused_in_one_line
from tests.family_configs import assert_rows_exact, buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="jetmoe", vocab_size=99, hidden_size=48, intermediate_size=37, num_hidden_layers=3,
             max_position_embeddings=64, bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # top 2 of 5 experts, 3 KV heads of 10 (so 6 query heads of 10; 30 a query group, not 48 / 6), untied
    "jetmoe": dict(_BASE, num_key_value_heads=3, kv_channels=10, num_local_experts=5, num_experts_per_tok=2,
                   tie_word_embeddings=False),
    # top 1 of 3 (the query heads are the KV heads, still repeated by a copy), 4 KV heads of 8, tied,
    # dropout on the probabilities (sdpa's math path)
    "jetmoe-top1": dict(_BASE, num_key_value_heads=4, kv_channels=8, num_local_experts=3, num_experts_per_tok=1,
                        intermediate_size=24, attention_dropout=0.1),
    # top 3 of 7, one KV head of 14 (multi-query: 3 query heads), 2 layers
    "jetmoe-mqa": dict(_BASE, num_key_value_heads=1, kv_channels=14, num_local_experts=7, num_experts_per_tok=3,
                       num_hidden_layers=2, tie_word_embeddings=False),
}

CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts, the meta models' (transformers 5.24). The first: a layer's MoA has
    5 x 48 x 30 query and 5 x 30 x 48 output experts (14,400), a router of 5 x 48 and a bias of 48,
    kv_proj 48 x 60 (2,880); its MoE 5 x 48 x 74 input and 5 x 37 x 48 output experts (26,640), a
    router of 240 and a bias of 48; two norms of 48: 44,592 a layer; untied 2 x 99 x 48 + 48 beside."""
    assert_counts_exact(CONFIGS, [143_328, 107_376, 74_208])


def test_jetmoe_config_defaults():
    """JetMoeConfig() (d 2,048, 12 layers, 16 KV heads of 128 with top 2 of 8 experts, MLP 5,632, vocab
    32,000, tied): 4,293,888,000 parameters, ours and the meta model's."""
    assert_class_default_total("jetmoe", 4_293_888_000)


def test_jetmoe_8b_shape():
    """jetmoe/jetmoe-8b's shape (JetMoeConfig's with 24 layers): 8,522,237,952 parameters, 2,331,445,248
    active (a token's 2 of 8 experts in both mixtures; 2,265,909,248 without the 65,536,000 of the tied
    embeddings), the released model's "8B" and "2.2B active"."""
    from costmodel import estimate

    fields = dict(model_type="jetmoe", num_hidden_layers=24)
    assert estimated_total(fields, "x") == hf_meta_count(fields) == 8_522_237_952
    assert estimate(dict(fields, name="x"), seq_len=16).to_dict()["params"]["active"] == 2_331_445_248


@pytest.mark.parametrize("name,expected", [("jetmoe", 40), ("jetmoe-top1", 32), ("jetmoe-mqa", 56)])
def test_buffers_equal_the_class(name, expected):
    """The rotary inverse frequencies (kv_channels / 2 in fp32, twice: inv_freq and original_inv_freq)."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_validate_rows_exact_on_real_tensors(name, attention, dtype):
    """validate's rows (b 2, n 12, 2 generated tokens) on the CPU's real tensors, with torch.profiler's
    count of the training matmul FLOPs under eager."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(CONFIGS[name]), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2, attention=attention),
                    target="hf", device="cpu")
    assert_rows_exact(rows, frozenset({"training matmul FLOPs (profiler)"}) if attention == "eager" else frozenset())


def test_validate_under_fake_tensors_is_one_line(tmp_path, capsys):
    """The routing's tolist() cannot run under FakeTensorMode: validate's default device is refused in
    one line that names --device cpu."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["jetmoe"]))
    code, _, err = run_main(["validate", "--config", str(path), "--seq-len", "12"], capsys)
    assert code == 2 and err.count("\n") == 1 and "use --device cpu" in err, err


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_and_prefill_flops(name):
    """A cached decode step at three cache lengths (real fp32 tensors) and a prefill, against the trees."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact, assert_prefill_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name, real=True)
    assert_prefill_flops_exact(CONFIGS[name], name)


# Every layer's keys and values (h_kv heads, before the repeat) after a prefill.
test_cache_after_prefill = CHECKS.cache_after_prefill

# The class's training forward with its loss against the tree's activations, eager, b 2, n 9.
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


def test_bytes_saved_exact_integer():
    """The first odd config at b 2, n 9 (18 tokens, 36 slots) in bf16, eager: proven equal to the
    class by test_bytes_saved_for_backward."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["jetmoe"], name="x"), seq_len=9, batch=2, dtype="bf16").to_dict()
    assert ours["memory"]["activations"] == 207_220


test_refused_in_one_line = refused_in_one_line(CONFIGS["jetmoe"], [
    ({"activation_function": "gelu"}, "unsupported activation_function 'gelu' for jetmoe"),
    ({"num_experts_per_tok": 6}, "num_experts_per_tok (6) is more than num_local_experts (5)"),
    ({"output_router_logits": True}, "output_router_logits"),
    ({"num_local_experts": 0}, "num_local_experts must be"),
    ({"kv_channels": 9}, "even head dimension"),
])


def test_architectures_alone_name_the_model_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["jetmoe"].items() if k != "model_type"}
    assert from_hf_config(dict(bare, architectures=["JetMoeForCausalLM"]), name="x").family == "jetmoe"


@pytest.mark.parametrize("layout,words", [(["--tp", "3"], "tp = 3 splits JetMoE's mixture of attention heads"),
                                          (["--ep", "5", "--dp", "5"], "mixture of attention heads (attention_experts)")])
def test_parallel_layouts_of_the_mixture_of_attention_heads_refused(tmp_path, capsys, layout, words):
    """No framework splits JetMoeMoA over tensor- or expert-parallel ranks: one line each."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["jetmoe"]))
    code, _, err = run_main(["estimate", "--config", str(path), *layout], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err, err


def test_crossover_counts_the_attention_experts():
    """The regime's n* = projections and FFN over attention: the q and o experts are projections. The first
    odd config, per token and layer: two routers 2 x 2 x 48 x 5 (960), q and o experts 2 x 2 x 48 x 30 each
    (5,760 each), kv_proj 2 x 48 x 60 (5,760), MLP experts 2 x 2 x 3 x 48 x 37 (21,312): 39,552 FLOPs
    against 2 x 2 x 6 x 10 = 240 per key attended: n* = 164.8 (without the experts' q and o: 116.8)."""
    from costmodel import estimate

    regime = estimate(dict(CONFIGS["jetmoe"], name="x"), seq_len=12).to_dict()["regime"]
    assert regime["crossover_seq_len_exact"] == "824/5"
