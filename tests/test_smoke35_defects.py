"""Defects a new user hit in session 35 (wt35_user): each test failed before its fix."""

from __future__ import annotations

import re

import pytest

from costmodel import estimate, load_model, make_workload
from costmodel.errors import ConfigError
from costmodel.layout import Layout
from costmodel.layout.rank import ParallelEstimate
from tests.cli_run import one_error_line, run_json, run_main


def test_an_expert_load_no_top_k_router_can_make_is_one_error_line(capsys):
    """Mixtral routes each token to its top 2 of 8 experts, two different ones, so one expert gets at most
    half the routed slots. `--expert-load 8,0,0,0,0,0,0,0` was accepted and gave expert 0 every slot:
    2 x 2,048 = 4,096 tokens of a 2,048-token batch (estimate --json's moe.tokens_per_expert)."""
    line = one_error_line(["estimate", "--model", "mixtral-8x7b", "--expert-load", "8,0,0,0,0,0,0,0"], capsys)
    assert line == ("error: expert_load: expert 0's share 100.0% of the routed slots is more than 1 / top_k = 1/2: "
                    "each token of model 'mixtral-8x7b' goes to 2 different experts, so one expert gets each token "
                    "at most once.")
    # the layout's check is the same one (ParallelEstimate), before any part is evaluated
    cfg = load_model("mixtral-8x7b")
    workload, _ = make_workload(cfg, 64, expert_load=(3, 1, 0, 0, 0, 0, 0, 0))  # 75% on expert 0
    with pytest.raises(ConfigError, match="expert 0's share 75.0% of the routed slots is more than 1 / top_k = 1/2"):
        ParallelEstimate(cfg, workload, Layout(dp=8, ep=8, framework="megatron", zero=1))
    # at the bound (half the slots on each of two experts) it runs: every token on experts 0 and 1
    moe = run_json(["estimate", "--model", "mixtral-8x7b", "--expert-load", "1,1,0,0,0,0,0,0"], capsys)["moe"]
    assert moe["tokens_per_expert"] == [2048, 2048, 0, 0, 0, 0, 0, 0]
    with pytest.raises(ConfigError, match="gives 2 shares; model 'mixtral-8x7b' has 8 routed experts"):
        estimate("mixtral-8x7b", expert_load=(3, 1))


@pytest.mark.parametrize("command", [
    ["finetune", "--model", "llama3.1-8b", "--method", "qlora", "--hardware", "rtx-4090"],
    ["simulate", "--model", "llama3.1-8b", "--train", "--hardware", "h100"],
])
def test_a_fraction_of_a_token_is_not_a_run(command, capsys):
    """`finetune ... --tokens 0.5` printed "0 tokens: 1 step, 785 ms, 0.000218 GPU-hours"."""
    assert one_error_line([*command, "--tokens", "0.5"], capsys) == (
        "error: --tokens is a count of tokens, at least 1, got 0.5.")
    code, out, _ = run_main([*command, "--tokens", "1"], capsys)  # one token: one whole step
    assert code == 0 and ("1,000,000,000,000" not in out) and ("1 step," in out or "on 1 tokens" in out)


@pytest.mark.slow
def test_the_readme_quotes_the_roofline_count_published_prints(published_tables):
    """README's "The roofline: 19.1% over 644 (it has no torch.compile), 415 within." was session 27's;
    `published`'s summary table printed "roofline 999 comparisons, 15.8%, 692 within" at d8c22cc2."""
    from pathlib import Path

    from reports.published_runs import summary

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    s = summary({name: published_tables[name]  # `published`'s tables, computed once a test process (conftest.py)
                 for name in ("narayanan_2021_table_1", "korthikanti_2022_table_5", "other_runs")})["roofline"]
    quoted = re.search(r"The roofline: ([\d.]+)% over ([\d,]+) \(it has no torch.compile\), ([\d,]+) within\.", readme)
    assert quoted is not None
    assert quoted.groups() == (f"{100 * s['median_error']:.1f}", f"{s['comparisons']:,}", f"{s['within_0.75_1.33']:,}")


def test_durations_are_written_in_words_not_exponents(capsys):
    """`simulate --model llama3.1-8b --train --hardware t4 --tokens 100T` (a 8B model's pretraining budget on one
    T4) said "time to train 6.19e+03 years"; a step of 0.9996 s read "1e+03 ms"."""
    from reports.text import seconds

    args = ["simulate", "--model", "llama3.1-8b", "--train", "--hardware", "t4", "--tokens", "100T"]
    code, out, _ = run_main(args, capsys)
    years = run_json(args, capsys)["cost"]["train_days"] / 365
    line = next(line for line in out.splitlines() if "time to train" in line)
    assert code == 0 and 6000 < years < 6400 and f" {years:,.0f} years " in line and "e+" not in out
    assert [seconds(v) for v in (0.9996, 0.0009996, 3599.9, 999.6 * 365 * 86400, 0.0123, 63.6)] == [
        "1 s", "1 ms", "1 h", "1,000 years", "12.3 ms", "1.06 min"]


