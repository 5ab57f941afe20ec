"""The host calls of a step as the counting scripts record them (validate/exllama_v1_ops.py, validate/tinychat_ops.py):
every aten call that reaches a TorchDispatchMode while the record is on, by its op's name, beside the stubbed
extensions' calls the scripts add by their own names."""

from __future__ import annotations

from collections import Counter


class Calls:
    """The calls seen while `on`: aten ops under mode() and the stubs' calls (note())."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self.on = False

    def note(self, name: str) -> None:
        if self.on:
            self.calls[name] += 1


def mode(record: Calls):
    """A TorchDispatchMode adding each aten call to `record` (by its overload packet's name) while it is on."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            record.note(str(func.overloadpacket.__name__))
            return func(*args, **(kwargs or {}))

    return Count()
