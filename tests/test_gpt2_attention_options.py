"""GPT-2's attention options as transformers 5.24 runs them (costmodel/hf_classic.py's _gpt2).

scale_attn_weights and scale_attn_by_inverse_layer_idx fold into GPT2Attention's one `scaling` float
(eager: one multiply of the scores; sdpa: its scale argument), so a config that sets them costs what
one that does not costs: measured here on GPT2LMHeadModel built from the same config.json dict the
cost model reads (3 layers, so layer_idx + 1 takes three values; odd sizes: d 48, 6 heads, d_ff 37,
vocab 99). reorder_and_upcast_attn (an fp32 baddbmm, run by eager attention only) moves eager's
measured ops and saved bytes, so the tree refuses it under hf eager in one line (the figures that show
it moves are pinned below) and takes it under sdpa, which ignores it: measured equal to the estimate.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import cli
from costmodel import estimate
from costmodel.config import ConfigError
from costmodel.hf import from_hf_config
from costmodel.presets import load_preset

#: A GPT-2 config.json with odd sizes; the options under test are added to it.
TINY = {"model_type": "gpt2", "vocab_size": 99, "n_positions": 32, "n_embd": 48, "n_head": 6,
        "n_inner": 37, "n_layer": 3, "activation_function": "gelu_new", "resid_pdrop": 0.1,
        "embd_pdrop": 0.1, "attn_pdrop": 0.1}
SCALED = {**TINY, "scale_attn_by_inverse_layer_idx": True}
UNSCALED = {**TINY, "scale_attn_weights": False, "scale_attn_by_inverse_layer_idx": True}
REORDER = {**TINY, "reorder_and_upcast_attn": True}


def test_the_scale_options_read_as_the_same_model():
    plain = from_hf_config(TINY, name="tiny")
    assert from_hf_config(SCALED, name="tiny") == plain
    assert from_hf_config(UNSCALED, name="tiny") == plain


@pytest.mark.parametrize("field, value", [
    ("reorder_and_upcast_attn", "no"), ("scale_attn_by_inverse_layer_idx", "yes"), ("scale_attn_weights", 1)])
def test_mistyped_options_are_one_line(field, value):
    with pytest.raises(ConfigError, match=f"field '{field}' must be true or false, got"):
        from_hf_config({**TINY, field: value}, name="tiny")


def test_reorder_is_read_as_upcast_attention():
    plain = from_hf_config(TINY, name="tiny")
    assert from_hf_config({**TINY, "reorder_and_upcast_attn": False}, name="tiny") == plain
    assert from_hf_config(REORDER, name="tiny") == plain.replace(upcast_attention=True)
    with pytest.raises(ConfigError, match="upcast_attention is GPT-2's reorder_and_upcast_attn"):
        load_preset("llama2-7b").replace(upcast_attention=True)


@pytest.mark.parametrize("attention, code", [("eager", 2), ("sdpa", 0), ("flash", 0)])
def test_cli_refuses_reorder_and_upcast_attn_under_eager_only(tmp_path, attention, code):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(REORDER))
    result = CliRunner().invoke(cli.cli, ["estimate", "--config", str(path), "--seq-len", "16",
                                          "--impl", "hf", "--attention", attention])
    assert result.exit_code == code, result.output
    if code:
        assert result.output.strip().count("\n") == 0 and "reorder_and_upcast_attn" in result.output


def test_cli_estimate_with_the_scale_options_equals_without(tmp_path):
    outputs = []
    for name, config, attention in (("plain", TINY, "eager"), ("scaled", UNSCALED, "eager"),
                                    ("plain", TINY, "sdpa"), ("reorder", REORDER, "sdpa")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(config))
        result = CliRunner().invoke(cli.cli, ["estimate", "--config", str(path), "--seq-len", "16",
                                              "--impl", "hf", "--attention", attention, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        data["inputs"].pop("model")
        outputs.append(data)
    assert outputs[0] == outputs[1] and outputs[2] == outputs[3]


# ---------------------------------------------------------------------------------------------
# Measured: GPT2LMHeadModel built from the same dicts


torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.test_measure import bytes_of, findings  # noqa: E402
from validate.hf_families import build_hf_from_dict  # noqa: E402
from validate.measure import matmul_flops, other_op_elements, saved_activation_bytes  # noqa: E402
from validate.hf_models import make_inputs  # noqa: E402


def _model(config: dict, attn: str, dtype: torch.dtype):
    model = build_hf_from_dict(config, attn, dtype=dtype)
    model.loss_type = "ForCausalLM"  # as validate/hf_models.build_hf_model names GPT-2's loss
    return model


def _measure(config: dict, attn: str, dtype: torch.dtype) -> tuple[int, int, int, dict]:
    inputs = make_inputs(from_hf_config(TINY, name="tiny"), 2, 10, labels=True)  # every dict's sizes
    flops = matmul_flops(_model(config, attn, dtype), inputs, backward=True)
    saved = saved_activation_bytes(_model(config, attn, dtype), inputs)
    ops = other_op_elements(_model(config, attn, dtype), inputs, backward=True)
    return flops.forward, flops.backward, saved.total_bytes, ops


@pytest.mark.slow
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_scale_options_measure_as_the_formulas_and_as_the_plain_model(attn, dtype):
    """Formula == measurement with the options set (FINDINGS' executed formulas, the ones
    tests/test_measure.py holds the plain model to, and the estimate's tree), and every other op's
    element count equal to the plain model's: the options add no pass over the scores in 5.24."""
    f = findings()
    cfg = from_hf_config(UNSCALED, name="tiny")
    forward, backward, saved, ops = _measure(UNSCALED, attn, dtype)
    assert forward == f["forward_matmul_flops"](f["dims"](cfg), 2, 10, None)
    assert backward == f["backward_matmul_flops"](f["dims"](cfg), 2, 10, attn, True, None)
    assert saved == f["saved_bytes"](f["dims"](cfg), 2, 10, bytes_of(dtype), attn, True, None)
    ours = estimate(dict(UNSCALED, name="x"), seq_len=10, batch=2, attention=attn, impl="hf",
                    dtype={torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype]).to_dict()
    assert (forward, backward, saved) == (ours["flops"]["forward"], ours["flops"]["backward"],
                                          ours["memory"]["activations"])
    assert (forward, backward) == (1_837_440, 3_674_880)
    assert saved == {("eager", torch.float32): 223_764, ("eager", torch.bfloat16): 116_044,
                     ("sdpa", torch.float32): 223_764, ("sdpa", torch.bfloat16): 154_924}[attn, dtype]
    assert (forward, backward, saved, ops) == _measure(TINY, attn, dtype)
    assert _measure(SCALED, attn, dtype)[2:] == (saved, ops)


@pytest.mark.slow
def test_reorder_and_upcast_attn_moves_eager_ops_and_bf16_saved_bytes():
    """Why it is refused: under eager the fp32 baddbmm path is other code (exact counts at b 2,
    n 10, 3 layers of 6 heads of 8), though the matmul FLOPs stay (baddbmm is counted as a bmm)."""
    reorder = REORDER
    L, b, h, n, dh = 3, 2, 6, 10, 8
    scores, qk = L * b * h * n * n, 2 * L * b * h * n * dh
    plain32, upcast32 = _measure(TINY, "eager", torch.float32), _measure(reorder, "eager", torch.float32)
    assert upcast32[:3] == plain32[:3]
    # the scores' multiply by `scaling` (forward and backward) goes; baddbmm's alpha scales dq, dk
    assert plain32[3]["aten.mul.Tensor"] - upcast32[3]["aten.mul.Tensor"] == 2 * scores
    assert upcast32[3]["aten.mul.Scalar"] - plain32[3]["aten.mul.Scalar"] == qk
    assert upcast32[3]["aten.baddbmm"] == scores
    plain16, upcast16 = _measure(TINY, "eager", torch.bfloat16), _measure(reorder, "eager", torch.bfloat16)
    # q and k saved as fp32 copies and the probabilities' softmax kept in fp32: 2 more bytes each
    assert upcast16[2] - plain16[2] == 2 * (qk + scores) == 18_720
    # casts: q, k up and their gradients down; the scores down and their gradient up
    assert upcast16[3]["aten._to_copy"] - plain16[3]["aten._to_copy"] == 2 * qk + 2 * scores
    # sdpa ignores it (measured equal to the plain model), so the tree takes it under sdpa
    for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        measured = _measure(reorder, "sdpa", dtype)
        assert measured == _measure(TINY, "sdpa", dtype)
        ours = estimate(dict(reorder, name="x"), seq_len=10, batch=2, attention="sdpa", impl="hf",
                        dtype=name).to_dict()
        assert measured[:3] == (ours["flops"]["forward"], ours["flops"]["backward"],
                                ours["memory"]["activations"])
