"""What a new user's first commands turned up (issue 18/19 robustness): each test runs the command
as the README documents it, with the input a user typed, and checks the answer or the one error line.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main


@pytest.mark.parametrize("args, value", [
    (["estimate", "--model", "gpt2", "--dtype", "BF16", "--json"], ("inputs", "dtype", "bf16")),
    (["estimate", "--model", "gpt2", "--dtype", "Float16", "--json"], ("inputs", "dtype", "fp16")),
    (["estimate", "--model", "gpt2", "--attention", "SDPA", "--json"], ("inputs", "attention", "sdpa")),
    (["estimate", "--model", "gpt2", "--optimizer", "AdamW", "--json"], ("inputs", "optimizer", "adamw")),
])
def test_choice_options_take_any_case_as_model_and_hardware_names_do(args, value, capsys):
    # `--model LLaMA2-7B` and `--hardware H100-SXM` work; `--dtype BF16` was "not one of 'bf16', ...".
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    section, key, expected = value
    assert json.loads(out)[section][key] == expected


def test_scheduler_and_quantized_dtypes_take_any_case(capsys):
    code, out, err = run_main(["serve", "--model", "gpt2", "--hardware", "H100-SXM", "--rate", "1",
                               "--requests", "3", "--scheduler", "Sarathi", "--cuda-graphs", "OFF", "--json"], capsys)
    assert code == 0, err
    code, out, err = run_main(["estimate", "--model", "llama2-7b", "--weight-dtype", "INT4", "--kv-dtype", "FP8",
                               "--json"], capsys)
    assert code == 0, err
    inputs = json.loads(out)["inputs"]
    assert (inputs.get("weight_dtype"), inputs.get("kv_dtype")) == ("int4", "fp8")


def test_the_decode_crossover_names_the_bytes_it_divides_by(capsys):
    # With int4 weights the crossover (batch 42 on an A100, not bf16's 134) is computed from the
    # weights as stored; the line said "2 FLOPs and bf16 bytes per parameter per token".
    code, out, err = run_main(["simulate", "--model", "llama3-8b", "--hardware", "a100-80gb", "--prompt", "128",
                               "--gen", "8", "--weight-dtype", "int4"], capsys)
    assert code == 0, err
    line = next(line for line in out.splitlines() if "decode turns compute-bound" in line)
    assert "int4 weights as stored" in line and "bf16 bytes" not in line
    code, out, err = run_main(["simulate", "--model", "llama3-8b", "--hardware", "a100-80gb", "--prompt", "128",
                               "--gen", "8"], capsys)
    line = next(line for line in out.splitlines() if "decode turns compute-bound" in line)
    assert "(weights only: 2 FLOPs and bf16 bytes per parameter per token)" in line


@pytest.mark.parametrize("args, named", [
    (["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--prompt", "0"], "--prompt"),
    (["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--tp", "2", "--prompt", "0"], "--prompt"),
    (["plan", "--model", "llama3-8b", "--serve", "--gpus", "8", "--prompt", "0"], "--prompt"),
    (["plan", "--model", "llama3-8b", "--serve", "--gpus", "8", "--gen", "-1"], "--gen"),
    (["serve", "--model", "llama3-8b", "--rate", "1", "--prompt", "0"], "--prompt"),
    (["serve", "--model", "llama3-8b", "--rate", "1", "--output", "0"], "--output"),
    (["serve", "--model", "llama3-8b", "--rate", "1", "--output", "uniform:9:3"], "--output"),
])
def test_a_bad_length_is_named_by_the_option_the_user_typed(args, named, capsys):
    # `simulate --prompt 0` said "workload: seq_len must be at least 1"; serve's --prompt 0 and
    # --output 0 gave the same line, "cannot read the length distribution '0'", naming neither.
    code, out, err = run_main(args, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert named in err, err


@pytest.mark.parametrize("extra, named", [
    (["--seq-len", "4096"], "--seq-len"),  # the prompt stayed 2,048, silently
    (["--tokens", "1e12", "--price", "2"], "--tokens"),  # --price alone prices a generation (round 25)
    (["--step-time", "1.5"], "--step-time"),
    (["--recompute", "full"], "--recompute"),
    (["--flops-convention", "causal"], "--flops-convention"),
    (["--impl", "megatron"], "--impl"),
])
def test_inference_refuses_the_options_only_training_reads(extra, named, capsys):
    code, out, err = run_main(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", *extra], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"error: {named}: " in err and "--train" in err


@pytest.mark.parametrize("extra, named", [
    (["--prompt", "4096"], "--prompt"),
    (["--gen", "64", "--kv-cache", "static"], "--gen, --kv-cache"),
    (["--cuda-graphs"], "--cuda-graphs"),
])
def test_training_refuses_the_options_only_inference_reads(extra, named, capsys):
    code, out, err = run_main(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train",
                               "--dp", "8", *extra], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"error: {named}: " in err and "--seq-len" in err


def test_defaults_typed_out_are_still_taken(capsys):
    """Only a value that would be ignored is refused: the defaults of the other mode are not."""
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", "h100-sxm", "--prompt", "64",
                               "--gen", "4", "--json"], capsys)
    assert code == 0, err
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", "h100-sxm", "--train", "--dp", "1",
                               "--seq-len", "256", "--tokens", "1e9", "--json"], capsys)
    assert code == 0, err


@pytest.mark.parametrize("args, named", [
    (["--gpus", "8", "--serve", "--seq-len", "4096"], "--seq-len"),  # the serving table was unchanged
    (["--gpus", "8", "--serve", "--recompute", "full", "--framework", "megatron"], "--framework, --recompute"),
    (["--gpus", "8", "--prompt", "4096", "--gen", "64"], "--prompt, --gen"),  # a training plan
    (["--gpus", "8", "--serve", "--slo-ttft", "1"], "--slo-ttft"),  # no --rate: no search
    (["--serve", "--rate", "5", "--slo-ttft", "1", "--slo-tpot", "0.1", "--dp", "2"], "--dp"),  # replicas are searched
    (["--serve", "--rate", "5", "--slo-ttft", "1", "--slo-tpot", "0.1", "--batch", "8", "--dtype", "fp16"],
     "--batch, --dtype"),
])
def test_plan_refuses_the_options_its_mode_would_ignore(args, named, capsys):
    # plan --serve --rate with --weight-dtype fp8 searched bf16 weights, without a word (the search now
    # reads the formats: tests/test_plan_serve_formats.py, tests/test_review_fixes_serving.py).
    code, out, err = run_main(["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", *args], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"error: {named}: " in err, err


DOC_EXAMPLES = [
    ("fit-and-cost.md", "costmodel estimate --model llama3-8b --hardware h100-sxm --seq-len 4096 --gpus 8 --batch 4"),
    ("fit-and-cost.md", "costmodel plan --model llama3-70b --gpus 2 --global-batch 16"),
    ("fit-and-cost.md", "costmodel plan --model llama2-7b --gpus 8 --tokens 1e12 --price 2.5 --top 3"),
    ("finetuning.md", "costmodel finetune --model llama3-70b --method qlora --hardware l40s --seq-len 2048 --batch 1 "
     "--adapter-dtype bf16 --recompute full"),
    ("finetuning.md", "costmodel finetune --model llama3-8b --hardware l40s --seq-len 4096 --batch 4 "
     "--lora-targets all-linear --lora-rank 64"),
    ("finetuning.md", "costmodel estimate --model llama3-70b --seq-len 4096 --batch 1 --recompute full --dp 8 --zero 3 "
     "--offload params --hardware h100-sxm"),
]


@pytest.mark.parametrize("doc, command", DOC_EXAMPLES)
def test_the_docs_examples_are_what_the_commands_print(doc, command, capsys):
    """docs/fit-and-cost.md and docs/finetuning.md showed 80.00 GiB usable (48.00 on an L40S),
    43.35 GiB for ZeRO 3 and a 32-GPU suggestion, from before the 512 MiB reserve and vLLM's 0.9:
    a user running them read other numbers. Each line shown ('...' aside) is a line printed."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / doc).read_text()
    blocks = text.split("```")
    typed = [i for i, block in enumerate(blocks) if " ".join(block.replace("\\\n", " ").split()) == command]
    assert len(typed) == 1, command
    shown = [line for line in blocks[typed[0] + 2].strip().splitlines() if line.strip() and line != "..."]
    code, out, err = run_main(command.split()[1:], capsys)
    assert code in (0, 1), err
    missing = [line for line in shown if line not in out.splitlines()]
    assert shown and not missing, missing


