"""The bytes a parameter moves in a training step outside the model's kernels, as each framework's
optimizer and gradient code runs them (Megatron-LM's fp16 step, DeepSpeed's BF16_Optimizer, torch's
autocast, an in-place gradient add): plain integers, without sympy, for the time model's per-step
passes (costmodel/layout/time.py; costmodel/precision.py re-exports them)."""

from __future__ import annotations

from .spec import DTYPE_BYTES

FP32 = DTYPE_BYTES["fp32"]  # one definition with costmodel/terms.py: both read spec.DTYPE_BYTES


def megatron_fp16_step_bytes(element_bytes: int) -> int:
    """Bytes one parameter moves in Megatron-LM's fp16 optimizer step, whose passes are separate
    kernels (NVIDIA/Megatron-LM megatron/optimizer/optimizer.py FP16OptimizerWithFP16Params.step
    and clip_grads.py, commit cbad126 of March 2021; --clip-grad 1.0 in examples/sc21/CONFIG.sh):
      _copy_model_grads_to_main_grads  multi_tensor_scale by 1.0: read e, write 4
      _unscale_main_grads_and_check_for_nan  torch._amp_foreach_non_finite_check_and_unscale_ on
                                       the fp32 gradients, in place: read 4, write 4
      clip_grad_norm_fp32              multi_tensor_l2norm: read 4 (its multi_tensor_scale runs only
                                       when the norm exceeds the clip: not counted)
      apex FusedAdam (optimizer/__init__.py) over the fp32 main parameters: read the parameter,
                                       gradient and two moments, write the parameter and moments: 28
      _copy_main_params_to_model_params  multi_tensor_scale by 1.0: read 4, write e
    48 + 2e bytes (52 in fp16), where one fused pass (ParamBytes.step_traffic) moves 30; zero_grad
    sets the fp16 gradients to None (no pass)."""
    copy_gradients = element_bytes + FP32
    unscale = 2 * FP32
    norm = FP32
    adam = 4 * FP32 + 3 * FP32
    copy_parameters = FP32 + element_bytes
    return copy_gradients + unscale + norm + adam + copy_parameters


def megatron_gradient_cast_bytes(element_bytes: int) -> int:
    """Bytes one updated parameter moves when Megatron-Core's optimizer casts its reduced gradient
    from a bf16 main_grad buffer (grad_reduce_in_fp32 False) to a new fp32 tensor before the
    fused Adam reads it (NVIDIA/Megatron-LM d98e8a64d megatron/core/optimizer/distrib_optimizer.py
    _copy_model_grads_to_main_grads, shard_main_param.grad = shard_model_grad.float(), lines
    2756-2792; optimizer.py main_param.grad = model_param.main_grad.float(), line 1097): read e,
    write 4. On an fp32 buffer .float() returns the tensor itself and moves nothing. The fp32
    copy is the gradient ParamBytes.step_traffic then reads (4 bytes a parameter, as under an
    fp32 buffer: the policy's own gradient bytes, e here, are replaced by this cast and 4)."""
    return element_bytes + FP32


def in_place_add_bytes(element_bytes: int) -> int:
    """Bytes one parameter's gradient moves when added in place into the held one, outside a
    fused kernel: both read and the sum written, 3 x the element's bytes."""
    return 3 * element_bytes


def bf16_optimizer_microbatch_bytes(element_bytes: int) -> int:
    """Bytes one parameter moves per micro-batch under DeepSpeed's BF16_Optimizer (deepspeed/
    runtime/bf16_optimizer.py update_hp_grads at v0.6.5, which the pipeline engine calls after each
    backward): hp_grad.add_(lp.grad.to(fp32)), the gradient cast to a new fp32 tensor (read e,
    write 4) and added into the fp32 gradient (read 4 + 4, write 4): e + 4 + 12, 18 in bf16. The
    bf16 gradient itself is set to None before each backward (clear_lp_grads), so autograd adds
    nothing in place."""
    return element_bytes + FP32 + in_place_add_bytes(FP32)


def bf16_optimizer_step_bytes(element_bytes: int) -> int:
    """Bytes one parameter of the rank (all of them, not the shard) moves once a step under
    DeepSpeed's BF16_Optimizer, outside the optimizer's own update (v0.6.5): the engine's
    allreduce_bucket on the fp32 gradient (engine.py: communication_data_type is bf16 when bf16 is
    enabled, d14baad94 of 2021-11 to 2023-03) casts it to bf16 (read 4, write e), averages it after
    the all-reduce (mul_: read e, write e) and copies it back (read e, write 4); the step's
    global norm reads it (get_grads_for_norm, 4) and clear_hp_grads zeroes it (write 4). The
    flatten of a one-tensor bucket is a view (torch's flatten_dense_tensors), and the clipping,
    which scales only when the norm exceeds the limit, is left out: 4 + e + 2e + e + 4 + 4 + 4."""
    return FP32 + element_bytes + 2 * element_bytes + element_bytes + FP32 + FP32 + FP32


