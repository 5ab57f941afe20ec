"""Expert tensor parallelism measured: a mixture-of-experts layer whose experts are each split over an
expert-tensor-parallel (ETP) group, as Megatron-Core's MoEAlltoAllTokenDispatcher runs it at any
expert_tensor_parallel_size (megatron/core/transformer/moe/token_dispatcher.py at core_v0.12.0,
NVIDIA/Megatron-LM 26f86a597f: the all-to-all over EP, line 531; gather_from_sequence_parallel_region over
the expert-TP group, lines 537-544; after the experts reduce_scatter_to_sequence_parallel_region over it,
lines 619-628), on gloo.

The grid (parallel_state.py lines 693-714): the experts' RankGenerator(tp=etp, ep, dp=world // (etp ep))
in the order tp-ep-dp: an ETP group is etp consecutive ranks, an EP group ep ranks at stride etp. The
attention's tp ranks (ExpertCase.tp) share each sequence, each routing its sequence-parallel shard (as
validate/distributed/experts.py's folded case), whatever etp is: 1 < etp < tp and etp > tp both run.

A forward: the router's top-k slots sorted by expert; the tokens-per-expert counts all-to-all over EP (the
torchtitan pattern of experts.py; Megatron-Core gathers them over tp x ep instead, kilobytes, which the
model takes as this all-to-all); the slots' tokens all-to-all over EP (dispatch); the E int64 received
counts all-gathered over ETP (what gives each member's rows); the received rows gathered over ETP; each
rank's E / ep experts run on d_x / etp of their width; the partial outputs reduce-scattered over ETP back
to each member's rows; all-to-all home (combine). Backward swaps the gather and the reduce-scatter.

gloo's all_gather takes equal pieces only (ProcessGroupGloo::allgather: "invalid tensor size"), and the
members' received rows differ with the routing, so the gather (Megatron's output_split_sizes gather) runs
as etp broadcasts, one from each member: their buffers together are the gathered tensor, the payload an
all-gather's output is (validate/distributed/comm.py). gloo's list reduce_scatter takes uneven pieces.

measure_expert_tensor_parallel(rank, world, case, etp, ep) returns the rank's expert parameter bytes, every
collective's payload by phase and group (CommRecorder: "ep", "etp"), and the global tokens per expert.
"""

from __future__ import annotations

from dataclasses import asdict

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed import _functional_collectives as funcol

from .comm import CommRecorder
from .experts import ExpertCase, GroupedExperts


def _gather(rows: torch.Tensor, sizes: list[int], ranks: list[int], group: dist.ProcessGroup) -> torch.Tensor:
    """The members' rows, member by member (one broadcast from each)."""
    pieces = []
    for size, source in zip(sizes, ranks):
        buffer = rows.contiguous() if source == dist.get_rank() else rows.new_empty(size, rows.shape[1])
        dist.broadcast(buffer, src=source, group=group)
        pieces.append(buffer)
    return torch.cat(pieces)


def _reduce_scatter(full: torch.Tensor, sizes: list[int], ranks: list[int], group: dist.ProcessGroup) -> torch.Tensor:
    """This member's rows of the members' summed partial outputs."""
    out = full.new_empty(sizes[ranks.index(dist.get_rank())], full.shape[1])
    dist.reduce_scatter(out, [piece.contiguous() for piece in torch.split(full, sizes)], group=group)
    return out


class GatherRows(torch.autograd.Function):
    """gather_from_sequence_parallel_region: forward the gather, backward the reduce-scatter."""

    @staticmethod
    def forward(ctx, rows, sizes, ranks, group):  # noqa: D102
        ctx.args = (sizes, ranks, group)
        return _gather(rows, sizes, ranks, group)

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        return _reduce_scatter(grad, *ctx.args), None, None, None


class ScatterRows(torch.autograd.Function):
    """reduce_scatter_to_sequence_parallel_region: forward the reduce-scatter, backward the gather."""

    @staticmethod
    def forward(ctx, full, sizes, ranks, group):  # noqa: D102
        ctx.args = (sizes, ranks, group)
        return _reduce_scatter(full, sizes, ranks, group)

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        return _gather(grad, *ctx.args), None, None, None


class FusedSwiGLU(torch.autograd.Function):
    """SiLU(gate) * up over fc1's (rows, 2 d_x) output, keeping only that input for backward, as
    Megatron-Core's fused bias_swiglu_impl (TEGroupedMLP's activation) does."""

    @staticmethod
    def forward(ctx, fc1):  # noqa: D102
        ctx.save_for_backward(fc1)
        gate, up = fc1.chunk(2, -1)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        gate, up = ctx.saved_tensors[0].chunk(2, -1)
        sigmoid = torch.sigmoid(gate)
        return torch.cat([grad * up * sigmoid * (1 + gate * (1 - sigmoid)), grad * F.silu(gate)], -1)


