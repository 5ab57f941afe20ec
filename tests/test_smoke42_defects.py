"""Defects a new user hit in session 42's round (wt42_user): formulas' empty blocks, plan's Python keywords,
hardware files and the --json row, --device's case, plan --serve's chunked prefill beside simulate's ... Each
test failed before its fix (main 466ee2cc)."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_json, run_main

# ---------------------------------------------------------------------------------------------
# 1. formulas --quantity Q listed every matching block, most with no formula under them


def test_formulas_lists_only_the_blocks_that_hold_the_quantity(capsys):
    """`formulas --model llama2-7b --block attention --quantity kv_cache_bytes` printed eight block headers, seven
    of them bare (norm, rope, scores... hold no KV cache); `--block ffn` printed three bare headers and nothing
    that said kv_cache_bytes is 0 there. Now only the blocks that hold it, and one line where none does."""
    data = run_json(["formulas", "--model", "llama2-7b", "--block", "attention", "--quantity", "kv_cache_bytes"], capsys)
    assert [row["path"] for row in data["blocks"]] == ["decoder.layer.self_attention.qkv"]
    assert data["blocks"][0]["formulas"] == {"kv_cache_bytes": "2*b*d_h*e*h_kv*(n + Max(0, T - 1))"}
    code, out, _ = run_main(["formulas", "--model", "llama2-7b", "--block", "ffn", "--quantity", "kv_cache_bytes"], capsys)
    assert code == 0 and out == ("no block of llama2-7b whose path contains 'ffn' has a non-zero kv_cache_bytes: "
                                 "it is 0 in each.\n")
    empty = run_json(["formulas", "--model", "llama2-7b", "--block", "ffn", "--quantity", "kv_cache_bytes"], capsys)
    assert empty["blocks"] == [] and empty["symbols"] == {}


# ---------------------------------------------------------------------------------------------
# 2. costmodel.plan's unknown keyword: no suggestion, no list; rate= (plan --serve --rate) unexplained


def test_plan_api_names_its_keywords_as_simulate_and_serve_do():
    """costmodel.plan("llama2-7b", gpus=8, seqlen=4096) said "plan: unknown option 'seqlen'." where
    costmodel.simulate(..., seqlen=4096) says "did you mean seq_len?" and lists what it takes; plan(serve=True,
    rate=5), the command's `plan --serve --rate`, said "unknown option 'rate'" and nothing of where that search is."""
    import costmodel
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError, match=r"^plan: unknown keyword 'seqlen' \(did you mean seq_len\?\); it takes model, "
                                          r"gpus, hardware, serve, seq_len, .*, tp, pp, dp, zero, sp, framework, "):
        costmodel.plan("llama2-7b", gpus=8, seqlen=4096)
    with pytest.raises(ConfigError, match=r"\(did you mean framework\?\)"):
        costmodel.plan("llama2-7b", gpus=8, frameworks="megatron")
    with pytest.raises(ConfigError, match=r"^plan: rate: the capacity search of `plan --serve --rate` is the command's "
                                          r"only; in Python, costmodel.serve\(model, hardware, rate="):
        costmodel.plan("llama3-8b", gpus=2, serve=True, rate=5)
    assert costmodel.plan("llama2-7b", gpus=8, tp=2).to_dict()["feasible"][0]["layout"]["tp"] == 2


# ---------------------------------------------------------------------------------------------
# 3. `hardware h100 --json > f.json` is the listing's row: refused as a file without saying so


def test_the_hardware_json_row_read_as_a_file_names_hardware_show(tmp_path, capsys):
    """A user saving `hardware h100 --json` to edit read "not a valid hardware file: unknown field
    'serving_memory_bytes' (known: ...)" and nothing of `hardware --show h100`, which prints a file."""
    from cli.hardware import hardware_row
    from costmodel.hardware import load_hardware
    from costmodel.hardware_schema import ROW_FIELDS, SCHEMA

    assert set(hardware_row(load_hardware("h100"), ("h100",))) - set(SCHEMA) == set(ROW_FIELDS)
    code, out, _ = run_main(["hardware", "h100", "--json"], capsys)
    assert code == 0
    row = tmp_path / "h100.json"
    row.write_text(out)
    line = one_error_line(["simulate", "--model", "llama2-7b", "--hardware", str(row)], capsys)
    assert line.startswith(f"error: {row}: not a valid hardware file: aliases and serving_memory_bytes are `hardware "
                           "NAME --json`'s row, which is not a hardware file: `hardware --show NAME` prints one to edit; "
                           "unknown field 'serving_memory_bytes'")
    code, out, _ = run_main(["hardware", "--show", "h100"], capsys)
    shown = tmp_path / "shown.json"
    shown.write_text(out)
    assert code == 0 and run_main(["hardware", str(shown)], capsys)[0] == 0


# ---------------------------------------------------------------------------------------------
# 4. hardware --device CPU: refused, where every other choice is read in any case


def test_hardware_device_is_read_in_any_case():
    """`hardware --measure --out f.json --device CPU` said "--device CPU: no such device here (cpu, ...)"; README:
    "a choice in any case is the one it spells". --device is now a choice, read as `cpu`."""
    import cli

    command = cli.cli.commands["hardware"]
    context = command.make_context("hardware", ["--out", "f.json", "--device", "CPU"])
    assert context.params["device"] == "cpu"
    with pytest.raises(Exception, match="'TPU' is not one of 'cuda', 'cpu'"):
        command.make_context("hardware", ["--out", "f.json", "--device", "TPU"])


# ---------------------------------------------------------------------------------------------
# 5. plan --serve's memory beside simulate's where the prefill is more than one chunk and both fit


def test_plan_serve_says_where_simulate_needs_more_memory_though_both_fit(capsys):
    """Llama 3 70B, 16 x (2,048 + 256) on 8 H100s: plan --serve's row tp 4 x dp 2 read 34.43 GiB (transients
    336.12 MiB, the prefill one 8,192-token chunk at a time); `simulate --tp 4 --dp 2 --batch 8` with the same
    layout prints 34.76 GiB (672.12 MiB), its whole 16,384-token prefill at once. Round 40 named the rows only where
    simulate's figure does not fit; where both fit the two memories differed unsaid."""
    args = ["plan", "--serve", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "8", "--prompt", "2048",
            "--gen", "256", "--batch", "16"]
    plan = run_json(args, capsys)
    row = next(e for e in plan["feasible"] if (e["layout"]["tp"], e["layout"]["dp"], e["layout"]["pp"]) == (4, 2, 1))
    simulated = run_json(["simulate", "--model", "llama3-70b", "--hardware", "h100-sxm", "--tp", "4", "--dp", "2",
                          "--prompt", "2048", "--gen", "256", "--batch", "8", "--attention", "flash"], capsys)
    assert simulated["per_rank"]["total"] == row["per_rank"]["whole_prefill_total"] > row["per_rank"]["total"]
    code, out, _ = run_main(args, capsys)
    last = out.rstrip().splitlines()[-1]
    assert code == 0 and last.startswith(
        "memory: a prefill's transients are one chunk's of 8,192 tokens at a time (vLLM's max_num_batched_tokens on "
        "this GPU), as an engine prefills; `simulate` with the layout prefills the whole batch at once, as generate "
        "does, and needs more there: rank 2 (34.76 GiB), ")
    assert last.endswith(", each within the 70.79 GiB a GPU holds.") and "rank 1 " not in last
