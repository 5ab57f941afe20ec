"""Precision policies and optimizers as data: the bytes each parameter costs while training.

A precision policy says which copies of a parameter exist and in which dtype: the weights the
forward reads, their gradients, an fp32 master copy the optimizer updates (mixed precision), and
the dtype of the optimizer's moments. An optimizer says how many moments it keeps per parameter.
Together they give ParamBytes, which every consumer (estimate, the peak, the roofline's optimizer
pass) multiplies by the tree's parameters; nothing else types a byte count per parameter.

Policies, in e (bytes of the workload's activation dtype), so one tree serves every dtype:
  pure   weights, gradients and moments in the dtype (torch.optim on a model built in that dtype;
         what validate/ and MemTracker measure)
  mixed  weights and gradients in the dtype, an fp32 master copy and fp32 moments (Micikevicius et
         al. 2018; ZeRO's 2 + 2 + 12 = 16 bytes per parameter with AdamW); in fp32 it is pure.
         The default.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from . import symbols as S
from .step_bytes import (autocast_bytes_per_parameter, bf16_optimizer_microbatch_bytes,  # noqa: F401
                         bf16_optimizer_step_bytes, in_place_add_bytes, megatron_fp16_step_bytes)
from .terms import FP32, Expr, unless_fp32


@dataclass(frozen=True)
class Optimizer:
    """An optimizer's per-parameter state: `moments` tensors the size of the parameters."""

    name: str
    moments: int
    title: str
    step_counter: bool  # keeps one scalar `step` per parameter tensor (torch's AdamW)


OPTIMIZERS = {
    "adamw": Optimizer("adamw", 2, "AdamW (m, v", step_counter=True),
    "sgd": Optimizer("sgd", 0, "SGD (no momentum", step_counter=False),
}


@dataclass(frozen=True)
class Precision:
    """Bytes per parameter of each copy, as expressions in e: the weights read by the forward,
    their gradients, an fp32 master copy (0: none) and each optimizer moment."""

    name: str
    weights: Expr
    gradients: Expr
    master: Expr
    moment: Expr


PRECISIONS = {
    "pure": Precision("pure", S.e, S.e, sp.Integer(0), S.e),
    "mixed": Precision("mixed", S.e, S.e, unless_fp32(sp.Integer(FP32)), sp.Integer(FP32)),
    # Megatron-LM keeps fp32 main gradients beside the bf16 weights: 2 + 4 + 12 bytes.
    "megatron": Precision("megatron", S.e, sp.Integer(FP32), unless_fp32(sp.Integer(FP32)),
                          sp.Integer(FP32)),
    # FSDP2 with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): the sharded parameters
    # and gradients stay fp32 (measured, FINDINGS 10.2), the moments fp32: 4 + 4 + 8 bytes; the
    # bf16 unsharded copies are all-gather buffers, not state.
    "fsdp2": Precision("fsdp2", sp.Integer(FP32), sp.Integer(FP32), sp.Integer(0), sp.Integer(FP32)),
}


@dataclass(frozen=True)
class ParamBytes:
    """Bytes kept per parameter while training, by copy, under one policy and optimizer."""

    weights: Expr
    gradients: Expr
    optimizer: Expr  # the master copy and the moments
    moment: Expr  # bytes of one moment element (the optimizer's temporaries have this dtype)
    step_counter: bool  # one fp32 `step` per parameter tensor

    @property
    def total(self) -> Expr:
        return self.weights + self.gradients + self.optimizer

    @property
    def step_traffic(self) -> Expr:
        """Bytes one optimizer step moves per parameter if fused: it reads the weights, gradients
        and states, and writes the weights and states once."""
        return self.total + self.weights + self.optimizer


def param_bytes(precision: str, optimizer: str) -> ParamBytes:
    """The bytes per parameter of a policy and an optimizer."""
    policy, opt = PRECISIONS[precision], OPTIMIZERS[optimizer]
    return ParamBytes(
        weights=policy.weights,
        gradients=policy.gradients,
        optimizer=policy.master + opt.moments * policy.moment,
        moment=policy.moment,
        step_counter=opt.step_counter,
    )


def inference_precision(precision: str) -> str:
    """The policy an inference of the model holds its weights under: the copy the forward reads, in
    the activation dtype. Every policy but fsdp2 keeps that copy as its weights; fsdp2's fp32
    sharded parameters are training state (its forward reads bf16 copies gathered from them), so an
    inference beside it reads pure's."""
    return "pure" if PRECISIONS[precision].weights != S.e else precision


def param_bytes_note(precision: str, optimizer: str, dtype: str) -> str:
    """What ParamBytes counts, in words, for a dtype ("fp32", "bf16", "fp16")."""
    opt = OPTIMIZERS[optimizer]
    fp32 = dtype == "fp32"
    moments = f"in {dtype}" if precision == "pure" and not fp32 else "in fp32"
    title = f"{opt.title} {moments})" if opt.moments else f"{opt.title})"
    master = " + fp32 master weights" if precision in ("mixed", "megatron") and not fp32 else ""
    weights = {"megatron": f"{dtype} weights, fp32 main gradients",
               "fsdp2": "fp32 sharded weights and gradients (bf16 copies gathered for compute)"}
    return f"{weights.get(precision, f'{dtype} weights and gradients')}, {title}{master}"
