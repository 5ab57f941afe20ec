"""What a new user's third round (the serving and time commands, issues 18 and 19) turned up: each
test runs the command as a user typed it and checks the answer or the one error line.
"""

from __future__ import annotations

import json

import pytest

from costmodel.config import Workload
from costmodel.estimation import Estimate
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.serving_memory import serving_memory
from costmodel.presets import load_preset
from tests.cli_run import run_main

SERVE = ["serve", "--model", "gpt2", "--rate", "2", "--requests", "4", "--weight-dtype", "fp8"]


def test_fp8_weights_on_a_gpu_without_fp8_run_weight_only_and_say_so(capsys):
    # A T4 (Turing) has no FP8 tensor cores, but vLLM runs FP8 checkpoints on compute capability
    # >= 7.5 as weight-only W8A16 with FP8 Marlin (docs.vllm.ai, features/quantization/fp8): serve
    # accepts it and times it so, exactly as --fp8-gemm w8a16 does, and its header says which.
    code, out, err = run_main(SERVE + ["--hardware", "t4", "--json"], capsys)
    assert code == 0, err
    auto = json.loads(out)
    code, out, err = run_main(SERVE + ["--hardware", "t4", "--fp8-gemm", "w8a16", "--json"], capsys)
    assert code == 0, err
    weight_only = json.loads(out)
    assert auto["setup"]["fp8_gemm_runs"] == weight_only["setup"]["fp8_gemm_runs"] == "w8a16"
    assert auto["tpot"] == weight_only["tpot"] and auto["duration_s"] == weight_only["duration_s"]
    code, out, err = run_main(SERVE + ["--hardware", "t4"], capsys)
    assert "fp8 GEMMs: w8a16 (t4 has no FP8 peak): weight-only" in out
    code, out, err = run_main(SERVE + ["--hardware", "h100-sxm"], capsys)
    assert "fp8 GEMMs: w8a8 (h100-sxm has an FP8 peak)" in out


@pytest.mark.parametrize("command", [
    SERVE + ["--hardware", "t4", "--fp8-gemm", "w8a8"],
    ["plan", "--serve", "--model", "gpt2", "--hardware", "t4", "--rate", "1", "--requests", "4", "--slo-ttft", "1", "--slo-tpot", "0.1",
     "--weight-dtype", "fp8", "--fp8-gemm", "w8a8"],
])
def test_w8a8_on_a_gpu_without_fp8_is_one_line(command, capsys):
    code, out, err = run_main(command, capsys)
    assert code == 2 and out == ""
    assert err == ("error: hardware t4: no FP8 peak (flops_per_s[\"fp8\"]) for --fp8-gemm w8a8; "
                   "use w8a16 (weight-only) or auto.\n")


def test_report_on_a_t4_takes_its_fp16_or_refuses_a_typed_bf16(tmp_path, capsys):
    # report's default --dtype bf16 on a T4 (no bf16 peak) raised a traceback from the layout figures.
    base = ["report", "--model", "gpt2", "--no-measure", "--tp", "2", "--hardware", "t4"]
    code, out, err = run_main(base + ["--dtype", "bf16", "-o", str(tmp_path / "typed")], capsys)
    assert (code, out) == (2, "")
    assert err == "error: t4 has no bf16 peak (Turing); use --dtype fp16.\n"
    assert not (tmp_path / "typed").exists()
    code, out, err = run_main(base + ["-o", str(tmp_path / "default")], capsys)
    assert code == 0, err
    assert "batch 1, fp16, each model" in (tmp_path / "default" / "report.md").read_text()


@pytest.mark.parametrize("name, prompt, gen", [
    ("llama-3-8b", 2048, 128),   # the last decode step peaks (generate's prefill: one position's logits)
    ("llama-3-8b", 16, 1000),    # the last decode step peaks
    ("gemma2-9b", 5000, 100),    # sliding windows, soft-capped logits
    ("gpt2", 512, 128),          # tied embedding, learned positions
])
def test_a_one_gpu_layout_holds_what_inference_without_one_holds(name, prompt, gen):
    # simulate --tp 2 left out the prefill's logits that the no-layout total holds: at tp 1 the two
    # are now the same bytes. Both take the prefill as Hugging Face generate's (the last position's
    # logits: tree.generate_logits_to_keep); estimate's plain forward holds (n - 1) x V more where
    # its prefill peaks.
    from costmodel.evaluate import exact, values
    from costmodel.memory import inference_bytes
    from costmodel.tree import generate_logits_to_keep, profile_for

    cfg = load_preset(name)
    workload = Workload(seq_len=prompt, gen_tokens=gen, batch=3, dtype="bf16", precision="pure")
    rank = serving_memory(ParallelEstimate(cfg, workload, Layout(tp=1, framework="deepspeed"), phase="decode"))
    generate = profile_for(cfg, workload, logits_to_keep=generate_logits_to_keep(cfg, "hf"))
    assert rank["total"] == exact(inference_bytes(cfg, generate), values(cfg, workload))
    assert rank["total"] <= Estimate(cfg, workload).memory_numbers()["inference_total"]


