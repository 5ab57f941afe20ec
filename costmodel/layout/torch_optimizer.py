"""The optimizer step of an FSDP2 layout as torch's own optimizer code runs it (Layout.optimizer_step),
for time.py StepTime.step_traffic through step_bytes.framework_step_bytes: bytes one updated
parameter moves, its fp32 shard (FSDP2's MixedPrecisionPolicy keeps the sharded parameter, its
gradient and AdamW's moments in fp32; param_dtype bf16 only for the gathered copy).

torchtitan's training loop (pytorch/torchtitan 9dec370ad26b, train.py lines 310-323) runs
  utils.clip_grad_norm_(parameters, max_norm, foreach=True)  (max_norm 1.0, train_configs/llama3_*.toml)
      torch.nn.utils.get_total_norm: torch._foreach_norm over the gradients     read 4
      (the norm's all-reduce over the DTensor mesh: a scalar, no bytes a parameter)
      torch.nn.utils.clip_grads_with_norm_: torch._foreach_mul_(grads, clip_coef_clamped), run whatever
      the norm ("avoids a `if clip_coef < 1:` conditional which can require a CPU <=> device
      synchronization", torch/nn/utils/clip_grad.py)                                read 4, write 4
  optimizers.step(): torch.optim.AdamW(lr, betas, weight_decay=0.1, fused=fused, foreach=not fused)
      (torchtitan/optimizer.py build_optimizers at 9dec370; --optimizer.fused off by default, so foreach;
      "use Fused AdamW as default", pytorch/torchtitan 6e4988550 of 2025-02-24, made later commits fused:
      --optimizer.implementation "fused", torchtitan/config_manager.py at 820504e and e7c0cae).
torch's foreach AdamW (torch/optim/adam.py _multi_tensor_adam, decoupled weight decay, not capturable:
torch 2.13's code standing for the runs' torch; the same passes since AdamW's foreach path of torch 2.0):
      _foreach_mul_(params, 1 - lr wd)                       read 4, write 4
      _foreach_lerp_(exp_avgs, grads, 1 - beta1)              read 8, write 4
      _foreach_mul_(exp_avg_sqs, beta2)                       read 4, write 4
      _foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2) read 8 (the gradient once), write 4
      exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)            read 4, write 4
      _foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)   read 4, write 4
      _foreach_add_(exp_avg_sq_sqrt, eps)                     read 4, write 4
      _foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size)  read 12, write 4
  80 bytes; the fused kernel (_fused_adamw_) reads the parameter, gradient and moments and writes the
  parameter and moments once: 28, the default fused pass (ParamBytes.step_traffic).
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, show
from ..spec import DTYPE_BYTES, OPTIMIZER_STEPS
from .megatron_step import DEFAULT_RELEASE, check_release

FP32 = DTYPE_BYTES["fp32"]  # as step_bytes.FP32 (step_bytes reads this module's step_bytes: no import back)

#: torch.nn.utils.clip_grad_norm_(foreach=True): the norm reads each gradient, the scale reads and writes it.
CLIP_PASSES = FP32 + 2 * FP32
#: torch's foreach AdamW, one entry a pass: elements read, elements written (the module docstring).
FOREACH_ADAMW_PASSES = ((1, 1), (2, 1), (1, 1), (2, 1), (1, 1), (1, 1), (1, 1), (3, 1))
#: torch's fused AdamW: the parameter, gradient and two moments read, the parameter and moments written.
FUSED_ADAMW = (4 + 3) * FP32


def step_bytes(layout: Any, element: int = FP32) -> int | None:
    """Bytes one updated parameter moves in the step under layout.optimizer_step; None for "fused"
    (one fused pass: the caller's ParamBytes.step_traffic). element: the bytes of the shard's
    elements, fp32's unless the layout trains in pure precision (Layout.pure_precision: the
    parameter, its gradient and torch's moments all in the model's dtype, so every pass above
    moves that many bytes an element)."""
    if layout.optimizer_step == "torch-foreach":
        return (sum(read + written for read, written in FOREACH_ADAMW_PASSES) * FP32 + CLIP_PASSES) * element // FP32
    if layout.optimizer_step == "torch-fused":
        return (FUSED_ADAMW + CLIP_PASSES) * element // FP32
    return None


def check(layout: Any) -> None:
    """One of OPTIMIZER_STEPS; torch's optimizer code only on FSDP2 (whose shard it updates in fp32),
    Megatron-LM's only on Megatron with its DDP buffers (ZeRO 0 or 1: layout/megatron_step.py)."""
    if layout.optimizer_step not in OPTIMIZER_STEPS:
        raise ConfigError(f"layout: optimizer_step must be {OPTIMIZER_STEPS.listed()}, got {show(layout.optimizer_step)}.")
    check_release(layout.megatron_release)
    if layout.megatron_release != DEFAULT_RELEASE and layout.optimizer_step != "megatron-lm":
        raise ConfigError(f"layout: megatron_release {layout.megatron_release} is the release of Megatron-LM's step; "
                          f"it needs --optimizer-step megatron-lm (here {layout.optimizer_step}).")
    if layout.optimizer_step == "megatron-lm":
        if layout.framework != "megatron" or layout.zero > 1:
            raise ConfigError(f"layout: optimizer_step megatron-lm is Megatron-LM's step over Megatron-Core's DDP buffers; "
                              f"it needs --framework megatron with --zero 0 or 1 (here {layout.framework}, --zero {layout.zero}).")
        return
    if layout.optimizer_step != "fused" and layout.framework != "fsdp2":
        raise ConfigError(f"layout: optimizer_step {layout.optimizer_step} is torch's AdamW over FSDP2's fp32 shard; "
                          f"it needs --framework fsdp2 (here {layout.framework}).")
