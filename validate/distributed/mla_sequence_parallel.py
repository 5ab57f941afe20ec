"""Latent attention under Megatron-Core's sequence parallelism, re-implemented on gloo with CPU
tensors to measure its collectives and to check that they give the single-process gradients.

Megatron-Core's MLASelfAttention with Transformer Engine (NVIDIA/Megatron-LM d98e8a64,
megatron/core/transformer/multi_latent_attention.py, megatron/core/tensor_parallel/mappings.py and
layers.py, megatron/core/extensions/transformer_engine.py TELinear, finalize_model_grads.py) runs, on
a rank holding n / t of the tokens ([s, b, h] with b = 1 here) and h / t of the heads:
  linear_q_down_proj, linear_kv_down_proj  TELinear "duplicated": the whole weight, the rank's tokens
  q_layernorm, kv_layernorm                on the rank's tokens (weights duplicated)
  k_pos_emb                                gather_from_sequence_parallel_region: all-gather forward,
                                           reduce-scatter of its gradient backward
  linear_q_up_proj, linear_kv_up_proj      column-parallel with SP: all-gather the input forward;
                                           backward all-gather it again for the weight gradient
                                           and reduce-scatter the input's gradient
  core attention                           the rank's heads, every token (causal)
  linear_proj                              row-parallel with SP: reduce-scatter forward, all-gather
                                           of the output's gradient backward
and after backward one all-reduce over tp of the duplicated weights' gradients (their
`sequence_parallel` attribute). RoPE's rotation is left out: it is element-wise on tensors the
collectives already move, and moves nothing itself. The model's side: costmodel/blocks/mla.py
LatentAttention (latent_share, sequence_parallel_gathers, replicated_params) and
costmodel/layout/communication.py latent_collectives.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from .comm import CommRecorder


@dataclass(frozen=True)
class MlaCase:
    """The sizes of one latent attention (DeepSeek-V3's names) and its tokens."""

    d: int = 48
    heads: int = 6
    q_rank: int = 20  # r_q
    kv_rank: int = 12  # r_kv
    rope: int = 4  # d_r
    nope: int = 6  # d_h - d_r
    value: int = 7  # d_v
    tokens: int = 10


def _gather(x: torch.Tensor) -> torch.Tensor:
    out = x.new_empty((x.shape[0] * dist.get_world_size(), *x.shape[1:]))
    dist.all_gather_single(out, x.contiguous())
    return out


def _reduce_scatter(x: torch.Tensor) -> torch.Tensor:
    out = x.new_empty((x.shape[0] // dist.get_world_size(), *x.shape[1:]))
    dist.reduce_scatter_single(out, x.contiguous())
    return out


class GatherSequence(torch.autograd.Function):
    """gather_from_sequence_parallel_region: all-gather forward, reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x):
        return _gather(x)

    @staticmethod
    def backward(ctx, grad):
        return _reduce_scatter(grad)


class ScatterSequence(torch.autograd.Function):
    """reduce_scatter_to_sequence_parallel_region: reduce-scatter forward, all-gather backward."""

    @staticmethod
    def forward(ctx, x):
        return _reduce_scatter(x)

    @staticmethod
    def backward(ctx, grad):
        return _gather(grad)


class ColumnSequence(torch.autograd.Function):
    """A column-parallel linear under SP (LinearWithGradAccumulationAndAsyncCommunication): keeps
    the input's shard, all-gathers it forward and again for the weight gradient, reduce-scatters
    the input's gradient."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return _gather(x) @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        total = _gather(x)
        return _reduce_scatter(grad @ weight), grad.t() @ total


class Mla(nn.Module):
    """One latent attention: whole (shards=1, rank=0) or a tp rank's under SP (shards=t)."""

    def __init__(self, c: MlaCase, whole: "Mla | None" = None, shards: int = 1, rank: int = 0):
        super().__init__()
        self.c, self.shards = c, shards
        h = c.heads // shards
        self.q_down = nn.Linear(c.d, c.q_rank, bias=False)
        self.q_norm = nn.RMSNorm(c.q_rank)
        self.q_up = nn.Parameter(torch.empty(h * (c.nope + c.rope), c.q_rank))
        self.kv_down = nn.Linear(c.d, c.kv_rank + c.rope, bias=False)
        self.kv_norm = nn.RMSNorm(c.kv_rank)
        self.kv_up = nn.Parameter(torch.empty(h * (c.nope + c.value), c.kv_rank))
        self.out = nn.Parameter(torch.empty(c.d, h * c.value))
        if whole is None:
            for p in (self.q_up, self.kv_up, self.out):
                nn.init.normal_(p, std=0.2)
            return
        with torch.no_grad():  # the rank's heads of the whole module's weights
            for name in ("q_down", "q_norm", "kv_down", "kv_norm"):
                getattr(self, name).load_state_dict(getattr(whole, name).state_dict())
            heads = slice(rank * h, (rank + 1) * h)
            self.q_up.copy_(whole.q_up.view(c.heads, -1, c.q_rank)[heads].reshape_as(self.q_up))
            self.kv_up.copy_(whole.kv_up.view(c.heads, -1, c.kv_rank)[heads].reshape_as(self.kv_up))
            self.out.copy_(whole.out.view(c.d, c.heads, c.value)[:, heads].reshape_as(self.out))

    def duplicated(self) -> list[nn.Parameter]:
        """The weights every tp rank holds whole (their gradients all-reduced over tp)."""
        return [*self.q_down.parameters(), *self.q_norm.parameters(), *self.kv_down.parameters(),
                *self.kv_norm.parameters()]

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (tokens / shards, d)
        c, sp = self.c, self.shards > 1
        q_latent = self.q_norm(self.q_down(x))  # (n / t, r_q)
        kv_latent, k_rope = self.kv_down(x).split([c.kv_rank, c.rope], dim=-1)
        kv_latent = self.kv_norm(kv_latent)  # (n / t, r_kv)
        if sp:
            k_rope = GatherSequence.apply(k_rope)  # (n, d_r)
            q = ColumnSequence.apply(q_latent, self.q_up)  # (n, h / t (d_h))
            kv = ColumnSequence.apply(kv_latent, self.kv_up)
        else:
            q, kv = q_latent @ self.q_up.t(), kv_latent @ self.kv_up.t()
        n = q.shape[0]
        q = q.view(n, -1, c.nope + c.rope).transpose(0, 1)  # (h / t, n, d_h)
        k_nope, v = kv.view(n, -1, c.nope + c.value).split([c.nope, c.value], dim=-1)
        k = torch.cat([k_nope, k_rope[:, None, :].expand(-1, k_nope.shape[1], -1)], dim=-1).transpose(0, 1)
        attended = nn.functional.scaled_dot_product_attention(q, k, v.transpose(0, 1), is_causal=True)
        partial = attended.transpose(0, 1).reshape(n, -1) @ self.out.t()  # (n, d), a partial sum
        return ScatterSequence.apply(partial) if sp else partial


def measure_mla_sequence_parallel(rank: int, world_size: int, case: MlaCase) -> dict:
    """One forward and backward of the whole module in this process and of the rank's under SP:
    the rank's collectives by phase (kind, payload bytes, in order) and the largest difference
    between the SP rank's output and gradients and the whole module's (its tokens, its heads)."""
    torch.manual_seed(0)
    whole = Mla(case)
    x = torch.randn(case.tokens, case.d, requires_grad=True)
    target = torch.randn(case.tokens, case.d)
    (whole(x) * target).sum().backward()
    part = Mla(case, whole, world_size, rank)
    tokens = slice(rank * case.tokens // world_size, (rank + 1) * case.tokens // world_size)
    x_local = x.detach()[tokens].clone().requires_grad_(True)
    recorder = CommRecorder({"tp": dist.group.WORLD})
    with recorder:
        with recorder.in_phase("forward"):
            out = part(x_local)
        with recorder.in_phase("backward"):
            (out * target[tokens]).sum().backward()
        with recorder.in_phase("optimizer"):  # finalize_model_grads: one coalesced all-reduce
            grads = [p.grad for p in part.duplicated()]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            for g, synced in zip(grads, flat.split([g.numel() for g in grads])):
                g.copy_(synced.view_as(g))
    h = case.heads // world_size
    heads = slice(rank * h, (rank + 1) * h)
    expected = {"output": whole(x).detach()[tokens], "input": x.grad[tokens],
                "q_up": whole.q_up.grad.view(case.heads, -1, case.q_rank)[heads].reshape_as(part.q_up),
                "kv_up": whole.kv_up.grad.view(case.heads, -1, case.kv_rank)[heads].reshape_as(part.kv_up),
                "out": whole.out.grad.view(case.d, case.heads, case.value)[:, heads].reshape_as(part.out),
                **{f"duplicated.{i}": p.grad for i, p in enumerate(whole.duplicated())}}
    got = {"output": out.detach(), "input": x_local.grad, "q_up": part.q_up.grad, "kv_up": part.kv_up.grad,
           "out": part.out.grad, **{f"duplicated.{i}": p.grad for i, p in enumerate(part.duplicated())}}
    return {"collectives": {phase: [[r.kind, r.payload_bytes] for r in recorder.select(phase=phase)]
                            for phase in ("forward", "backward", "optimizer")},
            "difference": max(float((got[k] - expected[k]).abs().max()) for k in expected),
            "duplicated_elements": sum(p.numel() for p in part.duplicated())}
