"""Moonshot's Kimi Linear (costmodel/hf_kimi_linear.py: model_type "kimi_linear";
costmodel/blocks/kda.py) against transformers 5.24's KimiLinearForCausalLM built from the same
config dict on the CPU: parameters (layer patterns from layer_types, linear_attn_config's 1-indexed
lists and the class's rule; dense and expert layers; q_lora_rank; shared experts; the class default
on the meta device), the training forward's, the training step's, a prefill's and a cached decode
step's matmul FLOPs (FlopCounterMode: the KDA conv and chunk_kimi_delta_attention; the recurrent
rule is elementwise), the cache after a prefill, the buffers (no rotary tables), and the configs
refused. Not compared yet: other ops' elements and saved bytes (hf_kimi_linear's docstring).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import estimated_total, hf_meta_count

pytestmark = pytest.mark.filterwarnings("ignore:model .* Kimi Delta Attention layers")

#: Odd sizes: d 48, 4 MLA heads (nope 10 + rope 6, values 14, latent 20), 3 KDA heads of 9, a conv of
#: 3 taps, an MLP of 100 in layer 0, then 6 experts of 24 (the top 2) and one shared; vocabulary 99
#: (pad_token_id inside it), 4 layers, the second full attention.
KIMI = dict(model_type="kimi_linear", vocab_size=99, pad_token_id=0, bos_token_id=1, eos_token_id=2, hidden_size=48,
            num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, intermediate_size=100,
            moe_intermediate_size=24, num_experts=6, num_experts_per_token=2, kv_lora_rank=20, qk_rope_head_dim=6,
            qk_nope_head_dim=10, v_head_dim=14,
            linear_attn_config=dict(head_dim=9, num_heads=3, short_conv_kernel_size=3, full_attn_layers=[2],
                                    kda_layers=[1, 3, 4]))
VARIANTS = {
    "kimi": KIMI,
    # layer_types and mlp_layer_types given; queries through a q_lora_rank of 16; 2 shared experts in 2
    # groups of 3, the top 1 group; tie_word_embeddings, which the class ignores (no tied keys)
    "kimi_types": dict(KIMI, layer_types=["full_attention", "linear_attention", "linear_attention", "full_attention"],
                       mlp_layer_types=["sparse", "dense", "sparse", "sparse"], q_lora_rank=16, n_shared_experts=2,
                       n_group=2, topk_group=1, tie_word_embeddings=True),
    # no layer lists: the class's rule (full attention on layer 4 of 6), two dense layers first
    "kimi_rule": dict({k: v for k, v in KIMI.items() if k != "linear_attn_config"}, num_hidden_layers=6,
                      first_k_dense_replace=2, linear_attn_config=dict(head_dim=7, num_heads=5)),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], "x") == hf_meta_count(VARIANTS[name])


def test_class_default_exact_integer():
    """KimiLinearConfig() on the meta device (transformers 5.24: d 2,304, 27 layers, full MLA on
    layers 4, 8, ..., 24, 256 experts of 1,024 and one shared, vocabulary 163,840): 49,133,074,464."""
    default = {"model_type": "kimi_linear"}
    assert estimated_total(default, "x") == hf_meta_count(default) == 49_133_074_464


@pytest.mark.parametrize("fields,message", [
    (dict(KIMI, layer_types=["linear_attention", "sliding_attention", "full_attention", "full_attention"]),
     "layer_types"),
    (dict(KIMI, mlp_layer_types=["dense", "moe", "sparse", "sparse"]), "mlp_layer_types"),
    (dict(KIMI, linear_attn_config=dict(KIMI["linear_attn_config"], full_attn_layers=[0])), "full_attn_layers"),
    (dict(KIMI, hidden_act="gelu"), "hidden_act"),
    (dict(KIMI, attention_bias=True), "attention_bias"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusals_through_the_cli_and_layouts(tmp_path, capsys):
    """One line, exit 2; no tensor-parallel split of KDA and no engine cache for its states."""
    import json

    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(KIMI, attention_bias=True)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "attention_bias" in err and len(err.strip().splitlines()) == 1
    cfg = from_hf_config(dict(KIMI), "kimi")
    assert "Kimi Delta Attention" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="Kimi Delta Attention states"):
        check_engine_cache(cfg)


@pytest.mark.parametrize("name", ["kimi", "kimi_types"])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 100), (1, 129), (3, 1)])
def test_training_forward_and_step_flops(name, b, n):
    """The class's training forward and step (FlopCounterMode, the conv's backward with its groups):
    the KDA conv over max(n, K) + K - 1 outputs (a cache is built in training) and chunk_kimi_delta_attention over 1, 2 and 3 chunks of 64,
    the MLA, the MLP and each token's top k experts with the shared one."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    fields = VARIANTS[name]
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert ours["forward"] == causal_lm_flops(fields, b, n, backward=False, use_cache=None)
    assert ours["training"] == causal_lm_flops(fields, b, n, backward=True, use_cache=None)


@pytest.mark.parametrize("name", ["kimi", "kimi_types"])
def test_prefill_and_decode_flops(name):
    """A prefill (a fresh cache: the conv padded to K, the chunked rule) and a cached decode step
    (causal_conv1d_update over K + 1 columns; recurrent_kimi_delta_attention is elementwise: no
    matmul)."""
    from tests.family_configs import assert_decode_flops_exact, assert_prefill_flops_exact

    assert_prefill_flops_exact(VARIANTS[name], name)
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["kimi", "kimi_types"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Per MLA layer its latent (kv_lora_rank) and shared rope key; per KDA layer its conv state
    (b, 3 H P, K) in the model's dtype and its recurrent state (b, H, P, P) in fp32."""
    from tests.family_configs import assert_cache_after_prefill_exact

    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name,expected", [("kimi", 72), ("kimi_types", 72), ("kimi_rule", 96)])
def test_buffers_equal_the_class(name, expected):
    """Each expert layer's fp32 e_score_correction_bias (6 values, 24 bytes) and no rotary tables
    (facts.rotary_tables "none": KimiLinearModel has no rotary embedding)."""
    from tests.family_configs import buffer_bytes_both

    ours, theirs = buffer_bytes_both(VARIANTS[name], name)
    assert ours == theirs == expected
