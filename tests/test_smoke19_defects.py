"""A new user's nineteenth round (session 24; validate/FINDINGS.md "A new user's nineteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic, or the figure
another command prints for the same case."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_json, run_main


# 2. A request past the context: serve refuses it (vLLM's max_model_len), and so does the capacity search

LLAMA31 = ["--model", "meta-llama/Llama-3.1-8B", "--hardware", "h100"]
# restated in session 39 (wt39_user2): fixed lengths name the options and what to do, not "request 0"
PAST = "error: --prompt 131073 + --output 1 tokens pass the model's context of 131072; give them at most 131072 together."


def test_plan_serve_rate_refuses_a_request_past_the_context(capsys):
    """plan --serve --rate ran its 36 configurations and listed each "not feasible" (request 0),
    exit 1; it now says what serve says for the same request (Llama 3.1's 131,072 positions)."""
    assert one_error_line(["plan", "--serve", *LLAMA31, "--prompt", "131073", "--gen", "1", "--rate", "1",
                           "--slo-ttft", "100", "--slo-tpot", "1"], capsys) == PAST
    assert one_error_line(["serve", *LLAMA31, "--prompt", "131073", "--output", "1", "--rate", "1"], capsys) == PAST


def test_plan_serve_without_rate_warns_as_simulate_does(capsys):
    """plan --serve without --rate times Hugging Face generate's layouts (simulate's workload, which
    runs past the context with a warning), so it warns as simulate does."""
    warning = "warning: sequence length 131073 is beyond the context of model 'llama3.1-8b' (131072 tokens)."
    for args in (["plan", "--serve", *LLAMA31, "--gpus", "8"], ["simulate", *LLAMA31, "--tp", "8"]):
        code, _, err = run_main([*args, "--prompt", "131073", "--gen", "1"], capsys)
        assert code == 0 and warning in err


# 3. Context parallelism's exchange moves the full layers' KV heads (h_kvg) of their width (d_hg)

GEMMA4_ALL_FULL = dict(model_type="gemma4_text", vocab_size=262144, hidden_size=2304, intermediate_size=9216,
                       num_hidden_layers=30, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                       global_head_dim=512, attention_k_eq_v=True, num_global_key_value_heads=1,
                       sliding_window=512, hidden_size_per_layer_input=0, max_position_embeddings=131072,
                       layer_types=["full_attention"] * 30)


def test_context_parallel_exchange_moves_the_full_layers_kv_heads(tmp_path, capsys):
    """Gemma4TextConfig with every layer full (context parallelism refuses a window): each layer's
    attention gets 1 KV head (num_global_key_value_heads) of 512 (global_head_dim), sdpa's key and
    value both (k_eq_v passes the same tensor twice). Per rank at cp 2, batch 1, 2,048 tokens: the
    all-gather forward and backward, cp x 2 x 1,024 tokens x 1 x 512 x 2 bytes a layer each, and the
    backward's cp sends of the fp32 gradients, cp x 2 x 1,024 x 512 x 4. Before: 4 heads x 256
    (n_kv_heads, head_dim), 503,316,480 bytes each."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA4_ALL_FULL))
    # --framework fsdp2: torch's all-gather rotation this test was written for (DeepSpeed, the default framework,
    # runs Ulysses' all-to-all since session 43: wt43_etpfix)
    moved = run_json(["simulate", "--config", str(path), "--hardware", "h100", "--train", "--seq-len", "2048",
                      "--cp", "2", "--framework", "fsdp2"], capsys)["parallel"]["communication"]["cp"]
    assert moved == {"all_gather": 30 * 2 * (2 * 2 * 1024 * 1 * 512 * 2), "send": 30 * 2 * 2 * 1024 * 512 * 4}
    assert moved == {"all_gather": 251_658_240, "send": 251_658_240}


# 4. --price: serve prices its deployment at the simulated throughput; estimate has no time

SERVE_8B = ["serve", "--model", "llama3-8b", "--hardware", "h100", "--rate", "4", "--requests", "50"]


def test_serve_price_gives_dollars_per_million_output_tokens(capsys):
    """costmodel/cost.py serving_cost: GPUs x $/GPU-hour over the output tokens an hour at the rate the
    deployment sustains; tp 2 (2 GPUs) at $2 keeps up with 4 req/s x 128 output tokens. (Restated in
    session 38, wt38_user2: it was 50 x 128 tokens over the run's duration, which moved with --requests.)"""
    run = run_json([*SERVE_8B, "--tp", "2", "--price", "2", "--json"], capsys)
    assert run["setup"]["price_per_gpu_hour"] == 2.0
    assert run["cost"]["dollars_per_hour"] == 4.0 and run["cost"]["gpus"] == 2
    assert run["cost"]["basis"] == "offered" and run["cost"]["output_tokens_per_s"] == 4 * 128
    assert run["cost"]["dollars_per_million_output_tokens"] == 4.0 / (4 * 128 * 3600) * 1e6
    code, out, _ = run_main([*SERVE_8B, "--tp", "2", "--price", "2"], capsys)
    per_million = run["cost"]["dollars_per_million_output_tokens"]
    # was "2 GPU(s)" before round 46
    assert code == 0 and f"cost: 2 GPUs x $2 an hour = $4.00/h; ${per_million:,.4g} per million output tokens" in out
    assert "cost" not in run_json(SERVE_8B, capsys)  # no price: no cost (the h100 preset has none)


def test_serve_price_defaults_to_the_hardware_files(tmp_path, capsys):
    code, out, _ = run_main(["hardware", "--show", "h100", "--json"], capsys)
    path = tmp_path / "h100.json"
    path.write_text(json.dumps({**json.loads(out), "price_per_gpu_hour": 3}))
    run = run_json([*SERVE_8B[:3], "--hardware", str(path), *SERVE_8B[5:]], capsys)
    assert run["cost"]["price_per_gpu_hour"] == 3 and run["cost"]["dollars_per_hour"] == 3


def test_serve_rates_price_each_rate_and_bad_prices_are_one_line(capsys):
    sweep = run_json([*SERVE_8B[:5], "--rates", "1,4", "--requests", "50", "--price", "2"], capsys)
    for row in sweep["rates"]:
        assert row["cost"]["dollars_per_million_output_tokens"] == pytest.approx(
            2 / (row["throughput"]["sustained_output_tokens_per_s"] * 3600) * 1e6, rel=1e-12)
    assert one_error_line([*SERVE_8B, "--price", "nan"], capsys) == \
        "error: --price must be a positive number of dollars per GPU-hour, got nan."


def test_estimate_price_names_where_to_price(capsys):
    line = one_error_line(["estimate", "--model", "llama3-8b", "--hardware", "h100", "--price", "2"], capsys)
    assert line.startswith("error: --price: estimate has no time to price") and "serve --price P" in line


# 1. Megatron on Volta and Turing: Transformer Engine's unfused attention (kernel_facts.json
#    "flash_attention_missing", transformer_engine), counted as --attention eager

T4_MEGATRON = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "t4", "--framework", "megatron", "--tp", "4",
               "--pp", "2", "--recompute", "full", "--seq-len", "2048", "--global-batch", "64", "--batch", "1"]


def test_megatron_on_a_t4_runs_unfused_attention(capsys):
    """TE's get_attention_backend disables FlashAttention and FusedAttention below sm80, so the
    default is the typed --attention eager's figures, said in a note; before, flash: activations
    660,701,184 B a rank and a 42.84 s step, now 734,035,968 B and 50.96 s."""
    code, out, err = run_main([*T4_MEGATRON, "--json"], capsys)
    assert code == 0 and "note: attention eager under megatron: Transformer Engine runs neither" in err
    run = json.loads(out)
    assert run["inputs"]["attention"] == "eager"
    eager = run_json([*T4_MEGATRON, "--attention", "eager"], capsys)
    assert run["parallel"]["per_rank"] == eager["parallel"]["per_rank"] and run["step"] == eager["step"]
    assert run["parallel"]["per_rank"]["activations"] == 734_035_968


def test_plan_megatron_layouts_on_a_t4_are_eager_and_on_an_h100_flash(capsys):
    t4 = run_json(["plan", "--model", "meta-llama/Llama-3.1-8B", "--hardware", "t4", "--gpus", "8", "--framework",
                   "megatron"], capsys)
    assert t4["feasible"] and {entry["layout"]["attention"] for entry in t4["feasible"]} == {"eager"}
    h100 = run_json(["plan", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "8", "--framework", "megatron",
                     "--top", "3"], capsys)
    assert {entry["layout"]["attention"] for entry in h100["feasible"]} == {"flash"}


def test_the_python_api_picks_the_same_kernel():
    """costmodel.simulate with a Megatron layout: eager on a T4, flash on an H100 (defaults.implied)."""
    import costmodel

    kernels = [costmodel.simulate("llama3-8b", hardware=gpu, train=True, seq_len=2048, batch=1,
                                  layout=dict(framework="megatron", tp=8)).to_dict()["inputs"]["attention"]
               for gpu in ("t4", "h100")]
    assert kernels == ["eager", "flash"]


def test_estimate_fit_on_a_v100_counts_megatron_unfused(capsys):
    """estimate --hardware v100 with a Megatron layout: the fit verdict's memory is the eager one."""
    args = ["estimate", "--model", "llama3-8b", "--hardware", "v100-sxm2-32gb", "--framework", "megatron", "--tp", "8",
            "--seq-len", "4096"]
    default, eager = (run_json([*args, *extra], capsys) for extra in ([], ["--attention", "eager"]))
    assert default["fit"]["training"]["memory"] == eager["fit"]["training"]["memory"]
    sdpa = run_json([*args, "--attention", "sdpa"], capsys)
    assert default["fit"]["training"]["memory"] > sdpa["fit"]["training"]["memory"]


# Part B: defects found typing the commands

def test_plan_serve_rate_refuses_deepseek_v4_as_serve_does(capsys):
    """The capacity search built 36 configurations, each "not feasible" (DeepSeek-V4's prefill chunk
    is not modelled), and exited 1; it now refuses in serve's line (leaves.require_chunks)."""
    line = ("error: model 'deepseek-v4-flash': a prefill chunk against a cache (serving) is not modelled for "
            "DeepSeek-V4's compressed attention.")
    assert one_error_line(["plan", "--serve", "--model", "deepseek-v4-flash", "--hardware", "h200", "--rate", "1",
                           "--slo-ttft", "5", "--slo-tpot", "0.2"], capsys) == line
    code, _, err = run_main(["serve", "--model", "deepseek-v4-flash", "--hardware", "h200", "--tp", "8", "--rate", "1"],
                            capsys)
    assert code == 2 and err.strip().splitlines()[-1] == line


def test_megatron_context_parallelism_on_a_t4_is_refused(capsys):
    """Below sm80 TE has only its unfused attention, which get_attention_backend also disables under
    context parallelism: no backend is left, so --cp is one line."""
    code, out, err = run_main(["simulate", "--train", "--model", "llama3-8b", "--hardware", "t4", "--framework",
                               "megatron", "--cp", "2", "--tp", "4", "--seq-len", "4096"], capsys)
    assert (code, out) == (2, "") and err.startswith("note: attention eager under megatron")  # the note says why
    assert err.strip().splitlines()[-1] == ("error: layout: context parallelism runs fused attention (sdpa or flash), not eager (Transformer "
                    "Engine's unfused attention, Megatron's below sm80, refuses it too).")
