"""Defects found by the thirty-first new user (wt32_user, session 32): an ML engineer who read only the README and
docs/commands.md (and the docs it links), asking how many parameters, FLOPs and bytes, whether it fits, how long and
what it costs, which block is to blame, with every command and the Python API."""

from __future__ import annotations

import pytest

from tests.cli_run import one_error_line, run_json, run_main

BERT8 = ["--model", "bert-base-uncased", "--gpus", "8", "--seq-len", "512"]
# plan's fastest BERT layout on 8 H100s until session 39 (third since: its 4 micro-batches' kernels keep graph_kernel_s
# each, KernelTimer.stream_seconds, and the 2-micro-batch layouts launch half as many): Hugging Face's eager code under
# FSDP2, whose host ops the kernel model weighs
BERT_LAYOUT = ["--pp", "2", "--dp", "4", "--framework", "fsdp2", "--zero", "2", "--schedule", "interleaved",
               "--virtual-stages", "2", "--batch", "4", "--microbatches", "4"]


def _parts(step: dict) -> float:
    """simulate --train --json's step parts, which the step's seconds are the sum of."""
    return (step["compute_seconds"] + sum(step["exposed_communication_seconds"].values()) + step["bubble_seconds"]
            + step["optimizer_seconds"] + step["gradient_accumulation_seconds"] + step["autocast_seconds"]
            + step["overlap_contention_seconds"] + step.get("host_wait_seconds", 0.0)
            + step.get("host_sync_seconds", 0.0) + step.get("fsdp_copy_seconds", 0.0))


def test_an_eager_layouts_split_adds_up_to_its_step(capsys):
    """`plan --model bert-base-uncased --gpus 8 --seq-len 512` ranked first a step of 10.7 ms whose "compute" column
    read 16 ms, more than the step (bubble 2.06 ms, communication 1.11 ms besides): 492 of its 732 layouts had a
    split summing to more than step_time, and `simulate --train` with that layout printed "step 10.7 ms" over
    "compute 16 ms". An eager step's per-block launches (8.78 ms here) are replaced by its host's ops, which the
    step takes the longer of (eager_ops.eager_step_seconds), but the split kept them. The split now holds the
    kernels alone and, as `host`, what the host adds past them; simulate's parts and its by-block line the same."""
    plan = run_json(["plan", *BERT8], capsys)
    assert len(plan["feasible"]) == 732
    for entry in plan["feasible"]:
        assert sum(entry["split"].values()) == pytest.approx(entry["step_time"], rel=1e-9), entry["layout"]
        assert entry["split"]["compute"] < entry["step_time"]
    sim = run_json(["simulate", "--train", *BERT8, *BERT_LAYOUT], capsys)
    step = sim["step"]
    ranked = next(entry for entry in plan["feasible"] if entry["layout"]["zero"] == 2
                  and (entry["layout"]["batch"], entry["layout"]["microbatches"], entry["layout"]["pp"]) == (4, 4, 2)
                  and entry["layout"]["framework"] == "fsdp2" and entry["layout"]["schedule"] == "interleaved"
                  and entry["layout"]["virtual_stages"] == 2 and entry["layout"]["recompute"] == "none")
    assert plan["feasible"].index(ranked) == 2  # first before session 39
    assert step["seconds"] == pytest.approx(ranked["step_time"], rel=1e-12)
    assert _parts(step) == pytest.approx(step["seconds"], rel=1e-9)
    host = step["host"]
    # kernel-bound: the kernels less their launches are the step, the host adds nothing
    assert not host["bound"] and step["seconds"] == pytest.approx(host["kernels_seconds"], rel=1e-12)
    assert step["host_wait_seconds"] == 0.0 and step["compute_seconds"] < step["seconds"]
    assert sum(step["compute_by_block_seconds"].values()) == pytest.approx(step["compute_seconds"], rel=1e-9)
    code, out, _ = run_main(["simulate", "--train", *BERT8, *BERT_LAYOUT], capsys)
    # 10.8 and 8.24 ms before session 39: the 4 micro-batches' and the bubble's kernels now keep h100-sxm.json's
    # graph_kernel_s (1.3 us) each in each of 3 passes (KernelTimer.stream_seconds)
    assert code == 0 and "  step                     12.4 ms" in out and "  compute                  9.63 ms" in out


def test_a_host_bound_layouts_split_carries_the_hosts_wait(capsys):
    """A step whose host issues its ops slower than the GPU runs them: the host's excess is a part of the split."""
    sim = run_json(["simulate", "--train", *BERT8, *BERT_LAYOUT, "--host-op-time", "20e-6"], capsys)
    step = sim["step"]
    assert step["host"]["bound"]
    assert step["seconds"] == pytest.approx(step["host"]["seconds_per_step"], rel=1e-12)
    assert step["host_wait_seconds"] == pytest.approx(step["seconds"] - step["host"]["kernels_seconds"], rel=1e-9)
    assert step["host_wait_seconds"] > 0 and _parts(step) == pytest.approx(step["seconds"], rel=1e-9)


