"""AutoAWQ's fused decode step priced by its counted host calls (kernel_facts.json eager_step_ops
"autoawq-fused", validate/autoawq_fused_ops.py): the count re-measured from the code where its git
directory is here, the step's ops from the table, and the host time they take on the A100."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodel.eager_ops import step_ops
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from validate.autoawq_fused_ops import COMMIT, DEFAULT_REPO, count

AWQ = {"weight_dtype": "int4", "quant_layout": "awq-gemm", "weight_group": 128}


@pytest.mark.skipif(not Path(DEFAULT_REPO).exists(), reason="no AutoAWQ git directory (the library's fetch)")
def test_the_code_at_the_commit_issues_33_calls_a_layer():
    counted = count(DEFAULT_REPO, COMMIT)
    assert counted["per_layer"] == 33
    assert counted["by_op"]["awq_ext.gemm_forward_cuda"] == 5 and counted["by_op"]["reshape"] == 9
    assert counted["per_step_model"] == 3  # embedding, the final norm's empty_like and kernel
    gemv = count(DEFAULT_REPO, COMMIT, "GEMV")["by_op"]
    assert gemv["awq_ext.gemv_forward_cuda"] == 5 and sum(gemv.values()) == 33


@pytest.mark.skipif(not Path(DEFAULT_REPO).exists(), reason="no AutoAWQ git directory (the library's fetch)")
def test_version_0_1_6_issues_two_fewer_moves_and_one_more_tensor():
    counted = count(DEFAULT_REPO, "5c7e368")
    assert counted["per_layer"] == 31 and "to" not in counted["by_op"] and counted["by_op"]["lift_fresh"] == 1


def test_a_llama2_7b_step_is_its_layers_calls_and_the_steps_own():
    cfg = load_preset("llama2-7b")
    assert step_ops(cfg, "autoawq-fused", "fp16", "eager", "static", AWQ) == 33 * 32 + 8  # 1,064
    assert step_ops(cfg, "autoawq-fused-0.1.6", "fp16", "eager", "static",
                    {**AWQ, "quant_layout": "awq-gemv"}) == 31 * 32 + 8  # 1,000
    assert step_ops(load_preset("mistral-7b"), "autoawq-fused", "fp16", "eager", "static", AWQ) == 33 * 32 + 8


def test_only_the_counted_modules_keep_the_count():
    cfg = load_preset("llama2-7b")
    assert step_ops(cfg, "autoawq-fused", "fp16", "eager", "static", {**AWQ, "quant_layout": "gptq"}) is None
    assert step_ops(load_preset("falcon-7b"), "autoawq-fused-0.1.6", "fp16", "eager", "static", AWQ) is None
    assert step_ops(cfg, "autoawq-fused", "fp16", "eager", "dynamic", AWQ) is None
    assert step_ops(cfg, "tensorrt-llm", "fp16", "eager", "static", AWQ) is None


def test_the_a100_host_prices_the_step_at_its_measured_op_time():
    a100 = load_hardware("a100-80gb")
    ops = step_ops(load_preset("llama2-7b"), "autoawq-fused", "fp16", "eager", "static", AWQ)
    assert a100.eager_op_s == pytest.approx(7.1e-6) and not a100.host_op_borrowed
    assert ops * a100.eager_op_s == pytest.approx(7.5544e-3)
