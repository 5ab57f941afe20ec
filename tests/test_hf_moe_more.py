"""The mixture-of-experts families of costmodel/hf_moe_more.py (GLM-4.5/4.6 as glm4_moe, MiniMax-M2
as minimax_m2, dots.llm1 as dots1, GLM-4.7-Flash as glm4_moe_lite, Hunyuan-A13B as hunyuan_v1_moe): parameters and buffers equal to the class transformers 5.24 builds on the meta
device (odd configs, each configuration class's defaults, the released models' shapes), every
`validate` row exact on the odd configs (slow), and the fields their code does not run refused in
one line."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import assert_fp32_rows_exact, assert_rows_exact, buffer_bytes_both
from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs (sizes as tests/family_configs.py; head_dim 10, not hidden/heads = 8).
CONFIGS = {
    # GLM-4.5: q/k/v biases, per-head q/k norms, RoPE on 0.6 of each head (6 of 10), layer 0 dense
    # (intermediate 37), then top 3 of 8 experts of 16 in 4 groups (top 2 groups) with two shared
    # experts (one MLP of 32) and routed_scaling_factor.
    "glm4_moe": dict(_BASE, model_type="glm4_moe", num_key_value_heads=2, head_dim=10,
                     attention_bias=True, use_qk_norm=True, partial_rotary_factor=0.6,
                     n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=3,
                     n_shared_experts=2, moe_intermediate_size=16, first_k_dense_replace=1,
                     routed_scaling_factor=2.5, pad_token_id=None, eos_token_id=None),
    # GLM-4.5-Air's choices: no q/k norms, one shared expert, weights not renormalised, two
    # dense layers, a tied head, hidden/heads as the head width (8, rotary half: 4).
    "glm4_moe-air": dict(_BASE, model_type="glm4_moe", num_key_value_heads=3, attention_bias=True,
                         n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                         first_k_dense_replace=2, norm_topk_prob=False, tie_word_embeddings=True,
                         pad_token_id=None, eos_token_id=None),
    # MiniMax-M2: whole-projection q/k norms, top 3 of 5 experts of 24 in every layer, sigmoid
    # routing, RoPE on rotary_dim 6 of head_dim 10 (the released files' legacy field).
    "minimax_m2": dict(_BASE, model_type="minimax_m2", num_key_value_heads=2, head_dim=10,
                       intermediate_size=24, num_local_experts=5, num_experts_per_tok=3,
                       rotary_dim=6, bos_token_id=None, eos_token_id=None),
    # All of each head rotated (no rotary_dim), one KV head, a tied head.
    "minimax_m2-full-rope": dict(_BASE, model_type="minimax_m2", num_key_value_heads=1, head_dim=10,
                                 intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                                 tie_word_embeddings=True, bos_token_id=None, eos_token_id=None),
    # rotary_dim 7 (odd): transformers builds 4 frequencies and rotates 8 dimensions; the
    # experts' count under the mapped name (num_experts -> num_local_experts).
    "minimax_m2-odd-rotary": dict(_BASE, model_type="minimax_m2", num_key_value_heads=2, head_dim=10,
                                  intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                                  rotary_dim=7, bos_token_id=None, eos_token_id=None),
    # dots.llm1: Qwen3's attention (per-head q/k norms, attention_bias on q, k, v and o) with
    # GLM-4.5's experts: layer 0 dense, top 3 of 8 experts of 16 in 4 groups, two shared.
    "dots1": dict(_BASE, model_type="dots1", num_key_value_heads=2, head_dim=10, attention_bias=True,
                  n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=3,
                  n_shared_experts=2, moe_intermediate_size=16, first_k_dense_replace=1,
                  routed_scaling_factor=2.5),
    # Every layer with experts (Dots1Config's first_k_dense_replace 0), hidden/heads as the head
    # width, a tied head, weights not renormalised.
    "dots1-all-moe": dict(_BASE, model_type="dots1", num_key_value_heads=3, n_routed_experts=4,
                          num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=24,
                          tie_word_embeddings=True),
    # GLM-4.7-Flash: DeepSeek-V3's latent attention (q through a rank of 20, a 12-wide latent, 4
    # RoPE and 6 other dimensions per query/key head, values of 7) and experts; two dense layers
    # by mlp_layer_types.
    "glm4_moe_lite": dict(_BASE, model_type="glm4_moe_lite", num_key_value_heads=6, q_lora_rank=20,
                          kv_lora_rank=12, qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=7,
                          n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=3,
                          n_shared_experts=2, moe_intermediate_size=16,
                          mlp_layer_types=["dense", "dense", "sparse"], pad_token_id=None,
                          bos_token_id=None, eos_token_id=None),
    # Queries without a low rank (q_lora_rank null), the default one dense layer, a tied head.
    "glm4_moe_lite-no-q-rank": dict(_BASE, model_type="glm4_moe_lite", num_key_value_heads=6,
                                    q_lora_rank=None, kv_lora_rank=12, qk_rope_head_dim=4,
                                    qk_nope_head_dim=6, v_head_dim=7, n_routed_experts=4,
                                    num_experts_per_tok=2, moe_intermediate_size=16,
                                    tie_word_embeddings=True, pad_token_id=None, bos_token_id=None,
                                    eos_token_id=None),
    # Hunyuan MoE: per-head q/k norms after RoPE, q/k/v/o biases, top 2 of 5 experts of 24
    # (intermediate_size: experts and the ungated shared MLP alike) behind an fp32 router.
    "hunyuan_v1_moe": dict(_BASE, model_type="hunyuan_v1_moe", intermediate_size=24,
                           num_key_value_heads=2, head_dim=10, attention_bias=True, num_experts=5,
                           moe_topk=2, pad_token_id=None, bos_token_id=None, eos_token_id=None,
                           eod_token_id=None, sep_token_id=None),
    # moe_topk as a list of one per layer (all alike), one KV head, a tied head.
    "hunyuan_v1_moe-listed": dict(_BASE, model_type="hunyuan_v1_moe", intermediate_size=24,
                                  num_key_value_heads=1, head_dim=8, tie_word_embeddings=True,
                                  num_experts=4, moe_topk=[3, 3, 3], pad_token_id=None,
                                  bos_token_id=None, eos_token_id=None, eod_token_id=None,
                                  sep_token_id=None),
}

#: The released models' shapes. GLM-4.5 and GLM-4.5-Air: THUDM/slime's Megatron arguments for
#: them (scripts/models/glm4.5-355B-A32B.sh and glm4.5-106B-A12B.sh: layers, hidden, heads, query
#: groups, kv-channels, ffn and moe-ffn widths, experts, top-k, dense layers, rotary-percent 0.5,
#: qkv bias, qk-layernorm on the 355B only, untied, vocab 151552), which the transformers docs
#: (model_doc/glm4_moe.md) put at 355B / 106B total. MiniMax-M2: MiniMaxM2Config's defaults
#: (transformers 5.24; 230B total in model_doc/minimax_m2.md) with the legacy rotary_dim 64 that
#: its released files carry (MiniMaxM2Config.convert_rope_params_to_dict).
RELEASED = {
    "GLM-4.5": (dict(model_type="glm4_moe", vocab_size=151552, hidden_size=5120,
                     num_hidden_layers=92, num_attention_heads=96, num_key_value_heads=8,
                     head_dim=128, intermediate_size=12288, moe_intermediate_size=1536,
                     n_routed_experts=160, num_experts_per_tok=8, n_shared_experts=1,
                     first_k_dense_replace=3, partial_rotary_factor=0.5, use_qk_norm=True,
                     attention_bias=True, num_nextn_predict_layers=1, tie_word_embeddings=False),
                352_797_814_784, 33_632_251_904),
    "GLM-4.5-Air": (dict(model_type="glm4_moe", vocab_size=151552, hidden_size=4096,
                         num_hidden_layers=46, num_attention_heads=96, num_key_value_heads=8,
                         head_dim=128, intermediate_size=10944, moe_intermediate_size=1408,
                         n_routed_experts=128, num_experts_per_tok=8, n_shared_experts=1,
                         first_k_dense_replace=1, partial_rotary_factor=0.5, use_qk_norm=False,
                         attention_bias=True, num_nextn_predict_layers=1, tie_word_embeddings=False),
                    106_852_245_504, 13_424_123_904),
    "MiniMax-M2": (dict(model_type="minimax_m2", vocab_size=200064, hidden_size=3072,
                        num_hidden_layers=62, num_attention_heads=48, num_key_value_heads=8,
                        head_dim=128, intermediate_size=1536, num_local_experts=256,
                        num_experts_per_tok=8, rotary_dim=64, tie_word_embeddings=False),
                   228_689_748_992, 0),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


@pytest.mark.parametrize("model_type", ["glm4_moe", "minimax_m2", "glm4_moe_lite"])
def test_default_config_parameters_equal_hugging_face(model_type):
    """The configuration class's defaults, as its to_dict() writes them: Glm4MoeConfig's hidden
    4096 over 96 heads gives heads of 42 (floor division), RoPE on int(42 * 0.5) = 21, which
    transformers rotates as 22 (11 frequencies, each twice). Glm4MoeLiteConfig's: 47 layers,
    the first dense, 64 experts of 1536 (top 4) and one shared, latent attention."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    expected = {"glm4_moe": 103_481_200_640, "minimax_m2": 228_689_748_992,
                "glm4_moe_lite": 29_943_390_976}[model_type]
    assert _ours(fields, model_type) == _hf_count({"model_type": model_type}) == expected


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_released_shapes_equal_hugging_face(name):
    """GLM-4.5: 352,797,814,784 parameters in Glm4MoeForCausalLM (the published 355B also counts
    its multi-token-prediction layer, which the class does not build); GLM-4.5-Air 106.9B (106B
    published); MiniMax-M2 228.7B (230B published)."""
    pytest.importorskip("transformers")
    fields, total, active = RELEASED[name]
    assert _ours(fields, name) == _hf_count(fields) == total
    if active:
        from costmodel import estimate

        assert estimate(dict(fields, name=name), seq_len=16).to_dict()["params"]["active"] == active


