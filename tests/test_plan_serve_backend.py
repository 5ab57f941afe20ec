"""`plan --serve --rate --attention-backend` (serve's option, kernel_facts.json "serving_attention_backends"):
every replica the capacity search simulates times its attention at the backend's kernel, so a deployment's p99
figures are serve's at the same budgets and backend; a backend serve refuses is one line before the search."""

from __future__ import annotations

import json

import pytest

import cli

SEARCH = ["plan", "--serve", "--model", "llama2-7b", "--rate", "4", "--slo-ttft", "0.5", "--slo-tpot", "0.03",
          "--requests", "40", "--tp", "1", "--json"]
PLAN = SEARCH + ["--hardware", "h200"]


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_chosen_deployment_is_serves_at_its_budgets(capsys):
    """Llama 2 7B on one H200 at 4 req/s (40 requests of 512 + 128 tokens): the first deployment (1 replica,
    256 sequences, 512 tokens a step) under flash-attn3 has serve's p99 TTFT and TPOT with those budgets and
    that backend, exactly; its TTFT is below flash-attn2's (FlashAttention-3's prefill rate)."""
    code, out, _ = run(PLAN + ["--attention-backend", "flash-attn3"], capsys)
    fa3 = json.loads(out)
    code2, out, _ = run(PLAN, capsys)
    fa2 = json.loads(out)
    assert (code, code2, fa3["attention_backend"], fa2["attention_backend"]) == (0, 0, "flash-attn3", "flash-attn2")
    best = fa3["feasible"][0]
    assert (best["replicas"], best["max_num_seqs"], best["max_batched_tokens"]) == (1, 256, 512)
    code, out, _ = run(["serve", "--model", "llama2-7b", "--hardware", "h200", "--rate", "4", "--requests", "40",
                        "--prompt", "512", "--output", "128", "--tp", "1", "--max-num-seqs", "256",
                        "--max-batched-tokens", "512", "--attention-backend", "flash-attn3", "--json"], capsys)
    served = json.loads(out)
    assert code == 0 and served["setup"]["attention_backend"] == "flash-attn3"
    assert (best["p99_ttft_s"], best["p99_tpot_s"]) == (served["ttft"]["p99"], served["tpot"]["p99"])
    same = next(r for r in fa2["feasible"] if (r["max_num_seqs"], r["max_batched_tokens"]) == (256, 512))
    assert best["p99_ttft_s"] < same["p99_ttft_s"]


@pytest.mark.parametrize("flags, message", [
    (["--attention-backend", "xformers"], "error: --attention-backend xformers: no published kernel rate of that "
     "backend's prefill or decode is in kernel_facts.json (serving_attention_backends); backends with figures: "
     "flash-attn2, flash-attn3."),
    (["--attention-backend", "flash-attn3", "--hardware", "h200,a100-80gb"],
     "error: attention kernel 'flash3' has no published figures on ampere; it has on: hopper."),
    (["--attention-backend", "flash-attn3", "--time-model", "roofline"], "error: --attention-backend flash-attn3 "
     "names a kernel's published rates, which the kernel model reads; the roofline times attention at the "
     "hardware's efficiencies: drop one of them."),
])
def test_a_backend_serve_refuses_is_one_line(capsys, flags, message):
    code, out, err = run(SEARCH + (flags if "--hardware" in flags else flags + ["--hardware", "h200"]), capsys)
    assert (code, out, err.strip()) == (2, "", message)


@pytest.mark.parametrize("args, message", [
    (["--serve", "--gpus", "1"], "error: --attention-backend: the capacity search's options: add --rate."),
    (["--gpus", "1"], "error: --attention-backend: serving options (--serve); a training plan takes --seq-len and "
                      "--global-batch."),
])
def test_without_the_capacity_search_it_is_refused(capsys, args, message):
    code, out, err = run(["plan", "--model", "llama2-7b", *args, "--attention-backend", "flash-attn3"], capsys)
    assert (code, out, err.strip()) == (2, "", message)
