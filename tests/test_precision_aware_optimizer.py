"""Megatron-Core's precision-aware optimizer (OptimizerConfig.use_precision_aware_optimizer) as a
layout setting under the dtype sets the recipes use (costmodel/layout/frameworks.py
PRECISION_AWARE_OPTIMIZERS): Megatron-Bridge's fp32 override (Megatron-Core keeps the fp32 master and
casts the gradient: nothing moves), DeepSeek-V3's bf16 moments, and Transformer Engine's master
weights as int16 remainders reading the bf16 gradient uncast. Exact per-rank bytes and the step's
bytes a parameter."""

from __future__ import annotations

import json
import math

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.time import StepTime
from costmodel.presets import load_preset

LLAMA2_7B = 6_738_415_616  # LlamaForCausalLM's parameters (tests/published.py); 32,000 rows pad to 128
SHARD = LLAMA2_7B // 8  # 842,301,952: dp 8 divides the parameters
MIXTRAL_8X7B = 46_702_792_704
MIXTRAL_8X7B_EXPERTS = 32 * 8 * 3 * 4096 * 14336  # 32 layers of 8 SwiGLU experts (d 4096, d_x 14336)


def rank(name: str = "llama2-7b", dtype: str = "bf16", optimizer: str = "adamw", **layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset(name), Workload(seq_len=8, dtype=dtype, optimizer=optimizer),
                            Layout(framework="megatron", **layout))


@pytest.mark.parametrize("grad_reduce", [None, "bf16"])
def test_fp32_override_changes_no_byte(grad_reduce):
    """Megatron-Bridge's BF16 runs: fp8_recipe 'tensorwise' reaches the OptimizerConfig, so
    use_precision_aware_optimizer_no_fp8_or_ds_fp8 is False: the fp32 master shard, the gradient
    cast and fp32 moments as without it (optimizer_config.py lines 407-414)."""
    off = rank(dp=8, zero=1, grad_reduce_dtype=grad_reduce)
    on = rank(dp=8, zero=1, grad_reduce_dtype=grad_reduce, precision_aware_optimizer="fp32")
    assert on.to_dict()["per_rank"] == off.to_dict()["per_rank"]
    assert on.to_dict()["per_rank"]["optimizer"] == 12 * SHARD == 10_107_623_424
    hardware = load_hardware("h100-sxm")
    assert StepTime(on, hardware).step_traffic() == StepTime(off, hardware).step_traffic() \
        == (38.0 if grad_reduce else 32.0)
    assert on.to_dict()["layout"]["precision_aware_optimizer"] == "fp32"


def test_bf16_moments_as_deepseek_v3s_recipe():
    """exp_avg and exp_avg_sq in bf16 beside Megatron-Core's fp32 master: 4 + 2 + 2 = 8 bytes a
    shard parameter; the gradient still cast (2 P + 4 P / 8). The step: the cast (read 2, write 4)
    and one fused pass reading the bf16 weight, the fp32 gradient, master and bf16 moments (2 + 4 +
    8) and writing weight, master and moments (2 + 8): 30 bytes, where fp32 moments take 38."""
    out = rank(dp=8, zero=1, grad_reduce_dtype="bf16", precision_aware_optimizer="bf16-moments")
    per_rank = out.to_dict()["per_rank"]
    assert per_rank["optimizer"] == 8 * SHARD == 6_738_415_616
    assert per_rank["gradients"] == 2 * LLAMA2_7B + 4 * SHARD == 16_846_039_040
    assert per_rank["weights"] == 2 * LLAMA2_7B
    assert out.precision_aware_change == -4
    assert StepTime(out, load_hardware("h100-sxm")).step_traffic() == 30.0
    fp32_buffers = rank(dp=8, zero=1, precision_aware_optimizer="bf16-moments")
    assert fp32_buffers.to_dict()["per_rank"]["gradients"] == 4 * LLAMA2_7B
    assert StepTime(fp32_buffers, load_hardware("h100-sxm")).step_traffic() == 24.0  # 2 + 4 + 8 + 2 + 8


