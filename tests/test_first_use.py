"""What a new user tripped on: answers that looked wrong and omissions nobody was told about.

Each test runs the command a user ran and checks the line they should have read.
"""

from __future__ import annotations

import json

import pytest

import cli
from validate import calibrate


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_local(tmp_path, monkeypatch, flops: dict[str, float], default_dtype: str) -> None:
    """A `local` calibration as `hardware --measure` writes it (the numbers of this CPU)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "transformer-costmodel" / "local.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "name": "local", "description": "test", "flops_per_s": flops, "default_dtype": default_dtype,
        "vector_flops_per_s": 4e9, "bandwidth_bytes_per_s": 2e10, "memory_bytes": 24 * 2**30,
        "efficiency": {"compute": 1.0, "memory": 1.0}, "overhead_s_per_block": 4e-5,
    }))


def test_local_simulates_in_the_dtype_it_was_calibrated_in(tmp_path, monkeypatch, capsys):
    # fp32 at 80 GFLOP/s and 20 GB/s: the ridge is 4 FLOP/B, not "0".
    write_local(tmp_path, monkeypatch, {"fp32": 8e10}, "fp32")
    code, out, err = run(["simulate", "--model", "gpt2", "--hardware", "local", "--prompt", "64",
                          "--gen", "4"], capsys)
    assert code == 0
    assert "gpt2 on local (fp32," in out and "ridge 4 FLOP/B" in out
    assert "the dtype `local` was calibrated in" in err and "the dtype `local` was calibrated in" in out
    code, _, err = run(["simulate", "--model", "gpt2", "--hardware", "local", "--dtype", "bf16",
                        "--prompt", "64"], capsys)
    assert code == 2 and "hardware --measure --dtype bf16" in err and len(err.strip().splitlines()) == 1


def test_a_crossover_below_one_reads_compute_bound_at_any_batch(tmp_path, monkeypatch, capsys):
    # bf16 matmuls at 3.2 GFLOP/s against 20 GB/s: the weights-only crossover batch is
    # 3.2e9 / 2e10 x 2 bytes / 2 FLOPs = 0.16.
    write_local(tmp_path, monkeypatch, {"bf16": 3.2e9}, "bf16")
    code, out, _ = run(["simulate", "--model", "gpt2", "--hardware", "local", "--prompt", "64",
                        "--gen", "4"], capsys)
    assert code == 0 and "decode is compute-bound at any batch (crossover 0.16 < 1)" in out
    assert "at batch 0 " not in out


@pytest.mark.slow
def test_hardware_measure_measures_the_dtype_asked_for(monkeypatch):
    monkeypatch.setitem(calibrate.CHAIN_RUNS, "bf16", (2, 1))
    monkeypatch.setattr(calibrate, "overhead_s_per_block", lambda: 5e-5)
    monkeypatch.setattr(calibrate, "vector_flops_per_s", lambda: 1e9)
    data = calibrate.measure_local(memory_bytes=2**30, dtypes=("bf16", "fp32"))
    assert set(data["flops_per_s"]) == {"bf16", "fp32"} and data["default_dtype"] == "bf16"
    assert all(value > 0 for value in data["flops_per_s"].values())
    # fp32 measured: its GEMM efficiency by rows and the dispatch per op, so the kernel model runs
    from costmodel.hardware import Hardware, time_model_for

    table = data["gemm_efficiency_by_rows"]["fp32"]
    assert list(table) == ["1", "2", "4", "8", "16", "32", "64", "128", "256"]
    assert set(data["_gemm_rows_flops_per_s"]["fp32"]) == set(table) and 0 < data["dispatch_s_per_op"] < 1e-3
    assert 0 < data["module_s_per_op"] < 1e-3 and "module code per op" in data["source"]
    hw = Hardware.from_dict(data, "local")
    assert time_model_for(hw) == "kernels" and hw.gemm_efficiency_by_rows["fp32"][0][0] == 1
    # and the attention efficiency by queries: one per measured shape's queries, each a fraction
    # of the chain's rate measured with them, the raw rates beside
    attention = data["attention_efficiency_by_queries"]["fp32"]
    assert list(attention) == [str(q) for q, _ in calibrate.ATTENTION_SHAPES] == ["1", "16", "64", "256", "512"]
    assert all(0 < e <= 1 for e in attention.values())
    raw = data["_attention_flops_per_s"]["fp32"]
    assert set(raw) == set(attention) | {"chain"} and all(r > 0 for r in raw.values())
    assert attention == calibrate.attention_efficiency_by_queries({int(q): raw[q] for q in attention}, raw["chain"])
    assert hw.attention_efficiency_by_queries["fp32"][0] == (1, attention["1"])
    # and the paged cache's copies cold (validate/cold_copies.py): each op fitted, its medians beside
    assert set(data["cold_copies"]) <= {"index_select", "clone"} and "cold_copies by validate" in data["source"]
    assert set(data["_cold_copy_seconds"]) == {"index_select", "clone"}
    assert hw.cold_copies.keys() == data["cold_copies"].keys()


def test_the_efficiency_by_rows_is_the_rates_over_the_best_never_falling_with_rows():
    """A product of m rows can run as products of fewer (m' dividing m on the grid): a lower
    reading at more rows is the machine's noise, so the table keeps the best so far."""
    rates = {1: 5e9, 2: 4e9, 4: 2e10, 8: 1.5e10, 16: 1e11, 32: 8e10}
    assert calibrate.efficiency_by_rows(rates) == {"1": 0.05, "2": 0.05, "4": 0.2, "8": 0.2, "16": 1.0, "32": 1.0}


def test_the_attention_efficiency_is_the_rates_over_the_chain_at_most_one():
    """By queries, as fractions of the linear chain's rate timed with them; a reading above it is
    the shared machine's noise (the field is a fraction of the peak)."""
    rates = {512: 6e10, 1: 1e10, 16: 5e10, 64: 1.3e11}
    assert calibrate.attention_efficiency_by_queries(rates, 1e11) == {"1": 0.1, "16": 0.5, "64": 1.0, "512": 0.6}


def test_inference_that_does_not_fit_says_so(capsys):
    args = ["simulate", "--model", "llama2-70b", "--hardware", "h200", "--batch", "16", "--prompt",
            "4096", "--gen", "512"]
    code, out, _ = run(args, capsys)
    # Serving plans with 90% of the 141 GiB (vLLM's default) less the 512 MiB reserve: 126.4 GiB,
    # less than the weights alone (with the whole GPU the answer was batch <= 8), and the fit line
    # says so rather than "batch <= 0".
    assert code == 0 and "at batch 16 (does NOT fit in 126.40 GiB usable)" in out
    assert "the weights alone (128.48 GiB) exceed 126.40 GiB" in out and "batch <= 0" not in out
    code, out, _ = run(args + ["--json"], capsys)
    memory = json.loads(out)["memory"]
    # 16 x 4608 tokens x 80 layers x 2 x 8 KV heads x 128 x 2 bytes of cache alone: 22.5 GiB, plus
    # 137.95 GiB of weights.
    assert memory["fits"] is False and memory["bytes"] > 141 * 2**30 and memory["max_batch"] == 0


def test_generated_tokens_extend_the_decoder(capsys):
    code, _, err = run(["estimate", "--model", "t5-small", "--seq-len", "500", "--tgt-len", "10",
                        "-T", "20"], capsys)
    assert code == 0 and "warning" not in err  # 500 source tokens, 29 target positions (the last is not fed back): both fit
    code, _, err = run(["estimate", "--model", "t5-small", "--seq-len", "64", "--tgt-len", "500",
                        "-T", "20"], capsys)
    assert code == 0 and "target length 519 is beyond the context" in err
    code, _, err = run(["estimate", "--model", "bert-base-uncased", "-T", "10"], capsys)
    assert code == 0 and "is an encoder: it does not generate tokens" in err
    assert "learned positions" not in err


def test_korthikanti_is_printed_in_the_variant_that_applies(capsys):
    # Llama-2-7B, b = 1, n = 2048: sbh = 2048 x 4096 per layer, 32 layers.
    sbh, layers = 2048 * 4096, 32
    for options, per_layer, words in (
        ([], 34 * sbh + 5 * 32 * 2048**2, "sbh(34 + 5as/h) in 2 bytes"),
        (["--recompute", "selective"], 34 * sbh, "selective recomputation"),
        (["--recompute", "full"], 2 * sbh, "full recomputation"),
        (["--dtype", "fp32"], (16 * 4 + 2) * sbh + (2 * 4 + 1) * 32 * 2048**2, "(16e + 2)"),
    ):
        code, out, _ = run(["estimate", "--model", "llama2-7b", "--json", *options], capsys)
        memory = json.loads(out)["memory"]
        assert memory["korthikanti_2022_activations"] == layers * per_layer
        assert words in memory["korthikanti_2022_variant"]
    code, out, _ = run(["estimate", "--model", "llama2-7b", "--recompute", "full"], capsys)
    assert "Korthikanti et al. 2022's formula for GPT layers: 512.00 MiB (full recomputation" in out  # issue 20: labelled a comparison


def test_a_sliding_window_shorter_than_the_sequence_is_announced(capsys):
    code, out, err = run(["estimate", "--model", "mistral-7b", "--seq-len", "16384"], capsys)
    assert code == 0
    assert "sliding window of 4,096 tokens: eager attention still computes every score" in err
    assert "the whole prompt after the prefill and 4,096 tokens once decoding begins" in err
    # -T 2 feeds one token back: the first decode step leaves the window's 4,096 tokens (-T 1 runs no
    # decode step, and the cache keeps the whole prompt, as transformers' generate leaves it)
    code, out, err = run(["estimate", "--model", "mistral-7b", "--seq-len", "16384", "-T", "2"], capsys)
    assert "KV cache             512.00 MiB" in out  # 32 layers x 2 x 8 heads x 128 x 4,096 x 2 bytes
    code, out, err = run(["estimate", "--model", "mistral-7b", "--seq-len", "16384", "-T", "1"], capsys)
    assert "KV cache               2.00 GiB" in out  # the 16,384 prompt tokens
    code, _, err = run(["estimate", "--model", "mistral-7b", "--seq-len", "16384", "--impl", "reference"],
                       capsys)
    assert "the reference implementation has no window" in err
    code, _, err = run(["estimate", "--model", "mistral-7b", "--seq-len", "4096"], capsys)
    assert "sliding window" not in err


def test_the_default_prompt_leaves_room_for_the_generated_tokens(capsys):
    # `simulate --model gpt2` with no options failed: 2048 capped at the 1024 learned positions,
    # plus the 128 generated tokens, is past the table. The default prompt is what the context
    # leaves once the 127 tokens fed back are added (the last is never fed back, session 22):
    # 1024 - 127 = 897 for GPT-2, 2048 - 127 = 1921 for `plan --serve` on OPT-1.3B (the same
    # 128 generated tokens since the twelfth round; 256 before).
    code, out, err = run(["simulate", "--model", "gpt2", "--json"], capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["inputs"]["prompt"] == 897 and data["inputs"]["gen"] == 128
    code, out, err = run(["plan", "--model", "opt-1.3b", "--gpus", "2", "--serve", "--json"], capsys)
    assert code == 0 and err == ""
    assert json.loads(out)["inputs"]["seq_len"] == 1921
    code, out, err = run(["simulate", "--model", "gpt2", "--gen", "2000"], capsys)
    assert code == 2 and "3023 exceeds the 1024 learned positions" in err


def test_gpus_alone_is_data_parallel_over_them(capsys):
    """`simulate --train --gpus 8` was refused ("tp x pp x dp = 1, not the 8 GPUs asked for"): dp is
    now GPUs / (tp x pp x cp), as Megatron-LM derives it; a count that does not divide is one line."""
    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "2048", "--json"]
    code, out, err = run([*base, "--gpus", "8", "--tp", "2"], capsys)
    assert code == 0, err
    derived = json.loads(out)
    code, out, _ = run([*base, "--gpus", "8", "--tp", "2", "--dp", "4"], capsys)
    layout = derived["parallel"]["layout"]
    assert json.loads(out) == derived and (layout["dp"], layout["tp"], layout["gpus"]) == (4, 2, 8)
    code, _, err = run([*base, "--gpus", "8", "--pp", "3"], capsys)
    assert code == 2 and err.strip() == ("error: --gpus 8 is not a multiple of tp x pp x cp = 3: give --dp too, "
                                         "or GPUs that divide.")
    code, _, err = run([*base, "--gpus", "0"], capsys)
    # refused by the option itself since session 19 (estimate --hardware --gpus alone skipped this check)
    assert code == 2 and err.strip() == "error: Invalid value for '--gpus': 0 is not in the range x>=1."
    code, _, err = run([*base, "--gpus", "8", "--tp", "2", "--dp", "2"], capsys)
    assert code == 2 and "not the 8 GPUs asked for" in err  # given both, --gpus still checks
