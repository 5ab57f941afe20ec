"""The host calls of a step as the counting scripts record them (validate/exllama_v1_ops.py, validate/tinychat_ops.py):
every aten call that reaches a TorchDispatchMode while the record is on, by its op's name, beside the stubbed
extensions' calls the scripts add by their own names, and the rule that splits a step's calls into a layer's and the
step's own (layer_split)."""

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


#: The name under which a count records device_moves' calls.
INDEX_MOVE = "_to_copy (index's list to the GPU)"


def device_moves(func, args) -> int:
    """The device moves a call issues on a GPU that a CPU run never shows: aten::index moves each index tensor
    not on self's device there first (ATen/native/TensorAdvancedIndexingUtils.h make_info, "Ensure indices are on
    the same device as self": indice.to(self.device()), one _to_copy each). The counted codes index only with
    Python lists (xqkv[:, :, [-2]]), which Python's indexing makes on the CPU: one move per index tensor."""
    if func.overloadpacket.__name__ != "index":
        return 0
    return sum(index is not None for index in args[1])


def composite(func) -> bool:
    """Whether `func` is a CompositeImplicitAutograd op (aten::linear, matmul, reshape, to, layer_norm, ...): one the
    dispatcher runs as the ops of its decomposition. A TorchDispatchMode sees such an op whole only where the autograd
    keys are off (torch.inference_mode: the Python key is reached before the decomposition); under no_grad the
    Autograd key decomposes it first and the mode sees its parts."""
    import torch

    return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")


def mode(record: Calls):
    """A TorchDispatchMode adding each aten call to `record` (by its overload packet's name) while it is on, and
    the device moves it would issue on a GPU (device_moves, as INDEX_MOVE).

    One rule for every counter, whatever mode the counted code runs in: a composite op (composite()) is counted as
    its decomposition's calls, not as one. torch.profiler shows the dispatcher running the same calls under
    inference_mode as under no_grad (nn.Linear on a (1, 1, d) activation: linear, t, transpose, as_strided, matmul,
    reshape, view, mm, 2 resolve_conj, _unsafe_view in both; tests/test_host_calls.py), and the time an op the
    counted steps are priced at (calibrate.module_seconds_per_op, Hardware.eager_op_s) is a no_grad forward's time
    over its count under a TorchDispatchMode: t, view, mm, _unsafe_view for that linear. A code that runs under
    @torch.inference_mode (TinyChat's models, AutoAWQ's generate) is counted in the same units."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if composite(func):
                with self:
                    return func.decompose(*args, **(kwargs or {}))
            record.note(str(func.overloadpacket.__name__))
            for _ in range(device_moves(func, args)):
                record.note(INDEX_MOVE)
            return func(*args, **(kwargs or {}))

    return Count()


def layer_split(one: Counter, two: Counter) -> dict:
    """A step's calls split from models of one and two layers: {"per_layer", "per_step", "by_op", "step_by_op"}, the
    layer's the difference of the two, the step's own the one-layer model's less a layer's."""
    per_layer = two - one
    own = one - per_layer
    return {"per_layer": sum(per_layer.values()), "per_step": sum(own.values()),
            "by_op": dict(sorted(per_layer.items())), "step_by_op": dict(sorted(own.items()))}
