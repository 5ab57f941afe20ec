"""Defects a new user hit in session 38's second round (wt38_user2): serving cost, plans and fit
verdicts. Each test failed before its fix."""

from __future__ import annotations

from tests.cli_run import run_json, run_main


# ---------------------------------------------------------------------------------------------
# 1. $ per million output tokens over the run's span moved with --requests (serving/metrics.sustained_output)

def _rows(arrivals, admitted, finishes, tokens=10):
    return [{"arrival_s": a, "queueing_s": s - a, "ttft_s": s - a + 0.1, "finish_s": f, "output_tokens": tokens}
            for a, s, f in zip(arrivals, admitted, finishes)]


def test_sustained_output_is_the_offered_rate_where_the_queue_empties_and_the_run_where_it_does_not():
    """Hand timelines, 10 output tokens a request. Kept up: arrivals at 0, 1, 2 s (1 req/s), each served
    at once in 0.5 s: at the admission at 1 s nobody waits -> 1 x 10 tokens/s, not the run's 30 / 2.5 s.
    Saturated: arrivals at 0..5 s served one at a time in 2 s (finishes 2..12 s): the admissions at 2 and
    4 s leave a queue -> the run's 60 / 12 s = 5 tokens/s (below the offered 10)."""
    from costmodel.serving.metrics import sustained_output

    assert sustained_output(_rows([0, 1, 2], [0, 1, 2], [0.5, 1.5, 2.5]), 1.0) == (10.0, "offered")
    saturated = _rows(range(6), [0, 2, 4, 6, 8, 10], [2, 4, 6, 8, 10, 12])
    assert sustained_output(saturated, 1.0) == (5.0, "run")
    assert sustained_output(saturated, None) == (5.0, "run")  # no rate (a trace, a closed loop)
    assert sustained_output(saturated, float("inf")) == (5.0, "run")
    assert sustained_output(saturated, 1e308) == (5.0, "run")  # 1e308 x 10 tokens: no finite offered rate


SERVE = ["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--price", "3"]


def test_serve_prices_the_offered_rate_it_keeps_up_with_whatever_the_request_count(capsys):
    """`serve --rate 20 --price 3` read $0.3952/M with 300 requests (2,109 output tokens/s over 18.2 s,
    the drain after the last arrival included) and $0.339/M with 1,200 (2,458 tokens/s): one H100 keeps up
    with 20 x 128 = 2,560 tokens/s, so both are 3 / (2,560 x 3600) x 1e6 = $0.3255/M."""
    runs = [run_json([*SERVE, "--rate", "20", "--requests", requests, "--json"], capsys) for requests in ("300", "1200")]
    assert runs[0]["throughput"]["output_tokens_per_s"] < runs[1]["throughput"]["output_tokens_per_s"] < 2560
    for run in runs:
        assert (run["cost"]["basis"], run["cost"]["output_tokens_per_s"]) == ("offered", 2560.0)
        assert run["cost"]["dollars_per_million_output_tokens"] == 3 / (2560 * 3600) * 1e6



def test_serve_rates_table_says_which_rate_each_price_is_over(capsys):
    """`serve --rates 5,400 --price 3`'s `$/M out` column is over the rate each row sustains, not its
    `out tok/s` column (the run's, the drain included: 547 at 5 req/s, where 5 x 128 = 640 is served)."""
    code, out, _ = run_main([*SERVE, "--rates", "5,400", "--requests", "300"], capsys)
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("5 ", "400 "))]
    assert code == 0 and [row[5] for row in rows] == ["547", "6,757"] and rows[0][6] == f"{3 / (640 * 3600) * 1e6:.3g}"
    assert out.strip().splitlines()[-1] == ("$/M out over the output tokens/s each rate sustains: 640 at 5 (offered), "
                                            "6,757 at 400 (run); offered: the rate x the mean output tokens, kept up "
                                            "with; run: the out tok/s column")

PLAN = ["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--serve", "--rate", "20", "--slo-ttft", "1",
        "--slo-tpot", "0.1", "--price", "3", "--tp", "1", "--top", "1"]


def test_plan_serve_prices_the_offered_rate_and_says_so(capsys):
    """`plan --serve --rate 20 --price 3` on one H100: $0.395/M with 300 requests, another figure with 600;
    a deployment that meets the SLOs keeps up, so both are $0.3255/M, and a line names the rate."""
    for requests in ("300", "600"):
        row = run_json([*PLAN, "--requests", requests, "--json"], capsys)["feasible"][0]
        assert (row["gpus"], row["sustained_basis"], row["replica_sustained_output_tokens_per_s"]) == (1, "offered", 2560.0)
        assert row["dollars_per_million_output_tokens"] == 3 / (2560 * 3600) * 1e6
    code, out, _ = run_main([*PLAN, "--requests", "300"], capsys)
    assert code == 0 and "$/M out: over the output rate each deployment sustains: the offered 20 req/s x the mean " \
                         "output tokens where it keeps up (every row shown)" in out


