"""A new user's twenty-sixth round (session 28; validate/FINDINGS.md "A new user's twenty-sixth round"):
a researcher fine-tuning on a budget (LoRA / QLoRA / full on an RTX 4090, L40S, A100, H100s), a platform
engineer sizing a serving fleet (plan --serve --rate, serve, length mixes, FP8) and a student reading the
outputs. Each test failed before its fix; the numbers are exact, or the figure another command prints."""

from __future__ import annotations

import json

from tests.cli_run import one_error_line, run_json, run_main

# 1. plan --serve --rate took one prompt and one output length: a fleet's length mix was serve's alone

MIX_PROMPT = {"values": [128, 512, 2048], "weights": [0.5, 0.3, 0.2]}
MIX_OUTPUT = {"values": [64, 256], "weights": [0.75, 0.25]}
SEARCH = ["plan", "--model", "llama3-8b", "--serve", "--rate", "4", "--slo-ttft", "2", "--slo-tpot", "0.1",
          "--hardware", "l40s", "--tp", "1", "--requests", "60"]


def test_the_capacity_search_takes_serves_length_mixes(tmp_path, capsys):
    """`plan --serve --rate ... --prompt histogram:FILE` said "'histogram:...' is not a valid integer
    range" and `--output` (serve's name) "No such option": plan's --prompt and --gen were integers,
    though the search (serving/capacity.Target) draws each request from serve's Lengths. Now they take
    serve's forms with --rate (and --output names --gen), and the search's p99s are serve's for the
    same requests: serve with the winning budgets at rate 4 gives the same p99 TTFT and TPOT."""
    prompt, output = tmp_path / "prompt.json", tmp_path / "output.json"
    prompt.write_text(json.dumps(MIX_PROMPT))
    output.write_text(json.dumps(MIX_OUTPUT))
    found = run_json([*SEARCH, "--prompt", f"histogram:{prompt}", "--output", f"histogram:{output}"], capsys)
    assert found["target"]["prompt"] == f"histogram:{prompt}" and found["target"]["output"] == f"histogram:{output}"
    best = found["feasible"][0]
    assert (best["gpus"], best["replicas"]) == (1, 1)
    served = run_json(["serve", "--model", "llama3-8b", "--hardware", "l40s", "--rate", "4", "--requests", "60",
                       "--prompt", f"histogram:{prompt}", "--output", f"histogram:{output}",
                       "--max-num-seqs", str(best["max_num_seqs"]),
                       "--max-batched-tokens", str(best["max_batched_tokens"])], capsys)
    assert (served["ttft"]["p99"], served["tpot"]["p99"]) == (best["p99_ttft_s"], best["p99_tpot_s"])
    fixed = run_json([*SEARCH, "--prompt", "512", "--output", "128"], capsys)["feasible"][0]
    assert fixed["p99_ttft_s"] != best["p99_ttft_s"]  # the mix was drawn, not its first value or the default
    # the gen name, uniform and lognormal forms; a bad one is one line naming the option
    code, out, err = run_main([*SEARCH, "--prompt", "uniform:256:1024", "--gen", "lognormal:128:0.5:16:512"], capsys)
    assert code == 0 and "prompt uniform:256:1024, output lognormal:128:0.5:16:512 tokens" in out
    assert one_error_line([*SEARCH, "--prompt", "uniform:9:3"], capsys) == (
        "error: --prompt: cannot read the length distribution 'uniform:9:3' (a length range must satisfy "
        "1 <= low <= high, got 9..3).")
    # without --rate a plan sizes --batch sequences of one length: a mix is one line, a count as before
    layouts = ["plan", "--model", "llama3-8b", "--serve", "--gpus", "8"]
    assert one_error_line([*layouts, "--prompt", "uniform:1:4"], capsys) == (
        "error: --prompt 'uniform:1:4': a length mix is read by the capacity search (--serve --rate); without "
        "--rate give a whole number of tokens (131072) or one with k or M (128k = 131,072, 1M = 1,048,576: "
        "k = 1,024).")  # session 40: a count may be 4k (costmodel/sizes.py), and the line says so
    assert one_error_line([*layouts, "--gen", "-1"], capsys) == "error: --gen must be at least 0 tokens, got -1."
    made = run_json([*layouts, "--prompt", "1000", "--output", "24", "--top", "1"], capsys)["inputs"]
    assert (made["seq_len"], made["gen"]) == (1000, 24)


