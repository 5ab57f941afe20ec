"""A new user's twenty-fourth round (session 27; validate/FINDINGS.md "A new user's twenty-fourth round"):
published training and fine-tuning setups typed as commands (torchtitan's Llama 3 8B on 8 H100s, Mixtral
8x7B with EP 8 in Megatron, a 70B full and LoRA/QLoRA fine-tune on A100s, DeepSeek-V3 with EP and DualPipeV,
a 1B model on one RTX 4090, a long context under CP). Each test failed before its fix; the numbers are
exact, or the figure another command prints for the same case."""

from __future__ import annotations

import json

from tests.cli_run import one_error_line, run_json, run_main

# 1. a training layout's inference verdict read fsdp2's fp32 shards as the served weights

LLAMA3_8K = ["estimate", "--model", "llama3-8b", "--seq-len", "8192", "--attention", "flash",
             "--hardware", "h100-sxm"]


def test_an_fsdp2_layouts_inference_verdict_serves_the_dtypes_weights(capsys):
    """`estimate --dp 8 --framework fsdp2 --hardware h100-sxm` said "Inference on 8 h100-sxm GPUs: 31.57 GiB
    per GPU" (33,899,495,936 B): a serving replica held fsdp2's fp32 sharded parameters (4 B a weight),
    where deepspeed's and megatron's layouts and the one-GPU generation hold the bf16 copy the forward reads
    (precision.inference_precision, which the whole-model figures already took). Now 17,838,973,440 B, the
    generation's total: 2 B x 8,030,261,248 parameters = 16,060,522,496 B less."""
    alone = run_json(LLAMA3_8K, capsys)
    fsdp2 = run_json([*LLAMA3_8K, "--dp", "8", "--framework", "fsdp2"], capsys)
    deepspeed = run_json([*LLAMA3_8K, "--dp", "8", "--framework", "deepspeed"], capsys)
    assert alone["memory"]["generate_total"] == 17_838_973_440
    assert fsdp2["fit"]["inference"]["memory"] == deepspeed["fit"]["inference"]["memory"] == 17_838_973_440
    assert 33_899_495_936 - 17_838_973_440 == 2 * 8_030_261_248
    # the training side keeps fsdp2's fp32 state: 71.74 GiB a rank, as simulate --train prints
    assert fsdp2["fit"]["training"]["memory"] == fsdp2["parallel"]["per_rank"]["total"]


# 2. a 70B full fine-tune on 8 A100 40GB: offload beside ZeRO 3 and full recomputation fits, not 64 GPUs

FULL_70B = ["estimate", "--model", "llama2-70b", "--hardware", "a100-40gb", "--gpus", "8", "--seq-len", "4096"]


def test_a_70b_full_fine_tune_on_eight_40gb_gpus_is_offered_offload_not_only_64_gpus(capsys):
    """Llama 2 70B in bf16 (16 B a parameter under DeepSpeed's mixed precision: 1.10 TB of state) cannot
    fit 8 x 40 GB without ZeRO 3 and offload. The verdict offered only `--gpus 64`: its ZeRO-Offload and
    ZeRO-Infinity lines were tried as the workload stood, eager attention and no recomputation (610 GiB of
    activations), so neither fitted and offload, which runs on the 8 GPUs given, was never named. Offload
    is now also tried beside ZeRO 3 and full recomputation when alone it does not fit, as ZeRO 3 is; each
    figure is what the suggested command prints."""
    training = run_json(FULL_70B, capsys)["fit"]["training"]
    assert not training["fits"]
    assert training["options"][0]["change"] == "--gpus 64 (--dp with --zero 3 --recompute full)"
    assert [(o["change"], o["memory"]) for o in training["options"][1:]] == [
        ("--dp 8 --zero 3 --offload optimizer --recompute full", 28_458_863_116),
        ("--dp 8 --zero 3 --offload params --recompute full", 11_214_701_068)]
    for change, memory in [(o["change"], o["memory"]) for o in training["options"][1:]]:
        typed = run_json([*FULL_70B, *change.split()], capsys)["fit"]["training"]
        assert (typed["memory"], typed["fits"]) == (memory, True)


def test_the_verdicts_memory_column_stays_aligned_under_a_long_change(capsys):
    """The suggestions' text was padded to 50 characters, so a longer change pushed its memory out of the
    column (reports/text.py _fit_options): the column now starts past the longest change."""
    code, out, _ = run_main(FULL_70B, capsys)
    lines = [line for line in out.splitlines() if "--offload" in line]
    assert code == 0 and len(lines) == 2
    assert lines[0].index("26.50 GiB") == lines[1].index("10.44 GiB")


# 3. plan's "On N GPUs it fits" dropped a typed --tp and --pp, so the plan it names did not fit

PLAN_70B_TP8 = ["plan", "--model", "llama3-70b", "--hardware", "a100-40gb", "--tp", "8", "--global-batch", "16"]


