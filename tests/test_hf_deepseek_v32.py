"""DeepSeek-V3.2 (deepseek_v32, costmodel/hf_deepseek_v32.py and blocks/indexer.py): parameters equal
to the class transformers 5.24 builds on the meta device (odd configs, DeepseekV32Config's defaults,
which are the released model's shapes), forward and decode matmul FLOPs equal to FlopCounterMode,
the KV cache (the latent, the RoPE key and the indexer's keys) equal to the cache the class holds,
every `validate` row exact (slow), and the fields the code does not run refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import assert_rows_exact, estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(model_type="deepseek_v32", vocab_size=99, hidden_size=48, num_attention_heads=6,
             intermediate_size=37, num_hidden_layers=3, max_position_embeddings=64,
             pad_token_id=None, bos_token_id=None, eos_token_id=None)

#: Tiny, odd configs: latent attention (a query rank of 20, a 12-wide latent, 4 RoPE and 6 other
#: dimensions per query/key head, values of 7), an indexer of 5 heads of 14 (top 7 keys), layer 0
#: dense, then top 3 of 8 experts of 16 in 4 groups (top 2) with two shared experts.
CONFIGS = {
    "deepseek_v32": dict(_BASE, num_key_value_heads=6, q_lora_rank=20, kv_lora_rank=12,
                         qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=7, n_routed_experts=8,
                         n_group=4, topk_group=2, num_experts_per_tok=3, n_shared_experts=2,
                         moe_intermediate_size=16, first_k_dense_replace=1, index_n_heads=5,
                         index_head_dim=14, index_topk=7),
    # Indexer heads exactly as wide as the RoPE key (no unrotated part), one head, top 3 keys (fewer
    # than the prompt); two dense layers by mlp_layer_types, attention biases, a tied head.
    "deepseek_v32-narrow-indexer": dict(_BASE, num_key_value_heads=6, q_lora_rank=9, kv_lora_rank=10, qk_rope_head_dim=6,
                                        qk_nope_head_dim=4, v_head_dim=5, n_routed_experts=4,
                                        n_group=1, topk_group=1, num_experts_per_tok=2,
                                        moe_intermediate_size=16,
                                        mlp_layer_types=["dense", "dense", "sparse"],
                                        attention_bias=True, tie_word_embeddings=True,
                                        index_n_heads=1, index_head_dim=6, index_topk=3),
}

#: Parameters per layer the indexer adds to DeepSeek-V3's layer (DeepseekV32Indexer): wq_b
#: 20 x 70, wk 48 x 14, k_norm 2 x 14, weights_proj 48 x 5 = 2,340; three layers 7,020.
INDEXER_PARAMS = 7_020


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


def test_the_indexer_adds_its_own_parameters():
    """The same config read as DeepSeek-V3 (no indexer) counts 7,020 fewer parameters."""
    pytest.importorskip("transformers")
    fields = CONFIGS["deepseek_v32"]
    v3 = {k: v for k, v in fields.items() if not k.startswith("index")}
    v3["model_type"] = "deepseek_v3"
    assert _ours(fields, "v32") - _ours(v3, "v3") == INDEXER_PARAMS
    assert _hf_count(fields) == 86_772


def test_default_config_parameters_equal_hugging_face():
    """DeepseekV32Config's defaults, the released DeepSeek-V3.2's shapes (61 layers, hidden 7168,
    128 heads, 256 experts of 2048 top 8, indexer 64 x 128, top 2048): 671,877,929,216 parameters
    in DeepseekV32ForCausalLM (the published 671B; the 685B of the released files also counts the
    MTP layer, model.layers.61, which the class ignores on load)."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("deepseek_v32").to_dict()
    assert _ours(fields, "deepseek_v32") == _hf_count({"model_type": "deepseek_v32"}) == 671_877_929_216


