"""Issue 20's defects 1-12, each pinned by a test that failed before its fix.

Numbers are the cost tree's own (an Estimate of the same workload), so each test checks the
wiring a defect broke rather than a copied figure.
"""

from __future__ import annotations

import json

import pytest

import cli
from costmodel import roofline as sim
from costmodel.estimation import Estimate
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from costmodel.config import Workload


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(args: list[str], capsys) -> dict:
    code, out, err = run(args + ["--json"], capsys)
    assert code == 0, err
    return json.loads(out)


# 1. simulate --train without a layout honours --attention and --impl.
def test_simulate_train_without_layout_uses_the_attention_asked_for(capsys):
    common = ["simulate", "--model", "llama3-8b", "--train", "--seq-len", "4096", "--hardware", "h100-sxm"]
    sdpa = run_json(common + ["--attention", "sdpa"], capsys)
    eager = run_json(common + ["--attention", "eager"], capsys)
    # A layout is timed by the kernel-level model by default; one GPU without one by the roofline.
    one_gpu = run_json(common + ["--attention", "sdpa", "--dp", "1", "--time-model", "roofline"], capsys)
    cfg = load_preset("llama3-8b")
    for attention, result in (("sdpa", sdpa), ("eager", eager)):
        estimate = Estimate(cfg, Workload(seq_len=4096, attention=attention))
        assert result["memory"]["activations"] == estimate.memory_numbers()["activations"]
        assert result["inputs"]["attention"] == attention
    assert sdpa["memory"]["activations"] < eager["memory"]["activations"]
    assert sdpa["step"]["seconds"] == pytest.approx(one_gpu["step"]["seconds"], rel=1e-9)


def test_simulate_train_without_layout_uses_the_impl_asked_for(capsys):
    common = ["simulate", "--model", "gpt2", "--train", "--hardware", "h100-sxm"]
    hf = run_json(common + ["--impl", "hf"], capsys)
    reference = run_json(common + ["--impl", "reference"], capsys)
    cfg = load_preset("gpt2")
    for impl, result in (("hf", hf), ("reference", reference)):
        estimate = Estimate(cfg, Workload(seq_len=1024, impl=impl))
        assert result["memory"]["activations"] == estimate.memory_numbers()["activations"]
        assert result["inputs"]["impl"] == impl


# 2. Serving with a layout says whether it fits.
def test_serving_with_a_layout_says_whether_it_fits(capsys):
    args = ["simulate", "--model", "llama2-70b", "--hardware", "h100-sxm", "--tp", "2", "--batch", "64"]
    data = run_json(args, capsys)
    # Serving plans with 90% of the 81,117 MiB the H100 reports (vLLM's gpu_memory_utilization) less the
    # 512 MiB reserve.
    usable = int(81_117 * 2**20 * 0.9) - 512 * 2**20
    assert data["memory_capacity"] == usable
    assert data["fits"] is (data["per_rank"]["total"] <= usable) is False
    _, out, _ = run(args, capsys)
    # The larger phase is the last decode step: weights 64.24 GiB, the KV cache of 2175 tokens
    # (21.24 GiB: the last of the 128 generated is never fed back) and one token's ids and gathered logits, 64 x 8 B + 64 x 32000 x 2 B = 3.91 MiB.
    # The prefill is generate's (logits of the last position only, 3.91 MiB beside 1 MiB of ids,
    # and 20.00 GiB of the prompt's cache): smaller. (Before, its logits over all 2048 positions,
    # 64 x 2048 x 32000 x 2 B = 7.81 GiB, made it peak at 92.05 GiB.)
    # Since session 26 the prefill peaks: its FFN's no-grad hidden tensors, 3 x 64 x 2048 x 28,672 / 2
    # x 2 B = 10.50 GiB on each rank (the layout's sdpa keeps no n x n scores), beside the prompt's cache.
    assert "KV cache 20.00 GiB, ids, logits and transients 10.50 GiB, total 94.74 GiB (does NOT fit in 70.79 GiB)" in out
    data = run_json(["simulate", "--model", "llama2-13b", "--hardware", "h100-sxm", "--tp", "2", "--batch", "64"],
                    capsys)
    assert data["fits"] is True


# 3. Long generations are summed in closed form (tests/test_decode_sums.py); the step-by-step
# path, in chunks of bounded memory, gives the same seconds.
def test_decode_in_chunks_equals_the_closed_form(monkeypatch):
    cfg, hardware = load_preset("gpt2"), load_hardware("h100-sxm")
    whole = sim.simulate_inference(cfg, hardware, prompt=100, gen=50, batch=2, attention="eager",
                                   time_model="roofline")
    monkeypatch.setattr(sim, "DECODE_CHUNK", 7)  # 49 steps (the prefill gives the first token) in 7 chunks
    with_cache, without_cache = sim.stepwise_generation_seconds(sim.Roofline(cfg, hardware), 2, 101, 149)
    assert whole["decode"]["decode_seconds"] == pytest.approx(with_cache, rel=1e-12)
    last = whole["generation_table"][-1]
    assert last["without_cache_cumulative"] - whole["prefill"]["seconds"] == pytest.approx(without_cache, rel=1e-12)


