"""AI21's Jamba (costmodel/hf_mamba1.py: model_type "jamba"; its Mamba-1 mixer with weighted RMS
norms on dt, B and C, costmodel/blocks/mamba1.py) against transformers 5.24's JambaForCausalLM built
from the same config dict on the CPU (the slow path): parameters (MoE and dense layers, attention
without RoPE, the class's defaults on the meta device), the training forward's and training step's
matmul FLOPs (FlopCounterMode, the depthwise conv's backward counted with its groups:
validate/hf_mamba1.py), a cached decode step's, the cache after a prefill (keys and values beside
each Mamba-1 layer's conv and scan states), the bytes saved for backward in the dense pattern,
and the configs it refuses.
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_saved_bytes_exact, estimated_total,
                                  hf_meta_count)

#: Odd sizes: d 48, 4 query heads and 2 KV heads of 12, Mamba-1 inner 96 (mamba_expand 2), state
#: 7, conv 3, dt rank 3 (auto); attention on layers 1 and 3, 5 experts of 16 (grouped_mm's 16-byte
#: strides) top 2 on layers 0 and 2.
JAMBA = dict(model_type="jamba", vocab_size=99, hidden_size=48, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=16, num_experts=5, num_experts_per_tok=2,
             attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=0,
             mamba_d_state=7, mamba_d_conv=3, mamba_expand=2)
VARIANTS = {
    "jamba_moe": JAMBA,
    # every layer's FFN a SwiGLU MLP of 37
    "jamba_dense": dict(JAMBA, num_experts=1, intermediate_size=37),
    # biases on the Mamba projections, no conv bias, dt rank 5, a tied head, MHA, attention on layer 2 only
    "jamba_dense_biases": dict(JAMBA, num_experts=1, intermediate_size=37, mamba_proj_bias=True,
                               mamba_conv_bias=False, mamba_dt_rank=5, tie_word_embeddings=True,
                               num_key_value_heads=4, attn_layer_period=3, attn_layer_offset=2),
    "jamba_no_attention": dict(JAMBA, attn_layer_period=5, attn_layer_offset=4),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_class_defaults_exact_integer():
    """JambaConfig() on the meta device (transformers 5.24): 51,570,323,328 (Jamba v0.1's sizes)."""
    assert estimated_total({"model_type": "jamba"}, "jamba") == hf_meta_count({"model_type": "jamba"}) \
        == 51_570_323_328


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4)])
def test_training_forward_flops(name, b, n):
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32", attention="eager")
    assert ours.to_dict()["flops"]["forward"] == causal_lm_flops(VARIANTS[name], b, n, backward=False)


@pytest.mark.parametrize("name", ["jamba_moe", "jamba_dense_biases"])
def test_training_step_flops(name):
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=9, batch=2, dtype="fp32", attention="eager")
    assert ours.to_dict()["flops"]["training"] == causal_lm_flops(VARIANTS[name], 2, 9, backward=True)


def test_training_flops_exact_integers():
    """The MoE variant at b 2, n 9: 2,453,184 forward FLOPs, 7,359,552 for the step."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(JAMBA, 2, 9) == (2_453_184, 7_359_552)


@pytest.mark.parametrize("name", ["jamba_moe", "jamba_dense_biases"])
def test_decode_step_flops(name):
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["jamba_moe", "jamba_dense_biases"])
def test_prefill_flops(name):
    assert_prefill_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["jamba_moe", "jamba_dense_biases"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name", ["jamba_dense", "jamba_dense_biases"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_for_backward(name, dtype):
    """The class's training forward with its loss (validate's saved-tensor hooks, eager attention,
    b 2, n 9) against the tree's activations in the dense pattern: the Mamba-1 mixers' slow path
    with weighted norms (blocks/mamba1.saved_bytes_torch) and Llama's facts (facts.json jamba)."""
    assert_saved_bytes_exact(VARIANTS[name], name, dtype)


def test_bytes_saved_exact_integer():
    """The dense variant at b 2, n 9 in bf16: 555,244 bytes saved for backward."""
    from costmodel import estimate

    ours = estimate(dict(VARIANTS["jamba_dense"], name="j"), seq_len=9, batch=2, dtype="bf16", attention="eager")
    assert ours.to_dict()["memory"]["activations"] == 555_244


@pytest.mark.parametrize("fields,message", [
    (dict(JAMBA, hidden_act="gelu"), "hidden_act"),
    (dict(JAMBA, output_router_logits=True), "output_router_logits"),
    (dict(JAMBA, attn_layer_offset=2), "attn_layer_offset"),
    (dict(JAMBA, expert_layer_offset=3), "expert_layer_offset"),
    (dict(JAMBA, mamba_dt_rank=-1), "mamba_dt_rank"),
    (dict(JAMBA, use_mambapy=True), "use_mambapy"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    named = {k: v for k, v in JAMBA.items() if k != "model_type"}
    assert from_hf_config(dict(named, architectures=["JambaForCausalLM"]), name="x").family == "jamba"
