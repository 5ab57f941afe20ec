"""Defects found by the session-29 review of integ29 (wt29_review): options of the session's new CLI paths that
were typed and silently dropped, which the CLI's rule (cli/options.refuse_typed: a typed option is read or
refused) forbids."""

from __future__ import annotations

from tests.cli_run import one_error_line, run_json

MOE = ["simulate", "--train", "--model", "mixtral-8x7b", "--hardware", "h100-sxm", "--gpus", "8", "--seq-len", "4096",
       "--global-batch", "64", "--framework", "megatron", "--tp", "2", "--ep", "4", "--etp", "1", "--sp"]


def test_the_load_balancing_type_is_refused_where_no_unfused_router_reads_it(capsys):
    """`--moe-router-load-balancing-type none` ran (exit 0) with the router fused, and on a dense model, and
    changed nothing: only layout/router_fusion.py's unfused router reads it. Where it is read, it moves the step
    (none drops the aux-loss scores' kernels), so it is kept there."""
    why = ("error: --moe-router-load-balancing-type: read only by Megatron-Core's unfused router of routed experts "
           "(--framework megatron --no-moe-router-fusion with a mixture of experts); the fused kernels price every "
           "type the same.")
    assert one_error_line([*MOE, "--moe-router-load-balancing-type", "none"], capsys) == why
    dense = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8",
             "--framework", "megatron", "--tp", "8", "--moe-router-load-balancing-type", "aux_loss"]
    assert one_error_line(dense, capsys) == why
    aux = run_json([*MOE, "--no-moe-router-fusion"], capsys)["step"]["compute_seconds"]
    none = run_json([*MOE, "--no-moe-router-fusion", "--moe-router-load-balancing-type", "none"], capsys)
    assert none["step"]["compute_seconds"] < aux


def test_the_unfused_router_and_permute_are_refused_under_the_roofline(capsys):
    """--no-moe-router-fusion and --no-moe-permute-fusion add eager kernels and host calls to the kernel model's
    step; under --time-model roofline the step was the fused one to the last digit (4.6459 s compute), the option
    dropped. Refused as --host-op-time is (the roofline counts no ops); --moe-router-fusion (the default) is read."""
    for option in ("--no-moe-router-fusion", "--no-moe-permute-fusion"):
        assert one_error_line([*MOE, option, "--time-model", "roofline"], capsys) == (
            f"error: {option}: the unfused router's and permutations' eager kernels and host calls are the kernel "
            "model's terms; the roofline counts no ops: drop one of them.")
    run_json([*MOE, "--moe-router-fusion", "--time-model", "roofline"], capsys)


def test_an_inference_run_names_the_fusion_option_as_typed(capsys):
    """`simulate` (inference) with --moe-router-fusion said "--no-moe-router-fusion: training layout options":
    an option the user had not typed."""
    for typed, named in (("--moe-router-fusion", "--[no-]moe-router-fusion"),
                         ("--no-moe-permute-fusion", "--[no-]moe-permute-fusion")):
        line = one_error_line(["simulate", "--model", "mixtral-8x7b", "--hardware", "h100-sxm", typed], capsys)
        assert line.startswith(f"error: {named}: training layout options, read only with --train")


def test_docs_commands_names_every_moe_option_and_its_refusals():
    """docs/commands.md named --no-moe-router-fusion and --no-moe-permute-fusion but neither
    --moe-router-load-balancing-type (no doc anywhere said what it does) nor --moe-permute-fusion."""
    import cli

    doc = (__import__("pathlib").Path(__file__).resolve().parent.parent / "docs" / "commands.md").read_text()
    simulate = cli.cli.commands["simulate"]
    moe = [o for p in simulate.params for o in p.opts + p.secondary_opts if o.startswith("--moe-") or
           o.startswith("--no-moe-")]
    assert sorted(moe) == ["--moe-grouped-gemm", "--moe-permute-fusion", "--moe-router-fusion",
                           "--moe-router-load-balancing-type", "--no-moe-grouped-gemm", "--no-moe-permute-fusion",
                           "--no-moe-router-fusion"]
    assert [o for o in moe if f"`{o}" not in doc] == []
    assert "Typed beside a fused router or a dense model it is refused" in doc


