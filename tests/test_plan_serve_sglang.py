"""`plan --serve --rate --scheduler sglang [--engine-release R]` (wt43_etpfix): the capacity search runs SGLang's
scheduler and pool as `serve --scheduler sglang` does (costmodel/serving/capacity.py plan_capacity passes the
scheduler and the release to build_replica), and its text and --json name the release alike. Before this branch
both options were refused in one line (tests/test_smoke42c_defects.py pinned that refusal)."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
import costmodel

SEARCH = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4", "--slo-ttft", "0.5",
          "--slo-tpot", "0.05", "--requests", "40", "--tp", "1"]


@pytest.mark.slow
def test_the_search_runs_sglangs_scheduler_as_serve_does(capsys):
    """Every configuration of the search is a `serve --scheduler sglang` deployment: the row at max-num-seqs 64,
    max-batched-tokens 512 has serve's p99 TTFT and TPOT to the last digit and SGLang's pool (Llama 3 8B on one
    H100 at v0.3.0's mem_fraction_static 0.88: 444,927 tokens, docs/serving.md); the text names the scheduler and
    the release as the JSON does (about 40 s)."""
    code, out, err = run_main([*SEARCH, "--scheduler", "sglang", "--engine-release", "v0.3.0", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert (result["scheduler"], result["engine_release"]) == ("sglang", "v0.3.0")
    row = next(r for r in result["feasible"] if (r["max_num_seqs"], r["max_batched_tokens"]) == (64, 512))
    one = costmodel.serve("llama3-8b", "h100-sxm", scheduler="sglang", engine_release="v0.3.0", rate=4, requests=40,
                          max_num_seqs=64, max_batched_tokens=512, prompt="512", output="128", tp=1).to_dict()
    assert (row["p99_ttft_s"], row["p99_tpot_s"]) == (one["ttft"]["p99"], one["tpot"]["p99"])
    assert row["num_blocks"] == one["setup"]["num_blocks"] == 444_927
    code, text, err = run_main([*SEARCH, "--scheduler", "sglang", "--engine-release", "v0.3.0"], capsys)
    assert code == 0, err
    lines = text.splitlines()
    assert "(sglang scheduler;" in lines[0]
    assert lines[1] == f"SGLang release: v0.3.0 ({result['engine_release_source']})"


@pytest.mark.parametrize("extra, words", [
    (["--engine-release", "v0.4.0"], "error: --engine-release names an SGLang release; the vllm scheduler takes none.\n"),
    (["--scheduler", "sglang", "--engine-release", "v9.9"],
     "error: --engine-release for the sglang scheduler must be one of v0.3.0, v0.4.0, got 'v9.9'.\n"),
    (["--scheduler", "sglang", "--pp", "2"], "error: --pp 2: SGLang v0.4.0 has no pipeline parallelism"),
])
def test_what_sglang_does_not_take_is_one_line_before_the_search(extra, words, capsys):
    code, out, err = run_main([*SEARCH, *extra], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(words) and len(err.strip().splitlines()) == 1


def test_the_scheduler_without_rate_is_the_search_options_line(capsys):
    code, out, err = run_main(["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8",
                           "--scheduler", "sglang"], capsys)
    assert (code, out) == (2, "")
    assert "--scheduler" in err and "add --rate" in err and len(err.strip().splitlines()) == 1
