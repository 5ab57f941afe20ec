"""The models built from nemotron_h's Mamba-2 mixer (costmodel/hf_hybrid.py: model_type
"granitemoehybrid", IBM Granite 4.0-H; "bamba"; "mamba2", the pure state-space model) against
transformers 5.24's GraniteMoeHybridForCausalLM, BambaForCausalLM and Mamba2ForCausalLM built from
the same config dict on the CPU: parameters (MoE and dense FFNs, RoPE or none, tied heads, biases,
multipliers, stacks without attention, the classes' defaults on the meta device), the training
forward's matmul FLOPs (FlopCounterMode with validate.measure's grouped_mm formula), a cached
decode step's, the cache after a prefill (attention keys and values beside each Mamba-2 layer's
conv and scan states), the bytes saved for backward in the dense patterns, and the configs they
refuse. Not compared: other ops' elements (blocks/mamba.py does not model the mixers').
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_saved_bytes_exact, estimated_total, hf_meta_count)

#: Odd sizes no dimension shares (as tests/test_hf_nemotron_h.py's): d 48, 4 query heads and 2 KV
#: heads of 12, Mamba-2 6 heads of 16 (mamba_expand 2) with state 7 in 2 groups, conv 3, chunks of
#: 4; experts of 16 (grouped_mm's 16-byte strides), a shared MLP of 13, 5 experts top 2; Granite
#: 4.0-H's multipliers (ibm-granite/granite-4.0-h-small config.json).
GRANITE = dict(model_type="granitemoehybrid", vocab_size=99, hidden_size=48, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2, intermediate_size=16,
               shared_intermediate_size=13, num_local_experts=5, num_experts_per_tok=2, mamba_n_heads=6,
               mamba_n_groups=2, mamba_d_state=7, mamba_d_conv=3, mamba_chunk_size=4, mamba_expand=2,
               layer_types=["mamba", "attention", "mamba", "mamba"], embedding_multiplier=12.0,
               residual_multiplier=0.22, logits_scaling=6.0, attention_multiplier=0.015625)
#: Bamba: Llama's MLP of 37 (gate, up, down), attention (RoPE on half of each head) on layer 1.
BAMBA = dict(model_type="bamba", vocab_size=99, hidden_size=48, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=37, mamba_n_heads=6, mamba_n_groups=2, mamba_d_state=7,
             mamba_d_conv=3, mamba_chunk_size=4, attn_layer_indices=[1])
#: Pure Mamba-2 (Mamba2ForCausalLM): 3 blocks of the same mixer, no attention, no MLP.
MAMBA2 = dict(model_type="mamba2", vocab_size=99, hidden_size=48, num_hidden_layers=3, num_heads=6, head_dim=16,
              n_groups=2, state_size=7, conv_kernel=3, chunk_size=4, expand=2)
VARIANTS = {
    "granite_moe": GRANITE,
    "granite_dense": dict(GRANITE, num_local_experts=0),
    # RoPE, a tied head, biases on attention and the Mamba projections, no conv bias, new type names
    "granite_rope_biases": dict(GRANITE, position_embedding_type="rope", tie_word_embeddings=True,
                                attention_bias=True, mamba_proj_bias=True, mamba_conv_bias=False,
                                layer_types=["linear_attention", "full_attention", "full_attention",
                                             "linear_attention"]),
    "granite_dense_rope_biases": dict(GRANITE, num_local_experts=0, position_embedding_type="rope",
                                      attention_bias=True, mamba_proj_bias=True, attention_multiplier=1.0),
    "granite_mqa_one_group": dict(GRANITE, num_key_value_heads=1, mamba_n_groups=1, mamba_n_heads=3),
    "bamba": BAMBA,
    "bamba_biases": dict(BAMBA, mlp_bias=True, attention_bias=True, mamba_proj_bias=True,
                         tie_word_embeddings=True, attn_layer_indices=[0, 3], head_dim=20),
    "bamba_mha": dict(BAMBA, num_key_value_heads=None, mamba_d_head=24, mamba_n_heads=4),
    "bamba_no_attention": dict(BAMBA, attn_layer_indices=None),
    "granite_no_attention": dict(GRANITE, layer_types=None),
    "mamba2": MAMBA2,
    "mamba2_biases_tied": dict(MAMBA2, use_bias=True, use_conv_bias=False, tie_word_embeddings=True,
                               n_groups=3, num_heads=3, head_dim=32),
    "mamba2_bf16_residual": dict(MAMBA2, residual_in_fp32=False),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


@pytest.mark.parametrize("fields", [
    {"model_type": "granitemoehybrid"},  # 32 Mamba-2 layers 4096 wide, 8 experts of 11,008 each
    {"model_type": "granitemoehybrid", "layer_types": ["mamba"] * 9 + ["attention"] + ["mamba"] * 22},
    {"model_type": "bamba"},  # every layer Mamba-2 (attn_layer_indices None)
    {"model_type": "bamba", "attn_layer_indices": [9, 18, 27]},  # Bamba-9B's attention layers
    {"model_type": "mamba2"},  # 64 blocks 4096 wide, 128 heads of 64, 8 groups
    {"model_type": "nemotron_h", "hybrid_override_pattern": "MEM-"},  # no attention layer either
], ids=["granitemoehybrid", "granitemoehybrid_attention", "bamba", "bamba_9b_layers", "mamba2", "nemotron_h"])
def test_parameters_of_the_class_defaults(fields):
    assert estimated_total(fields, "defaults") == hf_meta_count(fields)


def test_class_defaults_exact_integers():
    """The classes' defaults on the meta device (transformers 5.24): GraniteMoeHybridConfig()
    38,601,064,448, BambaConfig() 9,992,765,440, Mamba2Config() 7,285,403,648."""
    counts = {t: estimated_total({"model_type": t}, t) for t in ("granitemoehybrid", "bamba", "mamba2")}
    assert counts == {"granitemoehybrid": 38_601_064_448, "bamba": 9_992_765_440, "mamba2": 7_285_403_648}


def _forward_flops(fields: dict, b: int, n: int) -> int:
    """FlopCounterMode's count of the class's training forward with its loss, eager attention, no
    cache (transformers 5.24 cannot build one for Bamba or Granite without an attention layer:
    DynamicCache.get_seq_length raises on linear-attention layers only)."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    from validate.measure.flops import EXTRA_FLOP_FORMULAS

    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    ids = torch.randint(0, fields["vocab_size"], (b, n))
    with FlopCounterMode(display=False, custom_mapping=dict(EXTRA_FLOP_FORMULAS)) as counter:
        model(ids, labels=ids, use_cache=False).loss
    return counter.get_total_flops()


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4)])
def test_training_forward_flops(name, b, n):
    from costmodel import estimate

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32")
    assert ours.to_dict()["flops"]["forward"] == _forward_flops(VARIANTS[name], b, n)


