"""Xiaomi's MiMo-V2-Flash (model_type mimo_v2_flash, costmodel/hf_new_moe.py): parameters and
buffers equal to the class transformers 5.24 builds on the meta device (odd configs and the
configuration class's defaults), every eager `validate` row exact on the odd configs (slow:
parameters, forward and backward matmul FLOPs, element counts, bytes saved for backward, KV-cache
bytes), a cached decode step's FLOPs, the cache after a prefill, and what its code runs that no
block expresses refused in one line. What it needed of the tree, each piece general: per-layer KV
heads by layer kind (global_kv_heads, Gemma 4's, on the full layers), sinks on the windowed layers
only (sinks_windowed_only), a value head width outside latent attention (v_head_dim: the v
projection, the weighted sum, o_proj's input, the KV cache, the kernel shapes), the values times a
constant (value_scale), the eager row maximum without sinks (facts.scores_minus_row_max), and dense
full layers beside windowed and full expert layers (layer_pattern "dense"/"moe"/"moe_full")."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import assert_rows_exact, buffer_bytes_both
from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(model_type="mimo_v2_flash", vocab_size=99, hidden_size=48, num_attention_heads=6,
             intermediate_size=37, max_position_embeddings=64, pad_token_id=None, bos_token_id=None,
             eos_token_id=None)

#: Tiny, odd configs: q/k heads 10 wide, values 6 (v_head_dim), attention_value_scale 0.5.
CONFIGS = {
    # MiMoV2FlashConfig's rules on 7 layers: layer 0 and 5 full (one KV head, no sinks), the rest
    # sliding (two KV heads, a sink per query head, window 4); layer 0 dense (37), then top 2 of
    # 6 experts of 16 in 3 groups (topk_group 2); RoPE on int(10 x 0.334) = 3 of each head (4 rotated).
    "mimo": dict(_BASE, num_hidden_layers=7, num_key_value_heads=1, head_dim=10, v_head_dim=6,
                 sliding_window=4, n_routed_experts=6, num_experts_per_tok=2, moe_intermediate_size=16,
                 n_group=3, topk_group=2, attention_value_scale=0.5),
    # Every expert layer slides (layers 1-3), q/k/v biases, three KV heads on the full layer and six
    # on the sliding ones (one query head each), sliding_window_size 3 (a window of 4), a tied head,
    # no renormalisation, routed_scaling_factor 2.5, whole-head RoPE by layer type.
    "mimo-all-experts-slide": dict(_BASE, num_hidden_layers=4, num_key_value_heads=3, head_dim=8,
                                   v_head_dim=12, sliding_window_size=3, attention_bias=True,
                                   n_routed_experts=5, num_experts_per_tok=3, moe_intermediate_size=24,
                                   norm_topk_prob=False, routed_scaling_factor=2.5,
                                   tie_word_embeddings=True, attention_value_scale=None,
                                   rope_parameters={kind: {"rope_type": "default", "rope_theta": 1e4,
                                                           "partial_rotary_factor": 1.0}
                                                    for kind in ("full_attention", "sliding_attention")}),
    # Every layer full (no window, no sink, one KV count), dense layers 0 and 2 among expert ones.
    "mimo-full": dict(_BASE, num_hidden_layers=3, num_key_value_heads=2, head_dim=10, v_head_dim=14,
                      layer_types=["full_attention"] * 3, mlp_layer_types=["dense", "sparse", "dense"],
                      n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16),
    # Every layer slides and has experts.
    "mimo-all-sliding": dict(_BASE, num_hidden_layers=2, num_key_value_heads=1, head_dim=8, v_head_dim=4,
                             layer_types=["sliding_attention"] * 2, mlp_layer_types=["sparse"] * 2,
                             sliding_window=5, n_routed_experts=4, num_experts_per_tok=2,
                             moe_intermediate_size=16),
}

#: MiMoV2FlashConfig's defaults (transformers 5.24; XiaomiMiMo/MiMo-V2-Flash's shape): 48 layers
#: 4096 wide, 64 query heads of 192 (values 128), 4 KV heads on the 9 full layers and 8 with
#: sinks on the 39 sliding ones, layer 0 dense (16384), 256 experts of 2048, top 8.
DEFAULT_PARAMETERS = 308_778_768_832


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


def test_default_config_parameters_equal_hugging_face():
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("mimo_v2_flash").to_dict()
    assert _ours(fields, "mimo_v2_flash") == _hf_count({"model_type": "mimo_v2_flash"}) == DEFAULT_PARAMETERS


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    """The rotary buffers (inv_freq and original_inv_freq per layer type, fp32) and each expert
    layer's fp32 e_score_correction_bias: bytes of every buffer of the bf16 meta model."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    assert_rows_exact(odd_config_rows(CONFIGS[name], name, "eager"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cache_after_prefill_equals_the_estimate(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_cache_after_prefill_exact

    assert_cache_after_prefill_exact(CONFIGS[name], name, "fp32")