def test_when_nothing_fits_the_gpu_count_offered_is_the_first_that_fits(capsys):
    """Llama-3-70B on 2 H100s, global batch 16: the suggestion was 32 GPUs at global batch 32,
    searched with DeepSpeed's ZeRO 3 alone, while FSDP2's fits on 16 at the batch asked."""
    code, out, err = run_main(["plan", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "2",
                               "--global-batch", "16", "--json"], capsys)
    assert code == 1
    nearest = json.loads(out)["nearest"]
    assert (nearest["gpus"], nearest["global_batch"], nearest["layout"]["framework"]) == (16, 16, "fsdp2")
    code, out, err = run_main(["plan", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "16",
                               "--global-batch", "16", "--zero", "3", "--recompute", "full", "--batch", "1",
                               "--json"], capsys)
    assert code == 0
    assert nearest["per_rank"] == json.loads(out)["feasible"][0]["per_rank"]["total"]  # the same plan's best


def test_a_roofline_timing_says_so(tmp_path, capsys):
    """docs/commands.md: a hardware file without sm_count, and --train on one GPU without a layout,
    'are timed by the roofline and say so'; the text said nothing (only --json's time_model)."""
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({"name": "mygpu", "flops_per_s": {"bf16": 5e14, "fp32": 5e13},
                               "bandwidth_bytes_per_s": 2e12, "memory_bytes": 48 * 2**30}))
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", str(gpu), "--prompt", "64",
                               "--gen", "4"], capsys)
    assert code == 0, err
    assert "times: the roofline" in out.splitlines()[2]
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", "h100-sxm", "--train"], capsys)
    assert code == 0, err
    assert out.splitlines()[1].startswith("times: the roofline")


