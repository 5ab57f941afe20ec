"""The mixture-of-experts families of costmodel/hf_new_moe.py (Hy3 as hy_v3, Arcee's Trinity as
afmoe, Poolside's Laguna as laguna): parameters and
buffers equal to the class transformers 5.24 builds on the meta device (odd configs, the
configuration class's defaults), every `validate` row exact on the odd configs (slow: parameters,
forward and backward matmul FLOPs, element counts, bytes saved for backward, KV-cache bytes, under
eager and sdpa), a cached decode step's FLOPs, the cache after a prefill, and the fields their code
does not run refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import assert_fp32_rows_exact, assert_rows_exact, buffer_bytes_both
from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64, pad_token_id=None, bos_token_id=None,
             eos_token_id=None)

#: Laguna's rope_parameters (one per layer type) rotating whole heads on both.
_WHOLE_HEADS = {kind: {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 1.0}
                for kind in ("full_attention", "sliding_attention")}

#: Tiny, odd configs (sizes as tests/family_configs.py; head_dim 10, not hidden/heads = 8).
CONFIGS = {
    # Hy3: q/k/v/o biases, per-head q/k norms, layer 0 dense (intermediate 37), then top 2 of 5
    # experts of 16 beside a shared MLP of two experts (32), router_scaling_factor.
    "hy_v3": dict(_BASE, model_type="hy_v3", num_key_value_heads=2, head_dim=10,
                  attention_bias=True, num_experts=5, num_experts_per_tok=2,
                  moe_intermediate_size=16, num_shared_experts=2, router_scaling_factor=2.5),
    # A dense layer between sparse ones (mlp_layer_types), one KV head, a tied head, no shared
    # experts: HYV3MLP's `0 or intermediate_size` builds the shared MLP 37 wide; the sum in the
    # model's dtype (enable_moe_fp32_combine False).
    "hy_v3-pattern": dict(_BASE, model_type="hy_v3", num_key_value_heads=1, head_dim=8,
                          num_experts=4, num_experts_per_tok=3, moe_intermediate_size=24,
                          num_shared_experts=0, tie_word_embeddings=True,
                          enable_moe_fp32_combine=False,
                          mlp_layer_types=["sparse", "dense", "sparse"]),
    # AFMoE: 4 layers, every second full (NoPE) and the others sliding (window 4, RoPE), per-head
    # q/k norms, the output gate, four norms a layer; layer 0 dense (a sliding layer), then top 2
    # of 5 experts of 16 beside two shared ones (32), route_scale, a frozen fp32 expert_bias.
    "afmoe": dict(_BASE, model_type="afmoe", num_hidden_layers=4, num_key_value_heads=2,
                  head_dim=10, num_dense_layers=1, num_experts=5, num_experts_per_tok=2,
                  moe_intermediate_size=16, num_shared_experts=2, route_scale=2.5,
                  sliding_window=4, global_attn_every_n_layers=2),
    # Every layer with experts, one full layer by layer_types, one KV head, the embeddings times
    # sqrt(48) (mup_enabled), a tied head.
    "afmoe-all-moe": dict(_BASE, model_type="afmoe", num_hidden_layers=4, num_key_value_heads=1,
                          head_dim=8, num_dense_layers=0, num_experts=4, num_experts_per_tok=3,
                          moe_intermediate_size=24, num_shared_experts=1, sliding_window=5,
                          layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                       "sliding_attention"],
                          mup_enabled=True, tie_word_embeddings=True),
    # No expert layer (num_dense_layers 4): dense layers beside NoPE ones, windows on 0 and 2.
    "afmoe-all-dense": dict(_BASE, model_type="afmoe", num_hidden_layers=4, num_key_value_heads=2,
                            head_dim=10, num_dense_layers=4, sliding_window=4,
                            global_attn_every_n_layers=2),
    # Laguna: every layer full, RoPE on int(10 x 0.5) = 5 of each head (LagunaConfig's full-layer
    # factor; transformers rotates 6), a per-head softplus gate (d -> 6), layer 0 dense, then top
    # 2 of 5 experts of 16 beside an ungated shared MLP of 24, moe_routed_scaling_factor.
    "laguna": dict(_BASE, model_type="laguna", num_key_value_heads=2, head_dim=10, num_experts=5,
                   num_experts_per_tok=2, moe_intermediate_size=16,
                   shared_expert_intermediate_size=24, moe_routed_scaling_factor=2.5),
    # No shared MLP (shared_expert_intermediate_size 0: LagunaMLP builds 0-wide linears).
    "laguna-no-shared": dict(_BASE, model_type="laguna", num_key_value_heads=2, head_dim=10,
                             num_experts=5, num_experts_per_tok=2, moe_intermediate_size=16,
                             shared_expert_intermediate_size=0),
    # Windows of 4 on layers 0 and 2 (two RoPE sets, whole heads), every layer with experts, three
    # KV heads, gating "per-head", a tied head.
    "laguna-window": dict(_BASE, model_type="laguna", num_key_value_heads=3, head_dim=8,
                          num_experts=4, num_experts_per_tok=3, moe_intermediate_size=24,
                          shared_expert_intermediate_size=16, mlp_layer_types=["sparse"] * 3,
                          layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                          sliding_window=4, rope_parameters=_WHOLE_HEADS, gating="per-head",
                          tie_word_embeddings=True),
}

#: The configuration class's defaults (transformers 5.24's HYV3Config, tencent/Hy3-preview's
#: shape: 80 layers 4096 wide, 192 experts of 1536, top 8, one shared; 295B published).
#: AfmoeConfig's: arcee-ai/Trinity-Mini's shape, 32 layers 2048 wide, 64 experts of 1408, top 6,
#: two shared, the first layer dense.
#: LagunaConfig's: 40 full layers 2048 wide, 48 heads of 128 (RoPE on half), 256 experts of 512,
#: top 8, a shared MLP of 512, the first layer dense.
DEFAULT_PARAMETERS = {"hy_v3": 295_033_528_320, "afmoe": 19_232_600_000, "laguna": 33_189_975_808}

_CLASSES = {"hy_v3": "HYV3ForCausalLM", "afmoe": "AfmoeForCausalLM", "laguna": "LagunaForCausalLM"}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


@pytest.mark.parametrize("model_type", sorted(DEFAULT_PARAMETERS))
def test_default_config_parameters_equal_hugging_face(model_type):
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    expected = DEFAULT_PARAMETERS[model_type]
    assert _ours(fields, model_type) == _hf_count({"model_type": model_type}) == expected


def test_hy_v3_active_parameters():
    """Hy3-preview's active parameters (21B published, A21B), by hand: embeddings and head
    2 x 120832 x 4096 = 989,855,744; 80 attentions of 4096 x (8192 + 2 x 1024) + 8192 x 4096 with
    q/k norms (256) and two layer norms (8192): 6,040,473,600; the dense layer's 3 x 4096 x 13312
    = 163,577,856; 79 sparse layers of 9 experts (8 routed and the shared one) x 3 x 4096 x 1536
    and a router of 192 x 4096: 13,481,803,776; the final norm 4096."""
    transformers = pytest.importorskip("transformers")
    from costmodel import estimate

    fields = transformers.AutoConfig.for_model("hy_v3").to_dict()
    active = estimate(dict(fields, name="hy3"), seq_len=16).to_dict()["params"]["active"]
    assert active == 20_675_715_072


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    """The rotary buffers (inv_freq and original_inv_freq, fp32) and each sparse layer's fp32
    e_score_correction_bias: bytes of every buffer of the bf16 meta model."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    """hy_v3 (b 2, n 12, bf16): 71,448 parameters, 2,704,896 forward matmul FLOPs, 5,409,792
    backward (eager) and 5,513,472 (sdpa), 242,444 and 201,548 bytes saved, 6,720 KV-cache bytes.
    afmoe: 107,087 parameters, 4,149,504 forward FLOPs, 8,299,008 and 8,437,248 backward,
    443,680 and 397,984 bytes saved (23,040 short before facts.output_gate_saves), 5,760
    KV-cache bytes (the sliding layers' caches hold their window). laguna: 69,574 parameters,
    2,635,776 forward FLOPs, 5,271,552 and 5,375,232 backward, 241,004 and 208,748 bytes saved,
    6,720 KV-cache bytes."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    assert_rows_exact(odd_config_rows(CONFIGS[name], name, attention))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", ["hy_v3", "hy_v3-pattern", "laguna", "afmoe"])
