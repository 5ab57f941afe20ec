"""A Mamba-2 mixer split over tensor-parallel ranks as Megatron-Core's MambaMixer splits it,
re-implemented on gloo with CPU tensors and transformers' own mixer (NemotronHMamba2Mixer, 5.24) on
each rank's shard, to measure its collectives and check that they give the single-process output
and gradients.

Megatron-Core (NVIDIA/Megatron-LM d98e8a64, megatron/core/ssm/mamba_mixer.py MambaMixer, with
megatron/core/tensor_parallel/layers.py and mappings.py) builds, on a rank of tp:
  in_proj   ColumnParallelLinear (gather_output=False): the rank's z, x, B, C, dt rows
            (partition_sizes d_inner / tp, d_inner / tp, ngroups / tp x d_state twice, nheads / tp);
            without SP copy_to_tensor_model_parallel_region (its input's gradient all-reduced),
            with SP its input all-gathered forward, the gradient reduce-scattered
  conv1d    the rank's x, B, C channels; dt_bias, A_log, D its nheads / tp heads
  norm      RMSNormGated over its d_inner / tp channels, group_size d_inner_local_tp //
            ngroups_local_tp: each group whole on the rank, no collective
  out_proj  RowParallelLinear (input_is_parallel): a partial sum all-reduced forward (without SP),
            reduce-scattered to the rank's tokens (with SP; its gradient all-gathered)
A rank here is transformers' mixer built with nheads / tp heads and ngroups / tp groups and loaded
with those rows, channels and columns of the whole mixer's weights: the kernels are the same code on
fewer heads. Megatron's column-parallel layer regathers its SP input in backward for the weight
gradient (it keeps the shard); this autograd function keeps the gathered input instead: that
all-gather is not measured here (the MLA measurement, mla_sequence_parallel.py, measures it). The
model's side: costmodel/layout/split.py mamba_split, column_inputs, row_outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from .comm import CommRecorder
from .mla_sequence_parallel import GatherSequence, ScatterSequence


@dataclass(frozen=True)
class MambaCase:
    """The sizes of one Mamba-2 mixer (nemotron_h's names) and its tokens (one sequence)."""

    d: int = 48
    heads: int = 6
    head_dim: int = 5
    state: int = 7
    groups: int = 2
    conv: int = 3
    chunk: int = 4
    tokens: int = 10


class CopyToRanks(torch.autograd.Function):
    """copy_to_tensor_model_parallel_region: identity forward, the gradient all-reduced."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad


class ReduceFromRanks(torch.autograd.Function):
    """reduce_from_tensor_model_parallel_region: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


def build_mixer(case: MambaCase, shards: int = 1):
    """transformers' NemotronHMamba2Mixer (fp32, training) with 1 / shards of the heads and groups."""
    from transformers import NemotronHConfig
    from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer

    config = NemotronHConfig(hidden_size=case.d, mamba_num_heads=case.heads // shards,
                             mamba_head_dim=case.head_dim, ssm_state_size=case.state,
                             n_groups=case.groups // shards, conv_kernel=case.conv, chunk_size=case.chunk,
                             num_hidden_layers=1, hybrid_override_pattern="M", vocab_size=64,
                             num_attention_heads=4, num_key_value_heads=2)
    return NemotronHMamba2Mixer(config, layer_idx=0).train()


def shard(case: MambaCase, whole, part, rank: int, shards: int) -> dict[str, torch.Tensor]:
    """Load the rank's rows, channels and columns of the whole mixer into `part`; return, by
    parameter name, which slice of each whole tensor the rank holds (to compare gradients)."""
    inner, bc, heads = case.heads * case.head_dim, case.groups * case.state, case.heads

    def blocks(sizes: list[int]) -> torch.Tensor:  # the rank's index of each block of a packed dim
        index, start = [], 0
        for size in sizes:
            local = size // shards
            index.append(torch.arange(start + rank * local, start + (rank + 1) * local))
            start += size
        return torch.cat(index)

    projected = blocks([inner, inner, bc, bc, heads])  # z x B C dt
    channels = blocks([inner, bc, bc])  # x B C
    per_head = blocks([heads])
    picks = {"in_proj.weight": (0, projected), "conv1d.weight": (0, channels), "conv1d.bias": (0, channels),
             "dt_bias": (0, per_head), "A_log": (0, per_head), "D": (0, per_head),
             "norm.weight": (0, blocks([inner])), "out_proj.weight": (1, blocks([inner]))}
    params = dict(whole.named_parameters())
    with torch.no_grad():
        for name, p in part.named_parameters():
            dim, index = picks[name]
            p.copy_(params[name].index_select(dim, index))
    return picks


def measure_mamba_tensor_parallel(rank: int, world_size: int, case: MambaCase, sequence_parallel: bool) -> dict:
    """One forward and backward of the whole mixer in this process and of the rank's shard: the
    rank's collectives by phase (kind, payload bytes), its parameters and the largest difference
    between its output and gradients and the whole mixer's (its tokens under SP)."""
    torch.manual_seed(0)
    whole = build_mixer(case)
    x = torch.randn(case.tokens, case.d, requires_grad=True)
    target = torch.randn(case.tokens, case.d)
    out_whole = whole(x[None])[0]
    (out_whole * target).sum().backward()
    part = build_mixer(case, world_size)
    picks = shard(case, whole, part, rank, world_size)
    tokens = slice(rank * case.tokens // world_size, (rank + 1) * case.tokens // world_size) \
        if sequence_parallel else slice(None)
    x_local = x.detach()[tokens].clone().requires_grad_(True)
    recorder = CommRecorder({"tp": dist.group.WORLD})
    with recorder:
        with recorder.in_phase("forward"):
            inputs = GatherSequence.apply(x_local) if sequence_parallel else CopyToRanks.apply(x_local)
            partial = part(inputs[None])[0]  # out_proj's partial sum over the rank's heads
            out = ScatterSequence.apply(partial) if sequence_parallel else ReduceFromRanks.apply(partial)
        with recorder.in_phase("backward"):
            (out * target[tokens]).sum().backward()
    params = dict(whole.named_parameters())
    differences = [float((out.detach() - out_whole.detach()[tokens]).abs().max()),
                   float((x_local.grad - x.grad[tokens]).abs().max())]
    for name, p in part.named_parameters():
        dim, index = picks[name]
        differences.append(float((p.grad - params[name].grad.index_select(dim, index)).abs().max()))
    return {"collectives": {phase: [[r.kind, r.payload_bytes] for r in recorder.select(phase=phase)]
                            for phase in ("forward", "backward")},
            "difference": max(differences),
            "params": sum(p.numel() for p in part.parameters()),
            "whole_params": sum(p.numel() for p in whole.parameters())}
