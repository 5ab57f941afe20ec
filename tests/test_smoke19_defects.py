"""A new user's nineteenth round (session 24; validate/FINDINGS.md "A new user's nineteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic, or the figure
another command prints for the same case."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_json, run_main


def one_error_line(args: list[str], capsys) -> str:
    """The one `error:` line of a refused command (exit status 2, nothing on stdout, no traceback)."""
    code, out, err = run_main(args, capsys)
    lines = err.strip().splitlines()
    assert (code, out, len(lines)) == (2, "", 1), (code, out, err)
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


# 2. A request past the context: serve refuses it (vLLM's max_model_len), and so does the capacity search

LLAMA31 = ["--model", "meta-llama/Llama-3.1-8B", "--hardware", "h100"]
PAST = "error: request 0: prompt 131073 + output 1 tokens pass the model's context of 131072."


def test_plan_serve_rate_refuses_a_request_past_the_context(capsys):
    """plan --serve --rate ran its 36 configurations and listed each "not feasible" (request 0),
    exit 1; it now says what serve says for the same request (Llama 3.1's 131,072 positions)."""
    assert one_error_line(["plan", "--serve", *LLAMA31, "--prompt", "131073", "--gen", "1", "--rate", "1",
                           "--slo-ttft", "100", "--slo-tpot", "1"], capsys) == PAST
    assert one_error_line(["serve", *LLAMA31, "--prompt", "131073", "--output", "1", "--rate", "1"], capsys) == PAST


def test_plan_serve_without_rate_warns_as_simulate_does(capsys):
    """plan --serve without --rate times Hugging Face generate's layouts (simulate's workload, which
    runs past the context with a warning), so it warns as simulate does."""
    warning = "warning: sequence length 131073 is beyond the context of model 'llama3.1-8b' (131072 tokens)."
    for args in (["plan", "--serve", *LLAMA31, "--gpus", "8"], ["simulate", *LLAMA31, "--tp", "8"]):
        code, _, err = run_main([*args, "--prompt", "131073", "--gen", "1"], capsys)
        assert code == 0 and warning in err