def test_mtp_layer_is_not_built():
    """num_nextn_predict_layers changes nothing transformers builds: Glm4MoeForCausalLM has no
    MTP module (generate(use_mtp=True) loads one apart, as MtpModel)."""
    pytest.importorskip("transformers")
    fields = CONFIGS["glm4_moe"]
    assert _hf_count(dict(fields, num_nextn_predict_layers=3)) == _hf_count(fields) == _ours(
        dict(fields, num_nextn_predict_layers=3), "mtp")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    """The rotary buffers (inv_freq and original_inv_freq, fp32) and each MoE layer's
    e_score_correction_bias (fp32 in GLM-4.5's router, bf16 in MiniMax-M2's block when built in
    bf16): bytes of every buffer of the bf16 meta model."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    """GLM-4.7-Flash's latent attention under sdpa runs torch's CPU math path (v_head_dim 7 against
    q/k 10: kernels._sdpa; tests/test_mla_sdpa.py): bytes saved 219,492 and 213,924, backward FLOPs
    4,667,904 and 4,584,960 (the flash kernel's rules gave 37,152 bytes fewer and 103,680 FLOPs
    more on both)."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert_rows_exact(rows)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_architectures_alone_name_the_model_types(name):
    """A config.json that names only `architectures` reads as its model type."""
    from costmodel.hf import from_hf_config

    fields = CONFIGS[name]
    classes = {"glm4_moe": "Glm4MoeForCausalLM", "minimax_m2": "MiniMaxM2ForCausalLM",
               "dots1": "Dots1ForCausalLM", "glm4_moe_lite": "Glm4MoeLiteForCausalLM",
               "hunyuan_v1_moe": "HunYuanMoEV1ForCausalLM"}
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = [classes[fields["model_type"]]]
    assert from_hf_config(bare, name=name) == from_hf_config(fields, name=name)


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["glm4_moe"], n_group=3), "n_routed_experts (8) is not divisible by n_group (3)"),
    (dict(CONFIGS["glm4_moe"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for glm4_moe"),
    (dict(CONFIGS["minimax_m2"], router_jitter_noise=0.1), "router_jitter_noise 0.1"),
    (dict(CONFIGS["minimax_m2"], partial_rotary_factor=0.05), "leaves no dimension to rotate"),
    (dict(CONFIGS["minimax_m2"], rotary_dim=20), "rotary_dim (20) is wider than head_dim (10)"),
    (dict(CONFIGS["glm4_moe"], n_routed_experts=0), "n_routed_experts must be at least 1, got 0"),
    (dict(CONFIGS["minimax_m2"], num_local_experts=0), "num_local_experts must be at least 1, got 0"),
    (dict(CONFIGS["glm4_moe"], head_dim=None), "head_dim null is not modelled for glm4_moe"),
    (dict(CONFIGS["dots1"], head_dim=None), "head_dim null is not modelled for dots1"),
    (dict(CONFIGS["dots1"], n_routed_experts=None), "n_routed_experts is null but layers 1-2 have experts"),
    (dict(CONFIGS["dots1"], sliding_window=4, max_window_layers=2),
     "sliding-window attention on dots1's layers"),
    (dict(CONFIGS["dots1"], layer_types=["full_attention", "sliding_attention", "full_attention"]),
     "sliding-window attention on dots1's layers"),
    (dict(CONFIGS["dots1"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for dots1"),
    (dict(CONFIGS["hunyuan_v1_moe"], moe_topk=[2, 3, 2]), "moe_topk differing from layer to layer"),
    (dict(CONFIGS["hunyuan_v1_moe"], num_experts=[5, 5, 5]), "field 'num_experts' must be an integer"),
    (dict(CONFIGS["hunyuan_v1_moe"], head_dim=None), "head_dim is missing or null"),
    (dict(CONFIGS["glm4_moe_lite"], mlp_layer_types=["sparse", "dense", "sparse"]),
     "mlp_layer_types with a dense layer after a sparse one"),
    (dict(CONFIGS["glm4_moe_lite"], mlp_layer_types=["dense", "sparse"]),
     "mlp_layer_types must list dense or sparse for each of the 3 layers"),
    (dict(CONFIGS["glm4_moe_lite"], rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                                     "partial_rotary_factor": 0.5}),
     "partial_rotary_factor 0.5 is not modelled for glm4_moe_lite"),
])
def test_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["glm4_moe", "minimax_m2", "dots1", "glm4_moe_lite", "hunyuan_v1_moe"])
def test_every_validate_row_is_exact_in_fp32_on_real_tensors(name):
    """fp32 on the CPU (real tensors: the fake grouped_mm takes only bf16), where validate adds
    torch.profiler's count of the training matmul FLOPs as a second, independent measurement."""
    pytest.importorskip("transformers")
    assert_fp32_rows_exact(CONFIGS[name], name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["glm4_moe", "minimax_m2", "dots1", "glm4_moe_lite", "hunyuan_v1_moe"])
def test_decode_step_flops_equal_the_decode_tree(name):
    """One cached decode step of the class (FlopCounterMode) against the decode tree, at three
    cache lengths: grouped-query attention over the c cached keys, the dense and expert layers."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["glm4_moe", "minimax_m2", "dots1", "glm4_moe_lite", "hunyuan_v1_moe"])
def test_expert_flops_follow_the_observed_routing(name):
    """On real tensors (fp32) each expert gets its own share of the k b n slots (GLM-4.5's
    group-limited choice, MiniMax-M2's biased sigmoid); given that share (--expert-load) the
    estimate's per-expert FLOPs sum to what each layer's grouped products cost, and the totals
    equal the balanced estimate's."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from costmodel.estimation import Estimate
    from costmodel.hf import from_hf_config
    from tests.golden.hf_families import estimate
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import expert_loads, matmul_flops

    config = CONFIGS[name]
    inputs = family_inputs(config, 2, 10)
    torch.manual_seed(0)
    model = build_hf_from_dict(dict(config), dtype=torch.float32)
    loads = expert_loads(model, inputs)
    flops = matmul_flops(model, inputs, depth=6)
    balanced = estimate(config, 2, 10, "fp32")
    assert loads and flops.forward == balanced.total("flops_matmul")
    cfg = from_hf_config(config, name="odd")
    for path, load in loads.items():
        given = Estimate(cfg, Workload(seq_len=10, batch=2, dtype="fp32", expert_load=tuple(load)))
        moe = given.to_dict()["moe"]
        assert moe["tokens_per_expert"] == load
        grouped = sum(v for k, v in flops.forward_by_module.items() if k.startswith(path))
        assert sum(moe["expert_flops_forward"]) == grouped, path
        assert given.total("flops_matmul") == balanced.total("flops_matmul")
