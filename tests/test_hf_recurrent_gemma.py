"""Google's RecurrentGemma (costmodel/hf_recurrent_gemma.py: model_type "recurrent_gemma";
costmodel/blocks/rglru.py) against transformers 5.24's RecurrentGemmaForCausalLM built from the
same config dict on the CPU: parameters (block patterns, lru_width, biases, a tied or untied head,
the class default on the meta device), buffers (a bf16 normalizer, each attention layer's rotary
inv_freq pair), the training forward's and step's matmul FLOPs (FlopCounterMode; the depthwise
conv's backward counted with its groups, validate/hf_mamba1.py), a prefill's and a cached decode
step's (past the window: min(c, w) keys), the states and K/V held after a prefill
(validate/hf_recurrent_gemma.py: the class returns no cache and its recurrent blocks hold their
own states), the bytes saved for backward, and the configs refused. Not compared: the recurrent
blocks' other FLOPs (not modelled; the workload's warning says so)."""

from __future__ import annotations

import json

import pytest

from costmodel.config import ConfigError
from tests.family_configs import estimated_total, hf_meta_count, tree_matmul_flops

pytestmark = [pytest.mark.filterwarnings("ignore:model .* RG-LRU recurrent blocks"),
              pytest.mark.filterwarnings("ignore:model .* attends within a sliding window")]

#: Odd sizes: d 48, 4 heads of 12 and 2 KV heads, an RG-LRU of 56 (4 gate blocks of 14), a conv of 3
#: taps, an MLP of 74 // 2 = 37, a window of 5, vocabulary 99; 4 blocks: recurrent, recurrent,
#: attention, recurrent (block_types' default pattern repeated).
RG = dict(model_type="recurrent_gemma", vocab_size=99, hidden_size=48, num_hidden_layers=4, num_attention_heads=4,
          num_key_value_heads=2, intermediate_size=74, lru_width=56, conv1d_width=3, attention_window_size=5)
VARIANTS = {
    "rg": RG,
    # attention first, q/k/v biases, an untied head, lru_width = hidden_size (null), tanh-free gelu,
    # RoPE on every dimension, one KV head, 3 blocks
    "rg_attention_first": dict(RG, block_types=["attention", "recurrent"], attention_bias=True,
                               tie_word_embeddings=False, lru_width=None, hidden_activation="gelu",
                               rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=1.0),
                               num_hidden_layers=3, num_key_value_heads=1),
    # two attention blocks a period, a conv of 5, an RG-LRU of 60, 5 blocks (r a a r a)
    "rg_two_attention": dict(RG, block_types=["recurrent", "attention", "attention"], num_hidden_layers=5,
                             conv1d_width=5, lru_width=60),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_class_default_exact_integer():
    """RecurrentGemmaConfig() (recurrentgemma-2b's sizes: 26 blocks of 2,560, an RG-LRU of 2,560, 10
    heads, vocabulary 256,000, tied): 2,010,263,040 parameters, and the odd config's 64,496."""
    assert estimated_total({"model_type": "recurrent_gemma"}, "rg") == 2_010_263_040 \
        == hf_meta_count({"model_type": "recurrent_gemma"})
    assert estimated_total(RG, "rg") == 64_496


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_buffers_exact(name, dtype):
    """The normalizer (one bf16 element, whatever the model dtype) and each attention layer's
    inv_freq and original_inv_freq (d_r / 2 fp32 each): 26 bytes for the odd config's one attention
    layer of 6 rotated dimensions."""
    import torch
    import transformers

    from costmodel import estimate

    fields = VARIANTS[name]
    config = transformers.AutoConfig.for_model(**fields)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    held = sum(b.numel() * b.element_size() for b in model.buffers())
    ours = estimate(dict(fields, name=name), seq_len=16, dtype=dtype).to_dict()["memory"]["buffers"]
    assert ours == held
    if name == "rg":
        assert held == 26


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4)])
def test_training_forward_flops(name, b, n):
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32")
    assert ours.to_dict()["flops"]["forward"] == causal_lm_flops(VARIANTS[name], b, n, backward=False)


