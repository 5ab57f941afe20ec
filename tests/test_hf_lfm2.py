"""LiquidAI's LFM2 and LFM2-MoE (costmodel/hf_lfm2.py: model_type "lfm2", "lfm2_moe";
costmodel/blocks/shortconv.py) against transformers 5.24's Lfm2ForCausalLM and Lfm2MoeForCausalLM
built from the same config dict on the CPU (causal_conv1d_fn's reference PyTorch path): parameters
and buffers (conv_bias, a tied or untied head, several layer_types patterns, the MLP width's
auto-adjustment on and off, dense layers and experts, the class default on the meta device), the training forward's and the training step's matmul FLOPs (FlopCounterMode; the
depthwise conv's backward counted with its groups, validate/hf_mamba1.py), a cached decode step's
and a prefill's, the cache after a prefill (each attention layer's keys and values, each conv
layer's conv state), the bytes saved for backward (eager and sdpa, fp32 and bf16), and the configs
refused. Not compared: other ops' elements (the short convolution's two gating products are not
modelled).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_rows_exact, assert_saved_bytes_exact,
                                  buffer_bytes_both, estimated_total, hf_meta_count, odd_config_rows)

#: Odd sizes no dimension shares: d 48, 4 heads of 12, 2 KV heads, intermediate 100 (auto-adjusted:
#: int(200 / 3) = 66, rounded up to 256), conv of 3 taps, vocabulary 99, 4 layers, one of them attention.
LFM2 = dict(model_type="lfm2", vocab_size=99, hidden_size=48, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=100, conv_L_cache=3,
            layer_types=["conv", "full_attention", "conv", "conv"])
VARIANTS = {
    "lfm2": LFM2,
    # biases on the conv, in_proj and out_proj; an untied head; 5 taps
    "lfm2_bias_untied": dict(LFM2, conv_bias=True, tie_word_embeddings=False, conv_L_cache=5),
    # no adjustment: the MLP is intermediate_size wide (100)
    "lfm2_no_adjust": dict(LFM2, block_auto_adjust_ff_dim=False),
    # int(1.5 x 66) = 99, rounded up to a multiple of 24: 120; attention first and last
    "lfm2_multiplier": dict(LFM2, block_ffn_dim_multiplier=1.5, block_multiple_of=24,
                            layer_types=["full_attention", "conv", "conv", "full_attention"]),
    # no layer_types: full_attn_idxs says which layers attend; block_ff_dim (LFM2's checkpoints' name)
    # and tie_embedding win over intermediate_size and tie_word_embeddings
    "lfm2_idxs": dict({k: v for k, v in LFM2.items() if k != "layer_types"}, full_attn_idxs=[1, 2],
                      block_ff_dim=130, tie_embedding=False),
}
#: LFM2-MoE at the same odd sizes: the first layer's MLP 100 wide (no adjustment), then 5 experts of
#: 24 (a multiple of 8, as bf16 grouped_mm's strides need), the top 2 of each token.
MOE = dict(LFM2, model_type="lfm2_moe", moe_intermediate_size=24, num_experts=5, num_experts_per_tok=2,
           num_dense_layers=1)
MOE_VARIANTS = {
    "lfm2_moe": MOE,
    # biases, an untied head, the chosen scores not renormalised but scaled by 2.5
    "lfm2_moe_bias_untied": dict(MOE, conv_bias=True, tie_word_embeddings=False, norm_topk_prob=False,
                                 routed_scaling_factor=2.5),
    "lfm2_moe_no_dense": dict(MOE, num_dense_layers=0, layer_types=["full_attention", "conv", "conv", "conv"]),
    "lfm2_moe_all_dense": dict(MOE, num_dense_layers=4),
}


@pytest.mark.parametrize("fields", [*VARIANTS.values(), *MOE_VARIANTS.values()], ids=[*VARIANTS, *MOE_VARIANTS])
def test_parameters_equal_the_class(fields):
    assert estimated_total(fields, "x") == hf_meta_count(fields)


@pytest.mark.parametrize("name,expected", [("lfm2_moe", 108), ("lfm2_moe_no_dense", 128), ("lfm2_moe_all_dense", 48)])
def test_moe_buffers_equal_the_class(name, expected):
    """The rotary tables' 48 bytes and each expert layer's fp32 expert_bias (5 values, 20 bytes)."""
    ours, theirs = buffer_bytes_both(MOE_VARIANTS[name], name)
    assert ours == theirs == expected


def test_moe_checkpoint_shape_exact_integer():
    """Lfm2MoeConfig's sizes (d 2,048, 32 experts of 1,792, the top 4, the first 2 layers an MLP of
    7,168) over 24 layers of two convs then attention (LFM2-8B-A1B's layout): 8,327,334,912
    parameters, the meta model's."""
    fields = dict(model_type="lfm2_moe", num_hidden_layers=24, layer_types=["conv", "conv", "full_attention"] * 8)
    assert estimated_total(fields, "x") == hf_meta_count(fields) == 8_327_334_912


@pytest.mark.parametrize("name", ["lfm2", "lfm2_multiplier"])
def test_buffers_equal_the_class(name):
    """The rotary tables' inv_freq and original_inv_freq (fp32, head_dim / 2 each)."""
    ours, theirs = buffer_bytes_both(VARIANTS[name], name)
    assert ours == theirs == 48


def test_class_default_and_a_checkpoint_shape_exact_integers():
    """Lfm2Config() on the meta device (transformers 5.24: d 2,560, 32 layers, every one attention
    since neither layer_types nor full_attn_idxs is given, intermediate 12,288 adjusted to 8,192,
    vocabulary 65,536, tied): 2,705,497,600. LFM2-1.2B's shape (d 2,048, 16 layers, attention at
    2, 5, 8, 10, 12, 14, block_ff_dim 12,288 adjusted to 8,192): 1,170,340,608."""
    default = {"model_type": "lfm2"}
    checkpoint = dict(model_type="lfm2", hidden_size=2048, num_hidden_layers=16, block_ff_dim=12288,
                      full_attn_idxs=[2, 5, 8, 10, 12, 14])
    counts = [estimated_total(fields, "x") for fields in (default, checkpoint)]
    assert counts == [hf_meta_count(fields) for fields in (default, checkpoint)]
    assert counts == [2_705_497_600, 1_170_340_608]


ROWS = {name: VARIANTS.get(name) or MOE_VARIANTS[name] for name in
        ("lfm2", "lfm2_bias_untied", "lfm2_multiplier", "lfm2_moe", "lfm2_moe_bias_untied", "lfm2_moe_no_dense")}


@pytest.mark.parametrize("name", ROWS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 2), (3, 1)])
def test_training_forward_and_step_flops(name, b, n):
    """The class's own training forward (its default use_cache builds a cache: a sequence shorter
    than the conv's K is padded to K first) and the step with the backward; each token's top k
    experts only (the experts' loop or grouped_mm runs the chosen rows)."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops_both

    fields = ROWS[name]
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(fields, b, n, use_cache=None)


def test_training_flops_exact_integers():
    """The tiny LFM2 at b 2, n 9: 6,773,760 forward FLOPs, 20,321,280 for the step (the conv's
    weight gradient counted with its groups)."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(LFM2, 2, 9, use_cache=None) == (6_773_760, 20_321_280)


