"""The roofline simulator: the decode crossover batch, what fits in memory, training time."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import Workload
from costmodel.presets import load_preset
from costmodel.simulate import Efficiency, Roofline, load_hardware, simulate_inference, simulate_training


def test_decode_crossover_batch_on_a100_is_153():
    # Roofline: 312 TFLOP/s / 2.039 TB/s, 2 FLOPs and 2 bytes per parameter per token -> 153.
    roof = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16", Efficiency(1.0, 1.0))
    crossover = roof.decode_crossover_batch()
    assert 152.5 < crossover < 153.5
    # In fp32 the weights cost 4 bytes and the peak is 19.5 TFLOP/s: 19.5e12/2.039e12 * 4/2 = 19.1.
    fp32 = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "fp32", Efficiency(1.0, 1.0))
    assert 18.9 < fp32.decode_crossover_batch() < 19.3


def test_mha_decode_with_a_long_context_never_turns_compute_bound():
    # Llama-2-7B (h_kv = h): per sequence the KV cache read at 2048 tokens (1 GiB) outweighs the
    # FLOPs it adds, so no batch makes the step compute-bound on an A100.
    roof = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16", Efficiency(1.0, 1.0))
    assert roof.decode_crossover_batch(2048) == float("inf")


def test_what_fits_in_memory():
    roof = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16")
    fits = roof.fits(batch=8, context=4096)
    weights = 6_738_415_616 * 2
    per_token = 32 * 2 * 4096 * 2  # layers * (K, V) * d * bf16 bytes = 524,288
    assert fits["weights"] == weights and fits["kv_bytes_per_token"] == per_token
    assert fits["max_batch"] == (80 * 2**30 - weights) // (per_token * 4096)
    assert fits["max_context"] == (80 * 2**30 - weights) // 8 // per_token


def test_prefill_is_compute_bound_and_decode_memory_bound():
    result = simulate_inference(load_preset("llama2-7b"), load_hardware("h100-sxm"),
                                prompt=2048, gen=16, batch=1)
    assert result["prefill"]["bound"] == "compute"
    assert result["decode"]["first_token"]["bound"] == "memory"
    # With a cache each step is far cheaper than rerunning the prefix.
    row = result["generation_table"][-1]
    assert row["with_cache_seconds"] * 5 < row["without_cache_seconds"]
    # A decode step reads every weight once: at least weights / bandwidth.
    assert result["decode"]["first_token"]["seconds"] >= 6_738_415_616 * 2 / (3.35e12 * 0.8)


def test_training_time_and_mfu():
    hardware = load_hardware("a100-80gb")
    workload = Workload(seq_len=4096, batch=1, attention="sdpa")
    result = simulate_training(load_preset("llama2-70b"), workload, hardware, tokens=2e12,
                               step_seconds=20.0, efficiency=Efficiency(0.5, 0.8))
    # The matrix products at 0.5 x 312 TFLOP/s: 6 x 68,976,648,192 params x 4096 tokens plus the
    # attention core, 3 x 4 x n^2 x d per layer (80 layers, d = 8192); then AdamW's memory-bound
    # step, reading 16 bytes per parameter (bf16 weights and gradients, fp32 master weights and
    # two moments) and writing 14 (weights and states), at 0.8 x 2.039 TB/s. Norms, activations
    # and residual adds add the last ~3%.
    params = 68_976_648_192
    matmul_s = (6 * params * 4096 + 12 * 80 * 8192 * 4096**2) / (0.5 * 312e12)
    optimizer_s = 30 * params / (0.8 * 2.039e12)
    assert result["step"]["bound"] == "compute"
    assert result["step"]["seconds"] == pytest.approx(matmul_s + optimizer_s, rel=0.04)
    assert result["step"]["seconds"] > matmul_s + optimizer_s
    assert result["mfu_predicted"] == pytest.approx(0.5 * matmul_s / result["step"]["seconds"], rel=0.03)
    assert result["train_seconds"] == pytest.approx(2e12 / result["tokens_per_second"])
    assert not result["fits"]  # 70B with AdamW needs > 1 TB
    assert result["mfu_measured"] < result["mfu_predicted"]


def test_simulate_cli(capsys):
    code = cli.main(["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb",
                     "--compute-efficiency", "1", "--memory-efficiency", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and 152.5 < data["decode"]["crossover_batch_weights_only"] < 153.5
    assert data["decode"]["crossover_batch_at_context"] is None  # never: null, not Infinity
    for args in (["simulate", "--model", "gpt2", "--hardware", "tpu"],
                 ["simulate", "--model", "gpt2", "--compute-efficiency", "1.5"],
                 ["simulate", "--model", "gpt2", "--gen", "-1"],
                 ["simulate", "--model", "bert-base-uncased"],
                 ["simulate", "--model", "gpt2", "--train", "--tokens", "-5"]):
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