@pytest.mark.parametrize("name", ["granite_moe", "granite_dense", "bamba", "mamba2"])
def test_decode_step_flops(name):
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["granite_moe", "granite_rope_biases", "bamba", "bamba_biases", "mamba2",
                                  "mamba2_biases_tied"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Keys and values of the attention layers (b h_kv n d_h each), and per Mamba-2 layer its conv
    state (b, H P + 2 G N, K) in the model's dtype and its scan state (b, H, P, N) in fp32."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name,dtype", [
    *((name, dtype) for name in ("granite_dense", "granite_dense_rope_biases", "bamba", "bamba_biases",
                                 "mamba2_bf16_residual") for dtype in ("fp32", "bf16")),
    # residual_in_fp32 (Mamba2Config's default) in bf16: norm_f's input is the fp32 residual
    # stream, b n d x 2 bytes more than the tree's (1,728 here; validate/FINDINGS.md), not modelled
    ("mamba2", "fp32"), ("mamba2_biases_tied", "fp32")])
def test_bytes_saved_for_backward(name, dtype):
    """The class's training forward with its loss (validate's saved-tensor hooks, eager attention,
    b 2, n 9: three chunks of 4) against the tree's activations in the dense patterns: the Mamba-2
    mixers' torch path (blocks/mamba.saved_bytes_torch, as nemotron_h's) and the families' facts
    (costmodel/facts.json: Llama's fp32 RMSNorm, fp32 softmax and loss; Granite's scores times an
    attention_multiplier of 1.0; Mamba-2's fp32 RMSNorm and logits)."""
    assert_saved_bytes_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("fields,message", [
    (dict(GRANITE, hidden_act="gelu"), "hidden_act"),
    (dict(BAMBA, hidden_act="relu"), "hidden_act"),
    (dict(GRANITE, output_router_logits=True), "output_router_logits"),
    (dict(BAMBA, z_loss_coefficient=0.1), "z_loss_coefficient"),
    (dict(GRANITE, layer_types=["mamba", "sliding_attention", "mamba", "mamba"]), "layer_types"),
    (dict(GRANITE, layer_types=["mamba", "attention"]), "layer_types"),
    (dict(GRANITE, position_embedding_type="alibi"), "position_embedding_type"),
    (dict(GRANITE, mamba_d_head=10), "mamba_n_heads"),
    (dict(BAMBA, mamba_n_heads=5), "mamba_n_heads"),
    (dict(MAMBA2, hidden_act="gelu"), "hidden_act"),
    (dict(MAMBA2, head_dim=10), "num_heads"),
    (dict(GRANITE, mamba_n_groups=4), "not divisible"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(GRANITE, hidden_act="gelu")))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "hidden_act" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    for fields, family in ((GRANITE, "granitemoehybrid"), (BAMBA, "bamba")):
        named = {k: v for k, v in fields.items() if k != "model_type"}
        named["architectures"] = [{"granitemoehybrid": "GraniteMoeHybridForCausalLM",
                                   "bamba": "BambaForCausalLM"}[family]]
        assert from_hf_config(named, name="x").family == family


def test_a_stack_without_attention_through_the_cli(tmp_path, capsys):
    """mamba2 (no attention layer): no crossover n* (text: none; JSON: null, attention share 0),
    and plan, which times no attention kernel, still answers."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(MAMBA2))
    code, out, _ = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 0 and "crossover n*: none (no attention layer)" in out
    code, out, _ = run_main(["estimate", "--config", str(path), "--json"], capsys)
    regime = json.loads(out)["regime"]
    assert code == 0 and regime["crossover_seq_len"] is None and regime["attention_flops"] == 0
    assert regime["attention_share"] == 0.0 and regime["dominant"] == "neither (only Mamba-2 mixers)"
    code, out, err = run_main(["plan", "--config", str(path), "--hardware", "h100-sxm", "--gpus", "8"], capsys)
    assert code == 0, err


def test_a_stack_without_attention_has_no_context_and_mamba2_says_what_it_leaves_out():
    """A pure Mamba-2 stack attends nowhere, so no length is "beyond its context" (Mamba2Config has
    no context length; the tree's max_positions of 2,048 is a placeholder); the warning on Mamba-2
    layers names the fp32 residual stream's final-norm input it does not count. Bamba with
    attention keeps the context warning past its 262,144 positions."""
    from costmodel.config import Workload
    from costmodel.hf import from_hf_config

    mamba2 = from_hf_config(dict(MAMBA2), "mamba2")
    warnings = Workload(seq_len=100_000).check_fits(mamba2)
    assert not any("beyond the context" in w for w in warnings)
    assert any("2 b n d bytes more in bf16" in w for w in warnings)
    bamba = from_hf_config(dict(BAMBA), "bamba")
    assert "sequence length 300000 is beyond the context of model 'bamba' (262144 tokens)." in \
        Workload(seq_len=300_000).check_fits(bamba)


def test_a_stack_without_attention_takes_any_attention_option():
    """Mamba2ForCausalLM has no attention module (its _supports_sdpa False says only that), so
    --attention changes nothing: sdpa is not refused, and it gives eager's numbers (the review of
    session 17 found sdpa refused while flash was taken)."""
    from costmodel import estimate

    totals = {attention: estimate(dict(MAMBA2), seq_len=16, attention=attention).to_dict()["memory"]
              for attention in ("eager", "sdpa", "flash")}
    assert totals["sdpa"] == totals["eager"] == totals["flash"]
