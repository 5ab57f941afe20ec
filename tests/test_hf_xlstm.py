"""xLSTM (costmodel/hf_xlstm.py: model_type "xlstm"; costmodel/blocks/mlstm.py) against transformers
5.24's xLSTMForCausalLM built from the same config dict on the CPU (its native kernels): parameters
(the class default on the meta device, odd sizes), the training forward's and step's matmul FLOPs
(FlopCounterMode: whole chunks by the chunkwise kernel, the rest step by step), a prefill's and a
cached decode step's, the state after a prefill (validate/hf_xlstm.py), and the configs refused.
Not compared: the mLSTM's other FLOPs and saved bytes (not modelled; the workload's warning says
so)."""

from __future__ import annotations

import json

import pytest

from costmodel.config import ConfigError
from tests.family_configs import estimated_total, hf_meta_count, tree_matmul_flops

pytestmark = pytest.mark.filterwarnings("ignore:model .* mLSTM layers")

#: d 128 (the cache rounds widths to 64), 4 heads of query/key 16 and value 32, a chunk of 4, an FFN
#: of round_up(128 x 1.3, 24) = 168, vocabulary 99, 2 blocks.
XL = dict(model_type="xlstm", vocab_size=99, hidden_size=128, num_hidden_layers=2, num_heads=4, chunk_size=4,
          ffn_proj_factor=1.3, ffn_round_up_to_multiple_of=24, pad_token_id=1, bos_token_id=0, eos_token_id=2)
VARIANTS = {
    "xl": XL,
    # 2 heads of query/key 64 and value 128 (qk factor 1), a chunk of 3, 3 blocks; tie_word_embeddings,
    # which the class ignores (it names no tied weights)
    "xl_wide_qk": dict(XL, num_heads=2, qk_dim_factor=1.0, chunk_size=3, tie_word_embeddings=True, num_hidden_layers=3),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_class_default_exact_integer():
    """xLSTMConfig() (xLSTM-7b's sizes: 32 blocks of 4,096, 8 heads, vocabulary 50,304, untied):
    6,865,424,896 parameters, and the odd config's 288,400."""
    assert estimated_total({"model_type": "xlstm"}, "xl") == 6_865_424_896 == hf_meta_count({"model_type": "xlstm"})
    assert estimated_total(XL, "xl") == 288_400


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 8), (2, 9), (1, 3), (1, 1)])
def test_training_flops(name, b, n):
    """Forward, and forward with backward (3 x every product): whole chunks, then steps."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops_both

    fields = VARIANTS[name]
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(fields, b, n)


def test_training_flops_exact_integers():
    """The odd config: 9,109,504 forward FLOPs at b 2, n 8 (two chunks a sequence); 10,242,048 at
    n 9 (and one recurrent step); the step 3 x each."""
    from validate.hf_mamba1 import causal_lm_flops, causal_lm_flops_both

    assert causal_lm_flops(XL, 2, 8, backward=False) == 9_109_504
    assert causal_lm_flops_both(XL, 2, 9) == (10_242_048, 30_726_144)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_prefill_state_and_decode(name, dtype):
    """A prefill's FLOPs and the state it leaves (per layer C, n and m in the model's dtype), and a
    cached step's FLOPs (one recurrent step), at three points."""
    from costmodel import estimate
    from validate.hf_xlstm import build, decode_step_flops, prefill, state_bytes

    fields = VARIANTS[name]
    model = build(fields, dtype)
    for b, n in ((2, 9), (1, 1), (2, 8)):
        cache, flops = prefill(model, b, n)
        assert flops == tree_matmul_flops(fields, "prefill", b, n), (b, n)
        ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype=dtype).to_dict()["memory"]["kv_cache"]
        assert ours == state_bytes(cache) > 0, (b, n)
        assert decode_step_flops(model, b, n) == tree_matmul_flops(fields, "decode", b, n), (b, n)


def test_state_exact_integer():
    """The odd config at b 2 in bf16: 2 layers x 2 x 4 heads x (16 x 32 + 16 + 1) x 2 = 16,928 bytes."""
    from validate.hf_xlstm import build, prefill, state_bytes

    assert state_bytes(prefill(build(XL, "bf16"), 2, 9)[0]) == 16_928


@pytest.mark.parametrize("fields,message", [
    (dict(XL, use_bias=True), "use_bias"),
    (dict(XL, weight_mode="fused"), "weight_mode"),
    (dict(XL, mode="train"), "mode"),
    (dict(XL, add_out_norm=False), "add_out_norm"),
    (dict(XL, embedding_dim=64), "embedding_dim"),
    (dict(XL, hidden_size=96), "multiple of 64"),
    (dict(XL, num_heads=3), "num_heads"),
    # An infinite factor was a traceback (int() of inf / nan), a negative one named d_ff's value
    (dict(XL, ffn_proj_factor=1e308), r"hidden_size x ffn_proj_factor .1e\+308. is not a finite width"),
    (dict(XL, ffn_proj_factor=-1), "ffn_proj_factor must be a positive number or null, got -1"),
    (dict(XL, qk_dim_factor=1e308), r"hidden_size x qk_dim_factor .1e\+308. is not a finite width"),
    (dict(XL, v_dim_factor=float("inf")), "v_dim_factor must be a positive number"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(XL, weight_mode="fused")))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "weight_mode" in err and len(err.strip().splitlines()) == 1


def test_architectures_tensor_parallel_and_engines():
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    named = {k: v for k, v in XL.items() if k != "model_type"}
    cfg = from_hf_config(dict(named, architectures=["xLSTMForCausalLM"]), name="x")
    assert cfg.family == "xlstm"
    assert "mLSTM mixers" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="mLSTM states"):
        check_engine_cache(cfg)