def test_cache_after_prefill_equals_the_estimate(name):
    """Right after a prefill transformers 5.24's DynamicSlidingWindowLayer shows sliding_window - 1
    tokens, a view whose storage is the whole prompt's: the afmoe config at b 2, n 9, fp32 holds
    11,520 bytes (7,680 visible), the estimate's figure."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_cache_after_prefill_exact

    assert_cache_after_prefill_exact(CONFIGS[name], name, "fp32")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_architectures_alone_name_the_model_types(name):
    """A config.json that names only `architectures` reads as its model type."""
    from costmodel.hf import from_hf_config

    fields = CONFIGS[name]
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = [_CLASSES[fields["model_type"]]]
    assert from_hf_config(bare, name=name) == from_hf_config(fields, name=name)


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["hy_v3"], mlp_bias=True), "mlp_bias (biases on hy_v3's dense and shared MLPs"),
    (dict(CONFIGS["hy_v3"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for hy_v3"),
    (dict(CONFIGS["hy_v3"], partial_rotary_factor=0.5), "partial_rotary_factor is not modelled for hy_v3"),
    (dict(CONFIGS["hy_v3"], head_dim=None), "head_dim null is not modelled for hy_v3"),
    (dict(CONFIGS["hy_v3"], num_experts=None), "num_experts is null but 2 layers have experts"),
    (dict(CONFIGS["hy_v3"], num_experts=0), "num_experts must be at least 1, got 0"),
    (dict(CONFIGS["hy_v3"], mlp_layer_types=["dense", "sparse"]),
     "mlp_layer_types must list dense or sparse for each of the 3 layers"),
    (dict(CONFIGS["afmoe"], attention_bias=True), "attention_bias is not modelled for afmoe"),
    (dict(CONFIGS["afmoe"], layer_types=["full_attention"] * 4), "leaves no layer with RoPE"),
    (dict(CONFIGS["afmoe"], layer_types=["full_attention"] + ["sliding_attention"] * 3),
     "a full-attention (NoPE) layer among afmoe's first num_dense_layers (1) dense layers"),
    (dict(CONFIGS["afmoe"], sliding_window=None), "sliding_window is null but afmoe's layers 0..."),
    (dict(CONFIGS["afmoe"], num_experts_per_tok=None), "num_experts_per_tok is null but 3 layers"),
    (dict(CONFIGS["afmoe"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for afmoe"),
    (dict(CONFIGS["afmoe"], rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                             "partial_rotary_factor": 0.5}),
     "partial_rotary_factor is not modelled for afmoe"),
    (dict(CONFIGS["laguna"], attention_bias=True), "attention_bias is not modelled for laguna"),
    (dict(CONFIGS["laguna"], gating="per-element"), "gating 'per-element' (a softplus gate on each channel)"),
    (dict(CONFIGS["laguna"], gating=False), "gating False (a softplus gate on each channel)"),
    (dict(CONFIGS["laguna"], num_attention_heads_per_layer=[6, 3, 6]),
     "num_attention_heads_per_layer other than num_attention_heads (6)"),
    (dict(CONFIGS["laguna"], moe_router_logit_softcapping=30.0), "moe_router_logit_softcapping"),
    (dict(CONFIGS["laguna"], layer_types=["sliding_attention", "full_attention", "full_attention"],
          sliding_window=4), "a partial_rotary_factor differing between laguna's full and sliding"),
    (dict(CONFIGS["laguna"], rope_parameters={"rope_type": "default", "rope_theta": 1e4}),
     "laguna's rope_parameters must hold one dict per layer type (full_attention missing)"),
    (dict(CONFIGS["laguna"], num_experts=None), "num_experts is null but 2 layers have experts"),
])
def test_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


@pytest.mark.parametrize("name, op, expected", [
    # AFMoE: the gate's sigmoid on h d_h = 60 a token in 4 layers, the router's on 5 experts in 3
    ("afmoe", "sigmoid", 2 * 9 * (4 * 60 + 3 * 5)),
    # Laguna: one softplus a head (6) a token in 3 layers; the router's sigmoid on 5 experts in 2
    ("laguna", "softplus", 2 * 9 * 3 * 6),
    ("laguna", "sigmoid", 2 * 9 * 2 * 5),
])
def test_gate_and_router_elements_are_the_ops_the_class_runs(name, op, expected):
    """Output elements of aten's sigmoid and softplus in one eager fp32 forward (b 2, n 9) of the
    real class, against the tree's element counts of the same kind."""
    pytest.importorskip("transformers")
    from tests.test_hf_gpt_oss import _hf_elements, _tree_elements

    hf = _hf_elements(CONFIGS[name], 2, 9, (op,))
    assert hf[op] == _tree_elements(CONFIGS[name], 2, 9)[op] == expected


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hy_v3", "afmoe", "laguna"])
def test_every_validate_row_is_exact_in_fp32_on_real_tensors(name):
    """fp32 on the CPU (real tensors), where validate adds torch.profiler's count of the training
    matmul FLOPs as a second, independent measurement."""
    pytest.importorskip("transformers")
    assert_fp32_rows_exact(CONFIGS[name], name)


