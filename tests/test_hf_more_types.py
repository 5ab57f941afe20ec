"""The families of costmodel/hf_more_types.py and the training-only MoE input noise of PhiMoE
(input_jitter_noise) and DBRX (moe_jitter_eps), which their released configs set: every validate
row exact against the class in train mode on real tensors (seeded; the bytes do not depend on the
noise's values), nothing of it at inference, and the released shapes accepted."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import FAMILY_CONFIGS, assert_rows_exact
from tests.test_hf_moe_extra import CONFIGS as MOE_CONFIGS
from tests.test_hf_moe_extra import DBRX

#: PhiMoE's and DBRX's odd configs (tests/test_hf_moe_extra.py) with the released noise, 0.01.
NOISY = {
    "phimoe": dict(MOE_CONFIGS["phimoe"], input_jitter_noise=0.01),
    "dbrx": dict(DBRX["dbrx"], ffn_config=dict(DBRX["dbrx"]["ffn_config"], moe_jitter_eps=0.01)),
    # 0.0 is not null: DbrxRouter still multiplies by uniform_(1, 1)
    "dbrx-zero": dict(DBRX["dbrx-mqa"], ffn_config=dict(DBRX["dbrx-mqa"]["ffn_config"], moe_jitter_eps=0.0)),
    # MixtralSparseMoeBlock: router_jitter_noise > 0 multiplies the input in place, once a layer
    "mixtral": dict(FAMILY_CONFIGS["mixtral"], router_jitter_noise=0.01),
}


def _cfg(name):
    from costmodel.presets import config_from_dict

    return config_from_dict(dict(NOISY[name]), source=name, name=name)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("name", ["dbrx", "dbrx-zero", "mixtral"])
def test_dbrx_noise_every_validate_row_is_exact(name, dtype):
    """DbrxRouter (and MixtralSparseMoeBlock, router_jitter_noise) multiplies the MoE input in place
    by its noise once a layer: the multiply keeps the noise (n d elements in the model's dtype) for
    backward."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from validate.compare import validate

    torch.manual_seed(0)
    rows = validate(_cfg(name), Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2), target="hf",
                    device="cpu")
    assert_rows_exact(rows)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_phimoe_noise_rows_exact_and_its_bytes_by_liveness(dtype):
    """PhiMoE multiplies the MoE input twice (PhimoeSparseMoeBlock, then PhimoeTopKRouter on a
    reshape of it), each multiply keeping its noise. The second is an in-place op on a view, whose
    node autograd wraps in CopySlices, which validate's graph walk cannot read: the walk sees one
    noise a layer. Every other row is exact, and the bytes saved for backward equal what the graph
    holds by liveness (validate/hf_more_types.py live_saved_bytes); the walk is short by exactly
    the hidden noise, b n d elements a layer."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from costmodel.estimation import Estimate
    from validate.compare import build, training_loss, validate
    from validate.hf_more_types import live_saved_bytes

    cfg = _cfg("phimoe")
    workload = Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2)
    torch.manual_seed(0)
    rows = validate(cfg, workload, target="hf", device="cpu")
    saved = next(row for row in rows if row.quantity == "bytes saved for backward")
    assert [row for row in rows if row is not saved and row.difference != 0] == []
    element = 4 if dtype == "fp32" else 2
    assert saved.formula - saved.measured == cfg.n_decoder_layers * 2 * 12 * cfg.d_model * element
    torch.manual_seed(0)
    model, inputs, _ = build(cfg, workload, "hf")
    live = live_saved_bytes(model, inputs, training_loss(cfg, "hf"))
    assert live == Estimate(cfg, workload.replace(impl="hf", sdpa_device="cpu")).total("saved_bytes") == saved.formula


@pytest.mark.parametrize("name", sorted(NOISY))
def test_the_noise_is_training_only(name):
    """The noise adds a training leaf (its multiplies' elements and kept bytes) and nothing to a
    forward at inference, a decode step or the KV cache."""
    from costmodel.config import Workload
    from costmodel.estimation import Estimate

    noisy = _cfg(name)
    quiet = noisy.replace(moe_input_noise=None)
    workload = Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2)
    ours, theirs = Estimate(noisy, workload), Estimate(quiet, workload)
    multiplies = 2 if name == "phimoe" else 1
    elements = multiplies * 2 * 12 * noisy.d_model * noisy.n_decoder_layers
    assert ours.total("saved_bytes") - theirs.total("saved_bytes") == 2 * elements
    assert ours.flops()["other_elements"]["mul"] - theirs.flops()["other_elements"].get("mul", 0) == elements
    assert ours.total("flops_matmul") == theirs.total("flops_matmul")
    assert ours.memory_numbers()["kv_cache"] == theirs.memory_numbers()["kv_cache"]
    for phase in ("prefill", "decode"):
        from costmodel.tree import CostModel, profile_for

        assert ([leaf.name for leaf in CostModel(noisy, profile_for(noisy), phase=phase).leaves]
                == [leaf.name for leaf in CostModel(quiet, profile_for(quiet), phase=phase).leaves])


def test_the_released_configs_are_accepted():
    """Phi-3.5-MoE's released config (input_jitter_noise 0.01 beside router_jitter_noise 0.01)
    and databricks/dbrx-instruct's (moe_jitter_eps 0.01) read, with the noise."""
    from costmodel.hf import from_hf_config

    phi = dict(model_type="phimoe", vocab_size=32064, hidden_size=4096, intermediate_size=6400,
               num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               max_position_embeddings=131072, rms_norm_eps=1e-5, num_local_experts=16,
               num_experts_per_tok=2, attention_bias=True, lm_head_bias=True,
               input_jitter_noise=0.01, router_jitter_noise=0.01, sliding_window=131072)
    assert from_hf_config(phi, name="phi-3.5-moe").moe_input_noise == 0.01
    dbrx = dict(model_type="dbrx", d_model=6144, n_heads=48, n_layers=40, max_seq_len=32768,
                vocab_size=100352, attn_config=dict(kv_n_heads=8, clip_qkv=8, rope_theta=500000),
                ffn_config=dict(ffn_hidden_size=10752, moe_num_experts=16, moe_top_k=4,
                                moe_jitter_eps=0.01))
    assert from_hf_config(dbrx, name="dbrx-instruct").moe_input_noise == 0.01
    assert from_hf_config(dict(phi, input_jitter_noise=0.0), name="p").moe_input_noise is None
    mixtral = FAMILY_CONFIGS["mixtral"]
    assert from_hf_config(dict(mixtral, router_jitter_noise=0.01), name="m").moe_input_noise == 0.01
    assert from_hf_config(dict(mixtral, router_jitter_noise=0.0), name="m").moe_input_noise is None


@pytest.mark.parametrize("model_type", ["mixtral", "qwen2_moe", "olmoe", "mellum", "laguna", "granitemoehybrid",
                                        "jamba", "minimax", "granitemoe_swa"])
def test_the_router_loss_is_refused_where_the_class_adds_it(model_type):
    """output_router_logits makes these classes add the load-balancing loss in training (not
    modelled): one sentence naming the field; afmoe, hy_v3 and solar_open take no such loss."""
    from costmodel.config import ConfigError
    from costmodel.hf import from_hf_config

    data = dict(FAMILY_CONFIGS.get(model_type, dict(model_type=model_type)), output_router_logits=True)
    with pytest.raises(ConfigError, match=f"output_router_logits .* not modelled for {model_type}"):
        from_hf_config(data, name="m")


# =============================================================================================
# The new model types (costmodel/hf_more_types.py)

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, num_hidden_layers=3,
             max_position_embeddings=64)