def test_serve_takes_a_vllm_release_by_the_rule_the_published_runs_take(capsys):
    """host_time.json's release rules picked the published vLLM runs' host time (Lambda's, Krai's, Qwen2.5's),
    but a user with a vLLM release could type only a profile's name: `--host-time 0.6.3` was refused. Now
    `--host-time vllm==RELEASE` takes the profile its engine's rule gives (the engine --scheduler models), the
    one path krai_host_time takes too; a release no rule covers, or not a release, is one line."""
    from benchmarks.published_mlperf_vllm import krai_host_time

    base = ["serve", "--model", "llama3.1-8b", "--rate", "20", "--requests", "20"]
    for scheduler, release, profile, fixed_ms in (("vllm-v0", "0.6.3", "vllm-v0.6.0", 6.3211),
                                                   ("vllm-v0", "0.5.4", "vllm-v0.5.4", 6.3211),
                                                   ("vllm", "0.9.2", "none", None)):
        setup = run_json([*base, "--scheduler", scheduler, "--host-time", f"vllm=={release}"], capsys)["setup"]
        assert setup["host_time"] == profile and setup.get("host_fixed_ms") == fixed_ms
    assert one_error_line([*base, "--scheduler", "vllm-v0", "--host-time", "vllm==0.11.0"], capsys) == (
        "error: no host-time rule covers vLLM '0.11.0' on engine 'v0' (host_time.json releases).")
    assert one_error_line([*base, "--scheduler", "vllm-v0", "--host-time", "vllm==0.6.x"], capsys) == (
        "error: a vLLM release is numbers joined by dots, like 0.6.4; got '0.6.x'.")
    assert one_error_line([*base, "--scheduler", "trtllm", "--host-time", "vllm==0.6.3"], capsys).endswith(
        "modelled for the vllm and vllm-v0 schedulers only, not trtllm.")
    assert krai_host_time({"system": "xd670_h200_x8_vllm_073", "engine": "vllm-v0"}) == "vllm-v0.6.0"
    assert krai_host_time({"system": "xd670_h200_x8_vllm_092", "engine": "vllm"}) == "none"


def test_qwen_vllm_figures_are_pinned():
    """tests/test_published_qwen_vllm.py checked ours only as 0 < long < short < 311.55, a test no host time,
    graph or prefill change could fail. The figures `serve_published.py qwen-vllm` prints (0.5B: 536.96 and 252.29
    tokens/s against 311.55 and 264.51 published, 1.72x and 0.95x; 7B at 14,336: 75.21 against 77.69, 0.97x; with
    the host time below 128 sequences from vLLM issue 6913's batch-1 point since wt29_vhost1: 157.33, 128.67 and
    58.46 before; 536.96, 252.29 and 75.21 before session 34's vLLM sampler), which move if the host time is not vLLM 0.6.3's V0 profile (vllm-v0.6.0)."""
    import pytest

    import benchmarks.published_qwen_vllm as qv

    assert qv.qwen_vllm_tokens_per_s("qwen2.5-0.5b", 1, 1) == pytest.approx(532.5583381071957, rel=1e-9)
    assert qv.qwen_vllm_tokens_per_s("qwen2.5-0.5b", 1, 30720) == pytest.approx(251.31635125270574, rel=1e-9)
    assert qv.qwen_vllm_tokens_per_s("qwen2.5-7b-instruct", 1, 14336) == pytest.approx(75.11890292165545, rel=1e-9)


def test_estimate_refuses_the_router_and_permute_options(capsys):
    """estimate takes every layout option; --no-moe-router-fusion, --moe-router-load-balancing-type and
    --no-moe-permute-fusion (session 29's) change only kernels and host calls, which estimate has no time for, and
    were dropped: `estimate --model mixtral-8x7b ... --no-moe-router-fusion` printed the fused run's memory."""
    base = ["estimate", "--model", "mixtral-8x7b", "--framework", "megatron", "--tp", "2", "--ep", "4", "--etp", "1",
            "--sp", "--gpus", "8"]
    for typed, named in (("--no-moe-router-fusion", "--[no-]moe-router-fusion"),
                         ("--moe-router-fusion", "--[no-]moe-router-fusion"),
                         ("--no-moe-permute-fusion", "--[no-]moe-permute-fusion")):
        assert one_error_line([*base, typed], capsys) == (
            f"error: {named}: the MoE router's and permutations' unfused kernels and host calls are modelled as "
            "`simulate --train`'s time only; estimate counts memory and FLOPs.")
    assert one_error_line([*base, "--moe-router-load-balancing-type", "none"], capsys).startswith(
        "error: --moe-router-load-balancing-type: the MoE router's")
