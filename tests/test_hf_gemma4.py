"""Gemma 4's language model (costmodel/hf_gemma4.py: gemma4_text, and the gemma4 wrapper read as
its text_config): parameters and buffers equal to Gemma4ForCausalLM on the meta device
(transformers 5.24), every `validate` row exact under eager and sdpa (slow), decode-step FLOPs
equal to the decode tree (slow) with and without per-layer inputs and wider full-attention heads,
the class defaults' parameters, the facts Gemma 4's code needs (its pow-statistics RMSNorm, the
weightless value norm, the layer_scalar buffer) each measured, and the features the blocks here
do not express refused in one sentence."""

from __future__ import annotations

import json

import pytest

from costmodel.config import ConfigError
from costmodel.hf import from_hf_config
from tests.cli_run import run_main
from tests.family_configs import assert_rows_exact, buffer_bytes_both
from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(model_type="gemma4_text", vocab_size=99, hidden_size=48, num_attention_heads=6,
             num_key_value_heads=2, head_dim=10, global_head_dim=10, intermediate_size=37,
             num_hidden_layers=4, max_position_embeddings=64, sliding_window=5,
             hidden_size_per_layer_input=0)

#: Tiny, odd configs (head_dim 10, not hidden/heads = 8; the full-attention head as wide).
CONFIGS = {
    # The class's own layer rule (all but every sixth slide; the last layer forced full): layers
    # 0-2 sliding, 3 full; the default RoPE (proportional, a quarter rotated, on full layers).
    "gemma4": _BASE,
    # Every layer full (one RoPE table), q/k/v/o biases, an untied head, a final soft cap.
    "gemma4-full": dict(_BASE, layer_types=["full_attention"] * 4, attention_bias=True,
                        tie_word_embeddings=False, final_logit_softcapping=30.0),
    # Alternating kinds, a window of 3, exact GELU (hidden_activation "gelu"), one KV head, both
    # RoPE kinds default, the full layers' widths given as per_layer_config.
    "gemma4-alternating": dict(_BASE, layer_types=["sliding_attention", "full_attention"] * 2,
                               sliding_window=3, hidden_activation="gelu", num_key_value_heads=1,
                               rope_parameters={
                                   "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                   "full_attention": {"rope_type": "default", "rope_theta": 1e6}},
                               per_layer_config={"1": {"head_dim": 10}, "3": {"head_dim": 10}}),
    # use_bidirectional_attention "vision" (image tokens only: the text model stays causal),
    # attention dropout 0.1 on the probabilities, two kinds by the default rule over 7 layers.
    "gemma4-vision": dict(_BASE, use_bidirectional_attention="vision", attention_dropout=0.1,
                          num_hidden_layers=7),
    # Per-layer inputs (hidden_size_per_layer_input 8 over 4 layers, a 128-row table): the table, the
    # d -> 32 projection and its slice norm before the layers, a gate in each layer after the FFN.
    "gemma4-per-layer": dict(_BASE, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128),
    # The same with exact GELU, alternating kinds over 5 layers, a 6-wide input and an untied head.
    "gemma4-per-layer-gelu": dict(_BASE, hidden_size_per_layer_input=6, vocab_size_per_layer_input=101,
                                  hidden_activation="gelu", num_hidden_layers=5, tie_word_embeddings=False,
                                  layer_types=["sliding_attention", "full_attention"] * 2 + ["full_attention"]),
    # Full-attention heads 16 wide beside the sliding layers' 10 (global_head_dim), per-layer inputs.
    "gemma4-global-heads": dict(_BASE, global_head_dim=16, hidden_size_per_layer_input=8,
                                vocab_size_per_layer_input=128),
    # Keys as values on the full layers (attention_k_eq_v: no v_proj there), 16 wide, per-layer inputs.
    "gemma4-keys-as-values": dict(_BASE, global_head_dim=16, attention_k_eq_v=True, hidden_size_per_layer_input=8,
                                  vocab_size_per_layer_input=128),
    # The last 2 of 4 alternating layers reuse layers 0's and 1's K and V (num_kv_shared_layers; transformers
    # runs it only with per-layer inputs): no k/v projections, k/v norms or cache of their own.
    "gemma4-kv-shared": dict(_BASE, layer_types=["sliding_attention", "full_attention"] * 2, num_kv_shared_layers=2,
                             hidden_size_per_layer_input=8, vocab_size_per_layer_input=128),
    # The default layer rule over 9 layers (0-4 and 6-7 sliding) with the last 3 sharing, wider full
    # heads, keys as values and multi-head attention (6 KV heads: K and V reach the kernel unrepeated).
    "gemma4-kv-shared-wide": dict(_BASE, num_hidden_layers=9, num_kv_shared_layers=3, global_head_dim=16,
                                  attention_k_eq_v=True, num_key_value_heads=6, hidden_size_per_layer_input=8,
                                  vocab_size_per_layer_input=128),
    # The sharing layers' MLPs twice as wide (use_double_wide_mlp), exact GELU.
    "gemma4-kv-shared-double-wide": dict(_BASE, layer_types=["sliding_attention", "full_attention"] * 2,
                                         num_kv_shared_layers=2, use_double_wide_mlp=True, hidden_activation="gelu",
                                         hidden_size_per_layer_input=8, vocab_size_per_layer_input=128),
    # Keys as values with one KV head on the full layers (num_global_key_value_heads) beside the sliding 2.
    "gemma4-global-kv-heads": dict(_BASE, global_head_dim=16, attention_k_eq_v=True, num_global_key_value_heads=1,
                                   hidden_size_per_layer_input=8, vocab_size_per_layer_input=128),
    # The full layers' width 12 given by index in per_layer_config (with their equal KV heads).
    "gemma4-per-layer-config": dict(_BASE, layer_types=["sliding_attention", "full_attention"] * 2,
                                    num_key_value_heads=1, per_layer_config={
                                        "1": {"head_dim": 12}, "3": {"head_dim": 12, "num_key_value_heads": 1}}),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


@pytest.mark.parametrize("name, expected", [
    # 4 x (q 288 + k 96 + v 96 + o 288 (x 48) + q/k norms 20 + MLP 3 x 48 x 37 + 4 norms of 48)
    # + embeddings 99 x 48 + final norm 48.
    ("gemma4", 57_680),
    # + q/k/v/o biases 4 x (60 + 20 + 20 + 48) and an untied head 99 x 48.
    ("gemma4-full", 63_024),
    # 57,680 + the per-layer table 128 x (4 x 8) + the projection 48 x 32 + its norm 8
    # + 4 x (gate 48 x 8 + projection 8 x 48 + norm 48)
    ("gemma4-per-layer", 66_584),
    # 66,584 + the full layer's q and o 2 x 48 x 36 + k and v 2 x 48 x 12 + q/k norms 2 x 6
    ("gemma4-global-heads", 71_204),
    # 71,204 less the full layer's v_proj 48 x 2 x 16
    ("gemma4-keys-as-values", 69_668),
    # 66,584 less the 2 sharing layers' k and v projections 2 x 48 x 20 and k_norm 10
    ("gemma4-kv-shared", 62_724),
    # + the 2 sharing layers' MLPs' second 3 x 48 x 37
    ("gemma4-kv-shared-double-wide", 73_380),
])
def test_parameters_are_the_counted_integers(name, expected):
    assert _ours(CONFIGS[name], name) == expected


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    """inv_freq and original_inv_freq (fp32, d_h / 2 each) per layer kind, the bf16 embed_scale
    and each layer's bf16 layer_scalar."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


def test_buffers_are_the_counted_bytes():
    """Two kinds x 2 tables x 5 x 4 bytes + embed_scale 2 + 4 layer_scalars x 2 = 90; one kind: 50;
    per-layer inputs add their table's embed_scale, 2."""
    assert buffer_bytes_both(CONFIGS["gemma4"], "g")[0] == 90
    assert buffer_bytes_both(CONFIGS["gemma4-full"], "g")[0] == 50
    assert buffer_bytes_both(CONFIGS["gemma4-per-layer"], "g")[0] == 92


def test_the_class_defaults_are_read_exactly():
    """Gemma4TextConfig's own defaults (per-layer inputs 256 wide, full-attention heads 512 wide
    beside the sliding layers' 256): 5 full layers x (q and o 2 x 2,304 x 4,096 + k and v
    2 x 2,304 x 2,048 + q/k norms 1,024) more than with global_head_dim 256, 5,006,396,416."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("gemma4_text").to_dict()
    expected = 5_006_396_416 + 5 * (2 * 2_304 * 2_048 + 2 * 2_304 * 1_024 + 512)
    assert _ours(fields, "d") == expected == _hf_count({"model_type": "gemma4_text"})
    cfg = from_hf_config(fields, name="d")
    assert (cfg.d_head, cfg.global_head_dim, cfg.per_layer_input, cfg.per_layer_vocab) == (256, 512, 256, 262_144)
    # Keys as values with 2 KV heads on the full layers (num_global_key_value_heads) beside the sliding 4.
    global_kv = {"model_type": "gemma4_text", "attention_k_eq_v": True, "num_global_key_value_heads": 2}
    unresolved = {k: v for k, v in fields.items() if k != "per_layer_config"}  # built from them, as the class does
    assert _ours(dict(unresolved, **global_kv), "g") == _hf_count(global_kv)
    # The last 10 layers reusing K and V (8 sliding, 2 full) with double-wide MLPs, as transformers builds it.
    sharing = {"model_type": "gemma4_text", "num_kv_shared_layers": 10, "use_double_wide_mlp": True}
    assert _ours(dict(fields, **sharing), "s") == _hf_count(sharing)
    # attention_k_eq_v: no v_proj on the 5 full layers (2,304 x 4 x 512 each)
    keys_as_values = {"model_type": "gemma4_text", "attention_k_eq_v": True}
    assert _ours(dict(fields, attention_k_eq_v=True), "k") == expected - 5 * 2_304 * 2_048 == _hf_count(keys_as_values)


def test_the_class_defaults_with_full_attention_heads_as_wide():
    """Gemma4TextConfig's defaults (per-layer inputs on, 256 wide) with global_head_dim 256:
    30 layers x (attention 14,155,776 + q/k norms 512 + MLP 63,700,992 + norms 9,216
    + per-layer gate and projection 2 x 2,304 x 256 + its norm 2,304) + embeddings 262,144 x 2,304
    + per-layer table 262,144 x 7,680 + projection 2,304 x 7,680 + its norm 256 + final norm 2,304
    = 5.01B (2.94B without the per-layer inputs)."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("gemma4_text").to_dict()
    fields.pop("per_layer_config")
    fields.update(global_head_dim=256)
    expected = 5_006_396_416
    assert _ours(fields, "d") == expected == _hf_count({"model_type": "gemma4_text", "global_head_dim": 256})
    assert _ours(dict(fields, hidden_size_per_layer_input=0), "d") == 2_939_976_960 == _hf_count(
        {"model_type": "gemma4_text", "hidden_size_per_layer_input": 0, "global_head_dim": 256})
    cfg = from_hf_config(fields, name="d")
    assert (cfg.sliding_window, cfg.window_layers, cfg.rotary_sets) == (512, 25, 2)
    assert (cfg.per_layer_input, cfg.per_layer_vocab) == (256, 262_144)
    assert [i for i in range(30) if not cfg.layer_slides(i)] == [5, 11, 17, 23, 29]


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert_rows_exact(rows)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemma4-per-layer", "gemma4-global-heads", "gemma4-keys-as-values",
                                  "gemma4-kv-shared-wide", "gemma4-global-kv-heads"])
