"""torchtitan's selective op checkpointing (--recompute torchtitan-op) and JAX's remat policies
(--recompute jax-dots, jax-qkv, jax-qkv-out: costmodel/jax_remat.py says which linears each keeps): which
of a layer's ops keep their outputs through the forward, and which rerun in backward. The JAX policies
keep no fused attention kernel's output (a custom call), so it reruns; the rest is as below.

The code (pytorch/torchtitan at 9dec370, the commit of its Llama 3.1 8B runs):
train_configs/llama3_8b.toml lines 53-55 set `mode = 'selective'`, `selective_ac_option = 'op'`;
torchtitan/parallelisms/parallelize_llama.py wraps each TransformerBlock in torch.utils.checkpoint
(ptd_checkpoint_wrapper, non-reentrant, lines 272-276) with create_selective_checkpoint_contexts
and this policy (lines 213-223 and 250-266): an op's output is saved (MUST_SAVE) when the op is in
_save_list (aten.mm, aten._scaled_dot_product_flash_attention and _efficient_attention,
_c10d_functional.reduce_scatter_tensor, aten.abs, aten.max), except every second aten.mm
(`meta[mm_count_key] % 2 == 0`, a count that starts at zero at each layer's call); every other
op is PREFER_RECOMPUTE. torchtitan's Llama (torchtitan/models/llama/model.py) runs its matmuls in
the order wq, wk, wv (line 189), wo (214), w1, w3, w2 (253: w2(silu(w1(x)) * w3(x))): it keeps
wq's, wv's, w1's and w2's outputs and reruns wk, wo and w3.

Over the tree's leaves of one layer, in the order they run (the order they are built in):
  kept     the layer's input (the checkpoint's argument: LayerCheckpoint); the output of each odd
           aten.mm, an unbiased linear (Block.linear_ops; a biased one is aten.addmm, neither
           counted nor kept); a fused attention kernel's output and fp32 log-sum-exp (its op is
           in the list). Each as a KeptOutputs leaf after its block, a layer's count of times.
  rerun    every op of the layer up to its last saved tensor (Leaf.rerun, CostModel._rerun): the
           norms, RoPE, the activation and the gate's product, the residual add between the
           sublayers, the even matmuls; an eager (or math) attention core whole (bmm and softmax
           are not in the list). torch.utils.checkpoint stops the recompute once the layer's last
           saved tensor is rebuilt (its early stop, on by default), and autograd saves a linear's
           input before it runs the product: the layer's last linear (the FFN's down projection,
           kept or not) and the leaves after it (the closing residual add) do not rerun.
  rebuilt  in backward, one layer at a time, what its leaves save (as under full recomputation);
           the kept tensors autograd also saves (the kernel's output and log-sum-exp, the gate's
           output the SiLU saves, v the kernel saves) are counted there again: a stated upper
           bound of that one layer's transient.

Not modelled: the reduce-scatters' outputs the policy keeps under tensor and sequence parallelism
(b n/t d a row-parallel layer); the abs and max of float8 scaling (scalars); the CUDA kernel's RNG
seed and offset (two int64 scalars). torch.compile applies the same policy (the partitioner
recomputes the PREFER_RECOMPUTE nodes) but saves only what the backward reads: w2's output,
which nothing reads, is counted as eager keeps it. A layer whose matmuls the tree does not list
in order (experts, routers, latent attention) is refused.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import blocks as B
from .config import ConfigError
from .jax_remat import POLICIES as JAX_POLICIES
from .kernels import FLASH

NAME = "torchtitan-op"
#: every op policy this module applies (spec.OP_POLICIES names the same)
POLICIES = (NAME, *JAX_POLICIES)


def checkpointed_layer(checkpoint: Any, body: list[Any], policy: str = NAME) -> list[Any]:
    """One layer's leaves under the policy: its checkpoint (the layer's input) first, each leaf
    inside the recompute checkpointed with the linear outputs it keeps, and a KeptOutputs leaf
    after each leaf that keeps outputs."""
    kept_names = _kept_linears(body, policy)
    last = max((i for i, leaf in enumerate(body) if leaf.cost.saved_bytes != 0), default=-1)
    # the leaf whose last linear the recompute stops at: under JAX's DCE a dropout's backward reads its mask
    # (regenerated from the key, so the dropout reruns), not its input: a GPT's dropout after the down
    # projection does not make the backward read the down projection's output (a post-norm's input does)
    reads = last if policy not in JAX_POLICIES else max(
        (i for i, leaf in enumerate(body) if leaf.cost.saved_bytes != 0 and not isinstance(leaf.block, B.Dropout)),
        default=-1)
    out = [checkpoint]
    for i, (leaf, kept) in enumerate(zip(body, kept_names)):
        ops = leaf.block.linear_ops()
        stop = (ops[-1].name,) if i == reads and ops else ()  # the recompute stops at its input
        if policy in JAX_POLICIES:  # JAX saves only residuals the backward reads: not the last linear's output
            kept = tuple(name for name in kept if name not in stop)
        leaf = dataclasses.replace(leaf, checkpointed=i <= last, kept_outputs=kept,
                                   not_rerun=tuple(dict.fromkeys(kept + stop)))
        out.append(leaf)
        saved = kept_bytes(leaf, policy)
        if saved != 0:
            block = B.KeptOutputs(leaf.block, saved)
            out.append(dataclasses.replace(leaf, name=f"{leaf.name}_kept", block=block, cost=block.cost(),
                                           checkpointed=False, kept_outputs=(), not_rerun=()))
    return out


def _kept_linears(body: list[Any], policy: str = NAME) -> list[tuple[str, ...]]:
    """For each leaf, the names of its linear ops whose outputs the policy keeps: torchtitan's, the odd
    aten.mm of the layer, counted from one in the order they run; a JAX policy's, those it names."""
    count, kept = 0, []
    jax = JAX_POLICIES.get(policy)
    for leaf in body:
        block = leaf.block
        if leaf.cost.flops_matmul != 0 and not block.linear_ops() and not isinstance(block, B.AttentionCore):
            raise ConfigError(f"recompute {policy!r} keeps a layer's matmuls by name or in the order they run, and "
                              f"the tree does not list them for its {block.title} ({leaf.path}); use full or selective.")
        if jax is not None and jax.needs_fused_attention and isinstance(block, B.AttentionCore) \
                and not block.kernel.keeps_output:
            raise ConfigError(f"recompute {policy!r} keeps every dot_general, an eager attention core's two products "
                              "too, which the model does not split from its softmax; use --attention flash.")
        if jax is not None:
            kept.append(tuple(op.name for op in block.linear_ops() if jax.keeps(op.name)))
            continue
        names = []
        for op in block.linear_ops():
            if not op.biased:
                count += 1
                if count % 2 == 1:
                    names.append(op.name)
        kept.append(tuple(names))
    return kept


