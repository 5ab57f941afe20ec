"""Session 40's second new-user round (wt40_user2): fine-tuning, cost, Hub ids, fit verdicts and the
Python API as docs/finetuning.md and docs/fit-and-cost.md show them. Each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel
from costmodel.config import ConfigError
from costmodel.finetune import FineTune, finetune_memory
from costmodel.finetune_verdict import finetune_verdict
from costmodel.verdict import verdict
from tests.cli_run import one_error_line, run_json, run_main


def test_moe_finetune_that_fits_nowhere_says_the_least_it_needs(capsys):
    """QLoRA of Mixtral 8x7B at 512 tokens on an A100 80GB (89.50 GiB) ended "No single change, nor QLoRA
    with full recomputation, makes it fit." with no figure (JSON fit.least null): _least tried only --recompute
    full, which a mixture of experts refuses, and the text claimed a recipe it never tried. Now the least is
    the nf4 base at one token with the recomputation as given, the figure `finetune --seq-len 1` prints."""
    fit = run_json(["finetune", "--model", "mixtral-8x7b", "--method", "qlora", "--hardware", "a100-80gb",
                    "--seq-len", "512"], capsys)["fit"]
    assert not fit["fits"] and fit["options"] == []
    assert fit["least"] == {"change": "--seq-len 1", "memory": 91531750808, "recompute": "none"}
    one = run_json(["finetune", "--model", "mixtral-8x7b", "--method", "qlora", "--seq-len", "1"], capsys)
    assert one["memory"]["total"] == fit["least"]["memory"]  # the command it names prints the same bytes
    text = run_main(["finetune", "--model", "mixtral-8x7b", "--hardware", "h100"], capsys)[1]
    assert ("No single change, nor QLoRA (full recomputation is not modelled for a mixture of experts), makes it "
            "fit: even `--method qlora --seq-len 1` needs 85.25 GiB") in text
    assert "nor QLoRA with full recomputation" not in text


def test_verdict_refuses_a_phase_it_does_not_know():
    """costmodel.verdict.verdict(..., phase="train") returned inference's verdict (any phase but "training"
    took inference's memory): Llama 3 8B at 4 x 4,096 "fits" an H100 as training, whose real need is
    615.99 GiB. phase="finetune" without its memory function fell to inference's memory too."""
    cfg = costmodel.load_model("llama3-8b")
    workload, _ = costmodel.make_workload(cfg, 4096, batch=4)
    capacity = 84520468480  # an H100 SXM's 78.72 GiB, estimate --hardware's
    assert verdict(cfg, workload, None, capacity, 1, "training")["memory"] == 661419065860
    with pytest.raises(ConfigError, match="phase must be one of training, inference, finetune, got 'train'"):
        verdict(cfg, workload, None, capacity, 1, "train")
    with pytest.raises(ConfigError, match="finetune_verdict"):
        verdict(cfg, workload, None, capacity, 1, "finetune")


def test_finetune_api_takes_numpy_scalars():
    """docs/finetuning.md's API: FineTune(rank=np.int64(8)) read "--lora-rank must be a positive whole number,
    got np.int64(8)" and make_workload(cfg, np.int64(2048)) "seq_len must be an integer, got np.int64(2048)",
    the contradiction README's API section says numpy's scalars no longer meet. finetune_verdict's capacity too."""
    cfg = costmodel.load_model("llama3-8b")
    workload, _ = costmodel.make_workload(cfg, np.int64(2048), holds_cache=False, attention="sdpa", batch=np.int32(1))
    assert (workload.seq_len, workload.batch) == (2048, 1) and type(workload.seq_len) is int
    tune = FineTune(rank=np.int64(8), alpha=np.float32(16))
    assert tune.rank == 8 and type(tune.rank) is int
    assert finetune_memory(cfg, workload, tune).total == 28487746060  # `finetune --lora-rank 8 --json`'s total
    assert finetune_verdict(cfg, workload, tune, np.int64(24 * 2**30))["fits"] is False