def test_plans_more_gpus_hint_keeps_a_typed_tp(capsys):
    """`plan --model llama3-70b --hardware a100-40gb --gpus 8 --tp 8` (nothing fits) said "On 32 GPUs it
    fits: tp 4 x pp 4 x dp 2": the leaner layouts on more GPUs were searched with tp and pp free, though
    plan's --tp is "Only this tensor-parallel size". They keep a typed tp and pp now: tp 8 x pp 4 x dp 1,
    37.85 GiB a GPU, which `plan --gpus 32` with the same options lists."""
    code, out, _ = run_main([*PLAN_70B_TP8, "--gpus", "8", "--json"], capsys)
    nearest = json.loads(out)["nearest"]
    assert code == 1 and nearest["gpus"] == 32 and nearest["global_batch"] == 32
    assert (nearest["layout"]["tp"], nearest["layout"]["pp"], nearest["layout"]["dp"]) == (8, 4, 1)
    assert round(nearest["per_rank"] / 2**30, 2) == 37.85
    named = run_json([*PLAN_70B_TP8[:-1], "32", "--gpus", "32", "--zero", "3", "--recompute", "full",
                      "--batch", "1"], capsys)["feasible"]
    assert {row["layout"]["tp"] for row in named} == {8}
    assert nearest["per_rank"] in {row["per_rank"]["total"] for row in named}


DEEPSEEK_V3_PINNED = ["plan", "--model", "deepseek-v3", "--hardware", "h800", "--framework", "megatron", "--tp", "1",
                      "--pp", "16", "--ep", "64", "--seq-len", "4096", "--batch", "1", "--fp8", "blockwise",
                      "--schedule", "dualpipev", "--zero", "1", "--recompute", "deepseek", "--mtp", "1",
                      "--global-batch", "15360"]


def test_plan_says_no_count_fits_the_typed_tp_and_pp(capsys):
    """DeepSeek-V3's run as its report states it (TP 1, PP 16, EP 64, DualPipe, ZeRO 1) on 2,048 H800s needs
    83.05 GiB a rank (docs/layouts.md: it does not fit). plan said "On 4,096 GPUs it fits: tp 2 x pp 8 x dp
    256", a layout the typed --tp 1 --pp 16 excludes; `plan --gpus 4096` with the same options answered
    "No layout fits". With the typed sizes kept no count fits, and the line says which were kept."""
    code, out, _ = run_main([*DEEPSEEK_V3_PINNED, "--gpus", "2048"], capsys)
    assert code == 1
    # session 40 (wt40_user): the layout names its expert-parallel ranks, as plan's table does
    assert "The leanest layout (tp 1 x pp 16 x dp 128 (ep 64), megatron, ZeRO 1, recompute deepseek, micro-batch 1) " \
           "needs 83.05 GiB" in out
    assert out.strip().splitlines()[-1] == (
        "No count up to 1,024 times as many GPUs fits with --tp 1 --pp 16 as given (leave them out to let plan "
        "choose); use a GPU with more memory or a shorter sequence.")


# 4. --optimizer: estimate took it, simulate --train and plan said "No such option"

SGD_8 = ["--model", "llama3-8b", "--dp", "8", "--optimizer", "sgd"]


def test_simulate_train_and_plan_take_estimates_optimizer(capsys):
    """`estimate --optimizer sgd` counted SGD's state (no moments: under DeepSpeed's mixed precision the fp32
    master weights alone, 4 B x 8,030,261,248 = 32,121,044,992 B a rank at ZeRO 0), but `simulate --train
    --optimizer sgd` and `plan --optimizer sgd` were click's "No such option", so the same setting could
    not be timed. All three now read it, and agree: 78,523,212,300 B a rank, one step of 261.7 ms (261.1 before
    session 31's loss traffic, blocks/head.py fused_loss_bytes)."""
    estimate = run_json(["estimate", *SGD_8], capsys)["parallel"]["per_rank"]
    simulate = run_json(["simulate", "--train", *SGD_8], capsys)
    plan = run_json(["plan", "--model", "llama3-8b", "--gpus", "8", "--optimizer", "sgd", "--framework", "deepspeed",
                     "--tp", "1", "--pp", "1", "--zero", "0", "--batch", "1", "--recompute", "none",
                     "--global-batch", "8"], capsys)
    assert estimate["optimizer"] == 32_121_044_992 == 4 * 8_030_261_248
    assert estimate == simulate["parallel"]["per_rank"] == plan["feasible"][0]["per_rank"]
    assert estimate["total"] == 78_523_212_300
    assert simulate["step"]["seconds"] == plan["feasible"][0]["step_time"]
    assert round(simulate["step"]["seconds"] * 1e3, 1) == 262.1
    assert simulate["inputs"]["optimizer"] == plan["inputs"]["optimizer"] == "sgd"
    adamw = run_json(["simulate", "--train", *SGD_8[:4]], capsys)
    assert adamw["parallel"]["per_rank"]["optimizer"] == 12 * 8_030_261_248  # master weights and two moments
    assert adamw["step"]["optimizer_seconds"] > simulate["step"]["optimizer_seconds"]
    # one GPU without a layout (the roofline): Llama 3.2 1B on an RTX 4090, SGD's fp32 master weights alone
    one = run_json(["simulate", "--train", "--model", "llama3.2-1b", "--hardware", "rtx-4090", "--optimizer", "sgd"],
                   capsys)
    assert (one["inputs"]["optimizer"], one["memory"]["optimizer"]) == ("sgd", 4 * 1_235_814_400)


