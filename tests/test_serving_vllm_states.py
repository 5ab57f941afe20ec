"""Hybrid models' recurrent states in vLLM's layout (costmodel/serving/state_slots.py
vllm_layer_states) under the vllm and vllm-v0 schedulers, with --mamba-ssm-cache-dtype auto or
float32; transformers' layout under the others.

The integers are the products of vLLM's shape functions times the bytes of its dtype functions, as
read in vllm-project/vllm at commit 02d710837549a368073552333f66d714477415d2,
vllm/model_executor/layers/mamba/mamba_utils.py:
- MambaStateShapeCalculator.mamba2_state_shape: conv (conv_kernel - 1, (intermediate_size +
  2 n_groups state_size) / tp), temporal (num_heads / tp, head_dim, state_size);
- MambaStateShapeCalculator.gated_delta_net_state_shape: conv (conv_kernel_size - 1,
  (2 head_k_dim num_k_heads + head_v_dim num_v_heads) / tp), temporal (num_v_heads / tp,
  head_v_dim, head_k_dim);
- MambaStateDtypeCalculator._mamba_state_dtype (mamba2_state_dtype and gated_delta_net_state_dtype
  both call it): the conv state in the model dtype (mamba_cache_dtype "auto"), the temporal state
  in the conv state's dtype under mamba_ssm_cache_dtype "auto", else that dtype (float32: 4 bytes).
num_spec = 0 (no speculative decoding). All at bf16 (2 bytes), one request.
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.hf import from_hf_config
from tests.test_serving_state_slots import CONFIGS, H100, setup_of

#: Per layer, (conv, temporal) elements from the shapes above, for each odd config (conv kernel 3,
#: so 2 conv columns): Nemotron-H (6 heads of 5, state 7, 2 groups): conv (2, 30 + 28) = 116,
#: temporal (6, 5, 7) = 210, 2 Mamba layers; Granite (6 heads of 16, state 7, 2 groups): (2, 96 +
#: 28) = 248, (6, 16, 7) = 672, 3 layers; Qwen3-Next (2 key heads of 10, 6 value heads of 14):
#: (2, 40 + 84) = 248, (6, 14, 10) = 840, 3 layers.
ELEMENTS = {"nemotron_h_dense": (2, 116, 210), "nemotron_h_moe": (2, 116, 210),
            "granitemoehybrid": (3, 248, 672), "qwen3_next": (3, 248, 840)}
VLLM_AUTO = {"nemotron_h_dense": 1_304, "nemotron_h_moe": 1_304, "granitemoehybrid": 5_520, "qwen3_next": 6_528}
VLLM_FLOAT32 = {"nemotron_h_dense": 2_144, "nemotron_h_moe": 2_144, "granitemoehybrid": 9_552, "qwen3_next": 11_568}


@pytest.mark.parametrize("name", CONFIGS)
def test_vllm_state_layout(name):
    layers, conv, temporal = ELEMENTS[name]
    assert layers * (conv * 2 + temporal * 2) == VLLM_AUTO[name]
    assert layers * (conv * 2 + temporal * 4) == VLLM_FLOAT32[name]
    for scheduler in ("vllm", "vllm-v0"):
        setup = setup_of(name, scheduler=scheduler)
        assert setup["kv_cache"]["state_bytes_per_request"] == VLLM_AUTO[name]
        assert (setup["state_layout"], setup["mamba_ssm_cache_dtype"]) == ("vllm", "auto")
        fp32 = setup_of(name, scheduler=scheduler, mamba_ssm_cache_dtype="float32")
        assert fp32["kv_cache"]["state_bytes_per_request"] == VLLM_FLOAT32[name]


def test_nemotron_3_nano_bytes_per_request():
    """23 Mamba-2 layers, 64 heads of 64, state 128, 8 groups, conv 4: conv (3, 4096 + 2 x 8 x 128)
    = 18,432 elements and temporal (64, 64, 128) = 524,288 a layer. auto: 23 x (18,432 + 524,288)
    x 2 = 24,965,120 bytes; float32: 23 x (18,432 x 2 + 524,288 x 4) = 49,082,368; transformers'
    layout (the sarathi scheduler: 4 conv columns, fp32 state) stays 49,364,992."""
    from costmodel.api import load_model
    from costmodel.serving.replica import build_replica

    cfg = load_model("nemotron-3-nano")
    got = [build_replica(cfg, H100, **options)[2]["kv_cache"]["state_bytes_per_request"]
           for options in ({}, {"mamba_ssm_cache_dtype": "float32"}, {"scheduler": "sarathi"})]
    assert got == [23 * (18_432 + 524_288) * 2, 23 * (18_432 * 2 + 524_288 * 4), 49_364_992]
    assert got[:2] == [24_965_120, 49_082_368]


@pytest.mark.parametrize("name", CONFIGS)
def test_one_formula_both_layouts(name):
    """vllm_layer_states is the blocks' mamba_state_bytes / deltanet_state_bytes at other columns and
    bytes: at K columns and fp32 (their defaults) the same sum gives the decode tree's
    kv_cache_bytes of the mixers, transformers' layout, to the byte."""
    import sympy as sp

    from costmodel import symbols as S
    from costmodel.blocks.deltanet import GatedDeltaNetMixer, deltanet_state_bytes
    from costmodel.blocks.mamba import Mamba2Mixer, mamba_state_bytes
    from costmodel.serving.state_slots import state_bytes
    from costmodel.tree import CostModel, model_values

    cfg = from_hf_config(dict(CONFIGS[name]), name=name)
    decode = CostModel(cfg, None, phase="decode")
    subs = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: 1, S.e: 2}
    as_transformers = {Mamba2Mixer: mamba_state_bytes(1), GatedDeltaNetMixer: deltanet_state_bytes(1)}
    assert state_bytes(decode, subs, 1, 1, as_transformers) == state_bytes(decode, subs, 1, 1)
    assert state_bytes(decode, subs, 1, 1) == setup_of(name, scheduler="static")["kv_cache"]["state_bytes_per_request"]