# 4. Under full recomputation the per-block activations sum to the total.
@pytest.mark.parametrize("model", ["llama2-7b", "gemma2-9b", "t5-small", "mixtral-8x7b"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_activations_by_block_sum_to_the_activations(model, recompute):
    cfg = load_preset(model)
    estimate = Estimate(cfg, Workload(seq_len=min(1024, cfg.max_positions), batch=2, recompute=recompute))
    memory = estimate.memory_numbers()
    assert sum(memory["activations_by_block"].values()) == memory["activations"]
    assert sum(row.saved_bytes for row in estimate.held_rows) == memory["activations"]


def test_full_recomputation_holds_one_layer_of_each_block():
    cfg = load_preset("llama2-7b")
    full = Estimate(cfg, Workload(seq_len=4096, recompute="full")).memory_numbers()["activations_by_block"]
    none = Estimate(cfg, Workload(seq_len=4096)).memory_numbers()["activations_by_block"]
    assert full["decoder.layer.ffn.mlp"] * 32 == none["decoder.layer.ffn.mlp"]  # 32 layers, one rebuilt
    assert full["decoder.layer.checkpoint"] == 32 * 4096 * 4096 * 2  # each layer's bf16 input


# 5. plan rejects a zero batch instead of replacing it by a default.
@pytest.mark.parametrize("args, words", [
    (["--global-batch", "0"], "--global-batch must be at least 1, got 0."),
    (["--serve", "--batch", "0"], "--batch must be at least 1, got 0."),
    (["--batch", "0"], "--batch must be at least 1, got 0."),
])
def test_plan_rejects_a_zero_batch(args, words, capsys):
    code, _, err = run(["plan", "--model", "llama2-7b", "--gpus", "8", *args], capsys)
    assert code == 2 and err.strip() == f"error: {words}"


# 6. The fit line names what does not fit.
def test_the_fit_line_says_the_weights_alone_exceed_the_gpu(capsys):
    _, out, _ = run(["simulate", "--model", "llama2-70b", "--hardware", "h100-sxm"], capsys)
    assert "the weights alone (128.48 GiB) exceed 70.79 GiB" in out and "batch <= 0" not in out
    # 68,976,648,192 parameters x 2 bytes = 128.48 GiB


def test_the_fit_line_says_the_prefill_does_not_fit(capsys):
    _, out, _ = run(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--prompt", "3968",
                     "--batch", "64"], capsys)
    assert "the prefill of this prompt" in out and "context <= 0" not in out


# 7. Wording.
def test_time_to_train_line_and_costs(capsys):
    _, out, _ = run(["simulate", "--model", "llama3-8b", "--train", "--hardware", "h100-sxm", "--attention",
                     "sdpa", "--tokens", "2e12", "--price", "2.5"], capsys)
    assert "tokens22" not in out
    line = next(x for x in out.splitlines() if "time to train" in x)
    assert line.endswith("on 2.00 T tokens, 1 GPU")


def test_one_gpu_one_sequence_and_no_recomputation_words(capsys):
    _, out, _ = run(["simulate", "--model", "gpt2", "--train", "--hardware", "h100-sxm", "--dp", "1"], capsys)
    assert "1 GPUs" not in out and "Parallel layout: 1 GPU = " in out
    assert "with recomputation" not in out
    _, out, _ = run(["simulate", "--model", "gpt2", "--train", "--hardware", "h100-sxm", "--dp", "1",
                     "--recompute", "full"], capsys)
    assert "TFLOP/s per GPU with recomputation" in out
    _, out, _ = run(["plan", "--model", "gpt2", "--gpus", "1", "--serve", "--batch", "1"], capsys)
    assert "1 sequence of prompt" in out


def test_small_rates_keep_their_digits():
    from reports.text import rate

    assert [rate(x) for x in (0.0213, 1.0, 12.44, 3564.6, 0)] == ["0.0213", "1", "12.4", "3,565", "0"]


def test_per_layer_lines_stay_aligned(capsys):
    _, out, _ = run(["estimate", "--model", "deepseek-v3"], capsys)
    lines = [x for x in out.splitlines() if x.startswith("  per ")]
    # the kind names the row, inside the column (session 17's tenth round; was "per decoder.dense layer")
    assert lines == ["  per dense layer        583.48 M", "  per moe layer           11.51 B"]


def test_plan_at_dp_1_lists_one_zero_stage_and_no_schedule(capsys):
    data = run_json(["plan", "--model", "gpt2", "--gpus", "1", "--hardware", "h100-sxm"], capsys)
    keys = [json.dumps({k: v for k, v in e["layout"].items() if k != "zero"}, sort_keys=True)
            for e in data["feasible"] + data["infeasible"]]
    assert len(keys) == len(set(keys))  # no layout repeated with only its ZeRO stage changed
    _, out, _ = run(["plan", "--model", "gpt2", "--gpus", "1", "--hardware", "h100-sxm", "--top", "3"], capsys)
    assert "1f1b" not in out


def test_unmeasured_local_dtypes_say_so(tmp_path, monkeypatch, capsys):
    local = load_hardware("h100-sxm")
    data = {"name": "local", "description": "this machine", "flops_per_s": {"fp32": 1e11},
            "vector_flops_per_s": 1e10, "bandwidth_bytes_per_s": 1e10, "memory_bytes": 2**34,
            "default_dtype": "fp32"}
    folder = tmp_path / "transformer-costmodel"
    folder.mkdir()
    (folder / "local.json").write_text(json.dumps(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _, out, _ = run(["hardware"], capsys)
    row = next(x for x in out.splitlines() if x.startswith("local"))
    assert "not measured" in row and "0 FLOP/s" not in row
    assert local.name == "h100-sxm"


def test_plan_with_nothing_feasible_says_what_would_fit_and_exits_1(capsys):
    code, out, _ = run(["plan", "--model", "llama3-8b", "--gpus", "1", "--hardware", "h100-sxm"], capsys)
    assert code == 1
    assert "No layout fits." in out
    assert "needs 121.59 GiB per GPU; a GPU holds 78.72 GiB." in out  # 81,117 MiB reported less the 512 MiB reserve
    assert "On 2 GPUs it fits: tp 1 x pp 1 x dp 2, megatron, ZeRO 3, recompute full, micro-batch 1" in out
    data = json.loads(run(["plan", "--model", "llama3-8b", "--gpus", "1", "--hardware", "h100-sxm", "--json"],
                          capsys)[1])
    nearest = data["nearest"]
    assert nearest["gpus"] == 2 and nearest["per_rank"] <= nearest["memory_capacity"] < nearest["smallest_memory"]


# 8. Configs: model_type from architectures, transformers' defaults named, the user's field names.
def _config(tmp_path, preset: str, drop: tuple[str, ...] = (), **changes) -> str:
    from costmodel.presets import PRESET_DIR

    data = json.loads((PRESET_DIR / f"{preset}.json").read_text())
    for key in drop:
        data.pop(key)
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_model_type_is_read_from_architectures(tmp_path, capsys):
    path = _config(tmp_path, "llama3-8b", drop=("model_type",))
    data = run_json(["estimate", "--config", path], capsys)
    assert data["params"]["total"] == 8_030_261_248 and data["inputs"]["family"] == "llama"


def test_unknown_architectures_say_model_type_is_missing(tmp_path, capsys):
    path = _config(tmp_path, "llama3-8b", drop=("model_type",), architectures=["FooForCausalLM"])
    code, _, err = run(["estimate", "--config", path], capsys)
    assert code == 2 and "missing field 'model_type'" in err and "FooForCausalLM" in err


def test_a_missing_kv_heads_field_names_transformers_default(tmp_path, capsys):
    path = _config(tmp_path, "qwen2.5-7b", drop=("num_key_value_heads",), num_attention_heads=12,
                   hidden_size=1536)
    code, _, err = run(["estimate", "--config", path], capsys)
    assert code == 2
    assert ("num_attention_heads (12) is not divisible by num_key_value_heads (32, transformers' default "
            "for qwen2 when the field is missing)") in err


def test_errors_use_the_config_field_names(tmp_path, capsys):
    path = _config(tmp_path, "llama3-8b", hidden_size=4001)
    _, _, err = run(["estimate", "--config", path], capsys)
    assert "hidden_size (4001) is not divisible by num_attention_heads (32)" in err
    import re

    assert not re.search(r"\b(d_model|n_heads)\b", err)


# 9. Help text matches what options take.
@pytest.mark.parametrize("option, values", [
    ("--precision", ("mixed", "pure", "megatron", "fsdp2")),
    ("--impl", ("hf", "reference", "megatron")),
    ("--attention", ("eager", "sdpa", "flash")),
])
def test_help_lists_every_value_an_option_takes(option, values, capsys):
    run(["estimate", "--help"], capsys)  # warm click
    _, out, _ = run(["estimate", "--help"], capsys)
    text = " ".join(out.split())
    start = text.index(option)
    section = text[start:start + 600]
    assert all(value in section for value in values), section


def test_plot_help_lists_kv_cache(capsys):
    _, out, _ = run(["plot", "--help"], capsys)
    assert "kv-cache" in out.split("Commands:")[0]


# 10. No project-internal words; Korthikanti's figure labelled, not for MoE.
def test_estimate_labels_the_published_activation_formula(capsys):
    _, out, _ = run(["estimate", "--model", "llama2-7b"], capsys)
    assert "for comparison only, Korthikanti et al. 2022's formula" in out
    _, out, _ = run(["estimate", "--model", "mixtral-8x7b"], capsys)
    assert "Korthikanti" not in out


def test_user_facing_report_text_has_no_internal_words(capsys):
    from reports.claims import check_claims

    for claim in check_claims(measure=False):
        text = json.dumps(claim.to_dict())
        assert "seeds" not in text and "FINDINGS" not in text and "issue 1" not in text, text
    _, out, _ = run(["claims", "--help"], capsys)
    assert "seeds" not in out


def test_the_generation_legend_gives_the_growth_it_plots():
    import numpy as np

    from reports.figures import growth_exponent

    tokens = np.arange(1, 1001)
    assert growth_exponent(tokens, tokens.astype(float) ** 3) == pytest.approx(3.0)
    linear_then_square = 1e6 * tokens + tokens**2.0  # a per-token term that leads over this range
    assert growth_exponent(tokens, linear_then_square) == pytest.approx(1.0, abs=0.01)


# 11. Reports: no stale files, a summary at a setting users run.
def test_report_summary_uses_fused_attention():
    from reports.report import summary_rows

    cfg = load_preset("qwen2.5-7b")  # usual context 32k: eager's n x n probabilities would dominate
    headers, rows = summary_rows([cfg], 1, "bf16")
    row = dict(zip(headers, rows[0]))
    estimate = Estimate(cfg, Workload(seq_len=row["seq_len"], attention="sdpa"))
    assert row["training_total_bytes"] == estimate.memory_numbers()["training_total"]


def test_report_rerun_removes_stale_files(tmp_path):
    from reports import report as build

    (tmp_path / "figures").mkdir()
    (tmp_path / "tables").mkdir()
    (tmp_path / "figures" / "generation-old-model.png").write_bytes(b"x")
    (tmp_path / "tables" / "generation-old-model.csv").write_text("x")
    (tmp_path / "notes.txt").write_text("mine")
    empty = build.Report([], [], (["model"], []), [], [], [], "", 1, "bf16")
    build.write(empty, tmp_path)
    assert not (tmp_path / "figures" / "generation-old-model.png").exists()
    assert not (tmp_path / "tables" / "generation-old-model.csv").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"  # only the kinds the report writes


# 12. validate: transformers no longer warns about GPT-2's loss.
@pytest.mark.slow
def test_gpt2_names_its_loss():
    pytest.importorskip("transformers")
    from validate.hf_models import build_hf_model

    from reports.measured import tiny

    model = build_hf_model(tiny(load_preset("gpt2")))
    assert model.loss_type == "ForCausalLM"


def test_serving_plan_with_nothing_feasible_says_what_would_fit(capsys):
    code, out, _ = run(["plan", "--model", "llama3-70b", "--gpus", "1", "--serve", "--hardware", "h100-sxm", "--gen", "256"],
                       capsys)
    assert code == 1
    # The serving rank's memory: the last decode step peaks, 131.42 GiB of weights and the KV cache
    # of 2048 + 255 tokens, 32 x 2303 x 80 layers x 2 x 8 heads x 128 x 2 B = 22.49 GiB. generate's
    # prefill keeps the last position's logits only (32 x 128256 x 2 B = 7.83 MiB); before, all
    # 2048 positions' (15.66 GiB) made the prefill peak at 167.07 GiB.
    # Since session 26 the prefill's largest no-grad transient counts too: one vLLM chunk of 8,192
    # tokens (the engine prefills in chunks; serving/budgets.py) holds the FFN's 3 x 8,192 x 28,672 x
    # 2 B = 1.31 GiB, below the 255 tokens' cache the last step adds (2.49 GiB): the last step peaks.
    assert "The leanest layout (tp 1 x pp 1 x dp 1) needs 153.91 GiB per GPU" in out
    # Serving uses 70.79 GiB of an H100 (90% less the reserve): half of 153.91 GiB does not fit.
    assert "On 4 GPUs it fits: tp 4 x pp 1 x dp 1" in out


def test_plan_gpus_must_be_whole_numbers(capsys):
    code, _, err = run(["plan", "--model", "gpt2", "--gpus", "8,x"], capsys)
    assert code == 2 and "--gpus '8,x'" in err
