"""DeepSpeed ZeRO-3's hook sites counted in transformers' Qwen2 with gradient checkpointing
(validate/zero3_hook_calls.py; validate/FINDINGS.md, "DeepSpeed ZeRO-3's host time"): exact counts a micro-step
that any pricing of the hooks' host time would multiply."""

from __future__ import annotations

import pytest

from validate.zero3_hook_calls import count_calls, main


@pytest.mark.slow
@pytest.mark.parametrize("layers", [1, 3])
def test_qwen2_module_calls_per_micro_step(layers):
    pytest.importorskip("transformers")
    counts = count_calls(layers)
    # a layer: q, k, v, o, gate, up, down, two RMSNorms own parameters; the layer, self_attn, mlp and act_fn
    # none. Outside: embed_tokens, norm and lm_head own parameters; the top model, Qwen2Model and rotary_emb none.
    assert counts[("forward", True)] == 9 * layers + 3
    assert counts[("forward", False)] == 4 * layers + 3
    # the recomputation re-runs the layer's submodules, not the checkpointed layer's own hooks
    assert counts[("recompute", True)] == 9 * layers
    assert counts[("recompute", False)] == 3 * layers
    # gradients reaching tensor outputs: the recomputed calls, each layer's output, and outside the layers
    # embed_tokens, norm, lm_head, Qwen2Model's hidden state, the loss and the logits
    assert counts[("backward", True)] == 13 * layers + 6


def test_bad_layer_count_exits_2(capsys):
    assert main(["x"]) == 2
    assert "positive integer" in capsys.readouterr().err
