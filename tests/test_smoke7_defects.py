"""The seventh new-user round's defects (validate/FINDINGS.md "Issue 18: the seventh new-user round"),
each typed as the user typed it: a hardware file's misspelt architecture silently changed the time, a
missing link bandwidth named the wrong group, a directory given as a hardware file 'did not exist'."""
import json

import cli

SHOW = ["hardware", "--show", "h100-sxm"]


def _copy(tmp_path, capsys, **edits):
    """The user's way to a hardware file: `hardware --show h100-sxm`, renamed, one field edited."""
    assert cli.main(SHOW) == 0
    data = json.loads(capsys.readouterr().out)
    data["name"] = "my-h100"
    for key, value in edits.items():
        if isinstance(value, dict):
            data[key].update(value)
        else:
            data[key] = value
    path = tmp_path / "my-h100.json"
    path.write_text(json.dumps(data))
    return str(path)


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_misspelt_architecture_is_one_line(tmp_path, capsys):
    """"hoper" for "hopper" ran (exit 0) without the Hopper attention and FP8 figures: Llama 3 8B's
    8,192-token prefill 196 ms instead of 227 ms, a dp 8 FP8 step 452 ms instead of 490 ms."""
    path = _copy(tmp_path, capsys, architecture="hoper")
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", path, "--prompt", "512", "--gen", "8"]) == 2
    assert _one_line(capsys) == (f"error: {path}: not a valid hardware file: architecture 'hoper' is not one of "
                                 "volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3, cdna4, cpu.")


def test_the_copy_with_its_architecture_spelt_right_runs(tmp_path, capsys):
    path = _copy(tmp_path, capsys, architecture="hopper")
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", path, "--prompt", "512", "--gen", "8"]) == 0


def test_no_link_bandwidth_names_the_tensor_parallel_group(tmp_path, capsys):
    """intra_node_bandwidth_bytes_per_s 0 with --tp 2: the refusal said 'a group of 1 GPUs'
    (collectives.within_node asked for link(1)); the group is the two tp ranks."""
    path = _copy(tmp_path, capsys, interconnect={"intra_node_bandwidth_bytes_per_s": 0}, network_of="")
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", path, "--tp", "2", "--prompt", "512",
                     "--gen", "8"]) == 2
    assert "no interconnect bandwidth for a group of 2 GPUs (within nodes of 8)" in _one_line(capsys)


def test_a_directory_as_a_hardware_file(tmp_path, capsys):
    """It said the directory 'does not exist'."""
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", str(tmp_path)]) == 2
    assert _one_line(capsys) == f"error: {tmp_path}: is a directory, not a hardware file (.json)."


def test_a_huge_request_count_is_one_line(capsys):
    """serve --requests 99999999999: numpy's MemoryError (745 GiB of arrival gaps) as a traceback, exit 1."""
    assert cli.main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "99999999999"]) == 2
    assert _one_line(capsys) == "error: --requests 99999999999 is beyond 10,000,000; is it a typo?"


def test_plan_serve_refuses_a_bad_request_count_before_its_search(capsys):
    """plan --serve --requests 0 (or 10^11) searched all 36 configurations, each 'not feasible: 36
    (--requests must be at least 1, got 0.)', and exited 0."""
    args = ["plan", "--model", "llama3-8b", "--serve", "--rate", "5", "--slo-ttft", "1", "--slo-tpot", "0.1"]
    assert cli.main(args + ["--requests", "0"]) == 2
    assert _one_line(capsys) == "error: --requests must be at least 1, got 0."
    assert cli.main(args + ["--requests", "99999999999"]) == 2
    assert _one_line(capsys) == "error: --requests 99999999999 is beyond 10,000,000; is it a typo?"


def test_a_distribution_without_its_numbers_names_the_forms(capsys):
    """--prompt uniform said "(invalid literal for int() with base 10: '')"."""
    assert cli.main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "3", "--prompt", "uniform"]) == 2
    assert _one_line(capsys) == ("error: --prompt: length distribution 'uniform': use N, uniform:LOW:HIGH, "
                                 "lognormal:MEDIAN:SIGMA[:LOW:HIGH] or histogram:FILE.json.")


def test_an_infinite_token_count_is_one_line(capsys):
    """simulate --train --tokens inf printed 'time to train inf on inf Y tokens' and exited 0; plan took it too."""
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--train", "--tokens", "inf"]) == 2
    assert _one_line(capsys) == "error: --tokens must be positive and finite, got inf."
    assert cli.main(["plan", "--model", "llama2-7b", "--gpus", "8", "--tokens", "inf"]) == 2
    assert _one_line(capsys) == "error: --tokens must be positive and finite, got inf."
    assert cli.main(["simulate", "--model", "llama2-7b", "--train", "--dp", "8", "--step-time", "inf"]) == 2
    assert _one_line(capsys) == "error: --step-time must be positive and finite, got inf."
    # one check (cost.check_run_inputs): simulate's --price inf read "positive and finite", plan's another line
    for command in (["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--train"],
                    ["plan", "--model", "llama2-7b", "--gpus", "8"]):
        assert cli.main(command + ["--tokens", "1e9", "--price", "inf"]) == 2
        assert _one_line(capsys) == "error: --price must be a positive number of dollars per GPU-hour, got inf."


