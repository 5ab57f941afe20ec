"""Defects a new user hit in session 37 (wt37_user): each test failed before its fix."""

from __future__ import annotations

import json
import re

import pytest

import costmodel
from costmodel.errors import ConfigError
from tests.cli_run import one_error_line, run_json, run_main

UNKNOWN_DTYPE = "unknown dtype {!r}; use one of fp32, fp16, bf16 (or float32, float16, bfloat16)."


@pytest.mark.parametrize(("call", "dtype"), [("simulate", "bf17"), ("simulate-train", "bf17"), ("serve", "bf17")])
def test_the_apis_unknown_dtype_is_named_unknown_in_simulate_and_serve(call, dtype):
    """`costmodel.simulate("llama2-7b", "h100", dtype="bf17")` and `costmodel.serve(..., dtype="BF16")` said
    "h100-sxm has no bf17 peak (Hopper); use --dtype bf16.", as if the H100 lacked a real dtype (session 36
    fixed plan's copy of the check only; Hardware.require_peak, which all three call, now checks the name).
    simulate takes "BF16" as the CLI does since wt37_api, serve since wt38_user (its ("serve", "BF16") case left
    this list: tests/test_smoke38_defects.py runs it)."""
    run = {"simulate": lambda: costmodel.simulate("llama2-7b", "h100", dtype=dtype),
           "simulate-train": lambda: costmodel.simulate("llama2-7b", "h100", train=True, dtype=dtype),
           "serve": lambda: costmodel.serve("llama2-7b", "h100", rate=1, requests=5, dtype=dtype)}[call]
    with pytest.raises(ConfigError, match=re.escape("dtype: " + UNKNOWN_DTYPE.format(dtype))):
        run()
    # a real dtype the GPU lacks keeps its own line
    with pytest.raises(ConfigError, match=re.escape("v100-sxm2-32gb has no bf16 peak (Volta); use --dtype fp16.")):
        costmodel.simulate("llama2-7b", "v100-sxm2-32gb", dtype="bf16")


# (the hand-typed config.json without model_type: tests/test_smoke37b_defects.py, wt37_user2's fix of the same
# defect, which the lead kept at merge: one rule in presets.config_from_dict)