def test_the_capacity_tables_reasons_are_whole(capsys):
    """The "not feasible" line cut its reasons at 300 characters, mid-word ("not met with 8 replicas
    (mor"); it now lists whole reasons and says how many more --json holds."""
    from reports.serving_capacity import render_capacity

    result = {"target": {"rate": 1, "slo_ttft": 1, "slo_tpot": 1, "prompt": "512", "output": "128", "requests": 9},
              "scheduler": "vllm", "configurations": 6, "feasible": [],
              "infeasible": [{"reason": f"reason {i} " + "x" * 80} for i in range(6)]}
    last = render_capacity(result).splitlines()[-2]  # (session 38: the widest configuration's whole reason follows)
    assert last == ("not feasible: 6 (" + "; ".join(f"reason {i} " + "x" * 80 for i in range(3))
                    + "; 3 more reasons in --json's infeasible)")


# 2. finetune sized DeepSeek-V3's recomputation, which Hugging Face's code with peft never runs


def test_finetune_refuses_deepseeks_recomputation(capsys):
    """`finetune --model llama3-8b --hardware rtx-4090 --recompute deepseek` printed 23.54 GiB (every
    norm's output freed) beside 26.59 GiB without recomputation: a memory no peft run reaches, as
    Megatron-Core's module choices were refused in round 24. One line now; full stays the answer."""
    args = ["finetune", "--model", "llama3-8b", "--hardware", "rtx-4090"]
    assert one_error_line([*args, "--recompute", "deepseek"], capsys) == (
        "error: recompute 'deepseek' is DeepSeek-V3's recipe (every norm and latent attention's up-projections "
        "rerun in backward), which Hugging Face's code with peft does not run (its gradient checkpointing reruns "
        "whole layers); use none, selective or full.")
    full = run_json([*args, "--recompute", "full"], capsys)
    assert (full["memory"]["total"], full["fit"]["fits"]) == (18144608780, True)


# 3. plan's "days" column read 0.0 for a fine-tuning run of minutes


def test_plan_gives_a_short_runs_time_in_its_own_unit(capsys):
    """`plan --model meta-llama/Llama-3.1-8B --gpus 8 --seq-len 4096 --global-batch 32 --tokens 1e8
    --price 2.5` printed "days 0.0" and "GPU-hours 3" beside $6.58 for a 19.7-minute run; simulate
    says "28.2 min" for its layout. The column is now "to train" in the run's unit, and GPU-hours keep
    three figures below 100 in plan and simulate (the JSON's train_days and train_seconds as before)."""
    args = ["plan", "--model", "meta-llama/Llama-3.1-8B", "--hardware", "h100", "--gpus", "8", "--seq-len", "4096",
            "--global-batch", "32", "--tokens", "1e8", "--price", "2.5", "--top", "1"]
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    header, _, row = out.splitlines()[3:6]
    assert header.split()[-4:] == ["to", "train", "GPU-hours", "dollars"]
    best = run_json(args, capsys)["feasible"][0]["cost"]
    assert row.split()[-4:] == [f"{best['train_seconds'] / 60:.3g}", "min", f"{best['gpu_hours']:.3g}",
                                f"${best['dollars']:.2f}"]
    assert best["gpu_hours"] == best["train_seconds"] * 8 / 3600 and best["train_days"] < 0.05
    # simulate with plan's best layout: the same run, its GPU-hours to the same three figures
    code, out, err = run_main(["simulate", "--model", "meta-llama/Llama-3.1-8B", "--hardware", "h100", "--train",
                               "--framework", "megatron", "--dp", "8", "--zero", "1", "--batch", "1",
                               "--global-batch", "32", "--seq-len", "4096", "--tokens", "1e8", "--price", "2.5"], capsys)
    lines = {line.split("  ")[1].strip(): line for line in out.splitlines() if line.startswith("  ") and "  " in line[2:]}
    # 2.75 with Megatron-LM's reduction after the backward (2.63 under it, the default before session 29; 2.74
    # before session 31's loss traffic, blocks/head.py fused_loss_bytes)
    assert lines["GPU-hours"].split()[1] == f"{best['gpu_hours']:.3g}" == "2.76"
    assert lines["time to train"].split()[3:5] == [f"{best['train_seconds'] / 60:.3g}", "min"]