class FusedGroupedExperts(nn.Module):
    """E / ep SwiGLU experts as TEGroupedMLP runs them: fc1 (2 d_x, d) to the gate and up halves in one
    product, the fused activation, fc2 (d, d_x); each expert on its own rows."""

    def __init__(self, local: int, d: int, d_x: int):
        super().__init__()
        self.fc1 = nn.Parameter(torch.randn(local, 2 * d_x, d) * d ** -0.5)
        self.fc2 = nn.Parameter(torch.randn(local, d, d_x) * d_x ** -0.5)

    def forward(self, tokens: torch.Tensor, counts: list[int]) -> torch.Tensor:
        outputs = []
        for expert, rows in enumerate(torch.split(tokens, counts)):  # (rows, d) each
            outputs.append(FusedSwiGLU.apply(rows @ self.fc1[expert].T) @ self.fc2[expert].T)  # (rows, d)
        return torch.cat(outputs)


class ExpertTensorParallelMoE(nn.Module):
    """A router and this rank's experts, each a d_x / etp slice; tokens over the EP and ETP groups.
    balanced: token t's slots go to experts t k, ..., t k + k - 1 mod E (each expert an equal share of
    every rank's slots: the load the model's balanced default assumes), its weights the router's
    probabilities there. region: which part of the layer runs (router, dispatch, experts, combine), for
    a saved-tensor hook to read."""

    def __init__(self, case: ExpertCase, etp: int, ep_group: dist.ProcessGroup, etp_group: dist.ProcessGroup,
                 etp_ranks: list[int], balanced: bool = False):
        super().__init__()
        self.case, self.etp, self.ep_group, self.etp_group, self.etp_ranks = case, etp, ep_group, etp_group, etp_ranks
        self.ep = dist.get_world_size(ep_group)
        self.local = case.experts // self.ep
        self.router = nn.Linear(case.d, case.experts, bias=False)
        self.experts = GroupedExperts(self.local, case.d, case.d_x // etp)
        self.counts = torch.zeros(case.experts, dtype=torch.int64)
        self.balanced, self.region = balanced, "router"

    def route(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each token's k weights and experts, (T, k) both."""
        probabilities = self.router(tokens).softmax(-1)  # (T, E)
        if not self.balanced:
            return probabilities.topk(self.case.k, dim=-1)
        slots = torch.arange(tokens.shape[0] * self.case.k) % self.case.experts
        chosen = slots.view(-1, self.case.k)  # (T, k)
        return probabilities.gather(1, chosen), chosen

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        ep, etp, local = self.ep, self.etp, self.local
        tokens = x.reshape(b * n, d)  # (T, d)
        self.region = "router"
        scores, chosen = self.route(tokens)  # (T, k)
        self.region = "dispatch"
        order = chosen.reshape(-1).argsort(stable=True)
        counts = torch.bincount(chosen.reshape(-1), minlength=self.case.experts)  # (E,)
        received_counts = funcol.all_to_all_single(counts, None, None, self.ep_group).wait()  # (ep x local,)
        self.counts = counts
        send = counts.view(ep, local).sum(1).tolist()
        receive = received_counts.view(ep, local).sum(1).tolist()
        token_of_slot = order // self.case.k  # (S,) each sorted slot's token
        arrived = funcol.all_to_all_single_autograd(tokens[token_of_slot], receive, send, self.ep_group)
        arrived = torch.ops._c10d_functional.wait_tensor(arrived)  # (R, d), by source rank, then local expert
        members = torch.empty(etp * self.case.experts, dtype=torch.int64)
        dist.all_gather_into_tensor(members, received_counts, group=self.etp_group)
        per = members.view(etp, ep, local)  # rows of member m from source s for local expert e
        sizes = per.sum((1, 2)).tolist()
        gathered = GatherRows.apply(arrived, sizes, self.etp_ranks, self.etp_group)  # (sum of R, d)
        pieces = torch.split(gathered, per.reshape(-1).tolist())
        where = lambda m, s, e: (m * ep + s) * local + e  # noqa: E731
        by_expert = [pieces[where(m, s, e)] for e in range(local) for m in range(etp) for s in range(ep)]
        self.region = "experts"
        out = self.experts(torch.cat(by_expert), per.sum((0, 1)).tolist())  # partial sums over d_x / etp
        self.region = "combine"
        chunks = torch.split(out, [len(p) for p in by_expert])
        back = [chunks[(e * etp + m) * ep + s] for m in range(etp) for s in range(ep) for e in range(local)]
        mine = ScatterRows.apply(torch.cat(back), sizes, self.etp_ranks, self.etp_group)  # (R, d)
        combined = funcol.all_to_all_single_autograd(mine, send, receive, self.ep_group)
        combined = torch.ops._c10d_functional.wait_tensor(combined)
        # unpermute with the probabilities (Megatron-Core's moe_utils.unpermute at core_v0.12.0): the
        # sorted slots times their weights, scatter-added into their tokens' rows
        weighted = combined * scores.reshape(-1)[order].unsqueeze(-1)  # (S, d)
        rows = token_of_slot.unsqueeze(1).expand(-1, d)  # scatter_add keeps its index alone (index_add its source too)
        return torch.zeros_like(tokens).scatter_add(0, rows, weighted).view(b, n, d)


def _groups(world: int, etp: int, ep: int) -> tuple[list[list[int]], list[list[int]]]:
    """Megatron-Core's expert grid, order tp-ep-dp: ETP groups of etp consecutive ranks, EP groups at stride etp."""
    etp_groups = [list(range(start, start + etp)) for start in range(0, world, etp)]
    ep_groups = [[block + j + i * etp for i in range(ep)] for block in range(0, world, etp * ep) for j in range(etp)]
    return etp_groups, ep_groups


def measure_expert_tensor_parallel(rank: int, world_size: int, case: ExpertCase, etp: int, ep: int) -> dict:
    """One training step of the layer on every rank, the world one expert grid of etp x ep x (world // (etp ep))."""
    etp_groups, ep_groups = _groups(world_size, etp, ep)
    made = {tuple(g): dist.new_group(g) for g in etp_groups + ep_groups}  # every rank makes every group, in order
    etp_ranks = next(g for g in etp_groups if rank in g)
    ep_group = made[tuple(next(g for g in ep_groups if rank in g))]
    etp_group = made[tuple(etp_ranks)]
    torch.manual_seed(case.seed)  # the same router on every rank
    layer = ExpertTensorParallelMoE(case, etp, ep_group, etp_group, etp_ranks)
    torch.manual_seed(case.seed + 1 + rank)  # each rank its own expert slices and tokens
    layer.experts = GroupedExperts(layer.local, case.d, case.d_x // etp)
    x = torch.randn(case.batch, case.seq_len, case.d, requires_grad=True)
    if case.tp > 1:  # the attention's tp ranks share a sequence, each its sequence-parallel shard
        torch.manual_seed(case.seed + 1000 + rank // case.tp)
        whole = torch.randn(case.batch, case.seq_len, case.d)  # (b, n, d)
        shard = case.seq_len // case.tp
        x = whole[:, (rank % case.tp) * shard:(rank % case.tp + 1) * shard].clone().requires_grad_(True)
    recorder = CommRecorder({"ep": ep_group, "etp": etp_group})
    with recorder:
        with recorder.in_phase("forward"):
            y = layer(x)
        with recorder.in_phase("backward"):
            y.square().sum().backward()
    counts = layer.counts.clone()
    dist.all_reduce(counts)
    expert_bytes = sum(p.numel() * p.element_size() for p in layer.experts.parameters())
    records = [{"phase": r.phase, "group": r.group, "kind": r.kind, "payload": r.payload_bytes, "dtype": r.dtype}
               for r in recorder.records]
    return {"case": asdict(case), "etp": etp, "ep": ep, "expert_bytes": expert_bytes, "records": records,
            "counts": counts.tolist()}


def measure_expert_saved(rank: int, world_size: int, case: ExpertCase, etps: tuple[int, ...]) -> dict:
    """The bytes the layer saves for backward on this rank (unique storages, parameters excluded), by
    region, at each etp of `etps` (ep = world // etp: one expert grid), under balanced routing and the
    fused activation (FusedGroupedExperts). Each rank routes its sequence-parallel shard (case.tp ranks
    share a sequence). Returns {etp: {"regions": {region: bytes}, "home_slots": S, "gathered_rows": G}}."""
    results = {}
    for etp in etps:
        ep = world_size // etp
        etp_groups, ep_groups = _groups(world_size, etp, ep)
        made = {tuple(g): dist.new_group(g) for g in etp_groups + ep_groups}
        etp_ranks = next(g for g in etp_groups if rank in g)
        torch.manual_seed(case.seed)
        layer = ExpertTensorParallelMoE(case, etp, made[tuple(next(g for g in ep_groups if rank in g))],
                                        made[tuple(etp_ranks)], etp_ranks, balanced=True)
        layer.experts = FusedGroupedExperts(layer.local, case.d, case.d_x // etp)
        torch.manual_seed(case.seed + 1000 + rank // case.tp)
        whole = torch.randn(case.batch, case.seq_len, case.d)  # (b, n, d), shared by the tp ranks
        shard = case.seq_len // case.tp
        x = whole[:, (rank % case.tp) * shard:(rank % case.tp + 1) * shard].clone().requires_grad_(True)
        parameters = {p.untyped_storage()._cdata for p in layer.parameters()} | {x.untyped_storage()._cdata}
        regions: dict[str, int] = {}
        seen: dict[int, torch.Tensor] = {}  # held, so that no storage is freed and its address reused

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            key = tensor.untyped_storage()._cdata
            if key not in parameters and key not in seen:
                seen[key] = tensor
                regions[layer.region] = regions.get(layer.region, 0) + tensor.untyped_storage().nbytes()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            y = layer(x)
        y.square().sum().backward()
        home = case.batch * shard * case.k
        results[etp] = {"regions": regions, "home_slots": home, "gathered_rows": etp * home}
        dist.barrier()
    return results
