"""GLM-5 (glm_moe_dsa, costmodel/hf_deepseek_v32.py): DeepSeek-V3.2's layers (latent attention, the
lightning indexer, DeepSeek-V3's experts) under GlmMoeDsaConfig's defaults, the indexer's RoPE
interleaved. Parameters equal to the class transformers 5.24 builds on the meta device (odd configs
and GlmMoeDsaConfig's defaults, GLM-5's shapes), forward and decode matmul FLOPs equal to
FlopCounterMode, the KV cache equal to the cache the class holds, every `validate` row exact
(slow), and its "shared" indexer layers and the fields the code does not run refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import assert_rows_exact, estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(model_type="glm_moe_dsa", vocab_size=99, hidden_size=48, num_attention_heads=6,
             intermediate_size=37, num_hidden_layers=3, max_position_embeddings=64,
             pad_token_id=None, bos_token_id=None, eos_token_id=None)

#: Tiny, odd configs: latent attention (a query rank of 22, an 11-wide latent, 6 RoPE and 5 other
#: dimensions per query/key head, values of 9), an indexer of 3 heads of 10 (top 5 keys), layer 0
#: dense, then top 2 of 6 experts of 24 (grouped_mm needs 16-byte strides; one group, GLM's default) with one shared expert.
CONFIGS = {
    "glm_moe_dsa": dict(_BASE, num_key_value_heads=6, q_lora_rank=22, kv_lora_rank=11,
                        qk_rope_head_dim=6, qk_nope_head_dim=5, v_head_dim=9, n_routed_experts=6,
                        num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=24,
                        first_k_dense_replace=1, index_n_heads=3, index_head_dim=10, index_topk=5),
    # Indexer heads exactly as wide as the RoPE key, two heads; expert groups (4, top 2), two dense
    # layers by mlp_layer_types, attention biases, a tied head, indexer_types given all "full".
    "glm_moe_dsa-grouped": dict(_BASE, num_key_value_heads=6, q_lora_rank=9, kv_lora_rank=10,
                                qk_rope_head_dim=4, qk_nope_head_dim=7, v_head_dim=5, n_routed_experts=8,
                                n_group=4, topk_group=2, num_experts_per_tok=3, moe_intermediate_size=16,
                                mlp_layer_types=["dense", "dense", "sparse"], attention_bias=True,
                                tie_word_embeddings=True, index_n_heads=2, index_head_dim=4, index_topk=3,
                                indexer_types=["full"] * 3),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


def test_default_config_parameters_equal_hugging_face():
    """GlmMoeDsaConfig's defaults, GLM-5's shapes (78 layers, hidden 6144, 64 heads of 192 + 256,
    256 experts of 2048 top 8, indexer 32 x 128): 743,911,199,232 parameters in
    GlmMoeDsaForCausalLM (the published 744B; its MTP layer, model.layers.78, is ignored on load)."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("glm_moe_dsa").to_dict()
    assert _ours(fields, "glm_moe_dsa") == _hf_count({"model_type": "glm_moe_dsa"}) == 743_911_199_232


def test_forward_flops_equal_flop_counter():
    """Forward matmul FLOPs at b = 2, n = 12 (fp32 on real tensors, FlopCounterMode): 2,941,056,
    of which the indexer's 241,920 (the training step's rows: test_every_validate_row_is_exact)."""
    pytest.importorskip("transformers")
    import torch

    from tests.golden.hf_families import estimate
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import matmul_flops

    fields = CONFIGS["glm_moe_dsa"]
    model = build_hf_from_dict(dict(fields), dtype=torch.float32)
    measured = matmul_flops(model, family_inputs(fields, 2, 12))
    tree = estimate(fields, 2, 12, "fp32")
    indexer = sum(row.flops_forward for row in tree.all_rows if row.path.endswith("indexer"))
    # per layer: wq_b 2*24*22*30, wk 2*24*48*10, weights_proj 2*24*48*3, scores 2*24*12*3*(10+1)
    assert indexer == 3 * (31_680 + 23_040 + 6_912 + 19_008)
    assert measured.forward == tree.total("flops_matmul") == 2_941_056


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_kv_cache_holds_the_indexer_keys(name):
    """After a prefill of 12 tokens and 2 decode steps at b = 2 (bf16): per layer and token the
    latent, the RoPE key and the indexer key, as the class holds them (validate.measure)."""
    pytest.importorskip("transformers")
    from tests.family_configs import kv_cache_after_decode

    ours, measured = kv_cache_after_decode(CONFIGS[name], name)
    assert ours == measured
    if name == "glm_moe_dsa":  # (11 + 6 + 10) values x 2 bytes x 3 layers x 2 x 14 tokens
        assert measured == 4_536


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    """Parameters, FLOPs (matmul and the rest), saved-activation bytes and KV bytes, row by row."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    assert_rows_exact(odd_config_rows(CONFIGS[name], name, attention))


def test_architectures_alone_name_the_model_type():
    from costmodel.hf import from_hf_config

    fields = CONFIGS["glm_moe_dsa"]
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = ["GlmMoeDsaForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(fields, name="x")


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["glm_moe_dsa"], indexer_types=["full", "shared", "full"]),
     "indexer_types ['full', 'shared', 'full'] are not modelled for glm_moe_dsa"),
    (dict(CONFIGS["glm_moe_dsa"], index_topk_pattern="FFS"),
     "indexer_types ['full', 'full', 'shared'] are not modelled"),
    (dict(CONFIGS["glm_moe_dsa"], index_topk_freq=2), "indexer_types ['full', 'full', 'shared']"),
    (dict(CONFIGS["glm_moe_dsa"], q_lora_rank=None), "q_lora_rank null is not modelled for glm_moe_dsa"),
    (dict(CONFIGS["glm_moe_dsa"], index_head_dim=5), "index_head_dim (5) is narrower than qk_rope_head_dim (6)"),
    (dict(CONFIGS["glm_moe_dsa"], num_key_value_heads=2), "num_attention_heads // num_key_value_heads is 3"),
    (dict(CONFIGS["glm_moe_dsa"], layer_types=["full_attention"] * 3), "layer_types other than indexed_attention"),
    (dict(CONFIGS["glm_moe_dsa"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for glm_moe_dsa"),
])
def test_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


def test_glm_5_preset_counts_the_class_parameters():
    """costmodel/presets/glm-5.json (its _source names where the shapes come from) read by name and
    by its Hub id: the parameters GlmMoeDsaForCausalLM builds from the same file (743,911,199,232,
    the published 744B); 41,784,709,632 active a token (8 of 256 experts in the 75 MoE layers; the
    report's 40B leaves out the embedding and the head, 951,582,720 each)."""
    pytest.importorskip("transformers")
    import json

    from costmodel import estimate
    from costmodel.presets import PRESET_DIR

    fields = {k: v for k, v in json.loads((PRESET_DIR / "glm-5.json").read_text()).items()
              if not k.startswith("_")}
    params = estimate("glm-5", seq_len=8).to_dict()["params"]
    assert params["total"] == _hf_count(fields) == 743_911_199_232
    assert params["active"] == 41_784_709_632 and params["embeddings"] == params["head"] == 951_582_720
    assert estimate("zai-org/GLM-5", seq_len=8).to_dict()["params"]["total"] == params["total"]
