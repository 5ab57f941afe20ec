"""RWKV-4 (costmodel/hf_rwkv.py: model_type "rwkv"; costmodel/blocks/rwkv.py) against transformers
5.24's RwkvForCausalLM built from the same config dict on the CPU (rwkv_linear_attention_cpu: no
CUDA kernel): parameters (a tied or untied head, intermediate_size null, the class default on the
meta device), the training forward's and step's matmul FLOPs (FlopCounterMode), a prefill's and a
cached decode step's at batch 1, the state after a prefill (validate/hf_rwkv.py), the bytes saved
for backward (fp32, bf16; one-token sequences too), and the configs refused. Not compared: the
mixes' other FLOPs (not modelled; the workload's warning says so)."""

from __future__ import annotations

import json

import pytest

from costmodel.config import ConfigError
from tests.family_configs import estimated_total, hf_meta_count, tree_matmul_flops

pytestmark = pytest.mark.filterwarnings("ignore:model .* RWKV layers")

#: Odd sizes: d 48, a channel mix of 74, vocabulary 99, 3 blocks, an untied head (RwkvConfig's default).
RW = dict(model_type="rwkv", vocab_size=99, hidden_size=48, num_hidden_layers=3, intermediate_size=74,
          context_length=64)
VARIANTS = {
    "rw": RW,
    # a tied head, intermediate_size null (4 d = 192), 2 blocks, no rescaling
    "rw_tied": dict(RW, tie_word_embeddings=True, intermediate_size=None, num_hidden_layers=2, rescale_every=0),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_class_default_exact_integer():
    """RwkvConfig() (rwkv-4-7b's sizes: 32 blocks of 4,096, vocabulary 50,277, untied): 7,392,649,216
    parameters, and the odd config's 67,152."""
    assert estimated_total({"model_type": "rwkv"}, "rw") == 7_392_649_216 == hf_meta_count({"model_type": "rwkv"})
    assert estimated_total(RW, "rw") == 67_152


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4), (1, 1)])
def test_training_flops(name, b, n):
    """Forward, and forward with backward (3 x every linear; the WKV loop is elementwise)."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops_both

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    fields = VARIANTS[name]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(fields, b, n)


def test_training_flops_exact_integers():
    """The odd config at b 2, n 9: 2,182,464 forward FLOPs (a time mix 4 x 2 x 18 x 48 x 48 =
    331,776, a channel mix 2 x 18 x (2 x 48 x 74 + 48 x 48) = 338,688, the head 171,072), 6,547,392
    for the step."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(RW, 2, 9) == (2_182_464, 6_547_392)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_prefill_state_and_decode(name, dtype):
    """A prefill's FLOPs and the state it leaves (per block the two mixes' last tokens in the model's
    dtype, the WKV's num, den and max in fp32), at b 2 and 1; a cached step's FLOPs at b 1."""
    from costmodel import estimate
    from validate.hf_rwkv import build, decode_step_flops, prefill, state_bytes

    fields = VARIANTS[name]
    model = build(fields, dtype)
    for b, n in ((2, 9), (1, 1), (2, 3)):
        state, flops = prefill(model, b, n)
        assert flops == tree_matmul_flops(fields, "prefill", b, n), (b, n)
        ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype=dtype).to_dict()["memory"]["kv_cache"]
        assert ours == state_bytes(state) > 0, (b, n)
    assert decode_step_flops(model, 1, 5) == tree_matmul_flops(fields, "decode", 1, 5)


def test_state_exact_integer():
    """The odd config at b 2 in bf16: 3 blocks x 2 x 48 x (2 + 2 + 3 x 4) = 4,608 bytes."""
    from validate.hf_rwkv import build, prefill, state_bytes

    assert state_bytes(prefill(build(RW, "bf16"), 2, 9)[0]) == 4_608


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4), (3, 2), (2, 1), (1, 1)])
def test_bytes_saved_for_backward(name, dtype, b, n):
    """The class's training forward with its loss (validate's saved-tensor hooks) against the tree:
    the WKV loop's fp32 steps less the last state update no loss reaches (blocks/rwkv.py), the
    channel mix's products, the LayerNorms, the fp32 loss with shifted labels."""
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(VARIANTS[name], name, dtype, b, n, attention=None)


def test_bytes_saved_exact_integer():
    """The odd config at b 2, n 9 in bf16: a time mix keeps 54,144 bytes beside its input (8 x 1,728
    in bf16, 12 x 3,456 in fp32, less 4 x 384 of the last update, 4 x 96 of vectors); the model
    238,828 (measured equal in test_bytes_saved_for_backward)."""
    from costmodel import estimate
    from costmodel import symbols as S
    from costmodel.blocks.rwkv import time_saved_bytes
    from costmodel.evaluate import exact

    assert exact(time_saved_bytes(S.b, S.n), {S.b: 2, S.n: 9, S.d: 48, S.e: 2}) == 54_144
    assert estimate(dict(RW, name="rw"), seq_len=9, batch=2, dtype="bf16").to_dict()["memory"]["activations"] == 238_828


def test_decode_at_a_batch_over_one_is_refused():
    """RwkvForCausalLM's cached step broadcasts the (b, d) state against the (b, 1, d) token: b x b
    rows (measured: 4 x the b = 1 step's FLOPs at b = 2), so a generation at b > 1 is one line."""
    from costmodel import estimate
    from validate.hf_rwkv import build, decode_step_flops

    assert decode_step_flops(build(RW), 2, 5) == 4 * decode_step_flops(build(RW), 1, 5)
    with pytest.raises(ConfigError, match="broadcasts each sequence's state"):
        estimate(dict(RW, name="rw"), seq_len=8, batch=2, gen_tokens=4)


def test_attention_width_other_than_d_is_refused(tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(RW, attention_hidden_size=32)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "attention_hidden_size" in err and len(err.strip().splitlines()) == 1


def test_architectures_tensor_parallel_and_engines():
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    named = {k: v for k, v in RW.items() if k != "model_type"}
    cfg = from_hf_config(dict(named, architectures=["RwkvForCausalLM"]), name="x")
    assert cfg.family == "rwkv"
    assert "RWKV time and channel mixes" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="RWKV states"):
        check_engine_cache(cfg)


def test_a_hub_style_config():
    """rwkv-4-169m-pile's sizes with the keys its Hub config.json carries (attention_hidden_size given,
    context_length, rescale_every, torch_dtype; written here, not downloaded): 169,342,464 parameters,
    the checkpoint's name's 169M, equal to the class's."""
    hub = {"architectures": ["RwkvForCausalLM"], "attention_hidden_size": 768, "bos_token_id": 0,
           "context_length": 1024, "eos_token_id": 0, "hidden_size": 768, "intermediate_size": 3072,
           "layer_norm_epsilon": 1e-05, "model_type": "rwkv", "num_hidden_layers": 12, "rescale_every": 6,
           "tie_word_embeddings": False, "vocab_size": 50277, "torch_dtype": "float32"}
    assert estimated_total(hub, "rwkv-4-169m-pile") == 169_342_464 == hf_meta_count(hub)
