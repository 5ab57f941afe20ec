"""Megatron-Core's gradient reduce dtype (DistributedDataParallelConfig.grad_reduce_in_fp32) as a
layout setting: the main_grad buffers and the data-parallel gradient collectives in fp32 (Megatron-
LM's default with --bf16) or in the parameters' bf16, the optimizer then casting each gradient it
updates to a new fp32 tensor (distrib_optimizer.py _copy_model_grads_to_main_grads,
optimizer.py Float16OptimizerWithFloat16Params); and FSDP2's MixedPrecisionPolicy reduce_dtype, the
same setting under fsdp2. Exact per-rank bytes and collective payloads under both settings."""

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
from costmodel.step_bytes import megatron_gradient_cast_bytes

LLAMA2_7B = 6_738_415_616  # LlamaForCausalLM's parameters (tests/published.py); 32,000 rows pad to 128
MIXTRAL_8X7B = 46_702_792_704
MIXTRAL_8X7B_EXPERTS = 32 * 8 * 3 * 4096 * 14336  # 32 layers of 8 SwiGLU experts (d 4096, d_x 14336)


def rank(name: str = "llama2-7b", dtype: str = "bf16", **layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset(name), Workload(seq_len=8, dtype=dtype), Layout(framework="megatron", **layout))


@pytest.mark.parametrize("grad_reduce", [None, "fp32"])
def test_fp32_is_megatrons_default_in_bf16(grad_reduce):
    """arguments.py sets accumulate_allreduce_grads_in_fp32 with --bf16 (d98e8a64d, lines 1204-1217):
    4-byte gradients, the reduce-scatter of 4 P bytes, the bf16 parameters all-gathered."""
    out = rank(dp=8, zero=1, grad_reduce_dtype=grad_reduce).to_dict()
    shard = LLAMA2_7B // 8  # 842,301,952: dp divides the parameters
    assert out["per_rank"]["gradients"] == 4 * LLAMA2_7B == 26_953_662_464
    assert out["per_rank"]["optimizer"] == 12 * shard
    assert out["communication"]["dp"] == {"reduce_scatter": 4 * 8 * shard, "all_gather": 2 * 8 * shard}
    assert out["precision"] == "megatron"


def test_bf16_reduce_halves_the_buffer_and_the_reduce_scatter_and_adds_the_fp32_shard():
    """grad_reduce_in_fp32 False with the distributed optimizer: a 2-byte main_grad buffer of the
    rank's P parameters, reduce-scattered in bf16 (2 P bytes), and at the step the fp32 copy of the
    rank's P / 8 shard (shard_model_grad.float()): 2 P + 4 P / 8."""
    out = rank(dp=8, zero=1, grad_reduce_dtype="bf16").to_dict()
    shard = LLAMA2_7B // 8
    assert out["per_rank"]["gradients"] == 2 * LLAMA2_7B + 4 * shard == 16_846_039_040
    assert out["per_rank"]["optimizer"] == 12 * shard  # the fp32 master and moments, unchanged
    assert out["per_rank"]["weights"] == 2 * LLAMA2_7B
    assert out["communication"]["dp"] == {"reduce_scatter": 2 * 8 * shard, "all_gather": 2 * 8 * shard}
    assert out["precision"] == "mixed"
    assert out["layout"]["grad_reduce_dtype"] == "bf16"


def test_bf16_reduce_without_the_distributed_optimizer_casts_every_gradient():
    """ZeRO 0: the gradients all-reduced in bf16 (2 P), and Float16OptimizerWithFloat16Params
    casts every main_grad to fp32 (main_param.grad = model_param.main_grad.float()): 2 P + 4 P."""
    fp32 = rank(dp=4, zero=0).to_dict()
    bf16 = rank(dp=4, zero=0, grad_reduce_dtype="bf16").to_dict()
    assert fp32["per_rank"]["gradients"] == 4 * LLAMA2_7B
    assert fp32["communication"]["dp"] == {"all_reduce": 4 * LLAMA2_7B}
    assert bf16["per_rank"]["gradients"] == 6 * LLAMA2_7B
    assert bf16["communication"]["dp"] == {"all_reduce": 2 * LLAMA2_7B}