@pytest.mark.parametrize("name", ["lfm2", "lfm2_bias_untied", "lfm2_moe", "lfm2_moe_bias_untied"])
def test_decode_and_prefill_flops(name):
    """A decode step's conv over K + 1 columns (2 outputs), a prefill's over max(n, K) + K - 1."""
    assert_decode_flops_exact(ROWS[name], name)
    assert_prefill_flops_exact(ROWS[name], name)


@pytest.mark.parametrize("name", ROWS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Per attention layer its keys and values; per conv layer its conv state (b, d, K) in the
    model's dtype (transformers' LinearAttentionLayer, which "conv" layers reuse)."""
    assert_cache_after_prefill_exact(ROWS[name], name, dtype)


@pytest.mark.parametrize("name", ROWS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 1), (3, 2)])
def test_bytes_saved_for_backward(name, dtype, attention, b, n):
    """The class's training forward with its loss (validate's saved-tensor hooks) against the
    tree's activations: the short convolution's (blocks/shortconv.saved_bytes_torch: a sequence
    shorter than K padded by the cache) and the families' facts (fp32 RMSNorm, softmax and loss;
    lfm2_moe's sigmoid scores and routing weights in the model's dtype)."""
    assert_saved_bytes_exact(ROWS[name], name, dtype, b, n, attention=attention)


@pytest.mark.parametrize("name", ["lfm2", "lfm2_bias_untied", "lfm2_moe", "lfm2_moe_no_dense"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_validate_rows_exact(name, attention):
    """validate's rows (validate/hf_lfm2.py writes the config.json back; bf16 under FakeTensorMode,
    b 2, n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs (the conv's
    backward with its groups: validate/measure/flops.py), the other ops' elements, the bytes saved
    for backward and the cache (keys, values and conv states: validate/measure/memory.py)."""
    assert_rows_exact(odd_config_rows(ROWS[name], name, attention), also=frozenset({"silu elements"}))


@pytest.mark.parametrize("name", ["lfm2", "lfm2_moe_bias_untied"])
def test_validate_rows_exact_on_real_tensors_in_fp32(name):
    """The same rows on the CPU's real tensors in fp32; no torch.profiler row (its with_flops
    estimates no conv1d, so it would leave the short convolutions out: validate/compare.py)."""
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(ROWS[name]), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype="fp32", gen_tokens=2), target="hf", device="cpu")
    assert "training matmul FLOPs (profiler)" not in {row.quantity for row in rows}
    assert_rows_exact(rows)


def test_validate_writer_refuses_what_the_class_cannot_build():
    """A ModelConfig whose layer is neither a conv nor attention followed by an MLP."""
    from costmodel.hf import from_hf_config
    from validate.hf_config_dict import config_dict

    cfg = from_hf_config(dict(LFM2), "lfm2")
    with pytest.raises(ValueError, match="conv or attention"):
        config_dict(cfg.replace(layer_pattern=("shortconv", "shortconv", "attention", "mlp") * 2))


def test_bytes_saved_exact_integer():
    """The tiny LFM2 at b 2, n 9 (fp32): 488,884 bytes saved for backward."""
    from costmodel import estimate

    ours = estimate(dict(LFM2, name="lfm2"), seq_len=9, batch=2, dtype="fp32").to_dict()
    assert ours["memory"]["activations"] == 488_884


@pytest.mark.parametrize("fields,message", [
    (dict(LFM2, layer_types=["conv", "sliding_attention", "conv", "conv"]), "layer_types"),
    (dict(LFM2, layer_types=["conv", "full_attention"]), "layer_types"),
    (dict(LFM2, conv_L_cache=0), "conv_L_cache"),
    (dict(LFM2, block_multiple_of=0), "block_multiple_of"),
    (dict(LFM2, block_ffn_dim_multiplier=0.001), "adjusted MLP width"),
    ({k: v for k, v in MOE.items() if k != "layer_types"}, "needs layer_types"),
    (dict(MOE, use_expert_bias=False), "use_expert_bias"),
    (dict(MOE, num_experts=0), "num_experts"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LFM2, layer_types=["conv", "linear_attention", "conv", "conv"])))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "layer_types" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    for fields, cls in ((LFM2, "Lfm2ForCausalLM"), (MOE, "Lfm2MoeForCausalLM")):
        named = {k: v for k, v in fields.items() if k != "model_type"}
        assert from_hf_config(dict(named, architectures=[cls]), name="x").family == fields["model_type"]


def test_tensor_parallel_and_an_engine_cache_are_refused():
    """No tensor-parallel split of the short convolution and no engine cache for its states are
    modelled: one sentence each."""
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    cfg = from_hf_config(dict(LFM2), "lfm2")
    assert "short convolutions" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="short-convolution states"):
        check_engine_cache(cfg)


def test_through_the_cli(tmp_path, capsys):
    """estimate and plan answer for an LFM2 config."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(LFM2))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == hf_meta_count(LFM2)
    code, out, err = run_main(["plan", "--config", str(path), "--hardware", "h100-sxm", "--gpus", "8"], capsys)
    assert code == 0, err
