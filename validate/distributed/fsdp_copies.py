"""FSDP2's own copy kernels, measured per rank: what fully_shard runs beside its collectives.

torch 2.13 torch/distributed/fsdp/_fully_shard/ issues three custom ops of its own library "fsdp"
(_fsdp_collectives.py) around each unit's all-gather and reduce-scatter:
- fsdp.all_gather_copy_in: the rank's shards into the flat all-gather input (foreach_all_gather, on
  the all-gather copy-in stream);
- fsdp.split_with_sizes_copy: the all-gather output into each parameter's padded unsharded tensor
  (foreach_all_gather_copy_out, called by FSDPParamGroup.wait_for_unshard on the current stream:
  the compute stream);
- fsdp.chunk_cat: the unsharded gradients into the reduce-scatter input in reduce_dtype
  (foreach_reduce's foreach_reduce_scatter_copy_in, before its `with stream(reduce_scatter_stream)`:
  the compute stream; the fp32 upcast of bf16 gradients is this copy's write).
For fp32 and bf16 reduce dtypes _get_gradient_divide_factors returns no pre- or post-divide factor
(NCCL's ReduceOp.AVG divides; on gloo, which has no AVG, the divisions run as _div_if_needed on the
reduce-scatter stream), so no division runs on the compute stream.

measure_copies(rank, world_size, case) runs one FsdpCase training step (forward with the loss,
backward) under a TorchDispatchMode that sees these ops (a Python mode sees a custom op before its
CPU kernel, and not the aten ops its kernel runs) and returns, by phase and op, the calls and the
bytes each reads and writes, as the tensors the op is given state them:

    {phase: {op: {"calls": int, "read": bytes, "written": bytes}}}
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.utils._python_dispatch import TorchDispatchMode

from .fsdp import FsdpCase, apply_fsdp, mixed_precision_policy
from .models import build_trainee, run_context

COPY_OPS = ("all_gather_copy_in", "split_with_sizes_copy", "chunk_cat")


def _nbytes(tensors: Any) -> int:
    items = tensors if isinstance(tensors, (list, tuple)) else [tensors]
    return sum(t.numel() * t.element_size() for t in items if isinstance(t, torch.Tensor))


class CopyRecorder(TorchDispatchMode):
    """Calls and bytes of FSDP2's copy ops, by phase (set `phase` before each pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "forward"
        self.records: dict[str, dict[str, dict[str, int]]] = defaultdict(
            lambda: defaultdict(lambda: {"calls": 0, "read": 0, "written": 0}))

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        namespace, name = func.namespace, func._schema.name.split("::")[-1]
        if namespace == "fsdp" and name in COPY_OPS:
            entry = self.records[self.phase][name]
            entry["calls"] += 1
            if name == "all_gather_copy_in":  # (inputs, weights, sizes, numel, world, rank, dtype, device)
                entry["read"] += _nbytes(args[0])
            else:  # (source(s), ..., out=)
                entry["read"] += _nbytes(args[0])
                entry["written"] += _nbytes(kwargs["out"])
        out = func(*args, **kwargs)
        if namespace == "fsdp" and name == "all_gather_copy_in":  # (all-gather input, all-gather output)
            self.records[self.phase][name]["written"] += _nbytes(out[0])
        return out

    def as_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        return {phase: {op: dict(v) for op, v in ops.items()} for phase, ops in self.records.items()}


def measure_copies(rank: int, world_size: int, case: FsdpCase) -> dict:
    """One rank's FSDP2 copy ops over one training step's forward and backward (see the docstring)."""
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("dp",))
    with run_context(case.fake):
        trainee = build_trainee(case.cfg, case.implementation, case.batch, case.seq_len)
        apply_fsdp(trainee, mesh, case.reshard_after_forward, mixed_precision_policy(case.mixed_precision))
        recorder = CopyRecorder()
        with recorder:
            loss = trainee.loss(trainee.model, trainee.inputs)
            recorder.phase = "backward"
            loss.backward()
    return recorder.as_dict()
