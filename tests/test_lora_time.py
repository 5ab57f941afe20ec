"""A LoRA/QLoRA step's time from the kernels it runs (costmodel/lora_time.py): the FLOPs of a
peft-style LoRA Linear against torch's FlopCounterMode, nf4 dequantization's bytes from
bitsandbytes' layout, and the step's GEMM FLOPs and dequantized bytes for Llama 3 8B by hand."""

from __future__ import annotations

import dataclasses
import json

import pytest

import cli
from costmodel.config import Workload
from costmodel.lora_adapters import FineTune
from costmodel.hardware import load_hardware
from costmodel.lora_time import dequant_bytes, lora_linear_flops, lora_step
from costmodel.presets import load_preset


@pytest.mark.parametrize("input_grad", [True, False])
def test_lora_linear_flops_match_flop_counter(input_grad):
    """peft's LoRA Linear written with torch: a frozen base Linear plus A (r x d_in) and B (d_out x r)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    tokens, d_in, d_out, r = 24, 40, 56, 4
    base = torch.nn.Linear(d_in, d_out, bias=False).requires_grad_(False)
    a = torch.nn.Linear(d_in, r, bias=False)
    b = torch.nn.Linear(r, d_out, bias=False)
    x = torch.randn(tokens, d_in, requires_grad=input_grad)
    with FlopCounterMode(display=False) as forward:
        y = base(x) + 2.0 * b(a(x))
    with FlopCounterMode(display=False) as backward:
        y.sum().backward()
    ours = lora_linear_flops(tokens, d_in, d_out, r, input_grad=input_grad)
    assert ours["forward"] == forward.get_total_flops() == 2 * 24 * 40 * 56 + 2 * 24 * 40 * 4 + 2 * 24 * 4 * 56
    assert ours["backward"] == backward.get_total_flops()
    # dB, dh, dA = 10,752 + 10,752 + 7,680; with x's gradient dx through A 7,680 and the base's 107,520
    assert ours["backward"] == (144384 if input_grad else 29184)


def test_nf4_dequant_bytes():
    """dequantize_4bit of a 4,096 x 4,096 nf4 matrix with double quantization: 8,388,608 bytes of
    4-bit data, 262,144 uint8 absmax (one per 64) + 4,096 bytes of fp32 absmax2 (one per 256 blocks),
    the tree's 1,092 bytes of code tables, read; 33,554,432 bf16 bytes written."""
    nf4 = dataclasses.replace(Workload(dtype="bf16"), weight_dtype="nf4", double_quant=True)
    assert dequant_bytes(4096, 4096, nf4) == 8388608 + 266240 + 1092 + 33554432 == 42210372


# Llama 3 8B's linear weights: 32 layers x (q, o 4,096^2; k, v 4,096 x 1,024; gate, up, down
# 4,096 x 14,336) = 6,979,321,856, and the LM head 128,256 x 4,096 = 525,336,576.
LINEAR, HEAD, TOKENS = 6979321856, 525336576, 2048


def _step(method: str, recompute: str = "none"):
    cfg = load_preset("llama3-8b")
    workload = Workload(seq_len=TOKENS, batch=1, dtype="bf16", attention="sdpa", recompute=recompute)
    return lora_step(cfg, workload, FineTune(method=method), load_hardware("h100"))


def test_step_gemm_flops_skip_frozen_weight_gradients():
    """The frozen base runs its forward and dX GEMMs (2 x 2 T W), no dW; the adapters (peft's
    default q_proj, v_proj at r 16) forward and backward, weight gradients included (3 x forward)."""
    step = _step("lora")
    assert step["gemm_flops"]["base"] == 2 * 2 * TOKENS * (LINEAR + HEAD) == 61478161874944
    per_layer = sum(lora_linear_flops(TOKENS, 4096, out, 16)["forward"] - 2 * TOKENS * 4096 * out for out in (4096, 1024))
    assert step["gemm_flops"]["adapters"] == 32 * 3 * per_layer == 83751862272
    assert step["adapter_params"] == 32 * 16 * (4096 + 4096 + 4096 + 1024) == 6815744
    assert step["dequant_bytes"] == 0 and step["parts"]["dequant"] == 0
    assert step["seconds"] == pytest.approx(sum(step["parts"].values()))


