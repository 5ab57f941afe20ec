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

What this measures: each collective's payload per rank, forward and backward, for one attention
call on (b, h, n / cp, d_h) local queries, keys and values. What it cannot: the saved activations
of sdpa under context_parallel (the autograd path is the CUDA one); the model's n / cp activations
are the tree's at n / cp (costmodel/layout/context.py), not measured here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
from torch.distributed.tensor.experimental._context_parallel import _attention as ring

from .comm import CommRecorder

aten = torch.ops.aten


@dataclass(frozen=True)
class ContextCase:
    batch: int = 1
    heads: int = 2
    seq_len: int = 16  # the whole sequence; each rank holds seq_len / cp
    head_dim: int = 8
    rotate: str = "allgather"  # or "ring"
    dtype: str = "bf16"


def _forward_op(query, key, value, is_causal, **kwargs):
    out, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(query, key, value, is_causal=is_causal)
    return out, logsumexp


def _backward_op(query, key, value, out, logsumexp, is_causal, grad_out, **kwargs):
    return aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad_out, query, key, value, out, logsumexp, 0.0, is_causal)


def measure_context(rank: int, world_size: int, case: ContextCase) -> dict:
    """One causal attention call's forward and backward on this rank's n / cp tokens."""
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[case.dtype]
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
