"""transformers' MoE block in a training step (costmodel/layout/hf_moe_loop.py): Qwen2MoeSparseMoeBlock's and
Qwen3MoeSparseMoeBlock's loop over every expert, a torch.where (a host sync) and the expert's own products each,
counted from transformers 4.51.3's code by validate/hf_moe_train_ops.py (kernel_facts.json "hf_moe_training_loop"),
charged where a run states impl hf with routed experts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from costmodel.kernel_shapes import Gemm
from costmodel.kernel_time import kernel_facts, kernels_seconds
from costmodel.layout import hf_moe_loop, sequential_mlp
from tests.unseen_rows import runs_of, train_setup_of
from validate import hf_moe_train_ops

ZERO2 = "ms-swift-deepspeed qwen1.5-moe-a2.7b zero2 8xa800"


def test_the_facts_are_the_counted_ops():
    """18 ops an expert forward (10 launch a kernel, 3 of them mm, 1 nonzero: the sync), 39 backward (20 kernels, 6
    mm, no sync): the per-op counts validate/hf_moe_train_ops.py measured and checks against PER_EXPERT."""
    facts, ops = kernel_facts()["hf_moe_training_loop"], hf_moe_train_ops.PER_EXPERT
    counted = (sum(ops["forward"].values()), sum(ops["backward"].values()))
    assert (facts["forward_ops"], facts["backward_ops"]) == counted == (18, 39)
    assert (facts["forward_kernels"], facts["backward_kernels"]) == (hf_moe_train_ops.kernels("forward"),
                                                                   hf_moe_train_ops.kernels("backward")) == (10, 20)
    assert (facts["forward_gemms"], facts["backward_gemms"]) == (ops["forward"]["mm"], ops["backward"]["mm"]) == (3, 6)
    assert (facts["forward_syncs"], facts["backward_syncs"]) == (ops["forward"]["nonzero"], 0) == (1, 0)
    assert "nonzero" not in ops["backward"]
    # the forward is the decode count of the same block (eager_step_ops "transformers-4.51": 18 ops, 1 sync an expert)
    entry = next(e for e in kernel_facts()["eager_step_ops"]["implementations"] if e["name"] == "transformers-4.51")
    assert (entry["ops"]["bf16"]["per_expert"], entry["ops"]["bf16"]["syncs_per_expert"]) == (18, 1)


def test_the_counting_script_refuses_another_transformers():
    import transformers

    assert transformers.__version__ != "4.51.3"  # the installed one runs grouped_mm (5.x): no loop to count
    done = subprocess.run([sys.executable, "-m", "validate.hf_moe_train_ops"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().startswith("error: transformers 4.51.3 must come first")


def test_it_applies_to_impl_hf_with_routed_experts_only():
    estimate, _, _ = train_setup_of(next(r for r in runs_of("ms-swift-deepspeed") if r["id"] == ZERO2))
    assert (estimate.workload.impl, estimate.cfg.n_experts, estimate.phase) == ("hf", 60, "train")
    assert hf_moe_loop.applies(estimate) and not sequential_mlp.applies(estimate)
    dense, _, _ = train_setup_of(runs_of("ms-swift-deepspeed")[0])  # Qwen2.5-14B: no experts
    assert dense.workload.impl == "hf" and not hf_moe_loop.applies(dense)
    megatron, _, _ = train_setup_of(next(r for r in runs_of("ms-swift-megatron") if "moe" in r["id"]))
    assert megatron.cfg.n_experts == 60 and not hf_moe_loop.applies(megatron)
    from types import SimpleNamespace as N

    def stub(framework: str, impl: str = "hf", phase: str = "train", experts: int = 60, grouped: bool = False) -> N:
        return N(phase=phase, cfg=N(n_experts=experts), workload=N(impl=impl),
                 layout=N(framework=framework, moe_grouped_gemm=grouped))
    assert hf_moe_loop.applies(stub("deepspeed"))
    # FSDP2's stacks here (torchtitan, AutoModel) run their own grouped experts; Megatron its own layers; decoding
    # has its own count (eager_step_ops); a dense model no loop; the default (grouped GEMMs: transformers 5) none
    for other in (stub("fsdp2"), stub("megatron"), stub("deepspeed", impl="megatron"),
                  stub("deepspeed", phase="decode"), stub("deepspeed", experts=0), stub("deepspeed", grouped=True)):
        assert not hf_moe_loop.applies(other)
    assert sequential_mlp.applies(stub("megatron", impl="megatron")) and not sequential_mlp.applies(stub("deepspeed"))


def test_the_default_keeps_the_grouped_gemms_and_other_frameworks_refuse_the_flag():
    """simulate --train of a MoE under DeepSpeed (impl hf) charges no loop unless --no-moe-grouped-gemm states
    transformers 4.x's blocks; FSDP2 refuses the flag in one line."""
    from click.testing import CliRunner

    from cli import cli as main

    base = ["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "a100-80gb", "--gpus", "8",
            "--framework", "deepspeed", "--zero", "3", "--seq-len", "4096", "--batch", "1", "--time-model", "kernels"]
    default = CliRunner().invoke(main, base + ["--json"])
    looped = CliRunner().invoke(main, base + ["--no-moe-grouped-gemm", "--json"])
    assert default.exit_code == 0 and looped.exit_code == 0, (default.output, looped.output)
    import json

    def step(out: str) -> float:
        return json.loads(out)["step"]["seconds"]
    assert step(looped.output) > 2 * step(default.output)  # 128 windows a layer's forward passes, host-bound
    text = CliRunner().invoke(main, base + ["--no-moe-grouped-gemm"])
    assert "the experts one after another (transformers 4.x's loop)" in text.output
    fsdp2 = [("fsdp2" if word == "deepspeed" else word) for word in base if word not in ("--zero", "3")]
    refused = CliRunner().invoke(main, fsdp2 + ["--no-moe-grouped-gemm"])
    assert refused.exit_code == 2 and "--no-moe-grouped-gemm is Megatron-Core's SequentialMLP" in refused.output
    other_code = CliRunner().invoke(main, base + ["--impl", "megatron", "--no-moe-grouped-gemm"])
    assert other_code.exit_code == 2 and other_code.output.strip().endswith(
        "the code of --impl hf; the impl is 'megatron'.")