def test_qlora_dequantizes_each_matrix_before_each_use():
    """Forward and dX: two dequantizations of each decoder matrix; full recomputation a third."""
    nf4 = dataclasses.replace(Workload(dtype="bf16"), weight_dtype="nf4", double_quant=True)
    per_layer = sum(dequant_bytes(d_in, d_out, nf4) for d_in, d_out in
                    ((4096, 4096), (4096, 1024), (4096, 1024), (4096, 4096),
                     (4096, 14336), (4096, 14336), (14336, 4096)))
    assert _step("qlora")["dequant_bytes"] == 2 * 32 * per_layer
    full = _step("qlora", "full")
    assert full["dequant_bytes"] == 3 * 32 * per_layer
    # the decoder layers rerun their forward once more; the LM head is not checkpointed
    assert full["gemm_flops"]["base"] == 2 * TOKENS * (3 * LINEAR + 2 * HEAD) == 90065464197120
    assert full["parts"]["dequant"] > 0 and full["parts"]["rerun"] > 0


def test_finetune_prints_time_and_price(capsys):
    args = ["finetune", "--model", "llama3-8b", "--hardware", "h100", "-n", "2048", "--tokens", "10M",
            "--price", "2", "--json"]
    assert cli.main(args) == 0
    t = json.loads(capsys.readouterr().out)["time"]
    assert t["tokens_per_step"] == 2048 and t["steps"] == 4883  # ceil(10,000,000 / 2,048)
    assert t["seconds"] == pytest.approx(4883 * t["step_seconds"])
    assert t["dollars"] == pytest.approx(t["seconds"] / 3600 * 2)
    assert "no weight-gradient GEMM for a frozen weight" in t["counted"]


def test_finetune_tokens_need_hardware(capsys):
    assert cli.main(["finetune", "--model", "llama3-8b", "--tokens", "10M"]) == 2
    assert "--tokens: needs --hardware" in capsys.readouterr().err


def test_moe_step_is_not_timed_but_keeps_its_memory(capsys):
    """Mixtral's router and grouped experts are kernels the LoRA timing does not build: the memory
    answer stands with the reason, and asking for a run's time is one error line."""
    assert cli.main(["finetune", "--model", "mixtral-8x7b", "--method", "qlora", "--hardware", "h200", "-n", "1024",
                     "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fit"]["fits"] and "decoder.layer.ffn.router" in data["time"]["not_timed"]
    assert cli.main(["finetune", "--model", "mixtral-8x7b", "--method", "qlora", "--hardware", "h200", "-n", "1024",
                     "--tokens", "1M"]) == 2
    assert capsys.readouterr().err.startswith("error: --tokens: LoRA step time: decoder.layer.ffn.router")


def test_same_kernel_model_as_full_training(capsys):
    """The frozen base's kernels are full training's: with the skipped weight-gradient GEMMs added
    back, the base's forward, backward, reruns and launches are `simulate --train --time-model
    kernels`'s compute for the same step (Llama 3 8B, 4 x 2,048, sdpa, full recomputation, H100)."""
    cfg = load_preset("llama3-8b")
    workload = Workload(seq_len=2048, batch=4, dtype="bf16", attention="sdpa", recompute="full")
    step = lora_step(cfg, workload, FineTune(), load_hardware("h100"))
    p = step["parts"]
    assert cli.main(["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100", "-n", "2048", "-b", "4",
                     "--recompute", "full", "--time-model", "kernels", "--attention", "sdpa", "--dp", "1",
                     "--json"]) == 0
    full = json.loads(capsys.readouterr().out)["step"]["compute_seconds"]
    ours = p["base_forward"] + p["base_backward"] + p["rerun"] + p["launches"] + step["skipped_weight_gradient_seconds"]
    assert ours == pytest.approx(full, rel=1e-9)


def test_price_and_tokens_bad_input_is_one_line(capsys):
    base = ["finetune", "--model", "llama3-8b", "--hardware", "h100"]
    for extra, start in ((["--price", "2"], "error: --price costs a run of --tokens tokens"),
                         (["--tokens", "1M", "--price", "-2"], "error: --price must be a positive number"),
                         (["--tokens", "0"], "error: --tokens must be positive")):
        assert cli.main(base + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith(start) and len(err.strip().splitlines()) == 1
