"""Defects found by the thirty-second new user (wt33_user, session 33): an ML engineer who read only the README and
docs/commands.md (and the docs it links), asking how many parameters, FLOPs and bytes, whether it fits, how long and
what it costs, which block is to blame, with local config.json files of recent families, every command and the
Python API."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_run import one_error_line, run_json, run_main

ROOT = Path(__file__).resolve().parent.parent
LLAMA3_8B = ["--model", "llama3-8b", "--seq-len", "4096", "--global-batch", "64"]


@pytest.mark.parametrize("layout, option, lacks", [
    (["--gpus", "16", "--dp", "16", "--framework", "megatron", "--zero", "1"], ["--tp-overlap", "0.5"], "tp 1"),
    (["--gpus", "16", "--dp", "16", "--framework", "megatron", "--zero", "1"], ["--pp-overlap", "0.5"], "pp 1"),
    (["--gpus", "16", "--dp", "16", "--framework", "megatron", "--zero", "1"], ["--no-prefetch"], "once a step"),
    (["--gpus", "8", "--tp", "8", "--dp", "1", "--framework", "megatron"], ["--dp-overlap", "0.5"], "dp 1"),
    (["--gpus", "8", "--tp", "8", "--dp", "1", "--framework", "megatron"], ["--overlap-grad-reduce"], "dp 1"),
    (["--gpus", "8", "--tp", "8", "--dp", "1", "--framework", "megatron"], ["--no-prefetch"], "dp 1"),
    (["--gpus", "8", "--dp", "8", "--framework", "fsdp2", "--zero", "3"], ["--dp-overlap", "0.5"], "each micro-batch"),
    (["--gpus", "16", "--pp", "2", "--dp", "8", "--framework", "deepspeed", "--zero", "1"], ["--dp-overlap", "0.5"],
     "after the schedule's last backward"),
])
def test_an_overlap_option_the_layout_has_nothing_for_is_refused(layout, option, lacks, capsys):
    """`simulate --train --model llama3-8b --gpus 16 --dp 16 --framework megatron --zero 1 --tp-overlap 0.5` printed
    the very step it printed without the option (so did --pp-overlap at pp 1, --no-prefetch on a ZeRO-1 layout,
    --dp-overlap and --overlap-grad-reduce at dp 1, --dp-overlap on FSDP2, whose collectives run each micro-batch under
    --no-prefetch's rule, and on DeepSpeed's pipeline engine, which reduces after its last backward): the option was
    read by no collective, where --param-gather-overlap, --no-align-grad-reduce and --ep-overlap are refused in one
    line on a layout without theirs. Each is now refused the same way, naming what the layout lacks."""
    line = one_error_line(["simulate", "--train", *LLAMA3_8B, *layout, *option], capsys)
    assert option[0] in line and lacks in line


@pytest.mark.parametrize("layout, option", [
    (["--gpus", "16", "--tp", "2", "--dp", "8", "--framework", "megatron", "--zero", "1"], ["--tp-overlap", "0.5"]),
    (["--gpus", "16", "--tp", "2", "--dp", "8", "--framework", "megatron", "--zero", "1"], ["--overlap-grad-reduce"]),
    (["--gpus", "8", "--dp", "8", "--framework", "fsdp2", "--zero", "3"], ["--no-prefetch"]),
    (["--gpus", "16", "--pp", "2", "--dp", "8", "--framework", "megatron", "--zero", "1", "--schedule", "1f1b"],
     ["--pp-overlap", "1"]),
])
def test_an_overlap_option_the_layout_reads_moves_its_step(layout, option, capsys):
    """Where the layout has the collective, the option still moves the step (it hides or exposes it)."""
    before = run_json(["simulate", "--train", *LLAMA3_8B, *layout], capsys)["step"]["seconds"]
    after = run_json(["simulate", "--train", *LLAMA3_8B, *layout, *option], capsys)["step"]["seconds"]
    assert after != before


def test_commands_md_lists_the_options_an_inference_layout_takes(capsys):
    """docs/commands.md listed `--cp` among the options of an inference layout ("with `--cp` no prefill figure, its
    key/value exchange is not modelled"); `simulate --model llama3-8b --cp 2` is refused in one line (since f5fab7a7:
    it printed a decode step alone with each rank holding the whole cache). The doc now says it is refused."""
    line = one_error_line(["simulate", "--model", "llama3-8b", "--cp", "2", "--prompt", "8000", "--gen", "16"], capsys)
    assert "context parallelism (--cp) is modelled for training only" in line
    text = " ".join((ROOT / "docs" / "commands.md").read_text().split())
    assert "with `--cp` no prefill figure" not in text
    assert "`--cp`, `--stage-layers`;" not in text and "and so is `--cp` above 1" in text


@pytest.mark.parametrize("recompute, rerun", [
    # full: every layer's forward again (the 32 layers' 28,724,741,177,344 of the 29,261,612,187,648 forward
    # FLOPs: all but the head's 2 x 2,048 x 4,096 x 32,000 = 536,870,912,000)
    ("full", 29_261_612_187_648 - 536_870_912_000),
    # selective (Korthikanti et al.'s): the attention core's two matmuls, 2 x 2 x 2,048^2 x 4,096 x 32 layers
    ("selective", 2 * 2 * 2048 ** 2 * 4096 * 32),
])
def test_estimate_says_what_recomputation_adds_to_the_training_flops(recompute, rerun, capsys):
    """`estimate --model llama2-7b --recompute full` printed "training (fwd+bwd) 87.78 TFLOP", the figure without
    recomputation, and nothing of the 28.72 TFLOP its backward reruns (a third more matmul FLOPs, as `finetune`'s
    suggestion says): the user asking how many FLOPs a step with recomputation costs read the same figure as without
    it. The rerun's matmul FLOPs are now their own line (JSON `flops.recomputed_forward`), beside the training
    figure kept as the model FLOPs MFU divides by; none without recomputation."""
    args = ["estimate", "--model", "llama2-7b", "--recompute", recompute]
    flops = run_json(args, capsys)["flops"]
    assert flops["training"] == 87_784_836_562_944 and flops["recomputed_forward"] == rerun
    code, out, _ = run_main(args, capsys)
    assert code == 0 and "  recomputed forward " in out
    assert "recomputed_forward" not in run_json(["estimate", "--model", "llama2-7b"], capsys)["flops"]


# Qwen3-4B's config.json (Qwen/Qwen3-4B, as its Hub page shows it), with an unsloth-style bitsandbytes nf4
# quantization_config
QWEN3_4B = {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "head_dim": 128, "hidden_act": "silu",
            "hidden_size": 2560, "intermediate_size": 9728, "max_position_embeddings": 40960, "model_type": "qwen3",
            "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
            "rope_theta": 1000000, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 151936}
BNB_NF4 = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
           "bnb_4bit_use_double_quant": True}


def test_a_lora_on_a_bitsandbytes_nf4_checkpoint_names_qlora(capsys, tmp_path):
    """`finetune --config qwen3-4b-bnb-4bit/config.json` (method lora, the default) noted "a LoRA on the stored format
    is not modelled" and counted the base in bf16 (7.49 GiB), while a LoRA on a bitsandbytes nf4 base is QLoRA, which
    `--method qlora` counts as stored (2.47 GiB, no note). The note now names it."""
    import json

    config = tmp_path / "config.json"
    config.write_text(json.dumps({**QWEN3_4B, "quantization_config": BNB_NF4}))
    code, out, err = run_main(["finetune", "--config", str(config)], capsys)
    assert code == 0 and "base weights           7.49 GiB   frozen, bf16" in out
    note = next(line for line in err.splitlines() if line.startswith("note: the checkpoint's quantization_config"))
    assert "--method qlora counts it as stored" in note and "not modelled" not in note
    code, out, err = run_main(["finetune", "--config", str(config), "--method", "qlora"], capsys)
    assert code == 0 and "base weights           2.47 GiB   nf4" in out and "quantization_config" not in err


def test_commands_md_quotes_sweeps_weight_formats_as_it_computes_them():
    """docs/commands.md: "gpt-oss-20b: MXFP4 experts, 13.68 GiB at n = 2048 where `--weight-dtype none` gives 39.82
    GiB"; `sweep --model gpt-oss-20b --seq-len 2048 --batch 1` gives 13.91 GiB and 40.05 GiB (estimate's inference
    total, the same figures): the doc kept the figures of the commit that added the option (9c4ce50d)."""
    import costmodel

    text = " ".join((ROOT / "docs" / "commands.md").read_text().split())
    mxfp4, none = (costmodel.sweep("gpt-oss-20b", seq_len=[2048], batch=[1], **kw)["inference_bytes"].iloc[0] / 2 ** 30
                   for kw in ({}, {"weight_dtype": "none"}))
    assert (round(mxfp4, 2), round(none, 2)) == (13.91, 40.05)
    assert f"MXFP4 experts, {mxfp4:.2f} GiB at n = 2048 where `--weight-dtype none` gives {none:.2f} GiB" in text


GPT2_TP_SP = ["--model", "gpt2", "--gpus", "8", "--seq-len", "1024"]
GPT2_LAYOUT = ["--tp", "2", "--dp", "4", "--zero", "2", "--microbatches", "2", "--batch", "8", "--sp",
               "--framework", "fsdp2"]


def test_a_sequence_parallel_fsdp2_steps_split_holds_dtensors_copies(capsys):
    """`plan --model gpt2 --gpus 8 --seq-len 1024 --json`: 48 of its 888 layouts (FSDP2 with tp 2 and SP) had a
    `split` summing to 26.6 ms beside a step_time of 28.4 ms; `simulate --train` with one of them printed "step 28.4
    ms" over lines adding up to 26.1 ms. Session 32 charged DTensor's cat around each sequence-sharded TP collective
    (1.88 ms here, `dtensor_copy_seconds`) in the step but not in the split (layout/step_parts.py), and simulate's text
    printed neither it nor FSDP2's copies (467 us). The split now holds it, and the text prints both."""
    from reports.layout_figures import STEP_PARTS

    plan = run_json(["plan", *GPT2_TP_SP], capsys)
    assert [name for name, _ in STEP_PARTS] == list(plan["feasible"][0]["split"])  # report's bars: every part
    for entry in plan["feasible"]:
        assert sum(entry["split"].values()) == pytest.approx(entry["step_time"], rel=1e-9), entry["layout"]
    step = run_json(["simulate", "--train", *GPT2_TP_SP, *GPT2_LAYOUT], capsys)["step"]
    assert step["dtensor_copy_seconds"] > 0 and step["fsdp_copy_seconds"] > 0
    code, out, _ = run_main(["simulate", "--train", *GPT2_TP_SP, *GPT2_LAYOUT], capsys)
    assert code == 0 and "  DTensor copies           1.88 ms" in out and "  FSDP2 copies              467 us" in out
