"""Model FLOPs by a named convention (issue 18): equal to PaLM's and Megatron's formulas on GPT-3
175B, never counting recomputation (flash's recompute of Q K^T included), so MFU does not depend
on the attention kernel."""

from __future__ import annotations

import json

import pytest
import sympy as sp

import cli
from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.evaluate import values
from costmodel.hardware import load_hardware
from costmodel.model_flops import check_convention, megatron_model_flops, model_flops, palm_model_flops
from costmodel.presets import load_preset
from costmodel.roofline_training import simulate_training
from costmodel.tree import CostModel, profile_for

#: GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d 12288, 96 heads of 128, context 2048,
#: Megatron's padded vocabulary of 51,200 (Narayanan et al. 2021), tied output layer.
GPT3 = ModelConfig(name="gpt3-175b", family="gpt", vocab_size=51200, d_model=12288, n_heads=96,
                   d_ff=4 * 12288, n_decoder_layers=96, max_positions=2048, position="learned",
                   norm="layernorm", activation="gelu")


def flops_of(cfg: ModelConfig, workload: Workload, convention: str) -> int:
    model = CostModel(cfg, profile_for(cfg, workload))
    subs = {k: sp.Integer(v) for k, v in values(cfg, workload).items()}
    return int(model_flops(model.leaves, convention).xreplace(subs))


def test_both_conventions_equal_palms_and_megatrons_formulas_on_gpt3():
    batch, seq = 8, 2048
    workload = Workload(seq_len=seq, batch=batch, impl="megatron")
    matmul_params = 96 * 12 * 12288**2 + 51200 * 12288  # layers' matrices and the (tied) head
    dense = palm_model_flops(matmul_params, 96, 96, 128, seq, batch * seq)
    assert flops_of(GPT3, workload, "dense") == dense
    causal = megatron_model_flops(batch, seq, 96, 12288, 4 * 12288, 51200, 96)
    assert flops_of(GPT3, workload, "causal") == pytest.approx(causal, rel=1e-12)
    # The two differ by half the attention core, 6 L s^2 h per sequence.
    assert dense - flops_of(GPT3, workload, "causal") == batch * 6 * 96 * seq**2 * 12288
    # Korthikanti et al. 2022's 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) is the dense one.
    korthikanti = 72 * batch * seq * 96 * 12288**2 * (1 + seq / (6 * 12288) + 51200 / (12 * 96 * 12288))
    assert dense == pytest.approx(korthikanti, rel=1e-12)


def test_model_flops_never_count_recomputation_so_mfu_does_not_depend_on_the_kernel():
    # Llama-2-7B at 32k: flash's backward recomputes Q K^T, +9.4% of executed FLOPs, which the
    # model FLOPs leave out; selective and full recomputation leave them unchanged too.
    cfg, seq = load_preset("llama2-7b"), 32768
    by_attention = {a: flops_of(cfg, Workload(seq_len=seq, attention=a), "dense") for a in ("eager", "sdpa", "flash")}
    assert len(set(by_attention.values())) == 1
    for recompute in ("selective", "full"):
        assert flops_of(cfg, Workload(seq_len=seq, attention="flash", recompute=recompute), "dense") == by_attention["eager"]
    model = CostModel(cfg, profile_for(cfg, Workload(seq_len=seq, attention="flash")))
    subs = {k: sp.Integer(v) for k, v in values(cfg, Workload(seq_len=seq)).items()}
    executed = int((model.total("flops_matmul") + model.total("flops_matmul_backward")).xreplace(subs))
    assert executed / by_attention["flash"] == pytest.approx(1.094, abs=0.001)
    hardware = load_hardware("a100-80gb")
    mfus = {a: simulate_training(cfg, Workload(seq_len=4096, attention=a), hardware)["mfu_predicted"]
            for a in ("eager", "flash")}
    steps = {a: simulate_training(cfg, Workload(seq_len=4096, attention=a), hardware)["step"]["seconds"]
             for a in ("eager", "flash")}
    assert mfus["eager"] * steps["eager"] == pytest.approx(mfus["flash"] * steps["flash"], rel=1e-12)


def test_the_convention_is_named_in_the_json_and_checked(capsys):
    args = ["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--train", "--seq-len", "512", "--json"]
    assert cli.main(args + ["--flops-convention", "causal"]) == 0
    causal = json.loads(capsys.readouterr().out)
    assert cli.main(args) == 0
    dense = json.loads(capsys.readouterr().out)
    assert causal["flops_convention"] == "causal" and dense["flops_convention"] == "dense"
    assert causal["mfu_predicted"] < dense["mfu_predicted"]
    assert cli.main(args[:-1] + ["--flops-convention", "sparse"]) == 2
    with pytest.raises(ConfigError, match="flops convention"):
        check_convention("sparse")
