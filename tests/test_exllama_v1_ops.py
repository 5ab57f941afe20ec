"""ExLlama v1's decode step priced by its counted host calls (kernel_facts.json eager_step_ops "exllama-v1",
validate/exllama_v1_ops.py): the count re-measured from the code where its git directory is here, a step's ops from
the table, the borrowed host time they take on the RTX 4090, and the exllama-v1 rows' code."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodel.eager_ops import step_ops
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from validate.exllama_v1_ops import COMMIT, DEFAULT_REPO, count

GPTQ = {"weight_dtype": "int4", "weight_group": 128}
HERE = pytest.mark.skipif(not Path(DEFAULT_REPO).exists(), reason="no ExLlama git directory (the library's fetch)")


@HERE
def test_the_code_at_the_commit_issues_28_calls_a_layer_and_18_a_step():
    counted = count(DEFAULT_REPO, COMMIT)
    assert (counted["per_layer"], counted["per_step"]) == (28, 18)
    layer = counted["by_op"]
    assert (layer["exllama_ext.q4_attn"], layer["exllama_ext.q4_attn_2"], layer["exllama_ext.q4_mlp"]) == (1, 1, 1)
    assert (layer["bmm"], layer["_softmax"], layer["empty"], layer["view"], layer["slice"]) == (2, 1, 3, 7, 2)
    step = counted["step_by_op"]
    assert (step["_to_copy"], step["argmax"], step["embedding"], step["mm"]) == (3, 1, 1, 1)


@HERE
def test_the_last_readme_commit_narrows_the_cache_twice_more():
    counted = count(DEFAULT_REPO, "30d8051")
    assert (counted["per_layer"], counted["per_step"]) == (30, 19) and counted["by_op"]["slice"] == 4


def test_a_step_is_its_layers_calls_and_the_steps_own():
    assert step_ops(load_preset("llama-7b"), "exllama-v1", "fp16", "flash", "static", GPTQ) == 28 * 32 + 18  # 914
    assert step_ops(load_preset("llama-13b"), "exllama-v1", "fp16", "flash", "static", GPTQ) == 28 * 40 + 18
    assert step_ops(load_preset("llama-30b"), "exllama-v1", "fp16", "eager", "static", GPTQ) == 28 * 60 + 18


def test_only_the_counted_code_and_weights_keep_the_count():
    cfg = load_preset("llama-7b")
    assert step_ops(cfg, "exllama-v1", "fp16", "flash", "static", {**GPTQ, "quant_layout": "awq-gemm"}) is None
    assert step_ops(cfg, "exllama-v1", "fp16", "flash", "dynamic", GPTQ) is None
    assert step_ops(load_preset("falcon-7b"), "exllama-v1", "fp16", "flash", "static", GPTQ) is None
    assert step_ops(cfg, "tensorrt-llm", "fp16", "flash", "static", GPTQ) is None


def test_the_rtx_4090_borrows_the_h200_host_for_the_step():
    rtx = load_hardware("rtx-4090")
    assert rtx.host_op_borrowed and rtx.eager_op_s == pytest.approx(6.545241752576789e-06, rel=1e-12)
    assert 914 * rtx.eager_op_s == pytest.approx(5.9823e-3, rel=1e-4)


def test_the_exllama_v1_rows_run_the_counted_code():
    from reports.published_decode import decode_setup
    from reports.published_runs import other_runs_data
    from validate.time_breakdown import decode_step_split

    data = other_runs_data()
    source = data["sources"]["exllama-v1"]
    run = next(run for run in data["runs"] if run["id"] == "exllama-v1 7b g128 best rtx4090")
    assert decode_setup(run, source)[2]["implementation"] == "exllama-v1"
    split = decode_step_split(run, source, context=4 + 64)
    assert split["host (eager ops, alongside)"] == pytest.approx(914 * 6.545241752576789e-06, rel=1e-9)


# wt46_eagerhost (session 46): the exllama-2562100 rows' code, ExLlama as an nn.Module with q4v2 kernels (not priced)
@HERE
def test_the_2562100_code_issues_89_calls_a_layer_117_with_act_order_and_20_a_step():
    from validate.exllama_v1_ops import MODULE_COMMIT, count_module_era, cpu_upcasts

    assert cpu_upcasts() == 5  # torch 2.13's CPU math attention: q, k, v, the mask to fp32 and the output back
    plain, act = count_module_era(DEFAULT_REPO, MODULE_COMMIT), count_module_era(DEFAULT_REPO, MODULE_COMMIT, True)
    assert (plain["per_layer"], plain["per_step"]) == (89, 20)
    layer = plain["by_op"]
    # 7 Ex4bitLinear (q, k, v, o, gate, up, down) at one row: view, zeros, q4v2_matmul, reshape's view each
    assert (layer["exllama_ext.q4v2_matmul"], layer["exllama_ext.rms_norm"], layer["zeros"]) == (7, 2, 9)
    # sdpa's math path with the buffer's mask: 2 mul, 2 bmm with their expands, the mask's add, softmax
    assert (layer["bmm"], layer["expand"], layer["_safe_softmax"], layer["slice"], layer["mul_"]) == (2, 4, 1, 10, 5)
    assert "_to_copy" not in layer and plain["step_by_op"]["_to_copy"] == 3  # the two moves and logits.float()
    # act-order: each product first remaps the activation's columns (view, empty_like, column_remap, reshape's view)
    assert act["per_layer"] == 89 + 7 * 4 and act["by_op"]["exllama_ext.column_remap"] == 7
    assert act["per_step"] == 20
