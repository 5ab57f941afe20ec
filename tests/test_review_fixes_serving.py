"""Fixes from a review of layer-group paging and `plan --serve --rate` (issue 19): the up-front
check of a request's blocks counts the chunk that really holds the most, `plan --serve --rate`
passes --fp8-gemm and --time-model, refuses bad options in one line before the search, and prefix
caching on a model paged by layer groups is reported off."""

from __future__ import annotations

import json

from tests.cli_run import run_main

# gpt-oss-20b under vllm: one full and one sliding table of window 128, blocks of 16 tokens
SERVE_509 = ["serve", "--model", "gpt-oss-20b", "--prompt", "509", "--output", "1", "--max-batched-tokens", "250",
             "--requests", "1", "--rate", "1"]


def test_check_counts_the_chunk_that_holds_most_blocks(capsys) -> None:
    """Chunks of B = 250 start at 0, 250, 500. The chunk [250, 500) holds ceil(500 / 16) = 32 full blocks
    and 32 - floor((250 - 128 + 1) / 16) = 32 - 7 = 25 sliding ones: 57. The last chunk [500, 509) holds
    32 + (32 - floor(373 / 16)) = 32 + 9 = 41 (the old check took [259, 509): 32 + 24 = 56)."""
    code, out, err = run_main(SERVE_509 + ["--num-blocks", "56"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        "error: request 0 needs 57 KV blocks of 16 tokens; the cache holds 56 (raise --gpu-memory-utilization "
        "or --num-blocks)."]
    code, out, err = run_main(SERVE_509 + ["--num-blocks", "57"], capsys)
    assert code == 0, err