def kept_bytes(leaf: Any, policy: str = NAME) -> Any:
    """Bytes of a leaf's outputs the policy keeps: its kept linears' outputs, or under torchtitan's a
    fused attention kernel's output and log-sum-exp (on the weighted sum's leaf, where the kernel's
    output is)."""
    block = leaf.block
    if policy == NAME and isinstance(block, B.WeightedSum) and block.kernel.keeps_output:
        return FLASH.output_saved(block) + FLASH.softmax_saved(block)
    return sum((op.output_bytes for op in block.linear_ops() if op.name in leaf.kept_outputs), 0)


def rerun(leaf: Any, policy: str = NAME) -> B.Cost | None:
    """What the recompute reruns of a leaf (None: nothing): all of a leaf inside the recompute but
    (torchtitan's) a fused attention kernel, and of a block with linears all its other ops and the
    linears Leaf.not_rerun does not name."""
    block, cost = leaf.block, leaf.cost
    if not leaf.checkpointed or not cost.is_active():
        return None
    if policy == NAME and isinstance(block, B.AttentionCore) and block.kernel.keeps_output:
        return None
    again = [op for op in block.linear_ops() if op.name not in leaf.not_rerun]
    if len(again) == len(block.linear_ops()):
        return cost
    part = B.linears_cost(again, elements=cost.elements, bytes_other=cost.bytes_other)
    return part if part.is_active() else None