# 4. google/gemma-3-12b-pt, the size between Gemma 3's 4B and 27B presets, and the -pt ids


def test_gemma_3_12b_and_the_pretrained_ids_resolve(capsys):
    """`finetune --model google/gemma-3-12b-pt` (and estimate, serve) said "cannot reach the Hugging Face
    Hub ... Pass --config" offline: Gemma 3 had 1B, 4B and 27B presets under their -it ids only. The 12B
    preset (costmodel/presets/gemma3-12b.json, its source there) counts keras-hub's gemma3_12b_text,
    11,765,788,416, plus 64 x 3840 for the Hub's 262,208-row embedding, as the 4B's and 27B's presets
    equal keras-hub's 3,880,099,328 + 64 x 2560 and 27,009,002,240 + 64 x 5376; the -pt ids name the
    same text models as the -it ones."""
    counts = {"google/gemma-3-12b-pt": 11_765_788_416 + 64 * 3840, "google/gemma-3-12b-it": 11_766_034_176,
              "google/gemma-3-4b-pt": 3_880_099_328 + 64 * 2560, "google/gemma-3-27b-pt": 27_009_002_240 + 64 * 5376,
              "google/gemma-3-1b-pt": 999_885_952}
    for hub_id, count in counts.items():
        assert run_json(["estimate", "--model", hub_id, "--seq-len", "512"], capsys)["params"]["total"] == count
    # QLoRA of the 12B on one 24 GB card at 2,048 tokens with checkpointing fits; its window (1,024)
    # sizes the step under eager attention, as Gemma 3's other sizes (docs/finetuning.md, Limits)
    tuned = run_json(["finetune", "--model", "google/gemma-3-12b-pt", "--method", "qlora", "--hardware",
                      "rtx-4090", "--seq-len", "2048", "--recompute", "full"], capsys)
    assert (tuned["inputs"]["model"], tuned["inputs"]["attention"], tuned["fit"]["fits"]) == \
        ("gemma3-12b", "eager", True)


# 5. plan --serve --rate with a --tp the model cannot take: a table of refusals and exit 1


def test_the_capacity_search_refuses_a_typed_tp_the_model_cannot_take(capsys):
    """`plan --model llama3-8b --serve --rate 1 --slo-ttft 1 --slo-tpot 0.1 --tp 3` printed "9
    configurations, 0 meet it ... not feasible: 9 (--tp 3 does not divide ...)" and exited 1, the
    status of "nothing meets the targets"; serve --tp 3 refuses it as bad input. Now serve's one line."""
    line = "error: --tp 3 does not divide the query heads (32) of model 'llama3-8b'."
    assert one_error_line(["plan", "--model", "llama3-8b", "--serve", "--rate", "1", "--slo-ttft", "1",
                           "--slo-tpot", "0.1", "--tp", "3"], capsys) == line
    assert one_error_line(["serve", "--model", "llama3-8b", "--rate", "1", "--tp", "3"], capsys) == line


# 6. the capacity search sized a burst as a rate: one H100 "served" a billion requests a second