def test_te_master_keeps_remainders_and_reads_the_bf16_gradient():
    """FusedAdam's master weights as int16 remainders (store_param_remainders): 2 + 4 + 4 = 10
    bytes a shard parameter, and no fp32 copy of the gradient (decoupled_grad is the buffer's
    shard): 2 P of gradients. multi_tensor_adam_param_remainder reads gradient, weight, remainder
    and moments (2 + 2 + 2 + 8) and writes weight, remainder and moments (2 + 2 + 8): 26."""
    out = rank(dp=8, zero=1, grad_reduce_dtype="bf16", precision_aware_optimizer="te-master")
    per_rank = out.to_dict()["per_rank"]
    assert per_rank["optimizer"] == 10 * SHARD == 8_423_019_520
    assert per_rank["gradients"] == 2 * LLAMA2_7B == 13_476_831_232
    assert not out.gradient_cast_at_step
    assert StepTime(out, load_hardware("h100-sxm")).step_traffic() == 26.0
    fp32_buffers = rank(dp=8, zero=1, precision_aware_optimizer="te-master")  # Megatron-LM's default buffers
    assert fp32_buffers.to_dict()["per_rank"]["gradients"] == 4 * LLAMA2_7B
    assert StepTime(fp32_buffers, load_hardware("h100-sxm")).step_traffic() == 28.0  # 2 + 4 + 10 + 2 + 10


def test_under_expert_parallelism():
    """Mixtral-8x7B on dp 16, ep 8, ZeRO-1: the dense shard over dp and the rank's experts over
    dp / ep = 2, each at the dtype set's bytes."""
    dense = MIXTRAL_8X7B - MIXTRAL_8X7B_EXPERTS
    local = MIXTRAL_8X7B_EXPERTS // 8
    shards = math.ceil(dense / 16) + math.ceil(local / 2)
    moments = rank("mixtral-8x7b", dp=16, ep=8, zero=1, grad_reduce_dtype="bf16",
                   precision_aware_optimizer="bf16-moments").to_dict()["per_rank"]
    assert moments["optimizer"] == 8 * shards
    assert moments["gradients"] == 2 * (dense + local) + 4 * shards
    master = rank("mixtral-8x7b", dp=16, ep=8, zero=1, grad_reduce_dtype="bf16",
                  precision_aware_optimizer="te-master").to_dict()["per_rank"]
    assert master["optimizer"] == 10 * shards
    assert master["gradients"] == 2 * (dense + local)


@pytest.mark.parametrize("layout, dtype, optimizer, words", [
    ({"framework": "deepspeed", "zero": 1}, "bf16", "adamw", "add --framework megatron (here deepspeed)"),
    ({"framework": "fsdp2"}, "bf16", "adamw", "add --framework megatron (here fsdp2)"),
    ({"framework": "megatron", "zero": 0}, "bf16", "adamw", "only under its distributed optimizer; add --zero 1"),
    ({"framework": "megatron", "zero": 1}, "fp16", "adamw", "modelled for bf16 training with Adam"),
    ({"framework": "megatron", "zero": 1}, "bf16", "sgd", "modelled for bf16 training with Adam"),
])
def test_refused_outside_megatrons_distributed_adam_in_bf16(layout, dtype, optimizer, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=8, dtype=dtype, optimizer=optimizer),
                         Layout(dp=2, precision_aware_optimizer="bf16-moments", **layout))


def test_refused_names_and_te_master_under_fp8():
    with pytest.raises(ConfigError, match="must be fp32, bf16-moments or te-master"):
        Layout(framework="megatron", dp=2, zero=1, precision_aware_optimizer="fp8")
    with pytest.raises(ConfigError, match="Megatron-Core keeps the fp32 master weights itself"):
        Layout(framework="megatron", dp=2, zero=1, fp8="current", precision_aware_optimizer="te-master")
    assert Layout(framework="megatron", dp=2, zero=1, fp8="current",
                  precision_aware_optimizer="bf16-moments").precision_aware_optimizer == "bf16-moments"


