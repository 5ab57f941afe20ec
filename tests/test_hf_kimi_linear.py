"""Moonshot's Kimi Linear (costmodel/hf_kimi_linear.py: model_type "kimi_linear";
costmodel/blocks/kda.py) against transformers 5.24's KimiLinearForCausalLM built from the same
config dict on the CPU: parameters (layer patterns from layer_types, linear_attn_config's 1-indexed
lists and the class's rule; dense and expert layers; q_lora_rank; shared experts; the class default
on the meta device), the training forward's, the training step's, a prefill's and a cached decode
step's matmul FLOPs (FlopCounterMode: the KDA conv and chunk_kimi_delta_attention; the recurrent
rule is elementwise), the cache after a prefill, the buffers (no rotary tables), the bytes saved
for backward (fp32, and bf16 under eager attention), and the configs refused. Not compared yet:
other ops' elements (hf_kimi_linear's docstring)."""

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
    from validate.hf_mamba1 import causal_lm_flops_both

    fields = VARIANTS[name]
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(fields, b, n, use_cache=None)


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


@pytest.mark.parametrize("name", ["kimi", "kimi_rule"])
@pytest.mark.parametrize("b,n", [(2, 9), (2, 70), (3, 2), (1, 70)])
def test_saved_bytes_equal_the_class_in_fp32(name, b, n):
    """The class's training forward with its loss (validate's saved-tensor hooks; the PyTorch
    fallbacks of chunk_kda and causal_conv1d, as on any machine without fla): one chunk of 64, two,
    and a sequence shorter than the conv (n 2 < K 3: the cache pads it). KDA's saved_bytes_torch
    (blocks/kda.py), the MLA, the MLP and the experts all exact in fp32; at b 1 the loss's shifted
    labels too (facts.shifted_labels, 8 bytes short without)."""
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(VARIANTS[name], name, "fp32", b, n, attention=None)


def test_saved_bytes_exact_integer():
    """The odd Kimi Linear at b 2, n 9 in fp32: 15,632,590 bytes, the class's; 3 KDA layers keep
    5,122,710 each, 98% of it: the decay mask exp(g_i - g_j) and its product with k_beta k, 2 x
    4 x 2 x 3 x 64^2 x 9 = 1,769,472, and the row loop's clones, 4 x 6 x 63 x 64 x 65 / 3 = 2,096,640."""
    from costmodel import estimate

    ours = estimate(dict(KIMI, name="k"), seq_len=9, batch=2, dtype="fp32").to_dict()["memory"]["activations"]
    assert ours == 15_632_590


@pytest.mark.parametrize("dtype,b,n", [("bf16", 2, 9), ("bf16", 1, 70), ("fp32", 1, 70)])
def test_kda_mixer_saved_bytes_equal_the_module(dtype, b, n):
    """One KDA layer's self_attn module (layer 0) against the mixer's leaf, its input aside (the
    norm before it counts it): the rule runs in fp32 below fp32 too, the gated norm's weight adds an
    fp32 copy (4 P bytes) in bf16; b 1's transposes copy as b 2's do."""
    import torch
    import transformers

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for
    from validate.measure.saved import saved_activation_bytes

    config = transformers.AutoConfig.for_model(**KIMI)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        config, dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]).train()
    ids = torch.randint(3, 99, (b, n))
    result = saved_activation_bytes(model, {"input_ids": ids, "labels": ids}, loss_fn=lambda out: out.loss)
    module = sum(t.bytes for t in result.tensors if t.module.startswith("model.layers.0.self_attn")
                 and t.module != "model.layers.0.self_attn.q_proj")
    cfg = from_hf_config(KIMI, name="k")
    workload = Workload(seq_len=n, batch=b, dtype=dtype, impl="hf")
    leaf, = CostModel(cfg, profile_for(cfg, workload)).select(name="kda")
    assert module == exact(leaf.cost.saved_bytes, values(cfg, workload))


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("b,n", [(2, 9), (1, 70)])
def test_saved_bytes_equal_the_class_in_bf16_eager(name, b, n):
    """bf16 under eager attention: the KDA rule still in fp32, the fp32 norms, softmax, router and
    loss (facts as DeepSeek-V3's). Under sdpa the CPU's math path keeps fp32 copies of the MLA's
    queries, keys and values and an fp32 softmax, which the tree's MLA rows do not model (FINDINGS)."""
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(VARIANTS[name], name, "bf16", b, n, attention="eager")


@pytest.mark.parametrize("name,attention", [
    *[(name, "sdpa") for name in sorted(VARIANTS)], ("kimi_types", "eager"),
    # 11 and 13 s on 2 shared cores
    *[pytest.param(name, "eager", marks=pytest.mark.slow) for name in ("kimi", "kimi_rule")]])
def test_validate_rows(name, attention):
    """validate's rows (validate/hf_kimi_linear.py writes the config.json back; bf16 under
    FakeTensorMode, b 2, n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs,
    softmax, log-softmax and silu elements (KDA's conv silu over b 3 H P n), the bytes saved for
    backward and the cache, all exact."""
    from tests.family_configs import assert_rows_exact, odd_config_rows

    rows = odd_config_rows(VARIANTS[name], name, attention)
    assert {"parameters", "silu elements", "bytes saved for backward", "KV-cache bytes"} <= {r.quantity for r in rows}
    assert_rows_exact(rows)


def test_fp32_rows_on_real_tensors():
    """The same rows in fp32 on the CPU's real tensors (b 2, n 12). No torch.profiler row: its
    with_flops does not estimate the KDA's depthwise conv1d (validate/compare._has_conv_mixers)."""
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from tests.family_configs import assert_rows_exact
    from validate.compare import validate

    cfg = config_from_dict(dict(KIMI), source="kimi", name="kimi")
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype="fp32", gen_tokens=2), target="hf", device="cpu")
    assert "training matmul FLOPs (profiler)" not in {row.quantity for row in rows}
    assert {"bytes saved for backward", "silu elements"} <= {row.quantity for row in rows}
    assert_rows_exact(rows)
