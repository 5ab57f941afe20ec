"""Session 41's second new-user round (wt41_user2): fine-tuning, cost, Hub ids, fit verdicts and the
Python API as README.md, docs/finetuning.md and docs/fit-and-cost.md show them. Each test failed before its fix."""

from __future__ import annotations

import json

import numpy as np
import pytest

import costmodel
from costmodel.config import ConfigError
from costmodel.verdict import verdict
from tests.cli_run import one_error_line, run_json, run_main

#: An RTX 4090's 23.50 GiB, what finetune --hardware rtx-4090 holds a step to (24 GiB less the 512 MiB reserve).
RTX_4090 = 25232932864
#: Unsloth's README benchmark setup (Llama 3.1 8B, 4-bit QLoRA on all linear layers, rank 32, batch 1),
#: with bf16 adapters and FlashAttention-2, as finetune spells it.
UNSLOTH_SETUP = ["finetune", "--model", "llama3.1-8b", "--method", "qlora", "--lora-targets", "all-linear",
                 "--lora-rank", "32", "--attention", "flash", "--adapter-dtype", "bf16"]


def test_verdict_api_checks_its_inputs_as_finetune_verdict_does():
    """docs/fit-and-cost.md's costmodel.verdict.verdict(cfg, workload, layout, capacity, gpus, phase): a preset's
    name was an AttributeError traceback ("'str' object has no attribute 'architecture'"), capacity "80GB" a
    TypeError, capacity -5 "does not fit" with no option, gpus=0 ran as one GPU. finetune_verdict checked the
    first two since session 40; both now share verdict.api_inputs."""
    cfg = costmodel.load_model("llama3-8b")
    workload, _ = costmodel.make_workload(cfg, 4096, batch=4)
    h100 = 84520468480  # estimate --hardware h100's 78.72 GiB
    assert verdict("llama3-8b", workload, None, h100, 1, "training")["memory"] == 661419065860
    assert verdict(cfg, workload, None, np.int64(h100), np.int64(2), "training")["gpus"] == 2
    for capacity in ("80GB", -5, float("nan"), True):
        with pytest.raises(ConfigError, match="capacity: the GPU's bytes, a positive number"):
            verdict(cfg, workload, None, capacity, 1, "training")
    for gpus in (0, 2.5, "8"):
        with pytest.raises(ConfigError, match="gpus: a positive whole number of GPUs"):
            verdict(cfg, workload, None, h100, gpus, "inference")


def test_batch_one_verdict_offers_full_recomputation_with_a_shorter_sequence(capsys):
    """QLoRA of Llama 3.1 8B at 60,000 tokens on an RTX 4090 (Unsloth's setup) was offered only `--seq-len 2925`:
    full recomputation alone (60.53 GiB) does not fit, and the verdict tried recomputation beside a smaller
    batch only, which at batch 1 is no change. With it the longest sequence is 19,303 tokens, the figure
    `finetune --recompute full --seq-len 19303` prints; 19,304 does not fit."""
    fit = run_json([*UNSLOTH_SETUP, "--seq-len", "60000", "--hardware", "rtx-4090"], capsys)["fit"]
    assert [(o["change"], o["memory"]) for o in fit["options"]] == [
        ("--seq-len 2925", 25230696104), ("--recompute full --seq-len 19303", 25232275544)]
    at = run_json([*UNSLOTH_SETUP, "--recompute", "full", "--seq-len", "19303"], capsys)["memory"]["total"]
    over = run_json([*UNSLOTH_SETUP, "--recompute", "full", "--seq-len", "19304"], capsys)["memory"]["total"]
    assert at == 25232275544 <= RTX_4090 < over
    text = run_main([*UNSLOTH_SETUP, "--seq-len", "60000", "--hardware", "rtx-4090"], capsys)[1]
    assert "--recompute full --seq-len 19303    23.50 GiB   each layer's forward rerun, shorter sequences" in text


def test_a_folder_here_without_a_slash_is_read(tmp_path, monkeypatch, capsys):
    """A model downloaded with `--local-dir mymodel` and given as `--model mymodel` read "unknown model 'mymodel'.
    Known: ..." and 66 preset names, nothing on ./mymodel (read) or --config; a name no preset is spelled like
    ended with the list alone. The folder is read now (a preset's name still means the preset), and the list
    says where any other model goes."""
    from costmodel.presets import PRESET_DIR

    (tmp_path / "mymodel").mkdir()
    (tmp_path / "mymodel" / "config.json").write_text((PRESET_DIR / "llama3-8b.json").read_text())
    monkeypatch.chdir(tmp_path)
    assert run_json(["estimate", "--model", "mymodel"], capsys)["params"]["total"] == 8030261248
    assert costmodel.estimate("mymodel").to_dict()["params"]["total"] == 8030261248
    line = one_error_line(["estimate", "--model", "zzqqxx"], capsys)
    assert line.startswith("error: unknown model 'zzqqxx'. Known: ") and line.endswith(
        "Any other model: its Hub id (--model org/name) or its config.json (--config path/to/config.json).")


@pytest.mark.parametrize("typed, preset, count", [("8xh100", "h100-sxm", 8), ("H100 x 8", "h100-sxm", 8),
                                                  ("h100:8", "h100-sxm", 8), ("2*A100-80GB", "a100-80gb", 2),
                                                  ("4x RTX 4090", "rtx-4090", 4)])