def test_finetune_api_takes_a_model_by_name():
    """finetune_memory("llama3-8b", ...) raised AttributeError ("'str' object has no attribute 'family'"); it
    and finetune_verdict take what costmodel.load_model takes, as estimate does, and a tune that is not a
    FineTune is one ConfigError."""
    cfg = costmodel.load_model("llama3-8b")
    workload, _ = costmodel.make_workload(cfg, 2048, holds_cache=False, attention="sdpa")
    by_name = finetune_memory("llama3-8b", workload, FineTune(rank=8)).total
    assert by_name == finetune_memory(cfg, workload, FineTune(rank=8)).total == 28487746060
    assert finetune_verdict("llama3-8b", workload, FineTune(rank=8), 24 * 2**30)["memory"] == 28487746060
    with pytest.raises(ConfigError, match="tune: a costmodel.finetune.FineTune, got dict"):
        finetune_memory(cfg, workload, {"method": "lora"})


@pytest.mark.parametrize("pasted", ["https://huggingface.co/meta-llama/Llama-3.1-8B", "hf.co/meta-llama/Llama-3.1-8B/",
                                    " meta-llama/Llama-3.1-8B ", "meta-llama/Llama-3.1-8B@main",
                                    "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"])
def test_a_hub_id_as_pasted_reads_as_the_id(pasted, capsys):
    """A Hub id as a browser gives it read "unknown model 'https://huggingface.co/meta-llama/Llama-3.1-8B'. Did
    you mean meta-llama/Llama-3.1-8B" (the address, a trailing slash, spaces, @main), and the config.json page's
    address "no such file". Each is now the id: Llama 3.1 8B's 8,030,261,248 parameters (its preset)."""
    assert run_json(["estimate", "--model", pasted], capsys)["params"]["total"] == 8030261248
    assert costmodel.estimate(pasted).to_dict()["params"]["total"] == 8030261248


def test_a_hub_revision_is_refused_in_one_line_that_says_what_to_do(capsys):
    """meta-llama/Llama-3.1-8B@v1.0 (or .../tree/REV) said "unknown model ... Did you mean
    meta-llama/Llama-3.1-8B": as if the revision were read. It is not: one line names the id and --config."""
    line = one_error_line(["estimate", "--model", "Qwen/Qwen3-8B@v1.0"], capsys)
    assert line == ("error: model 'Qwen/Qwen3-8B@v1.0': a revision (v1.0) is not read: --model Qwen/Qwen3-8B reads "
                    "the main branch's config.json; for another revision's, download it and pass --config "
                    "path/to/config.json.")
    assert "a revision (abc123) is not read" in one_error_line(
        ["estimate", "--model", "https://huggingface.co/Qwen/Qwen3-8B/tree/abc123"], capsys)


def test_simulate_generation_cost_keys_have_units(capsys):
    """`simulate --price 2 --json` without --train wrote cost {price_per_gpu_hour, gpus, dollars_per_hour,
    dollars_per_million_output_tokens} beside units.cost naming the training block's keys (tokens,
    train_seconds, ..., dollars) only: two of its four figures had no unit. $2 an hour over the end-to-end
    rate's tokens: dollars a million = 2 / 3600 / rate x 1e6."""
    sim = run_json(["simulate", "--model", "llama3-8b", "--prompt", "512", "--gen", "64", "--price", "2"], capsys)
    units = sim["units"]["cost"]
    for key in sim["cost"]:
        assert f"{key}: " in units.split("without --train: ")[1], key
    rate = sim["decode"]["end_to_end_tokens_per_second"]
    assert sim["cost"]["dollars_per_hour"] == 2
    assert sim["cost"]["dollars_per_million_output_tokens"] == pytest.approx(2 / 3600 / rate * 1e6, rel=1e-12)


def test_finetune_method_full_says_where_full_fine_tuning_is(capsys):
    """`finetune --method full` read "Invalid value for '--method': 'full' is not one of 'lora', 'qlora'" (and
    FineTune(method="full") "--method must be one of lora, qlora"): nothing on where full fine-tuning is sized.
    Both now name estimate --hardware and simulate --train."""
    line = one_error_line(["finetune", "--model", "llama3-8b", "--method", "full", "--hardware", "h100"], capsys)
    assert line.startswith("error: --method full: finetune sizes LoRA and QLoRA; full fine-tuning")
    assert "`estimate --hardware GPU`" in line and "`simulate --train --tokens N --price P`" in line
    with pytest.raises(ConfigError, match="full fine-tuning .* is `estimate --hardware GPU`"):
        FineTune(method="Full")
    with pytest.raises(ConfigError, match="--method must be one of lora, qlora, got 'dora'"):
        FineTune(method="dora")