def test_indexer_forward_flops_by_formula():
    """Forward matmul FLOPs at b = 2, n = 12 (fp32 on real tensors, FlopCounterMode): 3,112,128,
    of which the indexer's per layer are wq_b 2*24*20*70 = 67,200, wk 2*24*48*14 = 32,256,
    weights_proj 2*24*48*5 = 11,520, scores 2*24*12*5*14 = 40,320 and the heads' weighted sum
    2*24*12*5 = 2,880: 154,176 a layer, 462,528 in three. The backward runs none of it (no_grad)."""
    pytest.importorskip("transformers")
    import torch

    from tests.golden.hf_families import estimate
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import matmul_flops

    fields = CONFIGS["deepseek_v32"]
    model = build_hf_from_dict(dict(fields), dtype=torch.float32)
    measured = matmul_flops(model, family_inputs(fields, 2, 12))
    tree = estimate(fields, 2, 12, "fp32")
    assert measured.forward == tree.total("flops_matmul") == 3_112_128
    indexer = sum(row.flops_forward for row in tree.all_rows if row.path.endswith("indexer"))
    assert indexer == 462_528 and measured.backward == 0


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_kv_cache_holds_the_indexer_keys(name):
    """After a prefill of 12 tokens and 2 decode steps at b = 2 (bf16): per layer and token the
    12-wide latent, the 4-wide RoPE key and the 14-wide indexer key (30 values, 60 bytes); 3 layers
    x 2 x 14 tokens: 5,040 bytes. The cache the class holds, counted by validate.measure."""
    pytest.importorskip("transformers")
    from tests.family_configs import kv_cache_after_decode

    ours, measured = kv_cache_after_decode(CONFIGS[name], name)
    assert ours == measured
    if name == "deepseek_v32":
        assert measured == 5_040


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    """One cached decode step (FlopCounterMode) against the decode tree at three cache lengths:
    the indexer scores the new query against every cached indexer key, the latent attention
    up-projects every cached latent."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert_rows_exact(rows)


def test_architectures_alone_name_the_model_type():
    from costmodel.hf import from_hf_config

    fields = CONFIGS["deepseek_v32"]
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = ["DeepseekV32ForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(fields, name="x")


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["deepseek_v32"], q_lora_rank=None), "q_lora_rank null is not modelled for deepseek_v32"),
    (dict(CONFIGS["deepseek_v32"], index_head_dim=3),
     "index_head_dim (3) is narrower than qk_rope_head_dim (4)"),
    (dict(CONFIGS["deepseek_v32"], index_n_heads=0), "index_n_heads must be at least 1, got 0"),
    (dict(CONFIGS["deepseek_v32"], index_topk=0), "index_topk must be at least 1, got 0"),
    (dict(CONFIGS["deepseek_v32"], layer_types=["full_attention"] * 3),
     "layer_types other than indexed_attention"),
    (dict(CONFIGS["deepseek_v32"], mlp_layer_types=["sparse", "dense", "sparse"]),
     "mlp_layer_types with a dense layer after a sparse one"),
    (dict(CONFIGS["deepseek_v32"], num_key_value_heads=3),
     "num_attention_heads // num_key_value_heads is 2"),
    (dict(CONFIGS["deepseek_v32"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for deepseek_v32"),
    (dict(CONFIGS["deepseek_v32"], rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                                    "partial_rotary_factor": 0.5}),
     "partial_rotary_factor 0.5 is not modelled for deepseek_v32"),
])
def test_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


@pytest.mark.parametrize("phase, context", [("prefill", None), ("decode", 20)])
def test_the_time_model_runs_the_indexer_scores_as_batched_gemms(phase, context):
    """The kernel-level time model's kernels of the indexer leaf (b = 2, n = 12; a decode step at
    20 keys): wq_b, wk and weights_proj as GEMMs of their rows, then per query its 5 heads against
    every key (14 wide) and the heads' weights against those scores; their FLOPs are the leaf's."""
    from costmodel.hf import from_hf_config
    from costmodel.kernel_shapes import Gemm
    from costmodel.kernel_time import inference_subs, leaf_kernels
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(CONFIGS["deepseek_v32"], name="odd")
    model = CostModel(cfg, profile_for(cfg), phase=phase)
    subs = inference_subs(cfg, "bf16", 2, 12, context)
    leaf = next(leaf for leaf in model.leaves if leaf.name == "indexer")
    queries, keys = (24, 12) if context is None else (2, 20)
    assert leaf_kernels(leaf, subs, fused_attention=True)[:5] == [
        Gemm(queries, 70, 20), Gemm(queries, 14, 48), Gemm(queries, 5, 48),
        Gemm(5, keys, 14, queries), Gemm(1, keys, 5, queries)]
    gemms = [k for k in leaf_kernels(leaf, subs, True) if isinstance(k, Gemm)]
    assert sum(g.flops for g in gemms) == int(leaf.cost.flops_matmul.xreplace(subs))
