"""FSDP2 (torch.distributed.fsdp.fully_shard) measured per rank: shards, padding, collectives, peaks.

apply_fsdp shards every decoder layer and then the root (embedding, final norm, head), as
torchtitan does. measure_fsdp(rank, world_size, case) runs on one rank (under run_gloo or run_fake,
validate/distributed/launch.py) and returns plain data:

    {"state": {"parameters"|"gradients"|"optimizer": {"storage": int, "elements": int}},
     "communication": {phase: {"dp": {"all_gather": bytes, "reduce_scatter": bytes}}},
                      (hybrid sharding, case.replicate > 1: and "dp_replicate": {"all_reduce": bytes})
     "calls": {phase: {"dp": {"all_gather": count, "reduce_scatter": count}}},
     "steady_communication": the same payloads for the second step,
     "memory_peak": {FSDPMemTracker category: bytes at the step's peak} (when case.memory_tracker),
     "padded_shard_elements": {parameter name: elements of its padded shard},
     "local_shard_elements": {parameter name: elements this rank's shard holds}}

The first step (forward with the loss, backward, AdamW step) gives the communication and, after it,
the state: sharded parameters, gradients and optimizer state. The second step (after zero_grad) is
the steady state, tracked by FSDPMemTracker when asked.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from costmodel.config import ModelConfig

from .comm import CommRecorder
from .models import Trainee, build_trainee, run_context
from .state import training_state

AUTO = "auto"  # fully_shard's default: reshard after forward for the layers, not for the root


@dataclass(frozen=True)
class FsdpCase:
    """One FSDP2 run. reshard_after_forward: True, False, or AUTO (fully_shard's default, None)."""

    cfg: ModelConfig
    batch: int = 2
    seq_len: int = 8
    implementation: str = "reference"
    reshard_after_forward: bool | str = AUTO
    mixed_precision: bool = False  # MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
    fake: bool = False  # build and run under FakeTensorMode (with the fake process group)
    memory_tracker: bool = True
    # Hybrid sharding (FSDP2's HSDP): a (replicate, shard) mesh of replicate x world / replicate
    # ranks, the groups recorded as "dp_replicate" and "dp" (1: one "dp" dimension, plain FSDP).
    replicate: int = 1


def mixed_precision_policy(enabled: bool) -> MixedPrecisionPolicy:
    """bf16 compute and all-gathers, fp32 gradient reduction; or FSDP2's default (no casts)."""
    if not enabled:
        return MixedPrecisionPolicy()
    return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


def apply_fsdp(trainee: Trainee, mesh: DeviceMesh, reshard_after_forward: bool | str,
               policy: MixedPrecisionPolicy) -> None:
    """fully_shard on every decoder layer, then on the root module."""
    reshard = None if reshard_after_forward == AUTO else reshard_after_forward
    for layer in trainee.layers:
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard, mp_policy=policy)
    fully_shard(trainee.model, mesh=mesh, reshard_after_forward=reshard, mp_policy=policy)


def _train_step(trainee: Trainee, optimizer: torch.optim.Optimizer, recorder: CommRecorder) -> None:
    with recorder.in_phase("forward"):
        loss = trainee.loss(trainee.model, trainee.inputs)
    with recorder.in_phase("backward"):
        loss.backward()
    with recorder.in_phase("optimizer"):
        optimizer.step()


def _shard_elements(trainee: Trainee) -> tuple[dict[str, int], dict[str, int]]:
    """Elements of each parameter's padded shard and of this rank's local shard."""
    padded, local = {}, {}
    for name, param in trainee.model.named_parameters():
        shard = param._local_tensor
        padded[name] = shard.untyped_storage().nbytes() // shard.element_size()
        local[name] = param._local_tensor.numel()
    return padded, local


def _memory_peak(trainee: Trainee, optimizer: torch.optim.Optimizer,
                 recorder: CommRecorder) -> dict[str, int]:
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

    tracker = FSDPMemTracker(trainee.model, optimizer)
    tracker.track_inputs(tuple(trainee.inputs.values()))
    with tracker, recorder:
        _train_step(trainee, optimizer, recorder)
        optimizer.zero_grad(set_to_none=True)
    (snapshot,) = tracker.get_tracker_snapshot("peak").values()
    return {str(getattr(k, "value", k)): int(v) for k, v in snapshot.items()}


def measure_fsdp(rank: int, world_size: int, case: FsdpCase) -> dict:
    """One rank's FSDP2 measurements for case (see the module docstring for the keys)."""
    torch.manual_seed(0)
    if case.replicate == 1:
        mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("dp",))
        groups = {"dp": mesh.get_group("dp")}
    else:
        mesh = init_device_mesh("cpu", (case.replicate, world_size // case.replicate),
                                mesh_dim_names=("dp_replicate", "dp"))
        groups = {"dp": mesh.get_group("dp"), "dp_replicate": mesh.get_group("dp_replicate")}
    with run_context(case.fake):
        trainee = build_trainee(case.cfg, case.implementation, case.batch, case.seq_len)
        policy = mixed_precision_policy(case.mixed_precision)
        apply_fsdp(trainee, mesh, case.reshard_after_forward, policy)
        optimizer = torch.optim.AdamW(trainee.model.parameters(), lr=1e-3)
        first = CommRecorder(groups)
        with first:
            _train_step(trainee, optimizer, first)
        state = training_state(trainee.model, optimizer)
        padded, local_elements = _shard_elements(trainee)
        optimizer.zero_grad(set_to_none=True)
        steady = CommRecorder(groups)
        if case.memory_tracker:
            memory = _memory_peak(trainee, optimizer, steady)
        else:
            memory = {}
            with steady:
                _train_step(trainee, optimizer, steady)
    return {
        "state": state.as_dict(),
        "communication": _by_phase(first, "totals"),
        "calls": _by_phase(first, "counts"),
        "steady_communication": _by_phase(steady, "totals"),
        "memory_peak": memory,
        "padded_shard_elements": padded,
        "local_shard_elements": local_elements,
    }


PHASES = ("forward", "backward", "optimizer")


def _by_phase(recorder: CommRecorder, what: str) -> dict[str, dict[str, dict[str, int]]]:
    return {phase: getattr(recorder, what)(phase) for phase in PHASES}