def test_dollars_per_million_tokens_are_written_without_an_exponent(capsys):
    """`serve --model llama3.1-70b --tp 8 --rate 0.01 --requests 5 --price 10 --output 16` (an idle 8-GPU
    deployment) said "$4.43e+04 per million output tokens"; its --rates table's `$/M out` column, and plan
    --serve --rate's, wrote "4.43e+04" too. The figure is $80 an hour over the output tokens an hour (JSON)."""
    args = ["serve", "--model", "llama3.1-70b", "--tp", "8", "--rate", "0.01", "--requests", "5", "--price", "10",
            "--output", "16"]
    code, out, _ = run_main(args, capsys)
    cost = run_json(args, capsys)["cost"]
    per_million = cost["dollars_per_million_output_tokens"]
    assert code == 0 and per_million > 10_000 and cost["dollars_per_hour"] == 80
    # (session 38, wt38_user2: over the offered 0.01 x 16 tokens/s it keeps up with, named in the line)
    assert f"; ${per_million:,.0f} per million output tokens at 0.16 output tokens/s, the offered rate" in out \
        and "e+" not in out
    from reports.text import significant  # the one rule the three places write it with

    assert [significant(v, 4) for v in (0.63389, 517.2, 44297.4)] == ["0.6339", "517.2", "44,297"]
    assert [significant(v) for v in (0.63389, 999.96, 44297.4)] == ["0.634", "1,000", "44,297"]


def test_simulates_json_names_the_cache_past_the_windows_for_every_model(capsys):
    """`simulate --json`'s memory had `kv_bytes_per_token_past_windows` for Gemma 3 and gpt-oss only: a script
    sizing long contexts over several models died on a KeyError for Llama. Every model's JSON has it now, the
    per-token figure itself where no layer has a window (Llama 3.1 8B: 32 layers x 8 heads x 128 x 2 x 2 B)."""
    base = ["simulate", "--hardware", "h200", "--prompt", "512", "--gen", "8", "--model"]
    llama = run_json([*base, "llama3.1-8b"], capsys)["memory"]
    gemma = run_json([*base, "gemma3-12b"], capsys)["memory"]
    assert llama["kv_bytes_per_token"] == llama["kv_bytes_per_token_past_windows"] == 32 * 8 * 128 * 2 * 2
    assert (gemma["kv_bytes_per_token"], gemma["kv_bytes_per_token_past_windows"]) == (393_216, 65_536)
    code, out, _ = run_main([*base, "llama3.1-8b"], capsys)  # the text keeps one figure where they are equal
    assert code == 0 and "KV cache 128.00 KiB per token per sequence, the prefill's" in out


def test_the_python_api_prices_a_generation_as_the_command_does(capsys):
    """`simulate --model llama3.1-8b --price 2` gives the dollars per million generated tokens; README's Python API,
    `costmodel.simulate("llama3.1-8b", "h100", price=2)`, refused it: "--price costs a run of --tokens tokens: add
    --tokens" (and tokens, a training keyword, is refused for inference). The API now adds the command's `cost`:
    $2 an hour over the end-to-end rate, 1 GPU, or 2 under tp 2."""
    import costmodel

    for layout, flags in ((None, []), ({"tp": 2}, ["--tp", "2"])):
        ours = costmodel.simulate("llama3.1-8b", "h100", price=2, layout=layout).data["cost"]
        command = run_json(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--price", "2", *flags],
                           capsys)
        assert ours == command["cost"] and ours["dollars_per_hour"] == 2 * ours["gpus"]
        rates = command.get("generation") or command["decode"]
        assert ours["dollars_per_million_output_tokens"] == pytest.approx(
            2 * ours["gpus"] / (rates["end_to_end_tokens_per_second"] * 3600) * 1e6, rel=1e-12)
    with pytest.raises(ConfigError, match="--gen 0 generates none"):
        costmodel.simulate("llama3.1-8b", "h100", price=2, gen=0)


def test_plan_on_a_hardware_file_without_an_interconnect_says_so_in_one_line(tmp_path, capsys):
    """A B200 file with its peaks, bandwidth and memory but no interconnect: `plan --model llama3.1-70b --gpus 16`
    set every layout over several GPUs aside as unsupported, then said "No layout fits. The leanest layout ...
    needs 181.49 GiB per GPU ... No count up to 1,024 times as many GPUs fits; use a GPU with more memory or a
    shorter sequence", exit 1: 70B fits 16 such GPUs (ZeRO 3); what is missing is the link, which simulate --tp 8
    names in one line. plan now refuses the same way; one GPU still plans."""
    import json as _json

    path = tmp_path / "b200.json"
    path.write_text(_json.dumps({"name": "my-b200", "flops_per_s": {"bf16": 2.25e15, "fp8": 4.5e15, "fp32": 75e12},
                                 "bandwidth_bytes_per_s": 8e12, "memory_bytes": 192e9}))
    line = one_error_line(["plan", "--model", "llama3.1-70b", "--hardware", str(path), "--gpus", "16"], capsys)
    assert line == (f"error: hardware my-b200: no interconnect bandwidth for a group of 16 GPUs (across nodes of 1); "
                    "a hardware file's interconnect states gpus_per_node, intra_node_bandwidth_bytes_per_s and "
                    "inter_node_bandwidth_bytes_per_s (per GPU, per direction; docs/time.md).")
    code, out, _ = run_main(["plan", "--model", "llama3.2-1b", "--hardware", str(path), "--gpus", "1"], capsys)
    assert code == 0 and "layouts:" in out


def test_a_long_serving_run_says_its_span_in_readable_units(capsys):
    """`serve --model llama3.1-8b --rate 0.01 --requests 100` (a light load over hours) ended "over 11739.3 s";
    from an hour on the span has separators and its readable unit: "over 11,739.3 s, 3.26 h"."""
    args = ["serve", "--model", "llama3.1-8b", "--rate", "0.01", "--requests", "100"]
    code, out, _ = run_main(args, capsys)
    span = run_json(args, capsys)["duration_s"]
    assert code == 0 and 3600 < span < 36000
    assert f" tokens/s over {span:,.1f} s, {span / 3600:.3g} h\n" in out
