"""Qwen3-Next (costmodel/hf_qwen_next.py, the Gated DeltaNet mixer of costmodel/blocks/deltanet.py
and the attention's output gate) against transformers 5.24's Qwen3NextForCausalLM built from the
same config dict on the CPU: parameters (MoE, dense, mlp_only_layers, a sparse step, biases, a tied
head, the class's defaults on the meta device), the training forward's matmul FLOPs
(FlopCounterMode with validate.measure's grouped_mm formula), a cached decode step's, the cache
after a prefill (attention keys and values beside each Gated DeltaNet layer's conv and recurrent
states), the rule's backward count, and the configs it refuses. Not compared: saved bytes and
other ops' elements (not modelled for the mixer; the workload warns).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                   estimated_total, hf_meta_count)

#: Odd sizes no dimension shares: d 48, 4 query heads and 2 KV heads of 12 (RoPE on half of each:
#: 6, an even width), Gated DeltaNet 2 key heads of 10 and 6 value heads of 14, conv 3; 5 experts
#: of 16 (grouped_mm's 16-byte strides), top 2, a shared expert of 13, an MLP of 37.
QWEN3_NEXT = dict(model_type="qwen3_next", vocab_size=99, hidden_size=48, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=12, intermediate_size=37,
                  linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=10,
                  linear_value_head_dim=14, linear_conv_kernel_dim=3, num_experts=5, num_experts_per_tok=2,
                  moe_intermediate_size=16, shared_expert_intermediate_size=13,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})
VARIANTS = {
    "moe": QWEN3_NEXT,
    "dense": dict(QWEN3_NEXT, num_experts=0),
    "mixed_ffns": dict(QWEN3_NEXT, mlp_only_layers=[0], decoder_sparse_step=2),
    "biases_tied": dict(QWEN3_NEXT, attention_bias=True, tie_word_embeddings=True,
                        layer_types=["full_attention", "linear_attention", "linear_attention", "full_attention"]),
    "mha_linear_only": dict(QWEN3_NEXT, num_key_value_heads=4, linear_num_value_heads=2,
                            layer_types=["linear_attention"] * 4),
    # Qwen3.5 (its four input projections) with experts in every layer, and dense; multimodal RoPE
    "qwen3_5_moe": dict(QWEN3_NEXT, model_type="qwen3_5_moe_text", intermediate_size=None,
                        rope_parameters=dict(QWEN3_NEXT["rope_parameters"], mrope_section=[1, 1, 1])),
    "qwen3_5": dict(QWEN3_NEXT, model_type="qwen3_5_text", num_experts=None, attention_bias=True,
                    rope_parameters=dict(QWEN3_NEXT["rope_parameters"], mrope_section=[1, 1, 1])),
}
for _fields in VARIANTS.values():  # None: the field left out
    for _key in [k for k, v in _fields.items() if v is None]:
        del _fields[_key]


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


@pytest.mark.parametrize("model_type,total", [
    ("qwen3_next", 79_674_391_296),  # 48 layers 2048 wide, 512 experts of 512, top 10
    ("qwen3_5_moe_text", 34_660_610_688),  # 40 layers 2048 wide, 256 experts of 512
    ("qwen3_5_text", 8_953_803_264),  # 32 layers 4096 wide, an MLP of 12,288
])
def test_class_defaults_exact_integers(model_type, total):
    """Each configuration class's defaults on the meta device (transformers 5.24), every fourth
    layer full attention."""
    fields = {"model_type": model_type}
    assert estimated_total(fields, "defaults") == hf_meta_count(fields) == total


@pytest.mark.parametrize("wrapper,text_type", [("qwen3_5", "qwen3_5_text"), ("qwen3_5_moe", "qwen3_5_moe_text")])
@pytest.mark.parametrize("tie", [False, True])
def test_multimodal_configs_read_as_their_language_model(wrapper, text_type, tie):
    """Qwen3_5ForConditionalGeneration and Qwen3_5MoeForConditionalGeneration on the meta device:
    every parameter outside the vision tower (model.visual), the head tied by the wrapper's
    tie_word_embeddings."""
    import torch
    import transformers

    text = {k: v for k, v in VARIANTS["qwen3_5_moe" if "moe" in wrapper else "qwen3_5"].items() if k != "model_type"}
    fields = dict(model_type=wrapper, text_config=dict(text, model_type=text_type), tie_word_embeddings=tie)
    config = transformers.AutoConfig.for_model(**fields)
    cls = transformers.Qwen3_5MoeForConditionalGeneration if "moe" in wrapper else transformers.Qwen3_5ForConditionalGeneration
    with torch.device("meta"):
        model = cls(config)
    language = sum(p.numel() for name, p in model.named_parameters() if not name.startswith("model.visual."))
    assert estimated_total(fields, "wrapped") == language


def _forward_flops(fields: dict, b: int, n: int) -> int:
    """FlopCounterMode's count of the class's training forward with its loss, eager attention, no cache."""
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
@pytest.mark.parametrize("b,n", [(2, 9), (1, 70)])  # one chunk of 64, two chunks (the second padded)
def test_training_forward_flops(name, b, n):
    from costmodel import estimate

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32")
    assert ours.to_dict()["flops"]["forward"] == _forward_flops(VARIANTS[name], b, n)


@pytest.mark.parametrize("name", ["moe", "dense", "biases_tied", "qwen3_5_moe", "qwen3_5"])
def test_decode_step_flops(name):
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["moe", "biases_tied", "dense", "qwen3_5_moe", "qwen3_5"])  # one attention layer at least
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Keys and values of the attention layers (b h_kv n d_h each), and per Gated DeltaNet layer
    its conv state (b, 2 H_k P_k + H_v P_v, K) in the model's dtype and its recurrent state
    (b, H_v, P_k, P_v) in fp32."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("b,n,q", [(2, 9, 4), (1, 4, 4), (3, 13, 4), (2, 9, 64)])
def test_rule_forward_and_backward_flops(b, n, q):
    """torch_chunk_gated_delta_rule alone (2 key heads of 8, 4 value heads of 12), as the training
    forward calls it (qk l2 norm, no initial or final state): FlopCounterMode's forward and
    backward counts against blocks/deltanet.rule_flops and rule_backward_flops."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.models.qwen3_next import modeling_qwen3_next as m

    from costmodel import symbols as S
    from costmodel.blocks.deltanet import rule_backward_flops, rule_flops

    rule = getattr(m.torch_chunk_gated_delta_rule, "__wrapped__", m.torch_chunk_gated_delta_rule)
    torch.manual_seed(0)
    inputs = [torch.randn(b, n, 2, 8), torch.randn(b, n, 2, 8), torch.randn(b, n, 4, 12),
              -torch.rand(b, n, 4), torch.rand(b, n, 4)]
    for x in inputs:
        x.requires_grad_(True)
    with FlopCounterMode(display=False) as forward:
        out, _ = rule(*inputs[:3], g=inputs[3], beta=inputs[4], chunk_size=q, use_qk_l2norm_in_kernel=True)
    with FlopCounterMode(display=False) as backward:
        out.sum().backward()
    subs = {S.H_gv: 4, S.P_gk: 8, S.P_gv: 12, S.Q_m: q}
    assert forward.get_total_flops() == int(rule_flops(b, n).subs(subs))
    assert backward.get_total_flops() == int(rule_backward_flops(b, n).subs(subs))


