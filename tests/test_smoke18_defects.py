"""A new user's eighteenth round (session 24; validate/FINDINGS.md "A new user's eighteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic, or the figure
another command prints for the same case."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_json, run_main


# 1. FlashAttention-2 runs on Ampere (sm80) and later only (kernel_facts.json "flash_attention_missing")

QWEN_T4 = ["--model", "qwen2.5-7b", "--hardware", "t4"]


def test_plan_serve_on_a_t4_runs_sdpa_not_flash(capsys):
    """plan --serve on a T4 said "flash attention": FlashAttention-2 needs sm80 (torch's sdpa and
    vLLM fall back to the memory-efficient / XFormers kernel there). Its default is now sdpa, said in a
    note, and every row is the one --attention sdpa gives; the KV cache a tp-2 rank holds is 32
    sequences x 639 tokens (512 + 128 - 1) x 28 layers x 2 x 2 KV heads (4 / 2) x 128 x 2 bytes."""
    args = ["plan", "--serve", *QWEN_T4, "--gpus", "2", "--prompt", "512", "--gen", "128"]
    code, out, err = run_main([*args, "--json"], capsys)
    assert code == 0 and "note: attention sdpa: FlashAttention-2 runs on Ampere (sm80) and later, and t4 is Turing" in err
    plan = json.loads(out)
    assert plan["inputs"]["attention"] == "sdpa"
    assert plan["feasible"] == run_json([*args, "--attention", "sdpa"], capsys)["feasible"]
    assert plan["feasible"][0]["per_rank"]["kv_cache"] == 32 * 639 * 28 * 2 * 2 * 128 * 2 == 586_285_056
    assert "--attention flash: FlashAttention-2 runs on Ampere (sm80)" in one_error_line([*args, "--attention", "flash"],
                                                                                          capsys)


def test_plan_serve_on_an_h100_keeps_flash(capsys):
    plan = run_json(["plan", "--serve", "--model", "qwen2.5-7b", "--hardware", "h100", "--gpus", "1"], capsys)
    assert plan["inputs"]["attention"] == "flash"


def test_serve_on_a_t4_runs_sdpa_and_says_so(capsys):
    """serve's default kernel on a T4 is sdpa, with the note in the setup (and its text); on an H100
    flash, no note; a typed flash on a T4 is one error line."""
    args = ["serve", *QWEN_T4, "--tp", "2", "--rate", "1", "--requests", "5"]
    setup = run_json(args, capsys)["setup"]
    assert setup["attention"] == "sdpa" and setup["attention_note"].startswith("attention sdpa: FlashAttention-2")
    h100 = run_json(["serve", "--model", "qwen2.5-7b", "--hardware", "h100", "--rate", "1", "--requests", "5"],
                    capsys)["setup"]
    assert h100["attention"] == "flash" and "attention_note" not in h100
    code, out, _ = run_main(args, capsys)
    assert code == 0 and "\nattention sdpa: FlashAttention-2 runs on Ampere (sm80)" in out
    one_error_line([*args, "--attention", "flash"], capsys)


@pytest.mark.parametrize("command", [
    ["simulate", *QWEN_T4, "--prompt", "512", "--gen", "2"],
    ["simulate", "--model", "qwen2.5-7b", "--hardware", "v100-sxm2-32gb", "--prompt", "512", "--gen", "2"],
    ["estimate", *QWEN_T4],
    ["finetune", *QWEN_T4],
], ids=["simulate-t4", "simulate-v100", "estimate", "finetune"])
def test_a_typed_flash_on_volta_or_turing_is_one_error_line(command, capsys):
    line = one_error_line([*command, "--attention", "flash"], capsys)
    assert "FlashAttention-2 runs on Ampere (sm80) and later GPUs" in line and "use --attention sdpa" in line


def test_the_fit_verdict_on_volta_or_turing_offers_no_flash():
    """Gemma 2's class has no sdpa path, so an eager step's verdict offered --attention flash, which no
    T4 runs: with flash=False (flash_support.runs_flash, what estimate and finetune pass) it is left out.
    gemma2-2b, 4,096 tokens, bf16: eager 94,569,306,126 bytes, flash 66,219,218,958; a GPU between."""
    import dataclasses

    from costmodel.api import load_model, make_workload
    from costmodel.flash_support import runs_flash
    from costmodel.hardware import load_hardware
    from costmodel.verdict import training_memory, verdict

    cfg = load_model("gemma2-2b")
    workload = make_workload(cfg, 4096, batch=1, dtype="bf16")[0]
    eager = training_memory(cfg, workload, None)
    flash = training_memory(cfg, dataclasses.replace(workload, attention="flash"), None)
    assert (workload.attention, eager, flash) == ("eager", 94_569_306_126, 66_219_218_958)
    offered = {runs: [o["change"] for o in verdict(cfg, workload, None, (eager + flash) // 2, 1, "training",
                                                  flash=runs)["options"]] for runs in (True, False)}
    assert offered[True][0] == "--attention flash" and offered[False] == offered[True][1:]
    assert [runs_flash(load_hardware(name)) for name in ("t4", "v100-sxm2-32gb", "a100-80gb", "l4", "mi300x")] == \
        [False, False, True, True, True]


# 2. A LoRA rank above min(in, out) of a target: warned, counted as peft builds it

def test_a_lora_rank_above_a_targets_narrow_side_warns(capsys):
    """qwen2.5-7b's v_proj is 3,584 -> 512 (4 KV heads x 128): at r 513 its B A has rank at most 512.
    peft 0.21 builds it (LoraLayer.update_layer refuses only r <= 0), so finetune warns once and
    counts what peft builds: 28 layers x 513 x ((3,584 + 3,584) + (3,584 + 512)) trainable; r 512: no warning."""
    code, out, err = run_main(["finetune", "--model", "qwen2.5-7b", "--lora-rank", "513", "--json"], capsys)
    assert code == 0 and err.count("warning: ") == 1
    assert "warning: --lora-rank 513 is above the smaller side min(in, out) of v_proj (512)" in err
    assert "q_proj" not in err  # 3,584 x 3,584: wide enough
    assert json.loads(out)["memory"]["trainable_params"] == 28 * 513 * (2 * 3584 + 3584 + 512) == 161_796_096
    code, _, err = run_main(["finetune", "--model", "qwen2.5-7b", "--lora-rank", "512"], capsys)
    assert code == 0 and "warning" not in err


# 3. `hardware NAME` and `models TEXT` (a new user's first tries were "unexpected extra argument")

def test_hardware_name_shows_that_gpu(capsys):
    """`hardware h100` is the h100-sxm preset's row (its figures: 989.4 TFLOP/s bf16, 80 GiB), in any
    spelling --hardware takes; a bad name is one line; NAME beside --show is refused in one line."""
    row = run_json(["hardware", "h100"], capsys)
    assert (row["name"], row["flops_per_s"]["bf16"], row["memory_bytes"]) == ("h100-sxm", 989.4e12, 80 * 2**30)
    assert run_json(["hardware", "NVIDIA A100-SXM4-80GB"], capsys)["name"] == "a100-80gb"
    code, out, _ = run_main(["hardware", "Tesla T4"], capsys)
    assert code == 0 and out.splitlines()[2].startswith("t4 ") and len(out.splitlines()) == 4
    assert "unknown hardware 'nope'" in one_error_line(["hardware", "nope"], capsys)
    one_error_line(["hardware", "h100", "--show", "h100"], capsys)
    assert run_main(["hardware", "--show", "h100"], capsys)[0] == 0  # the options kept


def test_models_text_filters_the_presets(capsys):
    """`models qwen`: the presets whose name, family or an alias contains it, in any case (the 22
    Qwen presets, DeepSeek's Qwen distill among them); nothing matching is one line."""
    rows = run_json(["models", "QWEN"], capsys)
    assert len(rows) == 22 and "deepseek-r1-distill-qwen-1.5b" in {r["name"] for r in rows}
    assert {r["name"] for r in run_json(["models", "mistralai/"], capsys)} >= {"mistral-7b", "mixtral-8x7b"}
    assert all(r["family"] == "mixtral" or "mistral" in r["name"] for r in run_json(["models", "mistralai/"], capsys))
    assert "no preset's name, family or alias contains 'zzz'" in one_error_line(["models", "zzz"], capsys)


# 4. plan --serve --rate: a bad number is named before the missing SLOs

@pytest.mark.parametrize("args, named", [
    (["--serve", "--rate", "nan"], "--rate must be a positive, finite number, got nan."),
    (["--rate", "nan"], "--rate must be a positive, finite number, got nan."),  # before "add --serve"
    (["--serve", "--rate", "inf"], "--rate must be a positive, finite number, got inf."),
    (["--serve", "--rate", "1", "--slo-ttft", "-1"], "--slo-ttft must be a positive, finite number, got -1.0."),
    (["--serve", "--rate", "2", "--slo-tpot", "nan", "--slo-ttft", "1"], "--slo-tpot must be a positive, finite number"),
])
def test_plan_serve_rate_names_a_bad_number_first(args, named, capsys):
    assert named in one_error_line(["plan", "--model", "llama3-8b", *args], capsys)
    assert "needs --slo-ttft" in one_error_line(["plan", "--serve", "--model", "llama3-8b", "--rate", "1"], capsys)


# 5. The full layers' own KV heads (h_kvg: Gemma 4, MiMo-V2-Flash) split under tensor parallelism

#: Gemma4TextConfig's defaults (d 2,304, 8 heads, 4 KV heads of 256, window 512, 30 layers: every sixth
#: full) with keys as values on the full layers: 2 KV heads of 512 there (num_global_key_value_heads).
GEMMA4_GLOBAL_KV = dict(model_type="gemma4_text", vocab_size=262144, hidden_size=2304, intermediate_size=9216,
                        num_hidden_layers=30, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                        global_head_dim=512, attention_k_eq_v=True, num_global_key_value_heads=2,
                        sliding_window=512, hidden_size_per_layer_input=0, max_position_embeddings=131072)


def _rank(config: dict, tmp_path, capsys, *options: str) -> dict:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return run_json(["simulate", "--config", str(path), "--hardware", "h100", "--prompt", "2048", "--gen", "128",
                     "--batch", "8", *options], capsys)


def test_the_full_layers_kv_heads_split_under_tp(tmp_path, capsys):
    """The cache a rank holds at its peak (the prefill: 8 x 2,048 tokens, the windowed layers still
    holding the whole prompt), K and V in bf16: 25 sliding layers x h_kv / tp heads x 256 and 5 full
    layers x h_kvg / tp heads x 512, the full layers' 2 heads one per rank at tp 2 and one replicated
    over 2 ranks at tp 4 (vLLM's QKVParallelLinear). tp 2 held both full-layer heads on each rank
    before (1,174,405,120 bytes)."""
    def kv(sliding_heads: int, full_heads: int) -> int:
        return 8 * 2048 * 2 * 2 * (25 * sliding_heads * 256 + 5 * full_heads * 512)
    caches = [_rank(GEMMA4_GLOBAL_KV, tmp_path, capsys, "--tp", str(tp))["per_rank"]["kv_cache"] for tp in (2, 4)]
    assert caches == [kv(2, 1), kv(1, 1)] == [1_006_632_960, 587_202_560]


def test_the_full_layers_key_projection_splits_under_tp(tmp_path, capsys):
    """At tp 2 a rank holds half of the full layers' k_proj (keys are the values: no v_proj): 4 full-layer
    KV heads against 2 differ by 5 layers x 2,304 x (2 - 1) heads a rank x 512 x 2 bytes (0 before: the
    2 heads stayed whole on each rank, as many as 4 split)."""
    four = _rank(dict(GEMMA4_GLOBAL_KV, num_global_key_value_heads=4), tmp_path, capsys, "--tp", "2")["per_rank"]
    two = _rank(GEMMA4_GLOBAL_KV, tmp_path, capsys, "--tp", "2")["per_rank"]
    assert four["weights"] - two["weights"] == 5 * 2304 * 1 * 512 * 2 == 11_796_480


def test_training_refuses_a_tp_that_does_not_divide_the_full_layers_kv_heads(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA4_GLOBAL_KV))
    line = one_error_line(["simulate", "--config", str(path), "--hardware", "h100", "--train", "--seq-len", "2048",
                           "--tp", "4"], capsys)
    assert "tp = 4 does not divide the full-attention layers' key/value heads (2)" in line
    path.write_text(json.dumps(dict(GEMMA4_GLOBAL_KV, num_attention_heads=12, num_global_key_value_heads=3)))
    line = one_error_line(["simulate", "--config", str(path), "--hardware", "h100", "--prompt", "64", "--tp", "2",
                           "--gen", "2"], capsys)  # 12 query and 4 KV heads split; the full layers' 3 do not
    assert "tp = 2 is neither a divisor nor a multiple of the full-attention layers' key/value heads (3)" in line


