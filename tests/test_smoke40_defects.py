"""Defects a new user hit in session 40's round (wt40_user): plan's and simulate's answers for one setup,
options a step silently ignored, engines on GPUs they do not run on, refusals that did not say where the
question is answered. Each test failed before its fix."""

from __future__ import annotations

from costmodel import spec
from tests.cli_run import one_error_line, run_json, run_main

# ---------------------------------------------------------------------------------------------
# 1. finetune --method full: "'full' is not one of 'lora', 'qlora'." and nothing of where it is answered


def test_finetune_method_full_names_the_commands_that_size_full_fine_tuning(capsys):
    """Full fine-tuning trains every weight, as a training step: estimate --hardware sizes its fit, simulate
    --train its time and cost. The refusal said only which methods finetune takes. `--method full` is now a
    method refused with that sentence (wt40_user2: spec.FULL_FINETUNE); the names a user reaches for it by in
    another spelling get the same sentence as click's hint (cli/finetune.FULL_HINTS)."""
    assert one_error_line(["finetune", "--model", "llama3-8b", "--method", "FULL", "--hardware", "h100"], capsys) == (
        "error: " + spec.FULL_FINETUNE)  # any case names the method
    for value in ("fft", "full-finetune"):
        line = one_error_line(["finetune", "--model", "llama3-8b", "--method", value, "--hardware", "h100"], capsys)
        assert line.startswith(f"error: Invalid value for '--method': {value!r} is not one of 'lora', 'qlora', 'full': "
                               "finetune sizes LoRA and QLoRA; full fine-tuning"), line
        assert "`estimate --hardware GPU`" in line and "`simulate --train --tokens N --price P`" in line
    # a method that is no full fine-tuning keeps click's plain refusal
    assert one_error_line(["finetune", "--model", "llama3-8b", "--method", "dora"], capsys) == (
        "error: Invalid value for '--method': 'dora' is not one of 'lora', 'qlora', 'full'.")


# ---------------------------------------------------------------------------------------------
# 2. plan's nearest fit hid the context parallelism that made its GPU count

LONG = ["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--seq-len", "1000000"]


def test_plans_nearest_fit_names_its_context_parallel_ranks(capsys):
    """1M tokens of Llama 3 8B on 8 H100s: "On 16 GPUs it fits: tp 2 x pp 1 x dp 1, megatron, ZeRO 3" (2 GPUs
    by its words); the layout (JSON nearest.layout) holds cp 8: 2 x 1 x 1 x 8 = 16."""
    code, out, _ = run_main(LONG, capsys)
    assert code == 1
    assert "On 16 GPUs it fits: tp 2 x pp 1 x dp 1 (cp 8), megatron, ZeRO 3, recompute full, micro-batch 1, " in out
    code, out, _ = run_main([*LONG, "--json"], capsys)
    import json

    nearest = json.loads(out)["nearest"]
    assert (nearest["gpus"], nearest["layout"]["tp"], nearest["layout"]["cp"]) == (16, 2, 8)


# ---------------------------------------------------------------------------------------------
# 3. plan --serve said a layout fits that simulate, with the layout its footnote names, says does not

SERVE = ["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "1", "--serve", "--batch", "48",
         "--prompt", "8000", "--gen", "100"]


def test_plan_serve_says_where_simulates_whole_batch_prefill_does_not_fit(capsys):
    """48 x 8,000 tokens on one H100: plan --serve sizes the prefill one chunk of vLLM's 8,192-token budget at a
    time (62.49 GiB, fits), `simulate --batch 48 --prompt 8000 --gen 100 --dp 1` prefills the whole batch at
    once, generate's way, and needs 99,425,387,008 bytes (92.60 GiB: "DOES NOT FIT"). plan said nothing of it;
    now the row's per_rank holds simulate's figure and the text names the row."""
    plan = run_json(SERVE, capsys)
    assert plan["inputs"]["prefill_chunk"] == 8192
    row = plan["feasible"][0]["per_rank"]
    assert (row["total"], row["whole_prefill_total"]) == (67_099_886_080, 99_425_387_008)
    simulated = run_json(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--batch", "48", "--prompt",
                          "8000", "--gen", "100", "--dp", "1", "--attention", "flash"], capsys)
    assert simulated["per_rank"]["total"] == row["whole_prefill_total"] and simulated["fits"] is False
    code, out, _ = run_main(SERVE, capsys)
    assert code == 0 and out.rstrip().splitlines()[-1] == (
        "memory: a prefill's transients are one chunk's of 8,192 tokens at a time (vLLM's max_num_batched_tokens on "
        "this GPU), as an engine prefills; `simulate` with the layout prefills the whole batch at once, as generate "
        "does, and does not fit there: rank 1 (92.60 GiB).")


