"""simulate --train's decoder length of an encoder-decoder (--tgt-len; costmodel.simulate(train=True, tgt_len=)):
estimate and the published T5 rows (reports/published_runs.train_setup, session 42) time a T5 step with its
decoder at tgt_len, but simulate --train had no such option, so its step, printed line and --json always ran the
decoder at seq_len (wt42_review). Tokens a second are the decoder's (batch x tgt_len), as estimate's per target
token and the published rows' convention."""

from __future__ import annotations

import pytest

import costmodel
from costmodel.config import ConfigError
from tests.cli_run import one_error_line, run_json, run_main

LAYOUT = {"framework": "deepspeed", "dp": 8}


def test_the_layout_step_runs_the_decoder_at_tgt_len():
    short = costmodel.simulate("t5-base", hardware="h100-sxm", train=True, seq_len=512, tgt_len=128, batch=32,
                               layout=LAYOUT).to_dict()
    full = costmodel.simulate("t5-base", hardware="h100-sxm", train=True, seq_len=512, batch=32,
                              layout=LAYOUT).to_dict()
    assert (short["inputs"]["tgt_len"], full["inputs"]["tgt_len"]) == (128, None)
    # the step's tokens: 8 ranks x 32 sequences x 128 decoder tokens (x 512 without tgt_len)
    for result, decoder in ((short, 128), (full, 512)):
        step = result["step"]
        assert step["tokens_per_second"] * step["seconds"] == pytest.approx(8 * 32 * decoder, rel=1e-9)
    assert short["step"]["seconds"] < full["step"]["seconds"]  # a quarter of the decoder's tokens


def test_the_roofline_step_without_a_layout_too():
    short = costmodel.simulate("t5-base", hardware="h100-sxm", train=True, seq_len=512, tgt_len=128,
                               batch=8).to_dict()
    full = costmodel.simulate("t5-base", hardware="h100-sxm", train=True, seq_len=512, batch=8).to_dict()
    assert short["inputs"]["tgt_len"] == 128
    assert short["tokens_per_second"] * short["step"]["seconds"] == pytest.approx(8 * 128, rel=1e-9)
    assert full["tokens_per_second"] * full["step"]["seconds"] == pytest.approx(8 * 512, rel=1e-9)


def test_the_command_prints_and_returns_it(capsys):
    args = ["simulate", "--train", "--model", "t5-base", "--seq-len", "512", "--tgt-len", "128", "--batch", "32",
            "--dp", "8", "--hardware", "h100-sxm"]
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("t5-base training on 8 x h100-sxm (bf16): seq_len 512, tgt_len 128, ")
    data = run_json(args, capsys)
    assert data["inputs"]["tgt_len"] == 128
    api = costmodel.simulate("t5-base", hardware="h100-sxm", train=True, seq_len=512, tgt_len=128, batch=32,
                             layout={"dp": 8}).to_dict()
    assert data["step"]["seconds"] == api["step"]["seconds"]


@pytest.mark.parametrize("args, said", [
    (["--train", "--model", "gpt2", "--tgt-len", "128"], "tgt_len applies only to encoder-decoder models"),
    (["--model", "t5-base", "--tgt-len", "128"], "--tgt-len: training options, read only with --train"),
    (["--train", "--model", "t5-base", "--tgt-len", "0"], "is not a length of at least 1"),
])
def test_bad_tgt_len_is_one_line_and_exit_2(args, said, capsys):
    assert said in one_error_line(["simulate", *args], capsys)


def test_the_python_api_refuses_it_for_inference():
    with pytest.raises(ConfigError, match="tgt_len: read only with train=True"):
        costmodel.simulate("t5-base", tgt_len=128)
