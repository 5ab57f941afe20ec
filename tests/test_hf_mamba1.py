"""The pure Mamba-1 models (costmodel/hf_mamba1.py: model_type "mamba", "falcon_mamba";
costmodel/blocks/mamba1.py) against transformers 5.24's MambaForCausalLM and FalconMambaForCausalLM
built from the same config dict on the CPU (the slow path: causal_conv1d_fn and the recurrent
selective scan): parameters (biases, a tied or untied head, the classes' defaults on the meta
device), the training forward's and the training step's matmul FLOPs (FlopCounterMode; the
depthwise conv's backward counted with its groups, validate/hf_mamba1.py), a cached decode step's,
the cache after a prefill (each layer's conv and scan states), the bytes saved for backward, and
the configs they refuse. Not compared: other ops' elements (blocks/mamba1.py does not model them).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, assert_saved_bytes_exact, estimated_total,
                                  hf_meta_count)

#: Odd sizes no dimension shares: d 48, inner 96 (expand 2), state 7, conv 3, dt rank 3 (auto:
#: ceil(48 / 16)), vocabulary 99, 3 blocks.
MAMBA = dict(model_type="mamba", vocab_size=99, hidden_size=48, num_hidden_layers=3, state_size=7,
             conv_kernel=3, expand=2)
FALCON = dict(MAMBA, model_type="falcon_mamba")
VARIANTS = {
    "mamba": MAMBA,
    # biases on in_proj and out_proj, no conv bias, an untied head, dt rank 5, expand 3 (inner 144)
    "mamba_biases_untied": dict(MAMBA, use_bias=True, use_conv_bias=False, tie_word_embeddings=False,
                                time_step_rank=5, expand=3),
    "mamba_bf16_residual": dict(MAMBA, residual_in_fp32=False),
    "falcon_mamba": FALCON,
    "falcon_mamba_biases": dict(FALCON, use_bias=True, time_step_rank=11, state_size=5, conv_kernel=4),
    "falcon_mamba_bf16_residual": dict(FALCON, residual_in_fp32=False),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_class_defaults_exact_integers():
    """The classes' defaults on the meta device (transformers 5.24): MambaConfig() and
    FalconMambaConfig() are the same sizes (d 768, 32 layers, state 16, vocabulary 50,280, tied):
    159,308,544 each."""
    counts = {t: estimated_total({"model_type": t}, t) for t in ("mamba", "falcon_mamba")}
    assert counts == {t: hf_meta_count({"model_type": t}) for t in counts}
    assert counts == {"mamba": 159_308_544, "falcon_mamba": 159_308_544}


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4)])
def test_training_forward_flops(name, b, n):
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32")
    assert ours.to_dict()["flops"]["forward"] == causal_lm_flops(VARIANTS[name], b, n, backward=False)


@pytest.mark.parametrize("name", ["mamba", "mamba_biases_untied", "falcon_mamba_biases"])
def test_training_step_flops(name):
    """Forward and backward: 3 x every matmul and the scan's products; the conv's input and
    weight gradients each a conv of the forward's size."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=9, batch=2, dtype="fp32").to_dict()["flops"]
    assert ours["training"] == causal_lm_flops(VARIANTS[name], 2, 9, backward=True)


def test_training_step_flops_exact_integer():
    """The tiny mamba at b 2, n 9: 1,982,016 forward FLOPs (in_proj 331,776, x_proj 58,752,
    dt_proj 10,368, out_proj 165,888, conv 12,672, scan 24,192 a layer; the head 1,764 x 99 x 2...),
    5,946,048 for the step."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(MAMBA, 2, 9) == (1_982_016, 5_946_048)


@pytest.mark.parametrize("name", ["mamba", "falcon_mamba_biases"])
def test_decode_step_flops(name):
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["mamba", "falcon_mamba_biases"])
def test_prefill_flops(name):
    """The conv over max(n, K) + K - 1 positions (a prompt of 2 under K 3 padded), the scan's loop."""
    assert_prefill_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["mamba", "mamba_biases_untied", "falcon_mamba_biases"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Per layer the conv state (b, D, K) in the model's dtype and the scan's state (b, D, N) in
    fp32 (the recurrent loop's, which upcasts)."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name,dtype", [
    *((name, dtype) for name in ("mamba_bf16_residual", "falcon_mamba_bf16_residual") for dtype in ("fp32", "bf16")),
    # residual_in_fp32 (the classes' default) in bf16: norm_f's input is the fp32 residual
    # stream, b n d x 2 bytes more than the tree's (1,728 here), not modelled
    ("mamba", "fp32"), ("mamba_biases_untied", "fp32"), ("falcon_mamba", "fp32"), ("falcon_mamba_biases", "fp32")])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 1), (1, 3), (3, 1)])
