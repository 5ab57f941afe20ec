"""Transformer Engine's userbuffers overlap priced op by op (costmodel/layout/ub_overlap.py): the sourced figures of
costmodel/ub_overlap_facts.json, each op's rule on one shape worked by hand, the ops found in a leaf, and the rows
that take it."""

import math
from types import SimpleNamespace

import pytest

from costmodel.config import ConfigError
from costmodel.kernel_shapes import Gemm
from costmodel.layout import ub_overlap
from costmodel.layout.overlap import Overlap


def test_the_sms_a_collective_needs_are_the_sources_figures():
    # NVIDIA/nccl#1649: NVLS 'peak bandwidth with only 16 SMs (or even 4 if buffers are registered)'
    assert ub_overlap.saturating_sms("h100-sxm") == 4
    assert ub_overlap.saturating_sms("gb200") == 4
    # NVIDIA/nccl#1703: '2 CTAs per NVLink'; A100 12 NVLinks
    assert ub_overlap.saturating_sms("a100-80gb") == 24
    assert ub_overlap.comm_share("h100-sxm", 2) == 0.5
    assert ub_overlap.comm_share("h100-sxm", 16) == 1.0
    assert ub_overlap.comm_share("a100-80gb", 16) == pytest.approx(16 / 24)
    with pytest.raises(ConfigError, match="no NVLink multicast or NVLink count"):
        ub_overlap.saturating_sms("rtx-4090")


def test_te_defaults_and_nemo_configs_as_their_code_states_them():
    te = ub_overlap.op_configs("te")
    assert te["qkv_fprop"] == te["fc2_dgrad"] == {"method": "ring_exchange"}
    assert te["proj_fprop"] == {"method": "pipeline", "num_sm": 16, "num_splits": 4, "set_sm_margin": True}
    assert te["fc1_wgrad"] == {"method": "bulk", "num_sm": 16, "set_sm_margin": True}
    gpt3 = ub_overlap.op_configs("userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048")
    assert gpt3["fc1_dgrad"] == {"method": "bulk", "num_sm": 2, "set_sm_margin": False}
    assert gpt3["proj_fprop"]["num_sm"] == 24 and gpt3["fc2_fprop"] == {"method": "ring_exchange"}
    assert gpt3["qkv_fprop"] == {"method": "ring_exchange"}
    assert ub_overlap.op_configs("userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192")["fc2_fprop"]["num_sm"] == 8
    with pytest.raises(ConfigError, match="'te'"):
        Overlap(ub="userbuffers_bf16_h100_h9999")
    with pytest.raises(ConfigError, match="tp must be 0"):
        Overlap(tp=1.0, ub="te")
    with pytest.raises(ConfigError, match="give one of them"):
        Overlap(async_tp=True, ub="te")


def test_the_config_a_recipe_names():
    assert ub_overlap.recipe_config("dgxc-25.04", "llama3.1-405b", "h100-sxm", "delayed") \
        == "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192"
    assert ub_overlap.recipe_config("megatron-bridge", "llama3-70b", "gb200", None) \
        == "userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192"
    # Megatron-Bridge's MXFP8 recipes keep the overlap and name the fp8 config (tests/test_ub_recipe_review.py)
    assert ub_overlap.recipe_config("megatron-bridge", "llama3-70b", "gb200", "mxfp8") \
        == "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192"
    assert ub_overlap.recipe_config("dgxc-24.11-gpt3", "gpt3-175b", "h100-sxm", None) is None  # NeMo 1's yaml
    assert ub_overlap.recipe_config("nemo-25.02", "nemotron-4-340b", "b200", "delayed") is None


class WaveTimer:
    """A kernel timer on the kernel model's wave rule with one 128 x 256 tile and 1 TFLOP/s an SM (132 SMs)."""

    def __init__(self):
        self.sms, self.peak, self.matmul_efficiency, self.memo, self.bandwidth = 132, 132e12, 1.0, {}, 1e12
        self.matmul_rate = self.peak

    def seconds(self, gemm, backward=False):
        waves = math.ceil(math.ceil(gemm.m / 128) * math.ceil(gemm.n / 256) / self.sms)
        return waves * 2 * 128 * 256 * gemm.k / (self.peak * self.matmul_efficiency / self.sms)


def fake_step(network="h100-sxm"):
    x = 2048 * 4096 * 2  # a micro-batch's boundary tensor: 16 MiB
    return SimpleNamespace(estimate=SimpleNamespace(numbers={"boundary": x}, layout=SimpleNamespace(tp=4)),
                           hardware=SimpleNamespace(network_name=network, sm_count=132),
                           collective=lambda group, kind, payload: payload / 1e11, timer=WaveTimer())


WAVE = 2 * 128 * 256 * 4096 / 1e12  # one wave of the 4096-deep GEMM: 268.435456 us
COLLECTIVE = 2048 * 4096 * 2 / 1e11  # the boundary tensor's collective: 167.77216 us


def test_pipeline_reduce_scatter_by_hand():
    # proj_fprop, TE's default: 4 chunks of 512 rows, each 64 tiles: one wave on 116 SMs; the whole GEMM's 256
    # tiles two waves on 132; each chunk's reduce-scatter (a quarter, 41.94 us) on 16 SMs at the full bandwidth,
    # beside the next chunk; the last one's exposed
    step = fake_step()
    hidden, added = ub_overlap.pipeline_terms(step, [Gemm(2048, 4096, 4096)], step.timer, ub_overlap.op_configs("te")["proj_fprop"])
    assert hidden == pytest.approx(COLLECTIVE - COLLECTIVE / 4)
    assert added == pytest.approx(4 * WAVE - 2 * WAVE)


