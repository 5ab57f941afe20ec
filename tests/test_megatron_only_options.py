"""Megatron-Core's recompute_modules choices and Transformer Engine's delayed scaling as Megatron-Core
runs it, refused under --framework deepspeed and fsdp2 in one line (costmodel/module_recompute.py
check_recompute_framework; layout/fp8_options.py check_fp8_autocast; under fsdp2 with the script's
autocast scope, --fp8-autocast, it runs: tests/test_fp8_autocast.py). Neither framework runs Megatron-Core's
module checkpoints (the norm before the experts, the MoE layer, the experts' activation, latent
attention's up-projections); delayed scaling there is the training script's (accelerate's
apply_fp8_autowrap: one fp8_autocast over the forward with no fp8_group, so TE all-reduces the amaxes
over every rank, and convert_model makes every nn.Linear a te.Linear, the head included), which was run
with no amax all-reduce charged: now refused. What they do run still runs."""

from __future__ import annotations

import pytest

import cli

SIMULATE = ["simulate", "--train", "--model", "deepseek-v2-lite", "--hardware", "h100-sxm", "--seq-len", "4096",
            "--dp", "8"]
FRAMEWORKS = {"deepspeed": ["--framework", "deepspeed", "--zero", "1"], "fsdp2": ["--framework", "fsdp2", "--zero", "3"]}


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize("recompute", ["layernorm-moe-act", "layernorm-moe", "layernorm-moe-core-attn", "mla-up-proj"])
def test_megatron_module_recomputation_refused_elsewhere(capsys, framework, recompute):
    code, out, err = run(SIMULATE + FRAMEWORKS[framework] + ["--recompute", recompute], capsys)
    assert (code, out, err.strip()) == (2, "", f"error: recompute {recompute!r} is Megatron-Core's recompute_modules, "
                                               f"which {framework} does not run; use --framework megatron, or none, "
                                               "selective or full.")
    code, _, err = run(["estimate", "--model", "deepseek-v2-lite", "--seq-len", "4096", "--dp", "8",
                        *FRAMEWORKS[framework], "--recompute", recompute], capsys)
    assert code == 2 and err.count("\n") == 1 and "which " + framework + " does not run" in err


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_delayed_scaling_refused_elsewhere(capsys, framework):
    """Outside Megatron-Core delayed scaling is the training script's: under fsdp2 it needs the
    script's autocast scope (--fp8-autocast, tests/test_fp8_autocast.py), under deepspeed it is not
    modelled."""
    code, out, err = run(SIMULATE + FRAMEWORKS[framework] + ["--fp8", "delayed"], capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith({"fsdp2": "error: layout: --fp8 delayed under fsdp2 runs under the training script's "
                                    "fp8_autocast; state where with --fp8-autocast",
                           "deepspeed": "error: layout: --fp8 delayed is modelled under Megatron-Core (an fp8_autocast "
                                        "a model chunk) and under --framework fsdp2 with --fp8-autocast; under "
                                        "deepspeed it is not modelled"}[framework])


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize("flags", [["--recompute", "selective"], ["--recompute", "full"], ["--fp8", "current"],
                                   ["--fp8", "tensorwise"]])
def test_what_they_run_still_runs(capsys, framework, flags):
    code, _, err = run(SIMULATE + FRAMEWORKS[framework] + flags + ["--json"], capsys)
    if (framework, flags) == ("deepspeed", ["--fp8", "current"]):  # session 41: Transformer Engine's recipe,
        assert code == 2 and "DeepSpeed running Transformer Engine is not modelled" in err  # not DeepSpeed's
        return
    assert code == 0


@pytest.mark.parametrize("flags", [["--recompute", "layernorm-moe-core-attn"], ["--recompute", "mla-up-proj"],
                                   ["--fp8", "delayed"]])
def test_megatron_runs_them(capsys, flags):
    code, _, _ = run(SIMULATE + ["--framework", "megatron", "--zero", "1"] + flags + ["--json"], capsys)
    assert code == 0


def test_plan_searches_megatron_alone_under_delayed_scaling(capsys):
    """plan --fp8 delayed: Llama 3 8B on 8 H100s ranked 1,156 layouts of three frameworks (megatron 400,
    fsdp2 398, deepspeed 358) with no amax all-reduce outside megatron; now megatron's 456 (400 fit)."""
    import json

    code, out, _ = run(["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100-sxm", "--fp8", "delayed",
                        "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and (len(result["feasible"]), len(result["infeasible"])) == (400, 56)
    assert {e["layout"]["framework"] for e in result["feasible"] + result["infeasible"]} == {"megatron"}
