"""The serving commands, `serve` and `plan --serve --rate`: their text, JSON and CSV output, the router,
disaggregated serving, traces, and their bad input as one clear line (split from tests/test_serving.py).
"""

from __future__ import annotations

import json

import pytest

import costmodel
from cli import main
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.serving import serve
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.schedulers import VLLMScheduler
from costmodel.serving.steptime import StepTime
from tests.serving_traces import ONE_STEP, requests


def test_serve_json_answers_the_issue_question(capsys) -> None:
    """p99 TTFT and TPOT at 5 req/s for Llama-3-8B on one H100 with vLLM's scheduler."""
    assert main(["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "5", "--requests", "200",
                 "--scheduler", "vllm", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["requests"] == 200 and summary["setup"]["num_blocks"] == 28431  # test_serving_reserve.py
    assert 0 < summary["ttft"]["p99"] < 1 and 0 < summary["tpot"]["p99"] < 0.1
    assert main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "50"]) == 0
    assert "TTFT" in capsys.readouterr().out


def test_static_batching_says_it_has_no_token_budget(capsys) -> None:
    """generate()'s batch has no token budget; the report printed the sentinel, 4611686018427387904."""
    assert main(["serve", "--model", "llama3-8b", "--rate", "2", "--requests", "10", "--scheduler", "static"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line == "budgets: max-num-seqs 8, max-batched-tokens none (a batch of 8, as one would call generate())"


def test_serve_writes_csvs(tmp_path, capsys) -> None:
    out, steps = tmp_path / "r.csv", tmp_path / "s.csv"
    assert main(["serve", "--model", "llama3-8b", "--rate", "50", "--requests", "30", "--csv", str(out),
                 "--steps-csv", str(steps), "--scheduler", "sarathi"]) == 0
    assert out.read_text().splitlines()[0].startswith("id,replica,arrival_s,prompt_tokens,output_tokens,queueing_s")
    assert "kv_blocks_used" in steps.read_text().splitlines()[0]


def _bad(tmp_path, lines: str) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text(lines)
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["--rate", "0"], "--rate must be a positive"),
    (["--rate", "-3"], "--rate must be a positive"),
    # restated in session 39 (wt39_user2): fixed lengths say what to do
    (["--rate", "5", "--prompt", "9000"], "pass the model's context of 8192; give them at most 8192 together."),
    # an unbounded draw past the context says which option drew it and how to bound it
    (["--rate", "1", "--prompt", "lognormal:6000:1"], "request 2: prompt 8614 + output 128 tokens pass the "
     "model's context of 8192 (drawn from --prompt lognormal:6000:1 --output 128: bound the distribution "
     "inside it, e.g. lognormal:MEDIAN:SIGMA:LOW:HIGH)."),
    (["--rate", "5", "--block-size", "0"], "--block-size must be a positive"),
    (["--rate", "5", "--num-blocks", "4", "--prompt", "100"], "needs 15 KV blocks of 16 tokens; the cache holds 4"),
    # session 40: the length type refuses 0 with the forms (costmodel/sizes.py), before the scheduler's check
    (["--rate", "5", "--max-batched-tokens", "0"], "'--max-batched-tokens': '0' is not a length of at least 1"),
    (["--rate", "5", "--scheduler", "orca", "--max-batched-tokens", "100", "--prompt", "600"], None),
    (["--rate", "5", "--prompt", "lognormal:x"], "length distribution 'lognormal:x': use N, uniform:LOW:HIGH"),
    (["--rate", "5", "--trace", "x.jsonl"], "exactly one of --rate"),
    (["--rate", "5", "--scheduler", "vllm-v0", "--num-scheduler-steps", "0"], "--num-scheduler-steps must be"),
    (["--rate", "5", "--scheduler", "vllm-v0", "--num-scheduler-steps", "-2"], "--num-scheduler-steps must be"),
    (["--rate", "5", "--num-scheduler-steps", "4"], "modelled for the vllm-v0 scheduler only, not vllm"),
    (["--rate", "5", "--scheduler", "sarathi", "--num-scheduler-steps", "2"], "vllm-v0 scheduler only, not sarathi"),
])
def test_serve_bad_input(args, message, capsys) -> None:
    code = main(["serve", "--model", "llama3-8b", "--requests", "3", *args])
    err = capsys.readouterr().err
    if message is None:  # Orca runs a prompt past its budget alone: not an error
        assert code == 0
        return
    assert code == 2 and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize("content, message", [
    ('{"arrival": 0, "prompt_tokens": 5, "output_tokens": 2}\n{"arrival": 1, "prompt_tokens": 5\n', "bad.jsonl:2: not a JSON object"),
    ('{"arrival": 0, "prompt_tokens": 5}\n', "bad.jsonl:1: missing output_tokens"),
    ('\n{"arrival": -1, "prompt_tokens": 5, "output_tokens": 2}\n', "bad.jsonl:2: arrival must be"),
    ('{"arrival": 0, "prompt_tokens": 0, "output_tokens": 2}\n', "bad.jsonl:1: prompt_tokens must be a positive"),
    ('[1, 2]\n', "bad.jsonl:1: not a JSON object"),
])
def test_serve_malformed_trace_names_the_line(tmp_path, content, message, capsys) -> None:
    assert main(["serve", "--model", "llama3-8b", "--trace", _bad(tmp_path, content)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_vllm_without_chunking_rejects_a_prompt_past_the_budget() -> None:
    """Without chunked prefill a 300-token prompt can never run in a 256-token step: refused before
    the simulation starts, in the sentence the CLI prints."""
    scheduler = VLLMScheduler(BlockPool(1000, 16), 8, 256, chunked_prefill=False)
    with pytest.raises(ConfigError, match="does not fit --max-batched-tokens 256 without chunked prefill"):
        simulate(requests((0, 300, 2)), scheduler, ONE_STEP, 8192)
    chunked = simulate(requests((0, 300, 2)), VLLMScheduler(BlockPool(1000, 16), 8, 256), ONE_STEP, 8192)
    assert [s.entries for s in chunked.steps] == [[(0, 256)], [(0, 44)], [(0, 1)]]


def test_plan_serve_rate_ranks_by_gpus(capsys) -> None:
    assert main(["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4",
                 "--slo-ttft", "1", "--slo-tpot", "0.05", "--requests", "40", "--tp", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["configurations"] == 9 and result["feasible"]
    gpus = [row["gpus"] for row in result["feasible"]]
    assert gpus == sorted(gpus) and gpus[0] == 1
    assert all(row["p99_ttft_s"] <= 1 and row["p99_tpot_s"] <= 0.05 for row in result["feasible"])


@pytest.mark.parametrize("args, message", [
    (["--rate", "4", "--slo-ttft", "1"], "needs --slo-ttft and --slo-tpot"),
    (["--rate", "0", "--slo-ttft", "1", "--slo-tpot", "1"], "--rate must be a positive"),
])
def test_plan_serve_bad_input(args, message, capsys) -> None:
    assert main(["plan", "--serve", "--model", "llama3-8b", *args]) == 2
    assert message in capsys.readouterr().err
    assert main(["plan", "--model", "llama3-8b", "--rate", "3"]) == 2
    assert "add --serve" in capsys.readouterr().err


def test_serve_figures_and_rate_sweep(tmp_path, capsys) -> None:
    timeline, latency = tmp_path / "timeline.png", tmp_path / "latency.svg"
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--requests", "40", "--plot", str(timeline)]) == 0
    assert timeline.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["serve", "--model", "llama3-8b", "--rates", "1,50", "--requests", "40", "--plot", str(latency),
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rates"]
    assert [r["rate"] for r in rows] == [1.0, 50.0] and rows[1]["ttft"]["p99"] > rows[0]["ttft"]["p99"]
    assert latency.read_text().lstrip().startswith("<?xml")
    assert main(["serve", "--model", "llama3-8b", "--rates", "1,x"]) == 2
    assert main(["serve", "--model", "llama3-8b", "--rates", "1,50", "--requests", "40", "--output", "1",
                 "--slo-ttft", "0.05"]) == 0
    text = capsys.readouterr().out
    # the deployment is named as `serve --rate` names it; one output token reads "token", its TPOT a dash
    # was "1 replica(s)" before round 46
    assert text.startswith("llama3-8b on 1 replica (round-robin) of 1 x h100-sxm (bf16), scheduler vllm")
    assert "requests: 40 at each rate, Poisson (seed 0); prompt 512, output 1 token\n" in text
    row_1 = [line for line in text.splitlines() if line.startswith("      1 ")][0].split()
    assert row_1[3:5] == ["-", "-"] and row_1[-1].endswith("%") and "goodput" in text
    assert main(["serve", "--model", "llama3-8b", "--rate", "1", "--plot", str(tmp_path / "a.txt")]) == 2


def test_least_outstanding_router_sends_work_to_the_idle_replica(tmp_path, capsys) -> None:
    """r0 (1,000 tokens to generate) goes to replica 0 and r1 (one token) to replica 1 either way;
    r2 (1,000 tokens) arrives when replica 1 is idle again: round-robin sends it to the busy
    replica 0, least-outstanding to replica 1, where it decodes alone."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 0, "prompt_tokens": 10, "output_tokens": 1000}\n'
                     '{"arrival": 0.01, "prompt_tokens": 10, "output_tokens": 1}\n'
                     '{"arrival": 0.5, "prompt_tokens": 10, "output_tokens": 1000}\n')
    rr = serve("llama3-8b", trace=str(trace), replicas=2)
    lot = serve("llama3-8b", trace=str(trace), replicas=2, router="least-outstanding")
    assert list(rr.requests["replica"]) == [0, 1, 0]
    assert list(lot.requests["replica"]) == [0, 1, 1]
    assert lot.requests["tpot_s"][2] < rr.requests["tpot_s"][2]
    assert main(["serve", "--model", "llama3-8b", "--trace", str(trace), "--replicas", "2", "--router",
                 "least-outstanding", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["router"] == "least-outstanding"


def test_disaggregated_request_alone_pays_the_transfer(capsys) -> None:
    """One request alone on 1 prefill + 1 decode replica: its first token is the prefill step; the
    second comes after its KV cache crossed the link (512 tokens x 131,072 bytes over the H100
    preset's inter-node link, plus its latency) and one decode step at 513 keys."""
    from costmodel.serving.disaggregated import transfer_seconds

    hw = load_hardware("h100-sxm")
    step = StepTime(costmodel.load_model("llama3-8b"), hw)
    run = costmodel.serve("llama3-8b", "h100-sxm", rate=1, requests=1, prompt="512", output="3", disaggregate=(1, 1),
                          cuda_graphs="off", sampling=None)  # the forward's steps (no sampler)
    row = run.requests.iloc[0]
    transfer = transfer_seconds(hw, 131072, 512)
    assert transfer == 512 * 131072 / hw.inter_node_bandwidth_bytes_per_s + hw.collective_latency_s
    assert row["ttft_s"] == pytest.approx(step.seconds([512], [512]), rel=1e-12)
    second = transfer + step.seconds([1], [513])  # the first token's keys and values join the cache
    third = step.seconds([1], [514])
    assert row["max_itl_s"] == pytest.approx(max(second, third), rel=1e-12)
    assert row["tpot_s"] == pytest.approx((second + third) / 2, rel=1e-12)
    assert set(run.steps["replica"]) == {0, 1}
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--requests", "30", "--disaggregate", "1:2"]) == 0
    assert "1 prefill + 2 decode" in capsys.readouterr().out
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--disaggregate", "1:0"]) == 2
    assert main(["serve", "--model", "llama3-8b", "--rate", "20", "--disaggregate", "x"]) == 2


def test_a_trace_s_lengths_are_its_own_in_the_text_and_json(tmp_path, capsys) -> None:
    """serve --trace described the requests by --prompt/--output's defaults (512, 128) though the trace
    sets each request's lengths: it now gives the trace's range and mean."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 0, "prompt_tokens": 100, "output_tokens": 20}\n'
                     '{"arrival": 0.5, "prompt_tokens": 300, "output_tokens": 40}\n'
                     '{"arrival": 0.6, "prompt_tokens": 200, "output_tokens": 30}\n')
    assert main(["serve", "--model", "llama3-8b", "--trace", str(trace)]) == 0
    assert "requests: 3 from trace" in (out := capsys.readouterr().out)
    assert "; prompt 100-300 (mean 200), output 20-40 (mean 30) tokens" in out
    assert main(["serve", "--model", "llama3-8b", "--trace", str(trace), "--json"]) == 0
    setup = json.loads(capsys.readouterr().out)["setup"]
    assert (setup["prompt"], setup["output"]) == ("100-300 (mean 200)", "20-40 (mean 30)")