def test_architectures_alone_name_the_model_type():
    """A config.json that names only `architectures` reads as mimo_v2_flash."""
    from costmodel.hf import from_hf_config

    fields = CONFIGS["mimo"]
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = ["MiMoV2FlashForCausalLM"]
    assert from_hf_config(bare, name="mimo") == from_hf_config(fields, name="mimo")


def test_the_layers_read_as_the_class_builds_them():
    """The odd config's layers: 0 dense and full, 1-4 windowed experts, 5 a full expert layer, 6
    windowed; two KV heads and a sink per query head on the windowed ones, one on the full ones."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["mimo"], name="mimo")
    assert cfg.layer_pattern == ("dense", "moe", "moe", "moe", "moe", "moe_full", "moe")
    assert (cfg.n_kv_heads, cfg.global_kv_heads, cfg.v_head_dim, cfg.d_head) == (2, 1, 6, 10)
    assert cfg.attention_sinks and cfg.sinks_windowed_only and cfg.value_scale
    assert [cfg.layer_slides(i) for i in range(7)] == [False, True, True, True, True, False, True]


def test_sdpa_is_refused_as_transformers_refuses_it(tmp_path, capsys):
    """MiMoV2FlashPreTrainedModel._supports_sdpa is False (fact sdpa_supported): --attention sdpa
    is one error line, exit 2; eager answers."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["mimo"]))
    code, out, err = run_main(["estimate", "--config", str(path), "--attention", "sdpa"], capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[-1].startswith("error:") and "scaled_dot_product_attention" in err
    code, out, _ = run_main(["estimate", "--config", str(path), "--attention", "eager", "--json"], capsys)
    assert code == 0 and json.loads(out)["params"]["total"] == _ours(CONFIGS["mimo"], "mimo")


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["mimo"], layer_types=["sliding_attention"] + ["full_attention"] * 6),
     "a dense (mlp_layer_types) layer with a sliding window beside expert layers"),
    (dict(CONFIGS["mimo"], num_key_value_heads=2), "not divisible by the sliding layers' 2 x num_key_value_heads (4)"),
    (dict(CONFIGS["mimo"], v_head_dim=None), "v_head_dim null is not modelled for mimo_v2_flash"),
    (dict(CONFIGS["mimo"], sliding_window=None), "sliding_window null is not modelled for mimo_v2_flash"),
    (dict(CONFIGS["mimo"], head_dim=None), "head_dim null is not modelled for mimo_v2_flash"),
    (dict(CONFIGS["mimo"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for mimo_v2_flash"),
    (dict(CONFIGS["mimo"], n_group=4), "n_routed_experts (6) is not divisible by n_group (4)"),
    (dict(CONFIGS["mimo"], num_experts_per_tok=None), "num_experts_per_tok is null but 6 layers have experts"),
    (dict(CONFIGS["mimo"], rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e4}}),
     "rope_parameters must hold one dict per layer type (sliding_attention missing)"),
])
def test_what_its_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


def test_the_general_pieces_hold_on_their_own():
    """Each piece the tree gained, on the odd config's ModelConfig: a value width outside MLA
    sizes the cache with the KV heads of each layer kind (b n h_kv (d_h + d_v) e a layer after a
    prefill of n = 12 at b 2, bf16: two KV heads of 10 + 6 on the 5 windowed layers, which hold the
    whole prompt then, one on the 2 full ones); the layer pattern's counts are checked; a value
    width outside MLA refuses what it does not express."""
    from costmodel.config import ConfigError
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["mimo"], name="mimo")
    assert cfg.structure()["layers"]["value_width_differs"] and cfg.structure()["layers"]["windows_on_experts"] == "some"
    from costmodel import estimate

    kv = estimate(dict(CONFIGS["mimo"], name="mimo"), seq_len=12, batch=2, dtype="bf16").to_dict()["memory"]["kv_cache"]
    assert kv == 2 * 12 * (2 * 16 * 5 + 1 * 16 * 2) * 2  # 5 windowed layers (1-4, 6), 2 full (0, 5)
    with pytest.raises(ConfigError, match="layer_pattern has 2 moe_full layers, the config 1"):
        cfg.replace(layer_pattern=("dense", "moe_full", "moe", "moe", "moe", "moe_full", "moe"))
    with pytest.raises(ConfigError, match="without MLA is modelled in decoder-only models"):
        cfg.replace(global_head_dim=12)
