"""Context parallelism measured: the keys and values torch 2.13's context parallelism moves, on
gloo, with torch's own ring-attention functions.

`context_parallel` on sdpa dispatches the CUDA kernels' ops (_scaled_dot_product_flash_attention,
_efficient_attention, _cudnn_attention) to _templated_ring_attention and its backward; on the CPU
sdpa runs _scaled_dot_product_flash_attention_for_cpu, which has no context-parallel handler
(NotImplementedError: no sharding strategy), so the context manager cannot run here. The two
functions it dispatches to are plain functions of a process group and an attention op: this module
calls them directly with the CPU flash kernel (forward) and its backward, under the rotate method
asked for ("allgather", torch's default, or "ring": set_rotate_method("alltoall")), with
load balancing on (torch's default). Every collective is recorded by CommRecorder (payload = an
all-gather's output, an all-to-all's input).

rotate "a2a" runs DeepSpeed-Ulysses' head-parallel attention as DeepSpeed v0.18.0's
UlyssesSPAttentionHF does (deepspeed/runtime/sequence_parallel/ulysses_sp.py; DeepSpeed is not
installed here, so its steps are written out below, each named): K and V repeat_interleave'd to cp
heads where the case has fewer KV heads than ranks, each of Q, K, V reshaped to [cp, n / cp, b,
heads / cp, d_h] and sent by one all-to-all (_DimZeroAllToAll, here torch.distributed.nn's
differentiable all_to_all_single: its backward is the reverse all-to-all, as _DimZeroAllToAll's),
the CPU's sdpa run causal on all n tokens of heads / cp, and the output sent back by a fourth.

What this measures: each collective's payload per rank, forward and backward, for one attention
call on (b, h, n / cp, d_h) local queries, keys and values. What it cannot: the saved activations
of sdpa under context_parallel (the autograd path is the CUDA one); the model's n / cp activations
are the tree's at n / cp (costmodel/layout/context.py), not measured here.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_nn
import torch.nn.functional as F
from torch.distributed.tensor.experimental._context_parallel import _attention as ring

from .comm import CommRecorder

aten = torch.ops.aten


@dataclass(frozen=True)
class ContextCase:
    batch: int = 1
    heads: int = 2
    seq_len: int = 16  # the whole sequence; each rank holds seq_len / cp
    head_dim: int = 8
    rotate: str = "allgather"  # or "ring", or "a2a" (DeepSpeed-Ulysses)
    dtype: str = "bf16"
    kv_heads: int | None = None  # a2a only: the key/value heads (None: heads)


def _forward_op(query, key, value, is_causal, **kwargs):
    out, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(query, key, value, is_causal=is_causal)
    return out, logsumexp


def _backward_op(query, key, value, out, logsumexp, is_causal, grad_out, **kwargs):
    return aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad_out, query, key, value, out, logsumexp, 0.0, is_causal)


def _ulysses_send(tensor, cp: int, group):
    """_combine_local_sequences' combine_sequence: [n / cp, b, heads, d_h] -> [n, b, heads / cp, d_h]."""
    local, batch, heads, width = tensor.shape
    parts = tensor.reshape(local, batch, cp, heads // cp, width).movedim(2, 0).contiguous()
    return dist_nn.all_to_all_single(torch.empty_like(parts), parts, group=group).reshape(cp * local, batch, heads // cp, width)


def _ulysses_return(context, cp: int, group):
    """_partition_global_sequence: [n, b, heads / cp x d_h] -> [n / cp, b, heads x d_h]."""
    whole, batch, width = context.shape
    parts = context.reshape(cp, whole // cp, batch, width).contiguous()
    out = dist_nn.all_to_all_single(torch.empty_like(parts), parts, group=group)
    return out.movedim(0, 2).reshape(whole // cp, batch, cp * width)


def measure_ulysses(case: ContextCase, dtype, world_size: int, recorder: CommRecorder) -> None:
    """One causal attention's forward and backward under DeepSpeed-Ulysses (module docstring)."""
    group, kv_heads = dist.group.WORLD, case.kv_heads or case.heads
    local = case.seq_len // world_size
    query = torch.randn(local, case.batch, case.heads, case.head_dim, dtype=dtype, requires_grad=True)
    key, value = (torch.randn(local, case.batch, kv_heads, case.head_dim, dtype=dtype, requires_grad=True)
                  for _ in range(2))
    with recorder.in_phase("forward"):
        repeats = world_size // kv_heads  # kv_replication_factor
        keys = [x.repeat_interleave(repeats, dim=2) if repeats > 1 else x for x in (key, value)]
        q, k, v = (_ulysses_send(x, world_size, group).permute(1, 2, 0, 3) for x in [query, *keys])  # (b, h / cp, n, d_h)
        if q.shape[1] != k.shape[1]:
            k, v = (x.repeat_interleave(q.shape[1] // x.shape[1], dim=1) for x in (k, v))  # HF's repeat_kv
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (b, h / cp, n, d_h)
        context = context.permute(2, 0, 1, 3).reshape(case.seq_len, case.batch, -1)
        out = _ulysses_return(context, world_size, group)
    with recorder.in_phase("backward"):
        out.backward(torch.ones_like(out))


def measure_context(rank: int, world_size: int, case: ContextCase) -> dict:
    """One causal attention call's forward and backward on this rank's n / cp tokens."""
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[case.dtype]
    if case.rotate == "a2a":
        torch.manual_seed(rank)
        recorder = CommRecorder({"cp": dist.group.WORLD})
        with recorder, warnings.catch_warnings():  # torch.distributed.nn's all_to_all_single: deprecated, not gone
            warnings.simplefilter("ignore", FutureWarning)
            measure_ulysses(case, dtype, world_size, recorder)
        return {"case": asdict(case),
                "records": [{"phase": r.phase, "kind": r.kind, "payload": r.payload_bytes, "dtype": r.dtype,
                             "op": r.op} for r in recorder.records]}
    method = {"allgather": ring._RotateMethod.ALL_GATHER, "ring": ring._RotateMethod.ALL_TO_ALL}[case.rotate]
    previous = ring._cp_options.rotate_method
    ring._cp_options.rotate_method = method
    group = dist.group.WORLD
    torch.manual_seed(rank)
    shape = (case.batch, case.heads, case.seq_len // world_size, case.head_dim)
    query, key, value = (torch.randn(shape, dtype=dtype) for _ in range(3))
    recorder = CommRecorder({"cp": group})
    try:
        with recorder:
            with recorder.in_phase("forward"):
                out, logsumexp = ring._templated_ring_attention(group, 2, _forward_op, query, key, value,
                                                               is_causal=True)[:2]
            with recorder.in_phase("backward"):
                ring._templated_ring_attention_backward(
                    group, 2, _backward_op, torch.ones_like(out), "grad_out", query, key, value, out,
                    logsumexp, is_causal=True)
    finally:
        ring._cp_options.rotate_method = previous
    return {"case": asdict(case),
            "records": [{"phase": r.phase, "kind": r.kind, "payload": r.payload_bytes, "dtype": r.dtype,
                         "op": r.op} for r in recorder.records]}