def test_the_capacity_search_measures_a_sustained_rate(capsys):
    """`plan --model llama3-8b --serve --rate 1e9 --slo-ttft 1 --slo-tpot 0.1 --requests 50` ranked one
    H100 first (p99 TTFT 573 ms): the 50 requests each replica simulates arrived within 50 ns and were
    served as one burst, whose p99s the request count bounds. A point now counts only where its
    requests arrive over at least their p99 end-to-end latency (more replicas stretch each one's
    window), and a search that never gets there says so and exits 1."""
    code, out, err = run_main(["plan", "--model", "llama3-8b", "--serve", "--rate", "1e9", "--slo-ttft", "1",
                               "--slo-tpot", "0.1", "--requests", "50", "--tp", "1", "--json"], capsys)
    result = json.loads(out)
    assert (code, result["feasible"], result["configurations"]) == (1, [], 9)
    assert all(row["reason"].startswith("a burst, not a sustained rate: 50 requests at 1e+09 / 256 replicas "
                                        "arrive within 1.28e-05 s") for row in result["infeasible"])
    from costmodel.serving.capacity import sustained

    assert sustained((0, 0, 0, 0, 4.0, 4.0)) and not sustained((0, 0, 0, 0, 4.0, 3.9))


# 7. plan --serve --rate's units read replica_output_tokens_per_s as seconds


def test_the_capacity_searchs_units_name_every_field(capsys):
    """Its `units` said {"*_s": "seconds", ...}: replica_output_tokens_per_s (and the rows' $/M out,
    budgets and blocks) had no unit but the "*_s" glob's, seconds. Every key of a row is named now."""
    from costmodel import json_units

    found = run_json(["plan", "--model", "llama3-8b", "--serve", "--rate", "4", "--slo-ttft", "2", "--slo-tpot",
                      "0.1", "--hardware", "l40s", "--tp", "1", "--requests", "40", "--price", "1"], capsys)
    units = found["units"]
    assert units == json_units.JSON_UNITS["plan --serve --rate"]
    named = {key.strip() for entry in units for key in entry.split(",")}
    unnamed = {key for key in found["feasible"][0] if key not in named and not key.endswith(("_s", "_per_s"))}
    assert unnamed == {"hardware", "tp", "pp", "replicas"}  # names and counts of a layout
    # (session 38, wt38_user2: "over its run", beside the sustained rate $/M out is over)
    assert units["replica_output_tokens_per_s"] == "output tokens a second (one replica, over its run)"
    assert units["*_s"] == "seconds (but *_per_s: a second)"


# 8. a step too big for gradient checkpointing alone was offered batch 1, never checkpointing


def test_the_verdict_offers_checkpointing_with_the_largest_batch(capsys):
    """`finetune --model llama3-8b --method qlora --hardware rtx-4090 --batch 16 --seq-len 2048` offered
    `--batch 1` (16.94 GiB) and `--seq-len 200`: full recomputation alone does not fit 16 sequences, so
    it was never named, though with it 9 fit. The verdict now adds the largest batch under full
    recomputation where it beats the largest without; its figure is what that command prints."""
    args = ["finetune", "--model", "llama3-8b", "--method", "qlora", "--hardware", "rtx-4090", "--seq-len", "2048"]
    verdict = run_json([*args, "--batch", "16"], capsys)["fit"]
    assert [o["change"] for o in verdict["options"]] == ["--batch 1", "--seq-len 200", "--recompute full --batch 9"]
    nine = run_json([*args, "--batch", "9", "--recompute", "full"], capsys)["memory"]["total"]
    ten = run_json([*args, "--batch", "10", "--recompute", "full"], capsys)["fit"]
    assert verdict["options"][2]["memory"] == nine <= verdict["capacity"] < ten["memory"]


# 9. report refused a folder it cannot make only after rendering every figure


def test_report_refuses_a_folder_it_cannot_make_first(capsys):
    """`report --model llama3-8b --out /dev/null/x --no-measure` printed its eight progress lines and
    rendered every figure before "cannot create the directory"; the folder is made (or refused) first."""
    assert one_error_line(["report", "--model", "llama3-8b", "--out", "/dev/null/x", "--no-measure"], capsys) == (
        "error: /dev/null/x: cannot create the directory (Not a directory).")
