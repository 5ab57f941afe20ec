"""Defects found by the twenty-ninth new user (wt30_user29, session 30): an engineer who read only the
README and docs/serving.md, asking serving and planning questions (`serve`, `plan --serve`,
`costmodel.serve`)."""

from __future__ import annotations

import pytest

from tests.cli_run import one_error_line, run_json, run_main

SERVE = ["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "5", "--requests", "10"]


def test_a_kv_cache_larger_than_the_gpu_is_refused_not_simulated(capsys):
    """`serve --num-blocks 100000000` simulated 100 million blocks of 16 tokens (2.1e17 B of cache on one
    80 GB H100) without a word. vLLM's --num-gpu-blocks-override allocates what it is told and runs out of
    memory where the blocks pass what the weights and the profile run leave; serve now refuses a count past
    what the whole memory (utilisation 1) less the reserve, the weights and the activations holds."""
    kv = run_json(SERVE, capsys)["setup"]["kv_cache"]
    block = kv["kv_bytes_per_token"] * kv["block_size"]
    most = (kv["memory_bytes"] - kv["memory_reserve_bytes"] - kv["weight_bytes"] - kv["activation_bytes"]) // block
    assert most == 32_486  # (85,057,339,392 - 536,870,912 - 16,060,522,496 - 329,843,200) // 2,097,152
    assert run_json([*SERVE, "--num-blocks", str(most)], capsys)["setup"]["num_blocks"] == most
    line = one_error_line([*SERVE, "--num-blocks", str(most + 1)], capsys)
    assert "--num-blocks 32,487" in line and "32,486" in line
    assert one_error_line([*SERVE, "--num-blocks", "100000000"], capsys).startswith("error: --num-blocks 100,000,000")


@pytest.mark.parametrize("option, value", [
    ("max_num_seqs", 2.5), ("max_batched_tokens", 512.0), ("block_size", True), ("num_blocks", 100.5),
    ("requests", 5.5), ("rate", "5"), ("replicas", 2.0),
])
def test_the_python_serve_refuses_a_number_of_the_wrong_kind(option, value):
    """`costmodel.serve(..., max_num_seqs=2.5)` died in a TypeError deep in the scheduler; requests=5.5 ran 5
    requests (int() cut it), rate="5" ran at 5 (float() read the text) and block_size=True ran blocks of one
    token. Each is now one ConfigError naming the option, as the CLI's types would."""
    import costmodel
    from costmodel.config import ConfigError

    kwargs = {"rate": 5, "requests": 4, option: value}
    with pytest.raises(ConfigError, match=option.replace("_", "[-_]")):
        costmodel.serve("llama3-8b", "h100-sxm", **kwargs)


def test_a_vllm_release_whose_engine_takes_no_host_time_says_so(capsys):
    """`serve --host-time vllm==0.6.3` with the default (V1) scheduler resolved, by host_time.json's release
    rules, to none: the run was the GPU's kernels alone, and neither the text nor the JSON said that the
    option had been read (setup host_time "none", as if it had not been given). The setup now keeps the
    release asked for and the profile it took, and the text names both."""
    setup = run_json([*SERVE, "--host-time", "vllm==0.6.3"], capsys)["setup"]
    assert setup["host_time"] == "none" and setup["host_time_asked"] == "vllm==0.6.3"
    code, out, _ = run_main([*SERVE, "--host-time", "vllm==0.6.3"], capsys)
    assert code == 0
    assert "host time a step: none (--host-time vllm==0.6.3 on the vllm scheduler's engine, V1" in out
    v0 = run_json([*SERVE, "--host-time", "vllm==0.6.3", "--scheduler", "vllm-v0"], capsys)["setup"]
    assert (v0["host_time"], v0["host_time_asked"]) == ("vllm-v0.6.0", "vllm==0.6.3")
    assert "host_time_asked" not in run_json(SERVE, capsys)["setup"]


def test_rates_beside_concurrency_names_rates(capsys):
    """`serve --concurrency 4 --rates 1,2` said "--concurrency and --rate are two load generators": the user
    gave --rates, not --rate."""
    line = one_error_line(["serve", "--model", "llama3-8b", "--requests", "10", "--concurrency", "4",
                           "--rates", "1,2"], capsys)
    assert line == "error: --concurrency and --rates are two load generators: give one of them."


def test_a_rate_whose_arrivals_pass_the_clocks_resolution_is_refused(capsys, tmp_path):
    """`serve --rate 1e-300 --requests 3` ran: arrivals near 1e300 s, where a float64's seconds step by about
    1e284 s, so every request took "0.0 ms" end to end (below its own prefill) "over 1039403764...0.0 s" (a
    300-digit duration). A run's last arrival must now be below 2^33 s, where the clock still resolves a
    microsecond (ulp 2^-20 s below it, 2^-19 s from it); a trace's likewise."""
    import math

    from costmodel.serving.workload import CLOCK_LIMIT_S

    assert math.ulp(CLOCK_LIMIT_S * (1 - 2**-52)) < 1e-6 < math.ulp(CLOCK_LIMIT_S)
    line = one_error_line(["serve", "--model", "llama3-8b", "--rate", "1e-300", "--requests", "3"], capsys)
    assert line.startswith("error: --rate 1e-300 with 3 requests: the last request arrives at ")
    trace = tmp_path / "late.jsonl"
    trace.write_text('{"arrival": 1e10, "prompt_tokens": 8, "output_tokens": 2}\n')
    assert "past 2^33 s" in one_error_line(["serve", "--model", "llama3-8b", "--trace", str(trace)], capsys)
    trace.write_text('{"arrival": 8e9, "prompt_tokens": 8, "output_tokens": 2}\n')  # below it: runs
    ttft = run_json(["serve", "--model", "llama3-8b", "--trace", str(trace)], capsys)["ttft"]["p50"]
    assert ttft > 0


PLAN70 = ["plan", "--serve", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "8", "--gen", "128",
          "--prompt", "2048", "--batch", "16"]


def test_plan_serve_says_when_the_host_sets_some_layouts_decode_steps(capsys):
    """`plan --serve --model llama3-70b --gpus 8 --batch 16` (eager, as generate runs) printed 40.2 ms a token and
    398 tokens/s for tp 2 x dp 4, tp 4 x dp 2 and tp 8 alike, with no word why: each is host-bound (6,136 eager
    ops x 6.55 us, the borrowed op time, against 29.6 ms of tp 2's kernels), which only the JSON's `host`
    said. The note round 28 added (planning.serving_host_note) spoke only where every layout was bound, and
    the three pp-only layouts (50-61 ms of kernels) are not. It now counts the bound ones."""
    plan = run_json(PLAN70, capsys)
    bound = [e for e in plan["feasible"] if e["host"]["bound"]]
    first = plan["feasible"][0]["host"]
    assert (len(bound), len(plan["feasible"]), first["ops_per_step"]) == (6, 9, 6136)
    assert first["seconds_per_step"] == pytest.approx(6136 * first["op_seconds"], rel=1e-12)
    code, _, err = run_main(PLAN70, capsys)
    assert code == 0
    # was "issues 6,136 ops on each rank's host" before round 46: a pp 2 or pp 4 rank issues its stage's share
    assert ("note: 6 of the 9 layouts' decode steps are host-bound: Hugging Face generate's eager step issues "
            "1,576 to 6,136 ops on each rank's host") in err
    assert "host-bound" not in run_main([*PLAN70, "--cuda-graphs", "on"], capsys)[2]


@pytest.mark.parametrize("args", [
    ["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "5"],
    ["plan", "--serve", "--model", "llama3-8b", "--rate", "10", "--slo-ttft", "1", "--slo-tpot", "0.05",
     "--requests", "30"],
    ["simulate", "--model", "llama3-8b", "--prompt", "512", "--gen", "16"],
])
def test_a_hardware_file_priced_at_zero_is_refused_as_the_file_it_is(args, capsys, tmp_path):
    """A hardware file with "price_per_gpu_hour": 0 passed the schema (at least 0), then `serve` died in a
    ConfigError traceback (exit 1) while costing the run, `plan --serve --rate` showed no price ("-") and
    `simulate` said "--price must be a positive number", a flag nobody typed. The schema now asks what
    costmodel/cost.py's check_price asks, a price above 0, and each command names the file in one line."""
    import json
    from pathlib import Path

    import costmodel

    spec = json.loads((Path(costmodel.__file__).parent / "hardware" / "h100-sxm.json").read_text())
    path = tmp_path / "free.json"
    path.write_text(json.dumps({**spec, "name": "free-h100", "price_per_gpu_hour": 0}))
    assert one_error_line([*args, "--hardware", str(path)], capsys) == (
        f"error: {path}: not a valid hardware file: price_per_gpu_hour must be greater than 0, got 0.")


def test_a_histogram_of_zero_weights_is_told_its_sum(capsys, tmp_path):
    """`--prompt histogram:FILE` with weights [0, 0] was refused as needing "non-negative weights, finite and
    with a finite sum": every part of that holds for [0, 0]; what fails is the sum, 0, which no length can
    be drawn from. The sentence now asks for a positive sum."""
    path = tmp_path / "zero.json"
    path.write_text('{"values": [100, 200], "weights": [0, 0]}')
    line = one_error_line([*SERVE[:-4], "--rate", "5", "--requests", "5", "--prompt", f"histogram:{path}"], capsys)
    assert line.endswith("as many non-negative weights, finite and with a positive, finite sum).")