@pytest.mark.parametrize("args", [["--model", "llama2-7b"], ["--model", "mixtral-8x7b"],
                                  ["--model", "gemma3-4b", "--attention", "sdpa"],
                                  ["--model", "llama2-7b", "--cuda-graphs"],
                                  ["--model", "llama2-7b", "--time-model", "roofline"]])
def test_the_prefills_blocks_add_up_to_the_prefill(args, capsys):
    """`simulate --model llama2-7b --json`: prefill.seconds 65.9 ms (the kernel model), its prefill_blocks summed to
    73.9 ms (Mixtral: 112.9 ms beside 119.5 ms): the blocks were the roofline's, the prefill the kernel model's, so
    "which block is to blame" for a prefill answered with another model's times. Under the kernel model they are
    its own leaves (their kernels, and where an eager step's host ops stand for the launches, a row for what the
    host adds past the kernels), each with the roofline's bound; under the roofline, the roofline's."""
    run = run_json(["simulate", *args], capsys)
    blocks = run["prefill_blocks"]
    assert sum(block["seconds"] for block in blocks) == pytest.approx(run["prefill"]["seconds"], rel=1e-9)
    assert all(block["seconds"] >= 0 for block in blocks)


def test_the_prefills_largest_block_is_the_kernel_models(capsys):
    """Llama 2 7B's prefill of 2,048 tokens on an H100: the FFN (17.7 TFLOP of its 28.8) is the largest block."""
    blocks = run_json(["simulate", "--model", "llama2-7b"], capsys)["prefill_blocks"]
    largest = max(blocks, key=lambda block: block["seconds"])
    assert (largest["path"], largest["bound"]) == ("decoder.layer.ffn.mlp", "compute")
    assert [block["path"] for block in blocks if block["bound"] is None] == ["host (eager ops)"]


def test_an_inference_layout_names_no_framework(capsys):
    """`simulate --model llama3-8b --tp 2` (inference) said "sdpa attention: the deepspeed layout's default code",
    and `costmodel.simulate(..., layout=...)` the same: an inference layout refuses --framework (a training
    option), and DeepSpeed runs none of it. It now says whose kernel it is; training layouts still name theirs."""
    import costmodel

    said = run_json(["simulate", "--model", "llama3-8b", "--tp", "2"], capsys)["inputs"]["attention_source"]
    assert said == "sdpa attention: an inference layout's default, transformers' own kernel"
    assert costmodel.simulate("llama3-8b", layout={"tp": 2}).to_dict()["inputs"]["attention_source"] == said
    code, out, _ = run_main(["simulate", "--model", "llama3-8b", "--tp", "2"], capsys)
    assert code == 0 and "deepspeed" not in out
    assert one_error_line(["simulate", "--model", "llama3-8b", "--tp", "2", "--framework", "megatron"],
                          capsys).startswith("error: ")
    train = run_json(["simulate", "--train", "--model", "llama3-8b", "--dp", "8"], capsys)["inputs"]
    assert train["attention_source"] == "sdpa attention: the deepspeed layout's default code"
    options = run_json(["estimate", "--model", "llama3-70b", "--hardware", "h100-sxm"], capsys)["fit"]["inference"]
    assert options["options"][0]["cost"] == (
        "2 GPUs: tensor parallel (sized under an inference layout's attention sdpa, not eager)")


def test_a_run_is_whole_steps_in_every_command(capsys):
    """`simulate --train --model llama2-7b --dp 8 --tokens 1k` said "time to train 16.5 ms" beside a step of 270 ms
    (a run of 6% of a step), where `finetune --tokens` counted whole steps (its docstring: "as simulate --train and
    plan cost theirs"): costmodel/cost.py's training_cost divided the tokens by the throughput. A run is now whole
    steps everywhere, the last one whole."""
    args = ["simulate", "--train", "--model", "llama2-7b", "--dp", "8", "--gpus", "8"]
    run = run_json([*args, "--tokens", "1k"], capsys)
    step = run["step"]
    assert run["cost"]["steps"] == 1 and run["cost"]["train_seconds"] == pytest.approx(step["seconds"], rel=1e-12)
    assert run["cost"]["flops"] == step["model_flops"]
    step_tokens = 8 * 2048  # dp 8 x one sequence of 2,048
    more = run_json([*args, "--tokens", str(10 * step_tokens + 1)], capsys)["cost"]
    assert more["steps"] == 11 and more["train_seconds"] == pytest.approx(11 * step["seconds"], rel=1e-12)
    exact = run_json([*args, "--tokens", str(10 * step_tokens)], capsys)["cost"]
    assert exact["steps"] == 10
    plan = run_json(["plan", "--model", "llama2-7b", "--gpus", "8", "--tokens", "1k", "--top", "3"], capsys)
    for entry in plan["feasible"]:
        assert entry["cost"]["steps"] == 1
        assert entry["cost"]["train_seconds"] == pytest.approx(entry["step_time"], rel=1e-12)