def test_a_gpu_count_in_the_hardware_name_says_where_it_goes(typed, preset, count, capsys):
    """`--hardware 8xh100` (as clouds name their machines) read "unknown hardware '8xh100'. Did you mean h800, h200,
    h100-sxm?": the count was read as part of a GPU's name and the first guess another GPU. One line now names the
    GPU and where its count goes, in every command that takes --hardware."""
    for command in (["estimate"], ["finetune"], ["simulate", "--train"]):
        line = one_error_line([*command, "--model", "llama3-8b", "--hardware", typed], capsys)
        assert line == (f"error: --hardware {typed!r}: --hardware names one GPU ({preset}); give the count apart: "
                        f"--hardware {preset} --gpus {count} (estimate, simulate, plan), or serve's --tp and "
                        "--replicas; finetune sizes one GPU.")
    assert "Did you mean" in one_error_line(["estimate", "--model", "llama3-8b", "--hardware", "h100x0"], capsys)


@pytest.mark.parametrize("model, family", [("deepseek-v2-lite", "deepseek_v2"), ("gpt-oss-20b", "gpt_oss"),
                                           ("falcon-7b", "falcon")])
def test_finetune_of_an_unsized_family_says_what_sizes_it(model, family, capsys):
    """`finetune --model deepseek-v2-lite` (an MoE LLaMA-Factory fine-tunes) ended "model 'deepseek-v2-lite' is
    deepseek_v2." and no more: nothing said the LoRA is not sized, nor which command sizes its fine-tuning."""
    line = one_error_line(["finetune", "--model", model, "--hardware", "h100"], capsys, warnings=True)
    assert line.endswith(f"model {model!r} is {family}, whose LoRA is not sized (not measured against peft); "
                         "`estimate --hardware GPU` sizes its full fine-tuning, every weight trained.")


@pytest.fixture
def priced_h100(tmp_path):
    """An H100 SXM's preset with a rental price of its own, as docs/fit-and-cost.md says a hardware file may state."""
    from costmodel.hardware import HARDWARE_DIR

    data = json.loads((HARDWARE_DIR / "h100-sxm.json").read_text())
    path = tmp_path / "priced-h100.json"
    path.write_text(json.dumps({**data, "name": "priced-h100", "price_per_gpu_hour": 2.99}))
    return str(path)


def test_a_price_from_the_hardware_file_says_so(priced_h100, capsys):
    """With a hardware file's price_per_gpu_hour and no --price, simulate, plan, serve and finetune printed "at
    $2.99 per GPU-hour" exactly as for a typed price, and no JSON said which it was (session 40 left it out).
    Each cost block now has price_source, and the text names the file's price; a typed --price reads as before."""
    file_note = "(the hardware file's price_per_gpu_hour)"
    train = ["simulate", "--model", "llama3-8b", "--train", "--tokens", "1e9", "--hardware", priced_h100]
    assert run_json(train, capsys)["cost"]["price_source"] == "hardware file"
    assert f"at $2.99 per GPU-hour {file_note}" in run_main(train, capsys)[1]
    typed = run_main([*train, "--price", "3"], capsys)[1]
    assert "at $3 per GPU-hour\n" in typed and file_note not in typed
    assert run_json([*train, "--price", "3"], capsys)["cost"]["price_source"] == "--price"
    generate = ["simulate", "--model", "llama3-8b", "--prompt", "512", "--gen", "64", "--hardware", priced_h100]
    assert run_json(generate, capsys)["cost"]["price_source"] == "hardware file"
    assert "= $2.99/h, the hardware file's price_per_gpu_hour)" in run_main(generate, capsys)[1]
    serve = ["serve", "--model", "llama3-8b", "--rate", "2", "--requests", "20", "--hardware", priced_h100]
    assert run_json(serve, capsys)["cost"]["price_source"] == "hardware file"
    # was "1 GPU(s)" before round 46
    assert f"cost: 1 GPU x $2.99 an hour = $2.99/h {file_note}; " in run_main(serve, capsys)[1]
    plan = ["plan", "--model", "llama3-8b", "--gpus", "8", "--tokens", "1e12", "--top", "1", "--hardware", priced_h100]
    assert run_json(plan, capsys)["feasible"][0]["cost"]["price_source"] == "hardware file"
    assert f"at $2.99 per GPU-hour {file_note}" in run_main(plan, capsys)[1]
    tune = ["finetune", "--model", "llama3-8b", "--tokens", "1e8", "--hardware", priced_h100]
    assert run_json(tune, capsys)["time"]["price_source"] == "hardware file"
    assert f"at $2.99/GPU-hour {file_note}" in run_main(tune, capsys)[1]
    api = costmodel.simulate("llama3-8b", hardware=priced_h100, train=True, tokens=1e9).to_dict()["cost"]
    assert (api["price_per_gpu_hour"], api["price_source"]) == (2.99, "hardware file")


def test_verdict_api_refuses_a_layout_on_other_gpus():
    """verdict(cfg, workload, Layout(dp=8, zero=3), capacity, 2, "training") answered gpus 2 with the 8-rank layout's
    memory (154,183,395,852 B), where `estimate --dp 8 --zero 3 --gpus 2` refuses the pair in one line. The same
    line now, from Layout.check_gpus; gpus=None still takes the layout's 8."""
    from costmodel.layout import Layout

    cfg = costmodel.load_model("llama3-8b")
    workload, _ = costmodel.make_workload(cfg, 4096)
    with pytest.raises(ConfigError, match=r"layout: tp x pp x dp = 1 x 1 x 8 = 8, not the 2 GPUs asked for\."):
        verdict(cfg, workload, Layout(dp=8, zero=3), 84520468480, 2, "training")
    found = verdict(cfg, workload, Layout(dp=8, zero=3), 84520468480, None, "training")
    assert (found["gpus"], found["memory"]) == (8, 154183395852)
