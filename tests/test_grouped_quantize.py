"""costmodel/layout/grouped_quantize.py: Transformer Engine's GroupedLinear quantizing each expert's split on its
own (kernel_facts.json "te_grouped_linear_quantize", read in TE v2.7-v2.17's grouped_linear.py, cast.cpp and
quantizer.cpp), priced per kernel beyond one a call at layout/unfused.py's eager launch (session 34)."""

from __future__ import annotations

import pytest

from costmodel.kernel_rates import kernel_facts
from costmodel.layout import grouped_quantize
from costmodel.layout.host_syncs import moe_layers
from costmodel.layout.kernel_step import KernelStepTime
from costmodel.layout.unfused import launch_seconds
from reports.published_runs import other_runs_data, train_setup


def _setup(run_id: str):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return train_setup(run, data["sources"][run_id.split()[0]])


def test_the_facts_as_read():
    """Current scaling: amax, scale, cast a quantize (Float8CurrentScalingQuantizer::quantize_impl); MXFP8: one
    (MXFP8Quantizer::quantize); fc1's and fc2's input forward and output gradient backward a layer."""
    f = kernel_facts()["te_grouped_linear_quantize"]
    assert f["quantize_kernels"] == {"current": 3, "mxfp8": 1}
    assert f["calls_per_layer"] == {"forward": 2, "backward": 2} and f["saved_input_backward"] == 1
    assert "Quantize kernels individually" in f["source"] and "v2.16" in f["source"]


def test_the_kernels_a_layer_adds():
    """Qwen3 30B-A3B on 16 H100 under fp8_cs (EP 16: 8 experts a rank): 4 calls x 7 x 3 = 84 kernels; on 8 GB200
    in MXFP8 (EP 8: 16 a rank): 4 x 15 x 1 = 60; Nemotron 3 Nano on 16 H100 under fp8_cs with the MoE layer
    recomputed ('layernorm-moe-core-attn': the forward's two calls again), EP 8 of 128: 6 x 15 x 3 = 270."""
    qwen_h100, _, _ = _setup("megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100")
    qwen_gb200, _, _ = _setup("megatron-bridge-moe 26.04.01 qwen3-30b-a3b mxfp8 8xgb200")
    nano, _, _ = _setup("megatron-bridge-moe 26.04.01 nemotron-3-nano fp8 16xh100")
    assert nano.workload.recompute == "layernorm-moe-core-attn" and nano.cfg.n_experts // nano.layout.ep == 16
    assert [grouped_quantize.layer_kernels(e) for e in (qwen_h100, qwen_gb200, nano)] == [84, 60, 270]


def test_the_step_grows_by_the_launches():
    """The H100 row's step: 64 micro-batches x 48 MoE layers x 84 kernels x 5 us (10 us a block over 2 launches)
    = 1.290 s (23.803 s -> 25.093 s, 1.23x -> 1.17x of the published 29.26 s; 23.369 s since session 41 timed
    HybridEP across nodes at its README's measured H100 rates, layout/hybridep_rates.py)."""
    estimate, hardware, options = _setup("megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100")
    assert launch_seconds(hardware) == 5e-6 and moe_layers(estimate, estimate.stages[0]) == 48
    stage = grouped_quantize.stage_seconds(estimate, hardware, 48, options.get("moe_op_fuser", False))
    assert stage == pytest.approx(48 * 84 * 5e-6)
    step = KernelStepTime(estimate, hardware, **options).step()
    assert round(step["seconds"], 3) == 23.307 and estimate.layout.microbatches == 64  # 23.369 before session 43 (wt43_review)
    assert round(64 * stage, 3) == 1.290


@pytest.mark.parametrize("run_id, why", [
    ("megatron-bridge-moe 26.06 qwen3-30b-a3b mxfp8 8xgb200", "the op fuser's fused grouped MLP"),
    ("megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xh100", "no FP8 recipe"),
    ("megatron-bridge-moe 26.04.01 nemotron-3-super nvfp4 64xgb200", "NVFP4's one fused split quantize"),
    ("automodel-moe qwen3-30b-a3b ep8 8xh100", "not Megatron-Core"),
])
def test_where_it_does_not_apply(run_id, why):
    estimate, hardware, options = _setup(run_id)
    op_fuser = options.get("moe_op_fuser", False)
    assert not grouped_quantize.applies(estimate, op_fuser), why
    assert grouped_quantize.stage_seconds(estimate, hardware, 10, op_fuser) == 0.0


def test_the_conditions_one_by_one():
    """Each condition of applies on a stand-in: Megatron-Core training, GroupedLinear (not SequentialMLP), a
    listed recipe, more than one local expert, no op fuser; the forward's calls twice under full recomputation, one
    more backward call where the activation is recomputed."""
    from types import SimpleNamespace as NS

    def stub(**change):
        layout = dict(framework="megatron", moe_grouped_gemm=True, fp8="mxfp8", ep=4)
        layout.update({k: v for k, v in change.items() if k in layout})
        return NS(phase=change.get("phase", "train"), cfg=NS(n_experts=8, n_layers=4),
                  layout=NS(**layout), workload=NS(recompute=change.get("recompute", "none"), recompute_layers=None))

    assert grouped_quantize.applies(stub(), False) and grouped_quantize.layer_kernels(stub()) == 4 * 1 * 1
    assert grouped_quantize.layer_kernels(stub(recompute="full")) == 6 * 1 * 1
    assert grouped_quantize.layer_kernels(stub(recompute="layernorm-moe-act")) == 5 * 1 * 1  # fc2's saved input
    assert grouped_quantize.layer_kernels(stub(fp8="current", ep=2)) == 4 * 3 * 3
    for changed in (dict(ep=8), dict(fp8="delayed"), dict(fp8="nvfp4"), dict(fp8=None), dict(phase="decode"),
                    dict(framework="fsdp2"), dict(moe_grouped_gemm=False)):
        assert not grouped_quantize.applies(stub(**changed), False), changed
    assert not grouped_quantize.applies(stub(), True)
