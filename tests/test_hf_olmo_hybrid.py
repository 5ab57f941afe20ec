"""OLMo Hybrid (costmodel/hf_olmo_hybrid.py: OLMo 3's post-normed attention layers beside pre-norm
Gated DeltaNet layers of separate q, k, v, a, b, g projections) against transformers 5.24's
OlmoHybridForCausalLM built from the same config dict on the CPU: parameters (odd configs, the
class's defaults on the meta device), the training forward's and a decode step's matmul FLOPs
(FlopCounterMode), the cache after a prefill, and the configs it refuses. Not compared: saved
bytes and other ops' elements (not modelled for the Gated DeltaNet mixer; the workload warns).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                   estimated_total, hf_meta_count)

#: Odd sizes no dimension shares: d 48, 4 query heads and 2 KV heads of 12 (head_dim read, not
#: d / h), Gated DeltaNet 2 key heads of 10 and 6 value heads of 14, conv 3, an MLP of 37,
#: 4 layers (the class's rule: full attention on layer 3 only).
OLMO_HYBRID = dict(model_type="olmo_hybrid", vocab_size=99, hidden_size=48, num_hidden_layers=4,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=12, intermediate_size=37,
                   linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=10,
                   linear_value_head_dim=14, linear_conv_kernel_dim=3,
                   pad_token_id=None, eos_token_id=None,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
VARIANTS = {
    "odd": OLMO_HYBRID,
    # two attention layers (one first), q/k/v/o biases, a tied head, the linear sizes' defaults
    # (0.75 d / H_k = 36 wide keys, 72 wide values, H_k = H_v = h)
    "biases_tied_defaults": dict(
        {k: v for k, v in OLMO_HYBRID.items() if not k.startswith("linear_")}, attention_bias=True,
        tie_word_embeddings=True, num_hidden_layers=5,
        layer_types=["full_attention", "linear_attention", "linear_attention", "full_attention", "linear_attention"]),
    # NoPE (rope_theta null: no rotary embedding), MHA, no neg eigenvalues (the same matmuls)
    "nope_mha": dict(OLMO_HYBRID, num_key_value_heads=4, linear_allow_neg_eigval=False,
                     rope_parameters={"rope_type": "default", "rope_theta": None}),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_class_defaults_exact_integer():
    """OlmoHybridConfig's defaults on the meta device (transformers 5.24): 32 layers 3840 wide, 30
    heads, every fourth layer full attention, Gated DeltaNet keys of 96 and values of 192."""
    fields = {"model_type": "olmo_hybrid"}
    assert estimated_total(fields, "defaults") == hf_meta_count(fields) == 7_430_870_688


def _forward_flops(fields: dict, b: int, n: int) -> int:
    """FlopCounterMode's count of the class's training forward with its loss, eager attention, no cache."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    ids = torch.randint(0, fields["vocab_size"], (b, n))
    with FlopCounterMode(display=False) as counter:
        model(ids, labels=ids, use_cache=False).loss
    return counter.get_total_flops()


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 70)])  # one chunk of 64, two chunks (the second padded)
def test_training_forward_flops(name, b, n):
    from costmodel import estimate

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32")
    assert ours.to_dict()["flops"]["forward"] == _forward_flops(VARIANTS[name], b, n)


@pytest.mark.parametrize("name", VARIANTS)
def test_decode_step_flops(name):
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Keys and values of the attention layers (b h_kv n d_h each), and per Gated DeltaNet layer
    its conv state (b, 2 H_k P_k + H_v P_v, K) in the model's dtype and its recurrent state
    (b, H_v, P_k, P_v) in fp32."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)