@pytest.mark.parametrize("fields,message", [
    (dict(QWEN3_NEXT, hidden_act="gelu"), "hidden_act"),
    (dict(QWEN3_NEXT, output_router_logits=True), "output_router_logits"),
    (dict(QWEN3_NEXT, layer_types=["linear_attention", "sliding_attention", "full_attention",
                                   "full_attention"]), "layer_types"),
    (dict(QWEN3_NEXT, layer_types=["full_attention"]), "layer_types"),
    (dict(QWEN3_NEXT, linear_num_value_heads=5), "linear_num_value_heads"),
    (dict(QWEN3_NEXT, mlp_only_layers="0"), "mlp_only_layers"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_cli_estimate_warns_and_refusal_is_one_line(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_NEXT))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 0 and "Gated DeltaNet layers" in out + err
    path.write_text(json.dumps(dict(QWEN3_NEXT, hidden_act="gelu")))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "hidden_act" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    named = {k: v for k, v in QWEN3_NEXT.items() if k != "model_type"}
    named["architectures"] = ["Qwen3NextForCausalLM"]
    assert from_hf_config(named, name="x").family == "qwen3_next"


def test_tensor_parallelism_and_engine_caches_are_refused():
    """No tensor-parallel split of the mixer is modelled (layout/spec.py says so for tp > 1, and
    tp 1 stays open); transformers' engine cannot hold its states (serving/state_slots.py), vLLM's can."""
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    cfg = from_hf_config(dict(QWEN3_NEXT), name="q")
    assert "Gated DeltaNet" in tensor_split_error(cfg, 2, inference=True)
    assert tensor_split_error(cfg, 1, inference=False) is None
    with pytest.raises(ConfigError, match="Gated DeltaNet layers; transformers 5.24's continuous batching"):
        check_engine_cache(cfg, "transformers")
    check_engine_cache(cfg)


def test_the_tree_has_the_mixer_and_the_gate():
    """The decode tree of the odd model: three Gated DeltaNet layers and one gated attention layer
    (layer_types' default rule, full attention every fourth layer), its cache 2 x 2 x 12 bytes per
    key beside the states: conv (2 x 10 x 2 + 6 x 14) x 3 x e, recurrent 4 x 6 x 10 x 14."""
    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(dict(QWEN3_NEXT), name="q")
    assert cfg.layer_pattern[::2] == ("deltanet", "deltanet", "deltanet", "attention")
    tree = CostModel(cfg, profile_for(cfg), phase="decode")
    subs = values(cfg, Workload(seq_len=5, batch=1, dtype="bf16"))
    subs[next(s for s in subs if s.name == "c")] = 6
    states = 3 * ((2 * 10 * 2 + 6 * 14) * 3 * 2 + 4 * 6 * 10 * 14)
    keys = 2 * 2 * 12 * 2 * 6  # k and v, 2 KV heads of 12, bf16, 6 cached tokens
    assert exact(tree.total("kv_cache_bytes"), subs) == states + keys


def test_model_config_checks_the_deltanet_sizes():
    """A ModelConfig (a --model JSON file, say) gives the Gated DeltaNet sizes with a "deltanet"
    layer only, all of them, and value heads the key heads divide."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(dict(QWEN3_NEXT), name="q")
    with pytest.raises(ConfigError, match="deltanet_k_heads applies only with mixer_layers and a deltanet or kda layer"):
        cfg.replace(layer_pattern=tuple(k.replace("deltanet", "attention") for k in cfg.layer_pattern))
    with pytest.raises(ConfigError, match="deltanet_v_dim"):
        cfg.replace(deltanet_v_dim=None)
    with pytest.raises(ConfigError, match="deltanet_v_heads \\(5\\) is not divisible by deltanet_k_heads \\(2\\)"):
        cfg.replace(deltanet_v_heads=5)
