"""What a new user's round on session 42's layouts and engine (any --etp, --cp-rotate a2a, serve's SGLang
scheduler) turned up (wt42_user3): each test runs the command or the call as a user typed it and checks the
answer or the one error line.
"""

from __future__ import annotations

import json

import pytest

import costmodel
from costmodel.config import ConfigError
from tests.cli_run import run_main

QWEN_PLAN = dict(seq_len=4096, global_batch=256, tp=1, pp=1, batch=1, recompute="none", zero=1)


def test_plan_etp_keeps_only_layouts_that_split_their_experts():
    # `plan --etp 2` listed ep 1 layouts first (Qwen3-30B-A3B on 16 H100s: "1 x 8 x 2 ... ep 1"): expert_layouts
    # gave an ep 1 layout no etp whatever etp was fixed, so the filter dropped it without a word.
    result = costmodel.plan("qwen3-30b-a3b", 16, "h100-sxm", etp=2, framework="megatron", **QWEN_PLAN)
    rows = result.feasible + result.infeasible
    assert rows
    # dp 16 / etp 2 = 8 ranks of the expert grid: ep 2, 4 and 8 (divisors of the 128 experts), each with etp 2
    assert sorted({(row["layout"]["ep"], row["layout"]["etp"]) for row in rows}) == [(2, 2), (4, 2), (8, 2)]


def test_plan_etp_that_no_layout_carries_is_one_line():
    # --etp 3 on 16 GPUs: no etp x ep divides the 16 ranks, yet plan ranked 379 etp-less layouts as if none were asked
    with pytest.raises(ConfigError, match=r"no layout of 'qwen3-30b-a3b' on 16 GPUs can run: layout: etp x ep = 3 x "):
        costmodel.plan("qwen3-30b-a3b", 16, "h100-sxm", etp=3, **QWEN_PLAN)
    # another framework: it planned DeepSpeed's layouts, none with etp, silently
    with pytest.raises(ConfigError, match=r"^plan: etp 2 is Megatron-Core's expert tensor parallelism .* deepspeed has "
                                          r"none: plan --framework megatron, or leave --etp out\.$"):
        costmodel.plan("qwen3-30b-a3b", 16, "h100-sxm", etp=2, framework="deepspeed", **QWEN_PLAN)
    # a dense model has no experts to split: it ranked Llama 3 8B's layouts, etp dropped
    with pytest.raises(ConfigError, match=r"^plan: etp 2 splits a mixture of experts' routed experts; model "
                                          r"'llama3-8b' has none"):
        costmodel.plan("llama3-8b", 16, "h100-sxm", etp=2, **QWEN_PLAN)
    with pytest.raises(ConfigError, match=r"^plan: etp must be a positive integer, got 0\.$"):
        costmodel.plan("qwen3-30b-a3b", 16, "h100-sxm", etp=0, **QWEN_PLAN)


SERVE = ["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4", "--requests", "8",
         "--prompt", "256", "--output", "16"]


