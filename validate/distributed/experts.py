"""Expert parallelism measured: a mixture-of-experts layer whose tokens travel by all-to-all, in
torchtitan's public pattern (torchtitan/distributed/expert_parallel.py, ExpertParallel's
_token_dispatch and _token_combine; torchtitan/models/moe.py, GroupedExperts), on gloo.

Each rank of the EP group holds E / ep experts (w1, w3: (E/ep, d_x, d), w2: (E/ep, d, d_x), SwiGLU).
A forward: the router's top-k slots are sorted by expert; the tokens-per-expert counts go to
every rank (all_to_all_single of E int64, torchtitan's num_tokens_per_expert exchange); each
slot's token goes to its expert's rank (all_to_all_single_autograd with the split sizes the counts
give: dispatch); the rank runs its experts on the tokens it received, grouped by local expert;
the results go back (all_to_all_single_autograd the other way: combine) and are weighted by the
router's scores and summed over the k slots. Backward runs both token exchanges again; under
torch.utils.checkpoint (ExpertCase.checkpoint: full recomputation) the forward's three exchanges
run once more in backward first.

measure_experts(rank, world, case) returns the rank's expert parameter bytes, every
collective's payload by phase (CommRecorder: payload = the call's input), and the global
tokens-per-expert counts, which the model takes as --expert-load
(costmodel/layout/experts.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed import _functional_collectives as funcol
from torch.utils.checkpoint import checkpoint

from .comm import CommRecorder


@dataclass(frozen=True)
class ExpertCase:
    d: int = 16  # model width
    d_x: int = 24  # each expert's inner width
    experts: int = 4
    k: int = 2
    batch: int = 2
    seq_len: int = 5
    seed: int = 0
    dtype: str = "fp32"
    checkpoint: bool = False  # run the layer under torch.utils.checkpoint (full recomputation)
    # Megatron-Core's parallel folding (expert_tensor_parallel_size 1): the world's ranks in groups of
    # tp consecutive ranks sharing each sequence, each routing its seq_len / tp sequence-parallel
    # shard to experts held whole, the EP group all of tp x dp (1: every rank its own sequences)
    tp: int = 1
    # Context parallelism beside it (Megatron-Core's expert grid, order tp-cp-ep-dp-pp): tp x cp
    # consecutive ranks share a sequence, rank r's context-parallel index (r // tp) % cp holds its
    # chunks c and 2 cp - 1 - c of 2 cp (the load-balanced split, costmodel/layout/context.py) and
    # routes its tp shard of those n / cp tokens; the EP group all of tp x cp x dp
    cp: int = 1


class GroupedExperts(nn.Module):
    """E / ep SwiGLU experts, each run on its own rows of the received tokens."""

    def __init__(self, local: int, d: int, d_x: int):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(local, d_x, d) * d ** -0.5)
        self.w2 = nn.Parameter(torch.randn(local, d, d_x) * d_x ** -0.5)
        self.w3 = nn.Parameter(torch.randn(local, d_x, d) * d ** -0.5)

    def forward(self, tokens: torch.Tensor, counts: list[int]) -> torch.Tensor:
        outputs = []
        for expert, rows in enumerate(torch.split(tokens, counts)):  # (rows, d) each
            hidden = F.silu(rows @ self.w1[expert].T) * (rows @ self.w3[expert].T)  # (rows, d_x)
            outputs.append(hidden @ self.w2[expert].T)  # (rows, d)
        return torch.cat(outputs)


class ExpertParallelMoE(nn.Module):
    """A router and this rank's experts; tokens dispatched and combined over `group`."""

    def __init__(self, case: ExpertCase, group: dist.ProcessGroup):
        super().__init__()
        self.case, self.group = case, group
        self.ep = dist.get_world_size(group)
        self.local = case.experts // self.ep
        self.router = nn.Linear(case.d, case.experts, bias=False)
        self.experts = GroupedExperts(self.local, case.d, case.d_x)
        self.counts = torch.zeros(case.experts, dtype=torch.int64)  # this rank's last routing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        tokens = x.reshape(b * n, d)  # (T, d)
        scores, chosen = self.router(tokens).softmax(-1).topk(self.case.k, dim=-1)  # (T, k)
        order = chosen.reshape(-1).argsort(stable=True)  # slots sorted by expert
        counts = torch.bincount(chosen.reshape(-1), minlength=self.case.experts)  # (E,)
        received_counts = funcol.all_to_all_single(counts, None, None, self.group).wait()  # (E,)
        self.counts = counts
        send = counts.view(self.ep, self.local).sum(1).tolist()
        receive = received_counts.view(self.ep, self.local).sum(1).tolist()
        routed = tokens[order // self.case.k]  # (S, d), by destination rank and expert
        arrived = funcol.all_to_all_single_autograd(routed, receive, send, self.group)  # dispatch
        arrived = torch.ops._c10d_functional.wait_tensor(arrived)
        # Received rows come by source rank, then local expert: regroup them by local expert.
        per_source = received_counts.view(self.ep, self.local)
        pieces = torch.split(arrived, per_source.reshape(-1).tolist())
        by_expert = [pieces[s * self.local + e] for e in range(self.local) for s in range(self.ep)]
        grouped = torch.cat(by_expert)
        out = self.experts(grouped, per_source.sum(0).tolist())
        # Back to source order, then home (combine).
        sizes = [len(p) for p in by_expert]
        chunks = list(torch.split(out, sizes))
        home_order = [chunks[e * self.ep + s] for s in range(self.ep) for e in range(self.local)]
        combined = funcol.all_to_all_single_autograd(torch.cat(home_order), send, receive, self.group)
        combined = torch.ops._c10d_functional.wait_tensor(combined)
        slots = torch.empty_like(combined).index_copy(0, order, combined)  # (S, d) in slot order
        weighted = slots.view(b * n, self.case.k, d) * scores.unsqueeze(-1)
        return weighted.sum(1).view(b, n, d)


def recorded_step(recorder: CommRecorder, layer: nn.Module, x: torch.Tensor, forward=None,
                  group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """One forward (`forward`, the layer itself by default) and backward of an expert layer, its loss
    the output's sum of squares, under `recorder`; then the tokens each expert took (layer.counts),
    summed over `group` (every rank where None). The step of each expert measurement on gloo (this
    file's, expert_tensor_parallel.py's, fsdp_experts.py's)."""
    with recorder:
        with recorder.in_phase("forward"):
            y = (forward or layer)(x)
        with recorder.in_phase("backward"):
            y.square().sum().backward()
    counts = layer.counts.clone()
    dist.all_reduce(counts, group=group)
    return counts


def measure_experts(rank: int, world_size: int, case: ExpertCase) -> dict:
    """One training step of the layer on every rank of the world (the EP group)."""
    torch.manual_seed(case.seed)  # the same router on every rank
    group = dist.group.WORLD
    layer = ExpertParallelMoE(case, group)
    torch.manual_seed(case.seed + 1 + rank)  # each rank its own experts and tokens
    layer.experts = GroupedExperts(layer.local, case.d, case.d_x)
    x = torch.randn(case.batch, case.seq_len, case.d, requires_grad=True)  # from the layers below
    if case.tp > 1 or case.cp > 1:  # folded: the group's shared sequence, this rank's CP chunks and SP shard
        torch.manual_seed(case.seed + 1000 + rank // (case.tp * case.cp))
        whole = torch.randn(case.batch, case.seq_len, case.d)  # (b, n, d)
        chunk, c = case.seq_len // (2 * case.cp), (rank // case.tp) % case.cp
        local = torch.cat([whole[:, c * chunk:(c + 1) * chunk],
                           whole[:, (2 * case.cp - 1 - c) * chunk:(2 * case.cp - c) * chunk]], dim=1)  # (b, n / cp, d)
        shard = local.shape[1] // case.tp
        start = (rank % case.tp) * shard
        x = local[:, start:start + shard].clone().requires_grad_(True)  # (b, n / cp / tp, d)
    recorder = CommRecorder({"ep": group})
    forward = (lambda tokens: checkpoint(layer, tokens, use_reentrant=False)) if case.checkpoint else layer
    counts = recorded_step(recorder, layer, x, forward)  # the global tokens per expert (the model's expert load)
    expert_bytes = sum(p.numel() * p.element_size() for p in layer.experts.parameters())
    records = [{"phase": r.phase, "kind": r.kind, "payload": r.payload_bytes, "dtype": r.dtype,
                "op": r.op} for r in recorder.records]
    return {"case": asdict(case), "expert_bytes": expert_bytes, "records": records,
            "counts": counts.tolist()}