def test_cli_option_and_its_refusal(capsys):
    args = ["estimate", "-m", "llama2-7b", "--seq-len", "8", "--dtype", "bf16", "--dp", "8", "--zero", "1",
            "--framework", "megatron", "--grad-reduce-dtype", "bf16", "--json"]
    assert cli.main(args + ["--precision-aware-optimizer", "te-master"]) == 0
    parallel = json.loads(capsys.readouterr().out)["parallel"]
    assert parallel["per_rank"]["optimizer"] == 10 * SHARD
    assert parallel["per_rank"]["gradients"] == 2 * LLAMA2_7B
    assert cli.main(args[:-1] + ["--precision-aware-optimizer", "bf16-moments"]) == 0
    assert "gradients reduced in bf16, precision-aware optimizer bf16-moments)" in capsys.readouterr().out
    assert cli.main(args[:-5] + ["--precision-aware-optimizer", "fp32"]) == 2  # no --framework megatron
    assert "add --framework megatron" in capsys.readouterr().err


def test_python_api_takes_it_as_a_layout_field():
    """costmodel.estimate's layout dict is Layout's fields: the same bytes as the CLI."""
    import costmodel

    result = costmodel.estimate("llama2-7b", seq_len=8, dtype="bf16", layout={
        "dp": 8, "zero": 1, "framework": "megatron", "grad_reduce_dtype": "bf16",
        "precision_aware_optimizer": "bf16-moments"})
    assert result.to_dict()["parallel"]["per_rank"]["optimizer"] == 8 * SHARD
    with pytest.raises(ConfigError, match="add --zero 1"):
        costmodel.estimate("llama2-7b", seq_len=8, dtype="bf16", layout={
            "dp": 8, "framework": "megatron", "precision_aware_optimizer": "fp32"})


def test_the_megatron_bridge_rows_state_their_recipes_setting():
    """DeepSeek-V3's 17 rows keep bf16 moments (its recipe at every release), and DeepSeek-V4 Flash's
    26.08 row (its recipe, read in session 24: wt24_dsv4b); the 16 other BF16 rows
    state the performance scripts' fp32 override, which moves no byte: a GPT-OSS 120B row's rank and
    step traffic equal the same row without it."""
    import dataclasses

    from reports.published_runs import train_setup
    from tests.megatron_bridge_pages import runs_and_source

    runs, source = runs_and_source("megatron-bridge-moe")
    stated = {i: r["precision_aware_optimizer"] for i, r in runs.items() if "precision_aware_optimizer" in r
              and i.split()[0] not in ("megatron-bridge-cards", "megatron-lm-dsv3-gb200",  # tests/test_published_runs_cards.py
                                       "mcore-moe-report")}  # its DeepSeek-V3 rows' bf16 moments: tests/test_session46_unseen_train.py
    # and the Megatron MoE model zoo's two MXFP8 Blackwell rows, as their rows state it (session 24)
    zoo = ["modelzoo-qwen3-gb 235b mxfp8 hybridep tp1 pp1 ep64 64xgb300",
           "modelzoo-qwen3-long 235b mxfp8 hybridep tp4 cp4 ep32 pp4 vpp12 128k 128xgb200"]
    assert sorted(i for i, v in stated.items() if v == "bf16-moments") == sorted(
        [i for i in runs if i.split()[2] in ("deepseek-v3", "deepseek-v4-flash")] + zoo)
    fp32 = sorted(i for i, v in stated.items() if v == "fp32")
    assert len(fp32) == 16 and all(i.split()[3] == "bf16" and i.split()[2] != "deepseek-v3" for i in fp32)
    assert len(stated) == 36
    on, hardware, _ = train_setup(runs["megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xb200"], source)
    off = ParallelEstimate(on.cfg, on.workload, dataclasses.replace(on.layout, precision_aware_optimizer=None))
    assert on.layout.precision_aware_optimizer == "fp32"
    assert on.to_dict()["per_rank"] == off.to_dict()["per_rank"]
    assert StepTime(on, hardware).step_traffic() == StepTime(off, hardware).step_traffic() == 38.0
