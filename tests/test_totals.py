"""One definition of each total: the estimate's training_total is what a layout's rank holds at
dp = 1 (costmodel.memory.Memory.training_total: weights, gradients, optimizer, bytes saved for
backward and the modules' buffers)."""

from __future__ import annotations

import json

import pytest

import cli


def estimate(args: list[str], capsys) -> dict:
    assert cli.main(["estimate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_llama2_7b_training_total_counts_rope_buffers_as_the_rank_does(capsys):
    # A layout implies its framework's attention kernel (DeepSpeed's: sdpa, docs/layouts.md); the
    # figure below is eager attention's, as estimate gave it before that rule.
    out = estimate(["--model", "llama2-7b", "--dp", "1", "--attention", "eager"], capsys)
    memory, rank = out["memory"], out["parallel"]["per_rank"]
    # one rotary module's inv_freq and original_inv_freq, 64 fp32 each = 512 bytes (transformers
    # 5.24's LlamaRotaryEmbedding); the total is the one `estimate --dp 1` gave per rank before
    assert memory["buffers"] == rank["buffers"] == 512
    assert memory["training_total"] == rank["total"] == 146_129_134_092
    assert memory["training_total"] == sum(memory[k] for k in (
        "weights", "gradients", "optimizer", "activations", "buffers"))


@pytest.mark.parametrize("model, extra", [
    ("gpt2", []), ("bert-base-uncased", []), ("t5-small", []), ("gemma2-9b", ["--seq-len", "512"]),
    ("llama2-7b", ["--recompute", "full"]), ("mistral-7b", ["--dtype", "fp32"]),
])
def test_training_total_equals_the_rank_total_at_dp_1(model, extra, capsys):
    out = estimate(["--model", model, "--dp", "1", *extra], capsys)
    rank = out["parallel"]["per_rank"]
    # --dp 1 implies DeepSpeed's Hugging Face code and its default sdpa; Gemma 2's class has none
    # (Gemma2PreTrainedModel._supports_sdpa = False in transformers 5.24), so it runs eager, as
    # transformers falls back (costmodel/defaults.py class_attention; it used to be timed under sdpa)
    assert out["inputs"]["attention"] == ("eager" if model == "gemma2-9b" else "sdpa"), model
    assert out["memory"]["training_total"] == rank["total"], model
    assert out["memory"]["buffers"] == rank["buffers"], model
