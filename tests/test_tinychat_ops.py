"""TinyChat's W4A16 Llama decode step priced by its counted host calls (kernel_facts.json eager_step_ops
"tinychat-llama", validate/tinychat_ops.py): the count re-measured from the code where its git directory is here, a
step's ops from the table, and the tinychat-b76fab6 Llama INT4 rows' code; TinyChat's own MPT and Falcon models the same
way ("tinychat-mpt-falcon", count_model; wt45_eagerhost)."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodel.eager_ops import step_ops
from costmodel.kernel_facts_file import fuses_qkv
from costmodel.presets import load_preset
from validate.host_calls import INDEX_MOVE
from validate.tinychat_ops import COMMIT, DEFAULT_REPO, count, count_model

AWQ = {"weight_dtype": "int4", "weight_group": 128}
HERE = pytest.mark.skipif(not Path(DEFAULT_REPO).exists(), reason="no llm-awq git directory (the library's fetch)")


@HERE
def test_the_code_at_the_commit_issues_22_calls_a_layer_and_10_a_step():
    counted = count(DEFAULT_REPO, COMMIT)
    assert (counted["per_layer"], counted["per_step"]) == (22, 10)  # was 8 before host_calls' one rule for composite ops
    layer = counted["by_op"]
    assert (layer["awq_inference_engine.gemv_forward_cuda_new"], layer["awq_inference_engine.layernorm_forward_cuda"],
            layer["awq_inference_engine.single_query_attention"], layer["slice"], layer["add"]) == (5, 2, 1, 3, 2)
    # wt46_eagerhost: lm_head's nn.Linear as t, view, mm, _unsafe_view (was one aten::linear under the code's
    # inference_mode), output.float() as _to_copy and freqs_cis.to(h.device) as nothing (were 2 aten::to)
    assert counted["step_by_op"] == {"awq_inference_engine.layernorm_forward_cuda": 1, "embedding": 1, "empty_like": 1,
                                     "lift_fresh": 1, "t": 1, "view": 1, "mm": 1, "_unsafe_view": 1, "slice": 1,
                                     "_to_copy": 1}


@HERE
def test_grouped_key_value_heads_issue_the_same_calls():
    assert count(DEFAULT_REPO, COMMIT, kv_heads=1)["per_layer"] == 22


def test_a_step_is_its_layers_calls_and_the_steps_own():
    assert step_ops(load_preset("llama2-7b"), "tinychat-llama", "fp16", "flash", "static", AWQ) == 22 * 32 + 10  # 714, was 712
    assert step_ops(load_preset("llama3-8b"), "tinychat-llama", "fp16", "flash", "static", AWQ) == 22 * 32 + 10
    assert step_ops(load_preset("llama2-13b"), "tinychat-llama", "fp16", "flash", "static", AWQ) == 22 * 40 + 10
    assert step_ops(load_preset("mpt-7b"), "tinychat-llama", "fp16", "flash", "static", AWQ) is None
    assert step_ops(load_preset("llama2-7b"), "tinychat-llama", "fp16", "flash", "static",
                    {**AWQ, "quant_layout": "awq-gemm"}) is None
    assert fuses_qkv("tinychat-llama") and not fuses_qkv("exllama-v1")


def test_the_llama_int4_rows_run_the_counted_code():
    from reports.published_decode import decode_setup
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    source = data["sources"]["tinychat-b76fab6"]
    codes = {run["id"]: decode_setup(run, source)[2]["implementation"] for run in data["runs"]
             if run["id"].startswith("tinychat-b76fab6 tinychat ")}
    assert sorted(rid for rid, code in codes.items() if code == "tinychat-llama") == sorted(
        f"tinychat-b76fab6 tinychat {model} int4 {gpu}" for model in ("llama3-8b", "llama2-7b", "llama2-13b")
        for gpu in ("a6000", "4090"))
    # wt45_eagerhost: MPT's and Falcon's INT4 rows run their own counted models (tinychat-mpt-falcon; was tensorrt-llm)
    assert sorted(rid for rid, code in codes.items() if code == "tinychat-mpt-falcon") == sorted(
        f"tinychat-b76fab6 tinychat {model} int4 {gpu}" for model in ("mpt-7b", "mpt-30b", "falcon-7b")
        for gpu in ("a6000", "4090"))


# wt45_eagerhost (session 45): TinyChat's own MPT and Falcon models (load_awq_model's WQLinears, their fused attention)
@pytest.mark.skipif(not Path(DEFAULT_REPO).exists(), reason="no llm-awq git directory (the library's fetch)")
def test_tinychats_mpt_and_falcon_issue_18_and_21_calls_a_layer():
    mpt = count_model("mpt")
    assert (mpt["per_layer"], mpt["per_step"]) == (18, 8)  # was (19, 5) before host_calls' one rule for composites
    assert mpt["by_op"]["awq_inference_engine.gemv_forward_cuda_new"] == 4 and mpt["by_op"]["select"] == 3
    # alibi_slopes.float() on fp32 slopes dispatches nothing (was one aten::to as inference_mode showed it)
    assert "to" not in mpt["by_op"] and "_to_copy" not in mpt["by_op"] and mpt["by_op"]["native_layer_norm"] == 2
    falcon = count_model("falcon")
    assert (falcon["per_layer"], falcon["per_step"]) == (21, 8)  # was (21, 5)
    # xqkv[:, :, [-2]] and [[-1]]: aten::index with a CPU list tensor, moved to the GPU there (host_calls.device_moves)
    assert falcon["by_op"]["index"] == 2 and falcon["by_op"][INDEX_MOVE] == 2
    assert mpt["step_by_op"] == falcon["step_by_op"] == {"embedding": 1, "native_layer_norm": 1, "lift_fresh": 1,
                                                          "t": 1, "view": 1, "mm": 1, "_unsafe_view": 1, "_to_copy": 1}
    with pytest.raises(ValueError, match="family must be one of mpt, falcon, not 'llama'"):
        count_model("llama")


def test_the_mpt_and_falcon_steps_from_the_table():
    assert step_ops(load_preset("mpt-7b"), "tinychat-mpt-falcon", "fp16", "flash", "static", AWQ) == 18 * 32 + 8  # 584, was 19 * 32 + 5 = 613
    assert step_ops(load_preset("mpt-30b"), "tinychat-mpt-falcon", "fp16", "flash", "static", AWQ) == 18 * 48 + 8
    assert step_ops(load_preset("falcon-7b"), "tinychat-mpt-falcon", "fp16", "flash", "static", AWQ) == 21 * 32 + 8
    assert step_ops(load_preset("falcon-40b"), "tinychat-mpt-falcon", "fp16", "flash", "static", AWQ) is None
    assert step_ops(load_preset("llama2-7b"), "tinychat-mpt-falcon", "fp16", "flash", "static", AWQ) is None