def _mutated():
    """One of CONFIGS with one to three fields dropped, retyped or set to odd values."""
    from hypothesis import strategies as st

    from tests.test_robustness import JSON_VALUES

    @st.composite
    def mutate(draw) -> dict:
        data = dict(CONFIGS[draw(st.sampled_from(sorted(CONFIGS)))])
        for _ in range(draw(st.integers(1, 3))):
            key = draw(st.sampled_from(sorted(data)))
            action = draw(st.sampled_from(["drop", "value", "int"]))
            if action == "drop" and key != "model_type":
                data.pop(key)
            elif action == "value":
                data[key] = draw(JSON_VALUES)
            else:
                data[key] = draw(st.integers(-5, 10**6))
        return data

    return mutate()


@pytest.mark.slow
def test_mutated_configs_read_as_a_config_or_one_clear_error():
    """Odd values in these readers' fields: a ModelConfig or one ConfigError line, never a
    traceback."""
    from hypothesis import HealthCheck, given, settings

    from costmodel.config import ConfigError, ModelConfig
    from costmodel.hf import from_hf_config

    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_mutated())
    def check(data):
        try:
            cfg = from_hf_config(data, name="fuzz")
        except ConfigError as error:
            assert str(error) and "\n" not in str(error)
            return
        assert isinstance(cfg, ModelConfig)

    check()
