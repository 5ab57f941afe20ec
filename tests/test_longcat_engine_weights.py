"""LongCat-Flash's weights where an engine serves it: vLLM's loader builds its FusedMoE over the
n_routed_experts real experts only (the router alone scores E + Z: vllm/model_executor/models/
longcat_flash.py at 055e47c2, LongcatMoe), so serve's vllm, sarathi, orca and trtllm schedulers size a
replica with the checkpoint's weights, while estimate (and simulate's generate, serve's static and hf-*
schedulers) keep transformers' LongcatFlashForCausalLM, whose experts allocate gate_up rows for the
zero-compute experts too (Profile.zero_experts_held). Each output says which."""

from __future__ import annotations

import sympy as sp

from costmodel.hf import from_hf_config
from costmodel.hardware import load_hardware
from costmodel.serving.replica import build_replica
from costmodel.serving.profile import held_params, serving_profile
from tests.test_hf_longcat_flash import CONFIGS

#: LongcatFlashConfig(): 256 zero experts' gate_up rows, 2 x 2,048 x 6,144 each, in 28 MoE layers
ZERO_ROWS = 256 * 2 * 2_048 * 6_144 * 28


def _cfg(config: dict):
    return from_hf_config(dict(config), name="x")


def test_class_defaults_held_by_the_engine_and_by_the_class():
    """The engine's replica holds 741,053,585,408 - 180,388,626,432 = 560,664,958,976 parameters (the
    card's 560B); transformers' serving keeps the class's 741,053,585,408 (test_hf_longcat_flash)."""
    cfg = _cfg({"model_type": "longcat_flash"})
    assert ZERO_ROWS == 180_388_626_432
    assert held_params(cfg, serving_profile(cfg)) == 560_664_958_976
    assert held_params(cfg, serving_profile(cfg, routed_experts=False)) == 741_053_585_408 == 560_664_958_976 + ZERO_ROWS


def test_active_parameters_unchanged():
    """Only rows that never run go: the active count (every slot on a real expert) is the class's."""
    from costmodel.tree import CostModel, model_values

    cfg = _cfg({"model_type": "longcat_flash"})
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    for routed in (True, False):
        tree = CostModel(cfg, serving_profile(cfg, routed_experts=routed), phase="decode")
        active = (tree.total("params") - tree.total("inactive_params")).xreplace(fixed)
        assert active == 32_182_654_976


def test_replica_setup_says_whose_weights():
    """The odd config (2 layers, 5 experts of 16 beside 2 zero experts, d 48): the class's 79,216
    parameters (test_hf_longcat_flash), less 2 x 2 x 16 x 48 x 2 = 6,144 under vLLM: 73,072; the KV
    sizing's weights differ by those 6,144 in bf16 (12,288 bytes) and the setup says which."""
    cfg, hardware = _cfg(CONFIGS["longcat_flash"]), load_hardware("h100")
    engine = build_replica(cfg, hardware, scheduler="vllm", dtype="bf16")[2]
    generate = build_replica(cfg, hardware, scheduler="hf-fifo", dtype="bf16")[2]
    assert (engine["params_held"], generate["params_held"]) == (73_072, 79_216)
    assert generate["kv_cache"]["weight_bytes"] - engine["kv_cache"]["weight_bytes"] == 12_288
    assert "vLLM's loader holds them" in engine["weights_note"] and "73,072 parameters, not the 79,216" in engine["weights_note"]
    assert "transformers' class's, 79,216 parameters" in generate["weights_note"]
    for scheduler in ("sarathi", "orca", "trtllm"):
        assert build_replica(cfg, hardware, scheduler=scheduler, dtype="bf16")[2]["params_held"] == 73_072
    assert build_replica(cfg, hardware, scheduler="static", dtype="bf16")[2]["params_held"] == 79_216


def test_no_zero_experts_no_note():
    cfg = _cfg(CONFIGS["longcat_flash-no-zero"])
    setup = build_replica(cfg, load_hardware("h100"), scheduler="vllm", dtype="bf16")[2]
    assert "weights_note" not in setup and "params_held" not in setup


def test_serve_text_and_estimate_warning(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["longcat_flash"]))
    code, out, _ = run_main(["serve", "--config", str(path), "--hardware", "h100", "--rate", "1", "--requests", "3",
                             "--prompt", "20", "--output", "8"],
                            capsys)
    assert code == 0 and "73,072 parameters, not the 79,216 transformers' class allocates" in out
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 0 and "vLLM's loader holds the routed experts alone" in err
