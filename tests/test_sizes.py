"""Sizes as users write them (costmodel/sizes.py, the Size type of reports/options.py): every option that
takes a length reads 128k as 131,072 and 1M as 1,048,576 (k = 1,024, as the configs count positions:
Llama 3.1's max_position_embeddings is 131072), --tokens reads 15T as 15,000,000,000,000 (decimal, as
papers count tokens), a command given 128k prints what it prints for 131072, and bad input is one line.

`plan --model llama3-8b --gpus 8 --seq-len 128k` said "'128k' is not a valid integer" (session 40)."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel import sizes
from costmodel.serving.workload import Lengths
from reports.options import Size
from reports.sweep import parse_values

from cli_run import one_error_line, run_main

#: Every option that takes a size: (command, option) -> total (a run's tokens) or a length.
SIZED = {
    ("estimate", "--seq-len"): False, ("estimate", "--tgt-len"): False, ("estimate", "--gen-tokens"): False,
    ("finetune", "--seq-len"): False, ("finetune", "--tokens"): True,
    ("plan", "--seq-len"): False, ("plan", "--tokens"): True,
    ("report", "--seq-len"): False,
    ("serve", "--max-batched-tokens"): False, ("serve", "--max-capture-len"): False,
    ("simulate", "--prompt"): False, ("simulate", "--gen"): False, ("simulate", "--seq-len"): False,
    ("simulate", "--tokens"): True, ("simulate", "--cache-size"): False,
    ("simulate", "--tgt-len"): False,  # session 42 (wt42_review): an encoder-decoder's decoder length in training
    ("sweep", "--gen-tokens"): False,
    ("validate", "--seq-len"): False, ("validate", "--tgt-len"): False, ("validate", "--gen-tokens"): False,
}


def sized_params():
    """(command, first option, param) for every option of every command whose type is Size."""
    return [(name, param.opts[0], param) for name, command in sorted(cli.cli.commands.items())
            for param in command.params if isinstance(param.type, Size)]


def test_every_option_that_takes_a_size_is_listed():
    """A new --something-len typed int would slip past the list below (and take no suffix)."""
    assert {(name, option): param.type.total for name, option, param in sized_params()} == SIZED


@pytest.mark.parametrize("name, option, param", sized_params(), ids=lambda x: getattr(x, "name", x))
def test_each_option_reads_the_suffixes_to_the_exact_integer(name, option, param):
    convert = param.type.convert
    if param.type.total:  # decimal: Llama 3's "15T tokens", Chinchilla's 1.4T
        assert [convert(text, param, None) for text in ("15T", "1.4T", "300B", "2G", "1M", "10k", "2e12")] == [
            15_000_000_000_000, 1_400_000_000_000, 300_000_000_000, 2_000_000_000, 1_000_000, 10_000, 2e12]
    else:  # binary: the configs' 4096, 8192, 32768, 131072 positions
        assert [convert(text, param, None) for text in ("128k", "128K", "1M", "4k", "131072", "0k" if
                                                         param.type.least == 0 else "1")] == [
            131_072, 131_072, 1_048_576, 4_096, 131_072, 0 if param.type.least == 0 else 1]
        assert isinstance(convert("128k", param, None), int)


@pytest.mark.parametrize("name, option, param", sized_params(), ids=lambda x: getattr(x, "name", x))
def test_bad_sizes_are_one_line_naming_the_option_and_the_forms(name, option, param, capsys):
    """Parsing fails before the command runs, so each command's own inputs do not matter here."""
    bad = ["12q", "15X"] if param.type.total else ["12q", "-4k", "1.5k", "4e3", "2T"]
    if not param.type.total and param.type.least == 1:
        bad.append("0")
    for text in bad:
        line = one_error_line([name, option, text], capsys)
        assert f"'{option}'" in line and f"'{text}'" in line, line
        assert (sizes.TOTAL_FORMS if param.type.total else sizes.LENGTH_FORMS) in line, line


def test_the_forms_and_the_note():
    assert sizes.parse_length("128k") == 131_072 and sizes.parse_length("1M") == 1_048_576
    assert sizes.parse_total("15T") == 15e12 and sizes.parse_total("1.4e12") == 1.4e12
    assert (sizes.resolved("128k", 131_072), sizes.resolved("131072", 131_072)) == ("128k = 131,072", None)
    assert sizes.resolved("15T", 15e12) == "15T = 15,000,000,000,000"
    assert sizes.resolved("inf", float("inf")) is None


def _same(args_suffixed: list[str], args_plain: list[str], capsys) -> str:
    """The two runs' stdout, which must be equal; returns the suffixed run's stderr (its notes)."""
    code, out, err = run_main(args_suffixed, capsys)
    code_plain, out_plain, err_plain = run_main(args_plain, capsys)
    assert (code, code_plain) == (0, 0), err + err_plain
    assert out == out_plain and out
    return err