def test_float32_outside_vllm_and_unknown_dtypes_are_refused(capsys):
    from tests.cli_run import run_main

    with pytest.raises(ConfigError, match="vLLM's option"):
        setup_of("qwen3_next", scheduler="sarathi", mamba_ssm_cache_dtype="float32")
    with pytest.raises(ConfigError, match="must be one of auto, float32"):
        setup_of("qwen3_next", mamba_ssm_cache_dtype="bf16")
    code, out, err = run_main(["serve", "--model", "nemotron-3-nano", "--rate", "2", "--scheduler", "static",
                               "--mamba-ssm-cache-dtype", "float32"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "vLLM's option" in err


def test_serve_cli_option_and_text():
    """The option reaches the replica: 49,082,368 bytes, 500 blocks of 16 x 6,144 bytes."""
    import json

    from click.testing import CliRunner

    import cli

    args = ["serve", "-m", "nemotron-3-nano", "--rate", "2", "--requests", "4", "--mamba-ssm-cache-dtype", "float32"]
    result = CliRunner().invoke(cli.cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    setup = json.loads(result.output)["setup"]
    assert (setup["kv_cache"]["state_bytes_per_request"], setup["kv_cache"]["state_blocks_per_request"]) == (
        49_082_368, 500)
    assert setup["mamba_ssm_cache_dtype"] == "float32"
    text = CliRunner().invoke(cli.cli, args)
    assert "49,082,368 B per request per GPU, 500 blocks each" in text.output
    assert "at once (vLLM's layout, SSM state float32)" in text.output


def test_plan_serve_rate_passes_the_option(monkeypatch, capsys):
    """plan --serve --rate builds every replica with the typed dtype; without --rate it is refused."""
    import costmodel.serving.capacity as capacity
    from tests.cli_run import run_main

    seen = []
    build = capacity.build_replica

    def recording(*args, **options):
        seen.append(options.get("mamba_ssm_cache_dtype"))
        return build(*args, **options)

    monkeypatch.setattr(capacity, "build_replica", recording)
    args = ["plan", "-m", "nemotron-3-nano", "--serve", "--mamba-ssm-cache-dtype", "float32"]
    code, out, err = run_main([*args, "--rate", "2", "--slo-ttft", "2", "--slo-tpot", "0.1", "--requests", "4",
                               "--tp", "2", "--json"], capsys)
    assert code in (0, 1) and seen and set(seen) == {"float32"}
    code, out, err = run_main([*args, "--gpus", "8"], capsys)
    assert code == 2 and "--mamba-ssm-cache-dtype" in err and "add --rate" in err
