"""Megatron-LM's training step outside the model's kernels and the fused Adam pass (Layout.optimizer_step
"megatron-lm"): the passes its train_step, Megatron-Core's DistributedDataParallel and its optimizer make
over the gradients once a step, as bytes, for time.py StepTime.optimizer (memory-bound, on the compute
stream, at the hardware's memory rate like the optimizer's own pass).

Read at NVIDIA/Megatron-LM core_r0.8.0 (baf94af3) and core_v0.6.0 (cac60ce4), the tags of the runs that
state this step (the Megatron-Core r0.8.0 scaling table, FlagPerf's Llama 3 scripts), pretrain_gpt.py
with Megatron-LM's defaults:
  megatron/training/training.py train_step: `model_chunk.zero_grad_buffer()` before every step's first
      forward -> ParamAndGradBuffer.reset: `self.grad_data.zero_()`, the rank's whole gradient buffer
      (every parameter it holds, not the optimizer's shard)                       write g
  megatron/core/distributed/param_and_grad_buffer.py Bucket.start_grad_sync (each bucket, before its
      reduce-scatter or all-reduce, the last micro-batch's backward):
      `if self.ddp_config.check_for_nan_in_grad: norm = self.grad_data.norm(p=2)` (r0.8.0 lines 112-118;
      training.py passes check_for_nan_in_grad=args.check_for_nan_in_loss_and_grad, default True,
      arguments.py --no-check-for-nan-in-loss-and-grad; set False only for fp16 with dynamic loss
      scaling, arguments.py lines 289-298)                                        read g
      `if self.gradient_scaling_factor != 1.0: self.grad_data *= self.gradient_scaling_factor`
      (r0.8.0 lines 122-123; distributed_data_parallel.py lines 147-158: 1 / dp unless
      --ddp-average-in-collective, default off; core_v0.6.0 line 127: unconditional, so at dp 1 too)
                                                                                    read g, write g
      which releases scale at dp 1 is data: costmodel/megatron_releases.json (Layout.megatron_release,
      a source's "megatron_release"), each release's line cited there
  megatron/core/optimizer/optimizer.py MixedPrecisionOptimizer.step -> clip_grad_norm(clip_grad)
      (--clip-grad default 1.0): clip_grads.py get_grad_norm_fp32, amp_C.multi_tensor_l2norm over the
      main gradients the rank updates (the distributed optimizer's fp32 shard)   read 4
      (the norm's all-reduce and .item(): a scalar; clip_grad_by_total_norm_fp32's multi_tensor_scale
      runs only `if clip_coeff < 1.0`: not counted, as step_bytes.megatron_fp16_step_bytes leaves it)
g is the gradient buffer's bytes a parameter (fp32 under grad_reduce_in_fp32, Megatron-LM's default with
--bf16; the activation dtype under --grad-reduce-in-bf16 or fp16). The fused Adam and the copy of the fp32
main parameters into the model's stay ParamBytes.step_traffic's one pass (its 32 bytes against the code's
34: the copy re-reads the fp32 master, not counted). Not priced: the host sync each bucket's
`assert not norm.isnan()` makes inside the last backward (the GPU's queue drains once a bucket), and the
loss's `assert not loss[0].isnan()` once a micro-batch; no published measurement of either was found.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..spec import DTYPE_BYTES, MEGATRON_RELEASES, Choices

FP32 = DTYPE_BYTES["fp32"]
#: clip_grad_norm's multi_tensor_l2norm: each updated parameter's fp32 main gradient read once.
NORM_BYTES = FP32
RELEASES_PATH = Path(__file__).resolve().parents[1] / "megatron_releases.json"


@lru_cache(maxsize=None)
def releases() -> dict[str, Any]:
    """costmodel/megatron_releases.json: the Megatron-Core releases read, what each does, its line."""
    return json.loads(RELEASES_PATH.read_text())


#: the release a layout names none of: the newest read (megatron_releases.json "default")
DEFAULT_RELEASE: str = releases()["default"]


def release_choices() -> Choices:
    """The releases as a spec list (--megatron-release), the default first (spec.MEGATRON_RELEASES)."""
    return MEGATRON_RELEASES


def check_release(release: str) -> None:
    """A release megatron_releases.json holds, else one clear error."""
    if release not in releases()["releases"]:
        raise ConfigError(f"layout: megatron_release must be {release_choices().listed()}, got {release!r}.")


def scales_at_dp(release: str, dp: int) -> bool:
    """Whether start_grad_sync multiplies the buffer by 1 / dp at this dp under `release`."""
    return dp > 1 or releases()["releases"][release]["scale_when_factor_is_one"]


def buffer_bytes(gradient_bytes: int, dp: int, nan_check: bool = True, release: str | None = None) -> int:
    """Bytes each parameter of the rank's gradient buffer moves once a step: zero_grad_buffer's zero_
    (write g), the NaN check's norm (read g; not under fp16's dynamic loss scaling) and the scale by
    1 / dp before the gradient collective (read g, write g) where the release runs it (scales_at_dp:
    dp > 1, or dp 1 too before core_v0.7.0); release None: megatron_releases.json's default."""
    zero = gradient_bytes
    norm = gradient_bytes if nan_check else 0
    scale = 2 * gradient_bytes if scales_at_dp(release or DEFAULT_RELEASE, dp) else 0
    return zero + norm + scale


def step_seconds(rank_params: int, updated_params: int, gradient_bytes: int, dp: int, nan_check: bool,
                 bytes_per_s: float, clip_norm: bool = True, release: str | None = None) -> float:
    """Seconds of these passes on one rank: its whole buffer (rank_params) and its updated shard's
    gradient norm (updated_params; clip_norm False where the step's own passes already read it: Megatron's
    fp16 optimizer, step_bytes.megatron_fp16_step_bytes), at the memory-bound rate."""
    norm = updated_params * NORM_BYTES if clip_norm else 0
    return (rank_params * buffer_bytes(gradient_bytes, dp, nan_check, release) + norm) / bytes_per_s
