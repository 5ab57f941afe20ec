"""Matmul FLOPs of transformers' models with depthwise convolutions (MambaForCausalLM,
FalconMambaForCausalLM, hybrids built from the same mixer, LFM2's short convolutions) in a training
step, with a depthwise conv's backward counted as its groups make it (validate/measure/flops.py's
EXTRA_FLOP_FORMULAS, which replace torch 2.13's conv_backward_flop: it ignores the groups).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from validate.measure.flops import EXTRA_FLOP_FORMULAS

#: validate.measure's formulas, the depthwise conv's backward counted as its groups make it.
GROUPED_CONV_FORMULAS = EXTRA_FLOP_FORMULAS


def causal_lm_flops(fields: dict[str, Any], b: int, n: int, backward: bool, use_cache: bool | None = False) -> int:
    """FlopCounterMode's count (GROUPED_CONV_FORMULAS) of the class built from `fields` (fp32, eager
    attention, training mode, no cache; use_cache None: the class's default) over a forward with its
    loss and, if `backward`, the backward: the slow path's matmuls, conv and recurrent scan."""
    model, ids = _seeded_model(fields, b, n)
    with FlopCounterMode(display=False, custom_mapping=dict(GROUPED_CONV_FORMULAS)) as counter:
        loss = model(ids, labels=ids, **({} if use_cache is None else {"use_cache": use_cache})).loss
        if backward:
            loss.backward()
    return counter.get_total_flops()


def causal_lm_flops_both(fields: dict[str, Any], b: int, n: int, use_cache: bool | None = False) -> tuple[int, int]:
    """(forward, training) of causal_lm_flops from one build and one pass: the count when the forward
    with its loss ends, then with the backward added. The same two numbers as
    causal_lm_flops(backward=False) and (backward=True), which build the same seeded model and run the
    same forward twice."""
    model, ids = _seeded_model(fields, b, n)
    with FlopCounterMode(display=False, custom_mapping=dict(GROUPED_CONV_FORMULAS)) as counter:
        loss = model(ids, labels=ids, **({} if use_cache is None else {"use_cache": use_cache})).loss
        forward = counter.get_total_flops()
        loss.backward()
    return forward, counter.get_total_flops()


def _seeded_model(fields: dict[str, Any], b: int, n: int) -> tuple[Any, Any]:
    """The class built from `fields` (fp32, eager attention, training mode) after seed 0, and b x n
    random token ids drawn next: what both counts above run."""
    import transformers

    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    return model, torch.randint(0, fields["vocab_size"], (b, n))
