"""The eleventh new-user round's leftovers (issue 18, session 18; validate/FINDINGS.md "A new user's
eleventh round", "Found, not fixed"). Each test failed before its fix; the numbers are exact."""

from __future__ import annotations

import json

import cli

CP_REFUSAL = ("layout: context parallelism (--cp) is modelled for training only: an inference prefill's "
              "key/value exchange and decode context parallelism (vLLM's dcp) are not.")


def _run(args, capsys):
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_estimate_refuses_to_serve_a_context_parallel_layout_as_simulate_does(capsys):
    """`estimate --cp 2 --hardware h100` sized each serving rank with the whole KV cache ("Inference
    on 2 GPUs: 15.96 GiB fits") while `simulate --cp 2` refuses the layout: the inference verdict now
    carries simulate's sentence; the training verdict (its ZeRO suggestion) stays."""
    args = ["--model", "llama3.1-8b", "--cp", "2", "--hardware", "h100", "--seq-len", "8192"]
    code, out, err = _run(["estimate", *args, "--json"], capsys)
    fit = json.loads(out)["fit"]
    assert code == 0 and fit["inference"] == {"phase": "inference", "gpus": 2, "refused": CP_REFUSAL}
    assert fit["training"]["options"][0]["memory"] == 85_309_186_572
    code, out, _ = _run(["estimate", *args], capsys)
    assert ("Inference on 2 h100-sxm GPUs: not sized; " + CP_REFUSAL.removeprefix("layout: ")) in out.splitlines()
    code, _, err = _run(["simulate", "--model", "llama3.1-8b", "--cp", "2", "--hardware", "h100", "--prompt",
                         "8192", "--gen", "4"], capsys)
    assert code == 2 and err.strip() == f"error: {CP_REFUSAL}"