def test_a_saturated_serve_prices_its_capacity(capsys):
    """At 200 req/s one H100 serves 6,553 output tokens/s (a queue all along): the price is over that
    measured rate, not the offered 25,600, and the text says which rate."""
    run = run_json([*SERVE, "--rate", "200", "--requests", "1000", "--json"], capsys)
    measured = run["throughput"]["output_tokens_per_s"]
    assert 6000 < measured < 7000 and run["cost"]["basis"] == "run"
    assert run["cost"]["output_tokens_per_s"] == measured
    assert run["cost"]["dollars_per_million_output_tokens"] == 3 / (measured * 3600) * 1e6


# ---------------------------------------------------------------------------------------------
# 2. estimate --hardware's inference verdict offered --tp 8 on a node of 2 (verdict._more_serving_gpus)

def test_inference_verdict_keeps_tensor_parallelism_within_a_node(capsys):
    """Llama 3 70B in fp16 on an RTX 4090 (2 GPUs a node, its hardware file) was told `--gpus 8 --tp 8`, a
    tensor-parallel group over four nodes that plan --serve's search never tries (tensor_sizes: within a
    node); now tp 2 with 4 pipeline stages, 17.16 GiB a GPU, the figure `estimate --gpus 8 --tp 2 --pp 4`
    prints. An H100 node (8) keeps --gpus 2 --tp 2."""
    args = ["estimate", "--model", "llama3-70b", "--seq-len", "2048", "--dtype", "fp16", "--json"]
    fit = run_json([*args, "--hardware", "rtx-4090"], capsys)["fit"]["inference"]
    assert [o["change"] for o in fit["options"]][0] == "--gpus 8 --tp 2 --pp 4"
    assert "tensor parallel 2 x 4 pipeline stages" in fit["options"][0]["cost"]
    typed = run_json([*args, "--hardware", "rtx-4090", "--gpus", "8", "--tp", "2", "--pp", "4"], capsys)
    assert typed["fit"]["inference"]["memory"] == fit["options"][0]["memory"] and typed["fit"]["inference"]["fits"]
    h100 = run_json([*args, "--hardware", "h100-sxm"], capsys)["fit"]["inference"]
    assert h100["options"][0]["change"] == "--gpus 2 --tp 2"


# ---------------------------------------------------------------------------------------------
# 3. plan --serve --rate where nothing fits: each reason cut at its ':' lost what to do

def test_plan_serve_that_nothing_meets_says_what_to_do(capsys):
    """Llama 3 70B on RTX 4090s (2 a node) printed "not feasible: 18 (llama3-70b does not leave room for
    one KV block on rtx-4090 at tp 1; ... at tp 2)" and stopped: the remedy after each reason's ':' was
    cut. The widest configuration's whole reason follows, naming --pp and --weight-dtype (--tp 2 --pp 4
    then meets it)."""
    code, out, _ = run_main(["plan", "--serve", "--model", "llama3-70b", "--hardware", "rtx-4090", "--rate", "1",
                             "--slo-ttft", "2", "--slo-tpot", "0.1", "--requests", "100"], capsys)
    last = out.strip().splitlines()[-1]
    assert code == 1 and last.startswith("widest tried, tp 2 x pp 1 (tp within a node; pp as --pp gives, 1 by default): "
                                         "llama3-70b does not leave room for one KV block on rtx-4090 at tp 2: weights 65.7 GiB")
    assert last.endswith("spread it over more GPUs (--tp, --pp) or store its weights in fewer bytes (--weight-dtype).")


# ---------------------------------------------------------------------------------------------
# 4. finetune where nothing fits said so and stopped (finetune_verdict._least)

def test_finetune_that_nothing_fits_names_the_least_it_needs(capsys):
    """Llama 3 70B's LoRA on an RTX 4090: "No single change, nor QLoRA with full recomputation, makes it
    fit." and no size to look for. Now the least one GPU holds (the nf4 base, full recomputation, a
    1-token sequence: 37.29 GiB, which `finetune ... --method qlora --recompute full --seq-len 1` prints)."""
    args = ["finetune", "--model", "llama3-70b", "--hardware", "rtx-4090"]
    fit = run_json([*args, "--method", "lora", "--json"], capsys)["fit"]
    assert fit["options"] == [] and fit["least"]["change"] == "--method qlora --recompute full --seq-len 1"
    lean = run_json([*args, "--method", "qlora", "--recompute", "full", "--seq-len", "1", "--json"], capsys)
    assert fit["least"]["memory"] == lean["memory"]["total"] == lean["fit"]["memory"]
    code, out, _ = run_main([*args, "--method", "lora"], capsys)
    assert code == 0 and out.strip().splitlines()[-1] == (
        "  No single change, nor QLoRA with full recomputation, makes it fit: even `--method qlora --recompute full "
        "--seq-len 1` needs 37.29 GiB; a GPU with more memory than that (finetune sizes one GPU; `estimate --hardware "
        "H --gpus N` shards full training).")
