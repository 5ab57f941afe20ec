"""Fixes from a review of layer-group paging and `plan --serve --rate` (issue 19): the up-front
check of a request's blocks counts the chunk that really holds the most, `plan --serve --rate`
passes --fp8-gemm and --time-model, refuses bad options in one line before the search, and prefix
caching on a model paged by layer groups is reported off."""

from __future__ import annotations

import json

from tests.cli_run import run_main

# gpt-oss-20b under vllm: one full and one sliding table of window 128, blocks of 16 tokens
SERVE_509 = ["serve", "--model", "gpt-oss-20b", "--prompt", "509", "--output", "1", "--max-batched-tokens", "250",
             "--max-num-seqs", "250",
             "--requests", "1", "--rate", "1"]


def test_check_counts_the_chunk_that_holds_most_blocks(capsys) -> None:
    """Chunks of B = 250 start at 0, 250, 500. The chunk [250, 500) holds ceil(500 / 16) = 32 full blocks
    and 32 - floor((250 - 128 + 1) / 16) = 32 - 7 = 25 sliding ones: 57. The last chunk [500, 509) holds
    32 + (32 - floor(373 / 16)) = 32 + 9 = 41 (the old check took [259, 509): 32 + 24 = 56)."""
    code, out, err = run_main(SERVE_509 + ["--num-blocks", "56"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        "error: request 0 needs 57 KV blocks of 16 tokens; the cache holds 56 (raise --gpu-memory-utilization, "
        "or --num-blocks where it is given)."]  # reworded in session 41 (test_smoke41_defects.py, 4)
    code, out, err = run_main(SERVE_509 + ["--num-blocks", "57"], capsys)
    assert code == 0, err


PLAN_8B = ["plan", "--serve", "--rate", "2", "--model", "llama3-8b", "--hardware", "h100-sxm", "--slo-ttft", "1",
           "--slo-tpot", "0.05", "--requests", "20", "--tp", "1", "--json"]


def _plan_rows(args: list[str], capsys) -> dict[int, dict]:
    code, out, err = run_main(PLAN_8B + args, capsys)
    assert code == 0, err
    return {(row["max_batched_tokens"], row["max_num_seqs"]): row for row in json.loads(out)["feasible"]}


def test_plan_serve_rate_reads_fp8_gemm_and_time_model(capsys) -> None:
    """fp8 weights multiplied as w8a16 (dequantized to bf16) or w8a8 (fp8 tensor cores) step at
    different speeds, so the search's p99 latencies differ, as serve's do; and so do the kernel and
    roofline time models."""
    w8a8 = _plan_rows(["--weight-dtype", "fp8"], capsys)
    w8a16 = _plan_rows(["--weight-dtype", "fp8", "--fp8-gemm", "w8a16"], capsys)
    assert w8a8.keys() == w8a16.keys() and w8a8
    assert all(w8a8[key]["p99_tpot_s"] != w8a16[key]["p99_tpot_s"] for key in w8a8)
    roofline = _plan_rows(["--time-model", "roofline"], capsys)
    kernels = _plan_rows(["--time-model", "kernels"], capsys)
    assert all(roofline[key]["p99_tpot_s"] != kernels[key]["p99_tpot_s"] for key in kernels)


def test_plan_serve_rate_refuses_bad_options_before_the_search(capsys) -> None:
    """An error about the options, not a configuration, is one line and exit 2, as serve's; it was
    caught per configuration and printed as 'not feasible: 36 (...)' with exit 0."""
    plan = ["plan", "--serve", "--rate", "1", "--model", "llama3.2-1b", "--slo-ttft", "1", "--slo-tpot", "0.05",
            "--requests", "20"]
    for extra, line in ((["--weight-group", "64"], "error: workload: weight_group applies only with a weight_dtype."),
                        (["--weight-dtype", "mxfp4"], "error: weight_dtype mxfp4 quantizes routed experts only, and "
                                                      "model 'llama3.2-1b' has none.")):
        code, out, err = run_main(plan + extra, capsys)
        assert (code, out, err.strip().splitlines()) == (2, "", [line])
        code, out, err = run_main(["serve", "--model", "llama3.2-1b", "--rate", "1", "--requests", "5"] + extra, capsys)
        assert (code, err.strip().splitlines()) == (2, [line])


PAGED_PREFIX_NOTE = ("the simulator shares no prefix over layer-group block tables (kv_paging.py); vLLM's hybrid "
                     "KV cache manager caches prefixes per group, which is not modelled")


def test_prefix_caching_on_a_model_paged_by_layer_groups_is_reported_off(capsys) -> None:
    """gpt-oss-20b under vllm is paged by layer groups (one full, one sliding table), where the
    scheduler shares no prefix: setup and text say prefix caching is off, and why."""
    serve = ["serve", "--model", "gpt-oss-20b", "--prefix-caching", "--rate", "1", "--requests", "2", "--prompt", "64",
             "--output", "4"]
    code, out, err = run_main(serve + ["--json"], capsys)
    assert code == 0, err
    setup = json.loads(out)["setup"]
    assert (setup["prefix_caching"], setup["prefix_caching_note"]) == (False, PAGED_PREFIX_NOTE)
    code, out, err = run_main(serve, capsys)
    assert code == 0, err
    assert f"prefix caching: off ({PAGED_PREFIX_NOTE})" in out.splitlines()
    code, out, err = run_main(["serve", "--model", "llama3.2-1b", "--rate", "1", "--requests", "2", "--prompt", "64",
                               "--output", "4", "--json"], capsys)
    setup = json.loads(out)["setup"]
    assert (setup["prefix_caching"], "prefix_caching_note" in setup) == (True, False)
