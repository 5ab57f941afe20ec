"""Our numbers beside Megatron-LM's own formulas (issue 22): theoretical_memory_usage.py's
compute_weight_and_optimizer_memory and compute_activation_memory(_without_sp), and training.py's
num_floating_point_operations, evaluated outside the project on the configs of
validate/megatron_reference.json (the commit they came from is in the file; no Megatron code is
in the project). Each difference is explained in validate/FINDINGS.md, section 22.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset

REFERENCE = json.loads((Path(__file__).resolve().parent.parent / "validate" / "megatron_reference.json").read_text())
ROWS = {row["config"]: row for row in REFERENCE["rows"]}


def ours(row: dict) -> ParallelEstimate:
    a = row["args"]
    cfg = load_preset(row["config"].split()[0])
    layout = Layout(tp=a["tensor_model_parallel_size"], pp=a["pipeline_model_parallel_size"],
                    dp=a["data_parallel_size"], cp=a["context_parallel_size"], ep=a["expert_model_parallel_size"],
                    sp=a["sequence_parallel"], zero=1, framework="megatron", microbatches=row["num_microbatches"])
    workload = Workload(seq_len=a["seq_length"], batch=1, dtype="bf16", impl="megatron", attention="flash",
                        recompute=a["recompute_granularity"] or "none")
    return ParallelEstimate(cfg, workload, layout)


def test_the_reference_names_its_commit():
    assert REFERENCE["repository"] == "NVIDIA/Megatron-LM" and len(REFERENCE["commit"]) == 40


@pytest.mark.parametrize("name", list(ROWS))
def test_training_flops_equal_megatrons_but_for_three_stated_conventions(name):
    """Ours - Megatron = (our attention core - Megatron's) + the router - the vocabulary's padding
    - MLA's norms: Megatron counts the attention core causal (half of QK^T and PV,
    3 x 2 n^2 (h d_qk + h d_v) / 2 a layer), we count it dense and with flash attention's
    recomputed QK^T in backward (what the kernel executes); Megatron leaves the router's d x E
    product out (3 x 2 n d E a mixture-of-experts layer), runs the logits over its padded
    vocabulary and counts MLA's q and kv norm weights as products."""
    row = ROWS[name]
    a = row["args"]
    cfg = load_preset(name.split()[0])
    single = ParallelEstimate(cfg, Workload(seq_len=a["seq_length"], batch=1, impl="megatron", attention="flash"),
                              Layout(framework="megatron"))
    n, h = a["seq_length"], a["num_attention_heads"]
    d_qk = a["qk_head_dim"] + a["qk_pos_emb_head_dim"] if a["multi_latent_attention"] else a["kv_channels"]
    d_v = a["v_head_dim"] if a["multi_latent_attention"] else a["kv_channels"]
    megatron_core = 3 * 2 * n * n * (h * d_qk + h * d_v) // 2 * a["num_layers"]
    moe_layers = sum(a["moe_layer_freq"]) if isinstance(a["moe_layer_freq"], list) else \
        (a["num_layers"] if a["num_experts"] else 0)
    router = 3 * 2 * n * a["hidden_size"] * (a["num_experts"] or 0) * moe_layers
    expected = single.numbers["model_flops"] - (single.numbers["attention_flops"] - megatron_core) - router
    # Megatron's logits run over its padded vocabulary (a multiple of 128 tp; ours here is tp 1's).
    expected += 3 * 2 * n * a["hidden_size"] * (a["padded_vocab_size"] - math.ceil(cfg.vocab_size / 128) * 128)
    if a["multi_latent_attention"]:  # Megatron's MLA term counts the q and kv norms' weights as products
        expected += 3 * 2 * n * (a["q_lora_rank"] + a["kv_lora_rank"]) * a["num_layers"]
    assert math.isclose(expected, row["flops_per_sequence"], rel_tol=1e-12), (expected, row["flops_per_sequence"])


@pytest.mark.parametrize("name, difference", [
    ("llama2-7b tp1 pp1 dp8", 0),
    ("mixtral-8x7b tp1 ep8 dp8", 0),  # experts over ep, their optimizer over dp / ep: as ours
    # Megatron spreads the final norm over the stages (replicated / pp); we keep it on the last.
    ("llama2-70b tp8 pp4 dp2", -(6 + 12 // 2) * 8192 // 4),
])
def test_weights_and_optimizer_equal_megatrons(name, difference):
    row = ROWS[name]
    stage = ours(row).per_stage[0]
    state = stage["weights"] + stage["gradients"] + stage["optimizer"]
    assert state - row["weight_and_optimizer_bytes"] == difference


def test_weights_and_optimizer_where_megatron_averages_layers_or_ignores_cp():
    """Megatron's most loaded stage holds layers / pp (7.875 of Llama 3's 126 on 16 stages; 3.8125
    of DeepSeek-V3's 61, dense and MoE averaged); ours holds whole layers (8; DeepSeek-V3's first
    stage 3 dense + 1 MoE). With context parallelism Megatron's formula shards the optimizer over
    dp only; Megatron's distributed optimizer (and ours) shards it over dp x cp: the row that
    gives Megatron dp x cp as its dp is the one to compare."""
    llama = ROWS["llama3.1-405b tp8 pp16 dp128 (its dp x cp as dp)"]
    cp_row = ROWS["llama3.1-405b tp8 cp16 pp16 dp8"]
    rank = ours(cp_row)
    stage = rank.per_stage[0]
    state = stage["weights"] + stage["gradients"] + stage["optimizer"]
    assert 1.0 < state / llama["weight_and_optimizer_bytes"] < 1.016  # 8 layers, not 7.875
    assert state / cp_row["weight_and_optimizer_bytes"] < 0.83  # 12/8 bytes of optimizer, not 12/128
    deepseek = ROWS["deepseek-v3 pp16 ep64 dp128"]
    stage = ours(deepseek).per_stage[0]
    assert 1.03 < (stage["weights"] + stage["gradients"] + stage["optimizer"]) / deepseek["weight_and_optimizer_bytes"] < 1.045


def test_activations_beside_megatrons_table_2_formula():
    """Megatron's SP + selective formula, sbh (18 + 4 f / h) / tp a layer, on Llama-2-70B: ours is
    4.6% above it (its MLP term counts a non-gated FFN's 4 f/h, a fused SwiGLU keeps 6 f/h: fc1's
    two halves and fc2's input; GQA's K and V are 1/8 of its assumed h each)."""
    row = ROWS["llama2-70b tp8 pp4 dp2 sp selective"]
    ratio = ours(row).per_stage[0]["activations"] / row["activation_bytes"]
    assert 1.04 < ratio < 1.05
