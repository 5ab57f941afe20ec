"""What a new user's round 46b turned up (wt46_user2): fine-tuning, cost, Hub ids and fit verdicts, run as an
ML engineer types them from README.md and docs/. Each test runs the command or the call as typed and checks the
answer; each failed before its fix.
"""

from __future__ import annotations

import json

from tests.cli_run import run_json, run_main


def test_a_fit_offers_a_fused_kernel_with_full_recomputation_on_the_gpus_given(capsys):
    # Qwen3 8B at 8,192 tokens on one H200 under estimate's eager default: 621.43 GiB; sdpa alone 186.09 GiB and
    # full recomputation alone (eager) over 140.50 GiB, so neither was offered, and the cheapest option read
    # "--gpus 2 (--dp with --zero 3 --recompute full)", sized under sdpa and full recomputation, the two that
    # fit on the one GPU given (`estimate --attention sdpa --recompute full`: 130.84 GiB, fits).
    fit = run_json(["estimate", "--model", "qwen3-8b", "--hardware", "h200", "--seq-len", "8192"], capsys)["fit"]
    training = fit["training"]
    assert (training["memory"], training["fits"]) == (667_250_967_052, False)
    first = training["options"][0]
    assert (first["change"], first["memory"], first["fits"]) == (
        "--attention sdpa --recompute full", 140_483_150_348, True)
    assert not any(option["change"].startswith("--gpus") for option in training["options"])
    # the option's bytes are the command it names
    typed = run_json(["estimate", "--model", "qwen3-8b", "--hardware", "h200", "--seq-len", "8192",
                      "--attention", "sdpa", "--recompute", "full"], capsys)["fit"]["training"]
    assert (typed["memory"], typed["fits"]) == (140_483_150_348, True)