def test_plan_serve_adds_no_memory_line_where_both_fit(capsys):
    code, out, _ = run_main([*SERVE[:-6], "--batch", "4", "--prompt", "2048", "--gen", "128"], capsys)
    assert code == 0 and "memory: a prefill's" not in out


# ---------------------------------------------------------------------------------------------
# 4. TensorRT-LLM simulated on AMD GPUs (and a CPU file), which it does not run on


def test_tensorrt_llm_is_refused_on_a_gpu_it_does_not_run_on(capsys):
    """`serve --scheduler trtllm --hardware mi300x` simulated TensorRT-LLM's engine on a CDNA 3 GPU (no ROCm
    build exists); --decode-code tensorrt-llm in simulate, a layout's decode and plan --serve alike. One line
    each, the rule and its source in decode_codes.json ("gpus")."""
    base = ["--model", "llama3-8b", "--hardware", "mi300x"]
    expected = ("tensorrt-llm runs on NVIDIA GPUs only (decode_codes.json); mi300x is CDNA 3: use an engine that "
                "runs there (--scheduler vllm; simulate's default --decode-code transformers).")
    assert one_error_line(["serve", *base, "--rate", "5", "--requests", "20", "--scheduler", "trtllm"], capsys) == (
        "error: --scheduler trtllm: " + expected)
    for args in (["simulate", *base], ["simulate", *base, "--tp", "2", "--gpus", "2"],
                 ["plan", *base, "--gpus", "2", "--serve"]):
        assert one_error_line([*args, "--decode-code", "tensorrt-llm"], capsys) == (
            "error: --decode-code tensorrt-llm: " + expected)
    code, _, err = run_main(["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "5", "--requests",
                             "20", "--scheduler", "trtllm"], capsys)
    assert code == 0, err  # where it runs, unchanged


# ---------------------------------------------------------------------------------------------
# 5. --fp32-norm-input moved the roofline's step and was silently ignored by the kernel model's


def test_fp32_norm_input_is_refused_for_hugging_faces_class(capsys):
    """InternLM's norm(residual.float()): under --framework deepspeed (Hugging Face's class, impl hf) the kernel
    model times its measured eager ops and the option changed nothing (0.30603 s both), while the roofline
    moved. Refused now where the code is Hugging Face's; the megatron code still reads it (the step moves)."""
    train = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--dp", "2", "--gpus", "2"]
    for framework in (["--framework", "deepspeed"], ["--framework", "fsdp2", "--zero", "3"],
                      ["--framework", "megatron", "--impl", "hf", "--attention", "sdpa"]):
        assert "--fp32-norm-input is InternLM's layer" in one_error_line([*train, *framework, "--fp32-norm-input"],
                                                                         capsys)
    megatron = [*train, "--framework", "megatron"]
    assert run_json([*megatron, "--fp32-norm-input"], capsys)["step"]["seconds"] > run_json(megatron, capsys)["step"]["seconds"]


# ---------------------------------------------------------------------------------------------
# 6. The docs' Python calls on a submodule raised AttributeError after `import costmodel`