def test_bf16_reduce_under_expert_parallelism():
    """Mixtral-8x7B on dp 16, ep 8, ZeRO-1: the dense parameters reduce-scattered over dp and the
    rank's one expert a layer over the dp / ep = 2 ranks that hold it, both in bf16; the fp32
    copies of both shards at the step."""
    dense = MIXTRAL_8X7B - MIXTRAL_8X7B_EXPERTS
    local = MIXTRAL_8X7B_EXPERTS // 8
    out = rank("mixtral-8x7b", dp=16, ep=8, zero=1, grad_reduce_dtype="bf16").to_dict()
    assert out["per_rank"]["gradients"] == 2 * (dense + local) + 4 * (math.ceil(dense / 16) + math.ceil(local / 2))
    assert out["communication"]["dp"]["reduce_scatter"] == 2 * 16 * math.ceil(dense / 16)
    assert out["communication"]["edp"]["reduce_scatter"] == 2 * local
    fp32 = rank("mixtral-8x7b", dp=16, ep=8, zero=1).to_dict()
    assert fp32["communication"]["edp"]["reduce_scatter"] == 4 * local


def test_the_step_casts_the_bf16_gradient_and_the_collectives_run_in_bf16():
    """The fused Adam's pass reads the fp32 gradient either way: 2 + 4 + 12 read, 2 + 12 written =
    32 bytes a parameter; the bf16 buffer adds the cast, read 2 and write 4: 38."""
    hardware = load_hardware("h100-sxm")
    fp32 = StepTime(rank(dp=8, zero=1), hardware)
    bf16 = StepTime(rank(dp=8, zero=1, grad_reduce_dtype="bf16"), hardware)
    assert fp32.step_traffic() == 32.0
    assert megatron_gradient_cast_bytes(2) == 6
    assert bf16.step_traffic() == 38.0
    assert fp32.estimate.collective_dtype("dp", "reduce_scatter") == "fp32"
    assert bf16.estimate.collective_dtype("dp", "reduce_scatter") == "bf16"
    stage = bf16.estimate.stages[0]
    assert bf16.optimizer(stage) == pytest.approx(fp32.optimizer(stage) * 38 / 32, rel=1e-12)


@pytest.mark.parametrize("layout, dtype, words", [
    ({"framework": "deepspeed"}, "bf16", "add --framework megatron or fsdp2 (here deepspeed)"),
    ({"framework": "megatron"}, "fp16", "modelled for bf16 training"),
    ({"framework": "fsdp2"}, "fp16", "modelled for bf16 training"),
])
def test_refused_outside_megatron_and_fsdp2_in_bf16(layout, dtype, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=8, dtype=dtype),
                         Layout(dp=2, grad_reduce_dtype="bf16", **layout))
    with pytest.raises(ConfigError, match="must be fp32 or bf16"):
        Layout(framework="megatron", grad_reduce_dtype="fp16")


def test_cli_option_and_its_refusal(capsys):
    args = ["estimate", "-m", "llama2-7b", "--seq-len", "8", "--dtype", "bf16", "--dp", "8", "--zero", "1",
            "--framework", "megatron", "--json"]
    assert cli.main(args + ["--grad-reduce-dtype", "bf16"]) == 0
    parallel = json.loads(capsys.readouterr().out)["parallel"]
    assert parallel["per_rank"]["gradients"] == 2 * LLAMA2_7B + 4 * (LLAMA2_7B // 8)
    assert cli.main(args[:-1] + ["--grad-reduce-dtype", "bf16"]) == 0
    assert "megatron (mixed precision, gradients reduced in bf16)" in capsys.readouterr().out
    assert cli.main(args[:-3] + ["--grad-reduce-dtype", "bf16"]) == 2
    err = capsys.readouterr().err
    assert "grad_reduce_in_fp32 or FSDP2's reduce_dtype; add --framework megatron or fsdp2" in err and "Traceback" not in err


@pytest.mark.parametrize("zero", [2, 3])
def test_fsdp2s_bf16_reduce_dtype_halves_the_reduce_scatter_and_keeps_the_fp32_shards(zero):
    """MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=bf16), Composer's FSDP "PURE": each
    micro-batch's reduce-scatter of Llama-2-7B's gradients in 2 bytes, not 4 (its 6,738,415,616
    parameters pad to 26,953,662,464 fp32 bytes over 8 ranks, per tensor); the reduced shard is cast
    to the sharded parameter's fp32 inside the reduce (foreach_reduce's _to_dtype_if_needed), so the
    rank's fp32 gradient shard, its policy and its optimizer step's bytes are unchanged, and no
    Megatron-style cast at the step."""
    hardware = load_hardware("h100-sxm")
    estimates = {g: ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=8, dtype="bf16"),
                                     Layout(framework="fsdp2", dp=8, zero=zero, microbatches=2, grad_reduce_dtype=g))
                 for g in (None, "fp32", "bf16")}
    out = {g: e.to_dict() for g, e in estimates.items()}
    assert out[None]["communication"]["dp"]["reduce_scatter"] == 2 * 26_953_662_464
    assert out["fp32"]["communication"]["dp"] == out[None]["communication"]["dp"]
    assert out["bf16"]["communication"]["dp"]["reduce_scatter"] == 26_953_662_464
    assert out["bf16"]["communication"]["dp"]["all_gather"] == out[None]["communication"]["dp"]["all_gather"]
    assert out["bf16"]["per_rank"] == out[None]["per_rank"] and out["bf16"]["precision"] == "fsdp2"
    assert [estimates[g].collective_dtype("dp", "reduce_scatter") for g in (None, "fp32", "bf16")] == ["fp32", "fp32", "bf16"]
    assert not estimates["bf16"].gradient_cast_at_step
    assert StepTime(estimates["bf16"], hardware).step_traffic() == StepTime(estimates[None], hardware).step_traffic() == 28.0


