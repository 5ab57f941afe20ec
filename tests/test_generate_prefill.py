"""Hugging Face generate's prefill runs the LM head on the last position only (transformers 5.24
GenerationMixin.generate passes logits_to_keep=1): the tree with Profile.logits_to_keep = 1, which
simulate's inference path builds (tree.generate_logits_to_keep), equals the FLOPs that
FlopCounterMode counts in model.generate(ids, max_new_tokens=1) (one forward: the prefill; the
greedy argmax counts none) and the logits that forward returns, [b, 1, V]; a plain forward
model(ids) (estimate's) keeps all n positions, as the tree without the flag.

Tiny odd configs (tests/family_configs.py): Llama 3 (an untied head) and Gemma 2 (a tied head,
then the final soft-capping), built in fp32 with real weights on the CPU.
"""

from __future__ import annotations

import pytest

from tests.family_configs import FAMILY_CONFIGS

POINTS = ((2, 7), (1, 12))  # (batch, prompt)


def _measured(config: dict, batch: int, prompt: int, generate: bool) -> tuple[int, dict]:
    """FLOPs that FlopCounterMode counts and what the (first) forward was given and returned."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from validate.hf_families import build_hf_from_dict, family_inputs

    torch.manual_seed(0)
    model = build_hf_from_dict(dict(config), dtype=torch.float32).eval()
    seen: dict = {}

    def hook(module, args, kwargs, output):  # the first forward: generate's prefill
        seen.setdefault("logits_to_keep", kwargs.get("logits_to_keep"))
        seen.setdefault("logits", output.logits)

    model.register_forward_hook(hook, with_kwargs=True)
    ids = family_inputs(config, batch, prompt)["input_ids"]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        if generate:
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=1, do_sample=False,
                           pad_token_id=0)
        else:
            model(ids)
    return counter.get_total_flops(), seen


def _tree(config: dict, batch: int, prompt: int, logits_to_keep: int) -> tuple[int, int]:
    """The prefill tree's matmul FLOPs and returned (logits) bytes at fp32."""
    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(config, name="odd")
    tree = CostModel(cfg, profile_for(cfg, logits_to_keep=logits_to_keep), phase="prefill")
    subs = values(cfg, Workload(seq_len=prompt, batch=batch, dtype="fp32"))
    return exact(tree.total("flops_matmul"), subs), exact(tree.total("result_bytes"), subs)


@pytest.mark.parametrize("family", ["llama3", "gemma2"])
def test_generate_prefill_head_on_last_position(family):
    from costmodel.hf import from_hf_config
    from costmodel.tree import generate_logits_to_keep

    config = FAMILY_CONFIGS[family]
    keep = generate_logits_to_keep(from_hf_config(config, name="odd"), "hf")
    assert keep == 1
    for batch, prompt in POINTS:
        flops, seen = _measured(config, batch, prompt, generate=True)
        assert seen["logits_to_keep"] == 1
        assert tuple(seen["logits"].shape) == (batch, 1, config["vocab_size"])
        tree_flops, tree_logits = _tree(config, batch, prompt, keep)
        assert flops == tree_flops, (family, batch, prompt)
        assert seen["logits"].numel() * seen["logits"].element_size() == tree_logits
        # the head on all n positions would be 2 b (n - 1) d V more: the difference is visible
        all_flops, _ = _tree(config, batch, prompt, 0)
        assert all_flops - tree_flops == 2 * batch * (prompt - 1) * config["hidden_size"] * config["vocab_size"]


@pytest.mark.parametrize("family", ["llama3", "gemma2"])
def test_plain_forward_keeps_every_position(family):
    """estimate's model(ids): logits [b, n, V], the tree without the flag."""
    config = FAMILY_CONFIGS[family]
    batch, prompt = POINTS[0]
    flops, seen = _measured(config, batch, prompt, generate=False)
    assert seen["logits_to_keep"] is None
    assert tuple(seen["logits"].shape) == (batch, prompt, config["vocab_size"])
    assert (flops, seen["logits"].numel() * 4) == _tree(config, batch, prompt, 0)


def test_encoder_decoder_and_reference_keep_every_position():
    """T5ForConditionalGeneration's forward takes no logits_to_keep, and the reference model's
    decoding (validate/decoding.py) slices the last position after its head: both 0."""
    import inspect

    import transformers

    from costmodel.presets import load_preset
    from costmodel.tree import generate_logits_to_keep

    assert "logits_to_keep" not in inspect.signature(transformers.T5ForConditionalGeneration.forward).parameters
    assert "logits_to_keep" in inspect.signature(transformers.LlamaForCausalLM.forward).parameters
    assert generate_logits_to_keep(load_preset("t5-small"), "hf") == 0
    assert generate_logits_to_keep(load_preset("llama3.2-1b"), "reference") == 0
