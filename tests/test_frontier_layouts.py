"""Issue 22: the frameworks as they run (defects 1-4, one set of defaults), expert parallelism.

Each defect test fails on the code before the fix: the old numbers are in the comments.
"""

from __future__ import annotations

import json
import math

import pytest

import cli
from costmodel import blocks as B
from costmodel.config import Workload
from costmodel.evaluate import values
from costmodel.layout import Layout
from costmodel.layout.rank import ParallelEstimate
from costmodel.model import CostModel, profile_for
from costmodel.presets import load_preset

LLAMA2_7B = 6_738_415_616  # LlamaForCausalLM, DESIGN.md


def parallel(name: str, workload: Workload, **layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset(name), workload, Layout(**layout))


# ---------------------------------------------------------------------------------------------
# Defect 1: Megatron's fused SwiGLU keeps three d_ff-wide tensors, not four


def test_megatron_fused_swiglu_keeps_three_ffn_wide_tensors():
    """SwiGLUFunction saves fc1's output (gate and up, 2 d_ff) and fc2 keeps its input: 3 tensors
    of b n d_ff in the activation dtype (Hugging Face's separate SiLU and product keep 4)."""
    cfg = load_preset("llama2-7b")
    n, d_ff = 512, cfg.d_ff
    for impl, kept in (("megatron", 3), ("hf", 4)):
        workload = Workload(seq_len=n, batch=1, dtype="bf16", impl=impl, attention="flash")
        tree = CostModel(cfg, profile_for(cfg, workload))
        ffn = [leaf for leaf in tree.leaves if isinstance(leaf.block, B.FeedForward)][0]
        assert int(ffn.cost.saved_bytes.subs(values(cfg, workload))) == kept * 2 * n * d_ff, impl


def test_llama2_70b_stage_0_activations_under_megatron():
    """Issue 22's case: TP8 PP4 DP2, SP, selective recomputation, 16 micro-batches of one 4096
    sequence. Stage 0 holds 4 micro-batches of 20 layers: 11,249,254,400 bytes (Megatron keeps
    about 11.2 GB); the four-tensor FFN gave 13,598,064,640."""
    workload = Workload(seq_len=4096, batch=1, dtype="bf16", impl="megatron", attention="flash",
                        recompute="selective")
    rank = parallel("llama2-70b", workload, tp=8, pp=4, dp=2, sp=True, microbatches=16,
                    framework="megatron", zero=1)
    assert rank.per_stage[0]["activations"] == 11_249_254_400


# ---------------------------------------------------------------------------------------------
# Defect 2: Megatron keeps fp32 gradients for bf16 only


@pytest.mark.parametrize("dtype, gradient_bytes", [("bf16", 4), ("fp16", 2)])
def test_megatron_gradient_bytes_follow_the_dtype(dtype, gradient_bytes):
    """arguments.py forces accumulate_allreduce_grads_in_fp32 for bf16; in fp16 the gradient
    buffer and its all-reduce are fp16 (the old model kept 4 bytes in both)."""
    rank = parallel("llama2-7b", Workload(seq_len=8, dtype=dtype), dp=4, zero=0, framework="megatron")
    per_rank = rank.to_dict()["per_rank"]
    assert per_rank["gradients"] == gradient_bytes * LLAMA2_7B  # 32,000 rows: a multiple of 128
    assert rank.to_dict()["communication"]["dp"]["all_reduce"] == per_rank["gradients"]
    assert per_rank["optimizer"] == 12 * (per_rank["gradients"] // gradient_bytes)


# ---------------------------------------------------------------------------------------------
# Defect 3: DeepSpeed ZeRO-2/3 allocates an fp32 gradient partition at step()


@pytest.mark.parametrize("zero, extra", [(0, 0), (1, 0), (2, 4), (3, 4)])
def test_deepspeed_fp32_gradient_partition(zero, extra):
    dp = 8
    shard = math.ceil(LLAMA2_7B / dp)
    rank = parallel("llama2-7b", Workload(seq_len=8), dp=dp, zero=zero).to_dict()["per_rank"]
    paper = {0: 2 * LLAMA2_7B, 1: 2 * LLAMA2_7B, 2: 2 * shard, 3: 2 * shard}[zero]
    assert rank["gradients"] == paper + extra * shard


# ---------------------------------------------------------------------------------------------
# Defect 4: a framework implies its activation profile and kernel; one set of defaults


def _inputs(args: list[str], capsys) -> dict:
    assert cli.main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_framework_implies_its_profile_and_kernel_unless_told(capsys):
    common = ["estimate", "--model", "llama2-7b", "--seq-len", "1024", "--tp", "2"]
    implied = _inputs(common + ["--framework", "megatron"], capsys)
    assert (implied["inputs"]["impl"], implied["inputs"]["attention"]) == ("megatron", "flash")
    told = _inputs(common + ["--framework", "megatron", "--impl", "hf", "--attention", "eager"], capsys)
    assert (told["inputs"]["impl"], told["inputs"]["attention"]) == ("hf", "eager")
    assert told["parallel"]["per_rank"]["activations"] > implied["parallel"]["per_rank"]["activations"]
    deepspeed = _inputs(common, capsys)  # a layout without --framework is DeepSpeed's
    assert (deepspeed["inputs"]["impl"], deepspeed["inputs"]["attention"]) == ("hf", "sdpa")
    alone = _inputs(["estimate", "--model", "llama2-7b", "--seq-len", "1024"], capsys)
    assert (alone["inputs"]["impl"], alone["inputs"]["attention"]) == ("hf", "eager")


def test_api_layout_implies_the_frameworks_code():
    import costmodel

    result = costmodel.estimate("llama2-7b", seq_len=1024, layout={"tp": 2, "framework": "megatron"})
    assert (result.workload.impl, result.workload.attention) == ("megatron", "flash")


def test_impl_help_names_megatron_and_commands_share_defaults(capsys):
    for command in ("estimate", "simulate", "plan"):
        assert cli.main([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "hf, reference or megatron" in text, command
        if command != "estimate":
            assert "[default: h100-sxm]" in text, command