def autocast_bytes_per_parameter(microbatches: int, element_bytes: int) -> int:
    """Bytes one parameter moves in a training step, outside the model's kernels, under torch.autocast
    with fp32 parameters (automatic mixed precision: PyTorch Lightning's precision "bf16"/"16",
    Lightning-AI/pytorch-lightning#9049's NativeMixedPrecisionPlugin; the FlashAttention-2 training
    runs). Each micro-batch's forward casts the weight to the autocast dtype (autocast's cast cache
    and flash_attn's FusedDenseFunc both cast once per forward: read 4, write e bytes); its backward
    returns the weight gradient in e bytes, which autograd casts to the parameter's fp32 (read e,
    write 4) and, from the second micro-batch of a step on, adds into the fp32 .grad (read 4 + 4,
    write 4): m (8 + 2e) + 12 (m - 1). Policies whose weights are already in the activation dtype
    (mixed, megatron) move none of this."""
    if microbatches < 1 or element_bytes >= FP32:
        from .config import ConfigError

        raise ConfigError(f"autocast casts fp32 parameters to a 16-bit dtype once per micro-batch; got "
                          f"{microbatches} micro-batches of {element_bytes}-byte elements.")
    cast = FP32 + element_bytes  # the forward's copy of the weight
    gradient = element_bytes + FP32  # the weight gradient cast back to fp32
    accumulate = in_place_add_bytes(FP32)  # .grad += gradient
    return microbatches * (cast + gradient) + (microbatches - 1) * accumulate


def deepspeed_zero3_step_bytes(element_bytes: int) -> int:
    """Bytes one parameter of the rank's partition moves in DeepSpeed ZeRO-3's optimizer step with
    16-bit parameters (fp16 or bf16; deepspeed/runtime/zero/stage3.py DeepSpeedZeroOptimizer_Stage3
    .step at v0.11.1, e9503fe4, lines 1894-1938, no offload, one sub-group), each pass a kernel of its own:
      has_overflow (lines 2016-2048, in bf16 too)  torch.isinf and torch.isnan of the 16-bit gradient
                                       partition, each a bool tensor then .any(): 2 x (read e, write 1, read 1)
      get_grad_norm_direct (1600-1650)  g.double().norm(2) per gradient: read e, write 8, read 8
      _prepare_fp32_grad_for_sub_group (1726-1745)  self.flatten (torch's _flatten_dense_tensors, a
                                       cat: read e, write e) .to(fp32) (read e, write 4)
      unscale_and_clip_grads (1986-1993)  the fp32 gradient's mul_: read 4, write 4
      _optimizer_step (884-890)        the fused Adam over the fp32 partition: read the parameter,
                                       gradient and two moments, write the parameter and moments: 28
      _reassign_or_swap_out_partitioned_parameters (1877-1885)  the 16-bit partition copy_ of the
                                       fp32 one: read 4, write e
    7e + 64 bytes (78 in 16-bit), where one fused pass (ParamBytes.step_traffic) moves about 30.
    zero_grad sets the gradients to None (no pass); the persistent parameters' all-gather
    (_post_step) is left out (parameters under stage3_param_persistence_threshold, 1e5 elements)."""
    overflow = 2 * (element_bytes + 1 + 1)
    norm = element_bytes + 8 + 8
    fp32_gradient = 2 * element_bytes + element_bytes + FP32
    unscale = 2 * FP32
    adam = 4 * FP32 + 3 * FP32
    copy_parameters = FP32 + element_bytes
    return overflow + norm + fp32_gradient + unscale + adam + copy_parameters


def framework_step_bytes(estimate) -> int | None:
    """Bytes one updated parameter moves where the framework's optimizer step runs its own passes
    (time.py StepTime.step_traffic): Megatron-LM's fp16 optimizer (Framework.fp16_optimizer_passes
    "megatron"), DeepSpeed's ZeRO-3 with 16-bit parameters and torch's AdamW and clip_grad_norm_ on
    FSDP2 (Layout.optimizer_step, layout/torch_optimizer.py); None where one fused pass stands."""
    from .layout.torch_optimizer import step_bytes as torch_step_bytes

    framework, e = estimate.framework, estimate.workload.bytes_per_element
    if estimate.workload.dtype == "fp16" and framework.fp16_optimizer_passes == "megatron":
        return megatron_fp16_step_bytes(e)
    if estimate.layout.framework == "deepspeed" and estimate.layout.zero == 3 and e < FP32:
        return deepspeed_zero3_step_bytes(e)
    return torch_step_bytes(estimate.layout, e if estimate.layout.pure_precision else FP32)