# Part B: defects found typing the commands

def test_a_comma_list_in_model_points_to_report_models(capsys):
    """`report --model llama2-7b,mistral-7b` (report takes several models) said "unknown model
    'llama2-7b,mistral-7b'. Did you mean mistral-7b, ...?": it names --models now."""
    line = one_error_line(["estimate", "--model", "llama2-7b,mistral-7b"], capsys)
    assert "one model a run; to set several side by side, `report --models llama2-7b,mistral-7b --out DIR`" in line
    assert "unknown model 'llama2-7b,nope'" in one_error_line(["estimate", "--model", "llama2-7b,nope"], capsys)


@pytest.mark.parametrize("rates", ["1,nan", "0,2", "2,-1"])
def test_serve_rates_names_rates(rates, capsys):
    """serve --rates 1,nan said "--rate must be a positive number ..., got nan", an option not typed."""
    assert one_error_line(["serve", "--model", "llama3-8b", "--rates", rates], capsys).startswith(
        "error: --rates must be positive numbers of requests per second, got ")


def test_on_a_t4_a_class_without_sdpa_serves_eager(capsys):
    """Gemma 2's class has no sdpa path (facts sdpa_supported False): on a T4 the default that gave
    way to sdpa was refused in every layout ("attention 'sdpa': gemma2's ... class has no
    scaled_dot_product_attention path"); it is eager there, said so, in plan --serve and serve."""
    code, out, err = run_main(["plan", "--serve", "--model", "gemma2-9b", "--hardware", "t4", "--gpus", "2", "--json"],
                              capsys)
    plan = json.loads(out)
    assert plan["inputs"]["attention"] == "eager" and "note: attention eager: FlashAttention-2 runs on Ampere" in err
    assert not [row for row in plan["infeasible"] if "sdpa" in json.dumps(row)]
    setup = run_json(["serve", "--model", "gemma2-9b", "--hardware", "t4", "--tp", "2", "--rate", "1",
                      "--requests", "3"], capsys)["setup"]
    assert setup["attention"] == "eager" and setup["attention_note"].startswith("attention eager: ")


def test_plan_serve_warns_of_the_kernel_it_runs(tmp_path, capsys):
    """plan --serve runs flash, but a window shorter than the prompt warned "eager attention still
    computes every score" (its workload was built under the default eager)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA4_GLOBAL_KV))
    code, _, err = run_main(["plan", "--serve", "--config", str(path), "--hardware", "h100", "--gpus", "1"], capsys)
    # since session 29 the warning says on how many layers the window applies (wt29_user27)
    assert code == 0 and ("sliding window of 512 tokens on 25 of its 30 layers: flash attention skips the scores "
                          "outside the window") in err
    assert "eager" not in err