def test_tensor_parallel_ranks_each_hold_the_gathered_logits():
    # Llama-3-8B, batch 1, prompt 16 + 1000: the logits gathered over tp 2 on each rank, all V of
    # them: the last decode step's one token (8 B) and its logits (128256 x 2 B) beside the cache of
    # 1015 tokens (16 + 999 fed back) peaks. (Before: the prefill's 2048 x 128256 x 2 B peaked. Since
    # session 26 the larger of the logits and the largest no-grad transient counts: the step's eager
    # scores, 16 heads per rank x 1015 keys x 10 B = 162,400, are smaller; at a prompt of 2048 the
    # prefill's scores, 16 x 2048^2 x 10 B, would peak.)
    cfg = load_preset("llama-3-8b")
    workload = Workload(seq_len=16, gen_tokens=1000, batch=1, dtype="bf16", precision="pure")
    rank = serving_memory(ParallelEstimate(cfg, workload, Layout(tp=2, framework="deepspeed"), phase="decode"))
    assert rank["transient"] == 128256 * 2 + 8
    cache = 1015 * 32 * 2 * (8 // 2) * 128 * 2  # tokens x layers x (K, V) x KV heads per rank x head dim x 2 B
    assert rank["total"] == rank["weights"] + rank["buffers"] + cache + rank["transient"]


@pytest.mark.parametrize("prompt, says", [
    # lognormal:0:1 raised "math domain error" from log(0) as a traceback.
    ("lognormal:0:1", "a lognormal length needs a median of at least 1 token and a finite sigma >= 0, got 0 and 1.0"),
    ("lognormal:100:-1", "got 100 and -1.0"),
    # A histogram file without "values" said only "('values')", a KeyError's text.
    ("histogram:{hist}", 'a histogram file holds {"values": [tokens, ...], "weights": [w, ...]}'),
])
def test_a_bad_length_distribution_is_one_line(prompt, says, tmp_path, capsys):
    hist = tmp_path / "hist.json"
    hist.write_text('{"128": 3, "512": 5}')
    code, out, err = run_main(["serve", "--model", "gpt2", "--rate", "2", "--requests", "3",
                               "--prompt", prompt.format(hist=hist)], capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert says in err and ".)." not in err


def test_replicas_beside_disaggregate_is_refused_not_ignored(capsys):
    # --disaggregate 1:1 --replicas 3 served 2 replicas and said nothing of the 3.
    code, out, err = run_main(["serve", "--model", "gpt2", "--rate", "2", "--requests", "3",
                               "--disaggregate", "1:1", "--replicas", "3"], capsys)
    assert (code, out) == (2, "")
    assert err == ("error: --disaggregate 1:1 replaces --replicas (its P + D replicas are the deployment); "
                   "give one of them.\n")


def test_rates_refuses_one_runs_tables_instead_of_dropping_them(tmp_path, capsys):
    # serve --rates 1,8 --csv FILE exited 0 and wrote no FILE.
    path = tmp_path / "rows.csv"
    code, out, err = run_main(["serve", "--model", "gpt2", "--rates", "1,8", "--requests", "3", "--csv", str(path)],
                              capsys)
    assert (code, out) == (2, "") and not path.exists()
    assert err.startswith("error: --csv: one run's tables, not written with --rates")


def test_goodput_names_only_the_slos_given(capsys):
    # "100.0% within TTFT <= None s, TPOT <= 0.5 s" when only --slo-tpot was given.
    code, out, err = run_main(["serve", "--model", "gpt2", "--rate", "2", "--requests", "3", "--slo-tpot", "0.5"],
                              capsys)
    assert code == 0, err
    assert "(100.0% within TPOT <= 0.5 s)" in out and "None" not in out


PLAN_SERVE = ["plan", "--serve", "--model", "gpt2", "--hardware", "l4", "--rate", "2", "--slo-ttft", "1",
              "--slo-tpot", "0.1", "--requests", "4", "--tp", "1", "--json"]


def test_plan_serve_rate_prices_its_rows_with_price(capsys):
    # --price was read only by training plans: the capacity search's $/h stayed empty.
    code, out, err = run_main(PLAN_SERVE + ["--price", "0.75"], capsys)
    assert code == 0, err
    rows = json.loads(out)["feasible"]
    assert rows and all(row["dollars_per_hour"] == 0.75 * row["gpus"] for row in rows)
    code, out, err = run_main(PLAN_SERVE[:5] + ["l4,t4"] + PLAN_SERVE[6:] + ["--price", "0.75"], capsys)
    assert (code, out) == (2, "") and err.startswith("error: --price is one hardware's dollars per GPU-hour")
    code, out, err = run_main(PLAN_SERVE + ["--tokens", "1e9"], capsys)  # a training run's tokens: refused
    assert (code, out) == (2, "") and err.startswith("error: --tokens: the capacity search")


def test_the_api_refuses_replicas_beside_disaggregate():
    import costmodel
    from costmodel.errors import ConfigError

    with pytest.raises(ConfigError, match="replaces --replicas"):
        costmodel.serve("gpt2", "h100-sxm", rate=2, requests=3, replicas=2, disaggregate=(1, 1))


@pytest.mark.parametrize("command", [
    ["serve", "--model", "gpt2", "--hardware", "v100-sxm2-32gb", "--rate", "1", "--requests", "3",
     "--weight-dtype", "fp8"],
    ["simulate", "--model", "gpt2", "--hardware", "v100-sxm2-32gb", "--weight-dtype", "fp8", "--fp8-gemm", "w8a16"],
    ["serve", "--model", "gpt2", "--hardware", "mi250x", "--rate", "1", "--requests", "3", "--weight-dtype", "fp8"],
])
def test_fp8_weights_on_a_gpu_with_neither_fp8_path_are_one_line(command, capsys):
    # A V100 (compute capability 7.0) is below FP8 Marlin's 7.5 and has no FP8 peak: serve timed its
    # fp8 weights weight-only, as on a T4, for an engine that does not load them there.
    code, out, err = run_main(command, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "has neither: use --weight-dtype none (the --dtype's bytes), int8 or int4." in err


def test_serve_checks_every_output_before_writing_any(tmp_path, capsys):
    # --csv A --plot missing/x.png wrote A, then failed on the plot: a half-written set of outputs.
    first = tmp_path / "requests.csv"
    code, out, err = run_main(["serve", "--model", "gpt2", "--rate", "1", "--requests", "3", "--csv", str(first),
                               "--plot", str(tmp_path / "missing" / "x.png")], capsys)
    assert (code, out) == (2, "") and err == f"error: {tmp_path / 'missing'}: no such directory.\n"
    assert not first.exists()
    code, out, err = run_main(["serve", "--model", "gpt2", "--rate", "1", "--requests", "3", "--csv", str(first),
                               "--plot", str(tmp_path / "x.svg")], capsys)
    assert code == 0, err
    assert first.read_text().splitlines()[0].startswith("id,replica,arrival_s,prompt_tokens,output_tokens")
    assert len(first.read_text().splitlines()) == 1 + 3 and (tmp_path / "x.svg").stat().st_size > 0


@pytest.mark.parametrize("scheduler", ["vllm", "vllm-v0"])
def test_a_token_budget_below_the_sequence_cap_is_refused_as_vllm_refuses_it(scheduler, capsys):
    # vLLM's SchedulerConfig._verify_args (vllm/config/scheduler.py) raises when
    # max_num_batched_tokens < max_num_seqs; its equal is accepted.
    args = ["serve", "--model", "gpt2", "--rate", "2", "--requests", "4", "--scheduler", scheduler,
            "--prompt", "32", "--output", "4", "--max-num-seqs", "64"]
    code, out, err = run_main(args + ["--max-batched-tokens", "63"], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["error: --max-batched-tokens (63) must be at least --max-num-seqs (64): vLLM "
                                        "refuses a token budget below its sequence cap (SchedulerConfig._verify_args: "
                                        "vllm/config.py in v0, vllm/config/scheduler.py in v1)."]
    code, out, err = run_main(args + ["--max-batched-tokens", "64"], capsys)
    assert code == 0, err


def test_plan_serve_lists_a_budget_below_the_sequence_cap_as_not_feasible():
    from costmodel import load_model
    from costmodel.hardware import load_hardware
    from costmodel.serving.capacity import Target, plan_capacity

    target = Target(rate=1, slo_ttft=1.0, slo_tpot=0.05, requests=8, prompt="64", output="8", seed=0)
    result = plan_capacity(load_model("gpt2"), [load_hardware("h100-sxm")], target, tps=[1], max_num_seqs=[64, 256],
                           max_batched_tokens=[128], processes=1)
    assert [(row["max_num_seqs"], row["max_batched_tokens"]) for row in result["feasible"]] == [(64, 128)]
    assert [(row["max_num_seqs"], "below its sequence cap" in row["reason"]) for row in result["infeasible"]] == [
        (256, True)]


@pytest.mark.parametrize("option", ["100000000000000000000000", "uniform:1:100000000000000000000000",
                                    "lognormal:5:1:1:100000000000000000000", "histogram"])
def test_a_length_past_int64_is_one_line_not_an_overflow(option, tmp_path, capsys):
    if option == "histogram":
        path = tmp_path / "h.json"
        path.write_text('{"values": [1e30], "weights": [1]}')
        option = f"histogram:{path}"
    code, out, err = run_main(["serve", "--model", "gpt2", "--rate", "1", "--requests", "3", "--prompt", option],
                              capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "past any model's context; at most 2**40 here" in err