@pytest.mark.parametrize("model, tied", [("gpt2", True), ("t5-small", True), ("llama3.2-1b", True),
                                         ("llama3-8b", False)])
def test_a_tied_head_says_why_it_counts_zero(model, tied, capsys):
    # GPT-2's "output head 0" read as a missing head: its 38.6 M are the tied embeddings'.
    code, out, err = run_main(["estimate", "--model", model], capsys)
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("  output head"))
    assert ("tied to the embeddings" in line) == tied, line


@pytest.mark.parametrize("extra, message", [
    (["--seed", "-1"], "--seed"),  # a numpy traceback
    (["--num-blocks", "0"], "--num-blocks must be at least 1, got 0."),  # blamed the weights
    (["--tp", "3"], "--tp 3 does not divide the query heads (32) of model 'llama3-8b'."),  # 43,691 B a token a GPU
])
def test_serve_refuses_what_it_cannot_run_in_one_line(extra, message, capsys):
    code, out, err = run_main(["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "1",
                               "--requests", "5", *extra], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert message in err, err


def test_validate_takes_its_choices_in_any_case(capsys):
    # --target, --device and --attention were free strings compared as typed: HF was refused.
    code, out, err = run_main(["validate", "--model", "no-such-model", "--target", "HF", "--device", "CPU",
                               "--attention", "Eager"], capsys)
    assert code == 2 and "unknown model 'no-such-model'" in err  # the options parsed; the model did not
    code, out, err = run_main(["validate", "--model", "gpt2", "--target", "foo"], capsys)
    assert code == 2 and "'--target'" in err and "'foo'" in err


def test_a_model_too_big_for_one_replica_is_told_what_would_fit(capsys):
    # gpt-oss-120b is released in MXFP4 and served on one H100 so; in bf16 (serve's default before
    # the checkpoint's quantization_config became it, now --weight-dtype none) the line gave the
    # weights against the memory and stopped there.
    code, out, err = run_main(["serve", "--model", "gpt-oss-120b", "--hardware", "h100-sxm", "--rate", "1",
                               "--requests", "3", "--weight-dtype", "none"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "weights 217.6 GiB" in err and "--tp" in err and "--weight-dtype" in err
    code, out, err = run_main(["serve", "--model", "gpt-oss-120b", "--hardware", "h100-sxm", "--rate", "1",
                               "--requests", "3", "--weight-dtype", "mxfp4"], capsys)
    assert code == 0, err
