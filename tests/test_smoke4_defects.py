"""What a new user's fourth round (published runs typed as CLI commands, issue 18) turned up: each
test runs the command as a user typed it and checks the answer or the one error line.
"""

from __future__ import annotations

import json

from tests.cli_run import run_main

GPT2_TRAIN = ["simulate", "--train", "--model", "gpt2", "--hardware", "a100-80gb", "--seq-len", "1024", "--json"]


def test_global_batch_with_gpus_alone_splits_over_the_derived_dp(capsys):
    # `--gpus 8 --global-batch 32 --batch 4` (no --dp) set 32 / (4 x 1) = 8 micro-batches before dp
    # was derived from --gpus, so the step ran 8 x 4 x 8 = 256 sequences: the global batch x dp.
    # Megatron-LM: num_microbatches = global_batch_size / (micro_batch_size x data_parallel_size).
    code, out, err = run_main(GPT2_TRAIN + ["--gpus", "8", "--batch", "4", "--global-batch", "32"], capsys)
    assert code == 0, err
    derived = json.loads(out)["parallel"]
    code, out, err = run_main(GPT2_TRAIN + ["--dp", "8", "--batch", "4", "--global-batch", "32"], capsys)
    assert code == 0, err
    explicit = json.loads(out)["parallel"]
    assert derived["layout"]["microbatches"] == explicit["layout"]["microbatches"] == 1  # 32 / (4 x 8)
    assert derived == explicit
    # with tp: dp = 8 / 2 = 4, 32 / (4 x 4) = 2 micro-batches
    code, out, err = run_main(GPT2_TRAIN + ["--gpus", "8", "--tp", "2", "--batch", "4", "--global-batch", "32"], capsys)
    assert code == 0, err
    assert json.loads(out)["parallel"]["layout"]["microbatches"] == 2
    code, out, err = run_main(GPT2_TRAIN + ["--gpus", "8", "--batch", "4", "--global-batch", "48"], capsys)
    assert (code, out) == (2, "")
    assert err == "error: --global-batch 48 is not a multiple of batch x dp = 4 x 8.\n"