def test_bytes_saved_for_backward(name, dtype, b, n):
    """The class's training forward with its loss (validate's saved-tensor hooks) against the
    tree's activations: the mixers' slow path (blocks/mamba1.saved_bytes_torch: n + 1 states
    kept, the fp32 discretised A and B; x_proj's input a view for one sequence or one token) and
    the families' facts (fp32 RMSNorm and logits)."""
    assert_saved_bytes_exact(VARIANTS[name], name, dtype, b, n, attention=None)


def test_bytes_saved_exact_integers():
    """The tiny mamba at b 2, n 9 (fp32): 732,532 bytes saved for backward (227,784 a mixer)."""
    from costmodel import estimate

    ours = estimate(dict(MAMBA, name="mamba"), seq_len=9, batch=2, dtype="fp32").to_dict()
    assert ours["memory"]["activations"] == 732_532


@pytest.mark.parametrize("fields,message", [
    (dict(MAMBA, hidden_act="gelu"), "hidden_act"),
    (dict(FALCON, use_mambapy=True), "use_mambapy"),
    (dict(MAMBA, time_step_rank=0), "time_step_rank"),
    (dict(MAMBA, time_step_rank="half"), "time_step_rank"),
    (dict(MAMBA, state_size=0), "state_size"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(FALCON, use_mambapy=True)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "use_mambapy" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    for fields, cls in ((MAMBA, "MambaForCausalLM"), (FALCON, "FalconMambaForCausalLM")):
        named = {k: v for k, v in fields.items() if k != "model_type"}
        assert from_hf_config(dict(named, architectures=[cls]), name="x").family == fields["model_type"]


def test_tensor_parallel_and_an_engine_cache_are_refused():
    """No tensor-parallel split of the mixer and no engine cache for its states are modelled: one
    sentence each."""
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    cfg = from_hf_config(dict(MAMBA), "mamba")
    assert "Mamba-1 mixers" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="Mamba-1 states"):
        check_engine_cache(cfg)


def test_through_the_cli(tmp_path, capsys):
    """estimate (no crossover n*: no attention layer) and plan answer for a pure Mamba-1 stack."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(FALCON))
    code, out, _ = run_main(["estimate", "--config", str(path), "--json"], capsys)
    regime = json.loads(out)["regime"]
    assert code == 0 and regime["crossover_seq_len"] is None and regime["dominant"] == "neither (only Mamba-1 mixers)"
    code, out, err = run_main(["plan", "--config", str(path), "--hardware", "h100-sxm", "--gpus", "8"], capsys)
    assert code == 0, err


def test_simulate_says_the_cache_is_a_fixed_state_and_claims_no_context(tmp_path, capsys):
    """MambaConfig's own dict: no window caps a Mamba cache (it is a fixed recurrent state per
    sequence) and the config states no context length, so no "the model's context stops at" (its
    2,048 is ModelConfig's placeholder); the JSON's model_context is null."""
    import json

    import transformers

    from tests.cli_run import run_main

    path = tmp_path / "mamba.json"
    path.write_text(json.dumps(transformers.AutoConfig.for_model("mamba").to_dict()))
    code, out, err = run_main(["simulate", "--config", str(path)], capsys)
    assert code == 0, err
    assert "decoding any number of tokens at this batch (a fixed recurrent state per sequence)" in out
    assert "sliding window" not in out and "context stops" not in out
    code, out, _ = run_main(["simulate", "--config", str(path), "--json"], capsys)
    memory = json.loads(out)["memory"]
    assert code == 0 and memory["model_context"] is None and memory["fixed_state"] is True
