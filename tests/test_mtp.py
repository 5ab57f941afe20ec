"""Multi-token prediction as Megatron-Core trains it (issue 18, session 16): the MTP depths'
parameters exact from MultiTokenPredictionLayer's definition, their model FLOPs equal to Megatron-LM's
num_floating_point_operations (validate/megatron_mtp_reference.json, evaluated at d98e8a64 outside
the project) but for stated conventions, a hybrid model's '*E' layer run at two depths with one set
of weights (Nemotron 3 Super's mtp_use_repeated_layer), and its place on the last pipeline stage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.estimation import Estimate
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset

REFERENCE = json.loads((Path(__file__).resolve().parent.parent / "validate" / "megatron_mtp_reference.json").read_text())
MEGATRON = REFERENCE["flops_per_sequence"]


def single_rank(name: str, mtp: int, seq: int) -> ParallelEstimate:
    cfg = load_preset(name).replace(mtp_layers=mtp)
    return ParallelEstimate(cfg, Workload(seq_len=seq, batch=1, impl="megatron", attention="flash"),
                            Layout(framework="megatron"))


def test_the_reference_names_its_commit():
    assert REFERENCE["repository"] == "NVIDIA/Megatron-LM" and REFERENCE["commit"].startswith("d98e8a64")


@pytest.mark.parametrize("mtp", [0, 1])
def test_deepseek_v3_training_flops_equal_megatrons_with_and_without_its_mtp_depth(mtp):
    """Megatron's transformer_flops with mtp_num_layers 1 counts the depth as one more MoE layer
    (its last layer's kind), 6 (3h + 2h^2) per token for its norms and eh_proj, and a second logit
    GEMM. Ours - Megatron, exactly, is the conventions of test_megatron_reference.py over 62 layers
    (the attention core dense and flash's recomputed Q K^T beside Megatron's causal half; the
    router's d x E product, which Megatron leaves out; MLA's q and kv norm weights, which it counts
    as products) and the MTP norms Megatron counts as products (3 d per token: enorm, hnorm,
    final_layernorm; ours count them as elementwise work, not matmul FLOPs)."""
    n, h, d, layers, moe_layers = 4096, 128, 7168, 61 + mtp, 58 + mtp
    ours = single_rank("deepseek-v3", mtp, n).numbers
    megatron_core = 3 * 2 * n * n * (h * 192 + h * 128) // 2 * layers
    router = 3 * 2 * n * d * 256 * moe_layers
    expected = ours["model_flops"] - (ours["attention_flops"] - megatron_core) - router
    expected += 3 * 2 * n * (1536 + 512) * layers + 3 * 2 * n * 3 * d * mtp
    key = "deepseek-v3 seq 4096" + (" mtp_num_layers 1" if mtp else "")
    assert expected == MEGATRON[key]  # 1,023,230,173,249,536 and 1,064,931,126,411,264


def test_super_mtp_flops_equal_megatrons_hybrid_formula_but_for_eh_proj_and_router():
    """Megatron's hybrid_flops counts each MTP depth's '*E' layers (get_hybrid_layer_counts over
    '<main>/*E/*E') and a logit GEMM per depth, but neither eh_proj (2d -> d) nor the router (d x E):
    ours, whose attention core is counted causal here as Megatron's (model_flops_causal), add
    exactly those two at each of the 2 depths."""
    n, d = 8192, 4096
    plain, mtp = (single_rank("nemotron-3-super", k, n).numbers["model_flops_causal"] for k in (0, 2))
    eh_proj = 3 * 2 * n * (2 * d) * d
    router = 3 * 2 * n * d * 512
    megatron = MEGATRON["nemotron-3-super seq 8192 mtp_num_layers 2"] - MEGATRON["nemotron-3-super seq 8192"]
    assert megatron == 76_639_396_429_824
    assert mtp - plain - 2 * (eh_proj + router) == megatron


def test_mtp_parameters_exact_from_the_layers_definition():
    """MultiTokenPredictionLayer (multi_token_prediction.py at d98e8a64): enorm, hnorm and
    final_layernorm (d each), eh_proj 2d -> d with no bias, and its inner layer; the embedding
    and the output head are the model's. DeepSeek-V3: one MLA + MoE layer. Nemotron 3 Super with 2
    depths and mtp_use_repeated_layer: one '*E' (attention, then latent MoE) held once."""
    plain = Estimate(load_preset("deepseek-v3"), Workload(seq_len=64))
    mtp = Estimate(load_preset("deepseek-v3").replace(mtp_layers=1), Workload(seq_len=64))
    d = 7168
    # MLA: q_a, its norm, q_b, kv_a (latent + RoPE key), its norm, kv_b, o; the MoE: router, 256
    # experts and the shared expert of 2048; the layer's two norms
    mla = d * 1536 + 1536 + 1536 * 128 * 192 + d * (512 + 64) + 512 + 512 * 128 * (128 + 128) + 128 * 128 * d
    moe = 256 * d + 256 * 3 * d * 2048 + 3 * d * 2048
    layer = mla + moe + 2 * d
    assert layer == plain.params()["per_layer"]["decoder.moe"] == 11_507_286_016
    assert mtp.total("params") - plain.total("params") == layer + 2 * d * d + 3 * d == 11_610_067_968
    super_cfg = load_preset("nemotron-3-super")
    assert super_cfg.mtp_pattern == ("attention", "moe") and super_cfg.mtp_repeated_layer
    plain = Estimate(super_cfg, Workload(seq_len=64))
    per_layer, d = plain.params()["per_layer"], 4096
    module = per_layer["decoder.attention"] + per_layer["decoder.moe"] + 2 * d * d + 3 * d
    for depths in (1, 2, 3):  # one set of weights whatever the depths
        assert Estimate(super_cfg.replace(mtp_layers=depths), Workload(seq_len=64)).total("params") \
            - plain.total("params") == module
    # without the repeated layer each depth holds its own
    own = super_cfg.replace(mtp_layers=2, mtp_repeated_layer=False)
    assert Estimate(own, Workload(seq_len=64)).total("params") - plain.total("params") == 2 * module


def test_mtp_depths_sit_on_the_last_pipeline_stage_each_run_once_a_micro_batch():
    """Two DeepSeek-V3 depths (refused in a layout before): only the last stage changes; its
    weights grow by two modules, its expert all-to-alls by two MoE layers' (3 + 2 over 3). Super's
    two depths on one set of weights: the rank's weights grow by one module, its model FLOPs by two
    depths' worth."""
    workload, layout = Workload(seq_len=64), Layout(pp=16, dp=8, ep=8, zero=1, microbatches=16,
                                                          framework="megatron")  # MTP is Megatron-Core's
    cfg = load_preset("deepseek-v3")
    plain, one, two = (ParallelEstimate(cfg.replace(mtp_layers=k), workload, layout) for k in (0, 1, 2))
    assert [s["weights"] for s in two.per_stage[:-1]] == [s["weights"] for s in plain.per_stage[:-1]]
    added = [e.per_stage[-1]["weights"] - plain.per_stage[-1]["weights"] for e in (one, two)]
    assert added[1] == 2 * added[0] > 0
    last = [e.communication(e.stages[-1])["ep"]["all_to_all"] for e in (plain, two)]
    assert last[1] * 3 == last[0] * 5
    flops = [e.numbers["model_flops"] for e in (plain, one, two)]
    assert flops[2] - flops[0] == 2 * (flops[1] - flops[0])
    super_cfg = load_preset("nemotron-3-super")
    super_layout = Layout(tp=2, sp=True, dp=32, ep=64, etp=1, zero=1, framework="megatron")
    runs = [ParallelEstimate(super_cfg.replace(mtp_layers=k), Workload(seq_len=256, impl="megatron"), super_layout)
            for k in (0, 1, 2)]
    weights = [r.per_rank["weights"] for r in runs]
    assert weights[2] == weights[1] > weights[0]
    flops = [r.numbers["model_flops"] for r in runs]
    assert flops[2] - flops[0] == 2 * (flops[1] - flops[0])


def test_mtp_is_refused_where_it_does_not_apply(capsys):
    import cli

    with pytest.raises(ConfigError, match="decoder-only language model"):
        load_preset("t5-small").replace(mtp_layers=1)
    with pytest.raises(ConfigError, match="mtp_pattern"):
        load_preset("llama2-7b").replace(mtp_pattern=("attention", "moe"))
    assert cli.main(["estimate", "--model", "bert-base-uncased", "--mtp", "1"]) == 2
    assert "needs a decoder-only language model" in capsys.readouterr().err
    # a hybrid model whose config names no MTP pattern (Nemotron 3 Nano's released config.json)
    assert cli.main(["estimate", "--model", "nemotron-3-nano", "--mtp", "1"]) == 2
    assert "needs its MTP layer's mixers (mtp_hybrid_override_pattern" in capsys.readouterr().err