def test_every_megatron_bridge_megatron_row_states_the_recipes_bf16_reduce():
    """Every release's perf recipe sets grad_reduce_in_fp32 False (the sources' 'assumed' text names
    the file and commit of each): each Megatron DDP row of both pages states it, and Nemotron 3
    Ultra's Megatron-FSDP row its recipe's megatron_fsdp_main_grads_dtype and grad_comm_dtype bf16,
    DeepSeek-V4 Flash's row its perf recipe's (4ab94dfad perf_recipes/deepseek/gb200/deepseek_v4.py:
    _benchmark_common, then ddp.grad_reduce_in_fp32 False again); the Llama 3 8B Megatron-FSDP rows
    of 25.09 and 25.11 (whose Megatron-FSDP of that time was not read) do not."""
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    pages = ("megatron-bridge", "megatron-bridge-moe")  # the two pages (the cards' rows: tests/test_published_runs_cards.py)
    bridge = [run for run in data["runs"] if run["id"].split()[0] in pages]
    stated = [run for run in bridge if run.get("grad_reduce_dtype") == "bf16"]
    left = {run["id"] for run in bridge} - {run["id"] for run in stated}
    assert len(stated) == 173 and len(bridge) == 175
    assert sorted(left) == ["megatron-bridge 25.09 llama3-8b fp8 fsdp 8xh100", "megatron-bridge 25.11 llama3-8b fp8-cs fsdp 8xh100"]
    assert all(run.get("zero") == 3 for run in bridge if run["id"] in left)
    stating = (*pages, "megatron-bridge-cards", "megatron-lm-dsv3-gb200")  # session 25's sources state their recipes' too
    stating += ("dgxc-25.02-nemotron",)  # session 26: the 340B yaml's grad_sync_dtype bf16, row by row (the 15B's fp32)
    stating += ("megatron-bridge-docs",)  # session 30: set_qwen3_common_configs' grad_reduce_in_fp32 False at 1faf74e32
    stating += ("mcore-moe-report",)  # session 46 (wt46_unseent): its B.2 settings, DeepSeek-V3's gradients reduced in fp32
    assert not any(run.get("grad_reduce_dtype") for run in data["runs"] if run["id"].split()[0] not in stating)


def test_a_stated_row_reduces_its_expert_gradients_in_bf16():
    """GPT-OSS 120B BF16 on 64 B200 at 26.04.01 (EP 8: expert data parallelism of 8): the row's
    Layout carries the recipe's bf16 reduce, and its expert gradients' reduce-scatter is half the
    fp32 one, byte for byte."""
    from reports.published_runs import train_setup
    from tests.megatron_bridge_pages import runs_and_source

    runs, source = runs_and_source("megatron-bridge-moe")
    run = runs["megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xb200"]
    bf16, _, _ = train_setup(run, source)
    fp32, _, _ = train_setup({k: v for k, v in run.items() if k != "grad_reduce_dtype"}, source)
    assert bf16.layout.grad_reduce_dtype == "bf16" and fp32.layout.grad_reduce_dtype is None
    wide, narrow = fp32.to_dict()["communication"], bf16.to_dict()["communication"]
    assert narrow["edp"]["reduce_scatter"] * 2 == wide["edp"]["reduce_scatter"] > 0
    assert narrow["dp"]["reduce_scatter"] * 2 == wide["dp"]["reduce_scatter"] > 0