def test_optimizer_outside_training_is_one_line(capsys):
    assert one_error_line(["simulate", "--model", "llama3-8b", "--optimizer", "sgd"], capsys) == (
        "error: --optimizer: training options, read only with --train; inference takes --prompt, --gen and --batch.")
    assert one_error_line(["plan", "--model", "llama3-8b", "--gpus", "8", "--serve", "--optimizer", "sgd"], capsys) \
        == ("error: --optimizer: training options, which --serve ignores; a serving plan takes --batch, --prompt "
            "and --gen.")


# 5. finetune (Hugging Face's code with peft) took Megatron-Core's recompute_modules choices

def test_finetune_refuses_megatron_cores_recompute_modules(capsys):
    """`finetune --model qwen3-30b-a3b --recompute layernorm-moe` printed a memory (the MoE layer rerun in
    backward, nothing of it kept) for a LoRA step on Hugging Face's classes, which run no such module
    recomputation (gradient checkpointing reruns a whole layer); `simulate --train --framework fsdp2` and
    deepspeed refuse the same choices (module_recompute.check_recompute_framework). One line now."""
    line = ("error: recompute 'layernorm-moe' is Megatron-Core's recompute_modules, which Hugging Face's code "
            "with peft does not run; use none, selective or full.")
    assert one_error_line(["finetune", "--model", "qwen3-30b-a3b", "--recompute", "layernorm-moe"], capsys) == line
    assert one_error_line(["finetune", "--model", "qwen3-30b-a3b", "--hardware", "h100", "--recompute",
                           "layernorm-moe-act"], capsys) == line.replace("'layernorm-moe'", "'layernorm-moe-act'")
    # the choices Hugging Face's code has a counterpart of still answer
    assert run_json(["finetune", "--model", "qwen3-30b-a3b", "--recompute", "selective"], capsys)["memory"]["total"] > 0


# 6. plan on a hand-written hardware file without an interconnect blamed the memory alone

def test_plan_names_the_missing_interconnect_when_nothing_fits(tmp_path, capsys):
    """A user's file with peaks, bandwidth and 80 GB but no `interconnect`: 366 of the 516 layouts of Llama 3
    8B on 16 GPUs need a collective over more than one GPU, which the file states no bandwidth for, and the
    other 150 do not fit 74.51 GiB. plan said only "No count up to 1,024 times as many GPUs fits; use a GPU
    with more memory or a shorter sequence": the refusals' reason, the one a user can fix, was dropped
    wherever some layout had been set aside for memory. It is named now (JSON: nearest.unsupported)."""
    path = tmp_path / "mini.json"
    path.write_text(json.dumps({"name": "mini", "flops_per_s": {"bf16": 300e12}, "vector_flops_per_s": 50e12,
                                "bandwidth_bytes_per_s": 2e12, "memory_bytes": 80e9}))
    command = ["plan", "--model", "llama3-8b", "--hardware", str(path), "--gpus", "16"]
    # (wt35_user: one error line before any layout, exit 2, as simulate's: the table's "No count up to 1,024 times
    # as many GPUs fits; use a GPU with more memory" was false advice where the link, not memory, was missing)
    code, out, err = run_main([*command, "--json"], capsys)
    assert (code, out) == (2, "") and err.strip() == (
        "error: hardware mini: no interconnect bandwidth for a group of 16 GPUs (across nodes of 1); a hardware file's "
        "interconnect states gpus_per_node, intra_node_bandwidth_bytes_per_s and inter_node_bandwidth_bytes_per_s "
        "(per GPU, per direction; docs/time.md).")


# 7. torchtitan's op checkpointing beside Megatron-Core or DeepSpeed

def test_torchtitan_op_checkpointing_needs_fsdp2(capsys):
    """`simulate --train --framework megatron --recompute torchtitan-op` timed torchtitan's per-op policy
    (parallelize_llama.py's _save_list) as if Megatron-Core ran it (139.29 GiB a rank for Llama 3 8B at dp 8),
    while Megatron-Core's own module list beside FSDP2 is refused (check_recompute_framework). One line now;
    under fsdp2, torchtitan's framework, it is what the published torchtitan rows run."""
    for framework in ("megatron", "deepspeed"):
        assert one_error_line(["simulate", "--model", "llama3-8b", "--train", "--dp", "8", "--framework", framework,
                               "--recompute", "torchtitan-op"], capsys) == (
            f"error: recompute 'torchtitan-op' is torchtitan's selective op checkpointing (FSDP2), which {framework} "
            "does not run; use --framework fsdp2, or none, selective or full.")
    fsdp2 = run_json(["simulate", "--model", "llama3-8b", "--train", "--dp", "8", "--framework", "fsdp2",
                      "--recompute", "torchtitan-op"], capsys)
    assert fsdp2["inputs"]["recompute"] == "torchtitan-op" and fsdp2["fits"]
