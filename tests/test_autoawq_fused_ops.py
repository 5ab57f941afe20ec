"""AutoAWQ's fused decode step priced by its counted host calls (kernel_facts.json eager_step_ops
"autoawq-fused", validate/autoawq_fused_ops.py): the count re-measured from the code where its git
directory is here, the step's ops from the table, and the host time they take on the A100."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodel.eager_ops import step_ops
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from validate.autoawq_fused_ops import COMMIT, DEFAULT_REPO, FOUNDRY_REPO, count, count_blocks

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


# wt45_eagerhost (session 45): AutoAWQ's fused models at d6ac3be (the autoawq-d6ac3be rows' README commit): its own
# MPT and Falcon models counted by count_blocks (MPT's remote-code MLP and norms from llm-foundry v0.2.0), its Llama
# (transformers 4.34.1's model around the fused modules) by count_hf_llama
@pytest.mark.skipif(not (Path(DEFAULT_REPO).exists() and Path(FOUNDRY_REPO).exists()),
                    reason="no AutoAWQ or llm-foundry git directory (the library's fetch)")
def test_the_mpt_block_at_d6ac3be_issues_27_calls_and_the_step_9():
    counted = count_blocks("mpt")
    assert counted["per_layer"] == 27 and counted["per_step_model"] == 9
    assert counted["by_op"]["awq_ext.gemm_forward_cuda"] == 4  # Wqkv, out_proj, up_proj, down_proj
    assert counted["by_op"]["select"] == 3 and counted["by_op"]["layer_norm"] == 2 and "index" not in counted["by_op"]
    # the head's nn.Linear (t, view as reshape, mm, _unsafe_view), the embedding, norm_f, the token's select, max, unsqueeze
    assert counted["model_by_op"] == {"_unsafe_view": 1, "embedding": 1, "layer_norm": 1, "max": 1, "mm": 1,
                                      "reshape": 1, "select": 1, "t": 1, "unsqueeze": 1}
    gemv = count_blocks("mpt", version="GEMV")["by_op"]
    assert gemv["awq_ext.gemv_forward_cuda"] == 4 and sum(gemv.values()) == 27


@pytest.mark.skipif(not Path(DEFAULT_REPO).exists(), reason="no AutoAWQ git directory (the library's fetch)")
def test_falcon_7bs_list_indices_cost_a_move_each_on_the_gpu():
    counted = count_blocks("falcon")
    assert counted["per_layer"] == 30 and counted["per_step_model"] == 9
    # xqkv[:, :, [-2]] and [[-1]]: two aten::index, their lists' lift_fresh, and the device move each
    assert counted["by_op"]["index"] == 2 and counted["by_op"]["_to_copy (index's list to the GPU)"] == 2
    assert counted["by_op"]["lift_fresh"] == 3 and counted["by_op"]["layer_norm"] == 1  # one input_layernorm
    with pytest.raises(ValueError, match="block must be mpt or falcon, not 'llama'"):
        count_blocks("llama")


def test_the_d6ac3be_entries_price_mpt_and_falcon_7b_only():
    mpt, falcon = load_preset("mpt-7b"), load_preset("falcon-7b")
    assert step_ops(mpt, "autoawq-fused-d6ac3be", "fp16", "eager", "static", AWQ) == 27 * 32 + 9  # 873
    assert step_ops(mpt, "autoawq-fused-d6ac3be", "fp16", "eager", "static",
                    {**AWQ, "quant_layout": "awq-gemv"}) == 873
    assert step_ops(falcon, "autoawq-fused-d6ac3be", "fp16", "eager", "static", AWQ) == 30 * 32 + 9  # 969
    # Falcon 40B's new decoder (ln_attn and ln_mlp, 8 KV heads) and Mistral (no row at d6ac3be) are not counted
    assert step_ops(load_preset("falcon-40b"), "autoawq-fused-d6ac3be", "fp16", "eager", "static", AWQ) is None
    assert step_ops(load_preset("mistral-7b"), "autoawq-fused-d6ac3be", "fp16", "eager", "static", AWQ) is None
    # the RTX 3090's file states no host time: the borrowed H200 host's 6.55 us a call, 5.72 ms for MPT's 873
    rtx3090 = load_hardware("rtx-3090")
    assert rtx3090.host_op_borrowed and 873 * rtx3090.eager_op_s == pytest.approx(5.718e-3, rel=1e-3)


def test_the_d6ac3be_rows_run_the_counted_code():
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    assert data["sources"]["autoawq-d6ac3be"]["implementation"] == "autoawq-fused-d6ac3be"
    rows = [run for run in data["runs"] if run["id"].startswith("autoawq-d6ac3be ")]
    assert len(rows) == 15 and all("implementation" not in run for run in rows)  # the source's, every row
    assert sorted({run["model"] for run in rows}) == ["falcon-7b", "llama2-7b", "mpt-7b"]


def test_the_hf_llama_count_as_printed_under_transformers_4_34_1():
    """validate/autoawq_fused_ops_hf434.json: count_hf_llama's output (transformers 4.34.1 is not installed here;
    the file says how it was run), the integers the table states."""
    import json

    printed = json.loads((Path(__file__).parent.parent / "validate" / "autoawq_fused_ops_hf434.json").read_text())
    for version, kernel in (("GEMM", "awq_ext.gemm_forward_cuda"), ("GEMV", "awq_ext.gemv_forward_cuda")):
        counted = printed[version]
        assert (counted["per_layer"], counted["per_step_model"]) == (31, 23)
        assert counted["by_op"][kernel] == 5 and sum(counted["by_op"].values()) == 31
        assert counted["model_by_op"]["_to_copy"] == 3  # _expand_mask's .to(dtype) and .to(torch.bool), logits.float()
    assert step_ops(load_preset("llama2-7b"), "autoawq-fused-d6ac3be", "fp16", "eager", "static", AWQ) == 31 * 32 + 23
