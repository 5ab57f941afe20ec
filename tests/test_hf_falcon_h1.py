"""TII's Falcon-H1 (costmodel/hf_falcon_h1.py: model_type "falcon_h1") against transformers 5.24's
FalconH1ForCausalLM built from the same config dict on the CPU: parameters and buffers (the
mixer's mup_vector, the rotary tables) for odd configs and the class's defaults on the meta device,
the training forward's and backward's matmul FLOPs (FlopCounterMode), a prefill's and a cached
decode step's, the cache after a prefill (each layer's keys and values beside its conv and scan
states), the bytes saved for backward (eager and sdpa, fp32 and bf16: the attention's own copy of
its input, times attention_in_multiplier; the mixer's y * silu(z) without the gated norm), and the
configs it refuses. Not compared: other ops' elements (the MuP multiplies, the mixer's pointwise ops).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_saved_bytes_exact, buffer_bytes_both,
                                  estimated_total, hf_meta_count)

#: Odd sizes no dimension shares (tests/test_hf_hybrid.py's): d 48, 4 query heads and 2 KV heads of
#: 12, an MLP of 37, 3 layers; the mixer 6 heads of 16 (mamba_d_ssm 96, not mamba_expand x d) with
#: state 7 in 2 groups, conv 3, chunks of 4.
FALCON_H1 = dict(model_type="falcon_h1", vocab_size=99, hidden_size=48, num_hidden_layers=3, num_attention_heads=4,
                 num_key_value_heads=2, intermediate_size=37, mamba_n_heads=6, mamba_n_groups=2, mamba_d_state=7,
                 mamba_d_conv=3, mamba_chunk_size=4, mamba_d_ssm=96)
#: Falcon-H1-0.5B-Base's MuP multipliers (tiiuae/Falcon-H1-0.5B-Base config.json as transformers'
#: tests/models/falcon_h1 copy it): scalars, so they change no count here.
MUP = dict(embedding_multiplier=5.656854249492381, lm_head_multiplier=0.0390625, key_multiplier=0.390625,
           attention_in_multiplier=1.0, attention_out_multiplier=0.9375, ssm_in_multiplier=1.25,
           ssm_out_multiplier=0.23570226039551587, mlp_multipliers=[0.8838834764831844, 0.5859375],
           ssm_multipliers=[0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738])
VARIANTS = {
    "falcon_h1": FALCON_H1,
    # mamba_d_ssm null: the width is mamba_expand x hidden_size (1 x 48, 6 heads of 8)
    "width_from_expand": dict(FALCON_H1, mamba_d_ssm=None, mamba_expand=1),
    # the gated RMSNorm (a weight of 96), normalising after the gate; MuP multipliers
    "gated_norm_mup": dict(FALCON_H1, mamba_rms_norm=True, mamba_norm_before_gate=False, **MUP),
    "gated_norm_before_gate": dict(FALCON_H1, mamba_rms_norm=True, mamba_norm_before_gate=True),
    # projectors_bias (out_proj's) without mamba_proj_bias (in_proj's), and the other way round
    "out_proj_bias_tied": dict(FALCON_H1, projectors_bias=True, tie_word_embeddings=True, mamba_conv_bias=False),
    "in_proj_bias": dict(FALCON_H1, mamba_proj_bias=True, attention_bias=True, mlp_bias=True),
    # 3 groups of one head of 32, multi-query attention with heads of 10
    "groups_heads": dict(FALCON_H1, mamba_n_groups=3, mamba_n_heads=3, mamba_d_head=32, num_key_value_heads=1,
                         head_dim=10),
    "mha": dict(FALCON_H1, num_key_value_heads=None, mamba_n_groups=1, num_hidden_layers=2),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_and_buffers_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])
    ours, theirs = buffer_bytes_both(VARIANTS[name], name)
    assert ours == theirs > 0


def test_class_defaults():
    """FalconH1Config() on the meta device: 32 layers 4,096 wide, a mixer of 128 heads of 8
    (mamba_d_ssm 1,024), state 256, vocabulary 128,000: 8,514,961,408 parameters."""
    assert estimated_total({"model_type": "falcon_h1"}, "defaults") == hf_meta_count({"model_type": "falcon_h1"}) \
        == 8_514_961_408


#: Falcon-H1-7B's sizes as a third-party copy of mlx-community's Falcon-H1-7B-Instruct-4bit config.json
#: lists them (head_dim 128, not 3,072 / 12; a mixer of 24 heads of 128, state 256); the fields it
#: leaves out (vocab_size, intermediate_size, the multipliers) are FalconH1Config's defaults, so this
#: is not the published model and no preset is made from it.
SEVEN_B_SHAPED = dict(model_type="falcon_h1", hidden_size=3072, num_hidden_layers=44, num_attention_heads=12,
                      num_key_value_heads=2, head_dim=128, mamba_d_ssm=3072, mamba_n_heads=24, mamba_d_head=128,
                      mamba_d_state=256, mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2,
                      max_position_embeddings=262144)


def test_a_7b_shaped_config_at_full_size():
    """8,403,402,848 parameters, the tree's and the class's on the meta device."""
    assert estimated_total(SEVEN_B_SHAPED, "7b") == hf_meta_count(SEVEN_B_SHAPED) == 8_403_402_848


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4)])
def test_training_matmul_flops(name, b, n):
    """The forward with its loss, then forward and backward (validate/hf_mamba1.causal_lm_flops:
    FlopCounterMode, fp32, eager attention, no cache, the mixer's torch path, the depthwise conv's
    backward counted with its groups): 3 x every matmul and scan product, the conv's two gradients
    each a conv of the forward's size."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops_both

    flops = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert (flops["forward"], flops["training"]) == causal_lm_flops_both(VARIANTS[name], b, n)