def test_a_finite_token_count_still_costs_the_run(capsys):
    """Llama 2 7B on one H100, 10^9 tokens: 1.69 days at the roofline's 6,844 tokens/s (10^9 / 6,844 / 86,400)."""
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--train", "--tokens", "1e9"]) == 0
    # was "on 1.00 G tokens" before wt45_user: a run's tokens as --tokens reads them (k, M, B, T)
    assert "time to train          1.69 days   on 1.00 B tokens, 1 GPU" in capsys.readouterr().out


def test_serving_an_encoder_says_so_first(capsys):
    """serve --model bert-base-uncased (default lengths 512 + 128) said 'request 0: prompt 512 + output 128
    tokens pass the model's context of 512', not that an engine serves decoders only; plan --serve
    --model t5-base listed 27 configurations 'not feasible' and exited 0."""
    assert cli.main(["serve", "--model", "bert-base-uncased", "--rate", "5", "--requests", "20"]) == 2
    assert _one_line(capsys) == "error: serving simulates decoder-only models; bert-base-uncased is encoder."
    assert cli.main(["plan", "--model", "t5-base", "--serve", "--rate", "5", "--slo-ttft", "1", "--slo-tpot", "0.1"]) == 2
    assert _one_line(capsys) == "error: serving simulates decoder-only models; t5-base is encoder-decoder."


def test_plan_json_keeps_the_rows_top_asks_for(capsys):
    """--top was read by the table only: `plan --top 1 --json` printed all 1,334 feasible layouts of
    Llama 2 7B on 8 H100s (1,342 before DeepSpeed's BF16_Optimizer kept its fp32 gradients whole;
    1,204 and 128 set aside since DeepSpeed's pipeline engine runs 1F1B only, its 130 interleaved
    layouts that fit and 26 that did not gone, tests/test_smoke8_defects.py). Typed, it keeps the first (the table's first row, dp 8, 1.3562 s; 1.3551 s before session 31's loss
    traffic, blocks/head.py fused_loss_bytes; 1.3004 s before session 29's
    Megatron-LM default of a gradient reduction after the backward);
    untyped, --json keeps every one."""
    args = ["plan", "--model", "llama2-7b", "--gpus", "8", "--json"]
    assert cli.main(args + ["--top", "1"]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert len(kept["feasible"]) == 1 and len(kept["infeasible"]) == 132  # 128 at 80 GiB
    # 1.3586 s before Megatron's one QKV GEMM and its dense passes (wt43_review, wt44_review; plan's default framework)
    assert kept["feasible"][0]["layout"]["dp"] == 8 and round(kept["feasible"][0]["step_time"], 4) == 1.3539
    assert cli.main(args) == 0
    assert len(json.loads(capsys.readouterr().out)["feasible"]) == 1200  # 1,204 at 80 GiB: 4 need more than the 81,117 MiB an H100 reports
    assert cli.main(args[:-1] + ["--top", "1"]) == 0  # the table's counts are the whole plan's
    assert "1,332 layouts: 1,200 fit in 78.72 GiB a GPU, 132 set aside for memory" in capsys.readouterr().out


def test_an_output_through_a_symlink_keeps_the_link(tmp_path, capsys):
    """sweep --csv LINK: the temporary-file-and-rename write put a regular file where the link was
    (as root, `--csv /dev/full` replaced the device itself and exited 0). A link or a device is now
    written through: the link stays, its target holds gpt2's two rows (forward 32,228,179,968 FLOPs
    at 128 tokens, as estimate --model gpt2 --seq-len 128 prints it)."""
    target, link = tmp_path / "target.csv", tmp_path / "link.csv"
    target.write_text("")
    link.symlink_to(target)
    assert cli.main(["sweep", "--model", "gpt2", "--seq-len", "128,256", "--batch", "1", "--csv", str(link)]) == 0
    assert link.is_symlink()
    rows = target.read_text().splitlines()
    assert len(rows) == 3 and rows[1].startswith("gpt2,128,1,32228179968,")


def test_a_missing_path_as_model_says_no_such_file(tmp_path, capsys):
    """--model ./nonexistent/ (a path: it begins with ./) was read as a preset name: 'unknown model
    ./nonexistent/. Known: ' and all 66 presets."""
    missing = tmp_path / "no-model"
    assert cli.main(["estimate", "--model", str(missing)]) == 2
    assert _one_line(capsys) == f"error: {missing}: no such file."


def test_two_gpus_where_one_is_read_says_so(capsys):
    """simulate --hardware h100-sxm,a100-80gb (as plan --serve --rate takes them) answered 'unknown
    hardware ... Did you mean a100-80gb, v100-sxm2-32gb, v100-sxm2-16gb?'."""
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm,a100-80gb"]) == 2
    assert _one_line(capsys) == ("error: --hardware 'h100-sxm,a100-80gb': one GPU here; several, comma-separated, "
                                 "are compared by plan --serve --rate only.")