def test_estimate_at_128k_is_estimate_at_131072(capsys):
    base = ["estimate", "--model", "llama3-8b", "--json"]
    err = _same([*base, "--seq-len", "128k", "--gen-tokens", "1k"], [*base, "--seq-len", "131072", "--gen", "1024"],
                capsys)
    assert "note: --seq-len 128k = 131,072 tokens" in err and "note: --gen-tokens 1k = 1,024 tokens" in err
    assert json.loads(run_main([*base, "-n", "128k"], capsys)[1])["inputs"]["seq_len"] == 131_072


def test_simulate_inference_training_and_tokens(capsys):
    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100", "--json"]
    _same([*base, "--prompt", "4k", "--gen", "1k"], [*base, "--prompt", "4096", "--gen", "1024"], capsys)
    _same([*base, "--prompt", "1k", "--gen", "1k", "--kv-cache", "static", "--cache-size", "4k"],
          [*base, "--prompt", "1024", "--gen", "1024", "--kv-cache", "static", "--cache-size", "4096"], capsys)
    train = [*base, "--train", "--gpus", "8"]
    err = _same([*train, "--seq-len", "8k", "--tokens", "15T"], [*train, "--seq-len", "8192", "--tokens",
                                                                  "15000000000000"], capsys)
    assert "note: --tokens 15T = 15,000,000,000,000 tokens" in err


def test_plan_at_128k_is_plan_at_131072(capsys):
    """The command the new user typed."""
    base = ["plan", "--model", "llama3-8b", "--gpus", "8", "--top", "1", "--json"]
    err = _same([*base, "--seq-len", "128k"], [*base, "--seq-len", "131072"], capsys)
    assert "note: --seq-len 128k = 131,072 tokens" in err
    serve = ["plan", "--model", "llama3-8b", "--gpus", "2", "--serve", "--top", "1", "--json"]
    _same([*serve, "--prompt", "8k", "--gen", "1k"], [*serve, "--prompt", "8192", "--gen", "1024"], capsys)
    assert one_error_line([*serve, "--prompt", "8.5k"], capsys).startswith("error: --prompt '8.5k': ")


def test_sweep_grids_and_finetune(capsys):
    assert parse_values("1k:4k:x2,128k", "--seq-len", lengths=True) == [1024, 2048, 4096, 131_072]
    assert parse_values("128:1M:x1024", "--seq-len", lengths=True) == [128, 131_072]
    with pytest.raises(Exception, match="'1.5k' is not a length"):
        parse_values("1.5k", "--seq-len", lengths=True)
    with pytest.raises(Exception, match="'4k' is not an integer"):  # batch sizes stay integers
        parse_values("4k", "--batch")
    base = ["sweep", "--model", "llama3-8b", "--batch", "1,2"]
    _same([*base, "--seq-len", "1k:8k:x2", "-T", "1k"], [*base, "--seq-len", "1024:8192:x2", "-T", "1024"], capsys)
    tune = ["finetune", "--model", "llama3-8b", "--method", "lora", "--json"]
    _same([*tune, "--seq-len", "4k"], [*tune, "--seq-len", "4096"], capsys)


def test_serving_lengths_take_the_suffixes():
    assert Lengths.parse("4k") == Lengths("fixed", mean=4096)
    assert Lengths.parse("uniform:1k:4k") == Lengths("uniform", low=1024, high=4096)
    assert Lengths.parse("lognormal:2k:0.5:1k:8k") == Lengths("lognormal", mean=2048, sigma=0.5, low=1024,
                                                               high=8192)
    with pytest.raises(ValueError, match="use N"):
        Lengths.parse("uniform:1.5k:4k")


def test_serve_at_4k_is_serve_at_4096(capsys):
    base = ["serve", "--model", "llama2-7b", "--hardware", "h100", "--rate", "2", "--requests", "20", "--json"]
    _same([*base, "--prompt", "uniform:1k:2k", "--output", "128", "--max-batched-tokens", "8k"],
          [*base, "--prompt", "uniform:1024:2048", "--output", "128", "--max-batched-tokens", "8192"], capsys)


def test_a_runs_setup_spells_the_lengths_out():
    assert sizes.spelled_out("uniform:1k:4k") == "uniform:1024:4096"
    assert sizes.spelled_out("lognormal:2k:0.5:1k:8k") == "lognormal:2048:0.5:1024:8192"
    assert (sizes.spelled_out("512"), sizes.spelled_out("histogram:4k.json")) == ("512", "histogram:4k.json")