def test_commands_md_states_the_inference_capacity_the_verdict_uses(capsys):
    """docs/commands.md said `estimate --hardware` fits inference in "its capacity less the hardware file's reserve,
    512 MiB on the presets" (79.5 GiB on an H100 SXM); the verdict, simulate and docs/fit-and-cost.md use a serving
    engine's 0.9 of the device's reported memory less the reserve: 70.79 GiB."""
    from pathlib import Path

    from costmodel.hardware import load_hardware

    fit = run_json(["estimate", "--model", "llama2-7b", "--hardware", "h100-sxm"], capsys)["fit"]
    h100 = load_hardware("h100-sxm")
    assert (fit["training"]["capacity"], fit["inference"]["capacity"]) == (
        h100.training_memory_bytes, h100.serving_memory_bytes)
    said = f"{h100.training_memory_bytes / 2**30:.2f} and {h100.serving_memory_bytes / 2**30:.2f} GiB on an H100 SXM"
    assert said == "78.72 and 70.79 GiB on an H100 SXM"
    doc = " ".join(Path(__file__).parent.parent.joinpath("docs", "commands.md").read_text().split())
    assert f"inference: a serving engine's share of it, `serving_memory_utilization`, vLLM's 0.9, less the reserve; {said}" in doc


@pytest.mark.parametrize("args, api", [
    (["--model", "llama2-7b"], {}),
    (["--model", "llama2-7b", "--train", "--dp", "8", "--tokens", "1e9"],
     {"train": True, "layout": {"dp": 8}, "tokens": 1e9}),
    (["--model", "llama2-7b", "--tp", "2"], {"layout": {"tp": 2}})])
def test_the_apis_simulate_to_dict_is_simulate_json(args, api, capsys):
    """SimulationResult.to_dict() says "Every number, exactly as `simulate --json` prints it", but an inference's
    decode.crossover_batch_at_context was inf where the JSON has null, and a layout's training inputs lacked the
    optimizer, cuda_graph_scope and overlap conventions the command prints (two copies of the inputs)."""
    import costmodel

    assert costmodel.simulate(args[1], **api).to_dict() == run_json(["simulate", *args], capsys)


def test_commands_md_states_gpt2s_default_prompt(capsys):
    """docs/commands.md: "`--prompt` defaults to 2048 tokens, or what the model's context leaves after `--gen` (896 for
    GPT-2)"; simulate prompts GPT-2 with 897 tokens: 1,024 less the 127 generated tokens fed back (the last is never
    fed back, as the same paragraph says)."""
    from pathlib import Path

    assert run_json(["simulate", "--model", "gpt2"], capsys)["inputs"]["prompt"] == 1024 - (128 - 1) == 897
    doc = " ".join(Path(__file__).parent.parent.joinpath("docs", "commands.md").read_text().split())
    assert "what the model's context leaves after the `--gen` - 1 tokens fed back (897 for GPT-2 at the default" in doc


def test_finetunes_run_prints_its_time_in_its_own_unit(capsys):
    """`finetune --model llama3.2-1b --hardware h100 --tokens 1k` printed "1,000 tokens: 1 steps, 0.00 h, 0.00
    GPU-hours" (a 39 ms run): its own hours-with-two-decimals where simulate and plan print the run in its own unit
    (reports/text.py seconds) and GPU-hours to three figures (gpu_hours)."""
    code, out, _ = run_main(["finetune", "--model", "llama3.2-1b", "--hardware", "h100", "--tokens", "1k"], capsys)
    line = next(line for line in out.splitlines() if "tokens:" in line)
    assert code == 0 and line.startswith("  1,000 tokens: 1 step, ") and " ms, " in line and "0.00" not in line
    code, out, _ = run_main(["finetune", "--model", "llama3-8b", "--method", "qlora", "--hardware", "rtx-4090",
                             "--tokens", "1e8", "--price", "0.5"], capsys)
    # 10.7 h, $5.36 at the 4090's stated 10 us launches a block; gpu-benches' L40 figure since (wt33_geforce)
    assert "  100,000,000 tokens: 48,829 steps, 10.6 h, 10.6 GPU-hours, $5.32 at $0.5/GPU-hour" in out