@pytest.mark.parametrize("name", ["rg", "rg_attention_first"])
def test_training_step_flops(name):
    """Forward and backward: 3 x every matmul, the gates' baddbmm and the conv (its input and
    weight gradients each a conv of the forward's size), under the class's default use_cache."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=9, batch=2, dtype="fp32").to_dict()["flops"]
    assert ours["training"] == causal_lm_flops(VARIANTS[name], 2, 9, backward=True, use_cache=None)


def test_training_flops_exact_integers():
    """The odd config at b 2, n 9: 2,280,672 forward FLOPs (a recurrent block 354,144: linear_y,
    linear_x and linear_out 96,768 each, the conv over 11 positions 7,392, the two gates 28,224
    each; the attention 279,936, an MLP 191,808, the head 171,072), 6,842,016 for the step."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(RG, 2, 9) == (2_280_672, 6_842_016)


@pytest.mark.parametrize("name", VARIANTS)
def test_prefill_flops(name):
    """A prefill into a DynamicCache: the conv over n + K - 1 positions whatever n (a prompt of 2
    under K 3 or 5 too), every position's logits."""
    from validate.hf_recurrent_gemma import build, prefill

    model = build(VARIANTS[name])
    for b, n in ((2, 9), (1, 2), (2, 3)):
        assert prefill(model, b, n)[1] == tree_matmul_flops(VARIANTS[name], "prefill", b, n), (b, n)


@pytest.mark.parametrize("name", ["rg", "rg_attention_first"])
def test_decode_step_flops(name):
    """A cached step after a prefill of n and `gen` steps attends min(n + gen + 1, w) keys (w 5:
    the first point is past the window); the recurrent block's conv is a sum of products, no matmul."""
    from validate.hf_recurrent_gemma import build, decode_step_flops

    model = build(VARIANTS[name], "bf16")
    for b, n, gen in ((2, 10, 2), (1, 2, 0), (1, 3, 4)):
        assert decode_step_flops(model, b, n, gen) == tree_matmul_flops(VARIANTS[name], "decode", b, n, n + gen + 1)


def test_decode_step_flops_exact_integer():
    """b 2 after 10 + 2 tokens: 249,408 FLOPs (5 keys, the window)."""
    from validate.hf_recurrent_gemma import build, decode_step_flops

    assert decode_step_flops(build(RG, "bf16"), 2, 10, 2) == 249_408


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_states_after_prefill(name, dtype):
    """Per recurrent block the conv's last K - 1 inputs (b, D, K - 1) in the model's dtype and the
    recurrence's (b, D) in fp32; per attention layer its keys and values, whose storage after the
    prefill is the whole prompt's (a view of w - 1 of them)."""
    from costmodel import estimate
    from validate.hf_recurrent_gemma import build, prefill, state_bytes

    model = build(VARIANTS[name], dtype)
    for b, n in ((2, 9), (1, 2)):
        cache, _ = prefill(model, b, n)
        ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype=dtype).to_dict()
        assert ours["memory"]["kv_cache"] == state_bytes(model, cache) > 0, (b, n)


def test_states_exact_integer():
    """The odd config at b 2, n 9 in bf16: 4,416 bytes (3 x 896 of states, 1,728 of K and V)."""
    from validate.hf_recurrent_gemma import build, prefill, state_bytes

    model = build(RG, "bf16")
    assert state_bytes(model, prefill(model, 2, 9)[0]) == 4_416


@pytest.mark.parametrize("name,dtype", [(name, dtype) for name in VARIANTS for dtype in ("fp32", "bf16")])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 9), (3, 2), (1, 2)])
def test_bytes_saved_for_backward(name, dtype, b, n):
    """The class's training forward with its loss (its default use_cache; validate's saved-tensor
    hooks) against the tree's activations: the recurrent blocks' loop (blocks/rglru.saved_bytes_torch:
    n fp32 states, n - 1 fp32 copies of the gates where narrower; the gates' input a view for one
    sequence), the fp32 copy of the bf16 normalizer in fp32, one KV head's views at b = 1."""
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(VARIANTS[name], name, dtype, b, n)


