"""plan under the kernel-level time model: the same step time as KernelStepTime for each layout,
the rank's kernels cached in the process and on disk (a warm plan imports no sympy), and the
one communication model under both time models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.collectives import collective_seconds
from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, Gemm
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout import kernel_step, rank_kernel_cache
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
from costmodel.layout.overlap import framework_overlap
from costmodel.layout.plan import plan_serving, plan_training
from costmodel.layout.time import StepTime
from costmodel.presets import load_preset

ROOT = Path(__file__).resolve().parent.parent


def _fresh(monkeypatch, tmp_path) -> None:
    """An empty disk cache and empty process memos (the module's own restored after the test)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(rank_kernel_cache, "_RANK_KERNELS", {})
    monkeypatch.setattr(kernel_step, "_PARTS", {})


@pytest.mark.slow
def test_plan_under_the_kernel_model_times_each_layout_as_kernel_step_time(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    cfg, hardware = load_preset("llama2-7b"), load_hardware("a100-80gb")
    workload = Workload(seq_len=2048, attention="sdpa")
    result = plan_training(cfg, hardware, 8, 2048, 64, workload, {"framework": "megatron", "recompute": "selective"},
                           time_model="kernels")
    assert result["feasible"]
    for entry in result["feasible"][:5]:
        layout = entry["layout"]
        # each layout runs the activation profile and kernel its framework implies (megatron, flash)
        chosen = Workload(seq_len=2048, attention=layout["attention"], impl=layout["impl"], batch=layout["batch"],
                          recompute=layout["recompute"])
        estimate = ParallelEstimate(cfg, chosen, Layout(**{k: v for k, v in layout.items()
                                                           if k not in ("batch", "recompute", "impl", "attention")}))
        # under the framework's overlap (megatron's interleaved schedule hides its sends: plan_overlap)
        direct = KernelStepTime(estimate, hardware, overlap=framework_overlap(estimate.layout)).step()["seconds"]
        assert entry["step_time"] == direct  # the cached kernels give the tree's figure exactly
    roofline = plan_training(cfg, hardware, 8, 2048, 64, workload,
                             {"framework": "megatron", "recompute": "selective"}, time_model="roofline")
    assert {json.dumps(e["layout"], sort_keys=True) for e in roofline["feasible"]} == \
        {json.dumps(e["layout"], sort_keys=True) for e in result["feasible"]}


def test_a_rank_s_kernels_read_back_from_disk_equal_the_tree_s(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    cfg = load_preset("llama2-7b")
    estimate = ParallelEstimate(cfg, Workload(seq_len=2048, attention="sdpa", batch=2),
                                Layout(tp=2, dp=4, sp=True, framework="megatron"))
    built = rank_kernels(estimate, True, False)
    files = list((tmp_path / "transformer-costmodel" / "compiled").glob("kernels_*.json"))
    assert len(files) == 1
    rank_kernel_cache._RANK_KERNELS.clear()
    assert rank_kernels(estimate, True, False) == built  # from the file, not the tree
    # One rank of tp 2: Q, K and V each a GEMM of M = 2 x 2048 tokens, N = 32 x 128 / 2, K = 4096;
    # the fused attention call over 16 of the 32 heads.
    kernels = [k for _, _, _, run in built for k in run]
    assert kernels.count(Gemm(4096, 2048, 4096)) == 3  # q, k, v (the output projection is 4096 x 2048)
    assert AttentionCall(2, 16, 2048, 2048, 128, True, None, 128, kv_heads=16) in kernels  # 32 KV heads / 2
    # pp, dp and the ZeRO stage do not change a rank's kernels: one entry serves them all.
    other = ParallelEstimate(cfg, Workload(seq_len=2048, attention="sdpa", batch=2),
                             Layout(tp=2, pp=2, dp=2, sp=True, zero=1, microbatches=4, framework="megatron"))
    assert rank_kernels(other, True, False) is rank_kernels(estimate, True, False)


@pytest.mark.slow
def test_a_warm_kernel_plan_imports_no_sympy(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    args = ["plan", "--model", "llama2-7b", "--hardware", "a100-80gb", "--gpus", "8", "--seq-len", "2048",
            "--framework", "megatron", "--recompute", "none", "--time-model", "kernels", "--json"]
    code = ("import sys, cli\ntry:\n    cli.main(%r)\nexcept SystemExit:\n    pass\n"
            "print('SYMPY', 'sympy' in sys.modules)" % args)
    first = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    warm = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.stdout.strip().endswith("SYMPY True"), first.stderr
    assert warm.stdout.strip().endswith("SYMPY False"), warm.stderr
    strip = lambda out: out.rsplit("SYMPY", 1)[0]
    assert json.loads(strip(warm.stdout))["feasible"] == json.loads(strip(first.stdout))["feasible"]


def test_plan_serve_under_the_kernel_model():
    cfg, hardware = load_preset("llama2-70b"), load_hardware("a100-80gb")
    result = plan_serving(cfg, hardware, 8, 32, 2048, 256, "bf16", {"tp": 8}, kv_cache="static",
                          time_model="kernels")
    (entry,) = result["feasible"]
    workload = Workload(seq_len=2048, gen_tokens=256, batch=32, precision="pure", attention="sdpa",
                        kv_cache="static")
    estimate = ParallelEstimate(cfg, workload, Layout(tp=8, framework="deepspeed"), phase="decode")
    # the step at context prompt + gen (the memory's); the mean over the steps: tests/test_plan_serve_tpot.py
    assert entry["last_step"]["seconds"] == KernelStepTime(estimate, hardware).token()["seconds_per_token"]
    # The all-reduces are the same under both time models (one communication model).
    assert entry["tp_all_reduce_seconds"] == StepTime(estimate, hardware).token()["tp_all_reduce_seconds"]


def test_both_time_models_send_a_cross_node_all_reduce_hierarchically():
    """Llama-2-7B, dp 16 over two 8-GPU A100 nodes: the gradient all-reduce is collectives.py's
    (reduce-scatter in the node, 1/8 of the payload across at 73% of the NIC, all-gather), the
    same seconds under the roofline and the kernel model."""
    cfg, hardware = load_preset("llama2-7b"), load_hardware("a100-80gb")
    estimate = ParallelEstimate(cfg, Workload(seq_len=2048, attention="sdpa"), Layout(dp=16, framework="megatron"))
    payload = 2 * 6738415616  # bf16 gradients of every parameter
    expected = collective_seconds(hardware, "all_reduce", payload, 16, 16)
    assert expected > collective_seconds(hardware, "all_reduce", payload, 8, 8)
    for timing in (StepTime(estimate, hardware), KernelStepTime(estimate, hardware)):
        assert timing.collective("dp", "all_reduce", payload) == pytest.approx(expected, rel=1e-12)


def test_the_kernel_model_is_the_default_where_the_hardware_has_sm_count():
    from dataclasses import replace

    from costmodel.config import ConfigError
    from costmodel.hardware import DEFAULT_TIME_MODEL, time_model_for

    a100 = load_hardware("a100-80gb")
    assert DEFAULT_TIME_MODEL == "kernels" and time_model_for(a100) == "kernels"
    assert time_model_for(a100, "roofline") == "roofline"
    no_sms = replace(a100, sm_count=0)  # a user file without sm_count: the roofline, said in the output
    assert time_model_for(no_sms) == "roofline"
    with pytest.raises(ConfigError, match="time model must be one of roofline, kernels"):
        time_model_for(a100, "fast")
    cfg = load_preset("llama2-7b")
    result = plan_serving(cfg, a100, 2, 8, 512, 32, "bf16", {"tp": 2})
    assert result["time_model"] == "kernels"
    assert plan_serving(cfg, no_sms, 2, 8, 512, 32, "bf16", {"tp": 2})["time_model"] == "roofline"
