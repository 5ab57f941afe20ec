"""formula == measurement for every quantity, through validate.compare and `cli.py validate`.

Hugging Face's classes (a dozen odd configs, eager bf16 and sdpa fp32, dropout on and off) and the
reference model (every architecture and position encoding, fp32 and bf16, b = 1 included) are
measured and compared row by row; every row is exact. Full-size Llama-2-7B runs under
FakeTensorMode as `python cli.py validate --model llama2-7b` does.
"""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import Workload
from costmodel.presets import load_preset
from tests.odd_configs import odd_configs
from validate.compare import Row, validate


def workload(cfg, **kwargs) -> Workload:
    tgt = kwargs.pop("tgt_len", 7)
    return Workload(tgt_len=tgt if cfg.architecture == "encoder-decoder" else None, **kwargs)


def assert_exact(rows: list[Row]) -> None:
    bad = [row for row in rows if row.difference != 0]
    assert not bad, bad
    quantities = {row.quantity for row in rows}
    assert {"parameters", "forward matmul FLOPs", "backward matmul FLOPs",
            "bytes saved for backward"} <= quantities


@pytest.mark.slow  # 2-9 s a case (20 s full size) on 2 cores
@pytest.mark.parametrize("attention, dtype", [("eager", "bf16"), ("sdpa", "fp32")])
@pytest.mark.parametrize("cfg", odd_configs(), ids=lambda c: c.name)
def test_hugging_face_activation_bytes_are_exact(cfg, attention, dtype):
    # Two (n, b) with b > 1, dropout as the config has it (on for the *-dropout configs).
    for batch, seq_len in ((2, 10), (3, 13)):
        rows = validate(cfg, workload(cfg, seq_len=seq_len, batch=batch, dtype=dtype,
                                      attention=attention, gen_tokens=2), target="hf")
        assert_exact(rows)


@pytest.mark.slow  # 2-9 s a case (20 s full size) on 2 cores
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("cfg", odd_configs(), ids=lambda c: c.name)
def test_reference_model_is_exact_on_the_odd_configs(cfg, dtype):
    # The same dozen odd configs, on the reference model (FakeTensorMode), two (n, b) with b > 1.
    for batch, seq_len in ((2, 10), (3, 13)):
        rows = validate(cfg, workload(cfg, seq_len=seq_len, batch=batch, dtype=dtype, gen_tokens=2),
                        target="reference")
        assert_exact(rows)


REFERENCE_CONFIGS = {
    "seed-toy": load_preset("seed-toy"),
    "vaswani-dropout": load_preset("transformer-base").replace(
        name="vaswani", vocab_size=99, d_model=48, n_heads=6, d_ff=37, n_encoder_layers=1,
        n_decoder_layers=2),
    "llama-mqa": load_preset("llama2-7b").replace(
        name="llama-mqa", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=1, d_head=10, d_ff=37,
        n_decoder_layers=2, activation="geglu", max_positions=64),
    "gpt2-alibi-relu": load_preset("gpt2").replace(
        name="alibi", vocab_size=99, d_model=48, n_heads=6, d_ff=37, n_decoder_layers=2,
        position="alibi", activation="relu"),
    # Nemotron-4's layer (its partial rotation aside): LayerNorm, no linear biases, GQA, squared ReLU
    "nemotron-relu2": load_preset("llama2-7b").replace(
        name="nemotron", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_ff=37, n_decoder_layers=2,
        norm="layernorm", activation="relu2", max_positions=64),
    "bert": load_preset("bert-base-uncased").replace(
        name="bert", vocab_size=99, d_model=48, n_heads=6, d_ff=37, n_encoder_layers=2),
    "t5-gated": load_preset("t5-small").replace(
        name="t5", vocab_size=99, d_model=48, n_heads=6, d_head=7, d_ff=37, n_encoder_layers=2,
        n_decoder_layers=1, activation="geglu"),
}


@pytest.mark.slow  # 2-9 s a case (20 s full size) on 2 cores
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("name", sorted(REFERENCE_CONFIGS))
def test_reference_model_is_exact_on_real_tensors(name, dtype):
    cfg = REFERENCE_CONFIGS[name]
    for batch, seq_len in ((1, 7), (3, 5)):
        rows = validate(cfg, workload(cfg, seq_len=seq_len, batch=batch, dtype=dtype, gen_tokens=3),
                        target="reference", device="cpu", blocks=True)
        assert_exact(rows)
        # The profiler's independent count of the training matmuls agrees too.
        assert any(row.quantity.endswith("(profiler)") for row in rows)


@pytest.mark.slow  # 2-9 s a case (20 s full size) on 2 cores
def test_validate_llama2_7b_full_size(capsys):
    code = cli.main(["validate", "--model", "llama2-7b", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = {row["quantity"]: row for row in data[0]["rows"]}
    # docs/design.md's figures, measured on LlamaForCausalLM under FakeTensorMode (b=1, n=2048, bf16).
    assert rows["parameters"]["measured"] == 6_738_415_616
    assert rows["forward matmul FLOPs"]["measured"] == 29_261_612_187_648
    assert rows["bytes saved for backward"]["measured"] == 38_314_483_724
    # KV cache after a generation of 2 tokens (the default -T 2): the last generated token is never
    # fed back, so 2048 + 1 positions: 32 layers * 2 * 4096 * 2049 * 2 bytes.
    assert rows["KV-cache bytes"]["measured"] == 32 * 2 * 4096 * 2049 * 2
    assert all(row["ok"] and row["difference"] == 0 for row in rows.values())


def test_a_mismatch_exits_1(monkeypatch, capsys):
    import validate.compare as compare

    monkeypatch.setattr(compare, "validate", lambda *a, **k: [Row("parameters", 10, 11)])
    assert cli.main(["validate", "--model", "gpt2", "--seq-len", "8"]) == 1
    captured = capsys.readouterr()
    assert "MISMATCH" in captured.out and captured.err.startswith("error: ")


@pytest.mark.parametrize("args", [
    ["validate", "--model", "gpt2", "--device", "gpu"],
    ["validate", "--model", "gpt2", "--target", "vllm"],
    ["validate", "--model", "seed-toy", "--target", "hf"],
    ["validate", "--all", "--model", "gpt2"],
    ["train-demo", "--steps", "0"],
    ["train-demo", "--out", "loss.jpg"],
])
def test_validate_and_train_demo_reject_bad_input(args, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")


@pytest.mark.parametrize("name", [
    "seed-toy", "transformer-base", "transformer-big", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
    "bert-base-uncased", "t5-small", "t5-base", "llama2-7b", "llama2-13b", "llama2-70b", "mistral-7b",
])
def test_reference_parameters_equal_the_formula_for_every_preset(name):
    import torch

    from costmodel.estimation import Estimate
    from validate.reference import build_reference

    cfg = load_preset(name)
    with torch.device("meta"):  # the 70B model costs no memory
        model = build_reference(cfg)
    measured = sum(p.numel() for p in model.parameters())
    assert measured == Estimate(cfg, Workload(seq_len=8)).total("params")