def test_bytes_saved_exact_integer():
    """The odd config at b 2, n 9 in bf16: 238,750 bytes saved (a recurrent block 38,434 beside its
    input: 14 x 2,016 of b n D tensors, the conv's 2,464, 9 states and 8 gate copies of 448 in fp32)."""
    from costmodel import estimate

    assert estimate(dict(RG, name="rg"), seq_len=9, batch=2, dtype="bf16").to_dict()["memory"]["activations"] == 238_750


def test_a_one_token_sequence_is_refused():
    """The class runs a one-token training or prefill sequence through the decode branch."""
    from costmodel import estimate

    with pytest.raises(ConfigError, match="seq_len 1 runs"):
        estimate(dict(RG, name="rg"), seq_len=1)


@pytest.mark.parametrize("fields,message", [
    (dict(RG, hidden_activation="relu"), "hidden_activation"),
    (dict(RG, rope_parameters=dict(rope_type="linear", factor=2.0, rope_theta=10000.0)), "rope_type"),
    (dict(RG, block_types=["recurrent", "mlp"]), "block_types"),
    (dict(RG, block_types=[]), "block_types"),
    (dict(RG, block_types=["recurrent"]), "no attention block"),
    (dict(RG, lru_width=50), "lru_width"),
    (dict(RG, hidden_size=50), "hidden_size"),
    (dict(RG, attention_dropout=0.1), "attention_dropout"),
    (dict(RG, conv1d_width=0), "conv1d_width"),
    (dict(RG, hidden_size=40, lru_width=40), "rotates 5 dimensions"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(RG, lru_width=50)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "lru_width" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    named = {k: v for k, v in RG.items() if k != "model_type"}
    cfg = from_hf_config(dict(named, architectures=["RecurrentGemmaForCausalLM"]), name="x")
    assert cfg.family == "recurrent_gemma"


def test_tensor_parallel_and_an_engine_cache_are_refused():
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    cfg = from_hf_config(dict(RG), "rg")
    assert "RG-LRU recurrent blocks" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="RG-LRU states"):
        check_engine_cache(cfg)


def test_simulate_claims_no_context(tmp_path, capsys):
    """RecurrentGemmaConfig's own dict states no context length (its 2,048 window is not one):
    no "beyond the context" warning at 4,096 tokens, model_context null, the cache capped by the
    window and the fixed states."""
    import transformers

    from tests.cli_run import run_main

    path = tmp_path / "rg.json"
    path.write_text(json.dumps(transformers.AutoConfig.for_model("recurrent_gemma").to_dict()))
    code, out, err = run_main(["simulate", "--config", str(path), "--prompt", "4096", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["memory"]["model_context"] is None
    assert "beyond the context" not in err


def test_a_hub_style_config():
    """recurrentgemma-2b's sizes with the keys its Hub config.json carries beside the class's
    (head_dim, final_w_init_variance_scale, embeddings_scale_by_sqrt_dim, top-level rope_theta and
    partial_rotary_factor, torch_dtype; written here, not downloaded): read as the class reads them,
    2,682,862,080 parameters (655,360,000 of them the tied embeddings), equal to the class's."""
    hub = {"architectures": ["RecurrentGemmaForCausalLM"], "attention_bias": False, "attention_window_size": 2048,
           "block_types": ["recurrent", "recurrent", "attention"], "bos_token_id": 2, "conv1d_width": 4,
           "embeddings_scale_by_sqrt_dim": True, "eos_token_id": 1, "final_w_init_variance_scale": 0.07692307692307693,
           "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2560, "intermediate_size": 15360,
           "logits_soft_cap": 30.0, "lru_width": 2560, "model_type": "recurrent_gemma", "num_attention_heads": 10,
           "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0, "partial_rotary_factor": 0.5,
           "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "torch_dtype": "float32", "vocab_size": 256000,
           "w_init_variance_scale": 0.01}
    assert estimated_total(hub, "recurrentgemma-2b") == 2_682_862_080 == hf_meta_count(hub)