def test_the_apis_serve_summary_is_serve_json(capsys):
    """docs/serving.md: `run.summary()  # what serve --json prints`; the command added "units", the API's
    summary had none."""
    args = ["--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "5", "--requests", "20", "--price", "2"]
    printed = run_json(["serve", *args], capsys)
    summary = costmodel.serve("llama3-8b", "h100-sxm", rate=5, requests=20, price=2).summary()
    assert summary["units"] == printed["units"] and "queueing, ttft, tpot, e2e, itl" in summary["units"]
    assert json.loads(json.dumps(summary)) == printed


@pytest.mark.parametrize("args", [
    ["estimate", "--model", "llama2-7b", "--gen", "128"],
    ["sweep", "--model", "llama2-7b", "--seq-len", "2048", "--gen", "128"],
])
def test_gen_is_taken_where_gen_tokens_is(args, capsys):
    """simulate and plan call the generated tokens --gen, estimate and sweep --gen-tokens: `estimate --gen 128`
    read "No such option '--gen'. (Did you mean one of: '--ep', '--etp', '--tgt-len'?)". Each name is now
    taken by each command: 2,048 + 128 - 1 positions of llama2-7b's 512 KiB a token in the KV cache."""
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    if args[0] == "estimate":
        data = run_json(args, capsys)
        assert data["memory"]["kv_cache"] == run_json([*args[:3], "--gen-tokens", "128"], capsys)["memory"]["kv_cache"]
        assert data["memory"]["kv_cache"] == 2 * 32 * 4096 * 2 * (2048 + 127)
    else:
        header, row = out.strip().splitlines()[-2:]
        assert dict(zip(header.split(","), row.split(",")))["kv_cache_bytes"] == str(2 * 32 * 4096 * 2 * (2048 + 127))


def test_simulate_and_serve_take_the_other_commands_names_for_the_generated_tokens(capsys):
    """`simulate --gen-tokens 5` read "No such option. (Did you mean one of: '--attention', '--tokens'?)" and
    `serve --gen 16` "No such option '--gen'."; each reads as its own name does."""
    base = ["simulate", "--model", "llama2-7b", "--prompt", "10"]
    want = run_json([*base, "--gen", "5"], capsys)
    assert run_json([*base, "--gen-tokens", "5"], capsys) == want == run_json([*base, "--output", "5"], capsys)
    serve = ["serve", "--model", "llama3-8b", "--rate", "2", "--requests", "5"]
    assert (run_json([*serve, "--gen", "16"], capsys)["requests"]
            == run_json([*serve, "--output", "16"], capsys)["requests"])
    assert run_json([*serve, "--gen", "16"], capsys)["setup"]["output"] == run_json(
        [*serve, "--output", "16"], capsys)["setup"]["output"]


def test_validate_on_real_cpu_tensors_refuses_a_model_the_machine_cannot_hold(monkeypatch, capsys):
    """`validate --model llama2-70b --device cpu` built 276 GB of fp32 weights until the kernel killed the
    process (exit 137, no line); now one line before anything is built, naming --device fake."""
    pytest.importorskip("torch")
    import validate.compare as compare

    monkeypatch.setattr(compare, "available_host_bytes", lambda: 8 * 2 ** 30)
    line = one_error_line(["validate", "--model", "llama2-70b", "--target", "hf", "--device", "cpu"], capsys)
    assert line.startswith("error: model 'llama2-70b' on --device cpu needs at least ")
    assert line.endswith("more than the 8.0 GiB this machine has available; use --device fake (FakeTensorMode: "
                         "full size, no memory), or a shorter --seq-len or smaller model.")
    # the figure is the estimate's: twice the 68,976,648,192 parameters' fp32 bytes and the saved activations
    from costmodel.estimation import Estimate
    from costmodel.workload import Workload

    estimate = Estimate(costmodel.load_model("llama2-70b"), Workload(seq_len=2048, dtype="fp32", impl="hf",
                                                                     sdpa_device="cpu", gen_tokens=2))
    assert estimate.total("params") == 68_976_648_192
    needed = 2 * 68_976_648_192 * 4 + estimate.total("saved_bytes")
    assert f"at least {needed / 2 ** 30:,.1f} GiB" in line


def test_plan_serve_price_without_rate_says_where_price_is_read(capsys):
    """`plan --serve --gpus 2 --price 2` said "--tokens and --price cost a training run", while plan --help
    offers --price to --serve --rate's $/h column."""
    line = one_error_line(["plan", "--model", "llama3-8b", "--serve", "--gpus", "2", "--price", "2"], capsys)
    assert line == ("error: --price with --serve prices the capacity search's deployments ($/h and $/M out): add "
                    "--rate, --slo-ttft and --slo-tpot, or price one layout's generation with `simulate --price` "
                    "and its --tp/--pp/--dp.")
    assert one_error_line(["plan", "--model", "llama3-8b", "--serve", "--gpus", "2", "--tokens", "1M"], capsys) == (
        "error: --tokens costs a training run; leave it out with --serve.")


def test_a_hardware_file_without_bf16_defaults_to_a_dtype_it_has(tmp_path, capsys):
    """`hardware --show h100-sxm`'s file edited to fp16 and fp32 peaks, no default_dtype: every `simulate` and
    `serve` without --dtype said "h100-sxm has no bf16 peak (Hopper); use --dtype fp16." while --help says fp16
    where the hardware has no bf16 (the T4 and V100 presets state default_dtype fp16; a user's file did not)."""
    code, out, err = run_main(["hardware", "--show", "h100-sxm"], capsys)
    data = json.loads(out)
    data["flops_per_s"] = {"fp32": 67e12, "fp16": 989.4e12}
    data["matmul_efficiency"] = {"fp16": 0.803}
    data.pop("default_dtype")
    path = tmp_path / "no-bf16.json"
    path.write_text(json.dumps(data))
    assert run_json(["hardware", str(path)], capsys)["name"] == "h100-sxm"
    assert json.loads(run_main(["hardware", "--show", str(path)], capsys)[1])["default_dtype"] == "fp16"
    inputs = run_json(["simulate", "--model", "llama3-8b", "--hardware", str(path), "--prompt", "64", "--gen", "4"],
                      capsys)["inputs"]
    assert inputs["dtype"] == "fp16"
    # a dtype typed that the file lacks is still refused
    assert one_error_line(["simulate", "--model", "llama3-8b", "--hardware", str(path), "--dtype", "bf16"],
                          capsys) == "error: h100-sxm has no bf16 peak (Hopper); use --dtype fp16."
    # only fp32: fp32
    data["flops_per_s"], data["matmul_efficiency"] = {"fp32": 67e12}, {}
    path.write_text(json.dumps(data))
    assert json.loads(run_main(["hardware", "--show", str(path)], capsys)[1])["default_dtype"] == "fp32"


@pytest.mark.parametrize("args", [
    ["simulate", "--model", "llama3-8b", "--train", "--dp", "1", "--zero", "3", "--offload", "params"],
    ["plan", "--model", "llama3-8b", "--gpus", "2", "--offload", "optimizer"],
])
def test_offload_typed_to_a_timed_command_says_where_it_is_read(args, capsys):
    """`estimate --hardware` offers "--dp 1 --zero 3 --offload params"; typed into simulate (or plan) it read
    "No such option '--offload'.", no word that an offloaded step is sized, not timed, nor where."""
    from costmodel.offload import UNTIMED

    assert one_error_line(args, capsys) == f"error: --offload {args[-1]}: {UNTIMED}"
    assert "`estimate --hardware H` with the layout and --offload" in UNTIMED
    # estimate reads it: the 8,030,261,248 parameters' partition on the host under ZeRO-Infinity
    offload = run_json(["estimate", "--model", "llama3-8b", "--dp", "1", "--zero", "3", "--offload", "params"],
                       capsys)["parallel"]["offload"]
    assert (offload["offload"], offload["partition_params"]) == ("params", 8_030_261_248)