def test_every_validate_row_is_exact_in_fp32(name):
    """In fp32 the norms' x.float() is x itself: the per-layer projection's input (the scaled
    embeddings) is then the tensor layer 0's first norm keeps, and with keys as values the value
    norm's input the key norm's, each counted once."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(CONFIGS[name]), source=name, name=name)
    assert_rows_exact(validate(cfg, Workload(seq_len=12, batch=2, dtype="fp32", gen_tokens=2), target="hf"))


@pytest.mark.parametrize("name", ["gemma4-per-layer", "gemma4-global-heads", "gemma4-per-layer-config",
                                  "gemma4-kv-shared", "gemma4-kv-shared-wide"])
def test_cache_after_a_real_prefill(name):
    """Full layers cache 2 x h_kv x d_hg per token, sliding ones 2 x h_kv x d_h (a prompt of 4,
    within the window of 5, which the sliding layers' tensors then hold whole); layers reusing an
    earlier layer's K and V cache nothing."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_cache_after_prefill_exact

    assert_cache_after_prefill_exact(CONFIGS[name], name, "bf16", n=4)


@pytest.mark.parametrize("keep", [1, 0])
@pytest.mark.parametrize("name", ["gemma4-kv-shared", "gemma4-kv-shared-wide"])
def test_prefill_flops_with_logits_to_keep(name, keep):
    """generate's prefill (logits_to_keep 1) runs the K/V-sharing layers on the last position only
    (Gemma4TextModel._maybe_slice_kv_shared_inputs), eager: FlopCounterMode over the class's
    forward equals the prefill tree's matmul FLOPs with Profile.logits_to_keep, 1 or 0 (every position)."""
    import dataclasses

    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.tree import CostModel, profile_for
    from tests.golden.hf_families import built
    from validate.measure import matmul_flops

    cfg = from_hf_config(CONFIGS[name], name="g")
    workload = Workload(seq_len=9, batch=2, dtype="bf16", attention="eager", impl="hf")
    tree = CostModel(cfg, dataclasses.replace(profile_for(cfg, workload), logits_to_keep=keep), phase="prefill")
    with built(dict(CONFIGS[name], _attn_implementation="eager"), torch.bfloat16) as model:
        model.eval()
        measured = matmul_flops(model, {"input_ids": torch.ones(2, 9, dtype=torch.long), "logits_to_keep": keep})
    assert measured.forward == exact(tree.total("flops_matmul"), values(cfg, workload))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("fact, short", [
    # 4 layers x v_norm (24 tokens x 2 heads x 10 fp32 + 2 x 48 rows fp32) = 9,216
    ("value_rmsnorm", 9_216),
    # one more fp32 value a row for each norm: 4 x (q 144 + k 48 + v 48 + 4 x 24) + final 24
    # rows, x 4 bytes
    ("rmsnorm_pow_stats", 5_472),
])
def test_each_gemma4_fact_is_the_measured_difference(fact, short, tmp_path, monkeypatch):
    """Without the fact the saved bytes at the validate workload (b = 2, n = 12, bf16) are this
    much short of what the class keeps (the validate rows are exact with it)."""
    from costmodel import estimate
    from costmodel.facts import FACTS_PATH

    def saved() -> int:
        result = estimate(dict(CONFIGS["gemma4"], name="g"), seq_len=12, batch=2, dtype="bf16")
        return result.to_dict()["memory"]["activations"]

    with_fact = saved()
    rows = [row for row in json.loads(FACTS_PATH.read_text())
            if not (row["fact"] == fact and "gemma4_text" in row["families"])]
    (tmp_path / "facts.json").write_text(json.dumps(rows))
    monkeypatch.setenv("COSTMODEL_FACTS", str(tmp_path / "facts.json"))
    assert with_fact - saved() == short


def test_architectures_alone_name_the_model_type():
    bare = {k: v for k, v in _BASE.items() if k != "model_type"}
    assert from_hf_config(dict(bare, architectures=["Gemma4ForCausalLM"]), name="g") == \
        from_hf_config(_BASE, name="g")


#: (wrapper's tie_word_embeddings, text_config's) -> the language model's parameters, counted from
#: Gemma4ForConditionalGeneration on the meta device (no vision or audio tower): the wrapper's
#: value decides, True by default; an untied head adds 99 x 48 = 4,752.
_WRAPPED = {(None, None): 57_680, (None, False): 57_680, (False, None): 62_432,
            (False, True): 62_432, (True, False): 57_680}


def _wrapper(wrapper_tie, text_tie) -> dict:
    text = {k: v for k, v in _BASE.items() if k != "model_type"}
    if text_tie is not None:
        text["tie_word_embeddings"] = text_tie
    return {"model_type": "gemma4", "text_config": text, "vision_config": None, "audio_config": None,
            **({} if wrapper_tie is None else {"tie_word_embeddings": wrapper_tie})}


@pytest.mark.parametrize("wrapper_tie, text_tie", sorted(_WRAPPED, key=str))
def test_the_gemma4_wrapper_is_read_as_its_language_model(wrapper_tie, text_tie):
    from costmodel import estimate

    cfg = from_hf_config(_wrapper(wrapper_tie, text_tie), name="m")
    assert cfg.name == "m (language model)" and cfg.family == "gemma4_text"
    assert estimate(cfg).to_dict()["params"]["total"] == _WRAPPED[(wrapper_tie, text_tie)]


@pytest.mark.parametrize("wrapper_tie, text_tie", sorted(_WRAPPED, key=str))
def test_wrapper_counts_are_transformers_own(wrapper_tie, text_tie):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    data = _wrapper(wrapper_tie, text_tie)
    config = transformers.Gemma4Config(**{k: v for k, v in data.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.Gemma4ForConditionalGeneration(config)
    assert sum(p.numel() for p in model.parameters()) == _WRAPPED[(wrapper_tie, text_tie)]


@pytest.mark.parametrize("changes, words", [
    (dict(hidden_size_per_layer_input=-1), "hidden_size_per_layer_input"),
    (dict(hidden_size_per_layer_input=8, vocab_size_per_layer_input=0), "vocab_size_per_layer_input"),
    (dict(global_head_dim=15), "the full-attention head widths must be an even positive integer, got 15"),
    (dict(per_layer_config={"0": {"head_dim": 12}}), "head widths [10, 12] are not modelled: sliding layers must keep 10"),
    (dict(per_layer_config={"2": {"head_dim": 12}, "3": {"head_dim": 14}}), "full layers share one"),
    (dict(per_layer_config={"3": {"sliding_window": 3}}), "per_layer_config's sliding_window is not modelled"),
    (dict(per_layer_config={"9": {"head_dim": 12}}), "per_layer_config key '9' names no layer"),
    (dict(per_layer_config={"0": {"num_key_value_heads": 1}}), "KV heads [1, 2] are not modelled: sliding layers"),
    (dict(attention_k_eq_v=True, num_global_key_value_heads=4),
     "num_attention_heads (6) is not divisible by the full layers' KV heads (4)"),
    (dict(num_kv_shared_layers=2), "num_kv_shared_layers without per-layer inputs"),
    (dict(num_kv_shared_layers=3, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128),
     "num_kv_shared_layers is modelled for models with sliding and full layers, each kind with a layer"),
    (dict(num_kv_shared_layers=1, layer_types=["full_attention"] * 4, hidden_size_per_layer_input=8,
          vocab_size_per_layer_input=128), "num_kv_shared_layers is modelled for models with sliding and full"),
    (dict(enable_moe_block=True, num_experts=4, top_k_experts=2, moe_intermediate_size=8),
     "enable_moe_block (Gemma 4's experts beside the MLP"),
    (dict(use_bidirectional_attention="all"), "use_bidirectional_attention \"all\""),
    (dict(rope_parameters={"sliding_attention": {"rope_type": "yarn", "factor": 2.0},
                           "full_attention": {"rope_type": "default"}}),
     "rope_type 'yarn' for sliding_attention is not modelled"),
    (dict(rope_parameters={"full_attention": {"rope_type": "default"}}),
     "rope_parameters must give an object for each layer type"),
    (dict(hidden_activation="relu"), "unsupported hidden_activation 'relu' for gemma4_text"),
    (dict(use_bidirectional_attention=True), "use_bidirectional_attention must be null"),
    (dict(rope_parameters={"sliding_attention": None, "full_attention": {"rope_type": "default"}}),
     "rope_parameters for sliding_attention must be an object, got None"),
    (dict(sliding_window="null"), "sliding_window null is not modelled for gemma4_text"),
    (dict(num_key_value_heads=None, num_attention_heads=6),
     "num_attention_heads (6) is not divisible by num_key_value_heads (4, Gemma4TextConfig's"),
])
def test_unmodelled_features_are_refused_in_one_sentence(changes, words):
    fields = dict(_BASE, **changes)
    fields = {k: None if v == "null" else v for k, v in fields.items() if v is not None}
    with pytest.raises(ConfigError) as error:
        from_hf_config(fields, name="g")
    message = str(error.value)
    assert words in message and "\n" not in message


def test_the_command_line_reads_class_defaults_and_refuses_kv_sharing_with_status_2(tmp_path, capsys):
    pytest.importorskip("transformers")
    path = tmp_path / "config.json"
    small = {"model_type": "gemma4_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
             "num_key_value_heads": 1, "intermediate_size": 128, "vocab_size": 100}
    path.write_text(json.dumps(small))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == _hf_count(small)
    capsys.readouterr()  # transformers' own warning while building the class
    path.write_text(json.dumps(dict(small, num_kv_shared_layers=1)))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "num_kv_shared_layers" in err


def test_the_command_line_estimates_per_layer_inputs(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["gemma4-per-layer"]))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == 66_584


def test_the_command_line_reads_a_gemma4_wrapper(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_wrapper(None, None)))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == 57_680


def test_model_config_checks_the_per_layer_fields():
    """per_layer_input and per_layer_vocab go together; the reference model builds none of the
    Gemma 4 fields, so it names them."""
    from costmodel.config import ModelConfig
    from costmodel.workload import reference_unsupported

    base = dict(name="m", vocab_size=99, d_model=48, n_heads=6, d_ff=37, n_decoder_layers=2)
    with pytest.raises(ConfigError, match="per_layer_input and per_layer_vocab go together"):
        ModelConfig(**base, per_layer_input=8)
    cfg = ModelConfig(**base, per_layer_input=8, per_layer_vocab=99, global_head_dim=16, keys_as_values=True,
                      global_kv_heads=3)
    assert {"per_layer_input", "global_head_dim", "keys_as_values", "global_kv_heads"} <= set(reference_unsupported(cfg))
    with pytest.raises(ConfigError, match="double_wide_shared .* needs kv_shared_layers"):
        ModelConfig(**base, double_wide_shared=True)
