"""`plan --serve --rate` passes --weight-dtype, --weight-group and --kv-dtype to the replicas it
simulates, as `serve` does (they were accepted and ignored: gpt-oss-120b's mxfp4 weights were
sized as bf16, so tp 1 and 2 left no room for a KV block)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli import cli
from costmodel.api import load_model
from costmodel.hardware import load_hardware
from costmodel.serving.replica import build_replica


def test_plan_serve_rate_sizes_the_cache_with_the_weight_and_kv_formats() -> None:
    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "1", "--slo-ttft", "1",
            "--slo-tpot", "0.05", "--requests", "20", "--tp", "1", "--json"]
    result = CliRunner().invoke(cli, args + ["--weight-dtype", "int4", "--kv-dtype", "fp8"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["feasible"]
    # each row's blocks are serve's at its token budget and sequence cap (vLLM's profile run samples
    # one row a sequence: profile_run.json)
    expected = {(row["max_batched_tokens"], row["max_num_seqs"]): build_replica(
        load_model("llama3-8b"), load_hardware("h100-sxm"), max_batched_tokens=row["max_batched_tokens"],
        max_num_seqs=row["max_num_seqs"], weight_dtype="int4", kv_dtype="fp8")[2]["num_blocks"] for row in rows}
    assert {(row["max_batched_tokens"], row["max_num_seqs"]): row["num_blocks"] for row in rows} == expected
    assert {tokens for tokens, _ in expected} == {512, 2048, 8192}
    expected = {tokens: blocks for (tokens, seqs), blocks in expected.items() if seqs == 64}
    plain = build_replica(load_model("llama3-8b"), load_hardware("h100-sxm"), max_batched_tokens=512,
                          max_num_seqs=64)[2]["num_blocks"]
    assert expected[512] > 2 * plain  # fp8 keys and values: twice the blocks, and int4 weights leave more room
