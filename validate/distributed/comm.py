"""Bytes of communication, as the c10d ops themselves see them: a TorchDispatchMode over the
collective and point-to-point ops of torch.distributed (torch 2.13).

CommRecorder records one Collective per op: its process group (named by the caller: "tp", "dp",
"pp"), its kind (all_gather, reduce_scatter, all_reduce, broadcast, send, recv, ...), its payload in
bytes, its dtype and the phase the caller was in ("forward", "backward", "optimizer"). The payload
follows the issue's JSON contract, the size collective benchmarks use:
    all_gather        the output (all ranks' pieces, padding included)
    reduce_scatter    the input (all ranks' pieces)
    all_reduce        the buffer
    broadcast         the buffer
    send, recv        the tensor sent or received
    all_to_all        the input
    reduce, gather    this rank's input; scatter: this rank's output
Wire bytes (ring factors (w - 1)/w and the like) are the model's business, not measured here.

Which ops it sees (checked on torch 2.13 with gloo and the fake process group, CPU tensors):
- every torch.distributed call (all_reduce, all_gather_into_tensor, reduce_scatter_tensor,
  broadcast, send, recv, isend, irecv, batch_isend_irecv) reaches the dispatcher as a c10d op
  (c10d.allreduce_, c10d._allgather_base_, c10d._reduce_scatter_base_, c10d.send, c10d.recv_...),
  whatever the backend, so a Python dispatch mode sees it;
- DTensor's redistributions are functional collectives (_c10d_functional.all_reduce,
  all_gather_into_tensor, reduce_scatter_tensor) issued while DTensor dispatches an op: the mode
  returns NotImplemented for DTensor arguments (as CommDebugMode does) so that it sees the
  collectives DTensor runs underneath;
- FSDP2's all-gathers and reduce-scatters (dist.all_gather_single / reduce_scatter_single from its
  own hooks and "streams", which are no-ops on the CPU) and the autograd backward of DTensor's
  redistributions run in the thread that called backward() on the CPU and are seen.
Each op is seen once: the implementation of a functional collective runs below the mode.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup, _resolve_process_group
from torch.distributed.tensor import DTensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

NAMESPACES = ("c10d", "_c10d_functional", "_c10d_functional_autograd")

#: op name -> (kind, the argument whose tensors are the payload; "result" for the op's output;
#: where c10d and _c10d_functional share a name, the first of the names the op has)
PAYLOAD = {
    "_allgather_base_": ("all_gather", "output_tensor"),
    "allgather_": ("all_gather", "output_tensors"),
    "allgather_coalesced_": ("all_gather", "output_lists"),
    "allgather_into_tensor_coalesced_": ("all_gather", "outputs"),
    "all_gather_into_tensor": ("all_gather", "result"),
    "all_gather_into_tensor_out": ("all_gather", "out"),
    "all_gather_into_tensor_coalesced": ("all_gather", "result"),
    "_reduce_scatter_base_": ("reduce_scatter", "input_tensor"),
    "reduce_scatter_": ("reduce_scatter", "input_tensors"),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", "inputs"),
    "reduce_scatter_tensor": ("reduce_scatter", "input"),
    "reduce_scatter_tensor_out": ("reduce_scatter", "input"),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", "inputs"),
    "allreduce_": ("all_reduce", "tensors"),
    "allreduce_coalesced_": ("all_reduce", "tensors"),
    "all_reduce": ("all_reduce", "input"),
    "all_reduce_": ("all_reduce", "input"),
    "all_reduce_coalesced": ("all_reduce", "inputs"),
    "all_reduce_coalesced_": ("all_reduce", "inputs"),
    "broadcast_": ("broadcast", ("tensors", "input")),  # c10d.broadcast_, _c10d_functional.broadcast_
    "broadcast": ("broadcast", "input"),
    "send": ("send", "tensors"),
    "recv_": ("recv", "tensors"),
    "recv_any_source_": ("recv", "tensors"),
    "isend": ("send", "tensor"),
    "irecv": ("recv", "tensor"),
    "alltoall_": ("all_to_all", "input_tensors"),
    "alltoall_base_": ("all_to_all", "input"),
    "all_to_all_single": ("all_to_all", "input"),
    "reduce_": ("reduce", "tensors"),
    "gather_": ("gather", "input_tensors"),
    "scatter_": ("scatter", "output_tensors"),
}
#: Ops of these namespaces that move no payload.
NOT_COMMUNICATION = {
    "barrier", "monitored_barrier_", "check_for_nan", "wait_tensor", "_wrap_tensor_autograd",
}


@dataclass(frozen=True)
class Collective:
    """One collective or point-to-point op as this rank issued it."""

    group: str  # the caller's name for its process group ("tp", "dp", "pp"), else "ranks 0,1,.."
    kind: str  # all_gather, reduce_scatter, all_reduce, broadcast, send, recv, ...
    payload_bytes: int
    dtype: str
    op: str  # "c10d._allgather_base_", "_c10d_functional.all_reduce"
    phase: str  # what the caller was doing: "forward", "backward", "optimizer", ...
    peer: int | None = None  # send/recv: the other side's rank in the group


def tensor_bytes(tree: Any) -> int:
    """Bytes of the elements of every tensor in a (nested) argument: numel x element size."""
    return sum(t.numel() * t.element_size() for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor))


def _dtypes(tree: Any) -> str:
    tensors = [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]
    names = {str(t.dtype).removeprefix("torch.") for t in tensors}
    return ",".join(sorted(names))


def _bind(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The op's arguments by schema name."""
    names = [a.name for a in func._schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


def _process_group(bound: dict[str, Any]) -> ProcessGroup:
    if "process_group" in bound:
        return ProcessGroup.unbox(bound["process_group"])
    if "group_name" in bound:
        group = bound["group_name"]  # a name, or (schema "Any") the group itself
        return group if isinstance(group, ProcessGroup) else _resolve_process_group(group)
    raise ValueError(
        f"a collective has neither a process_group nor a group_name argument: {sorted(bound)}."
    )


def group_label(group: ProcessGroup, names: Mapping[str, str]) -> str:
    """The caller's name for a group (matched by group_name), else its global ranks."""
    if group.group_name in names:
        return names[group.group_name]
    return "ranks " + ",".join(str(r) for r in dist.get_process_group_ranks(group))


class CommRecorder(TorchDispatchMode):
    """Records every c10d / functional collective issued while it is active, as Collective rows.

    groups maps a label ("tp", "dp", "pp") to a ProcessGroup (or a DeviceMesh dimension's group);
    two labels for the same group (a 1-D mesh is the default group) raise ValueError.
    Set .phase (or use in_phase) to tag what the caller is doing.
    """

    def __init__(self, groups: Mapping[str, ProcessGroup] | None = None) -> None:
        super().__init__()
        self.names: dict[str, str] = {}
        for label, group in (groups or {}).items():
            if group.group_name in self.names:
                raise ValueError(
                    f"groups {self.names[group.group_name]!r} and {label!r} are the same process "
                    "group; give it one label."
                )
            self.names[group.group_name] = label
        self.phase = "unlabelled"
        self.records: list[Collective] = []

    @contextlib.contextmanager
    def in_phase(self, phase: str) -> Iterator[None]:
        previous, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = previous

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.HigherOrderOperator):
            return func(*args, **kwargs)
        if any(t is DTensor for t in types):
            return NotImplemented  # let DTensor run; its own collectives come back through here
        out = func(*args, **kwargs)
        if func.namespace in NAMESPACES:
            self._record(func, _bind(func, args, kwargs), out)
        return out

    def _record(self, func: Any, bound: dict[str, Any], out: Any) -> None:
        name = func.__name__.split(".")[0]
        if name in NOT_COMMUNICATION:
            return
        if name == "batch_p2p_ops":
            self._record_batch_p2p(func, bound)
            return
        if name not in PAYLOAD:
            raise ValueError(
                f"CommRecorder does not know the payload of {func}; add it to comm.PAYLOAD."
            )
        kind, source = PAYLOAD[name]
        if isinstance(source, tuple):
            source = next(arg for arg in source if arg in bound)
        payload = out if source == "result" else bound[source]
        peer = bound.get("dst", bound.get("src"))
        self._add(func, bound, kind, payload, peer)

    def _record_batch_p2p(self, func: Any, bound: dict[str, Any]) -> None:
        for op, peer, tensor in zip(bound["op_list"], bound["peer_list"], bound["tensors"]):
            self._add(func, bound, "send" if "send" in op else "recv", tensor, peer)

    def _add(self, func: Any, bound: dict[str, Any], kind: str, payload: Any, peer: int | None) -> None:
        self.records.append(Collective(
            group=group_label(_process_group(bound), self.names), kind=kind,
            payload_bytes=tensor_bytes(payload), dtype=_dtypes(payload),
            op=f"{func.namespace}.{func.__name__.split('.')[0]}", phase=self.phase,
            peer=int(peer) if peer is not None else None,
        ))

    def select(self, phase: str | None = None, group: str | None = None,
               kind: str | None = None) -> list[Collective]:
        """The records matching every filter given."""
        return [
            r for r in self.records
            if (phase is None or r.phase == phase) and (group is None or r.group == group)
            and (kind is None or r.kind == kind)
        ]

    def totals(self, phase: str | None = None) -> dict[str, dict[str, int]]:
        """Payload bytes by group and kind: {"tp": {"all_reduce": ..}, "pp": {"send": ..}}."""
        result: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for r in self.select(phase):
            result[r.group][r.kind] += r.payload_bytes
        return {g: dict(kinds) for g, kinds in result.items()}

    def counts(self, phase: str | None = None) -> dict[str, dict[str, int]]:
        """Number of ops by group and kind."""
        result: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for r in self.select(phase):
            result[r.group][r.kind] += 1
        return {g: dict(kinds) for g, kinds in result.items()}

