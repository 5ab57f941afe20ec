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
                                   assert_prefill_flops_exact, estimated_total, hf_meta_count)

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
def test_prefill_flops(name):
    """A prefill that fills the cache, one prompt (2) shorter than the conv (3): the cache pads it."""
    assert_prefill_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Keys and values of the attention layers (b h_kv n d_h each), and per Gated DeltaNet layer
    its conv state (b, 2 H_k P_k + H_v P_v, K) in the model's dtype and its recurrent state
    (b, H_v, P_k, P_v) in fp32."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


def test_the_layers_place_their_norms_by_kind():
    """The odd model's tree: three pre-norm Gated DeltaNet layers (a norm before the mixer and
    before their MLP) and one attention layer with OLMo 3's norms (its input kept by the
    projections, a norm after the attention and after its MLP); the mixer's seven linears."""
    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(dict(OLMO_HYBRID), name="o")
    assert cfg.layer_pattern[::2] == ("deltanet", "deltanet", "deltanet", "attention")
    tree = CostModel(cfg, profile_for(cfg))
    layers = [leaf.path.removeprefix("decoder.") for leaf in tree.leaves if "_layer." in leaf.path]
    assert layers == [
        "attention_layer.attention." + name for name in
        ("input", "qkv", "qk_norm", "rope", "scores", "softmax", "weighted_sum", "out", "post_norm", "residual")] + [
        "mlp_layer.mlp.norm", "mlp_layer.mlp.mlp", "mlp_layer.mlp.residual",
        "mlp_post_layer.mlp.input", "mlp_post_layer.mlp.mlp", "mlp_post_layer.mlp.post_norm",
        "mlp_post_layer.mlp.residual",
        "deltanet_layer.deltanet.norm", "deltanet_layer.deltanet.deltanet", "deltanet_layer.deltanet.residual"]
    counts = {leaf.path.split(".")[1]: leaf.count for leaf in tree.leaves if "_layer." in leaf.path}
    subs = values(cfg, Workload(seq_len=5, batch=1))
    assert [exact(counts[kind], subs) for kind in ("attention_layer", "mlp_layer", "mlp_post_layer",
                                                    "deltanet_layer")] == [1, 3, 1, 3]
    mixer = next(leaf.block for leaf in tree.leaves if leaf.path.endswith("deltanet.deltanet"))
    assert mixer.split and len(mixer.projections()) == 7


@pytest.mark.parametrize("fields,message", [
    (dict(OLMO_HYBRID, hidden_act="gelu"), "hidden_act"),
    (dict(OLMO_HYBRID, rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0}), "rope_type"),
    (dict(OLMO_HYBRID, linear_num_value_heads=5), "linear_num_value_heads"),
    (dict(OLMO_HYBRID, layer_types=["linear_attention"] * 4), "at least one linear_attention and one full"),
    (dict(OLMO_HYBRID, layer_types=["full_attention"] * 4), "at least one linear_attention and one full"),
    (dict(OLMO_HYBRID, layer_types=["linear_attention", "sliding_attention", "full_attention",
                                    "full_attention"]), "layer_types"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_cli_estimate_warns_and_refusal_is_one_line(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(OLMO_HYBRID))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 0 and "Gated DeltaNet layers" in out + err and "output gate" not in out + err  # it has none
    path.write_text(json.dumps(dict(OLMO_HYBRID, hidden_act="gelu")))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and "hidden_act" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    named = {k: v for k, v in OLMO_HYBRID.items() if k != "model_type"}
    named["architectures"] = ["OlmoHybridForCausalLM"]
    assert from_hf_config(named, name="x").family == "olmo_hybrid"


def test_model_config_checks_the_new_fields():
    """A ModelConfig (a --model JSON file, say): post_norm_mixers names mixers, each layer of them
    followed by an mlp layer, in a hybrid model; deltanet_split_projections needs a deltanet layer."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(dict(OLMO_HYBRID), name="o")
    with pytest.raises(ConfigError, match="post_norm_mixers must list mixers"):
        cfg.replace(post_norm_mixers=("mlp",))
    with pytest.raises(ConfigError, match="an mlp layer after each"):
        cfg.replace(post_norm_mixers=("attention",), layer_pattern=cfg.layer_pattern[:6] + ("mlp", "attention"))
    with pytest.raises(ConfigError, match="deltanet_split_projections applies only"):
        cfg.replace(layer_pattern=tuple(k.replace("deltanet", "attention") for k in cfg.layer_pattern),
                    deltanet_k_heads=None, deltanet_v_heads=None, deltanet_k_dim=None, deltanet_v_dim=None,
                    conv_kernel=None, chunk_size=None)
    assert cfg.replace(post_norm_mixers=["attention"]).post_norm_mixers == ("attention",)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_saved_bytes_of_the_attention_layer_and_a_pre_norm_mlp(dtype):
    """The bytes the class's training forward saves (validate's saved-tensor hooks, eager attention,
    b 2, n 9), by module: the attention decoder layer (model.layers.3: OLMo 3's post-normed
    attention and MLP, the RoPE's fp32 cos and sin its products keep) against the tree's
    attention_layer, mlp_post_layer and rope_tables leaves, and a Gated DeltaNet layer's MLP half
    (model.layers.0's post_attention_layernorm and mlp) against one mlp_layer. The mixer's own bytes
    are not modelled (the workload warns)."""
    import torch
    import transformers

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for
    from validate.measure.saved import saved_activation_bytes

    b, n = 2, 9
    config = transformers.AutoConfig.for_model(**OLMO_HYBRID, attn_implementation="eager")
    torch.manual_seed(0)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch_dtype).train()
    ids = torch.randint(0, OLMO_HYBRID["vocab_size"], (b, n))
    saved = saved_activation_bytes(model, {"input_ids": ids, "labels": ids}, loss_fn=lambda out: out.loss).tensors

    def measured(*prefixes: str) -> int:
        return sum(t.bytes for t in saved if t.module.startswith(prefixes))

    cfg = from_hf_config(dict(OLMO_HYBRID), name="o")
    tree = CostModel(cfg, profile_for(cfg, attention="eager"))
    subs = values(cfg, Workload(seq_len=n, batch=b, dtype=dtype))

    def ours(*parts: str) -> int:
        return sum(exact(leaf.cost.saved_bytes, subs) for leaf in tree.leaves if leaf.path.split(".")[1] in parts)

    assert measured("model.layers.3.") == ours("attention_layer", "mlp_post_layer", "rope_tables") > 0
    assert measured("model.layers.0.post_attention_layernorm", "model.layers.0.mlp") == ours("mlp_layer") > 0



def test_a_config_written_as_json_reads_back_equal_and_hashable():
    """ModelConfig.to_dict as JSON (the project's own config format, `--config`) writes the tuple
    fields as lists; read back they are tuples again, so the config hashes (the layout's evaluator
    cache keys on it): a gpt config's empty post_norm_mixers once came back as [] and `simulate
    --train --config` failed with "unhashable type: 'list'"."""
    import json

    from costmodel.api import load_model
    from costmodel.config import ModelConfig

    for name in ("gpt2", "nemotron-3-nano"):
        cfg = load_model(name)
        back = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert back == cfg and hash(back) == hash(cfg)
        assert isinstance(back.post_norm_mixers, tuple) and isinstance(back.layer_pattern, (tuple, type(None)))
