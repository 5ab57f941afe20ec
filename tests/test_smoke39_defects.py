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


# ---------------------------------------------------------------------------------------------
# 2. A fit verdict that only a quantized weight format makes said "fits" and nothing of the format

GPT_OSS = ["estimate", "--model", "gpt-oss-120b", "--hardware", "h100-sxm"]


def test_an_inference_fit_in_the_checkpoints_format_names_it_and_the_unquantized_need(capsys):
    """gpt-oss-120b on one H100 read "61.91 GiB per GPU fits in 70.79 GiB.": its MXFP4 experts (the config's
    quantization_config) make it fit; in bf16 it needs 234,883,066,752 bytes (the figure `--weight-dtype none`
    prints). Now the line and the JSON say both."""
    fit = run_json(GPT_OSS, capsys)["fit"]["inference"]
    assert fit["memory"] == 66_473_569_152 and fit["fits"]
    assert fit["weights"] == {"dtype": "mxfp4", "source": "checkpoint", "unquantized_memory": 234_883_066_752,
                              "unquantized_fits": False}
    assert run_json([*GPT_OSS, "--weight-dtype", "none"], capsys)["fit"]["inference"]["memory"] == 234_883_066_752
    _, out, _ = run_main(GPT_OSS, capsys)
    assert ("Inference on 1 h100-sxm GPU: 61.91 GiB per GPU fits in 70.79 GiB, its weights the checkpoint's mxfp4; "
            "unquantized (--weight-dtype none) it needs 218.75 GiB, which does not fit.") in out
    _, out, _ = run_main(["estimate", "--model", "llama3-70b", "--hardware", "h100-sxm", "--weight-dtype", "int4"],
                         capsys)
    assert "fits in 70.79 GiB, with --weight-dtype int4; unquantized (--weight-dtype none) it needs 134.54 GiB" in out
    _, out, _ = run_main(["estimate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--weight-dtype", "int4"],
                         capsys)
    assert "6.83 GiB per GPU fits in 70.79 GiB, with --weight-dtype int4.\n" in out  # bf16 fits too: nothing more


def test_weight_dtype_none_on_a_quantized_checkpoint_is_offered_the_checkpoints_format_first(capsys):
    """`--weight-dtype none` on gpt-oss-120b: "does NOT fit" offered only "--gpus 4 --tp 4" (int4's default
    group of 128 does not divide K = 2,880, int8 neither helps enough): the checkpoint's own MXFP4, which fits
    one GPU with no accuracy given up, was not named. Now it is the first change, at the default's figure."""
    options = run_json([*GPT_OSS, "--weight-dtype", "none"], capsys)["fit"]["inference"]["options"]
    assert [o["change"] for o in options] == ["drop --weight-dtype none", "--gpus 4 --tp 4"]
    assert options[0]["memory"] == 66_473_569_152 and "mxfp4" in options[0]["cost"]


# ---------------------------------------------------------------------------------------------
# 3. sweep had no --json ("No such option '--json'. Did you mean '--json-out'?"), every other printing command has it

def test_sweep_json_prints_the_grid_json_out_writes(capsys, tmp_path):
    """GPT-2 at 128 and 256 tokens: stdout is the --json-out file byte for byte, no CSV beside it."""
    args = ["sweep", "--model", "gpt2", "--seq-len", "128,256", "--batch", "1,2"]
    path = tmp_path / "grid.json"
    code, _, _ = run_main([*args, "--json-out", str(path)], capsys)
    assert code == 0
    data = run_json(args, capsys)
    assert data == __import__("json").loads(path.read_text())
    assert [row[:2] for row in data["rows"]] == [[128, 1], [128, 2], [256, 1], [256, 2]]
    _, out, _ = run_main([*args, "--json"], capsys)
    assert out == path.read_text()


# ---------------------------------------------------------------------------------------------
# 4. docs/commands.md's list of plan --json's fields left out six the output has (hfu, tokens_per_second,
#    model_flops; --serve: ep_all_to_all_seconds and host, whose figures had no unit)

def _plan_json_paragraph() -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "commands.md").read_text(encoding="utf-8")
    start = text.index("`--json` prints `{\"feasible\": [...], \"infeasible\": [...]")
    return text[start:text.index("once per structure", start)]


def test_docs_name_every_field_plan_json_prints(capsys):
    """Every key of a feasible entry, training and --serve, and of the serve entry's host, is named in the
    paragraph; the units say what host's figures are."""
    paragraph = _plan_json_paragraph()
    training = run_json(["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--seq-len", "2048",
                         "--global-batch", "64", "--tp", "1", "--pp", "1", "--zero", "1", "--top", "1"], capsys)
    serving = run_json(["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "2",
                        "--batch", "8", "--top", "1"], capsys)
    entries = (training["feasible"][0], serving["feasible"][0], serving["feasible"][0]["host"])
    missing = {key for entry in entries for key in entry if f"`{key}`" not in paragraph}
    assert not missing, missing
    assert all(f"\"{key}\"" in paragraph for key in training)  # feasible, infeasible, inputs, units
    assert "seconds_per_step" in serving["units"]["host"]


# ---------------------------------------------------------------------------------------------
# 5. hardware --measure --out into a missing folder measured for minutes, then failed at the write

def test_hardware_measure_out_checks_its_destination_before_measuring(capsys, tmp_path, monkeypatch):
    """`hardware --measure --out nodir/cpu.json --device cpu --quick` ran its ~30-90 s of measurements and
    then printed "No such file or directory"; a folder as --out the same. Now one line before any work (the
    measurement is replaced by a failure here, so reaching it fails the test)."""
    import validate.hardware_file as hardware_file

    def measured(*args, **kwargs):
        raise AssertionError("measured before the destination was checked")

    monkeypatch.setattr(hardware_file, "measure_file", measured)
    base = ["hardware", "--measure", "--device", "cpu", "--quick", "--out"]
    assert one_error_line([*base, str(tmp_path / "nodir" / "cpu.json")], capsys) == \
        f"error: {tmp_path / 'nodir'}: no such directory."
    assert one_error_line([*base, str(tmp_path)], capsys) == f"error: {tmp_path}: is a directory; give a file name."


def test_an_output_path_under_a_file_says_so(capsys, tmp_path):
    """`sweep --csv afile/x.csv` (and serve's --csv, --steps-csv, --plot, hardware --out) said "afile: no such
    directory" of a file that exists (reports.output.check_destination, every command's destination check)."""
    afile = tmp_path / "afile"
    afile.write_text("kept\n")
    line = one_error_line(["sweep", "--model", "gpt2", "--seq-len", "128", "--csv", str(afile / "x.csv")], capsys)
    assert line == f"error: {afile}: is a file, not a directory."
    assert one_error_line(["serve", "--model", "gpt2", "--rate", "1", "--requests", "2", "--csv", str(afile / "x.csv")],
                          capsys) == line
    assert afile.read_text() == "kept\n"
