"""torchtitan's selective op checkpointing applied to a Hugging Face model, and what it keeps and
reruns measured (the tree's side: costmodel/op_checkpoint.py, --recompute torchtitan-op).

The policy is torchtitan's as its code states it (pytorch/torchtitan 9dec370,
torchtitan/parallelisms/parallelize_llama.py lines 213-276): torch.utils.checkpoint, non-reentrant,
around each decoder layer with create_selective_checkpoint_contexts; an op's output is MUST_SAVE
when the op is in SAVE_LIST, except every second aten.mm of the layer (a count per checkpointed
call), and PREFER_RECOMPUTE otherwise. SAVE_LIST is torchtitan's _save_list with one op added: the
CPU's flash kernel (aten._scaled_dot_product_flash_attention_for_cpu), which F.sdpa runs here in
place of the CUDA kernels the list names.

What the forward keeps is two things: the checkpoints' inputs and whatever the layers do not wrap
(autograd's saved tensors: validate/measure/saved.py's hooks see them) and the outputs the policy
stores (the selective-checkpoint context's storage, read here before the graph is freed). Their
unique storages, parameters and buffers excluded, are kept_bytes. The recompute's matmul FLOPs are
the backward's under the policy less the backward's without checkpointing (FlopCounterMode).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_flatten
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

from .measure.common import Inputs, LossFn, forward_loss, held, module_stack, storage_key
from .measure.flops import matmul_flops
from .measure.saved import SavedRecorder

aten = torch.ops.aten

#: torchtitan's _save_list (9dec370, parallelize_llama.py lines 214-223), and the CPU's flash kernel.
SAVE_LIST = {
    aten.mm.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_flash_attention.default,
    torch.ops._c10d_functional.reduce_scatter_tensor.default,
    aten.abs.default,
    aten.max.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
}


class OpPolicy:
    """The context_fn torch.utils.checkpoint calls at each checkpointed layer's forward: a fresh
    count of aten.mm (torchtitan's `meta`) and the policy; it keeps each call's forward context
    (whose storage holds what the policy saved)."""

    def __init__(self) -> None:
        self.forward_contexts: list[Any] = []

    def __call__(self) -> tuple[Any, Any]:
        meta: dict[str, int] = defaultdict(int)

        def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
            key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
            if func == aten.mm.default:
                meta[key] += 1
            # torchtitan: "Saves output of all compute ops, except every second mm"
            to_save = func in SAVE_LIST and not (func == aten.mm.default and meta[key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if to_save else CheckpointPolicy.PREFER_RECOMPUTE

        forward, recompute = create_selective_checkpoint_contexts(policy)
        self.forward_contexts.append(forward)
        return forward, recompute

    def stored(self) -> list[torch.Tensor]:
        """The tensors the policy has stored so far, every call's."""
        tensors = []
        for context in self.forward_contexts:
            for outputs in context.storage.values():
                for wrapped in tree_flatten(outputs)[0]:
                    value = getattr(wrapped, "val", wrapped)  # checkpoint's _VersionWrapper
                    tensors += [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]
        return tensors


def apply_op_policy(model: nn.Module) -> OpPolicy:
    """Checkpoint each decoder layer of a Hugging Face model under the policy (transformers'
    activation_checkpointing_enable passes the keywords to torch.utils.checkpoint)."""
    policy = OpPolicy()
    model.activation_checkpointing_enable(
        activation_checkpointing_kwargs={"use_reentrant": False, "context_fn": policy})
    return policy


def kept_bytes(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None = None) -> dict[str, int]:
    """Unique storages a training forward of a model under apply_op_policy keeps for backward:
    "autograd" (what the saved-tensor hooks see: the checkpoints' inputs, the blocks outside the
    layers), "policy" (the outputs the policy stored, storages the hooks did not see) and
    "total". Parameters and buffers are excluded; the graph is freed without a backward."""
    policy = next((fn.keywords["context_fn"] for fn in _checkpoint_functions(model)), None)
    if not isinstance(policy, OpPolicy):
        raise ValueError("kept_bytes measures a model under apply_op_policy(model).")
    policy.forward_contexts.clear()
    with module_stack(model) as stack:
        recorder = SavedRecorder(model, stack)
        with recorder.hooks():
            output, loss = forward_loss(model, inputs, loss_fn)
        stored = policy.stored()
    autograd = recorder.result(output, loss)
    seen = recorder.excluded | {storage_key(held(t)) for t in recorder.saved}
    policy_bytes = 0
    for tensor in stored:
        key = storage_key(tensor)
        if key not in seen:
            seen.add(key)
            policy_bytes += tensor.untyped_storage().nbytes()
    return {"autograd": autograd.total_bytes, "policy": policy_bytes, "total": autograd.total_bytes + policy_bytes}


def _checkpoint_functions(model: nn.Module) -> list[Any]:
    """The checkpoint partials transformers set on the model's checkpointed layers."""
    return [module._gradient_checkpointing_func for module in model.modules()
            if getattr(module, "gradient_checkpointing", False)
            and hasattr(getattr(module, "_gradient_checkpointing_func", None), "keywords")]


def recomputed_flops(build: Any, inputs: Inputs) -> int:
    """Matmul FLOPs the recompute adds to a training step: the backward's under the policy less
    the backward's without checkpointing, on two models `build()` makes alike."""
    plain = matmul_flops(build(), inputs, backward=True).backward
    model = build()
    apply_op_policy(model)
    return matmul_flops(model, inputs, backward=True).backward - plain