def test_one_layer_of_the_zero2_row():
    """60 experts, 8,192 tokens x top 4 = 547 rows an expert (the tree's grouped Gemms, fused gate and up); full
    recomputation: two forward passes. Launches: 60 x (7 x 2 + 14) = 1,680; host: 2 x 60 windows of 18 ops at the
    A800's 7.1 us an op (the a100-80gb file's dispatch_s_per_op) less the window's GPU work."""
    from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
    from costmodel.layout.unfused import launch_seconds

    estimate, hardware, options = train_setup_of(next(r for r in runs_of("ms-swift-deepspeed") if r["id"] == ZERO2))
    step = KernelStepTime(estimate, hardware, overlap=options.get("overlap"))
    timer = step.timer
    entries = rank_kernels(estimate, timer.fused_attention, timer.compiled)
    experts = [(kernels, rerun) for (_, rerun, _, kernels), work in zip(entries, estimate.structure["work"])
               if work.get("experts")]
    assert len(experts) == 1
    kernels, rerun = experts[0]
    assert rerun and hf_moe_loop.forward_passes(rerun) == 2
    gemms = [k for k in kernels if isinstance(k, Gemm) and k.count > 1]
    assert [(g.m, g.n, g.k, g.count) for g in gemms] == [(547, 2816, 2048, 60), (547, 2048, 1408, 60)]
    assert hf_moe_loop.extra_launches(60, 2) == 1_680
    assert hardware.eager_op_s == 7.1e-06
    window = kernels_seconds([sequential_mlp.one_expert(g) for g in gemms], timer, False) + 7 * launch_seconds(hardware)
    assert hf_moe_loop.window_gpu_seconds(kernels, hardware, timer) == pytest.approx(window, rel=1e-12)
    host = 2 * 60 * max(0.0, 18 * 7.1e-06 - window)
    assert host > 0  # each window is host-bound: 127.8 us of ops against the expert's ~50 us of kernels
    expected = sequential_mlp.gemm_delta(kernels, rerun, timer) + 1_680 * launch_seconds(hardware) + host
    assert hf_moe_loop.layer_seconds(estimate, hardware, kernels, rerun, timer) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(FIRST_LAYER_S, rel=1e-4)


FIRST_LAYER_S = 0.0157787  # 24 layers x 2 micro-batches: 0.757 s of the step (1.929 -> 2.686 s)


def test_the_flag_under_deepspeed_with_another_impl_is_refused_under_the_roofline_too():
    """The refusal is the layout's (ParallelEstimate), not the kernel model's: session 36's roofline ran
    `--framework deepspeed --impl megatron --no-moe-grouped-gemm` as if the flag were not there."""
    from click.testing import CliRunner

    from cli import cli as main

    base = ["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "a100-80gb", "--gpus", "8",
            "--framework", "deepspeed", "--seq-len", "4096", "--batch", "1", "--time-model", "roofline",
            "--no-moe-grouped-gemm"]
    refused = CliRunner().invoke(main, base + ["--impl", "megatron"])
    assert refused.exit_code == 2 and refused.output.strip().endswith("the code of --impl hf; the impl is 'megatron'.")
    assert CliRunner().invoke(main, base).exit_code == 0  # impl hf: the roofline prices the tree's grouped kernels


@pytest.mark.parametrize("time_model", ["kernels", "roofline"])
def test_the_loop_beside_expert_parallelism_is_refused(time_model):
    """transformers' block holds and loops over all its experts on every rank (layer_seconds charges E of them);
    session 36 charged that loop at ep 2 too (the step 0.37 s -> 1.49 s on 8 H100s), beside a tree whose expert
    leaf the EP group divides."""
    from click.testing import CliRunner

    from cli import cli as main

    args = ["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--dp", "8", "--ep", "2",
            "--framework", "deepspeed", "--seq-len", "2048", "--batch", "1", "--time-model", time_model]
    assert CliRunner().invoke(main, args).exit_code == 0  # the grouped default: DeepSpeed-MoE's own layers
    refused = CliRunner().invoke(main, args + ["--no-moe-grouped-gemm"])
    assert refused.exit_code == 2 and refused.output.strip().endswith("no expert parallelism (ep 2).")
