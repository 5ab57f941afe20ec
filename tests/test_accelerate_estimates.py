"""Hugging Face accelerate's estimate-memory figures (validate/accelerate_estimates.json: its docs'
bert-base-cased table and the model-sizer-bot's posts on model repos) beside ours, the costmodel
API's parameter bytes on the same model. accelerate's printing is restated from its source
(accelerate/commands/estimate.py convert_bytes: divide by 1024 until under 1024, round to two
decimals): where it prints what ours computes, the test says so to the printed digit; where it
does not, the difference is asserted and said (validate/FINDINGS.md, "accelerate's estimate-memory
beside ours"). Its mixed-precision Adam peak is checked against a real PyTorch step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from costmodel.api import estimate, load_model

RECORD = json.loads((Path(__file__).resolve().parents[1] / "validate" / "accelerate_estimates.json").read_text())
ROWS = {row["id"]: row for row in RECORD["rows"]}
MIB, GIB = 2**20, 2**30


def convert_bytes(size: float) -> str:
    """accelerate's convert_bytes (commands/estimate.py), restated."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if size < 1024.0:
            return f"{round(size, 2)} {unit}"
        size /= 1024.0
    return f"{round(size, 2)} PB"


def ours(row_id: str):
    row = ROWS[row_id]
    cfg = load_model(row["model"])
    if "vocab_size" in row:
        cfg = cfg.replace(vocab_size=row["vocab_size"])
    est = estimate(cfg, seq_len=512, dtype="fp32")
    return row["printed"], est.params(), est.memory_numbers(), est.largest_module_params()


def test_bert_base_cased_docs_table_is_ours_but_for_a_typo_in_its_fp32_total():
    printed, params, memory, largest = ours("bert-base-cased accelerate docs")
    assert params["total"] == 108_310_272  # BertModel with pooler, vocabulary 28,996
    # accelerate counts buffers too: position_ids and token_type_ids, 512 int64 each, ours' buffers
    assert memory["buffers"] == 2 * 512 * 8
    total = memory["weights"] + memory["buffers"]  # fp32
    assert convert_bytes(total) == "413.18 MB"
    # its other three rows and its training column are this 413.18 MB; the fp32 cell says 418.18
    assert printed["float16"]["total_size"] == convert_bytes(total / 2)
    assert printed["int8"]["total_size"] == convert_bytes(total / 4)
    assert printed["int4"]["total_size"] == convert_bytes(total / 8)
    assert printed["int8"]["training_adam"] == convert_bytes(total)  # 4 x the int8 total
    assert printed["float32"]["training_adam"] == convert_bytes(4 * total) == "1.61 GB"
    assert printed["float32"]["total_size"] == "418.18 MB" != convert_bytes(total)
    # the largest layer: the word embeddings, 28,996 x 768
    assert largest == 28_996 * 768
    assert [printed[d]["largest_layer"] for d in ("float32", "float16", "int8", "int4")] == [
        convert_bytes(largest * b) for b in (4, 2, 1, 0.5)]


def test_bloom_totals_and_largest_layer_are_ours_to_the_printed_digit():
    printed, params, memory, largest = ours("bloom model-sizer-bot")
    assert memory["buffers"] == 0 and params["total"] == 176_247_271_424
    weights = memory["weights"]
    assert [printed[d]["total_size"] for d in ("float32", "float16/bfloat16", "int8", "int4")] == [
        convert_bytes(weights / k) for k in (1, 2, 4, 8)]
    assert printed["float32"]["largest_layer"] == convert_bytes(4 * largest) == "13.4 GB"  # the 250,880 x 14,336 embedding
    assert printed["float32"]["training_adam"] == convert_bytes(4 * weights)


def test_falcon_7b_exact_bytes_are_ours_plus_40448_bytes_of_other_tensors():
    printed, params, memory, largest = ours("falcon-7b-instruct model-sizer-bot")
    fp32, mixed = printed["float32"], printed["float16/bfloat16"]
    assert fp32["total_size"] == convert_bytes(memory["weights"]) == "25.79 GB"
    assert mixed["total_size"] == convert_bytes(memory["weights"] / 2)
    assert fp32["largest_layer"] == convert_bytes(4 * largest) == "1.1 GB"  # the 65,024 x 4,544 embedding
    # its exact fp32 model: 10,112 fp32 values over ours' parameters: 1,024 of them the rotary
    # inv_freq buffers (32 a layer, head 64), 9,088 = 2 x 4,544 not resolved to a tensor here
    extra = fp32["peak"]["model"] - memory["weights"]
    assert extra == 40_448 == 4 * (32 * 32 + 2 * 4_544)
    # fp32 Adam: model + gradients + m + v, 16 bytes a value, as ours (fp32 weights, gradients, AdamW)
    assert fp32["peak"]["step"] == 4 * fp32["peak"]["model"]
    assert memory["weights"] + memory["gradients"] + memory["optimizer"] == 16 * params["total"]
    assert fp32["peak"]["step"] - 16 * params["total"] == 4 * extra


def test_mistral_family_rows_hold_rotary_caches_the_class_no_longer_has():
    for row_id, ff in (("zephyr-7b-alpha model-sizer-bot", 14_336), ("Nous-Hermes-2-Mixtral-8x7B-DPO model-sizer-bot", None)):
        printed, params, memory, largest = ours(row_id)
        layer = params["per_layer"]["decoder"]
        # the largest residual group is one decoder layer plus 32.00 MiB: cos and sin caches of
        # 32,768 positions x 128 in fp32, buffers of transformers 4.34-4.36's MistralRotaryEmbedding
        # (one a layer); transformers 5.24's class (the one the project measures) keeps inv_freq only
        assert printed["float32"]["largest_layer"] == convert_bytes(4 * layer + 2 * 32_768 * 128 * 4)
        # the totals are 0.51 GiB over ours: half of 32 layers' 32 MiB; which half is not resolved
        over = float(printed["float32"]["total_size"].split()[0]) * GIB - memory["weights"]
        assert 0.505 * GIB < over < 0.520 * GIB
        if ff:
            assert layer == 4_096 * (2 * 4_096 + 2 * 1_024) + 3 * 4_096 * ff + 2 * 4_096


def test_accelerate_mixed_precision_peak_leaves_out_weights_and_gradients_a_real_step_holds():
    """accelerate's fp16/bf16 'Peak vRAM' is max(stage), 8 bytes a parameter (Adam's m and v);
    at the step a torch.autocast run with fp32 parameters holds parameters, gradients, m and v
    together: 16 bytes a parameter, measured here, and ours (2 + 2 + 12, bf16 weights with fp32
    master) holds the same 16."""
    printed, params, memory, _ = ours("falcon-7b-instruct model-sizer-bot")
    peak = printed["float16/bfloat16"]["peak"]
    assert max(peak.values()) == peak["step"] == 2 * peak["model"]  # 8 bytes a value
    assert peak["gradients"] == 3 * peak["model"] // 2
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
    n = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(torch.randn(8, 64)).float().square().mean()
    loss.backward()
    optimizer.step()
    held = sum(p.numel() * p.element_size() for p in model.parameters())
    held += sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    held += sum(t.numel() * t.element_size() for s in optimizer.state.values() for k, t in s.items() if k != "step")
    assert held == 16 * n
    bf16 = estimate(load_model("falcon-7b"), seq_len=512, dtype="bf16").memory_numbers()
    assert bf16["weights"] + bf16["gradients"] + bf16["optimizer"] == 16 * params["total"]
    assert 16 * params["total"] - peak["step"] == pytest.approx(8 * params["total"], abs=8 * 10_112)
