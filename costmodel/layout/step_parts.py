"""The parts a layout's training step splits into, which add up to its seconds: one rule for plan's
`split` (and report's bars over it) and simulate's lines, and the split of an eager step whose host
issues its ops (layout/kernel_step.py KernelStepTime.step).

An eager step's per-block launches are what its host's ops stand for (eager_ops.eager_step_seconds:
the step is max(kernels - launches, host)), so where the host term is charged the compute and the
bubble hold the kernels alone, and `host_wait_seconds` is what the host adds past them (0 where the
step is kernel-bound). The parts: compute, exposed communication, the pipeline bubble, the optimizer,
gradient accumulation, autocast's casts, overlap contention, the host (that wait and the MoE layers'
host syncs, layout/host_syncs.py), FSDP2's copies (layout/fsdp_copies.py) and DTensor's copies around
sequence-sharded TP collectives (layout/dtensor_copies.py)."""

from __future__ import annotations

from typing import Any


def eager_launch_seconds(step_time: Any, stage: Any) -> float:
    """One micro-batch's per-block launches on this pipeline rank, forward and backward (3 per block:
    KernelStepTime's overhead), which an eager step's host term stands for where it is charged
    (layout/kernel_step.py training_host_ops)."""
    return 3 * step_time.overhead_s * sum(count * step_time.part_seconds.get(key, (0.0, 0))[1]
                                          for key, count in step_time.part_runs(stage).items())


def stream_seconds(step_time: Any, stage: Any, passes: int = 1) -> float:
    """The GPU-side launch cost `passes` passes of one micro-batch's kernels on this pipeline rank keep
    where the host term stands for their launches (KernelTimer.stream_seconds over the rank's kernels,
    part_kernels; 0 where the timer has no host term): a decode or prefill step's one pass
    (KernelStepTime.token), a training micro-batch's 3 (forward and backward, as eager_launch_seconds)."""
    kernels = sum(count * step_time.part_kernels.get(key, 0) for key, count in step_time.part_runs(stage).items())
    return passes * step_time.timer.stream_seconds(kernels)


def host_bound_parts(step: dict[str, Any], launches: float, microbatches: int, bubble: float,
                     seconds: float, kernels: float) -> dict[str, float]:
    """The step's compute and bubble without the launches (one micro-batch's, `launches`: the per-block
    launches the host term stands for less what its kernels keep on the GPU's side, stream_seconds), and
    the host's wait: seconds - kernels, kernels being the step less those launches."""
    return {"compute_seconds": step["compute_seconds"] - microbatches * launches,
            "bubble_seconds": step["bubble_seconds"] - bubble * launches,
            "host_wait_seconds": seconds - kernels}


def step_split(step: dict[str, Any]) -> dict[str, float]:
    """plan's `split` of a training step (StepTime.step, KernelStepTime.step): its parts in seconds,
    which add up to step["seconds"]."""
    return {"compute": step["compute_seconds"],
            "communication": sum(step["exposed_communication_seconds"].values()),
            "bubble": step["bubble_seconds"], "optimizer": step["optimizer_seconds"],
            "gradient_accumulation": step["gradient_accumulation_seconds"],
            "autocast": step["autocast_seconds"],
            "overlap_contention": step["overlap_contention_seconds"],
            "host": step.get("host_wait_seconds", 0.0) + step.get("host_sync_seconds", 0.0),
            "fsdp_copies": step.get("fsdp_copy_seconds", 0.0),
            "dtensor_copies": step.get("dtensor_copy_seconds", 0.0)}
