"""Matmul FLOPs of transformers' Mamba-1 models (MambaForCausalLM, FalconMambaForCausalLM; later
hybrids built from the same mixer) in a training step, with a depthwise conv's backward counted
as its groups make it.

torch 2.13's FlopCounterMode counts convolution_backward's weight gradient by transposing the
shapes (torch/utils/flop_counter.py conv_backward_flop: conv_flop_count(t(x), t(grad_out), t(w)))
and so ignores the groups: a depthwise conv of D channels (groups = D) is counted D times over
(measured: 1,229,184 FLOPs for one mixer's conv of 96 channels, 3 taps, b 2, n 9, where its forward
is 12,672). GROUPED_CONV_FORMULAS replaces that formula: the input gradient as torch counts it
(a conv of the same weight, which its w_shape carries groups-correctly), the weight gradient the
forward's count (each output element times each of the c_in / groups x K weights once).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

from validate.measure.flops import EXTRA_FLOP_FORMULAS

aten = torch.ops.aten


def _grouped_conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                                transposed, _output_padding, _groups, output_mask, out_shape) -> int:
    """A convolution's backward, groups counted (shapes, as FlopCounterMode's shape_wrapper gives)."""
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:
            raise NotImplementedError("a transposed convolution's weight gradient is not counted here")
        flops += 2 * x_shape[0] * math.prod(w_shape) * math.prod(grad_out_shape[2:])
    return flops


#: validate.measure's formulas with the depthwise conv's backward counted as its groups make it.
GROUPED_CONV_FORMULAS = {**EXTRA_FLOP_FORMULAS, aten.convolution_backward: _grouped_conv_backward_flop}


def causal_lm_flops(fields: dict[str, Any], b: int, n: int, backward: bool, use_cache: bool | None = False) -> int:
    """FlopCounterMode's count (GROUPED_CONV_FORMULAS) of the class built from `fields` (fp32, eager
    attention, training mode, no cache; use_cache None: the class's default) over a forward with its
    loss and, if `backward`, the backward: the slow path's matmuls, conv and recurrent scan."""
    import transformers

    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    ids = torch.randint(0, fields["vocab_size"], (b, n))
    with FlopCounterMode(display=False, custom_mapping=dict(GROUPED_CONV_FORMULAS)) as counter:
        loss = model(ids, labels=ids, **({} if use_cache is None else {"use_cache": use_cache})).loss
        if backward:
            loss.backward()
    return counter.get_total_flops()
