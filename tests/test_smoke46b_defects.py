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


def test_a_request_no_utilization_holds_names_what_shrinks_it(capsys):
    # Llama 3.1 8B, a 100,000-token prompt on an RTX 4090: 6,257 blocks of 16 tokens needed, 3,105 at vLLM's 0.9
    # ((0.9 x 24 GiB - 512 MiB - 16,060,522,496 B of weights - 82,461,184 B of activations) // (131,072 B x 16))
    # and 4,334 with the whole memory; the one line said only "raise --gpu-memory-utilization".
    from tests.cli_run import one_error_line

    args = ["serve", "--model", "llama3.1-8b", "--hardware", "rtx-4090", "--output", "100", "--rate", "0.1",
            "--requests", "5"]
    assert one_error_line([*args, "--prompt", "100000"], capsys) == (
        "error: request 0 needs 6,257 KV blocks of 16 tokens; the cache holds 3,105 at --gpu-memory-utilization 0.9, "
        "and all of rtx-4090's memory 4,334: store the KV cache in fewer bytes (--kv-dtype fp8), spread the model "
        "over more GPUs (--tp, --pp), store its weights in fewer bytes (--weight-dtype), or shorten the request "
        "(--prompt, --output).")
    assert (6_257 - 1) * 16 < 100_000 + 100 - 1 <= 6_257 * 16
    assert (int(0.9 * 24 * 2**30) - 2**29 - 16_060_522_496 - 82_461_184) // (131_072 * 16) == 3_105
    # where a higher utilization does hold it (50,000 tokens: 3,132 blocks), the advice stays that
    assert "raise --gpu-memory-utilization" in one_error_line([*args, "--prompt", "50000"], capsys)
    # and what it names runs: the cache in fp8 at 0.95 holds 7,440 blocks
    code, out, _ = run_main([*args, "--prompt", "100000", "--kv-dtype", "fp8", "--gpu-memory-utilization", "0.95"],
                            capsys)
    assert code == 0 and "KV cache per replica: 7,440 blocks of 16 tokens" in out
