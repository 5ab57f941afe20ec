"""Defects a new user hit in session 39's round (wt39_user): plan's settings, fit verdicts for quantized
checkpoints, --json on every command, and the docs beside the output. Each test failed before its fix."""

from __future__ import annotations

from tests.cli_run import one_error_line, run_json, run_main

# ---------------------------------------------------------------------------------------------
# 1. plan had no --pure-precision (simulate's and estimate's layout option since session 38)

PLAN = ["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--seq-len", "4096",
        "--global-batch", "64"]
PURE = ["--framework", "fsdp2", "--zero", "2", "--batch", "2", "--recompute", "none", "--pure-precision"]


def test_plan_takes_pure_precision_and_its_row_is_simulates(capsys):
    """`plan ... --pure-precision` said "No such option". Now every candidate trains FSDP2's bf16 model so:
    Llama 3 8B (8,030,261,248 parameters) over dp 8 at ZeRO 2 holds 2 bytes of weights, 2 of gradients and
    4 of AdamW moments a parameter, / 8: 2,007,565,312 + 2,007,565,312 + 4,015,130,624 bytes, and the row's
    step time is simulate's with that layout to the float."""
    plan = run_json([*PLAN, *PURE], capsys)
    row = plan["feasible"][0]
    assert row["layout"]["pure_precision"] is True and plan["inputs"]["pure_precision"] is True
    assert (row["per_rank"]["weights"], row["per_rank"]["gradients"], row["per_rank"]["optimizer"]) == (
        2_007_565_312, 2_007_565_312, 4_015_130_624)
    simulated = run_json(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--gpus", "8",
                          "--seq-len", "4096", "--batch", "2", "--microbatches", "4", "--framework", "fsdp2",
                          "--zero", "2", "--pure-precision"], capsys)
    assert row["step_time"] == simulated["step"]["seconds"]
    code, out, _ = run_main([*PLAN, *PURE, "--top", "1"], capsys)
    assert code == 0 and out.splitlines()[0].startswith("llama3-8b on 8 x h100-sxm, bf16, pure precision:")


def test_plan_refuses_pure_precision_in_one_line_where_no_layout_takes_it(capsys):
    """Without --framework fsdp2 (plan's default candidates are megatron's), with --dtype fp32, and with
    --serve: one line each, before the search."""
    assert "add --framework fsdp2" in one_error_line([*PLAN, "--pure-precision"], capsys)
    assert "megatron keeps an fp32 master" in one_error_line([*PLAN, "--pure-precision", "--framework", "megatron"],
                                                             capsys)
    assert "in fp32 every copy is fp32 already" in one_error_line(
        [*PLAN, "--pure-precision", "--framework", "fsdp2", "--dtype", "fp32"], capsys)
    assert "--pure-precision: training options" in one_error_line(
        ["plan", "--model", "llama3-8b", "--gpus", "8", "--serve", "--pure-precision"], capsys)


def test_plan_header_names_the_gradient_reduce_dtype(capsys):
    """--grad-reduce-dtype bf16 is a setting of every layout, as the FP8 ones the header named; it was left out."""
    code, out, _ = run_main([*PLAN, "--framework", "megatron", "--grad-reduce-dtype", "bf16", "--top", "1"], capsys)
    assert code == 0 and out.splitlines()[0].startswith("llama3-8b on 8 x h100-sxm, bf16, gradients reduced in bf16:")