def test_bulk_by_hand_with_and_without_the_sm_margin():
    step = fake_step()
    dgrad = [Gemm(2048, 4096, 4096)]
    # TE's default (16 SMs, margin): the GEMM on 116 SMs throughout, three waves for two; the all-gather hidden
    hidden, added = ub_overlap.bulk_terms(step, "all_gather", dgrad, step.timer, ub_overlap.op_configs("te")["qkv_dgrad"])
    assert (hidden, added) == (pytest.approx(COLLECTIVE), pytest.approx(WAVE))
    # NeMo's fc1_dgrad (2 SMs, no margin): half the bandwidth, 335.5 us beside the GEMM, which keeps its two waves
    # on 130 SMs: nothing exposed, nothing added
    cfg = {"method": "bulk", "num_sm": 2, "set_sm_margin": False}
    assert ub_overlap.bulk_terms(step, "all_gather", dgrad, step.timer, cfg) == (pytest.approx(COLLECTIVE), 0.0)
    # on A100's load/store path (24 SMs to saturate) 2 SMs move 1/12 of it: 2013 us beside the GEMM's two waves
    # (537 us): 1476 us exposed, past the collective's own 168 us: nothing hidden, the rest charged to the compute
    hidden, added = ub_overlap.bulk_terms(fake_step("a100-80gb"), "all_gather", dgrad, step.timer, cfg)
    assert hidden == 0.0
    assert added == pytest.approx(12 * COLLECTIVE - 2 * WAVE - COLLECTIVE)


def test_a_leafs_te_ops_even_where_the_ffn_reads_rows_as_wide_as_the_norms():
    # GPT-3 175B at TP 4: fc1 (12288 -> 12288) and fc2 (12288 -> 12288) share a shape; kernel_time marks both normed
    fc1 = Gemm(2048, 12288, 12288, normed_input=True)
    fc2 = Gemm(2048, 12288, 12288, normed_input=True)
    ops = ub_overlap._te_ops(regathers=True)
    assert [(kind, name) for kind, (name, _) in ops([fc1, fc2], 12288, True)] == \
        [("all_gather", "fc1_fprop"), ("reduce_scatter", "fc2_fprop")]
    assert [(kind, name) for kind, (name, _) in ops([fc1, fc2], 12288, False)] == \
        [("all_gather", "fc2_dgrad"), ("all_gather", "fc1_dgrad"), ("reduce_scatter", "fc1_wgrad")]
    qkv = [Gemm(2048, 3072, 12288, normed_input=True)]
    assert [(kind, name, gemms) for kind, (name, gemms) in ops(qkv, 12288, False)] == \
        [("all_gather", "qkv_dgrad", [Gemm(2048, 12288, 3072)]), ("reduce_scatter", "qkv_wgrad", [Gemm(12288, 3072, 2048)])]
    assert [name for _, (name, _) in ops([Gemm(2048, 12288, 3072)], 12288, True)] == ["proj_fprop"]


def test_rows_that_state_tp_comm_overlap_take_it_under_the_kernel_model():
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    runs = {run["id"]: run for run in data["runs"]}
    for run_id, config in (("dgxc-24.11-gpt3 gpt3-175b bf16 128xh100", "te"),
                           ("dgxc-25.04 llama3.1-405b fp8 512xh100", "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192")):
        run = runs[run_id]
        estimate, hardware, options = train_setup(run, data["sources"][run_id.split()[0]])
        name = ub_overlap.recipe_config(run_id.split()[0], run["model"], hardware.network_name, estimate.layout.fp8)
        overlap = ub_overlap.userbuffers(options["overlap"], estimate.layout, name)
        assert (overlap.tp, overlap.ub) == (0.0, config)
    narayanan = Overlap()  # Overlap tp 0: nothing to convert
    assert ub_overlap.userbuffers(narayanan, estimate.layout) is narayanan


def test_the_cli_flag(capsys):
    import json

    import cli

    base = ["simulate", "--train", "-m", "llama3-8b", "--tp", "8", "--sp", "--dp", "2", "--framework", "megatron",
            "--zero", "1", "--seq-len", "8192", "--batch", "1", "--json"]
    assert cli.main([*base, "--tp-comm-overlap", "te", "--time-model", "roofline"]) == 2
    err = capsys.readouterr().err
    assert "--tp-comm-overlap is Megatron's TP communication overlap" in err and len(err.strip().splitlines()) == 1
    assert cli.main([*base, "--tp-comm-overlap", "te", "--tp-overlap", "1"]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert cli.main([*base, "--tp-comm-overlap", "no-such-config"]) == 2
    assert "nemo_configs" in capsys.readouterr().err
    assert cli.main([*base]) == 0
    exposed = json.loads(capsys.readouterr().out)["step"]
    assert cli.main([*base, "--tp-comm-overlap", "te"]) == 0
    te = json.loads(capsys.readouterr().out)["step"]
    assert te["hidden_communication_seconds"] > exposed["hidden_communication_seconds"]
    assert te["compute_seconds"] > exposed["compute_seconds"]  # the pipelined and bulk GEMMs on fewer SMs