@pytest.mark.parametrize("release, seqs", [("v0.3.0", 5119), ("v0.4.0", 4097)])
def test_serve_text_names_the_sglang_release_the_json_names(capsys, release, seqs):
    # The JSON said setup.engine_release; the text never named which release's constants ran (their only trace:
    # max-num-seqs 5,119 or 4,097: the request pool's cap 5,120 less one at v0.3.0, 4,096 plus one at v0.4.0, as
    # wt42_sglangver read the tags' tp_worker.py; the release line quotes the wheel each was read in).
    code, out, err = run_main(SERVE + ["--scheduler", "sglang", "--engine-release", release], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith(f"budgets: max-num-seqs {seqs}, ")
    assert lines[2].startswith(f"SGLang release: {release} (read in the sglang {release[1:]} wheel (PyPI, sha256 ")
    code, out, err = run_main(SERVE + ["--scheduler", "sglang", "--engine-release", release, "--json"], capsys)
    setup = json.loads(out)["setup"]
    assert (setup["engine_release"], setup["max_num_seqs"]) == (release, seqs)
    assert lines[2] == f"SGLang release: {setup['engine_release']} ({setup['engine_release_source']})"


def test_serve_text_has_no_release_line_under_vllm(capsys):
    code, out, err = run_main(SERVE, capsys)
    assert code == 0, err
    assert "SGLang release" not in out


def test_plan_serve_rate_takes_a_scheduler_not_a_pipeline_schedule(capsys):
    # click answered "No such option '--scheduler'. (Did you mean one of: '--schedule', '--seq-len'?)": a pipeline
    # schedule, not what the capacity search runs. wt42_user3 refused --scheduler in one line; wt43_etpfix made the
    # search run it (tests/test_plan_serve_sglang.py), so this pin now asks that a bad value is click's own line
    code, out, err = run_main(["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8",
                               "--rate", "10", "--slo-ttft", "0.5", "--slo-tpot", "0.05", "--scheduler", "static"], capsys)
    assert (code, out) == (2, "")
    assert "Invalid value for '--scheduler': 'static' is not one of 'vllm', 'sglang'." in err
    assert "--schedule'" not in err


def test_etp_help_says_what_the_command_does_without_it(capsys):
    # simulate --help read "(its default: the --tp value)", yet --tp 2 --sp --ep 8 without --etp is refused
    # (tests/test_published_moe_runs.py pins that refusal): the help promised a default the command never takes
    code, out, err = run_main(["simulate", "--help"], capsys)
    assert code == 0
    help_text = " ".join(out.split())
    assert "its default: the --tp value" not in help_text
    assert "(Megatron-Core's default is the --tp value; type it: --ep beside --tp > 1 without --etp is refused)" \
        in help_text
    code, out, err = run_main(["simulate", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--train",
                               "--seq-len", "4096", "--batch", "1", "--global-batch", "256", "--framework", "megatron",
                               "--zero", "1", "--tp", "2", "--sp", "--ep", "8", "--gpus", "16"], capsys)
    assert (code, out) == (2, "")
    assert "or --etp 2 with them (expert tensor parallelism, Megatron-Core's default" in err


@pytest.mark.parametrize("scheduler", ["sglang", "vllm"])
def test_one_typed_budget_does_not_call_the_other_given(capsys, scheduler):
    # `serve --scheduler sglang --max-num-seqs 8` printed "max-batched-tokens 8192 (given)": 8,192 is SGLang's
    # chunked_prefill_size default, not typed (vllm's 8,192 the same, its OpenAI server's default on an H100)
    code, out, err = run_main(SERVE + ["--scheduler", scheduler, "--max-num-seqs", "8", "--json"], capsys)
    assert code == 0, err
    setup = json.loads(out)["setup"]
    assert (setup["max_num_seqs"], setup["max_batched_tokens"]) == (8, 8192)
    default = {"sglang": "SGLang's server_args.py (0.3.0, 0.4.0 over 25,000 MB of GPU): chunked_prefill_size 8192; ",
               "vllm": "vLLM's OpenAI-server defaults on >= 70 GiB GPUs"}[scheduler]
    assert setup["budget_source"].startswith("--max-num-seqs given; the other: " + default)
    code, out, err = run_main(SERVE + ["--scheduler", scheduler, "--max-num-seqs", "8", "--max-batched-tokens",
                                       "2048", "--json"], capsys)
    assert json.loads(out)["setup"]["budget_source"] == "given"


def test_sglang_refuses_pipeline_stages_its_releases_cannot_launch(capsys):
    # `serve --scheduler sglang --tp 4 --pp 2` ran (Llama 3 70B: 1,323,315 pool tokens at tp 4's mem_fraction_static
    # 0.85), a deployment neither SGLang v0.3.0 nor v0.4.0 can start: their ServerArgs have no pp_size
    for release in ("v0.3.0", "v0.4.0"):
        code, out, err = run_main(["serve", "--model", "llama3-70b", "--hardware", "h100-sxm", "--scheduler", "sglang",
                                   "--engine-release", release, "--tp", "4", "--pp", "2", "--rate", "4", "--requests",
                                   "8"], capsys)
        assert (code, out) == (2, "")
        assert err == (f"error: --pp 2: SGLang {release} has no pipeline parallelism (server_args.py's ServerArgs "
                       "holds tp_size and dp_size, no pp_size, at v0.3.0 and v0.4.0); serve --scheduler sglang splits "
                       "a replica by --tp alone (--replicas for more copies).\n")
    with pytest.raises(ConfigError, match=r"^--pp 2: SGLang v0\.4\.0 has no pipeline parallelism"):
        costmodel.serve("llama3-70b", "h100-sxm", scheduler="sglang", tp=4, pp=2, rate=4, requests=8)


LLAMA_128K = dict(seq_len=131072, global_batch=8, tp=1, pp=1, framework="megatron", zero=1, recompute="full")


def test_plan_takes_cp_rotate_for_its_context_parallel_layouts(capsys):
    # `plan --cp-rotate a2a` was "No such option '--cp-rotate'. (Did you mean one of: '--prompt', '--rate'?)": plan
    # costed every cp layout with torch's all-gather, so a DeepSpeed-Ulysses or Megatron a2a user could not plan one
    rows = {}
    for rotate in ("a2a", "ring"):
        result = costmodel.plan("llama3.1-8b", 8, "h100-sxm", cp_rotate=rotate, **LLAMA_128K)
        every = result.feasible + result.infeasible
        # dp x cp = 8 at 131,072 tokens: cp 2, 4 and 8 (each keeps >= 4,096 tokens a rank); no cp 1 layout
        assert sorted({(row["layout"]["cp"], row["layout"]["cp_rotate"]) for row in every}) == \
            [(2, rotate), (4, rotate), (8, rotate)]
        rows[rotate] = {(row["layout"]["cp"], row["layout"]["batch"]): row for row in result.feasible}
    # the all-to-alls are exposed, the ring's sends hidden under the attention (docs/layouts.md): different steps
    assert rows["a2a"][8, 1]["step_time"] != rows["ring"][8, 1]["step_time"]
    single = costmodel.simulate("llama3.1-8b", "h100-sxm", train=True, seq_len=131072, batch=1, attention="flash",
                                recompute="full",
                                layout=dict(framework="megatron", zero=1, cp=8, cp_rotate="a2a", microbatches=8))
    assert rows["a2a"][8, 1]["step_time"] == pytest.approx(single.to_dict()["step"]["seconds"], rel=1e-9)
    code, out, err = run_main(["plan", "--model", "llama3.1-8b", "--gpus", "8", "--hardware", "h100-sxm", "--seq-len",
                               "131072", "--global-batch", "8", "--tp", "1", "--pp", "1", "--framework", "megatron",
                               "--zero", "1", "--recompute", "full", "--cp", "8", "--cp-rotate", "a2a"], capsys)
    assert code == 0, err
    assert "1 x 1 x 1 (cp 8 a2a)  megatron" in out
    with pytest.raises(ConfigError, match=r"fsdp2 runs torch's context_parallel: allgather or ring\.$"):
        costmodel.plan("llama3.1-8b", 8, "h100-sxm", cp_rotate="a2a", **{**LLAMA_128K, "framework": "fsdp2", "zero": 3})