#: Tiny, odd configs (sizes as tests/family_configs.py; head_dim 10, not hidden/heads = 8).
CONFIGS = {
    # Solar Open: q/k/v biases, top 3 of 8 experts of 16 in 4
    # groups (top 2 groups) in every layer, two shared experts (one MLP of 32),
    # routed_scaling_factor; GLM-4.5's fields its config lacks given and not read.
    "solar_open": dict(_BASE, model_type="solar_open", num_key_value_heads=2, head_dim=10,
                       attention_bias=True, n_routed_experts=8,
                       n_group=4, topk_group=2, num_experts_per_tok=3, n_shared_experts=2,
                       moe_intermediate_size=16, routed_scaling_factor=2.5, first_k_dense_replace=2,
                       use_qk_norm=True, intermediate_size=37),
    # Its defaults' choices: one shared expert, not renormalised, a tied
    # head, hidden/heads as the head width, the experts' count under the mapped name.
    "solar_open-plain": dict(_BASE, model_type="solar_open", num_key_value_heads=3, head_dim=8,
                             num_local_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                             norm_topk_prob=False, tie_word_embeddings=True),
    # Youtu-LLM: DeepSeek-V3's latent attention (q rank 20, kv rank 12, RoPE key 4, no-RoPE 6,
    # values 7) with attention biases in dense layers of 37, untied.
    "youtu": dict(_BASE, model_type="youtu", intermediate_size=37, num_key_value_heads=6,
                  q_lora_rank=20, kv_lora_rank=12, qk_rope_head_dim=4, qk_nope_head_dim=6,
                  v_head_dim=7, attention_bias=True, tie_word_embeddings=False,
                  bos_token_id=None, eos_token_id=None),
    # Queries without a low rank, RoPE not interleaved, a tied head (YoutuConfig's default), value
    # heads as wide as query/key heads (10), DeepSeek-V3's expert fields given and not read.
    "youtu-plain": dict(_BASE, model_type="youtu", intermediate_size=29, q_lora_rank=None,
                        num_key_value_heads=6,
                        kv_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=10,
                        rope_interleave=False, n_routed_experts=8, first_k_dense_replace=1,
                        bos_token_id=None, eos_token_id=None),
    # Mellum: per-head q/k norms, q/k/v/o biases, layer 1 dense (intermediate 37), the others top
    # 3 of 5 experts of 24 renormalised, an MTP layer asked for (not built).
    "mellum": dict(_BASE, model_type="mellum", num_key_value_heads=2, head_dim=10, intermediate_size=37,
                   attention_bias=True, num_local_experts=5, num_experts_per_tok=3,
                   moe_intermediate_size=24, mlp_layer_types=["sparse", "dense", "sparse"],
                   num_mtp_layers=1),
    # Every layer sparse (MellumConfig's default), not renormalised, one KV head, a tied head,
    # hidden/heads as the head width, the experts' count under the mapped name.
    "mellum-plain": dict(_BASE, model_type="mellum", num_key_value_heads=1, head_dim=8,
                         intermediate_size=29, num_experts=4, num_experts_per_tok=2,
                         moe_intermediate_size=16, norm_topk_prob=False, tie_word_embeddings=True),
}