def test_training_step_flops_exact_integer():
    """The odd config at b 2, n 9 (FlopCounterMode, as the tree gives them): 3,706,704 forward
    matmul FLOPs, 11,120,112 forward and backward."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(FALCON_H1, 2, 9) == (3_706_704, 11_120_112)


@pytest.mark.parametrize("name", ["falcon_h1", "gated_norm_mup", "groups_heads"])
def test_prefill_and_decode_step_flops(name):
    assert_prefill_flops_exact(VARIANTS[name], name)
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["falcon_h1", "groups_heads", "mha"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Per layer (FalconH1's "hybrid" cache layer): keys and values (b h_kv n d_h each), the conv
    state (b, H P + 2 G N, K) in the model's dtype and the scan state (b, H, P, N) in fp32."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_for_backward_eager(name, dtype):
    """The class's training forward with its loss (validate's saved-tensor hooks, b 2, n 9: three
    chunks of 4) against the tree's activations: per layer the one norm's output (the mixer keeps
    it times ssm_in_multiplier, a copy as large), the attention's own copy (times
    attention_in_multiplier: SublayerInput), the Mamba-2 torch path (blocks/mamba.saved_bytes_torch,
    gated_norm as mamba_rms_norm says), Llama's attention and MLP; the MuP multiplies by Python
    numbers keep nothing, and in_proj's output times the mup_vector buffer replaces it, as large."""
    assert_saved_bytes_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name", ["falcon_h1", "gated_norm_mup", "groups_heads"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_for_backward_sdpa(name, dtype):
    assert_saved_bytes_exact(VARIANTS[name], name, dtype, attention="sdpa")


def test_bytes_saved_exact_integer():
    """The odd config at b 2, n 9, fp32, eager: 665,092 bytes saved for backward (the tree and
    the saved-tensor hooks); the gated norm would add 13,968 a layer (4 T H P 2 + 4 T G)."""
    from costmodel import estimate

    fields = dict(FALCON_H1, name="x")
    saved = estimate(fields, seq_len=9, batch=2, dtype="fp32", attention="eager").to_dict()["memory"]["activations"]
    gated = estimate(dict(fields, mamba_rms_norm=True), seq_len=9, batch=2, dtype="fp32",
                     attention="eager").to_dict()["memory"]["activations"]
    assert (saved, gated - saved) == (665_092, 3 * 13_968)


@pytest.mark.parametrize("fields,message", [
    (dict(FALCON_H1, hidden_act="gelu"), "hidden_act"),
    (dict(FALCON_H1, mamba_n_heads=5), "mamba_n_heads"),
    (dict(FALCON_H1, mamba_d_ssm=None, mamba_expand=1, mamba_n_heads=5), "mamba_n_heads"),  # 48 over 5 heads
    (dict(FALCON_H1, mamba_d_head=10), "mamba_n_heads"),
    (dict(FALCON_H1, mamba_n_groups=4), "not divisible"),
    (dict(FALCON_H1, mlp_multipliers=[1.0]), "mlp_multipliers"),
    (dict(FALCON_H1, ssm_multipliers=[1.0, 1.0]), "ssm_multipliers"),
    (dict(FALCON_H1, lm_head_multiplier=0.0), "lm_head_multiplier"),
    (dict(FALCON_H1, projectors_bias="yes"), "projectors_bias"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(FALCON_H1, hidden_act="gelu")))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and "hidden_act" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type_and_the_warning():
    from costmodel.config import Workload
    from costmodel.hf import from_hf_config

    named = {k: v for k, v in FALCON_H1.items() if k != "model_type"}
    cfg = from_hf_config(dict(named, architectures=["FalconH1ForCausalLM"]), name="x")
    assert cfg.family == "falcon_h1" and cfg.layer_pattern == ("mamba", "attention", "mlp") * 3
    assert any("Falcon-H1's MuP multipliers" in w for w in Workload(seq_len=16).check_fits(cfg))


def test_a_parallel_pattern_must_pair_each_attention_with_a_mamba():
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(dict(FALCON_H1), name="x")
    with pytest.raises(ConfigError, match="right after a mamba layer"):
        cfg.replace(layer_pattern=("attention", "mamba", "mlp") * 3)


def test_validate_builds_the_class_from_a_model_config():
    """validate/hf_falcon_h1.py writes the config.json back (validate/hf_config_dict.config_dict), so
    `validate` builds FalconH1ForCausalLM from the ModelConfig: its parameter and forward-FLOP rows
    exact (fake tensors, bf16, b 2, n 12). Its backward row counts the depthwise conv's weight
    gradient as torch 2.13's FlopCounterMode does (the groups ignored; tests above count it with
    them) and its KV-cache row holds keys and values only, so neither is asserted here."""
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate
    from validate.hf_config_dict import config_dict

    cfg = config_from_dict(dict(VARIANTS["gated_norm_before_gate"]), source="x", name="x")
    assert config_dict(cfg)["mamba_rms_norm"] is True and config_dict(cfg)["num_hidden_layers"] == 3
    rows = {row.quantity: row for row in validate(cfg, Workload(seq_len=12, batch=2, dtype="bf16"), target="hf")}
    assert rows["parameters"].difference == rows["forward matmul FLOPs"].difference == 0
    assert rows["parameters"].measured == estimated_total(VARIANTS["gated_norm_before_gate"], "x")