def test_the_documented_submodule_calls_work_after_import_costmodel():
    """docs/fit-and-cost.md's `costmodel.verdict.verdict(...)`, docs/finetuning.md's
    `costmodel.finetune.finetune_memory(...)`, the README's `costmodel.layout.Layout`: in a fresh interpreter
    `import costmodel` then the call raised "module 'costmodel' has no attribute 'verdict'" (the submodule was
    reachable only once something else had imported it). A fresh process, as a user's."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parent.parent
    named = set()
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        named |= set(re.findall(r"`[^`]*?\bcostmodel\.([a-z_]+)\.[A-Za-z_]+", doc.read_text(encoding="utf-8")))
    assert {"verdict", "finetune", "layout"} <= named, named
    code = "import costmodel\n" + "".join(f"costmodel.{name}\n" for name in sorted(named)) + \
        "costmodel.verdict.verdict; costmodel.layout.Layout; costmodel.finetune.finetune_memory\n" \
        "try:\n    costmodel.nosuch\nexcept AttributeError as e:\n    print(e)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "module 'costmodel' has no attribute 'nosuch'"


# ---------------------------------------------------------------------------------------------
# 7. Counts printed without their thousands separators beside figures printed with them


def test_figures_of_four_digits_carry_their_separator(capsys):
    """simulate's "HFU 55.0% (1238 TFLOP/s per GPU)" on B200s in MXFP8 (the tokens/s beside it read 25,375),
    and plan's note "788 of the 1200 layouts run Hugging Face's eager code" under its header's "1,200 fit"."""
    code, out, _ = run_main(["simulate", "--model", "llama3-8b", "--train", "--hardware", "b200", "--gpus", "8",
                             "--dp", "8", "--framework", "megatron", "--zero", "1", "--fp8", "mxfp8", "--batch", "8",
                             "--microbatches", "1"], capsys)
    assert code == 0 and "HFU 55.0% (1,238 TFLOP/s per GPU)" in out
    code, out, err = run_main(["plan", "--model", "llama2-7b", "--gpus", "8", "--top", "1"], capsys)
    assert code == 0 and "1,200 fit in 78.72 GiB" in out and "788 of the 1,200 layouts run Hugging Face's" in err


# ---------------------------------------------------------------------------------------------
# 8. simulate --train --tokens with --step-time costed the run at the predicted step without saying so


def test_a_measured_step_time_costs_the_run_too(capsys):
    """`simulate --model llama3-8b --train --dp 8 --gpus 8 --step-time 0.5 --tokens 1e9 --price 2` read the
    measured 0.5 s for its MFU only: "time to train 5.26 h" is 61,036 steps (1e9 tokens / 8 x 2,048, the last
    whole) at the predicted 0.310 s. Now the predicted figure says so and the measured one follows:
    61,036 x 0.5 s = 30,518 s, x 8 GPUs / 3,600 = 67.82 GPU-hours, $135.64 at $2; one GPU likewise."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--step-time", "0.5",
            "--tokens", "1e9", "--price", "2"]
    layout = run_json([*args, "--dp", "8", "--gpus", "8"], capsys)
    measured = layout["cost_at_step_time"]
    assert (measured["steps"], measured["train_seconds"], measured["step_seconds"]) == (61_036, 30_518.0, 0.5)
    assert measured["gpu_hours"] * 3600 == 30_518.0 * 8 and measured["dollars"] == measured["gpu_hours"] * 2
    assert measured["flops"] == layout["cost"]["flops"] and layout["cost"]["train_seconds"] < 30_518.0
    one = run_json(args, capsys)["cost_at_step_time"]
    assert (one["steps"], one["train_seconds"]) == (488_282, 244_141.0)  # ceil(1e9 / 2,048) x 0.5 s
    code, out, _ = run_main([*args, "--dp", "8", "--gpus", "8"], capsys)
    # was "on 1.00 G tokens" before wt45_user: a run's tokens as --tokens reads them (k, M, B, T)
    assert code == 0 and "on 1.00 B tokens, 8 GPUs at the predicted step" in out
    assert "  at --step-time            8.48 h   the measured 500 ms step: 67.8 GPU-hours, $136" in out
    code, out, _ = run_main([*args[:-6], "--tokens", "1e9", "--dp", "8", "--gpus", "8"], capsys)
    assert code == 0 and "at the predicted step" not in out and "at --step-time" not in out