#: The class each model type's config builds (for a config.json naming `architectures` only).
CLASSES = {"solar_open": "SolarOpenForCausalLM", "youtu": "YoutuForCausalLM",
           "mellum": "MellumForCausalLM"}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_and_buffers_equal_hugging_face(name):
    pytest.importorskip("transformers")
    from tests.family_configs import buffer_bytes_both
    from tests.family_configs import estimated_total as _ours
    from tests.family_configs import hf_meta_count as _hf_count

    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.parametrize("model_type, expected", [
    # SolarOpenConfig's: 48 layers of 128 experts of 1280 (top 8) and one shared, hidden 4096,
    # 64 heads of 128, vocab 196608, untied: 102.7B (upstage/Solar-Open-100B's shape).
    ("solar_open", 102_651_793_408),
    # YoutuConfig's: 32 dense layers of 6144, hidden 2048, 16 heads of latent attention (q rank
    # 1536, kv rank 512), vocab 128256, tied: 1.96B (Youtu-LLM-2B's class defaults).
    ("youtu", 1_961_560_064),
    # MellumConfig's: 28 layers of 64 experts of 896 (top 8), hidden 2304, 32 heads of 128 over 4
    # KV heads, vocab 98304, untied: 12.1B (JetBrains' Mellum class defaults).
    ("mellum", 12_149_923_072),
])
def test_default_config_parameters_equal_hugging_face(model_type, expected):
    transformers = pytest.importorskip("transformers")
    from tests.family_configs import estimated_total as _ours
    from tests.family_configs import hf_meta_count as _hf_count

    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    assert _ours(fields, model_type) == _hf_count({"model_type": model_type}) == expected


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    assert_rows_exact(odd_config_rows(CONFIGS[name], name, attention))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact_in_fp32_on_real_tensors(name):
    """fp32 on the CPU, where validate adds torch.profiler's count of the training matmul FLOPs."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(CONFIGS[name]), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype="fp32", gen_tokens=2), target="hf",
                    device="cpu")
    assert_rows_exact(rows, frozenset({"training matmul FLOPs (profiler)"}))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_architectures_alone_name_the_model_types(name):
    from costmodel.hf import from_hf_config

    fields = CONFIGS[name]
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = [CLASSES[fields["model_type"]]]
    assert from_hf_config(bare, name=name) == from_hf_config(fields, name=name)


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["solar_open"], n_group=3), "n_routed_experts (8) is not divisible by n_group (3)"),
    (dict(CONFIGS["solar_open"], hidden_act="gelu"), "unsupported hidden_act 'gelu'"),
    (dict(CONFIGS["solar_open"], partial_rotary_factor=0.5), "partial_rotary_factor 0.5 is not what solar_open"),
    (dict(CONFIGS["youtu"], num_key_value_heads=2), "num_key_value_heads (2) is not num_attention_heads (6)"),
    ({"model_type": "youtu", "num_attention_heads": 8}, "num_key_value_heads (16) is not num_attention_heads (8)"),
    (dict(CONFIGS["mellum"], layer_types=["full_attention", "sliding_attention", "full_attention"]),
     "layer_types with sliding_attention layers"),
    (dict(CONFIGS["mellum"], mlp_layer_types=["sparse", "dense"]), "mlp_layer_types must list dense or sparse"),
    (dict(CONFIGS["mellum"], rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                                 "partial_rotary_factor": 0.5}}),
     "partial_rotary_factor 0.5 is not what mellum runs"),
    (dict(CONFIGS["solar_open"], rope_parameters=dict(rope_type="default", rope_theta=1e4, partial_rotary_factor=0.6)),
     "partial_rotary_factor 0.6 is not what solar_open"),
])
def test_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)
