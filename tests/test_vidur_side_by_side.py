"""validate/vidur_side_by_side.py without vidur: a profile copy is accepted only by microsoft/vidur's
git blob id, the trace both simulators read is one set of requests, Vidur's per-request columns
summarize to their percentiles, and an absent git dir is one line and exit status 2."""

import csv
import json
import os
import subprocess

import pytest

from costmodel.serving.workload import read_trace
from validate import vidur_side_by_side as side

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def test_git_blob_ids_are_gits():
    # `git hash-object /dev/null` and of "hello\n": git's own ids for these contents
    assert side.git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert side.git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


@pytest.fixture
def tree_without_blob(tmp_path):
    """A bare repository whose commit names data/a.csv by its blob id but holds no blob, as a
    snapshot that leaves out large files does."""
    git = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git)], check=True)
    content = b"x,y\n1,2\n"
    blob = side.git_blob_id(content)

    def run(*args, stdin=b""):
        return subprocess.run(["git", f"--git-dir={git}", *args], input=stdin, capture_output=True,
                              check=True, env=GIT_ENV).stdout.decode().strip()

    data = run("mktree", "--missing", stdin=f"100644 blob {blob}\ta.csv\n".encode())
    root = run("mktree", "--missing", stdin=f"040000 tree {data}\tdata\n".encode())
    commit = run("commit-tree", root, "-m", "t")
    return git, commit, blob, content


def test_a_copy_is_taken_only_when_its_blob_id_is_the_trees(tree_without_blob, tmp_path):
    git, commit, blob, content = tree_without_blob
    with pytest.raises(side.Missing, match="absent from"):
        side.verified(git, commit, "data/a.csv")
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_bytes(content)
    bad.write_bytes(content + b"3,4\n")
    got = side.verified(git, commit, "data/a.csv", good)
    assert (got["blob"], got["bytes"], got["data"]) == (blob, 8, content)
    with pytest.raises(side.Missing, match="is not microsoft/vidur's"):
        side.verified(git, commit, "data/a.csv", bad)
    with pytest.raises(side.Missing, match="is not in"):
        side.verified(git, commit, "data/b.csv", good)


def test_both_traces_hold_the_same_requests(tmp_path):
    requests = side.arrivals(4.0, 5, 512, 128, 0)
    side.write_traces(requests, tmp_path / "t.jsonl", tmp_path / "t.csv")
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in read_trace(tmp_path / "t.jsonl")] == \
        [(r.arrival_s, 512, 128) for r in requests]
    with (tmp_path / "t.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(float(r["Time"]), int(r["PromptTokenCount"]), int(r["CompletionTokenCount"]), r["Date"])
            for r in rows] == [(r.arrival_s, 512, 128, side.TRACE_DATE) for r in requests]


def test_vidurs_columns_summarize_to_their_percentiles():
    # three requests in Vidur's request_metrics.csv columns (names from vidur 0.0.26's metrics store)
    rows = [{"prefill_e2e_time": t, "decode_time_execution_plus_preemption_normalized": d, "request_e2e_time": e}
            for t, d, e in (("0.1", "0.01", "1.0"), ("0.2", "0.02", "2.0"), ("0.3", "0.03", "4.0"))]
    got = side.summarize_vidur(rows, [0.0, 1.0, 2.0])
    assert got["ttft_p50"] == pytest.approx(0.2) and got["e2e_p50"] == pytest.approx(2.0)
    assert got["ttft_p99"] == pytest.approx(0.298)  # numpy's linear percentile: 0.2 + 0.98 * 0.1
    assert got["span_s"] == pytest.approx(6.0)  # the last completion, 2 + 4, from the first arrival


def test_vidurs_command_carries_the_budgets(tmp_path):
    command = side.vidur_command("py", side.CASES["llama2-7b-a100"], "vllm", tmp_path / "t.csv",
                                 ("local/c", "local/n"), tmp_path, tmp_path)
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags["--vllm_scheduler_config_batch_size_cap"] == str(side.MAX_NUM_SEQS) == "128"
    assert flags["--vllm_scheduler_config_max_tokens_in_batch"] == "4096"
    assert flags["--cache_config_block_size"] == "16"
    assert flags["--cache_config_memory_margin_fraction"] == "0.1"  # Vidur plans with 1 - margin of the memory
    assert "--replica_config_gpu_memory_utilization" not in flags  # which only its profilers read
    assert flags["--trace_request_generator_config_max_tokens"] == "4096"
    assert flags["--random_forrest_execution_time_predictor_config_model_profiling_dataset"] == "local/c"


def test_an_absent_git_dir_is_one_line_and_status_2(tmp_path, capsys):
    assert side.main(["--vidur-git", str(tmp_path / "none"), "--check-data"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a git dir" in err


def test_the_hf_cache_is_the_layout_snapshot_download_reads(tmp_path):
    case = side.CASES["llama2-7b-h100"]
    files = [{"path": p, "data": p.encode()} for p in side.profile_paths(case).values()]
    compute, network = side.write_hf_cache(tmp_path, case, files)
    root = tmp_path / "profiling_data" / "compute" / ("datasets--" + compute.replace("/", "--"))
    assert (root / "refs" / "main").read_text() == side.VIDUR_COMMIT
    snap = root / "snapshots" / side.VIDUR_COMMIT
    assert json.loads((snap / "config.json").read_text()) == {"model": "meta-llama/Llama-2-7b-hf",
                                                               "device_sku": "h100"}
    import lzma

    assert lzma.decompress((snap / "attention.csv.xz").read_bytes()).decode().endswith("attention.csv")
    assert network == "local/vidur-mlsys24-h100_dgx"
